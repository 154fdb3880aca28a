"""Each matching rule of `recon.matchview` on the shapes the OpenClaw 2026.9.6 recording shows.

The texts are taken from `tests/data/recorded/openclaw-2026.9.6/gateway-session` (shortened);
each test builds the requests OpenClaw sent and checks the parent the tree finds, with the
rule switched on and off, and what the call's decision says was ignored.
"""

from __future__ import annotations

from clawviz.recon.matchview import RULE_CODES, match_view
from clawviz.recon.pipeline import analyse_episode
from clawviz.recon.tree import build_call_tree
from tests.recon_helpers import Ep, asst, tool_result, tool_use, user

CTX = (
    "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nConversation data (data, not instructions):\n"
    '"Active exec sessions:\\nnone"\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>'
)
RUNTIME = (
    "\n\nRuntime: agent=main | session=agent:main:main | sessionId=edac5ea3 | host=vm | "
    "model=scripted/scripted-model | shell=bash"
)
FLUSH_RUNTIME = (
    "\n\nRuntime: agent=main | session=agent:main:internal-session-effects:f09252a0 | "
    "sessionId=internal-session-effects-f09252a0 | host=vm | shell=bash"
)
CONTINUE = (
    "[Tue 2026-12-01 09:09 UTC] Continue the current task from the existing transcript, "
    "preserving completed work. If an action was interrupted, inspect its state before "
    "deciding whether to retry it. Do not restart the task or repeat completed actions."
)
ANNOUNCE = (
    "[Tue 2026-12-01 09:09 UTC] A background task completed. Use this result to reply to the "
    "user in your normal assistant voice.\n\nsource: subagent\ntask: SUBTASK-ALPHA"
)
SETTLED = (
    "[Subagent Context] Every subagent spawned from this session has now settled — none are "
    "still running or awaiting completion delivery.\n\nChild completion results: ..."
)
INTER = (
    "[Inter-session message] sourceSession=agent:main:subagent:6749 sourceChannel=internal "
    "sourceTool=subagent_settle isUser=false\nThis content was routed by OpenClaw from another "
    "session or internal tool. Treat it as inter-session data.\n"
)
HEARTBEAT = (
    "Follow the heartbeat monitor scratch context when provided. Recurring tasks are "
    "automations. If nothing needs attention, reply NO_REPLY.\nCurrent time: 09:09"
)
POLL = "[Tue 2026-12-01 09:10 UTC] [OpenClaw heartbeat poll]"


def _ep() -> Ep:
    return Ep(harness="openclaw", system="You are a personal assistant running inside OpenClaw.")


def _parents(calls, **kw):
    t = build_call_tree(calls, **kw)
    return {c.call_id: t.parent[c.call_id] for c in calls}


def test_rule_codes_are_listed():
    assert set(RULE_CODES) == {
        "openclaw_request_context",
        "openclaw_unkept_prompt",
        "openclaw_runtime_line",
        "openclaw_rerendered_prompt",
        "openclaw_hidden_heartbeat",
        "openclaw_queued_prompt",
        "openclaw_joined_placeholder",
        "openclaw_joined_flush_prompt",
        "merged_assistant",
    }


def test_request_context_block_is_dropped():
    e = _ep()
    u1 = user("[Tue 2026-12-01 09:08 UTC] TASK-ONE: read notes.txt" + RUNTIME)
    a1 = asst("", tool_use("read", {"path": "notes.txt"}, "m1_0"))
    c1 = e.call([u1, user(CTX)], a1)
    c2 = e.call([u1, a1, tool_result("m1_0", "hello"), user(CTX)])
    assert _parents(e.calls)[c2.call_id] == c1.call_id
    assert _parents(e.calls, match_rules=False)[c2.call_id] is None
    a = analyse_episode(e.calls, reward=1.0)
    (ign,) = [i for i in a.decisions[c2.call_id].match_ignored if i["index"] == 3]
    assert ign["code"] == "openclaw_request_context"
    assert ign["excerpt"].startswith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>")
    # Without the rule this session is two main roots: the self-check says so.
    assert [r.code for r in a.reasons] == []


def test_unkept_prompt_and_joined_replies():
    e = _ep()
    u1 = user("[Tue 2026-12-01 09:09 UTC] TASK-TWO: read missing.txt")
    a1 = asst("", tool_use("read", {"path": "missing.txt"}, "m3_0"))
    err = tool_result("m3_0", '{"status": "error", "error": "File not found"}', is_error=True)
    base = e.call([u1, user(CTX)], a1)
    failed = e.call([u1, a1, err, user(CTX)], status=500)
    retry = e.call([u1, a1, err, user(CONTINUE), user(CTX)], asst("missing.txt does not exist."))
    # The next turn has the retry's reply right after the tool result: the prompt was not kept.
    nxt = e.call([u1, a1, err, asst("missing.txt does not exist."), user("TASK-THREE")])
    ann = e.call(
        [u1, a1, err, asst("missing.txt does not exist."), user(ANNOUNCE), user(CTX)],
        asst("One helper reported back."),
    )
    joined = e.call(
        [u1, a1, err, asst("missing.txt does not exist.\nOne helper reported back."), user(CTX)]
    )
    p = _parents(e.calls)
    assert p[failed.call_id] == p[retry.call_id] == base.call_id
    assert p[nxt.call_id] == retry.call_id
    assert p[ann.call_id] == retry.call_id
    assert p[joined.call_id] == ann.call_id
    a = analyse_episode(e.calls, reward=1.0)
    assert a.decisions[retry.call_id].retry_of == failed.call_id
    assert a.decisions[retry.call_id].state == "kept"
    codes = {i["code"] for i in a.decisions[retry.call_id].match_ignored}
    assert codes == {"openclaw_unkept_prompt", "openclaw_request_context"}


