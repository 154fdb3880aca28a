"""Real Claude Code recordings rebuild to what the scripted server made happen.

Each folder under tests/data/recorded/claude-code-<version>/<scenario>/ was made by running the
real Claude Code from npm in `-p` mode, offline, through `clawviz record` in front of the
scripted server (tests/harness/record_claude_code.py). `expected.json` was written by
tests/harness/expect_claude_code.py from the scenario and the server's own log, never from
clawviz. These tests ingest the proxy log and compare every call's role, state, reason,
segment, parent, link, retry and thread, the episode's status and reasons and the kept path per
segment; then they load Claude Code's own transcript files of the same run (plain and gzipped)
and check that they agree with the wire where a transcript can show it.
"""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.jobs.ingest import ingest_paths
from clawviz.recon.canonical import block_text, match_key
from clawviz.recon.markers import ALL_IGNORE_PATTERNS
from clawviz.recon.tree import _dropped_tools, _Items, history_messages
from clawviz.store.calls import load_calls
from clawviz.store.db import init_db
from clawviz.store.models import CallRow
from tests.dburl import memory_engine
from tests.harness import recorded

RECORDED = recorded.RECORDED
FOLDERS = recorded.folders("claude-code-")
IDS = [recorded.folder_id(p) for p in FOLDERS]
SESSION = "c1a0de00-0000-4000-8000-00000000c0de"


def _engine():
    engine = memory_engine()
    init_db(engine)
    return engine


def _expected(folder: Path) -> recorded.Expected:
    return recorded.read_expected(folder)


@pytest.fixture(scope="module")
def wire(recorded_store) -> dict[Path, recorded.Loaded]:
    """Each recording's proxy log ingested (plus a reward of 1.0 so the reward rule stays out
    of the way) and analysed: `tests.harness.recorded.load`, shared by the recorded tests."""
    return {f: recorded_store(f) for f in FOLDERS}


def test_recordings_are_present_and_small():
    assert {p.parent.name for p in FOLDERS} >= {"claude-code-2.0.77", "claude-code-2.1.332"}
    for folder in FOLDERS:
        for name in ("exchanges.jsonl", "server.jsonl", "scenario.json", "expected.json"):
            assert (folder / name).is_file(), folder / name
        assert (folder / "transcripts").is_dir()
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        assert size < 3_000_000, (folder, size)


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_expected_file_is_what_the_server_log_says(folder):
    """expected.json is exactly what expect_claude_code.py writes from scenario + server log."""
    from tests.harness.expect_claude_code import expected_for

    assert expected_for(folder) == _expected(folder).raw


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_every_call_gets_the_decision_the_server_made_happen(wire, folder):
    assert not recorded.wrong_decisions(wire[folder].rows, _expected(folder))


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_threads_group_calls_as_the_server_saw_them(wire, folder):
    got, want = recorded.thread_groups(wire[folder].rows, _expected(folder))
    assert sorted(map(sorted, got.values())) == sorted(map(sorted, want.values()))
    assert got.get("main", set()) == want.get("main", set())


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_episode_status_reasons_and_kept_path_per_segment(wire, folder):
    exp = _expected(folder)
    a = wire[folder].analysis
    assert wire[folder].n_episodes == 1
    assert [r.code for r in a.reasons] == exp.reasons
    assert a.status == exp.status
    assert a.n_segments == len(exp.kept_paths)
    assert all(p.state == "kept" for p in a.paths), [(p.path_id, p.reason) for p in a.paths]
    assert recorded.kept_path_names(wire[folder], exp) == exp.kept_paths


# -- Claude Code's own transcript files of the same run ----------------------------------------


def _transcript_calls(folder: Path, tmp: Path, gz: bool) -> tuple[list, list]:
    """Ingest the run's project folder (session + sub-agent files), optionally all gzipped."""
    src = folder / "transcripts"
    dst = tmp / "transcripts"
    shutil.copytree(src, dst)
    if gz:
        for f in list(dst.rglob("*.jsonl")):
            f.with_name(f.name + ".gz").write_bytes(gzip.compress(f.read_bytes()))
            f.unlink()
    files = sorted(p for p in dst.rglob("*") if p.is_file())
    engine = _engine()
    with Session(engine) as session:
        report = ingest_paths(files, session=session)
        session.commit()
        calls = []
        for ep in {c.episode_id for c in session.exec(select(CallRow))}:
            calls.extend(load_calls(session, ep))
        return calls, list(report.rejected)


def _key(messages: list) -> tuple[str, ...]:
    return tuple(match_key(m, ignore_patterns=ALL_IGNORE_PATTERNS) for m in messages)


