"""What OpenClaw 2026.8 re-sends, rule by rule (issue 29; recordings openclaw-2026.8.2/*).

Each episode is written by hand in the shape the 2026.8.2 request bodies have (read from the
wire logs of `compaction-after-failure` and `heartbeat-after-compaction`); what it must rebuild
to follows from the rule named in each test, never from running the code. Each test also
checks the same episode without the rule's evidence (strict matching, or the main system
prompt for the flush), so a rule that does nothing fails it.
"""

from __future__ import annotations

from clawviz.recon.edits import RULES
from clawviz.recon.matchview import match_view
from clawviz.recon.pipeline import analyse_episode
from clawviz.recon.tree import build_call_tree
from tests.recon_helpers import Ep, asst, tool_result, tool_use, user

D = "[Wed 2026-12-02 14:20 UTC] "
OC_SYSTEM = (
    "<!-- openclaw:attempt:STABLE -->\nYou are a personal assistant running inside OpenClaw.\n"
    "## Tooling\nread, exec"
)
# 2026.8 puts the flush prompt in the system prompt's internal-context block.
FLUSH_SYSTEM = (
    OC_SYSTEM + "\n## Conversation Context\nPre-compaction memory flush turn. The session is "
    "near auto-compaction; capture durable memories to disk.\n\n"
    "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nPre-compaction memory flush. Store durable memories "
    "only in memory/2026-12-02.md.\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
)
FLUSH = D + "Continue the OpenClaw runtime event."
OC_SUMMARY = "You are a context summarization assistant. Read the conversation."
SUMMARY = "## Decisions\n- Two helpers ran: the workspace has notes.txt."
CONT = (
    "The conversation history before this point was compacted into the following summary:\n"
    f"<summary>\n{SUMMARY}\n</summary>"
)
RETRY_8 = (
    D + "Continue from the current transcript after the latest tool result. Do not repeat the "
    "original user request, and do not restart completed work."
)
PLACEHOLDER = "[assistant turn failed before producing content]"
ANNOUNCE = (
    "[Inter-session message] sourceSession=agent:main:subagent:1 sourceTool=subagent_announce\n"
    "Child completion results: 1. SUBTASK-ALPHA: notes.txt"
)
HEARTBEAT_8 = (
    "[Queued user message from a previous active turn; preserved as context only. Continue "
    "with the active prompt below.]\n[OpenClaw heartbeat poll]\n\nSystem: [2026-12-02 14:21:07 "
    "UTC] HB-EVENT: check the inbox\n\nFollow the heartbeat monitor scratch context when "
    "provided. If nothing needs attention, reply NO_REPLY."
)


def _ep() -> Ep:
    return Ep(harness="openclaw", system=OC_SYSTEM, tools=["read", "exec", "sessions_spawn"])


def _summary(e: Ep, text: str = "TASK-ONE"):
    return e.call(
        [user(f"<conversation>\n[User]: {text}\n</conversation>\nconversation to summarize")],
        asst(f"<summary>\n{SUMMARY}\n</summary>"),
        system=OC_SUMMARY,
        tools=[],
    )


def _parents(e: Ep, **kw) -> dict[str, str | None]:
    return build_call_tree(e.calls, **kw).parent


def test_the_rules_are_entries_of_the_list():
    for code in ("openclaw_joined_placeholder", "openclaw_joined_flush_prompt"):
        assert RULES[code].kind == "view"
        assert RULES[code].recording.startswith("openclaw-2026.8.2/compaction-after-failure")
    assert RULES["openclaw_flush_private_copy"].kind == "history"


def test_a_retry_reply_re_sent_after_its_failed_turn_placeholder_continues_the_retry():
    """`openclaw_unkept_prompt` (2026.8's retry prompt) and `openclaw_joined_placeholder`: after
    a compaction the retry b1 carries `Continue from the current transcript ...` once; the
    next request re-sends b1's reply with the failed turn's placeholder line before it. b1 is
    its parent; as sent, no earlier request is a prefix of it."""
    e = _ep()
    _summary(e)
    u2 = user(D + "TASK-TWO: what did the helpers find?")
    reply = "The helpers found notes.txt, which says hello."
    b1 = e.call([user(CONT), u2, user(RETRY_8)], asst(reply))
    c1 = e.call(
        [user(CONT), u2, asst(f"{PLACEHOLDER}\n{reply}"), user(D + "TASK-THREE: anything left?")],
        asst("Nothing is left to do."),
    )
    assert _parents(e)[c1.call_id] == b1.call_id
    assert _parents(e, match_rules=False)[c1.call_id] is None
    # The retry prompt is left out of b1's own view, so c1 continues it as a prefix (no
    # alignment edit is needed).
    assert [i.code for i in match_view(b1.messages)[1]] == ["openclaw_unkept_prompt"]
    assert c1.call_id not in build_call_tree(e.calls).edits
    view, why = match_view(c1.messages)
    assert [i.code for i in why] == ["openclaw_joined_placeholder"]
    assert view[2]["content"] == [{"type": "text", "text": reply}]
    # The placeholder alone (nothing after it) is not this rule's: the message is kept.
    alone = asst(PLACEHOLDER)
    assert match_view([u2, alone])[0] == [u2, alone]
    a = analyse_episode(e.calls, reward=1.0)
    assert a.reasons == [] and a.status == "kept"
    kept = [p.call_ids for p in a.paths if p.state == "kept" and p.segment == 0]
    assert kept == [[b1.call_id, c1.call_id]]


