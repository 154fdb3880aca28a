"""Roles, links, segments and threads (PIPELINE §3) on hand-built real-traffic shapes."""

from __future__ import annotations

from recon_helpers import (
    CC_SUB,
    OC_MAIN,
    OC_TOOLS,
    PI_SUMMARY,
    Ep,
    asst,
    tool_result,
    tool_use,
    user,
)

from clawviz.recon.classify import classify_calls
from clawviz.recon.pipeline import analyse_episode
from clawviz.recon.tree import build_call_tree

CC_SUMMARY_ASK = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a "
    "detailed summary of the conversation so far, paying close attention to the user's requests."
)
CC_CONTINUE = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)


def roles(calls):
    tree = build_call_tree(calls)
    return classify_calls(tree).roles


def test_claude_code_startup_warmups_and_utility_calls():
    e = Ep()
    w1 = e.call([user("Warmup")], system=CC_SUB, tools=["Read"])
    w2 = e.call([user("Warmup")], system="You are a file search specialist for Claude Code")
    main = e.call([user("fix the bug")], asst("", tool_use("Bash", {"command": "cat a"}, "t1")))
    paths = e.call(
        [user("Command: cat a\nOutput: x\n\nExtract any file paths that this command reads")],
        system="You are a helper.",
        tools=[],
    )
    prefix = e.call([user("<policy_spec>bash prefix</policy_spec> cat a")], tools=[], system="x")
    title = e.call(
        [user("fix the bug")], system="Generate a concise, sentence-case title", tools=[]
    )
    r = roles(e.calls)
    for c in (w1, w2, paths, prefix, title):
        assert r[c.call_id].role == "aux_utility", c.call_id
    assert r[main.call_id].role == "main"


def test_structural_fallback_for_tool_less_call_with_other_system():
    e = Ep()
    main = e.call([user("fix the bug")])
    odd = e.call([user("summarise this diff")], system="You are a terse helper.", tools=[])
    r = roles(e.calls)
    assert r[main.call_id].role == "main"
    assert r[odd.call_id].role == "aux_utility"


def test_task_subagent_linked_to_spawning_call_and_interleaved_with_main():
    e = Ep()
    m1 = e.call(
        [user("research")],
        asst(
            "", tool_use("Task", {"prompt": "Find the config loader", "subagent_type": "x"}, "t1")
        ),
    )
    s1 = e.call(
        [user("Find the config loader")],
        asst("", tool_use("Read", {}, "r1")),
        system=CC_SUB,
        tools=["Read"],
    )
    m2 = e.turn(m1, tool_result("t1", "Async agent launched successfully"))
    s2 = e.turn(s1, tool_result("r1", "file"), system=CC_SUB, tools=["Read"])
    m3 = e.turn(m2, user("go on"))
    r = roles(e.calls)
    assert [r[c.call_id].role for c in (m1, m2, m3)] == ["main"] * 3
    assert r[s1.call_id].role == r[s2.call_id].role == "aux_subagent"
    assert r[s1.call_id].linked_call == m1.call_id
    assert r[s1.call_id].thread == r[s2.call_id].thread != "main"
    assert r[m3.call_id].segment == 0


def test_parallel_subagents_with_identical_prompts_are_linked_not_merged():
    e = Ep()
    spawn = asst(
        "",
        tool_use("Task", {"prompt": "Check the tests"}, "t1"),
        tool_use("Task", {"prompt": "Check the tests"}, "t2"),
    )
    m1 = e.call([user("go")], spawn)
    a = e.call([user("Check the tests")], asst("A says", tool_use("Read", {}, "x")), system=CC_SUB)
    b = e.call([user("Check the tests")], asst("B says", tool_use("Read", {}, "y")), system=CC_SUB)
    a2 = e.turn(a, tool_result("x", "1"), system=CC_SUB)
    b2 = e.turn(b, tool_result("y", "2"), system=CC_SUB)
    tree = build_call_tree(e.calls)
    r = classify_calls(tree).roles
    assert r[a.call_id].linked_call == r[b.call_id].linked_call == m1.call_id
    assert tree.parent[a2.call_id] == a.call_id and tree.parent[b2.call_id] == b.call_id
    assert r[a.call_id].thread != r[b.call_id].thread
    result = analyse_episode(e.calls, reward=1.0)
    for c in (a, b, a2, b2):
        assert result.decisions[c.call_id].state == "auxiliary"


