"""The harness evidence of an episode, summed over its calls (`clawviz.ui.harness_evidence`),
and the same evidence per call in `explain --json` (issue 29 §3)."""

from __future__ import annotations

import json
from pathlib import Path

from sqlmodel import Session, select

from clawviz.cli.explain import explain_rows
from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import init_db
from clawviz.store.models import Episode
from clawviz.types import Call
from clawviz.ui.harness_evidence import episode_evidence, evidence_text, session_text
from tests.dburl import memory_engine

TRANSCRIPT = (
    Path(__file__).parent
    / "data"
    / "recorded"
    / "openclaw-2026.8.2"
    / "heartbeat-after-compaction"
    / "sessions"
    / "8af981af-f54e-497e-9e8a-d47a1f0d3d22.jsonl"
)


def _call(i: int, harness: str | None, evidence: str | None, endpoint: str = "openai_chat"):
    extra = {"harness_evidence": evidence} if evidence else {}
    return Call(f"c{i}", "f.jsonl", i, endpoint, harness=harness, extra=extra)  # type: ignore[arg-type]


def test_evidence_is_counted_per_kind_and_disagreement_is_named():
    calls = [
        _call(1, "openclaw", 'system prompt contains "OpenClaw"'),
        _call(2, "openclaw", 'system prompt contains "OpenClaw"'),
        _call(3, "openclaw", "tool sessions_spawn defined"),
        _call(4, "openclaw", None),
        _call(5, "pi", 'system prompt contains "pi"'),
        _call(6, None, None, endpoint="non_model"),
    ]
    ev = episode_evidence({"harness": "openclaw"}, calls)
    assert evidence_text(ev) == (
        'harness: openclaw — from: system prompt contains "OpenClaw" (2 of 5); '
        "tool sessions_spawn defined (1 of 5); no evidence kept (1 of 5). "
        "Other harnesses named by some calls: pi (1 call)"
    )


def test_no_harness_and_a_harness_without_evidence_say_so():
    assert evidence_text(episode_evidence({"harness": None}, [_call(1, None, None)])) == (
        "harness: — (nothing in the traffic of its 1 call names one)"
    )
    text = evidence_text(episode_evidence({"harness": "codex"}, [_call(1, "codex", None)]))
    assert text.startswith("harness: codex — from: no call carries evidence for it")


def test_explain_json_lists_each_calls_harness_and_evidence(tmp_path):
    """An OpenClaw session file (pi's format, written by OpenClaw): the harness is openclaw,
    from the OpenClaw-only entries the file holds (its `custom` model-snapshot entry)."""
    records = [json.loads(x) for x in TRANSCRIPT.read_text().splitlines()]
    assert any(r.get("customType") == "model-snapshot" for r in records)
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as s:
        ingest_paths([TRANSCRIPT], session=s)
        s.commit()
        ensure_analysis(s)
        (ep,) = s.exec(select(Episode)).all()
        rows = explain_rows(s, ep.episode_id)
    assert rows and {r["harness"] for r in rows} == {"openclaw"}
    assert all("model-snapshot" in (r["harness_evidence"] or "") for r in rows), rows[0]


def test_the_session_line_of_a_disagreeing_an_unread_and_an_unlinked_episode():
    disagree = {
        "transcript": "t-1",
        "agree": False,
        "disagreements": [f"call {i}: another parent in the transcript" for i in range(5)],
    }
    text, warn = session_text({"cross_check": json.dumps(disagree)})
    assert warn and text == (
        "session: transcript t-1 is this episode's cross-check and disagrees: "
        "call 0: another parent in the transcript; call 1: another parent in the transcript; "
        "call 2: another parent in the transcript (and 2 more)"
    )
    text, warn = session_text({"cross_check": json.dumps({"transcript": "t-1", "agree": None})})
    assert warn and "not compared" in text
    assert session_text({"cross_check": "{not json"}) == (
        "session: the stored cross-check cannot be read",
        True,
    )
    assert session_text({"cross_check": None, "primary_episode": None}) is None
