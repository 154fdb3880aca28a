"""Hand-made pi v3 and Claude Code transcripts: branches, compaction, sub-agents, rejects."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clawviz.ingest.transcripts import (
    CLAUDE_CODE_FORMAT,
    MAIN_SYSTEM_MARKER,
    PI_FORMAT,
    SUBAGENT_SYSTEM_MARKER,
    TRANSCRIPT_LIMITS,
    detect_transcript,
    read_transcript,
)
from clawviz.ingest.transcripts.claude_code import COMPACT_PROMPT
from clawviz.ingest.transcripts.pi import (
    BRANCH_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_PREFIX,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
)
from clawviz.types import Call
from tests.dburl import fresh_url

DATA = Path(__file__).parent / "data" / "transcripts"
PI_V3 = DATA / "pi-v3-branches.jsonl"
PI_BAD = DATA / "pi-v3-malformed.jsonl"
CC_SID = "7f3c0000-0000-4000-8000-00000000cc01"
CC_MAIN = DATA / "claude-code" / f"{CC_SID}.jsonl"
CC_AGENT = DATA / "claude-code" / CC_SID / "subagents" / "agent-web1.jsonl"
CC_BAD = DATA / "claude-code-malformed.jsonl"


def _texts(message: dict) -> list[str]:
    return [b.get("text", "") for b in message["content"] if b["type"] == "text"]


def _key(c: Call) -> str:
    """'L<line>' of a call, ':summary' for summary calls, 'agent-<id>:' for sub-agent files."""
    key = f"L{c.line}"
    if c.extra.get("transcript_role", "").endswith("summary"):
        key += ":summary"
    if Path(c.source_file).name.startswith("agent-"):
        key = f"{Path(c.source_file).stem}:{key}"
    return key


def _by_line(calls: list[Call]) -> dict[str, Call]:
    """Calls keyed by `_key`."""
    return {_key(c): c for c in calls}


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --- detection ---------------------------------------------------------------------------


def test_detect_by_content_not_name():
    assert detect_transcript(_records(PI_V3)[:5]) == PI_FORMAT
    assert detect_transcript(_records(CC_MAIN)[:5]) == CLAUDE_CODE_FORMAT
    assert detect_transcript(_records(CC_AGENT)) == CLAUDE_CODE_FORMAT


def test_detect_rejects_other_inputs():
    exchange = {
        "request": {"timestamp": 1.0, "method": "POST", "url": "https://x/v1/messages", "body": {}},
        "response": {"timestamp": 2.0, "status_code": 200, "body": {}},
    }
    result = {"episode_id": "e1", "task_id": "t1", "harness": "openclaw", "reward": 0.5}
    assert detect_transcript([exchange]) is None
    assert detect_transcript([result]) is None
    assert detect_transcript([]) is None


def test_unknown_file_rejects_every_line(tmp_path):
    p = tmp_path / "other.jsonl"
    p.write_text('{"a": 1}\n{"b": 2}\n')
    read = read_transcript(p)
    assert read.format == "unknown" and read.calls == []
    assert [r[0] for r in read.rejects] == [1, 2]


def test_limits_text_names_what_is_missing():
    for phrase in ("failed calls and retries", "token ids", "system prompt"):
        assert phrase in TRANSCRIPT_LIMITS


# --- pi v3 --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pi_read():
    return read_transcript(PI_V3)


def test_pi_v3_one_call_per_assistant_plus_summaries(pi_read):
    calls = _by_line(pi_read.calls)
    assert pi_read.format == PI_FORMAT and pi_read.rejects == []
    assert set(calls) == {"L3", "L5", "L7", "L8:summary", "L12", "L15", "L16:summary", "L18"}
    assert [c.seq for c in pi_read.calls] == list(range(8))
    for c in pi_read.calls:
        assert c.source_kind == "transcript"
        assert c.harness == "pi" and c.episode_id == "pi-v3-demo"
        assert c.source_file == str(PI_V3)


def test_pi_blocks_become_internal_shape(pi_read):
    c = _by_line(pi_read.calls)["L5"]
    user, assistant, result = c.messages
    assert user == {"role": "user", "content": [{"type": "text", "text": "hello, list the files"}]}
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "use ls"},
        {"type": "text", "text": "Listing."},
        {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}},
    ]
    assert result["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_1",
            "content": "a.txt\nb.txt",
            "is_error": False,
        }
    ]
    assert c.response == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Two files: a.txt and b.txt."}],
    }
    assert c.stop_reason == "end_turn"
    assert _by_line(pi_read.calls)["L3"].stop_reason == "tool_use"


def test_pi_usage_times_and_line(pi_read):
    c = _by_line(pi_read.calls)["L5"]
    assert c.line == 5
    assert (c.usage.input_tokens, c.usage.output_tokens) == (104, 10)
    assert (c.usage.cache_read_input_tokens, c.usage.cache_creation_input_tokens) == (5, 1)
    assert c.t_request == pytest.approx(1767607204.0)
    assert c.t_response is not None and c.t_response >= c.t_request


def test_pi_parent_id_siblings_are_branches(pi_read):
    calls = _by_line(pi_read.calls)
    shared = calls["L5"].messages + [calls["L5"].response]
    for key, user_text in (("L7", "try approach B"), ("L15", "start over with approach D")):
        assert calls[key].messages[: len(shared)] == shared
        assert _texts(calls[key].messages[-1]) == [user_text]
    # The branch that navigated away (B) is not in the context of its siblings.
    assert all(
        "try approach B" not in _texts(m) for m in calls["L12"].messages if m["role"] == "user"
    )


def test_pi_branch_summary_is_context_and_a_summary_call(pi_read):
    calls = _by_line(pi_read.calls)
    c_branch = calls["L12"]
    summary_msg = c_branch.messages[-2]
    assert _texts(summary_msg)[0].startswith(BRANCH_SUMMARY_PREFIX)
    assert "explored approach B" in _texts(summary_msg)[0]
    s = calls["L8:summary"]
    assert s.system == SUMMARIZATION_SYSTEM_PROMPT
    assert s.extra["transcript_role"] == "branch_summary"
    # It summarises the abandoned branch: that branch's context and answer, then the prompt.
    assert _texts(s.messages[-3]) == ["try approach B"]
    assert _texts(s.messages[-2]) == ["Approach B answer."]
    assert _texts(s.response) == ["The user explored approach B and got an answer."]


def test_pi_model_and_thinking_changes_reach_later_calls(pi_read):
    calls = _by_line(pi_read.calls)
    c = calls["L12"]
    assert c.model == "gpt-5-mini"
    assert c.endpoint == "openai_chat"
    assert c.extra["model_change"]["model_id"] == "gpt-5-mini"
    assert c.extra["model_change"]["provider"] == "openai"
    assert c.extra["thinking_level"] == "high"
    # Changes on another branch do not leak into it.
    assert calls["L15"].extra["model_change"] is None
    assert calls["L15"].extra["thinking_level"] == "off"


def test_pi_compaction_summary_call_and_new_segment(pi_read):
    calls = _by_line(pi_read.calls)
    s = calls["L16:summary"]
    assert s.system == SUMMARIZATION_SYSTEM_PROMPT and s.tools == []
    assert _texts(s.messages[-1]) == [SUMMARIZATION_PROMPT]
    # The summarised messages stop before the first kept entry (e9).
    assert s.messages[:-1] == calls["L5"].messages + [calls["L5"].response]
    assert _texts(s.response) == ["## Goal\nApproach D."]
    assert s.extra["tokens_before"] == 1234 and s.extra["first_kept_entry_id"] == "e9"
    after = calls["L18"]
    first = _texts(after.messages[0])[0]
    assert first == COMPACTION_SUMMARY_PREFIX + "## Goal\nApproach D.\n</summary>"
    assert [_texts(m) for m in after.messages[1:]] == [
        ["start over with approach D"],
        ["Approach D, step one."],
        ["continue after compaction"],
    ]
    assert after.extra["transcript_segment"] == 1
    assert calls["L15"].extra["transcript_segment"] == 0


def test_pi_records_argument_gives_same_calls(pi_read):
    again = read_transcript(PI_V3, records=_records(PI_V3))
    assert [c.call_id for c in again.calls] == [c.call_id for c in pi_read.calls]
    assert [c.messages for c in again.calls] == [c.messages for c in pi_read.calls]


def test_pi_malformed_lines_rejected_rest_loads(pi_read):
    read = read_transcript(PI_BAD)
    reasons = {line: reason for line, reason, _ in read.rejects}
    assert sorted(reasons) == [4, 7, 10, 11, 12]
    assert reasons[4].startswith("invalid JSON")
    assert "unknown role 'wizard'" in reasons[7]
    assert "compaction without summary" in reasons[10]
    assert "not a JSON object" in reasons[11]
    assert "no string id" in reasons[12]
    raw = {line: text for line, _, text in read.rejects}
    assert raw[11] == "[1, 2, 3]"
    # Every valid entry still loads: the same calls as the clean file.
    assert len(read.calls) == len(pi_read.calls)
    assert [c.response for c in read.calls] == [c.response for c in pi_read.calls]


def test_pi_v1_linear_and_openclaw_harness(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = [
        {
            "type": "session",
            "id": "v1",
            "timestamp": "2026-01-01T00:00:00Z",
            "cwd": "/root/.openclaw/workspace",
        },
        {
            "type": "message",
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": "user", "content": "a"},
        },
        {
            "type": "message",
            "timestamp": "2026-01-01T00:00:02Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "b"}],
                "stopReason": "stop",
            },
        },
        {
            "type": "message",
            "timestamp": "2026-01-01T00:00:03Z",
            "message": {"role": "user", "content": "c"},
        },
        {
            "type": "message",
            "timestamp": "2026-01-01T00:00:04Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "t1", "name": "exec", "arguments": {}}],
                "stopReason": "aborted",
            },
        },
        {
            "type": "message",
            "timestamp": "2026-01-01T00:00:05Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "t2", "name": "exec", "arguments": {}}],
                "stopReason": "toolUse",
            },
        },
        {
            "type": "compaction",
            "timestamp": "2026-01-01T00:00:06Z",
            "summary": "S",
            "firstKeptEntryIndex": 3,
            "tokensBefore": 9,
        },
        {
            "type": "message",
            "timestamp": "2026-01-01T00:00:07Z",
            "message": {"role": "user", "content": "d"},
        },
        {
            "type": "message",
            "timestamp": "2026-01-01T00:00:08Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "e"}],
                "stopReason": "error",
                "errorMessage": "400 context too long",
            },
        },
    ]
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    read = read_transcript(p)
    assert read.harness == "openclaw"
    calls = _by_line(read.calls)
    assert set(calls) == {"L3", "L5", "L6", "L7:summary", "L9"}
    aborted, after = calls["L5"], calls["L6"]
    assert aborted.failure == "truncated_stream" and aborted.delivered is False
    # An aborted turn is never replayed to the model; its sibling re-sends the same context.
    assert after.messages == aborted.messages
    # The unanswered tool call gets pi's synthetic result before the next user turn.
    last = calls["L9"]
    assert [m["role"] for m in last.messages] == ["user", "user", "assistant", "user", "user"]
    assert last.messages[3]["content"][0]["content"] == "No result provided"
    assert _texts(last.messages[1]) == ["c"]  # firstKeptEntryIndex 3 = the third entry
    assert last.failure == "failed_http" and last.http_status == 400
    assert last.error == "400 context too long"


# --- Claude Code ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cc_read():
    return read_transcript(CC_MAIN)


def test_cc_calls_and_files(cc_read):
    calls = _by_line(cc_read.calls)
    assert cc_read.format == CLAUDE_CODE_FORMAT and cc_read.harness == "claude-code"
    assert cc_read.episode_id == CC_SID
    assert set(calls) == {
        "L3", "L6", "L8", "L10", "L12", "L14", "L17", "L18:summary", "L21", "L23", "L24",
        "agent-web1:L2",
    }  # fmt: skip
    assert cc_read.extra_files == [str(CC_AGENT)]
    assert cc_read.rejects == [] and cc_read.rejects_by_file == {}
    assert sorted(c.seq for c in cc_read.calls) == list(range(12))
    ts = [c.t_request for c in sorted(cc_read.calls, key=lambda c: c.seq)]
    assert ts == sorted(ts)
    assert all(c.source_kind == "transcript" and c.episode_id == CC_SID for c in cc_read.calls)


def test_cc_records_of_one_response_are_joined(cc_read):
    c = _by_line(cc_read.calls)["L3"]
    assert c.response["content"] == [
        {"type": "thinking", "thinking": "read it"},
        {
            "type": "tool_use",
            "id": "toolu_r1",
            "name": "Read",
            "input": {"file_path": "/work/app/c.toml"},
        },
    ]
    assert c.stop_reason == "tool_use" and c.usage.output_tokens == 25
    assert c.extra["uuids"] == ["a1a", "a1b"]
    nxt = _by_line(cc_read.calls)["L6"]
    assert nxt.messages[1] == c.response


def test_cc_rewind_siblings_share_prefix(cc_read):
    calls = _by_line(cc_read.calls)
    shared = calls["L6"].messages + [calls["L6"].response]
    assert calls["L8"].messages[:-1] == shared == calls["L10"].messages[:-1]
    assert _texts(calls["L8"].messages[-1]) == ["First attempt"]
    assert _texts(calls["L10"].messages[-1]) == ["Second attempt: use two agents"]


def test_cc_parallel_tool_results_join_one_user_message(cc_read):
    c = _by_line(cc_read.calls)["L17"]
    last = c.messages[-1]
    assert [b["tool_use_id"] for b in last["content"]] == ["toolu_task1", "toolu_agent2"]


def test_cc_system_markers(cc_read):
    calls = _by_line(cc_read.calls)
    assert calls["L3"].system == MAIN_SYSTEM_MARKER
    assert calls["L12"].system == SUBAGENT_SYSTEM_MARKER
    assert calls["agent-web1:L2"].system == SUBAGENT_SYSTEM_MARKER
    assert all(c.extra["system_synthetic"] for c in cc_read.calls)


def test_cc_inline_sidechain_linked_to_task(cc_read):
    calls = _by_line(cc_read.calls)
    for key in ("L12", "L14"):
        c = calls[key]
        assert c.extra["transcript_role"] == "subagent"
        assert c.extra["spawned_by_call"] == calls["L10"].call_id
        assert c.extra["parent_tool_use_id"] == "toolu_task1"
        assert c.extra["agent_id"] == "sc1"
        assert _texts(c.messages[0]) == ["Find the config files"]
    assert len(calls["L14"].messages) == 3


def test_cc_subagent_file_with_meta(cc_read):
    c = _by_line(cc_read.calls)["agent-web1:L2"]
    assert c.source_file == str(CC_AGENT) and c.line == 2
    assert c.extra["spawned_by_call"] == _by_line(cc_read.calls)["L10"].call_id
    assert c.extra["parent_tool_use_id"] == "toolu_agent2"
    assert c.extra["agent_type"] == "Explore"
    assert c.model == "claude-haiku-4-5-20251001"
    assert _texts(c.messages[0]) == ["Survey src/web"]


def test_cc_subagent_file_alone_is_covered_by_session():
    read = read_transcript(CC_AGENT)
    assert read.calls == [] and read.covered_by == str(CC_MAIN)


def test_cc_subagent_file_without_session_reads_alone(tmp_path):
    sub = tmp_path / "other" / "subagents"
    sub.mkdir(parents=True)
    shutil.copy(CC_AGENT, sub / "agent-web1.jsonl")
    shutil.copy(CC_AGENT.with_suffix(".meta.json"), sub / "agent-web1.meta.json")
    read = read_transcript(sub / "agent-web1.jsonl")
    assert len(read.calls) == 1
    c = read.calls[0]
    assert c.extra["transcript_role"] == "subagent" and c.extra["agent_type"] == "Explore"
    assert c.system == SUBAGENT_SYSTEM_MARKER


def test_cc_compaction_boundary(cc_read):
    calls = _by_line(cc_read.calls)
    s = calls["L18:summary"]
    assert s.extra["transcript_role"] == "compaction_summary"
    assert s.messages[:-1] == calls["L17"].messages + [calls["L17"].response]
    assert _texts(s.messages[-1]) == [COMPACT_PROMPT]
    summary = _texts(s.response)[0]
    assert summary == "Summary: the user asked for two agents to survey configs and web."
    assert s.extra["pre_tokens"] == 150000 and s.extra["trigger"] == "auto"
    after = calls["L21"]
    first = _texts(after.messages[0])
    assert first[0].startswith("This session is being continued from a previous conversation")
    assert summary in first[0]
    assert first[1] == "After compaction: summarise"
    assert len(after.messages) == 1
    assert after.extra["transcript_segment"] == 1 and calls["L17"].extra["transcript_segment"] == 0


def test_cc_api_error_is_a_failed_call_never_replayed(cc_read):
    calls = _by_line(cc_read.calls)
    err = calls["L23"]
    assert err.failure == "failed_http" and err.response is None
    assert "529" in err.error
    retry = calls["L24"]
    assert retry.messages == err.messages
    assert all("API Error" not in t for m in retry.messages for t in _texts(m))


def test_cc_malformed_lines_rejected_rest_loads():
    read = read_transcript(CC_BAD)
    reasons = {line: reason for line, reason, _ in read.rejects}
    assert sorted(reasons) == [2, 4, 5]
    assert reasons[2].startswith("invalid JSON")
    assert "without a message" in reasons[4]
    assert "without uuid" in reasons[5]
    assert {line: raw for line, _, raw in read.rejects}[2] == "{not json"
    assert sorted(c.line for c in read.calls) == [3, 8]
    joined = _by_line(read.calls)["L3"]
    assert [b["type"] for b in joined.response["content"]] == ["thinking", "tool_use"]


def test_cc_subagent_file_rejects_reported_by_file(tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(DATA / "claude-code", root)
    agent = root / CC_SID / "subagents" / "agent-web1.jsonl"
    agent.write_text(agent.read_text() + "oops\n")
    read = read_transcript(root / f"{CC_SID}.jsonl")
    assert read.rejects == []
    assert [(line, raw) for line, _, raw in read.rejects_by_file[str(agent)]] == [(3, "oops")]
    assert len(read.calls) == 12


# --- with the reconstruction ------------------------------------------------------------


def _analyse(read):
    from clawviz.jobs import analyse as analysis
    from clawviz.settings import DEFAULT_SETTINGS

    a = analysis.analyse_episode(read.calls, reward=1.0, settings=DEFAULT_SETTINGS)
    keys = {c.call_id: _key(c) for c in read.calls}
    return a, {keys[k]: d for k, d in a.decisions.items()}


def test_cc_reconstruction_roles_links_and_branches(cc_read):
    a, d = _analyse(cc_read)
    calls = _by_line(cc_read.calls)
    assert a.n_segments == 2
    assert {k for k, x in d.items() if x.role == "aux_subagent"} == {"L12", "L14", "agent-web1:L2"}
    assert d["L12"].linked_call == calls["L10"].call_id
    assert d["agent-web1:L2"].linked_call == calls["L10"].call_id
    assert d["L18:summary"].role == "aux_summary"
    assert d["L21"].linked_call == calls["L18:summary"].call_id
    assert d["L8"].parent_call == d["L10"].parent_call == calls["L6"].call_id
    assert d["L23"].state == "failed"


def test_pi_reconstruction_branches_and_summaries(pi_read):
    a, d = _analyse(pi_read)
    calls = _by_line(pi_read.calls)
    assert a.n_segments == 2
    assert {k for k, x in d.items() if x.role == "aux_summary"} == {"L8:summary", "L16:summary"}
    assert (
        d["L7"].parent_call == d["L12"].parent_call == d["L15"].parent_call == calls["L5"].call_id
    )
    assert d["L18"].linked_call == calls["L16:summary"].call_id


def test_cc_call_ids_are_response_ids(cc_read, tmp_path):
    calls = _by_line(cc_read.calls)
    assert calls["L3"].call_id == f"{CC_SID}:msg_1"
    assert calls["agent-web1:L2"].call_id == f"{CC_SID}:msg_w1"
    # A response copied onto a second chain (e.g. a forked file) is a separate call.
    records = _records(CC_MAIN)
    copy = [
        dict(r, uuid=f"{r['uuid']}-copy", parentUuid=None) for r in records if r.get("uuid") == "a2"
    ]
    p = tmp_path / f"{CC_SID}.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in records + copy) + "\n")
    ids = [c.call_id for c in read_transcript(p).calls]
    assert f"{CC_SID}:msg_2" in ids and f"{CC_SID}:msg_2#2" in ids
    assert len(ids) == len(set(ids))


def test_ingest_folder_of_transcripts():
    from clawviz.jobs import ingest
    from clawviz.store import calls as store
    from clawviz.store.db import session_scope

    with session_scope(fresh_url()) as session:
        # The sub-agent file is read with its session file, never twice.
        paths = [CC_MAIN, CC_AGENT, CC_BAD, PI_V3, PI_BAD]
        report = ingest.ingest_paths(paths, session=session)
        episodes = {e.episode_id: e for e in store.list_episodes(session)}
        assert episodes[CC_SID].n_calls == 12 and episodes["pi-v3-demo"].n_calls == 8
        assert {e.source_kind for e in episodes.values()} == {"transcript"}
        rejected = {(Path(r.file).name, r.line) for r in report.rejected}
        assert rejected == {
            ("claude-code-malformed.jsonl", 2),
            ("claude-code-malformed.jsonl", 4),
            ("claude-code-malformed.jsonl", 5),
            ("pi-v3-malformed.jsonl", 4),
            ("pi-v3-malformed.jsonl", 7),
            ("pi-v3-malformed.jsonl", 10),
            ("pi-v3-malformed.jsonl", 11),
            ("pi-v3-malformed.jsonl", 12),
        }
        loaded = store.load_calls(session, CC_SID)
        assert {c.call_id for c in loaded} == {c.call_id for c in read_transcript(CC_MAIN).calls}


def test_cc_sidechain_hanging_off_main_chain_starts_at_its_prompt(tmp_path):
    records = _records(CC_MAIN)
    for r in records:
        if r.get("uuid") == "s1":
            r["parentUuid"] = "a4"  # some versions link the sidechain root to the spawning turn
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    calls = _by_line(read_transcript(p).calls)
    assert [_texts(m) for m in calls["L12"].messages] == [["Find the config files"]]