def test_openclaw_subagent_via_tool_search_wrapper():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=["tool_call", "read"])
    task = "Summarise inbox.md into notes.md"
    m1 = e.call(
        [user("[Mon 2026-07-06 10:00 GMT+8] please do it")],
        asst("", tool_use("tool_call", {"id": "sessions_spawn", "args": {"task": task}}, "c1")),
    )
    sub_first = (
        "[Mon 2026-07-06 10:00 GMT+8] [Subagent Context] You are running as a subagent "
        f"(depth 1/1). Results auto-announce to your requester.\n\n[Subagent Task]: {task}"
    )
    s = e.call([user(sub_first)], system=OC_MAIN + "\n# Subagent Context\nYou are a subagent.")
    r = roles(e.calls)
    assert r[s.call_id].role == "aux_subagent"
    assert r[s.call_id].linked_call == m1.call_id


def test_structural_subagent_by_spawn_prompt_without_markers():
    e = Ep(harness="codex", system="You are Codex.", tools=["shell", "spawn_agent"])
    m1 = e.call([user("go")], asst("", tool_use("spawn_agent", {"message": "count lines"}, "c")))
    s = e.call([user("count lines")], system="You are Codex.", tools=["shell"])
    r = roles(e.calls)
    assert r[s.call_id].role == "aux_subagent"
    assert r[s.call_id].linked_call == m1.call_id


def test_codex_subagent_found_past_its_environment_context_message():
    """Codex 0.171 puts `<environment_context>` (and AGENTS.md) user messages before the spawn
    prompt in a sub-agent's first request, the same as in main: the first-user text looks past
    them (recorded: tests/data/recorded/codex-0.171.0/subagent)."""
    env = "<environment_context>\n  <cwd>/w</cwd>\n  <shell>bash</shell>\n</environment_context>"
    e = Ep(harness="codex", system="", tools=["exec_command", "multi_agent_v1"])
    dev = {"role": "system", "content": [{"type": "text", "text": "You are a coding agent."}]}
    spawn = tool_use("spawn_agent", {"message": "SUBTASK-1: count lines"}, "c")
    m1 = e.call([dev, user(env), user("ask a sub-agent")], asst("", spawn))
    s = e.call([dev, user(env), user("SUBTASK-1: count lines")])
    r = roles(e.calls)
    assert r[s.call_id].role == "aux_subagent"
    assert r[s.call_id].linked_call == m1.call_id
    # without the rule the context message is the first user text and nothing links
    assert "spawn prompt" in r[s.call_id].reason


def claude_code_compactions(n: int):
    """A Claude Code episode with n compactions: summary extends the tip, then a new root."""
    e = Ep()
    tip = e.chain(3)[-1]
    summaries, continuations = [], []
    for k in range(n):
        s = e.turn(
            tip,
            user(CC_SUMMARY_ASK),
            response=asst(
                f"<analysis>a</analysis><summary>Summary number {k}: the user "
                f"asked to fix parser bug {k} and we edited parser.py.</summary>"
            ),
        )
        c = e.call(
            [
                user(
                    CC_CONTINUE + f"Summary number {k}: the user asked to fix parser bug "
                    f"{k} and we edited parser.py."
                )
            ],
            asst("", tool_use("Bash", {"cmd": "pytest"}, f"p{k}")),
        )
        nxt = e.turn(c, tool_result(f"p{k}", "ok"))
        summaries.append(s)
        continuations.append(c)
        tip = nxt
    return e, summaries, continuations


def test_claude_code_compaction_segments_and_links():
    for n in (1, 2, 3):
        e, summaries, conts = claude_code_compactions(n)
        tree = build_call_tree(e.calls)
        cls = classify_calls(tree)
        assert cls.n_segments == n + 1
        r = cls.roles
        for k, (s, c) in enumerate(zip(summaries, conts, strict=True)):
            assert r[s.call_id].role == "aux_summary"
            assert r[s.call_id].linked_call == tree.parent[s.call_id]
            assert r[c.call_id].role == "main"
            assert r[c.call_id].segment == k + 1
            assert r[c.call_id].linked_call == s.call_id
        a = analyse_episode(e.calls, reward=1.0)
        assert a.n_segments == n + 1
        assert {p.segment for p in a.paths if p.state == "kept"} == set(range(n + 1))


