"""What the app and CLI show: no password, no autolinks, no HTML in chart labels, no sign-off
for an unknown task."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import Session, select

from clawviz.cli.main import main as cli_main
from clawviz.figures.runs import (
    advantage_by_group_figure,
    drop_reasons_figure,
    reward_by_harness_figure,
)
from clawviz.settings import mask_secrets, masked_url
from clawviz.store.db import get_engine
from clawviz.store.models import Review
from clawviz.ui.inspector import WORD_JOINER, escape_md
from tests.dburl import fresh_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

PG = "postgresql+psycopg://clawviz:hunter2-Pa55@127.0.0.1:5432/clawviz"

# The two patterns remark-gfm (mdast-util-gfm-autolink-literal) links in text nodes, that is
# in the text after Markdown escapes are resolved.
GFM_URL = re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.I)
GFM_EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)")


def _unescape(md: str) -> str:
    return re.sub(r"\\(.)", r"\1", md)


def test_password_masked_in_urls_and_errors():
    assert masked_url(PG) == "postgresql+psycopg://clawviz:***@127.0.0.1:5432/clawviz"
    assert masked_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"
    msg = f"could not connect to {PG} (timeout); retry {PG}"
    assert "hunter2" not in mask_secrets(msg) and mask_secrets(msg).count(":***@") == 2


def test_cli_settings_masks_the_store_password(monkeypatch, capsys):
    monkeypatch.setenv("CLAWVIZ_DATABASE_URL", PG)
    assert cli_main(["settings"]) == 0
    text = capsys.readouterr().out
    assert "hunter2" not in text and "clawviz:***@127.0.0.1" in text
    assert cli_main(["settings", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    [row] = [r for r in rows if r["name"] == "database_url"]
    assert row["value"] == "postgresql+psycopg://clawviz:***@127.0.0.1:5432/clawviz"


def test_cli_store_error_names_no_password(capsys):
    bad = "postgresql+psycopg://clawviz:hunter2-Pa55@127.0.0.1:1/nope"
    assert cli_main(["--db", bad, "episodes"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: store: ") and "hunter2" not in err


def test_sidebar_masks_the_store_password(monkeypatch, tmp_path):
    from apphelpers import open_page

    from clawviz.ui import data, state

    real = fresh_url(tmp_path)
    get_engine(real)
    monkeypatch.setattr(state, "database_url", lambda: PG)
    monkeypatch.setattr(state, "_engine_for", lambda url: get_engine(real))
    monkeypatch.setattr(data, "_engine_for", lambda url: get_engine(real), raising=False)
    at = open_page()
    shown = [t.value for t in at.sidebar.text]
    assert "postgresql+psycopg://clawviz:***@127.0.0.1:5432/clawviz" in shown
    everything = json.dumps([str(e) for e in at.main] + shown)
    assert "hunter2" not in everything


def test_log_text_urls_are_not_autolinked():
    text = "see https://evil.example/x?a=1, HTTP://EVIL.example, www.evil.example or a@evil.example"
    md = escape_md(text)
    plain = _unescape(md)
    assert not GFM_URL.search(plain) and not GFM_EMAIL.search(plain)
    assert plain.replace(WORD_JOINER, "") == text


def test_chart_labels_are_escaped():
    evil = "<b>bold</b><a href='https://x.example'>click</a>"
    episodes = pd.DataFrame(
        {"episode_id": [f"<i>e{i}</i>" for i in range(3)], "harness": [evil] * 3,
         "reward": [0.0, 0.5, 1.0]}
    )  # fmt: skip
    groups = pd.DataFrame(
        {"group": [evil] * 2, "attempt": [1, 2], "advantage": [0.5, -0.5],
         "episode_id": ["<b>e1</b>", "e2"]}
    )  # fmt: skip
    reasons = pd.DataFrame({"reason": ["<span style='color:red'>x</span>"], "episodes": [1]})
    for fig in (
        reward_by_harness_figure(episodes),
        advantage_by_group_figure(groups),
        drop_reasons_figure(reasons),
    ):
        data = json.dumps(fig.to_plotly_json()["data"])
        assert "<b>" not in data and "<a " not in data and "<span" not in data
        assert "<i>" not in data
        assert "&lt;" in data


def test_review_refuses_an_unknown_task(tmp_path, capsys):
    url = fresh_url(tmp_path)
    code = cli_main(
        ["--db", url, "review", "task_typo", "--decision", "accept", "--reviewer", "ann"]
    )
    assert code == 2
    assert "no task 'task_typo' in the store" in capsys.readouterr().err
    with Session(get_engine(url)) as s:
        assert s.exec(select(Review)).all() == []


@pytest.mark.parametrize("text", ["mailto:a@b.example", "xmpp:me@host.example"])
def test_other_schemes_do_not_link(text):
    plain = _unescape(escape_md(text))
    assert not GFM_EMAIL.search(plain) and not GFM_URL.search(plain)