def _announce_episode(e: Ep):
    """TASK-ONE: a yield, a flush, the announce answered; TASK-TWO re-sends the flush prompt
    and the announce joined in one message (as 2026.8.2's b-500 does)."""
    u1 = user(D + "TASK-ONE: start a helper and wait")
    a1 = asst("", tool_use("sessions_yield", {}, "a20"))
    m1 = e.call([u1], a1)
    head = [u1, a1, tool_result("a20", "Turn yielded.")]
    ann = e.call([*head, user(FLUSH), user(ANNOUNCE)], asst("A helper reported back."))
    joined = user(FLUSH + ANNOUNCE)  # the ingest joins the two text blocks without a break
    b = e.call([*head, joined, asst("A helper reported back."), user(D + "TASK-TWO: results?")])
    return m1, ann, b


def test_the_flush_prompt_joined_to_the_next_prompt_is_read_as_the_two():
    """`openclaw_joined_flush_prompt`: the request after the announce re-sends the flush's
    prompt and the announce as one user message; its parent is the announce's call, not the
    call before it (strict matching finds m1, whose reply is the last shared message)."""
    e = _ep()
    m1, ann, b = _announce_episode(e)
    assert _parents(e)[b.call_id] == ann.call_id
    assert _parents(e, match_rules=False)[b.call_id] == m1.call_id
    view, why = match_view(b.messages)
    assert "openclaw_joined_flush_prompt" in [i.code for i in why]
    assert len(view) == len(b.messages) + 1
    # A flush prompt with nothing after it is one message, kept as is.
    assert match_view([user(FLUSH)])[1] == ()


def test_a_memory_flush_with_its_prompt_in_the_system_prompt_is_a_side_turn():
    """Marker `memory_flush_system`: 2026.8's flush ends with `Continue the OpenClaw runtime
    event.`; the system prompt says it is the flush. It is `aux_memory_flush`, never the kept
    tip; the same call with the main system prompt is main and the kept tip."""
    for system, want_kept in ((FLUSH_SYSTEM, False), (OC_SYSTEM, True)):
        e = _ep()
        u1 = user(D + "TASK-FOUR: thank you")
        d1 = e.call([u1], asst("You are welcome."))
        flush = e.call([u1, asst("You are welcome."), user(FLUSH)], asst("NO_REPLY"), system=system)
        a = analyse_episode(e.calls, reward=1.0)
        assert a.decisions[flush.call_id].parent_call == d1.call_id
        kept = [p.call_ids for p in a.paths if p.state == "kept"]
        if want_kept:
            assert a.decisions[flush.call_id].role == "main"
            assert kept == [[d1.call_id, flush.call_id]]
        else:
            assert a.decisions[flush.call_id].role == "aux_memory_flush"
            assert kept == [[d1.call_id]]


def test_a_flush_on_a_private_copy_without_tool_turns_hangs_off_the_latest_call():
    """`openclaw_flush_private_copy`: 2026.8's first flush after a `sessions_yield` sends the
    task, then the yield's note and its prompt, without a1's and a2's tool calls and results.
    Its parent is a2 (the longest path that, without its tool-only messages, the copy starts
    with); the rule is only for a flush: the same history under the main prompt has none."""
    for system, want in ((FLUSH_SYSTEM, "a2"), (OC_SYSTEM, None)):
        e = _ep()
        u1 = user(D + "TASK-ONE: start two helpers and wait")
        r1 = asst("", tool_use("sessions_spawn", {"task": "SUBTASK-ALPHA"}, "a10"))
        a1 = e.call([u1], r1)
        r2 = asst("", tool_use("sessions_yield", {}, "a20"))
        a2 = e.call([u1, r1, tool_result("a10", "accepted")], r2)
        note = user("Turn yielded. [Context: The previous turn ended via sessions_yield.]")
        flush = e.call([u1, note, user(FLUSH)], asst("NO_REPLY"), system=system)
        tree = build_call_tree(e.calls)
        names = {a1.call_id: "a1", a2.call_id: "a2"}
        assert names.get(tree.parent[flush.call_id]) == want
        if want:
            (edit,) = tree.edits[flush.call_id]
            assert edit.code == "openclaw_flush_private_copy" and edit.explained
            assert analyse_episode(e.calls, reward=1.0).decisions[flush.call_id].role == (
                "aux_memory_flush"
            )


def test_a_heartbeat_first_on_the_compacted_history_starts_the_segment_of_its_child():
    """`openclaw_rerendered_prompt` (2026.8's heartbeat prompt, queued), the heartbeat marker
    and `maintenance_after_compaction`: the heartbeat is the first request after the
    compaction; the next task's history is the summary, the heartbeat's poll line and reply.
    The heartbeat is `aux_heartbeat` linked to the summary, the task its child, main, first of
    segment 1 and kept; nothing is flagged."""
    e = _ep()
    u1 = user(D + "TASK-ONE: read notes.txt")
    a1 = e.call([u1], asst("notes.txt says hello."))
    s1 = _summary(e)
    hb = e.call([user(CONT), user(HEARTBEAT_8)], asst("Heartbeat: nothing new in the inbox."))
    b1 = e.call(
        [user(CONT), user(D + "[OpenClaw heartbeat poll]"),
         asst("Heartbeat: nothing new in the inbox."), user(D + "TASK-TWO: what was found?")],
        asst("Nothing new."),
    )  # fmt: skip
    assert _parents(e)[b1.call_id] == hb.call_id
    assert _parents(e, match_rules=False)[b1.call_id] is None
    a = analyse_episode(e.calls, reward=1.0)
    d = a.decisions
    assert (d[hb.call_id].role, d[hb.call_id].linked_call) == ("aux_heartbeat", s1.call_id)
    assert (d[b1.call_id].role, d[b1.call_id].segment) == ("main", 1)
    assert a.reasons == [] and a.status == "kept"
    kept = {p.segment: p.call_ids for p in a.paths if p.state == "kept"}
    assert kept == {0: [a1.call_id], 1: [b1.call_id]}
