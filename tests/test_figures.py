"""Tree layout and figures on hand-built episodes (no store, no Streamlit)."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from clawviz.figures.layout import TREE_WINDOW, tree_layout
from clawviz.figures.runs import MAX_BOX_POINTS, advantage_by_group_figure, reward_by_harness_figure
from clawviz.figures.tokens import advantage_figure, advantage_grid, token_grid
from clawviz.figures.tree import NODE_TRACE_NAME, call_from_selection, tree_figure
from clawviz.types import Call, CallDecision, EpisodeAnalysis, PathInfo, Usage


def _call(cid: str, i: int, model: str = "m") -> Call:
    return Call(
        call_id=cid, source_file="f.jsonl", line=i, endpoint="anthropic_messages", seq=i,
        model=model, usage=Usage(output_tokens=10), http_status=200,
    )  # fmt: skip


def _d(cid, role="main", state="kept", reason=None, parent=None, linked=None, seg=0, thread="main"):
    return CallDecision(
        call_id=cid, role=role, state=state, reason=reason, parent_call=parent,
        linked_call=linked, segment=seg, thread=thread,
    )  # fmt: skip


@pytest.fixture
def episode() -> tuple[list[Call], EpisodeAnalysis]:
    """A -> B -> {C -> E, D(not_longest)}, A -> F(failed); sub-agent S1 -> S2 spawned by B;
    summary Z of tip E; continuation G -> H after compaction."""
    ids = ["A", "B", "S1", "C", "D", "F", "S2", "E", "Z", "G", "H"]
    calls = [_call(c, i, model="<b>m</b>" if c == "A" else "m") for i, c in enumerate(ids)]
    decisions = {
        "A": _d("A"),
        "B": _d("B", parent="A"),
        "C": _d("C", parent="B"),
        "D": _d("D", state="pruned", reason="not_longest", parent="B"),
        "E": _d("E", parent="C"),
        "F": _d("F", state="failed", reason="failed_http", parent="A"),
        "S1": _d("S1", "aux_subagent", "auxiliary", "aux_subagent", linked="B", thread="sub1"),
        "S2": _d("S2", "aux_subagent", "auxiliary", "aux_subagent", parent="S1", thread="sub1"),
        "Z": _d("Z", "aux_summary", "auxiliary", "aux_summary", parent="E", linked="E", thread="z"),
        "G": _d("G", linked="Z", seg=1),
        "H": _d("H", parent="G", seg=1),
    }
    paths = [
        PathInfo("p0", 0, ["A", "B", "C", "E"], "kept", None, 40, 0.75, 1.2, 0.75),
        PathInfo("p1", 0, ["A", "B", "D"], "pruned", "not_longest", 30),
        PathInfo("p2", 1, ["G", "H"], "kept", None, 20, 0.75, 1.2, 0.75),
    ]
    a = EpisodeAnalysis("ep", "h", "kept", [], decisions, paths, reward=0.75, advantage=1.2)
    return calls, a


def test_layout_depth_lanes_and_bands(episode):
    calls, a = episode
    lay = tree_layout(calls, a)
    n = lay.by_id
    assert [n[c].x for c in "ABCE"] == [0, 1, 2, 3]
    assert {n[c].y for c in "ABCE"} == {0}
    assert n["D"].x == 2 and n["D"].y == 1  # the pruned sibling sits in the next lane
    assert n["F"].y > 0 and not n["F"].is_aux
    assert n["S1"].x == n["B"].x + 1 and n["S2"].x == n["S1"].x + 1
    assert n["Z"].x == n["E"].x + 1
    assert n["G"].x == n["Z"].x + 1 and n["G"].y == 0  # the continuation carries on the spine
    main_y = [m.y for m in lay.nodes if not m.is_aux]
    aux_y = [m.y for m in lay.nodes if m.is_aux]
    assert max(main_y) < lay.aux_band_start <= min(aux_y)
    assert lay.boundaries == [n["G"].x - 0.5]


def test_layout_edges_and_leaves(episode):
    calls, a = episode
    lay = tree_layout(calls, a)
    kinds = {(e.src, e.dst): e.kind for e in lay.edges}
    assert kinds[("A", "B")] == "continues"
    assert kinds[("B", "S1")] == "subagent"
    assert kinds[("S1", "S2")] == "continues"
    assert kinds[("E", "Z")] == "summary"
    assert kinds[("Z", "G")] == "compaction"
    assert {(leaf.call_id, leaf.reward, leaf.advantage) for leaf in lay.leaves} == {
        ("E", 0.75, 1.2),
        ("H", 0.75, 1.2),
    }
    n = lay.by_id
    assert n["E"].advantage == 1.2 and n["D"].advantage is None


def test_children_of_a_node_stay_in_adjacent_lanes():
    # root with three children, each with a chain of two: lanes 0, 1, 2 in order
    ids = ["r", "a", "b", "c", "a2", "b2", "c2"]
    calls = [_call(c, i) for i, c in enumerate(ids)]
    dec = {"r": _d("r")}
    for k in "abc":
        dec[k] = _d(k, state="kept" if k == "a" else "pruned", reason=None, parent="r")
        dec[k + "2"] = _d(k + "2", state=dec[k].state, parent=k)
    a = EpisodeAnalysis("e", "h", "kept", [], dec, [], None)
    n = tree_layout(calls, a).by_id
    assert [n[k].y for k in "abc"] == [0, 1, 2]
    assert [n[k + "2"].y for k in "abc"] == [0, 1, 2]


def test_figure_has_one_node_trace_with_call_ids(episode):
    calls, a = episode
    lay = tree_layout(calls, a)
    fig = tree_figure(lay)
    nodes = [t for t in fig.data if t.name == NODE_TRACE_NAME]
    assert len(nodes) == 1
    assert list(nodes[0].customdata) == [c.call_id for c in calls]
    legend = {t.name for t in fig.data if t.showlegend is not False and t.x == (None,)}
    assert {"kept", "pruned: not_longest", "failed", "aux_subagent", "aux_summary"} <= legend
    hover = nodes[0].hovertext[0]
    assert "&lt;b&gt;m&lt;/b&gt;" in hover and "<b>m</b>" not in hover
    texts = [ann.text for ann in fig.layout.annotations]
    assert any("R 0.75 · A +1.20" in t for t in texts)


def test_figure_modes_collapse_and_highlight(episode):
    calls, a = episode
    lay = tree_layout(calls, a)
    adv = tree_figure(lay, colour_by="advantage")
    assert any(getattr(t.marker, "showscale", False) for t in adv.data)
    collapsed = tree_figure(lay, collapse_aux=True)
    node_trace = next(t for t in collapsed.data if t.name == NODE_TRACE_NAME)
    assert "S2" not in node_trace.customdata and "S1" in node_trace.customdata
    hl = tree_figure(lay, highlight_path="p0")
    path_trace = next(t for t in hl.data if t.name == "selected path")
    assert len(path_trace.x) == 4
    with pytest.raises(ValueError):
        tree_figure(lay, colour_by="rainbow")


def test_layout_without_analysis_still_draws():
    calls = [_call("x", 0), _call("y", 1)]
    fig = tree_figure(tree_layout(calls, None))
    assert len(next(t for t in fig.data if t.name == NODE_TRACE_NAME).x) == 2


def test_selection_event_to_call_id():
    assert call_from_selection({"selection": {"points": [{"customdata": "c7"}]}}) == "c7"
    assert call_from_selection({"selection": {"points": [{"customdata": ["c8"]}]}}) == "c8"
    assert call_from_selection({"selection": {"points": [{"x": 1}]}}) is None
    assert call_from_selection({"selection": {"points": []}}) is None
    assert call_from_selection(None) is None


def test_large_episode_is_fast():
    # a 600-call spine with a retry branch every 10 calls
    calls, dec = [], {}
    prev = None
    for i in range(600):
        cid = f"c{i}"
        calls.append(_call(cid, i))
        dec[cid] = _d(cid, parent=prev)
        if i % 10 == 5:
            rid = f"r{i}"
            calls.append(_call(rid, i))
            dec[rid] = _d(rid, state="pruned", reason="superseded_retry", parent=prev)
        prev = cid
    a = EpisodeAnalysis("big", "h", "kept", [], dec, [], None)
    t = time.perf_counter()
    fig = tree_figure(tree_layout(calls, a))
    assert time.perf_counter() - t < 5
    assert len(next(t for t in fig.data if t.name == NODE_TRACE_NAME).x) == len(calls)
    # A deep tree opens on a window around the selected call, the slider spans the whole tree.
    assert fig.layout.xaxis.rangeslider.visible
    lo, hi = fig.layout.xaxis.range
    assert (lo, hi - lo) == (-0.7, TREE_WINDOW)
    assert fig.layout.xaxis.dtick is None
    assert tuple(fig.layout.xaxis.rangeslider.range) == (-0.7, 599 + 2.2)
    lo, hi = tree_figure(tree_layout(calls, a), selected_call="c300").layout.xaxis.range
    assert lo < 300 < hi and hi - lo == TREE_WINDOW
    lo, hi = tree_figure(tree_layout(calls, a), selected_call="c599").layout.xaxis.range
    assert hi == 599 + 2.2


def test_shallow_tree_shows_whole_depth_without_slider(episode):
    fig = tree_figure(tree_layout(*episode))
    assert not fig.layout.xaxis.rangeslider.visible
    assert fig.layout.xaxis.range[0] == -0.7
    assert fig.layout.xaxis.dtick == 1


def test_token_grid_marks_context_and_trained_tokens():
    g = token_grid([1, 2, 3], [7, 8], [-0.1, -2.0], width=4)
    assert (g.n_context, g.n_trained, g.shown_context) == (3, 2, 3)
    assert g.z[0] == [None, None, None, -0.1]
    assert g.z[1][:1] == [-2.0]
    assert g.text[0][3].startswith("out 7")


def test_advantage_grid_colours_each_generated_token_by_r_minus_v():
    g = advantage_grid([7, 8, 9], [0.5, -0.25, 0.0], [0.5, 1.25, 1.0], width=2)
    assert g.z == [[0.5, -0.25], [0.0, None]]
    assert g.text[0][1] == "out 8 · V 1.250 · A_t -0.250"
    assert g.limit == 0.5 and g.n_tokens == 3
    heat = advantage_figure(g).data[0]
    # Symmetric range: A_t = 0 sits on the diverging scale's middle colour.
    assert (heat.zmin, heat.zmax) == (-0.5, 0.5)


def test_runs_charts_stay_light_when_crowded():
    n = MAX_BOX_POINTS + 10
    eps = pd.DataFrame(
        {
            "episode_id": [f"e{i}" for i in range(n + 3)],
            "harness": ["big"] * n + ["small"] * 3,
            "reward": [i / n for i in range(n)] + [0.1, None, 0.9],
        }
    )
    fig = reward_by_harness_figure(eps)
    big, small = fig.data
    assert (big.name, big.boxpoints, big.customdata) == ("big", "outliers", None)
    assert small.boxpoints == "all" and list(small.customdata) == ["e" + str(n), "e" + str(n + 2)]
    groups = pd.DataFrame(
        {
            "episode_id": [f"e{i}" for i in range(6)],
            "group": ["t3 / x", "t1 / x", "t2 / x", "t1 / x", "t3 / x", "t2 / x"],
            "attempt": [0, 1, 0, 0, 1, 1],
            "advantage": [0.5, -1.0, 0.0, 1.0, -0.5, 0.2],
        }
    )
    fig = advantage_by_group_figure(groups, max_groups=2)
    pts = fig.data[0]
    assert list(pts.x) == ["t1 / x", "t1 / x", "t2 / x", "t2 / x"]
    assert list(pts.customdata) == ["e3", "e1", "e2", "e5"]
    assert "first 2 of 3 groups" in fig.layout.title.text
    assert "first" not in advantage_by_group_figure(groups).layout.title.text
