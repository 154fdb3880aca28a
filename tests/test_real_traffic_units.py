"""Small hand-made cases for the real-traffic quirks that `test_real_traffic.py` found broken."""

from __future__ import annotations

from recon_helpers import (
    OC_MAIN,
    PI_SUMMARY,
    Ep,
    asst,
    tool_result,
    tool_use,
    user,
)

from clawviz.recon.pipeline import analyse_episode

CONTINUATION = (
    "The conversation history before this point was compacted into the following summary:\n\n"
    "<summary>\n## Goal\nWrite the report.\n</summary>"
)
OC_SUB = OC_MAIN + "\n# Subagent Context\nYou are a **subagent** spawned by the main agent."


def _compacted_openclaw() -> tuple[Ep, list]:
    e = Ep(harness="openclaw", system=OC_MAIN, tools=["read", "write", "exec"])
    m1 = e.call([user("write the report")], asst("", tool_use("read", {"path": "a"}, "c1")))
    s = e.call(
        [
            user(
                "<conversation>\n[User]: write the report\n</conversation>\n\nThe messages "
                "above are a conversation to summarize."
            )
        ],
        asst("## Goal\nWrite the report."),
        system=PI_SUMMARY,
        tools=[],
    )
    c = e.call([user(CONTINUATION), user("go on")], asst("", tool_use("write", {}, "c2")))
    c2 = e.turn(c, tool_result("c2", "ok"), response=asst("Done."))
    return e, [m1, s, c, c2]


def test_side_requests_after_a_compaction_stay_auxiliary():
    e, (m1, s, c, c2) = _compacted_openclaw()
    hb_old = e.turn(
        c2,
        user("Read HEARTBEAT.md if it exists (workspace context)."),
        response=asst("HEARTBEAT_OK"),
    )
    hb_new = e.turn(
        c2,
        user(
            "Follow the heartbeat monitor scratch context when provided. If nothing needs "
            "attention, reply NO_REPLY.\nCurrent time: Monday"
        ),
        response=asst("NO_REPLY"),
    )
    flush = e.turn(
        c2,
        user("Pre-compaction memory flush. Store durable memories now."),
        response=asst("", tool_use("write", {"path": "memory/x.md"}, "f1")),
        tools=["read", "write"],
    )
    flush2 = e.turn(
        flush, tool_result("f1", "ok"), response=asst("NO_REPLY"), tools=["read", "write"]
    )
    a = analyse_episode(e.calls, reward=1.0)
    d = a.decisions
    assert d[c.call_id].role == "main" and d[c.call_id].segment == 1
    assert d[c.call_id].linked_call == s.call_id
    assert [d[x.call_id].role for x in (hb_old, hb_new, flush, flush2)] == [
        "aux_heartbeat",
        "aux_heartbeat",
        "aux_memory_flush",
        "aux_memory_flush",
    ]
    assert d[c2.call_id].state == "kept"
    assert all(p.state == "kept" for p in a.paths)
    assert a.status == "kept", a.reasons


def test_main_turns_after_a_compaction_still_continue_main():
    """Skipping the continuation kind below a root must not make main turns auxiliary."""
    e, (m1, s, c, c2) = _compacted_openclaw()
    c3 = e.turn(c2, user("now also add a chart"), response=asst("Added."))
    d = analyse_episode(e.calls, reward=1.0).decisions
    assert [d[x.call_id].role for x in (c, c2, c3)] == ["main"] * 3
    assert {d[x.call_id].segment for x in (c, c2, c3)} == {1}
    assert d[c3.call_id].state == "kept"


def test_parallel_identical_subagents_are_not_retries():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=["sessions_spawn", "read"])
    task = "Translate the file to French."
    m1 = e.call(
        [user("translate both")],
        asst(
            "",
            tool_use("sessions_spawn", {"task": task}, "s1"),
            tool_use("sessions_spawn", {"task": task}, "s2"),
        ),
    )
    first = (
        f"[Subagent Context] You are running as a subagent (depth 1/1).\n\n[Subagent Task]: {task}"
    )
    a = e.call([user(first)], asst("A done"), system=OC_SUB)
    b = e.call([user(first)], asst("B done"), system=OC_SUB)
    d = analyse_episode(e.calls, reward=1.0).decisions
    assert d[a.call_id].linked_call == d[b.call_id].linked_call == m1.call_id
    assert d[b.call_id].retry_of is None
    assert d[a.call_id].thread != d[b.call_id].thread


def test_failed_subagent_request_resent_is_still_a_retry():
    """A sub-agent's SDK retry (no second spawn call to take) still names what it repeats."""
    e = Ep(harness="openclaw", system=OC_MAIN, tools=["sessions_spawn", "read"])
    task = "Translate the file to French."
    e.call([user("translate")], asst("", tool_use("sessions_spawn", {"task": task}, "s1")))
    first = (
        f"[Subagent Context] You are running as a subagent (depth 1/1).\n\n[Subagent Task]: {task}"
    )
    a = e.call([user(first)], status=529, system=OC_SUB)
    a2 = e.call([user(first)], asst("done"), system=OC_SUB)
    d = analyse_episode(e.calls, reward=1.0).decisions
    assert d[a.call_id].state == "failed"
    assert d[a2.call_id].retry_of == a.call_id
    assert d[a2.call_id].role == "aux_subagent"


def test_claude_code_path_extraction_with_instruction_as_system_prompt():
    e = Ep()
    m1 = e.call([user("fix it")], asst("", tool_use("Bash", {"command": "ls"}, "t1")))
    paths = e.call(
        [user("Command: ls\nOutput: a.py")],
        asst("<filepaths>\na.py\n</filepaths>"),
        system="Extract any file paths that this command reads or modifies. For commands "
        'like "git diff" and "cat", include the paths of files being shown.',
        tools=[],
    )
    prefix = e.call(
        [
            user(
                "<policy_spec>\n# Claude Code Code Bash command prefix detection\n"
                "</policy_spec>\n\nCommand: ls"
            )
        ],
        asst("ls"),
        system="Your task is to process Bash commands that an AI coding agent wants to run.",
        tools=[],
    )
    d = analyse_episode(e.calls, reward=1.0).decisions
    assert d[m1.call_id].role == "main"
    for c in (paths, prefix):
        assert d[c.call_id].role == "aux_utility"
        assert "claude_code marker" in d[c.call_id].role_reason


def test_failed_continuation_retried_by_openclaw():
    """The first request on a compacted history fails and OpenClaw retries it (continue prompt)."""
    e, (m1, s, c, c2) = _compacted_openclaw()
    e.calls[:] = [m1, s]
    failed = e.call([user(CONTINUATION), user("go on")], status=500)
    retry = e.call(
        [
            user(CONTINUATION),
            user("go on"),
            user(
                "Continue the current task from the existing transcript, preserving completed work."
            ),
        ],
        asst("Done."),
    )
    a = analyse_episode(e.calls, reward=1.0)
    d = a.decisions
    assert d[failed.call_id].state == "failed" and d[failed.call_id].segment == 1
    assert d[retry.call_id].retry_of == failed.call_id
    assert d[retry.call_id].linked_call == s.call_id and d[retry.call_id].segment == 1
    assert d[retry.call_id].state == "kept" and d[m1.call_id].state == "kept"
    assert a.n_segments == 2 and all(p.state == "kept" for p in a.paths)