def test_pi_compaction_after_context_overflow_with_two_summary_calls():
    e = Ep(harness="pi", system=OC_MAIN, tools=OC_TOOLS)
    tip = e.chain(3)[-1]
    overflow = e.turn(tip, tool_result("t3", "huge output"), status=400)
    hist = e.call(
        [
            user(
                "<conversation>\n[User]: do the task\n</conversation>\n\nThe messages above are "
                "a conversation to summarize."
            )
        ],
        asst("## Goal\nFinish the task quickly and write the report file."),
        system=PI_SUMMARY,
        tools=[],
    )
    prefix = e.call(
        [
            user(
                "<conversation>\n[Assistant]: step 3\n</conversation>\n\nThis is the PREFIX of a "
                "turn that was too large to keep. The SUFFIX (recent work) is retained."
            )
        ],
        asst("## Turn prefix\nRan ls on the repo."),
        system=PI_SUMMARY,
        tools=[],
    )
    cont = e.call(
        [
            user(
                "The conversation history before this point was compacted into the following "
                "summary:\n\n<summary>\n## Goal\nFinish the task quickly and write the report "
                "file.\n\n---\n\n**Turn Context (split turn):**\n\n## Turn prefix\nRan ls on the "
                "repo.\n</summary>"
            ),
            tool_result("t3", "huge output"),
        ],
    )
    tree = build_call_tree(e.calls)
    cls = classify_calls(tree)
    r = cls.roles
    assert tree.parent[overflow.call_id] == tip.call_id
    assert r[hist.call_id].role == r[prefix.call_id].role == "aux_summary"
    assert r[hist.call_id].linked_call == tip.call_id
    assert r[cont.call_id].role == "main" and r[cont.call_id].segment == 1
    assert r[cont.call_id].linked_call in (hist.call_id, prefix.call_id)
    assert cls.n_segments == 2
    a = analyse_episode(e.calls, reward=1.0)
    assert a.decisions[overflow.call_id].state == "failed"
    assert a.decisions[overflow.call_id].reason == "failed_http"
    assert a.status == "kept", a.reasons


def test_heartbeat_both_variants_extend_main_tip_but_are_aux():
    for prompt in (
        "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly. If nothing "
        "needs attention, reply HEARTBEAT_OK.",
        "[Tue 2026-09-01 09:00 UTC] Follow the heartbeat monitor scratch context when provided. "
        "If nothing needs attention, reply NO_REPLY.\nCurrent time: 09:00",
    ):
        e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
        m1 = e.call([user("hello")], asst("hi"))
        hb = e.turn(m1, user(prompt), response=asst("HEARTBEAT_OK"))
        m2 = e.turn(m1, user("thanks, now do X"))
        tree = build_call_tree(e.calls)
        r = classify_calls(tree).roles
        assert tree.parent[hb.call_id] == m1.call_id
        assert r[hb.call_id].role == "aux_heartbeat"
        assert r[m2.call_id].role == "main"
        a = analyse_episode(e.calls, reward=1.0)
        assert a.decisions[hb.call_id].state == "auxiliary"
        assert a.decisions[m2.call_id].state == "kept"
        assert a.decisions[m1.call_id].state == "kept"


def test_main_continuing_after_heartbeat_kept_in_history():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    m1 = e.call([user("hello")], asst("hi"))
    hb = e.turn(m1, user("Read HEARTBEAT.md if it exists."), response=asst("HEARTBEAT_OK"))
    m2 = e.turn(hb, user("now do X"))
    a = analyse_episode(e.calls, reward=1.0)
    assert a.decisions[m2.call_id].role == "main"
    assert a.decisions[m2.call_id].segment == 0
    assert [p.call_ids for p in a.paths if p.state == "kept"] == [[m1.call_id, m2.call_id]]


