"""The real pi transcript (pi-mono test fixture, MIT): 2 compactions -> 3 main segments."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from clawviz.recon.pipeline import analyse_episode

FIXTURE = Path(__file__).parent / "data" / "transcripts" / "pi-before-compaction.jsonl"


@pytest.fixture(scope="module")
def analysed():
    from clawviz.ingest import transcripts
    if not FIXTURE.exists():
        pytest.skip("fixture not copied")
    read = transcripts.read_transcript(FIXTURE)
    return read.calls, analyse_episode(read.calls, reward=1.0)


def test_two_compactions_give_three_segments(analysed):
    calls, a = analysed
    assert a.n_segments == 3
    kept = [p for p in a.paths if p.state == "kept"]
    assert sorted(p.segment for p in kept) == [0, 1, 2]
    roles = Counter(d.role for d in a.decisions.values())
    assert roles["aux_summary"] == 2
    assert set(roles) == {"main", "aux_summary"}


def test_summaries_link_tip_and_continuation(analysed):
    calls, a = analysed
    d = a.decisions
    summaries = [c for c in calls if d[c.call_id].role == "aux_summary"]
    for s in summaries:
        tip = d[s.call_id].linked_call
        assert tip is not None and d[tip].role == "main" and d[tip].state == "kept"
    continuations = [c for c in calls if d[c.call_id].role == "main" and d[c.call_id].linked_call]
    assert {d[c.call_id].linked_call for c in continuations} == {s.call_id for s in summaries}
    assert {d[c.call_id].segment for c in continuations} == {1, 2}


def test_every_call_one_state_and_episode_kept(analysed):
    calls, a = analysed
    assert set(a.decisions) == {c.call_id for c in calls}
    assert a.status == "kept", a.reasons
    for dec in a.decisions.values():
        assert dec.state in {"kept", "pruned", "auxiliary", "failed"}
        assert (dec.reason is None) == (dec.state == "kept")
    # Aborted turns in the transcript are failed, never parents of a kept call.
    failed = {k for k, dec in a.decisions.items() if dec.state == "failed"}
    assert failed and not any(a.decisions[k].parent_call in failed for k in a.decisions)
