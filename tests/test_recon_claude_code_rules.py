"""The matching rules learned from real Claude Code recordings (tests/data/recorded/claude-code-*).

Each test builds the shape a real Claude Code release sent (see the recording named) and checks
the rule in docs/DECISIONS.md that handles it; each also checks the rule does not reach further.
"""

from __future__ import annotations

from recon_helpers import CC_SUB, Ep, asst, tool_result, tool_use, user

from clawviz.recon.canonical import strip_patterns
from clawviz.recon.markers import ALL_IGNORE_PATTERNS
from clawviz.recon.pipeline import analyse_episode
from clawviz.recon.tree import build_call_tree

READ_RESULT = (
    '<system-reminder>\nResult of calling the Read tool: "     1\u2192alpha\\n     2\u2192beta'
    "\\n\\n<system-reminder>\\nWhenever you read a file, you should consider whether it would "
    'be considered malware.\\n</system-reminder>\\n"\n</system-reminder>'
)
CONTINUED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\nAnalysis:\na\n\nSummary:\n1. Primary Request: read "
    "notes.txt."
)
SUMMARY_SYSTEM = "You are a helpful AI assistant tasked with summarizing conversations."
SUMMARY_ASK = "Your task is to create a detailed summary of the conversation so far, paying ..."


def _blocks(*texts: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


# -- nested <system-reminder> spans (claude-code-2.0.77/session, m6) ---------------------------


def test_nested_system_reminder_is_removed_whole():
    text = READ_RESULT + "\n" + CONTINUED
    assert strip_patterns(text, ALL_IGNORE_PATTERNS).strip() == CONTINUED
    # A reminder next to real text leaves the real text, nested or not.
    flat = "<system-reminder>a</system-reminder>keep <b>this</b>"
    assert strip_patterns(flat, ALL_IGNORE_PATTERNS) == "keep <b>this</b>"
    # An unclosed reminder is left alone (nothing to pair it with).
    assert strip_patterns("<system-reminder>open", ALL_IGNORE_PATTERNS) == "<system-reminder>open"


def test_continuation_after_reread_attachments_starts_a_segment():
    """2.0 puts re-read files (a Read result holding its own reminder) before the summary."""
    e = Ep()
    m1 = e.call([user("read notes.txt")], asst("", tool_use("Read", {"file_path": "n"}, "t1")))
    summary = e.turn(
        m1,
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "alpha"},
                {"type": "text", "text": SUMMARY_ASK},
            ],
        },
        system=SUMMARY_SYSTEM,
        response=asst(
            "<analysis>a</analysis>\n<summary>1. Primary Request: read notes.txt.</summary>"
        ),
    )
    cont = e.call([_blocks(READ_RESULT, CONTINUED)], asst("done"))
    a = analyse_episode(e.calls, reward=1.0)
    d = a.decisions
    assert d[summary.call_id].role == "aux_summary"
    assert d[cont.call_id].role == "main" and d[cont.call_id].state == "kept"
    assert d[cont.call_id].segment == 1 and d[cont.call_id].linked_call == summary.call_id
    assert d[m1.call_id].state == "kept" and a.n_segments == 2


# -- leading context-only user message (claude-code-2.0.77/session, summary-2 after m6) ---------


def test_leading_context_only_message_is_not_history():
    """The resumed history starts at the summary; the first request had attachments before."""
    e = Ep()
    first = e.call([_blocks(READ_RESULT), user(CONTINUED)], asst("missing.txt does not exist."))
    resumed = e.call([user(CONTINUED), asst("missing.txt does not exist."), user("next")])
    tree = build_call_tree(e.calls)
    assert tree.parent[resumed.call_id] == first.call_id


def test_context_only_message_in_the_middle_still_counts():
    """Only leading ones are left out: a later reminder-only turn stays part of the history."""
    e = Ep()
    a = e.call([user("go"), asst("ok"), _blocks("<system-reminder>note 1</system-reminder>")])
    b = e.call([user("go"), asst("ok"), _blocks("<system-reminder>note 2</system-reminder>")])
    tree = build_call_tree(e.calls)
    # Equal match keys (reminders ignored) but both are kept as messages: b re-sends a.
    assert tree.resend_of[b.call_id] == a.call_id
    lone = Ep()
    only = lone.call([_blocks("<system-reminder>x</system-reminder>")])
    assert build_call_tree(lone.calls).parent[only.call_id] is None  # never emptied