def test_cron_run_is_its_own_aux_thread():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    m1 = e.call([user("hello")], asst("hi"))
    c1 = e.call(
        [
            user(
                "[Tue 2026-09-01 09:00 UTC] [cron:job-7 daily digest] Write the digest.\n"
                "This is an unattended scheduled run."
            )
        ],
        asst("", tool_use("read", {"path": "x"}, "r")),
        system=OC_MAIN + "\n## Subagent Context\nscheduled",
    )
    c2 = e.turn(c1, tool_result("r", "data"), system=c1.system)
    r = roles(e.calls)
    assert r[m1.call_id].role == "main"
    assert r[c1.call_id].role == r[c2.call_id].role == "aux_cron"
    assert r[c1.call_id].thread == r[c2.call_id].thread


def test_memory_flush_and_its_tool_follow_up():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    m1 = e.call([user("hello")], asst("hi"))
    f1 = e.turn(
        m1,
        user("Pre-compaction memory flush. Store durable memories only in memory/2026-09-01.md"),
        response=asst("", tool_use("write", {"path": "memory/x.md"}, "w")),
        tools=["read", "write"],
    )
    f2 = e.turn(f1, tool_result("w", "ok"), response=asst("NO_REPLY"), tools=["read", "write"])
    r = roles(e.calls)
    assert r[f1.call_id].role == r[f2.call_id].role == "aux_memory_flush"
    a = analyse_episode(e.calls, reward=1.0)
    assert a.status == "kept"
    assert a.decisions[m1.call_id].state == "kept"


def test_non_model_calls_and_ground_truth():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    models = e.call([], endpoint="non_model", method="GET", url="/v1/models")
    m1 = e.call([user("hello")], asst("hi"), turn_type="main")
    side = e.call(m1.messages + [m1.response, user("anything")], turn_type="side")
    odd = e.call([user("Warmup")], turn_type="main")
    a = analyse_episode(e.calls, reward=1.0)
    assert a.decisions[models.call_id].role == "aux_non_model"
    assert a.decisions[models.call_id].state == "auxiliary"
    assert a.decisions[side.call_id].role == "aux_utility"
    assert a.decisions[odd.call_id].role == "main"
    assert "ground truth" in a.decisions[odd.call_id].role_reason


def test_summary_from_a_different_model_is_still_aux():
    e = Ep()
    tip = e.chain(2)[-1]
    s = e.turn(tip, user(CC_SUMMARY_ASK), model="claude-haiku", endpoint="openai_chat")
    assert roles(e.calls)[s.call_id].role == "aux_summary"


def test_calls_without_episode_are_unattached():
    e = Ep()
    e.chain(2)
    for c in e.calls:
        c.episode_id = None
    a = analyse_episode(e.calls, reward=None)
    assert {(d.state, d.reason) for d in a.decisions.values()} == {("auxiliary", "unattached")}


def test_heartbeat_followed_by_runtime_context_message():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    m1 = e.call([user("hello")], asst("hi"))
    hb = e.turn(
        m1,
        user("Read HEARTBEAT.md if it exists (workspace context). Follow it strictly."),
        user(
            "OpenClaw runtime context for the immediately preceding user message.\nCurrent "
            "time: 09:00"
        ),
        response=asst("HEARTBEAT_OK"),
    )
    assert roles(e.calls)[hb.call_id].role == "aux_heartbeat"


def test_markers_seen_past_system_reminder_blocks():
    e = Ep()
    tip = e.chain(2)[-1]
    reminder = {
        "type": "text",
        "text": "<system-reminder>\nAs you answer, use this context.\n</system-reminder>\n",
    }
    s = e.turn(
        tip,
        {"role": "user", "content": [reminder, {"type": "text", "text": CC_SUMMARY_ASK}]},
        response=asst("<summary>All done: the parser bug is fixed in parser.py now.</summary>"),
    )
    c = e.call(
        [
            {
                "role": "user",
                "content": [
                    reminder,
                    {
                        "type": "text",
                        "text": CC_CONTINUE + "All done: the parser bug is fixed in parser.py now.",
                    },
                ],
            }
        ]
    )
    r = roles(e.calls)
    assert r[s.call_id].role == "aux_summary"
    assert r[c.call_id].role == "main" and r[c.call_id].segment == 1
    assert r[c.call_id].linked_call == s.call_id


