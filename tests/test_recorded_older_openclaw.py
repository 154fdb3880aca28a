"""Older OpenClaw releases (2026.8.x), recorded beside 2026.9.6, rebuild to what the scripted
server made happen.

Each folder of `tests/data/recorded/openclaw-2026.8.*/` was recorded by
`tests/harness/record_openclaw.py` exactly as the 2026.9.6 ones (a real `openclaw gateway run`
of that release from npm, driven by the `openclaw` CLI, offline, through `clawviz record` in
front of the scripted server). `expected.json` is written by hand from `scenario.json` and
`server.jsonl` (which step answered each request, which failed, which were summaries) and the
request bodies the harness sent, never from clawviz's output. The checks are the ones
`tests/test_recorded_openclaw.py` makes of 2026.9.6: every call's decision, the thread
groups, the episode's status, reasons and kept path per segment, the proxy log against the
server log, no secret, and OpenClaw's own transcripts of the run agreeing with the wire.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.cli.explain import explain_rows
from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import init_db
from clawviz.store.models import CallRow
from tests.dburl import memory_engine
from tests.harness import recorded
from tests.test_recorded_openclaw import _kept_replies

FOLDERS = recorded.folders("openclaw-2026.8.")

# Where clawviz is wrong on these recordings, the tests are strictly xfailed with the exact
# call and how (`tests/harness/known_wrong.py`, applied to every recorded test at collection).


def _id(folder: Path) -> str:
    return recorded.folder_id(folder)


def _params() -> list:
    return [pytest.param(f, id=_id(f)) for f in FOLDERS]


@pytest.fixture(scope="module")
def loaded(recorded_store):
    return recorded_store


def test_there_are_older_openclaw_recordings():
    assert [f.parent.name for f in FOLDERS] and all(
        f.parent.name.startswith("openclaw-2026.8.") for f in FOLDERS
    )


@pytest.mark.parametrize("folder", _params())
def test_every_call_gets_the_decision_the_server_made_happen(loaded, folder):
    assert not recorded.wrong_decisions(loaded(folder).rows, recorded.read_expected(folder))


@pytest.mark.parametrize("folder", _params())
def test_threads_group_calls_as_the_server_saw_them(loaded, folder):
    got, want = recorded.thread_groups(loaded(folder).rows, recorded.read_expected(folder))
    assert sorted(map(sorted, got.values())) == sorted(map(sorted, want.values()))


@pytest.mark.parametrize("folder", _params())
def test_episode_status_reasons_and_kept_path_per_segment(loaded, folder):
    exp = recorded.read_expected(folder)
    got = loaded(folder)
    a = got.analysis
    assert [r.code for r in a.reasons] == exp.reasons
    assert a.status == exp.status
    assert a.n_segments == len(exp.kept_paths)
    assert recorded.kept_path_names(got, exp) == exp.kept_paths
    assert all(p.state == "kept" for p in a.paths), [(p.path_id, p.reason) for p in a.paths]


@pytest.mark.parametrize("folder", _params())
def test_the_proxy_log_is_the_server_log(folder):
    wire = recorded.read_exchanges(folder)
    server = recorded.read_server(folder)
    assert len(wire) == len(server)
    for x, s in zip(wire, server, strict=True):
        assert x["request"]["url"].endswith(s["path"])
        assert x["response"]["status_code"] == s["status"]


@pytest.mark.parametrize("folder", _params())
def test_no_secret_or_machine_path_in_the_recording(folder):
    with gzip.open(folder / "exchanges.jsonl.gz", "rt") as f:
        text = f.read()
    assert "Bearer scripted-key" not in text
    assert "/root" not in text and "/home/" not in text and "/work/" not in text


@pytest.mark.parametrize("folder", _params())
def test_the_expected_file_names_every_logged_request_once(folder):
    """expected.json has one entry per server log line (its `i`), so no call goes unchecked."""
    exp = recorded.read_expected(folder)
    assert sorted(exp.by_line) == [s["i"] for s in recorded.read_server(folder)]
    assert len({c["name"] for c in exp.calls}) == len(exp.calls)


@pytest.mark.parametrize("folder", _params())
def test_transcripts_of_the_run_load_and_agree_with_the_wire(tmp_path, folder):
    """OpenClaw's own session files of the run (main and the sub-agents) load; the main
    session's kept path per segment answers what the wire's kept path answered, and the
    sub-agents hang off the spawning call."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for f in sorted((folder / "sessions").glob("*.jsonl")):
        shutil.copy(f, sessions / f.name)
    index = json.loads((folder / "sessions" / "index.json").read_text())
    main_id = next(k for k, v in index.items() if v["session_key"] == "agent:main:main")
    subs = {k for k, v in index.items() if v["parent_session_key"] == "agent:main:main"}
    exp = recorded.read_expected(folder)
    n_subs = sum(e["role"] == "aux_subagent" for e in exp.calls)
    assert len(subs) == n_subs
    shutil.copy(folder / "exchanges.jsonl.gz", tmp_path / "exchanges.jsonl.gz")
    scenario = json.loads((folder / "scenario.json").read_text())
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as session:
        report = ingest_paths([sessions, tmp_path / "exchanges.jsonl.gz"], session=session)
        session.commit()
        assert not report.rejected, report.rejected
        rows = list(session.exec(select(CallRow).where(CallRow.episode_id == main_id)))
        sub_calls = [r for r in rows if Path(r.source_file).name.split(".")[0] in subs]
        assert len(sub_calls) == n_subs
        ensure_analysis(session)
        wire = _kept_replies(session, f"openclaw-{scenario['name']}")
        replayed = _kept_replies(session, main_id)
        explained = {r["call_id"]: r for r in explain_rows(session, main_id)}
    assert [len(p) for p in wire] == [len(p) for p in exp.kept_paths]
    assert replayed == wire
    if n_subs:
        spawners = {explained[r.call_id]["linked_call"] for r in sub_calls}
        assert len(spawners) == 1 and None not in spawners
        assert {explained[r.call_id]["role"] for r in sub_calls} == {"aux_subagent"}
