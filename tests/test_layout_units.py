"""The tree layout's small functions on hand-built episodes (expected positions worked out here)."""

from __future__ import annotations

from clawviz.figures import layout
from clawviz.types import Call, CallDecision, EpisodeAnalysis, PathInfo


def _call(cid: str) -> Call:
    return Call(call_id=cid, source_file="f.jsonl", line=1, endpoint="anthropic_messages")


def _analysis(decisions: list[CallDecision], paths: list[PathInfo] | None = None):
    return EpisodeAnalysis(
        episode_id="e",
        settings_hash="h",
        status="kept",
        reasons=[],
        decisions={d.call_id: d for d in decisions},
        paths=paths or [],
        reward=0.5,
        advantage=0.25,
    )


def _d(cid, parent=None, state="kept", role="main", linked=None, thread=""):
    return CallDecision(
        cid, role, state, None, parent_call=parent, linked_call=linked, thread=thread
    )


# a -> b -> c (kept spine), b -> d (pruned sibling), s = sub-agent spawned by b.
DECISIONS = [
    _d("a"),
    _d("b", "a"),
    _d("c", "b"),
    _d("d", "b", state="pruned"),
    _d("s", None, state="auxiliary", role="aux_subagent", linked="b", thread="sub1"),
]
CALLS = [_call(c) for c in "abcds"]


def test_links_put_the_subagent_on_a_cross_link_and_x_steps_right():
    links = layout.links_of(CALLS, _analysis(DECISIONS))
    assert links.tree_parent == {"a": None, "b": "a", "c": "b", "d": "b", "s": None}
    assert links.cross_parent["s"] == "b"
    assert layout.x_positions(links) == {"a": 0, "b": 1, "c": 2, "d": 2, "s": 2}


def test_kept_child_first_and_siblings_on_adjacent_lanes():
    links = layout.links_of(CALLS, _analysis(DECISIONS))
    x = layout.x_positions(links)
    placed = layout.place_all(links, x)
    assert layout.child_order(links, layout.subtree_sizes(links), "b") == ["c", "d"]
    assert [placed.lane_of[c] for c in "abcd"] == [0, 0, 0, 1]
    assert placed.n_main_lanes == 2
    # The auxiliary band starts MAIN_BAND_GAP lanes below the last main lane.
    assert placed.aux_start == 1 + layout.MAIN_BAND_GAP and placed.lane_of["s"] == 0


def test_kept_values_fall_back_to_the_episode():
    path = PathInfo("p", 0, ["a", "b", "c"], "kept", None, 10, reward=None, advantage=1.0)
    a = _analysis(DECISIONS, [path])
    assert layout.kept_values(a.decisions["c"], [path], a) == (1.0, 0.5)
    assert layout.kept_values(a.decisions["d"], [], a) == (None, None)


def test_a_compaction_continuation_draws_a_boundary_left_of_it():
    decisions = [
        _d("a"),
        _d("m", None, role="aux_summary", state="auxiliary", linked="a"),
        _d("n", None, linked="m"),
    ]
    calls = [_call(c) for c in "amn"]
    links = layout.links_of(calls, _analysis(decisions))
    x = layout.x_positions(links)
    assert x == {"a": 0, "m": 1, "n": 2}
    assert layout.compaction_boundaries(links, x) == [1.5]
    assert [e.kind for e in layout.edges_of(links)] == ["summary", "compaction"]
