"""The real pi session (pi-mono fixture, MIT): 484 assistant calls, 2 compactions, 3 segments."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from clawviz.ingest.transcripts import PI_FORMAT, detect_transcript, read_transcript
from clawviz.ingest.transcripts.pi import COMPACTION_SUMMARY_PREFIX, SUMMARIZATION_SYSTEM_PROMPT
from clawviz.settings import DEFAULT_SETTINGS

FIXTURE = Path(__file__).parent / "data" / "transcripts" / "pi-before-compaction.jsonl"


@pytest.fixture(scope="module")
def read():
    return read_transcript(FIXTURE)


@pytest.fixture(scope="module")
def entries():
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def _first_text(message: dict) -> str:
    return next(b["text"] for b in message["content"] if b["type"] == "text")


def test_detected_as_pi(entries):
    assert detect_transcript(entries[:5]) == PI_FORMAT


def test_counts(read, entries):
    assert read.format == PI_FORMAT and read.rejects == [] and read.notes == []
    assert read.harness == "pi" and read.episode_id == entries[0]["id"]
    roles = Counter(c.extra["transcript_role"] for c in read.calls)
    assert roles == {"main": 484, "compaction_summary": 2}
    n_assistant = sum(
        1 for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"
    )
    assert n_assistant == 484
    assert len({c.call_id for c in read.calls}) == 486
    assert [c.seq for c in read.calls] == list(range(486))


def test_each_call_points_at_its_assistant_line(read, entries):
    for c in read.calls:
        entry = entries[c.line - 1]
        if c.extra["transcript_role"] == "main":
            assert entry["message"]["role"] == "assistant"
            assert c.model == entry["message"]["model"]
            assert c.usage.output_tokens == entry["message"]["usage"]["output"]
        else:
            assert entry["type"] == "compaction"


def test_failed_turns_marked_and_never_replayed(read):
    failures = Counter(c.failure for c in read.calls)
    assert failures == {None: 467, "truncated_stream": 18, "failed_http": 1}
    http = next(c for c in read.calls if c.failure == "failed_http")
    assert http.http_status == 400 and "tool_use" in http.error


def test_every_request_pairs_tool_calls_with_results(read):
    for c in read.calls:
        if c.extra["transcript_role"] != "main":
            continue
        open_ids: set[str] = set()
        for m in c.messages:
            if m["role"] == "assistant":
                assert not open_ids, f"{c.call_id}: unanswered {open_ids}"
                open_ids = {b["id"] for b in m["content"] if b["type"] == "tool_use"}
            else:
                answered = {b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"}
                if answered:
                    assert answered <= open_ids, c.call_id
                    open_ids -= answered
                else:
                    assert not open_ids, f"{c.call_id}: user turn before results"


def test_two_compactions_three_segments(read):
    main = [c for c in read.calls if c.extra["transcript_role"] == "main"]
    segs = Counter(c.extra["transcript_segment"] for c in main)
    assert set(segs) == {0, 1, 2}
    for seg in (1, 2):
        first = next(c for c in main if c.extra["transcript_segment"] == seg)
        assert _first_text(first.messages[0]).startswith(COMPACTION_SUMMARY_PREFIX)
    summaries = [c for c in read.calls if c.extra["transcript_role"] == "compaction_summary"]
    assert [s.extra["tokens_before"] for s in summaries] == [175004, 185014]
    for s in summaries:
        assert s.system == SUMMARIZATION_SYSTEM_PROMPT
        text = _first_text(s.response)
        assert text.startswith("# Context Checkpoint")
        nxt = next(
            c
            for c in main
            if c.seq > s.seq and c.extra["transcript_segment"] > s.extra["transcript_segment"]
        )
        assert text in _first_text(nxt.messages[0])
    assert "<previous-summary>" in _first_text(summaries[1].messages[-1])
    assert "conversation to summarize" in _first_text(summaries[0].messages[-1])


def test_context_after_compaction_keeps_from_first_kept_entry(read, entries):
    main = [c for c in read.calls if c.extra["transcript_role"] == "main"]
    first = next(c for c in main if c.extra["transcript_segment"] == 1)
    kept = entries[293]["message"]
    kept_text = next(b.get("text") for b in kept["content"] if b["type"] == "text")
    assert _first_text(first.messages[1]) == kept_text


@pytest.fixture(scope="module")
def analysis(read):
    from clawviz.jobs import analyse as module
    return module.analyse_episode(read.calls, reward=None, settings=DEFAULT_SETTINGS)


def test_reconstruction_classifies_three_main_segments(analysis):
    roles = Counter(d.role for d in analysis.decisions.values())
    assert roles == {"main": 484, "aux_summary": 2}
    kept = {
        d.segment for d in analysis.decisions.values() if d.role == "main" and d.state == "kept"
    }
    assert len(kept) == 3
    assert analysis.n_segments == 3
    assert sorted(p.segment for p in analysis.paths) == sorted(kept)
