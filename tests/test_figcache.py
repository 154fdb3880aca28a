"""The Episode tree figure cache (clawviz.ui.figcache): the same figure the builder draws, kept
while its layout and options are the same, rebuilt as soon as either changes."""

from __future__ import annotations

import dataclasses

import pytest
from test_figures import _call, _d, episode  # noqa: F401 - `episode` is a fixture

from clawviz.figures.layout import tree_layout
from clawviz.figures.tree import tree_figure
from clawviz.ui import figcache


@pytest.fixture(autouse=True)
def _empty_cache():
    figcache.clear()
    yield
    figcache.clear()


def test_kept_figure_is_what_the_builder_draws_and_is_reused(episode):  # noqa: F811
    calls, a = episode
    opts = {"colour_by": "state", "highlight_path": "p0", "selected_call": "C"}
    first = figcache.tree_figure(tree_layout(calls, a), **opts)
    assert first.to_dict() == tree_figure(tree_layout(calls, a), **opts).to_dict()
    # A rerun builds a new, equal layout: the kept figure comes back, not a rebuilt one.
    assert figcache.tree_figure(tree_layout(calls, a), **opts) is first


def test_any_change_of_options_or_content_draws_anew(episode):  # noqa: F811
    calls, a = episode
    base = figcache.tree_figure(tree_layout(calls, a))
    for opts in ({"colour_by": "advantage"}, {"collapse_aux": True}, {"selected_call": "H"},
                 {"highlight_path": ["A", "B", "D"]}, {"height": 320}):  # fmt: skip
        fig = figcache.tree_figure(tree_layout(calls, a), **opts)
        assert fig is not base
        assert fig.to_dict() == tree_figure(tree_layout(calls, a), **opts).to_dict()
    # A call appended by a live recording, or a decision changed, is a different figure.
    more = [*calls, _call("I", 99)]
    dec = dict(a.decisions, I=_d("I", parent="H", seg=1))
    grown = figcache.tree_figure(tree_layout(more, dataclasses.replace(a, decisions=dec)))
    assert "I" in next(t for t in grown.data if t.name == "calls").customdata
    pruned = dict(a.decisions, E=_d("E", state="pruned", reason="not_longest", parent="C"))
    changed = figcache.tree_figure(tree_layout(calls, dataclasses.replace(a, decisions=pruned)))
    assert changed is not base
    assert changed.to_dict() != base.to_dict()


def test_at_most_max_figures_are_kept(episode, monkeypatch):  # noqa: F811
    calls, a = episode
    monkeypatch.setattr(figcache, "MAX_FIGURES", 2)
    first = figcache.tree_figure(tree_layout(calls, a), height=300)
    second = figcache.tree_figure(tree_layout(calls, a), height=301)
    # Using the first makes the second the least recently used: a third figure evicts it.
    assert figcache.tree_figure(tree_layout(calls, a), height=300) is first
    figcache.tree_figure(tree_layout(calls, a), height=302)
    assert figcache.tree_figure(tree_layout(calls, a), height=300) is first
    assert figcache.tree_figure(tree_layout(calls, a), height=301) is not second
