"""Real recordings of pi-coding-agent and Codex CLI rebuild to what the scripted server made happen.

Each folder under tests/data/recorded/<harness>-<version>/<scenario>/ was made by running the
real harness from npm, offline, through `clawviz record` in front of the scripted server
(tests/harness). `expected.json` was written by tests/harness/expect.py from the scenario and
the server's own log (never from clawviz). These tests ingest the proxy log and compare every
call's role, state, reason, segment, parent, link, retry and thread, and the episode's status,
reasons and kept path per segment; then they ingest the harness's own session file and check it
agrees with the wire reconstruction where a transcript can show it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.jobs.analyse import ensure_analysis, episode_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import init_db
from clawviz.store.models import CallRow
from tests.dburl import memory_engine
from tests.harness import recorded

# Claude Code and OpenClaw recordings have their own tests (test_recorded_claude_code.py,
# test_recorded_openclaw.py).
FOLDERS = recorded.folders("pi-", "codex-")
IDS = [recorded.folder_id(p) for p in FOLDERS]
XFAIL: dict[str, str] = {}


def _engine():
    engine = memory_engine()
    init_db(engine)
    return engine


def _expected(folder: Path) -> recorded.Expected:
    return recorded.read_expected(folder)


def _maybe_xfail(folder: Path) -> None:
    key = recorded.folder_id(folder)
    if key in XFAIL:
        pytest.xfail(XFAIL[key])


@pytest.fixture(scope="module")
def wire(recorded_store) -> dict[Path, recorded.Loaded]:
    """Each recording's proxy log ingested (plus a reward of 1.0 so the reward rule stays out
    of the way) and analysed: `tests.harness.recorded.load`, shared by the recorded tests."""
    return {folder: recorded_store(folder) for folder in FOLDERS}


def _wire_kept_replies(loaded: recorded.Loaded) -> list[list[tuple]]:
    by_id = {c.call_id: c for c in loaded.calls}
    kept = sorted((p for p in loaded.analysis.paths if p.state == "kept"), key=lambda p: p.segment)
    return [[_fingerprint(by_id[c].response) for c in p.call_ids] for p in kept]


def test_recordings_are_present_and_small():
    assert {p.parent.name for p in FOLDERS} >= {"pi-0.73.1"}
    for folder in FOLDERS:
        for name in ("exchanges.jsonl", "server.jsonl", "scenario.json", "expected.json"):
            assert (folder / name).is_file(), folder / name
        assert sum(f.stat().st_size for f in folder.iterdir()) < 400_000, folder


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_expected_file_is_what_the_server_log_says(folder):
    """expected.json is exactly what tests/harness/expect.py writes from scenario + server log."""
    from tests.harness.expect import expected_for

    assert expected_for(folder) == _expected(folder).raw


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_every_call_gets_the_decision_the_server_made_happen(wire, folder):
    _maybe_xfail(folder)
    assert not recorded.wrong_decisions(wire[folder].rows, _expected(folder))


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_threads_group_calls_as_the_server_saw_them(wire, folder):
    _maybe_xfail(folder)
    got, want = recorded.thread_groups(wire[folder].rows, _expected(folder))
    assert sorted(map(sorted, got.values())) == sorted(map(sorted, want.values()))
    assert got.get("main", set()) == want.get("main", set())


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_episode_status_reasons_and_kept_path_per_segment(wire, folder):
    _maybe_xfail(folder)
    exp = _expected(folder)
    a = wire[folder].analysis
    assert wire[folder].n_episodes == 1
    assert [r.code for r in a.reasons] == exp.reasons
    assert a.status == exp.status
    assert a.n_segments == len(exp.kept_paths)
    assert all(p.state == "kept" for p in a.paths), [(p.path_id, p.reason) for p in a.paths]
    assert recorded.kept_path_names(wire[folder], exp) == exp.kept_paths


# -- the harness's own transcript of the same run -------------------------------------------------


def _fingerprint(message: dict | None) -> tuple:
    """What an assistant reply said: its text and tool calls (name + arguments), in order."""
    out = []
    for b in (message or {}).get("content") or []:
        if b.get("type") == "text" and b.get("text", "").strip():
            out.append(("text", b["text"].strip()))
        elif b.get("type") == "tool_use":
            out.append(("tool", b.get("name"), json.dumps(b.get("input"), sort_keys=True)))
    return tuple(out)


def _kept_replies(files: list[Path], tmp: Path) -> tuple[list[list[tuple]], object]:
    """Ingest `files` into a fresh store; the kept path per segment as reply fingerprints."""
    from clawviz.store.calls import load_calls

    for f in files:
        (tmp / f.name).write_bytes(f.read_bytes())
    engine = _engine()
    with Session(engine) as session:
        report = ingest_paths([tmp / f.name for f in files], session=session)
        session.commit()
        assert not report.rejected, report.rejected
        eps = sorted({c.episode_id for c in session.exec(select(CallRow))})
        assert len(eps) == 1, eps
        ensure_analysis(session)
        a = episode_analysis(session, eps[0])
        calls = {c.call_id: c for c in load_calls(session, eps[0])}
        kept = sorted((p for p in a.paths if p.state == "kept"), key=lambda p: p.segment)
        return [[_fingerprint(calls[c].response) for c in p.call_ids] for p in kept], a


TRANSCRIPTS = [
    f for f in FOLDERS if (f / "session.jsonl").exists() or (f / "rollout.jsonl").exists()
]


@pytest.mark.parametrize(
    "folder", TRANSCRIPTS, ids=[f"{p.parent.name}/{p.name}" for p in TRANSCRIPTS]
)
def test_transcript_agrees_with_the_wire(wire, folder, tmp_path):
    """The harness's own session file of the run replays to the same kept replies, segment by
    segment, as the proxy's log (a transcript cannot show retries, utility calls or the exact
    summary request, so only the kept path is compared)."""
    files = sorted(folder.glob("session.jsonl")) + sorted(folder.glob("rollout*.jsonl"))
    tx, a = _kept_replies(files, tmp_path)
    assert tx == _wire_kept_replies(wire[folder])
    assert a.n_segments == len(_expected(folder).kept_paths)


CODEX = [f for f in FOLDERS if (f / "rollout.jsonl").exists()]


def _calls(files: list[Path], tmp: Path) -> list:
    from clawviz.store.calls import load_calls

    tmp.mkdir()
    for f in files:
        (tmp / f.name).write_bytes(f.read_bytes())
    engine = _engine()
    with Session(engine) as session:
        ingest_paths([tmp / f.name for f in files], session=session)
        session.commit()
        eps = sorted({c.episode_id for c in session.exec(select(CallRow))})
        return [c for ep in eps for c in load_calls(session, ep)]


@pytest.mark.parametrize("folder", CODEX, ids=[f"{p.parent.name}/{p.name}" for p in CODEX])
def test_codex_rollout_rebuilds_the_requests_codex_sent(wire, folder, tmp_path):
    """Every call replayed from the rollout files (main and sub-agent threads) is a request the
    proxy logged, message for message, except the first message (the rollout keeps the full
    base instructions, Codex sends them trimmed) and the compaction prompt (only its first
    sentence is known); each rollout call's reply is that request's reply."""
    wired = wire[folder].calls
    tx = _calls(sorted(folder.glob("rollout*.jsonl")), tmp_path / "tx")
    assert len({c.episode_id for c in tx}) == 1
    assert {c.source_kind for c in tx} == {"transcript"}
    answered = [w for w in wired if w.failure is None]
    assert len(tx) == len(answered)

    def key(messages):
        rest = messages[1:]
        if rest and "CONTEXT CHECKPOINT COMPACTION" in json.dumps(rest[-1]):
            rest = rest[:-1] + [{"compaction prompt": True}]
        return json.dumps(rest, sort_keys=True)

    by_request = {key(w.messages): w for w in answered}
    for c in tx:
        w = by_request.get(key(c.messages))
        assert w is not None, c.call_id
        assert _fingerprint(c.response) == _fingerprint(w.response), c.call_id
        assert c.messages[0]["role"] == w.messages[0]["role"] == "system"
