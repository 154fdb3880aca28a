"""The Episode page's first view (a deep link `?episode=...`, the default Call section) imports
no pandas, in a fresh process as a fresh `streamlit run` server would: pandas and the narwhals
pandas backend plotly loads beside it cost ~0.5 s of that first run (bench/README.md, "sixth
pass"). Other pages and sections (Runs, Paths, Compare) still import pandas when drawn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from apphelpers import APP, TIMEOUT

from clawviz.ui import state

ROOT = Path(__file__).resolve().parents[2]
EPISODE = "t0001-openclaw-a2"
HEAVY = ("pandas", "narwhals._pandas_like", "clawviz.export.run")
"""Modules the first view does not draw with (the export's row builders run on Export only)."""

_CHILD = """
import json, sys
from streamlit.testing.v1 import AppTest

at = AppTest.from_file({app!r}, default_timeout={timeout})
at.query_params["episode"] = {episode!r}
# A deep link: the first run is the Episode page's own (the router runs the page it names).
at.switch_page("pages/episode.py").run()
print(json.dumps({{
    "exceptions": [str(e.value) for e in at.exception],
    "titles": [t.value for t in at.title],
    "subheaders": [h.value for h in at.subheader],
    "charts": [getattr(c, "key", None) for c in at.get("plotly_chart")],
    "switch": [s.key for s in at.selectbox],
    "captions": [c.value for c in at.caption],
    "heavy": [m for m in {heavy!r} if m in sys.modules],
}}))
"""


def _first_view(url: str) -> dict:
    code = _CHILD.format(app=APP, timeout=TIMEOUT, episode=EPISODE, heavy=HEAVY)
    env = {**os.environ, "CLAWVIZ_DATABASE_URL": url, "CLAWVIZ_NO_SAMPLES": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=TIMEOUT * 2,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _episode_ids(url: str) -> list[str]:
    from tests.dburl import query

    return sorted(r[0] for r in query(url, "SELECT episode_id FROM episode"))


def test_episode_deep_link_first_view_imports_no_pandas(sample_db_url):
    got = _first_view(sample_db_url)
    assert got["exceptions"] == []
    # The view was drawn: the episode's header, its tree, the Call inspector (default section),
    # and the switcher placing it among every episode of the store (a count, not a list).
    assert got["titles"] == ["Episode t0001\\-openclaw\\-a2"]
    assert state.KEY_TREE in got["charts"]
    assert "Call inspector" in got["subheaders"]
    assert "episode_switch" not in got["switch"]
    n = len(_episode_ids(sample_db_url))
    assert any(c.endswith(f" of {n} in the Runs table") for c in got["captions"])
    assert got["heavy"] == []
