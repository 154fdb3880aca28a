"""Real OpenClaw 2026.9.6 Gateway recordings rebuild to what the scripted server made happen.

Each folder of `tests/data/recorded/openclaw-2026.9.6/` was recorded by
`tests/harness/record_openclaw.py` (a real `openclaw gateway run` driven by the `openclaw` CLI,
offline, through `clawviz record` in front of the scripted server): `exchanges.jsonl.gz` (the
proxy log), `server.jsonl` (what the server answered, step by step), `scenario.json`,
`sessions/` (OpenClaw's own transcripts of the run) and `expected.json`, written by hand from
the scenario and the server log: per log line the call's role, state, reason, segment,
parent / link / retry (by call name) and thread, and the episode's status, reasons and kept
path per segment. Nothing in it comes from clawviz's output.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.cli.explain import explain_rows
from clawviz.jobs.analyse import ensure_analysis, episode_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import init_db
from clawviz.store.models import CallRow
from tests.dburl import memory_engine
from tests.harness import recorded

DATA = recorded.RECORDED / "openclaw-2026.9.6"
RECORDINGS = [f.name for f in recorded.folders("openclaw-2026.9.6")]


def _expected(name: str) -> recorded.Expected:
    return recorded.read_expected(DATA / name)


@pytest.fixture(scope="module")
def loaded(recorded_store) -> dict[str, recorded.Loaded]:
    """Each recording's proxy log ingested with its expected reward and analysed
    (`tests.harness.recorded.load`, shared by the recorded tests)."""
    return {name: recorded_store(DATA / name) for name in RECORDINGS}


def _names(name: str, rows: list[dict]) -> dict[str, str]:
    by_line = _expected(name).name_of_line
    return {r["call_id"]: by_line[r["source"]["line"]] for r in rows}


def test_there_are_recordings():
    assert "gateway-session" in RECORDINGS


@pytest.mark.parametrize("name", RECORDINGS)
def test_every_call_gets_the_decision_the_server_made_happen(loaded, name):
    assert not recorded.wrong_decisions(loaded[name].rows, _expected(name))


@pytest.mark.parametrize("name", RECORDINGS)
def test_threads_group_calls_as_the_server_saw_them(loaded, name):
    got, want = recorded.thread_groups(loaded[name].rows, _expected(name))
    assert sorted(map(sorted, got.values())) == sorted(map(sorted, want.values()))


@pytest.mark.parametrize("name", RECORDINGS)
def test_episode_status_reasons_and_kept_path_per_segment(loaded, name):
    exp = _expected(name)
    a = loaded[name].analysis
    assert [r.code for r in a.reasons] == exp.reasons
    assert a.status == exp.status
    assert a.n_segments == len(exp.kept_paths)
    assert recorded.kept_path_names(loaded[name], exp) == exp.kept_paths
    # Retries, failures and side requests leave no branch behind.
    assert all(p.state == "kept" for p in a.paths), [(p.path_id, p.reason) for p in a.paths]


@pytest.mark.parametrize("name", RECORDINGS)
def test_the_proxy_log_is_the_server_log(name):
    """Every exchange the proxy wrote is a request the scripted server answered, in order."""
    folder = DATA / name
    with gzip.open(folder / "exchanges.jsonl.gz", "rt") as f:
        wire = [json.loads(line) for line in f]
    server = [json.loads(line) for line in (folder / "server.jsonl").read_text().splitlines()]
    assert len(wire) == len(server)
    for x, s in zip(wire, server, strict=True):
        assert x["request"]["url"].endswith(s["path"])
        assert x["response"]["status_code"] == s["status"]


@pytest.mark.parametrize("name", RECORDINGS)
def test_no_secret_or_machine_path_in_the_recording(name):
    folder = DATA / name
    with gzip.open(folder / "exchanges.jsonl.gz", "rt") as f:
        text = f.read()
    assert "Bearer scripted-key" not in text
    assert "/root" not in text and "/home/" not in text and "/work/" not in text


def test_a_store_at_revision_0005_gains_the_match_ignored_column(tmp_path):
    """Stores written before `decision.match_ignored` existed are migrated (revision 0006)."""
    from sqlalchemy import create_engine, inspect

    from clawviz.store import migrations
    from clawviz.store.db import migrate

    engine = create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    with engine.begin() as conn:
        migrations._run(conn, lambda script, rev: script._upgrade_revs("0005", rev))
    assert "match_ignored" not in {c["name"] for c in inspect(engine).get_columns("decision")}
    assert "0006" in migrate(engine)
    assert "match_ignored" in {c["name"] for c in inspect(engine).get_columns("decision")}


def test_each_call_records_what_matching_ignored_and_why(loaded):
    """The decision of each call names the parts of its request the tree did not match on."""
    rows = loaded["gateway-session"].rows
    label = _names("gateway-session", rows)
    by_name = {label[r["call_id"]]: r for r in rows}

    def codes(name: str) -> set[str]:
        return {i["code"] for i in by_name[name]["match_ignored"]}

    # Every chat request ends with OpenClaw's per-request context block.
    assert all(
        "openclaw_request_context" in codes(n)
        for n in ("m1", "m2", "m4-a1", "sub1", "cron1", "m8", "m9")
    )
    # OpenClaw's own retry prompt and the sub-agent completion prompt are not kept.
    assert "openclaw_unkept_prompt" in codes("m4-a2")
    assert "openclaw_unkept_prompt" in codes("ann1")
    # The settle prompt is kept re-rendered; the heartbeat prompt as its poll line.
    assert "openclaw_rerendered_prompt" in codes("m7")
    assert "openclaw_rerendered_prompt" in codes("hb")
    # The flush runs on a private copy: another session key, the hidden heartbeat's poll line.
    assert {"openclaw_runtime_line", "openclaw_hidden_heartbeat"} <= codes("flush")
    for r in rows:
        for i in r["match_ignored"]:
            assert i["why"] and isinstance(i["index"], int) and i["excerpt"]
    assert by_name["models"]["match_ignored"] == []


def _reply_signature(call) -> tuple:
    """What a kept call answered: its text and its tool calls (name, arguments)."""
    blocks = (call.response or {}).get("content") or []
    text = " ".join(
        " ".join(str(b.get("text", "")).split()) for b in blocks if b.get("type") == "text"
    )
    tools = tuple(
        (b.get("name"), json.dumps(b.get("input"), sort_keys=True))
        for b in blocks
        if b.get("type") == "tool_use"
    )
    return text, tools


def _kept_replies(session, episode: str) -> list[list[tuple]]:
    from clawviz.store.calls import load_calls

    a = episode_analysis(session, episode)
    by_id = {c.call_id: c for c in load_calls(session, episode)}
    kept = sorted((p for p in a.paths if p.state == "kept"), key=lambda p: p.segment)
    return [[_reply_signature(by_id[c]) for c in p.call_ids] for p in kept]


@pytest.mark.parametrize("gz", [False, True], ids=["jsonl", "jsonl.gz"])
@pytest.mark.parametrize("name", RECORDINGS)
def test_transcripts_of_the_run_load_and_agree_with_the_wire(tmp_path, gz, name):
    """OpenClaw's own session files of the recorded run (main, the sub-agents, a cron run)
    load, also gzip-compressed; the main session's kept path per segment answers exactly what
    the wire's kept path answered."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for f in sorted((DATA / name / "sessions").glob("*.jsonl")):
        if gz:
            (sessions / f"{f.name}.gz").write_bytes(gzip.compress(f.read_bytes()))
        else:
            shutil.copy(f, sessions / f.name)
    index = json.loads((DATA / name / "sessions" / "index.json").read_text())
    main_id = next(k for k, v in index.items() if v["session_key"] == "agent:main:main")
    subs = {k for k, v in index.items() if v["parent_session_key"] == "agent:main:main"}
    n_subs = sum(e["role"] == "aux_subagent" for e in _expected(name).calls)
    assert len(subs) == n_subs > 0
    shutil.copy(DATA / name / "exchanges.jsonl.gz", tmp_path / "exchanges.jsonl.gz")
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as session:
        report = ingest_paths([sessions, tmp_path / "exchanges.jsonl.gz"], session=session)
        session.commit()
        assert not report.rejected, report.rejected
        rows = list(session.exec(select(CallRow).where(CallRow.episode_id == main_id)))
        # Each sub-agent session file loads (with its parent): one call per assistant message.
        sub_calls = [r for r in rows if Path(r.source_file).name.split(".")[0] in subs]
        assert len(sub_calls) == n_subs
        ensure_analysis(session)
        wire = _kept_replies(session, f"openclaw-{name}")
        replayed = _kept_replies(session, main_id)
        explained = {r["call_id"]: r for r in explain_rows(session, main_id)}
    assert [len(p) for p in wire] == [len(p) for p in _expected(name).kept_paths]
    assert replayed == wire
    # The sub-agents hang off the parent's spawn call, as on the wire.
    spawners = {explained[r.call_id]["linked_call"] for r in sub_calls}
    assert len(spawners) == 1 and None not in spawners
    assert {explained[r.call_id]["role"] for r in sub_calls} == {"aux_subagent"}
