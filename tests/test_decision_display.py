"""The decision shown where it happens, on the samples: every episode reason pinned on the call
that caused it, retry notes, one call number, and the tree drawing of both.

Expected values come from sample_logs/expected.json (what the generator made happen: each call's
file, line, role, state, parent and retry_of, and each episode's reasons and reward), never from
clawviz's own output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session

from clawviz.figures.layout import tree_layout
from clawviz.figures.palette import KEPT_IN_DROPPED
from clawviz.figures.tree import tree_figure
from clawviz.jobs.analyse import episode_analysis
from clawviz.recon.prune import HARNESS_RETRY, IDENTICAL_RESEND, retry_note
from clawviz.store import calls as store
from clawviz.store.db import get_engine
from clawviz.types import State, call_label, format_value
from clawviz.ui.inspector import replacement_of

EXPECTED = json.loads((Path(__file__).parents[1] / "sample_logs" / "expected.json").read_text())
EPISODES = {e["episode_id"]: e for e in EXPECTED["episodes"]}
CALLS: dict[str, list[dict]] = {}
for _c in EXPECTED["calls"]:
    CALLS.setdefault(_c["episode_id"], []).append(_c)
DROPPED = sorted(eid for eid, e in EPISODES.items() if e["status"] == "dropped")


def _key(file: str, line: int) -> tuple[str, int]:
    return (file.rsplit("/", 1)[-1], line)


@pytest.fixture(scope="module")
def loaded(sample_db_url):
    """Per episode: its analysis and its calls by (file name, line)."""
    out = {}
    with Session(get_engine(sample_db_url)) as s:
        for eid in EPISODES:
            calls = store.load_calls(s, eid)
            out[eid] = (episode_analysis(s, eid), calls)
    return out


def _by_key(calls):
    return {_key(c.source_file, c.line): c for c in calls}


def _expected_key(c: dict) -> tuple[str, int]:
    return _key(c["file"], c["line"])


def _last_kept_main(eid: str) -> tuple[str, int]:
    """Where the reward lands: the last kept main call of the last segment (by seq)."""
    kept = [c for c in CALLS[eid] if c["role"] == "main" and c["state"] == "kept"]
    last = max(kept, key=lambda c: (c["segment"], c["seq"]))
    return _expected_key(last)


def _main_leaves(eid: str) -> set[tuple[str, int]]:
    """Leaves of the valid main calls (kept or not_longest) by the expected parents."""
    valid = [
        c
        for c in CALLS[eid]
        if c["role"] == "main" and (c["state"] == "kept" or c["reason"] == "not_longest")
    ]
    parents = {_key(c["parent"]["file"], c["parent"]["line"]) for c in valid if c["parent"]}
    return {_expected_key(c) for c in valid} - parents


@pytest.mark.parametrize("eid", DROPPED)
def test_every_reason_of_a_dropped_sample_is_pinned_on_the_call_that_caused_it(eid, loaded):
    a, calls = loaded[eid]
    by_id = {c.call_id: c for c in calls}
    want = [r["code"] for r in EPISODES[eid]["reasons"]]
    assert [r.code for r in a.reasons] == want
    for r in a.reasons:
        assert r.call_id in by_id, f"{eid} {r.code} is pinned on no call"
        at = _key(by_id[r.call_id].source_file, by_id[r.call_id].line)
        if r.code == "ended_in_error":
            mains = [c for c in CALLS[eid] if c["role"] == "main"]
            last = max(mains, key=lambda c: c["seq"])
            assert last["state"] == "failed"
            assert at == _expected_key(last)
        elif r.code == "unsupported_tool":
            canvas = [c for c in CALLS[eid] if "canvas" in (c.get("note") or "")]
            assert [at] == [_expected_key(c) for c in canvas]
        elif r.code == "too_many_branches":
            leaves = _main_leaves(eid)
            assert len(leaves) == EPISODES[eid]["n_main_leaves"] == 9
            pinned = {_key(by_id[x].source_file, by_id[x].line) for x in r.call_ids}
            assert pinned == leaves and r.call_ids[0] == r.call_id
        elif r.code in ("below_reward_threshold", "missing_reward"):
            assert at == _last_kept_main(eid)
        else:
            pytest.fail(f"no expectation for {r.code}")


def test_evidence_numbers_are_formatted(loaded):
    a, _ = loaded["t0001-claude-code-a4"]
    assert EPISODES["t0001-claude-code-a4"]["reward"] == 0.466667
    (below,) = [r for r in a.reasons if r.code == "below_reward_threshold"]
    assert below.evidence == "reward 0.47 < reward_threshold 0.5"
    (err,) = [r for r in a.reasons if r.code == "ended_in_error"]
    # The expected failed last call is line 5 of its file: the call number is the log line.
    assert err.evidence == "last main call 5 failed (HTTP 500)"


def test_format_value_keeps_the_comparison_true():
    assert format_value(0.466667) == "0.47"
    assert format_value(0.4) == "0.4"
    assert format_value(1.0) == "1"
    assert format_value(0.4999, 0.5) == "0.4999"
    assert format_value(0.49999999, 0.5) == "0.5"  # no more than 6 decimals
    assert format_value(-0.001) == "0"


def _retries():
    for eid, calls in CALLS.items():
        for c in calls:
            if c["retry_of"] and c["role"] == "main":
                yield eid, c


@pytest.mark.parametrize(
    ("eid", "call"), list(_retries()), ids=lambda v: v if isinstance(v, str) else v["note"]
)
def test_each_expected_retry_is_noted_with_its_kind_and_drawn(eid, call, loaded):
    a, calls = loaded[eid]
    keyed = _by_key(calls)
    me = keyed[_expected_key(call)]
    retried = keyed[_key(call["retry_of"]["file"], call["retry_of"]["line"])]
    kind = HARNESS_RETRY if "body differs" in call["note"] else IDENTICAL_RESEND
    note = retry_note(a.decisions[me.call_id].role_reason)
    assert f"retry of call {retried.line} ({kind})" in note
    if call["state"] == "kept":
        assert f"kept over call {retried.line}: " in note
        assert replacement_of(a, retried.call_id) == me.call_id
    layout = tree_layout(calls, a)
    assert any(
        e.kind == "retry" and (e.src, e.dst) == (retried.call_id, me.call_id) for e in layout.edges
    )


def test_superseded_branch_links_to_its_replacement(loaded):
    """t0001-claude-code-a3: lines 3 and 4 abandoned, line 5 re-sent line 3's request."""
    a, calls = loaded["t0001-claude-code-a3"]
    keyed = {c.line: c for c in calls}
    expected = {c["line"]: c for c in CALLS["t0001-claude-code-a3"]}
    assert expected[3]["reason"] == expected[4]["reason"] == "superseded_retry"
    assert expected[5]["retry_of"]["line"] == 3
    for line in (3, 4):
        assert replacement_of(a, keyed[line].call_id) == keyed[5].call_id
        assert "replaced by call 5" in retry_note(a.decisions[keyed[line].call_id].role_reason)