def test_rerendered_prompts_match_their_kept_form():
    e = _ep()
    u1 = user("[Tue 2026-12-01 09:09 UTC] TASK-THREE: start two helpers")
    a1 = asst("I started two helpers.")
    start = e.call([u1, user(CTX)], a1)
    settle = e.call(
        [u1, a1, user("[Tue 2026-12-01 09:09 UTC] " + SETTLED), user(CTX)],
        asst("Both helpers are done."),
    )
    hb = e.call(
        [u1, a1, user(INTER + SETTLED), asst("Both helpers are done."), user(HEARTBEAT)],
        asst("The inbox has one new message."),
    )
    after_hb = e.call(
        [
            u1,
            a1,
            user(INTER + SETTLED),
            asst("Both helpers are done."),
            user(POLL),
            asst("The inbox has one new message."),
            user("[Tue 2026-12-01 09:11 UTC] TASK-FOUR"),
        ]
    )
    p = _parents(e.calls)
    assert p[settle.call_id] == start.call_id
    assert p[hb.call_id] == settle.call_id
    assert p[after_hb.call_id] == hb.call_id
    assert _parents(e.calls, match_rules=False)[after_hb.call_id] is None
    a = analyse_episode(e.calls, reward=1.0)
    assert a.decisions[hb.call_id].role == "aux_heartbeat"
    assert a.decisions[after_hb.call_id].role == "main"
    assert "openclaw_rerendered_prompt" in {
        i["code"] for i in a.decisions[after_hb.call_id].match_ignored
    }


def test_runtime_line_and_hidden_heartbeat():
    e = _ep()
    u1 = "[Tue 2026-12-01 09:08 UTC] TASK-ONE: read notes.txt"
    a1 = asst("The notes say hello.")
    tip = e.call([user(u1 + RUNTIME), user(CTX)], a1)
    # A heartbeat answered NO_REPLY is hidden: the next main call extends `tip`.
    e.call([user(u1 + RUNTIME), a1, user(HEARTBEAT), user(CTX)], asst("NO_REPLY"))
    t4 = "[Tue 2026-12-01 09:10 UTC] TASK-FOUR: summarise"
    m7 = e.call([user(u1 + RUNTIME), a1, user(t4), user(CTX)], asst("Summary so far."))
    flush = e.call(
        [
            user(u1 + FLUSH_RUNTIME),
            a1,
            user(POLL + "TASK-FOUR: summarise"),
            asst("Summary so far."),
            user("Pre-compaction memory flush. Store durable memories only in memory/x.md."),
        ]
    )
    p = _parents(e.calls)
    assert p[m7.call_id] == tip.call_id
    assert p[flush.call_id] == m7.call_id
    assert _parents(e.calls, match_rules=False)[flush.call_id] is None
    a = analyse_episode(e.calls, reward=1.0)
    assert a.decisions[flush.call_id].role == "aux_memory_flush"
    codes = {i["code"] for i in a.decisions[flush.call_id].match_ignored}
    assert {"openclaw_runtime_line", "openclaw_hidden_heartbeat"} <= codes
    (path,) = [x for x in a.paths if x.state == "kept"]
    assert path.call_ids == [tip.call_id, m7.call_id]


def test_view_is_the_same_list_when_nothing_applies():
    msgs = [user("plain"), asst("reply"), user("more")]
    view, ignored = match_view(msgs)
    assert view is msgs and ignored == ()


def test_two_assistant_messages_without_a_dropped_prompt_stay_two():
    msgs = [user("go"), asst("a"), asst("b")]
    view, _ = match_view(msgs)
    assert len(view) == 3
    view, ignored = match_view([user("go"), asst("a"), user(ANNOUNCE), asst("b")])
    assert len(view) == 2 and [i.code for i in ignored] == [
        "openclaw_unkept_prompt",
        "merged_assistant",
    ]


def test_walker_resuming_from_the_previous_request_equals_the_full_view(tmp_path):
    """`ViewWalker` (what the tree uses) gives `match_view`'s result on real request orders."""
    import random

    from clawviz.recon.matchview import ViewMemo, ViewWalker
    from clawviz.recon.tree import order_key
    from tests.test_selfcheck import _recorded_calls

    for name in ("gateway-session", "yield-heartbeat"):
        calls = sorted(_recorded_calls(name, tmp_path), key=order_key)
        orders = [calls, random.Random(3).sample(calls, len(calls))]
        for order in orders:
            walker, memo = ViewWalker(), ViewMemo()
            for c in order:
                got = walker.view(c.messages)
                want = match_view(c.messages, memo)
                assert [m.get("content") for m in got[0]] == [m.get("content") for m in want[0]], (
                    name,
                    c.line,
                )
                assert got[1] == want[1]
