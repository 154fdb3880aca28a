"""AppTest of the shared table helper (clawviz.ui.tables) every page table goes through."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from clawviz.ui.tables import MISSING, fmt_num, fmt_text


def test_fmt_num_rounds_signs_and_marks_missing():
    assert fmt_num(0.466667) == "0.47"
    assert fmt_num(0.466667, 3) == "0.467"
    assert fmt_num(-0.5, signed=True) == "-0.50"
    assert fmt_num(0.5, signed=True) == "+0.50"
    assert fmt_num(12345) == "12,345"
    assert fmt_num(None) == fmt_num(float("nan")) == MISSING == "—"
    assert fmt_text("") == fmt_text(None) == "—"
    assert fmt_text("kept") == "kept"


def _script():
    import pandas as pd

    from clawviz.ui import tables

    df = pd.DataFrame(
        {
            "n": [1, None],
            "score": [0.466667, None],
            "note": ["short", "a very long note " * 10],
            "id": ["a", "b"],
        }
    )
    tables.show_table(df, key="t", pinned=["id"], numbers={"score": 2, "n": 0}, wrap=["note"])
    tables.show_table(df[["id", "note"]].head(1), key="short", wrap=["note"])


def test_show_table_pins_formats_wraps_and_uses_a_placeholder():
    at = AppTest.from_function(_script).run()
    assert not at.exception
    proto = at.dataframe[0].proto
    assert list(proto.column_order) == ["id", "n", "score", "note"]
    config = json.loads(proto.columns)
    assert config["id"]["pinned"] is True
    assert config["score"]["type_config"]["format"] == "%.2f"
    assert proto.placeholder == "—"
    # A long note wraps: Streamlit wraps cell text only above a 64 px row height.
    assert proto.row_height > 64
    assert config["note"]["width"] == "large"
    # Short text needs no tall rows.
    assert at.dataframe[1].proto.row_height == 0
    # The raw values stay numbers (the column sorts as numbers).
    assert at.dataframe[0].value["score"].dtype.kind == "f"
