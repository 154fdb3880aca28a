"""The bundled sample logs, ingested and analysed, give exactly the decisions the generator meant.

`sample_logs/expected.json` lists, for every call, the role / state / reason / segment and the
parent, retry and link it was written to have, and for every episode its status and reasons.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.cli.explain import explain_rows
from clawviz.jobs.analyse import ensure_analysis, episode_analysis
from clawviz.store.db import init_db
from clawviz.store.models import CallRow
from tests.dburl import memory_engine

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
EXPECTED = SAMPLES / "expected.json"

pytestmark = pytest.mark.skipif(not EXPECTED.exists(), reason="sample_logs not generated")


@pytest.fixture(scope="module")
def analysed():
    from clawviz.jobs import ingest
    engine = memory_engine()
    init_db(engine)
    expected = json.loads(EXPECTED.read_text())
    with Session(engine) as session:
        ingest.ingest_paths([SAMPLES], session=session)
        ensure_analysis(session)
        rows = list(session.exec(select(CallRow)))
        analyses = {
            e["episode_id"]: episode_analysis(session, e["episode_id"])
            for e in expected["episodes"]
        }
        explained = {
            e["episode_id"]: explain_rows(session, e["episode_id"]) for e in expected["episodes"]
        }
    return expected, rows, analyses, explained


def _by_place(rows):
    out = {}
    for r in rows:
        rel = Path(r.source_file).as_posix().split("sample_logs/", 1)[-1]
        out[(rel, r.line)] = r
    return out


def test_every_expected_call_was_loaded(analysed):
    expected, rows, _, _ = analysed
    places = _by_place(rows)
    missing = [
        (c["file"], c["line"]) for c in expected["calls"] if (c["file"], c["line"]) not in places
    ]
    assert missing == []


def test_call_decisions_match_expected(analysed):
    expected, rows, analyses, _ = analysed
    places = _by_place(rows)

    def ref(r):
        return None if r is None else places[(r["file"], r["line"])].call_id

    diffs = []
    for c in expected["calls"]:
        row = places[(c["file"], c["line"])]
        d = analyses[row.episode_id].decisions[row.call_id]
        got = (d.role, d.state, d.reason, d.segment, d.parent_call, d.retry_of, d.linked_call)
        want = (
            c["role"],
            c["state"],
            c["reason"],
            c["segment"],
            ref(c["parent"]),
            ref(c["retry_of"]),
            ref(c["linked"]),
        )
        if got != want:
            diffs.append((c["episode_id"], c["seq"], c["note"], got, want))
    assert diffs == []


def test_episode_status_and_reasons_match_expected(analysed):
    expected, _, analyses, _ = analysed
    diffs = []
    for e in expected["episodes"]:
        a = analyses[e["episode_id"]]
        got = (a.status, [r.code for r in a.reasons], a.n_segments)
        want = (e["status"], [r["code"] for r in e["reasons"]], e["n_segments"])
        if got != want:
            diffs.append((e["episode_id"], got, want))
    assert diffs == []


def test_every_sample_call_has_one_state(analysed):
    _, rows, analyses, _ = analysed
    for r in rows:
        if r.episode_id in analyses:
            d = analyses[r.episode_id].decisions[r.call_id]
            assert d.state in {"kept", "pruned", "auxiliary", "failed"}
            assert (d.reason is None) == (d.state == "kept")


def test_explain_rows_show_what_the_generator_intended(analysed):
    """What `python -m clawviz explain EPISODE --json` prints, per call, for every sample."""
    expected, rows, _, explained = analysed
    places = _by_place(rows)
    want = {
        places[(c["file"], c["line"])].call_id: (c["role"], c["state"], c["reason"], c["segment"])
        for c in expected["calls"]
    }
    got = {
        r["call_id"]: (r["role"], r["state"], r["reason"], r["segment"])
        for rs in explained.values()
        for r in rs
    }
    assert got == want