@pytest.mark.parametrize("gz", [False, True], ids=["jsonl", "jsonl.gz"])
@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_transcripts_load_plain_and_gzipped(folder, gz, tmp_path):
    calls, rejected = _transcript_calls(folder, tmp_path, gz)
    assert rejected == []
    main = [c for c in calls if SESSION in c.source_file and "agent-" not in c.source_file]
    assert main, "the session file replays into calls"
    # Every reply the scripted server gave the main thread is a reply of the transcript.
    exp = _expected(folder)
    server_main = [c["name"] for c in exp.calls if c["role"] == "main" and c["state"] == "kept"]
    assert len(main) >= len(server_main) - 1  # the transcript may end a reply short of the wire


def _summary_of(text: str) -> str:
    """The `<summary>` body of a summary reply, whitespace-normalised (the part Claude Code
    keeps when it re-renders the reply into the continuation message)."""
    m = re.search(r"<summary>(.*?)</summary>", text, re.DOTALL)
    return " ".join((m.group(1) if m else text).split())


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_transcript_agrees_with_the_wire(wire, folder, tmp_path):
    """Each main call replayed from the session file is a call the proxy recorded: same reply
    and, in canonical form, the same request messages; each compaction in the transcript holds
    the summary the server sent (re-rendered by Claude Code before it is re-sent)."""
    calls, _ = _transcript_calls(folder, tmp_path, False)
    wire = wire[folder].calls
    replies = {_key([c.response]) for c in wire if c.response}
    by_reply: dict[tuple[str, ...], list] = {}
    for c in wire:
        if c.response:
            by_reply.setdefault(_key([c.response]), []).append(c)
    session = [c for c in calls if SESSION in c.source_file and c.response]
    main = [c for c in session if not c.call_id.endswith(":summary")]
    summaries = [c for c in session if c.call_id.endswith(":summary")]
    assert main
    assert [c.call_id for c in main if _key([c.response]) not in replies] == []
    differ = [
        c.call_id
        for c in main
        if not any(_same_request(c, w) for w in by_reply.get(_key([c.response]), []))
    ]
    assert differ == []
    sent = [
        _summary_of(block_text(c.response["content"]))
        for c, e in zip(wire, _server_actions(folder, wire), strict=True)
        if e == "summary"
    ]
    assert len(sent) == len(summaries)
    for call, summary in zip(summaries, sent, strict=True):
        assert summary in " ".join(block_text(call.response["content"]).split())


def _same_request(transcript_call, wire_call) -> bool:
    """The transcript's request is the wire's, as far as a transcript can hold it.

    Left out on the wire side: `role: "system"` messages (2.1 sends its environment, date and
    tool listings as such messages, which its transcript does not hold) and the leading
    context-only user messages matching leaves out too. Allowed: a wire message that is the
    transcript's with some tool calls or results missing (2.0's lossy `--resume`, recon rule
    `resume_dropped_tool_calls`; the transcript holds what happened). A `<task-notification>`
    the transcript holds is sent inside a `<system-reminder>` (2.1), so it is ignored as such.
    """
    ours = [_unwrap_notification(m) for m in history_messages(transcript_call.messages)]
    theirs = [m for m in history_messages(wire_call.messages) if m.get("role") != "system"]
    if len(ours) != len(theirs):
        return False
    items = _Items()
    for a, b in zip(ours, theirs, strict=True):
        if items(a) != items(b) and _dropped_tools(items(a), items(b)) is None:
            return False
    return True


_NOTIFICATION = re.compile(r"<task-notification>.*?</task-notification>", re.DOTALL)


def _unwrap_notification(message: dict) -> dict:
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return message
    blocks = [
        dict(b, text=_NOTIFICATION.sub("", b["text"])) if b.get("type") == "text" else b
        for b in content
    ]
    return dict(message, content=blocks)


def _server_actions(folder: Path, wire: list) -> list[str]:
    """The scripted server's action for each wire call (paired as expect.py pairs them)."""
    server = recorded.read_server(folder)
    lines = recorded.line_of_entries(recorded.read_exchanges(folder), server)
    action_of_line = {lines[e["i"]]: e["action"] for e in server}
    return [action_of_line[c.line] for c in wire]


def test_truncated_gzip_transcript_loads_what_it_holds(tmp_path):
    """A .jsonl.gz cut short loads the lines before the cut and rejects the rest clearly."""
    from clawviz.ingest.transcripts import read_transcript

    src = RECORDED / "claude-code-2.0.77" / "session" / "transcripts" / "-tmp-rig-claude-code-work"
    src = src / f"{SESSION}.jsonl"
    whole = gzip.compress(src.read_bytes())
    cut = tmp_path / f"{SESSION}.jsonl.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    full = read_transcript(src)
    part = read_transcript(cut)
    assert 0 < len(part.calls) < len(full.calls)
    assert any("gzip stream ends early" in reason for _, reason, _ in part.rejects)
    assert part.episode_id == full.episode_id == SESSION