def test_side_request_extending_the_main_tip_is_utility():
    e = Ep()
    tip = e.chain(2)[-1]
    sug = e.turn(tip, user("[SUGGESTION MODE: Suggest what the user might type next.]"))
    nxt = e.turn(tip, tool_result("t2", "out"))
    a = analyse_episode(e.calls, reward=1.0)
    assert a.decisions[sug.call_id].role == "aux_utility"
    assert a.decisions[nxt.call_id].state == "kept"
    assert [p.state for p in a.paths] == ["kept"]


def test_openclaw_style_n_compactions_give_n_plus_one_segments():
    for n in (1, 2, 3):
        e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
        tip = e.chain(2)[-1]
        for k in range(n):
            e.turn(tip, tool_result(f"t{k}", "huge"), status=400)
            s = e.call(
                [
                    user(
                        f"<conversation>\n[User]: part {k}\n</conversation>\n\nThe messages above "
                        "are a conversation to summarize."
                    )
                ],
                asst(f"## Goal\nPart {k}: finish the report and keep the numbers exact."),
                system=PI_SUMMARY,
                tools=[],
            )
            c = e.call(
                [
                    user(
                        "The conversation history before this point was compacted into the "
                        f"following summary:\n\n<summary>\n## Goal\nPart {k}: finish the report "
                        "and keep the numbers exact.\n</summary>"
                    )
                ],
                asst("", tool_use("exec", {"c": k}, f"x{k}")),
            )
            tip = e.turn(c, tool_result(f"x{k}", "ok"))
            cls = classify_calls(build_call_tree(e.calls))
            assert cls.roles[c.call_id].linked_call == s.call_id
            assert cls.roles[s.call_id].role == "aux_summary"
        a = analyse_episode(e.calls, reward=1.0)
        assert a.n_segments == n + 1
        assert sorted(p.segment for p in a.paths if p.state == "kept") == list(range(n + 1))
        assert a.status == "kept"


def test_subagent_that_compacts_stays_a_subagent():
    e = Ep()
    m1 = e.call([user("go")], asst("", tool_use("Task", {"prompt": "Audit the repo"}, "t1")))
    s1 = e.call([user("Audit the repo")], asst("", tool_use("Read", {}, "r1")), system=CC_SUB)
    s2 = e.turn(s1, tool_result("r1", "file"), system=CC_SUB)
    summ = e.turn(
        s2,
        user(CC_SUMMARY_ASK),
        system=CC_SUB,
        response=asst("<summary>The audit found three unused modules so far.</summary>"),
    )
    cont = e.call(
        [user(CC_CONTINUE + "The audit found three unused modules so far.")], system=CC_SUB
    )
    m2 = e.turn(m1, tool_result("t1", "report"))
    cls = classify_calls(build_call_tree(e.calls))
    r = cls.roles
    assert r[summ.call_id].role == "aux_summary" and r[summ.call_id].linked_call == s2.call_id
    assert r[cont.call_id].role == "aux_subagent"
    assert r[cont.call_id].linked_call == summ.call_id
    assert r[cont.call_id].thread == r[s1.call_id].thread
    assert r[m2.call_id].role == "main" and cls.n_segments == 1


def test_unknown_side_call_logged_before_main_does_not_become_main():
    e = Ep()
    side = e.call([user("fix the bug")], system="Name this chat in three words.", tools=[])
    main = e.call([user("fix the bug")], asst("", tool_use("Bash", {"c": "ls"}, "t1")))
    nxt = e.turn(main, tool_result("t1", "a.py"))
    r = roles(e.calls)
    assert r[side.call_id].role == "aux_utility"
    assert r[main.call_id].role == r[nxt.call_id].role == "main"


def test_resent_first_call_stays_main_even_if_a_spawn_used_the_same_text():
    e = Ep()
    spawn = asst("", tool_use("Task", {"prompt": "Summarise the inbox"}, "t1"))
    m1 = e.call([user("Summarise the inbox")], spawn)
    again = e.call([user("Summarise the inbox")], spawn)
    sub = e.call([user("Summarise the inbox")], system=CC_SUB)
    r = roles(e.calls)
    assert r[m1.call_id].role == r[again.call_id].role == "main"
    assert r[sub.call_id].role == "aux_subagent" and r[sub.call_id].linked_call == m1.call_id