# -- --resume drops parallel tool calls (claude-code-2.0.77/session, m3 and m5) ----------------


def test_resume_that_drops_a_parallel_tool_call_still_continues_the_call():
    e = Ep()
    reply = asst(
        "Reading both.",
        tool_use("Read", {"file_path": "notes.txt"}, "t1"),
        tool_use("Bash", {"command": "ls"}, "t2"),
    )
    m1 = e.call([user("read and list")], reply)
    results = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "alpha"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "notes.txt"},
        ],
    }
    m2 = e.turn(m1, results, response=asst("notes.txt holds alpha."))
    # The next `claude -p --resume` run re-sends only the Bash branch of m1's reply.
    kept_branch = [
        user("read and list"),
        asst("Reading both.", tool_use("Bash", {"command": "ls"}, "t2")),
        tool_result("t2", "notes.txt"),
        asst("notes.txt holds alpha."),
        user("next prompt"),
    ]
    m3 = e.call(kept_branch, asst("done"))
    a = analyse_episode(e.calls, reward=1.0)
    tree = build_call_tree(e.calls)
    assert tree.parent[m3.call_id] == m2.call_id
    assert tree.tolerated[m3.call_id].startswith("resume_dropped_tool_calls: 2 ")
    assert m2.call_id not in tree.tolerated
    assert [a.decisions[c.call_id].state for c in (m1, m2, m3)] == ["kept"] * 3
    assert "resume_dropped_tool_calls" in a.decisions[m3.call_id].role_reason


def test_changed_text_or_an_extra_tool_call_is_no_dropped_branch():
    e = Ep()
    m1 = e.call(
        [user("go")],
        asst("A.", tool_use("Read", {"p": 1}, "t1"), tool_use("Read", {"p": 2}, "t2")),
    )
    other_text = e.call(
        [user("go"), asst("B.", tool_use("Read", {"p": 1}, "t1")), tool_result("t1", "x")]
    )
    extra_tool = e.call(
        [
            user("go"),
            asst("A.", tool_use("Read", {"p": 1}, "t1"), tool_use("Bash", {"c": 1}, "t3")),
            tool_result("t1", "x"),
        ]
    )
    tree = build_call_tree(e.calls)
    assert tree.parent[other_text.call_id] is None
    assert tree.parent[extra_tool.call_id] is None
    assert tree.tolerated == {}
    assert tree.parent[m1.call_id] is None


# -- repeated side requests are no retries (claude-code-2.0.77/session, utility-*) -------------


def test_repeated_answered_warmup_is_not_a_retry_but_a_failed_one_is():
    e = Ep()
    w1 = e.call([user("Warmup")], asst("Ready."), system=CC_SUB)
    w2 = e.call([user("Warmup")], asst("Ready."), system=CC_SUB)
    f1 = e.call([user("Warmup")], status=529, system=CC_SUB)
    w3 = e.call([user("Warmup")], asst("Ready."), system=CC_SUB)
    main = e.call([user("do it")], asst("done"))
    d = analyse_episode(e.calls, reward=1.0).decisions
    assert d[w1.call_id].role == d[w2.call_id].role == "aux_utility"
    assert d[w2.call_id].retry_of is None
    assert d[f1.call_id].retry_of is None  # w2 was answered: f1 asks again, it retries nothing
    assert d[w3.call_id].retry_of == f1.call_id
    assert d[main.call_id].state == "kept"


# -- 2.1 partial compaction: the instruction follows a kept prompt (claude-code-2.1.332) -------


def test_text_only_instruction_after_a_kept_prompt_marks_a_summary():
    e = Ep()
    m1 = e.call([user("first")], asst("one"))
    summary = e.turn(
        m1,
        user("Ask two sub-agents.\nCRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n"),
    )
    quoted = e.turn(m1, user("Please grep for 'CRITICAL: Respond with TEXT ONLY. Do NOT'"))
    d = analyse_episode(e.calls, reward=1.0).decisions
    assert d[summary.call_id].role == "aux_summary"
    assert d[quoted.call_id].role == "main"
