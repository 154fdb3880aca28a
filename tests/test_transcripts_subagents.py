"""Sub-agent transcript files linked to their parent session: OpenClaw sessions, old Claude Code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.ingest.transcripts import (
    PI_FORMAT,
    SUBAGENT_SYSTEM_MARKER,
    detect_transcript,
    read_transcript,
)
from clawviz.ingest.transcripts.claude_code import (
    COMPACT_PROMPT,
    COMPACT_PROMPT_CLOSING,
    COMPACT_PROMPT_OPENING,
)
from clawviz.ingest.transcripts.links import folder_links
from clawviz.jobs.ingest import ingest_paths
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine
from clawviz.store.models import CallRow, Episode
from tests.dburl import fresh_url

DATA = Path(__file__).parent / "data" / "transcripts"
OC = DATA / "openclaw-subagents"
P, C1, C2, U, ORPHAN = (
    f"0c1a0000-0000-4000-8000-0000000000{s}" for s in ("a0", "c1", "c2", "f0", "e0")
)
FLAT = DATA / "claude-code-flat"
FLAT_SID = "5a1e0000-0000-4000-8000-0000000f1a01"
LONE_SID = "5a1e0000-0000-4000-8000-0000000f1a99"
SUB = (
    "[Subagent Context] You are running as a subagent (depth 1/1). Results auto-announce to "
    "your requester; do not busy-poll for status.\n\n[Subagent Task]: "
)


def _ids(read) -> list[str]:
    return [c.call_id for c in read.calls]


def _analyse(calls):
    from clawviz.jobs import analyse as analysis
    return analysis.analyse_episode(calls, reward=1.0, settings=DEFAULT_SETTINGS).decisions


@pytest.fixture
def session(tmp_path):
    engine = get_engine(fresh_url(tmp_path, "subagents"))
    with Session(engine) as s:
        yield s


# --- OpenClaw: sub-agent sessions are separate files in the same folder -------------------


@pytest.fixture(scope="module")
def oc_read():
    return read_transcript(OC / f"{P}.jsonl")


def test_oc_children_join_the_parent_episode_in_time_order(oc_read):
    assert _ids(oc_read) == [
        f"{P}:L3",
        f"{P}:L5",
        f"{P}:L7",
        f"{C1}:L3",
        f"{C1}:L5",
        f"{C2}:L4",
        f"{P}:L9",
    ]
    assert [c.seq for c in oc_read.calls] == list(range(7))
    assert {c.episode_id for c in oc_read.calls} == {P} == {oc_read.episode_id}
    assert {c.harness for c in oc_read.calls} == {"openclaw"}
    assert oc_read.extra_files == [str(OC / f"{C1}.jsonl"), str(OC / f"{C2}.jsonl")]


def test_oc_link_by_session_key_and_by_task_text(oc_read):
    calls = {c.call_id: c for c in oc_read.calls}
    c1, c2 = calls[f"{C1}:L3"].extra, calls[f"{C2}:L4"].extra
    assert c1["transcript_role"] == c2["transcript_role"] == "subagent"
    # sessions.json maps the spawn result's childSessionKey to C1's session id.
    assert c1["link_matched_by"] == "session_key"
    assert c1["spawned_by_call"] == f"{P}:L3" and c1["parent_tool_call_id"] == "call_s1"
    assert c1["child_session_key"].endswith("000000000001") and c1["run_id"] == "run-1"
    # C2's key is not in sessions.json: the Tool Search spawn's task text finds it.
    assert c2["link_matched_by"] == "task_text"
    assert c2["spawned_by_call"] == f"{P}:L5" and c2["parent_tool_call_id"] == "call_s2"
    assert calls[f"{P}:L3"].extra["spawned_sessions"] == [C1]
    assert calls[f"{P}:L5"].extra["spawned_sessions"] == [C2]
    assert "spawned_sessions" not in calls[f"{P}:L7"].extra
    first = calls[f"{C1}:L3"].messages[0]["content"][0]["text"]
    assert first.endswith(SUB + "Count the lines in notes.txt")


def test_oc_child_rejects_name_the_child_file_and_the_rest_loads(oc_read):
    assert oc_read.rejects == []
    rows = oc_read.rejects_by_file[str(OC / f"{C2}.jsonl")]
    assert [(line, reason.split(":")[0]) for line, reason, _ in rows] == [
        (3, "invalid JSON"),
        (5, "message with unknown role 'robot'"),
    ]
    assert rows[0][2] == '{"type": "message", "id": "e9"'
    assert f"{C2}:L4" in _ids(oc_read)


def test_oc_child_file_alone_is_covered_by_its_parent():
    read = read_transcript(OC / f"{C1}.jsonl")
    assert read.calls == [] and read.rejects == []
    assert read.covered_by == str(OC / f"{P}.jsonl")


def test_oc_unlinked_sessions_read_alone():
    orphan = read_transcript(OC / f"{ORPHAN}.jsonl")
    assert _ids(orphan) == [f"{ORPHAN}:L3"] and orphan.covered_by is None
    assert orphan.calls[0].extra["transcript_role"] == "main"
    plain = read_transcript(OC / f"{U}.jsonl")
    assert _ids(plain) == [f"{U}:L3"] and plain.extra_files == []


def test_oc_reconstruction_links_children_to_their_spawn_calls(oc_read):
    d = _analyse(oc_read.calls)
    assert {k for k, x in d.items() if x.role == "aux_subagent"} == {
        f"{C1}:L3",
        f"{C1}:L5",
        f"{C2}:L4",
    }
    assert d[f"{C1}:L3"].linked_call == f"{P}:L3"
    assert d[f"{C2}:L4"].linked_call == f"{P}:L5"
    assert d[f"{C1}:L5"].parent_call == f"{C1}:L3"
    assert {k for k, x in d.items() if x.role == "main"} == {
        f"{P}:L3",
        f"{P}:L5",
        f"{P}:L7",
        f"{P}:L9",
    }


def test_oc_detection_unchanged():
    for name in (P, C1, C2):
        records = [json.loads(x) for x in (OC / f"{name}.jsonl").read_text().splitlines()[:2]]
        assert detect_transcript(records) == PI_FORMAT


def test_oc_bad_sessions_json_falls_back_to_task_text(tmp_path):
    folder = tmp_path / "sessions"
    shutil.copytree(OC, folder)
    (folder / "sessions.json").write_text("{not json")
    links = folder_links(folder)
    assert {k: v.matched_by for k, v in links.items()} == {
        f"{C1}.jsonl": "task_text",
        f"{C2}.jsonl": "task_text",
    }


def _session(folder: Path, sid: str, start: int, rows: list[dict]) -> None:
    """Write a v3 session: header at minute `start`, then message entries in a chain."""
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": _ts(start)}]
    for i, message in enumerate(rows, start=1):
        lines.append(
            {
                "type": "message",
                "id": f"e{i}",
                "parentId": f"e{i - 1}" if i > 1 else None,
                "timestamp": _ts(start, i),
                "message": message,
            }
        )
    (folder / f"{sid}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def _ts(minute: int, second: int = 0) -> str:
    return f"2026-03-05T02:{minute:02d}:{second:02d}.000Z"


def _spawn(task: str, call_id: str = "call_s") -> list[dict]:
    return [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "toolCall",
                    "id": call_id,
                    "name": "sessions_spawn",
                    "arguments": {"task": task},
                }
            ],
            "stopReason": "toolUse",
        },
    ]


def _child(task: str, extra: list[dict] | None = None) -> list[dict]:
    return [
        {"role": "user", "content": SUB + task},
        *(extra or []),
        {"role": "assistant", "content": [{"type": "text", "text": "done"}], "stopReason": "stop"},
    ]


def test_oc_same_task_in_two_parents_goes_by_time(tmp_path):
    # Two runs of one task in one agent folder: each child belongs to the spawn just before it.
    _session(tmp_path, "run-a", 10, _spawn("Count files"))
    _session(tmp_path, "run-b", 20, _spawn("Count files"))
    _session(tmp_path, "kid-1-late", 21, _child("Count files"))
    _session(tmp_path, "kid-2-early", 11, _child("Count files"))
    a, b = read_transcript(tmp_path / "run-a.jsonl"), read_transcript(tmp_path / "run-b.jsonl")
    assert _ids(a) == ["run-a:L3", "kid-2-early:L3"]
    assert _ids(b) == ["run-b:L3", "kid-1-late:L3"]
    assert read_transcript(tmp_path / "kid-1-late.jsonl").covered_by == str(
        tmp_path / "run-b.jsonl"
    )


def test_oc_grandchild_joins_the_root_episode(tmp_path):
    grandchild_spawn = {
        "role": "assistant",
        "content": [
            {
                "type": "toolCall",
                "id": "call_g",
                "name": "sessions_spawn",
                "arguments": {"task": "Check spelling"},
            }
        ],
        "stopReason": "toolUse",
    }
    _session(tmp_path, "root", 10, _spawn("Review the essay"))
    _session(tmp_path, "mid", 11, _child("Review the essay", [grandchild_spawn]))
    _session(tmp_path, "leaf", 12, _child("Check spelling"))
    read = read_transcript(tmp_path / "root.jsonl")
    assert _ids(read) == ["root:L3", "mid:L3", "mid:L4", "leaf:L3"]
    calls = {c.call_id: c for c in read.calls}
    assert calls["leaf:L3"].extra["spawned_by_call"] == "mid:L3"
    assert calls["mid:L3"].extra["spawned_by_call"] == "root:L3"
    assert {c.episode_id for c in read.calls} == {"root"}
    for name in ("mid", "leaf"):
        assert read_transcript(tmp_path / f"{name}.jsonl").calls == []


def test_oc_ingest_folder_one_episode_per_parent(session):
    report = ingest_paths([OC], session=session)
    episodes = {e.episode_id: e.n_calls for e in session.exec(select(Episode)).all()}
    assert episodes == {P: 7, U: 1, ORPHAN: 1}
    by_file = {Path(f.path).name: f for f in report.files}
    assert by_file[f"{C1}.jsonl"].n_calls == 0
    assert by_file[f"{C1}.jsonl"].covered_by == str(OC / f"{P}.jsonl")
    assert by_file[f"{P}.jsonl"].n_calls == 7
    bad = sorted((Path(r.file).name, r.line) for r in report.rejected)
    assert bad == [(f"{C2}.jsonl", 3), (f"{C2}.jsonl", 5)]
    assert report.warnings == []
    rows = session.exec(select(CallRow).where(CallRow.episode_id == P)).all()
    assert {Path(r.source_file).name for r in rows} == {f"{x}.jsonl" for x in (P, C1, C2)}


def test_oc_ingest_child_alone_warns_that_its_parent_holds_its_calls(session):
    report = ingest_paths([OC / f"{C1}.jsonl"], session=session)
    assert report.n_calls == 0
    (w,) = report.warnings
    assert w.file.endswith(f"{C1}.jsonl") and f"{P}.jsonl" in w.reason


# --- Claude Code, older layout: agent-<id>.jsonl next to the session file --------------------


@pytest.fixture(scope="module")
def flat_read():
    return read_transcript(FLAT / f"{FLAT_SID}.jsonl")


def test_cc_flat_agent_file_joins_its_session(flat_read):
    assert _ids(flat_read) == [
        f"{FLAT_SID}:msg_w",
        f"{FLAT_SID}:msg_f1",
        f"{FLAT_SID}:msg_fa1",
        f"{FLAT_SID}:msg_f2",
    ]
    agent = flat_read.calls[2]
    assert Path(agent.source_file).name == "agent-flat1.jsonl"
    assert agent.system == SUBAGENT_SYSTEM_MARKER
    assert agent.extra["spawned_by_call"] == f"{FLAT_SID}:msg_f1"
    assert agent.extra["parent_tool_use_id"] == "toolu_task1"
    assert agent.extra["agent_id"] == "flat1"
    assert agent.episode_id == FLAT_SID
    # The other session's agent file sits in the same folder but is not this session's.
    assert flat_read.extra_files == [
        str(FLAT / "agent-flat1.jsonl"),
        str(FLAT / "agent-warm.jsonl"),
    ]


def test_cc_flat_agent_rejects_name_the_agent_file(flat_read):
    assert flat_read.rejects == []
    rows = flat_read.rejects_by_file[str(FLAT / "agent-flat1.jsonl")]
    assert [line for line, _, _ in rows] == [3, 4]
    assert rows[0][1].startswith("invalid JSON")
    assert "without a message object" in rows[1][1]


def test_cc_flat_agent_file_alone(flat_read):
    covered = read_transcript(FLAT / "agent-flat1.jsonl")
    assert covered.calls == [] and covered.covered_by == str(FLAT / f"{FLAT_SID}.jsonl")
    lone = read_transcript(FLAT / "agent-lone1.jsonl")
    assert lone.covered_by is None
    assert [c.extra["transcript_role"] for c in lone.calls] == ["subagent"]
    assert {c.episode_id for c in lone.calls} == {LONE_SID}


def test_cc_flat_reconstruction_links_the_agent(flat_read):
    d = _analyse(flat_read.calls)
    assert d[f"{FLAT_SID}:msg_fa1"].role == "aux_subagent"
    assert d[f"{FLAT_SID}:msg_fa1"].linked_call == f"{FLAT_SID}:msg_f1"
    assert d[f"{FLAT_SID}:msg_f2"].role == d[f"{FLAT_SID}:msg_f1"].role == "main"
    # Old Claude Code wrote its warm-up call to an agent file too: a utility call.
    assert d[f"{FLAT_SID}:msg_w"].role == "aux_utility"


def test_cc_flat_ingest_folder(session):
    report = ingest_paths([FLAT], session=session)
    episodes = {e.episode_id: e.n_calls for e in session.exec(select(Episode)).all()}
    assert episodes == {FLAT_SID: 4, LONE_SID: 1}
    assert sorted((Path(r.file).name, r.line) for r in report.rejected) == [
        ("agent-flat1.jsonl", 3),
        ("agent-flat1.jsonl", 4),
    ]
    assert report.warnings == []


# --- Claude Code compaction prompt -----------------------------------------------------------


def test_cc_compaction_prompt_has_the_documented_opening_and_closing():
    assert COMPACT_PROMPT.startswith(COMPACT_PROMPT_OPENING)
    assert COMPACT_PROMPT.endswith(COMPACT_PROMPT_CLOSING)
    assert COMPACT_PROMPT_CLOSING.startswith("IMPORTANT: Do NOT use any tools.")


def test_oc_links_ignore_exchange_logs_in_the_folder(tmp_path):
    _session(tmp_path, "root", 10, _spawn("Count files"))
    _session(tmp_path, "kid", 11, _child("Count files"))
    # A proxy log beside the sessions mentions the spawn tool and the task: never a session.
    exchange = {
        "request": {"body": {"messages": [{"role": "user", "content": SUB + "Count files"}]}},
        "response": {"status_code": 200, "body": {"tool": "sessions_spawn"}},
    }
    (tmp_path / "proxy.jsonl").write_text(json.dumps(exchange) + "\n")
    assert detect_transcript([exchange]) is None
    assert {k: v.spawn.parent for k, v in folder_links(tmp_path).items()} == {
        "kid.jsonl": "root.jsonl"
    }


def test_oc_child_in_another_agents_folder(tmp_path, session):
    # sessions_spawn with agentId "coder": the child lives in agents/coder/sessions/.
    main = tmp_path / "agents" / "main" / "sessions"
    coder = tmp_path / "agents" / "coder" / "sessions"
    main.mkdir(parents=True)
    coder.mkdir(parents=True)
    _session(main, "root", 10, _spawn("Fix the build"))
    _session(coder, "kid", 11, _child("Fix the build"))
    _session(main, "other", 30, _child("Unrelated task"))
    read = read_transcript(main / "root.jsonl")
    assert _ids(read) == ["root:L3", "kid:L3"] and read.extra_files == [str(coder / "kid.jsonl")]
    assert read_transcript(coder / "kid.jsonl").covered_by == str(main / "root.jsonl")
    report = ingest_paths([tmp_path / "agents"], session=session)
    episodes = {e.episode_id: e.n_calls for e in session.exec(select(Episode)).all()}
    assert episodes == {"root": 2, "other": 1}
    assert report.warnings == [] and report.rejected == []


def test_oc_links_follow_a_child_added_later(tmp_path):
    _session(tmp_path, "root", 10, _spawn("Count files"))
    assert _ids(read_transcript(tmp_path / "root.jsonl")) == ["root:L3"]
    _session(tmp_path, "kid", 11, _child("Count files"))
    assert _ids(read_transcript(tmp_path / "root.jsonl")) == ["root:L3", "kid:L3"]


def test_oc_child_started_well_before_the_spawn_is_not_its_child(tmp_path):
    _session(tmp_path, "root", 10, _spawn("Count files"))
    _session(tmp_path, "old-kid", 5, _child("Count files"))
    assert _ids(read_transcript(tmp_path / "root.jsonl")) == ["root:L3"]
    assert _ids(read_transcript(tmp_path / "old-kid.jsonl")) == ["old-kid:L3"]


def test_cc_flat_agent_added_later_is_picked_up(tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    shutil.copy(FLAT / f"{FLAT_SID}.jsonl", folder)
    assert len(read_transcript(folder / f"{FLAT_SID}.jsonl").calls) == 2
    shutil.copy(FLAT / "agent-flat1.jsonl", folder)
    assert len(read_transcript(folder / f"{FLAT_SID}.jsonl").calls) == 3
