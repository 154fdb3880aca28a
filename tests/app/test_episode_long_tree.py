"""AppTest: a long episode's Plotly tree is a section drawn only while it is open (`?tree=1`);
the explorer above shows that tree already, windowed. A short episode's is drawn as before
(tests/app/test_episode_page.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from apphelpers import no_exception, open_page
from sqlmodel import Session

from clawviz.figures import TREE_WINDOW
from clawviz.ui import state
from tests.dburl import fresh_url

EPISODE_PAGE = "pages/episode.py"
BENCH = Path(__file__).resolve().parents[2] / "bench"
N_CALLS = TREE_WINDOW + 20
"""A Claude Code main thread of this many calls: deeper than the Plotly tree's window."""


@pytest.fixture(scope="module")
def long_store(tmp_path_factory) -> str:
    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.store.db import get_engine, init_db

    sys.path.insert(0, str(BENCH))
    try:
        from bigep import write_big_episode
    finally:
        sys.path.remove(str(BENCH))
    url = fresh_url(tmp_path_factory.mktemp("long_tree"), "clawviz")
    engine = get_engine(url)
    init_db(engine)
    with Session(engine) as s:
        write_big_episode(s, N_CALLS)
        ensure_analysis(s)
        s.commit()
    return url


def _tree_charts(at) -> list:
    return [c for c in at.get("plotly_chart") if getattr(c, "key", None) == state.KEY_TREE]


def _tree_sections(at) -> list[str]:
    return [e.label for e in at.expander if e.label.startswith("Plotly tree of all")]


def test_a_long_episodes_plotly_tree_waits_until_it_is_opened(long_store, on_store):
    on_store(long_store)
    at = open_page(EPISODE_PAGE, episode="big")
    no_exception(at)
    assert _tree_charts(at) == []
    assert len(_tree_sections(at)) == 1 and f"all {N_CALLS} calls" in _tree_sections(at)[0]
    # The call inspector below still shows the selected call.
    assert "Call inspector" in [h.value for h in at.subheader]


def test_tree_1_in_the_url_opens_it(long_store, on_store):
    on_store(long_store)
    at = open_page(EPISODE_PAGE, episode="big", tree="1")
    no_exception(at)
    assert len(_tree_charts(at)) == 1
    # Its range slider says the tree is longer than the window it opens on.
    assert any("Long episode" in c.value for c in at.caption)