def test_not_longest_names_the_winning_path_and_the_difference(loaded):
    a, calls = loaded["e31cf886-54eb-430f-8bb4-89af4c2f1420"]
    kept = [p for p in a.paths if p.state == State.KEPT]
    pruned = [p for p in a.paths if p.state != State.KEPT]
    assert len(kept) == 1 and len(pruned) == 8  # expected: one leaf kept, eight not_longest
    by_id = {c.call_id: c for c in calls}
    leaf = by_id[kept[0].call_ids[-1]]
    for p in pruned:
        tokens = sum(by_id[c].generated_tokens or 0 for c in p.call_ids)
        best = sum(by_id[c].generated_tokens or 0 for c in kept[0].call_ids)
        assert p.why.startswith(f"path {kept[0].path_id} (ending at call {leaf.line}) won with ")
        assert f"{best:,} generated tokens; this one has {tokens:,} ({tokens - best:+,})" in p.why


def test_dropped_tree_greys_its_kept_path_and_pins_the_reasons(loaded):
    a, calls = loaded["t0001-claude-code-a4"]
    layout = tree_layout(calls, a)
    expected = {c["line"]: c for c in CALLS["t0001-claude-code-a4"]}
    cats = {n.label: n.category for n in layout.nodes}
    kept_lines = {str(line) for line, c in expected.items() if c["state"] == "kept"}
    assert kept_lines and all(cats[x] == KEPT_IN_DROPPED for x in kept_lines)
    assert State.KEPT not in cats.values()
    pins = {
        (p.code, next(n.label for n in layout.nodes if n.call_id == p.call_id)) for p in layout.pins
    }
    assert pins == {("ended_in_error", "5"), ("below_reward_threshold", "3")}
    fig = tree_figure(layout)
    texts = " ".join(ann.text for ann in fig.layout.annotations)
    assert "⚑ ended_in_error</b>: last main call 5 failed (HTTP 500)" in texts
    assert "reward 0.47 &lt; reward_threshold 0.5" in texts
    assert "episode dropped" in texts
    # A pin on a call in the right half of the shown depths points from its left, so the label
    # stays in the plot instead of running under the legend; one in the left half from its right.
    lo, hi = fig.layout.xaxis.range
    x_of = {n.label: n.x for n in layout.nodes}
    for ann in fig.layout.annotations:
        if ann.text.startswith("<b>⚑"):
            right = ann.x > (lo + hi) / 2
            assert (ann.xanchor, ann.ax < 0) == (("right", True) if right else ("left", False))
    assert {x_of["5"] > (lo + hi) / 2, x_of["3"] > (lo + hi) / 2} == {True, False}
    node = next(t for t in fig.data if t.name == "calls")
    assert list(node.text) == [call_label(c) for c in calls]
    assert any("retried by" in (t.name or "") for t in fig.data)
    # A kept episode keeps the bright kept green and has no pins.
    a2, calls2 = loaded["t0001-openclaw-a3"]
    layout2 = tree_layout(calls2, a2)
    assert not layout2.pins and not layout2.dropped
    assert State.KEPT in {n.category for n in layout2.nodes}


def test_node_hover_and_number_is_the_log_line(loaded):
    a, calls = loaded["t0001-openclaw-a3"]
    fig = tree_figure(tree_layout(calls, a))
    node = next(t for t in fig.data if t.name == "calls")
    # expected: line 6 (seq 5) is the kept retry of line 3
    i = list(node.customdata).index(next(c.call_id for c in calls if c.line == 6))
    assert node.text[i] == "6"
    assert node.hovertext[i].startswith("<b>call 6</b> · t0001-openclaw-a3.jsonl line 6 · seq 5")
    assert f"retry of call 3 ({HARNESS_RETRY})" in node.hovertext[i]


RECORDED = Path(__file__).parent / "data" / "recorded"
RETRIED = sorted(
    p.parent
    for p in RECORDED.glob("*/*/expected.json")
    if any(c.get("retry_of") for c in json.loads(p.read_text()).get("calls", []))
)


def _request_history(line: str) -> object:
    body = json.loads(line)["request"]["body"]
    body = json.loads(body) if isinstance(body, str) else body
    return body.get("messages", body.get("input"))


@pytest.mark.parametrize("folder", RETRIED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_retries_say_what_they_retry_and_how(folder, tmp_path):
    """Real harness retries (expected.json from the scripted server's log): each retrying call's
    note names the retried call by its log line, with the kind the raw request bodies show."""
    import gzip

    from clawviz.cli.explain import explain_rows
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import init_db
    from tests.dburl import memory_engine

    expected = json.loads((folder / "expected.json").read_text())
    plain, packed = folder / "exchanges.jsonl", folder / "exchanges.jsonl.gz"
    text = plain.read_text() if plain.exists() else gzip.decompress(packed.read_bytes()).decode()
    raw = text.splitlines()
    log = tmp_path / "exchanges.jsonl"
    log.write_text("\n".join(raw) + "\n")
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as s:
        ingest_paths([log], session=s)
        s.commit()
        (eid,) = {c.episode_id for c in store.list_episodes(s)} or {None}
        rows = {r["source"]["line"]: r for r in explain_rows(s, eid)}
    line_of = {c["name"]: c["line"] for c in expected["calls"]}
    checked = 0
    for c in expected["calls"]:
        if not c.get("retry_of") or c["role"] != "main":
            continue
        prev = line_of[c["retry_of"]]
        same = _request_history(raw[prev - 1]) == _request_history(raw[c["line"] - 1])
        kind = IDENTICAL_RESEND if same else HARNESS_RETRY
        note = rows[c["line"]]["retry"] or ""
        assert f"retry of call {prev} ({kind})" in note, (c["name"], note)
        if c["state"] == "kept":
            assert "kept over call " in note
        checked += 1
    assert checked
