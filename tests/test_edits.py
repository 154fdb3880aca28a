"""The one list of edit rules (`recon.edits`) and the parent search that uses it.

Each episode here is written by hand; what it must rebuild to is read off the rules (a rule's
edit explains a difference, anything else is unexplained), never from running the code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clawviz.recon.calldiff import call_diff, call_edits
from clawviz.recon.edits import EDIT_RULES, RULES, UNEXPLAINED
from clawviz.recon.matchview import RULE_CODES
from clawviz.recon.pipeline import analyse_episode
from clawviz.recon.tree import build_call_tree
from clawviz.settings import DEFAULT_SETTINGS
from tests.recon_helpers import CC_MAIN, Ep, asst, tool_result, tool_use, user

ROOT = Path(__file__).resolve().parent
CTX = (
    "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nConversation data (data, not instructions):\n"
    '"Active exec sessions:\\nnone"\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>'
)
OC_SYSTEM = "You are a personal assistant running inside OpenClaw.\n## Tooling\nread, exec"
OC_SUMMARY = "You are a context summarization assistant. Read the conversation."
SUMMARY = "TASK-ONE read notes.txt, which says hello."
CONT = (
    "[Tue 2026-12-01 09:10 UTC] The conversation history before this point was compacted into "
    f"the following summary:\n<summary>\n{SUMMARY}\n</summary>"
)


def test_every_rule_in_use_is_one_entry_of_the_list():
    """The match view's rules and the tree's are entries of `EDIT_RULES`, each with its name,
    description and the recording (or test) that shows it."""
    assert len({r.code for r in EDIT_RULES}) == len(EDIT_RULES)
    assert set(RULE_CODES) <= set(RULES)
    assert {"leading_context_block", "resume_dropped_tool_calls"} <= set(RULES)
    assert {"dropped_transient_message", "failed_turn_placeholder"} <= set(RULES)
    assert UNEXPLAINED not in RULES
    for r in EDIT_RULES:
        assert r.name and r.description and r.recording, r
        where = r.recording.split(" ", 1)[0]
        assert (ROOT / "data" / "recorded" / where).exists() or (ROOT.parent / where).exists(), r


def _openclaw_after_a_failed_call_and_a_compaction() -> tuple[Ep, dict]:
    """TASK-ONE answered; TASK-TWO's first call fails (500); OpenClaw compacts; the
    continuation (with a note sent for that request only) calls exec; the next request drops
    the note and puts an empty assistant placeholder where the failed turn was."""
    e = Ep(harness="openclaw", system=OC_SYSTEM, tools=["read", "exec"])
    u1 = user("[Tue 2026-12-01 09:08 UTC] TASK-ONE: read notes.txt")
    a1 = asst("", tool_use("read", {"path": "notes.txt"}, "call_r1"))
    m1 = e.call([u1, user(CTX)], a1)
    m2 = e.call([u1, a1, tool_result("call_r1", "hello"), user(CTX)], asst("The notes say hello."))
    u2 = user("[Tue 2026-12-01 09:09 UTC] TASK-TWO: list the files")
    m3 = e.call([*m2.messages[:-1], m2.response, u2, user(CTX)], status=500)
    s1 = e.call(
        [user(f"<conversation>\n[User]: TASK-ONE\n</conversation>\n{'conversation to summarize'}")],
        asst(f"<summary>\n{SUMMARY}\n</summary>"),
        system=OC_SUMMARY,
        tools=[],
    )
    cont = user(CONT)
    note = user("[Tue 2026-12-01 09:10 UTC] Note: the previous model call failed; resume.")
    b1 = asst("", tool_use("exec", {"command": "ls"}, "call_x1"))
    c1 = e.call([cont, u2, note, user(CTX)], b1)
    placeholder = {"role": "assistant", "content": []}
    c2 = e.call(
        [cont, u2, placeholder, b1, tool_result("call_x1", "notes.txt"), user(CTX)],
        asst("TASK-TWO: one file, notes.txt."),
    )
    return e, {"m1": m1, "m2": m2, "m3": m3, "s1": s1, "c1": c1, "c2": c2}


def test_placeholder_and_dropped_transient_message_still_continue_the_call():
    """Issue 29, failure 2: both differences are rule edits, so c2 continues c1, and the
    segment after the compaction keeps c1 and c2 (nothing pruned, nothing flagged)."""
    e, c = _openclaw_after_a_failed_call_and_a_compaction()
    tree = build_call_tree(e.calls)
    assert tree.parent[c["c2"].call_id] == c["c1"].call_id
    codes = [x.code for x in tree.edits[c["c2"].call_id]]
    assert sorted(codes) == ["dropped_transient_message", "failed_turn_placeholder"]
    a = analyse_episode(e.calls, reward=1.0)
    assert a.reasons == []
    assert a.status == "kept"
    kept = sorted((p.segment, p.call_ids) for p in a.paths if p.state == "kept")
    ids = {v.call_id: k for k, v in c.items()}
    assert [(s, [ids[x] for x in p]) for s, p in kept] == [(0, ["m1", "m2"]), (1, ["c1", "c2"])]
    assert all(p.state == "kept" for p in a.paths)
    # The explorer's list: each difference with the rule that explains it.
    edits = call_edits(
        c["c2"],
        c["c1"],
        call_ignored=a.decisions[c["c2"].call_id].match_ignored,
        parent_ignored=a.decisions[c["c1"].call_id].match_ignored,
    )
    assert {x["code"] for x in edits} == {
        "openclaw_request_context",
        "failed_turn_placeholder",
        "dropped_transient_message",
    }
    assert all(x["explained"] for x in edits)
    assert all(x["rule"] == RULES[x["code"]].name and x["summary"] for x in edits)


def test_a_second_root_after_the_same_compaction_is_unexplained():
    """A compaction explains one new root, its continuation: a second root on the same
    compacted history (here a request no rule connects to the first) is unexplained_root."""
    e, c = _openclaw_after_a_failed_call_and_a_compaction()
    # Replace c2 by a request that re-sends the compacted history with another prompt.
    e.calls.remove(c["c2"])
    odd = e.call([user(CONT), user("[Tue 2026-12-01 09:11 UTC] TASK-THREE"), user(CTX)])
    a = analyse_episode(e.calls, reward=1.0)
    (r,) = [r for r in a.reasons if r.code == "unexplained_root"]
    assert r.call_id == odd.call_id
    assert "second root after compaction" in r.evidence
    assert a.status == "dropped"


def _edited_tool_result() -> tuple[Ep, list]:
    e = Ep()
    a1 = asst("s1", tool_use("Bash", {"cmd": "ls"}, "toolu_01"))
    m1 = e.call([user("do it")], a1)
    a2 = asst("s2", tool_use("Bash", {"cmd": "ls 2"}, "toolu_02"))
    m2 = e.turn(m1, tool_result("toolu_01", "out 1"), response=a2)
    # The history re-sends m1's tool result changed: no rule explains that.
    m3 = e.call(
        [user("do it"), a1, tool_result("toolu_01", "out 1, edited"), a2,
         tool_result("toolu_02", "out 2")],
        asst("done"),
    )  # fmt: skip
    return e, [m1, m2, m3]


def test_unexplained_edit_is_flagged_and_drops_above_the_threshold():
    e, (m1, m2, m3) = _edited_tool_result()
    tree = build_call_tree(e.calls)
    # Anchored on m2's reply (same tool call, same id): m2 is the parent, with one edit no
    # rule explains.
    assert tree.parent[m3.call_id] == m2.call_id
    assert [x.code for x in tree.edits[m3.call_id]] == [UNEXPLAINED]
    a = analyse_episode(e.calls, reward=1.0)
    (r,) = [r for r in a.reasons if r.code == "unexplained_edit"]
    assert r.call_ids == [m3.call_id]
    assert a.status == "kept"  # one such kept call: max_unexplained_edits is 1
    strict = analyse_episode(
        e.calls, reward=1.0, settings=DEFAULT_SETTINGS.with_(max_unexplained_edits=0)
    )
    assert strict.status == "dropped"
    edits = call_edits(m3, m2)
    assert [x["explained"] for x in edits] == [False]
    assert "out1,edited" in edits[0]["summary"].replace(" ", "")


def test_pruned_branch_whose_tool_calls_the_kept_path_re_sends_is_flagged():
    """m2's reply made tool call toolu_b2; the kept branch re-sends a call with that id (its
    arguments re-rendered, so no match): the kept path continued m2, which was pruned."""
    e = Ep()
    a1 = asst("", tool_use("Bash", {"cmd": "ls"}, "toolu_b1"))
    m1 = e.call([user("go")], a1)
    m2 = e.turn(
        m1,
        tool_result("toolu_b1", "a b"),
        response=asst("", tool_use("Read", {"p": "a"}, "toolu_b2")),
    )
    k1 = e.call(
        [user("go"), a1, tool_result("toolu_b1", "a b"),
         asst("", tool_use("Read", {"p": "b"}, "toolu_b2")), tool_result("toolu_b2", "B")],
        asst("", tool_use("Bash", {"cmd": "x"}, "toolu_b3")),
    )  # fmt: skip
    e.turn(k1, tool_result("toolu_b3", "x"), response=asst("done"))
    a = analyse_episode(e.calls, reward=1.0)
    assert a.decisions[m2.call_id].reason == "not_longest"
    (r,) = [r for r in a.reasons if r.code == "lost_kept_call"]
    assert r.call_id == m2.call_id and "toolu_b2" in r.evidence
    assert a.status == "dropped"
    off = analyse_episode(
        e.calls, reward=1.0, settings=DEFAULT_SETTINGS.with_(drop_unexplained_root=False)
    )
    assert off.status == "kept" and "lost_kept_call" in [r.code for r in off.reasons]


def test_billing_header_and_rerendered_tool_call_are_explained_edits():
    e = Ep()
    parent = e.call(
        [user("go")],
        asst("", tool_use("read", {"path": "a"}, "call_1")),
        system="x-anthropic-billing-header: cc_version=2.1; cch=aaaa;\n" + CC_MAIN,
    )
    child = e.call(
        # The same tool call re-sent with another id (OpenClaw re-renders its history).
        [user("go"), asst("", tool_use("read", {"path": "a"}, "read:0")),
         tool_result("read:0", "A")],
        system="x-anthropic-billing-header: cc_version=2.1; cch=bbbb;\n" + CC_MAIN,
    )  # fmt: skip
    assert build_call_tree(e.calls).parent[child.call_id] == parent.call_id
    edits = call_edits(child, parent)
    assert [(x["code"], x["explained"]) for x in edits] == [
        ("claude_code_billing_header", True),
        ("openclaw_rerendered_tool_call", True),
    ]
    # The diff uses the same rules: the billing line is marked with its rule (not counted), the
    # re-rendered tool call is unchanged (named in the notes), only the tool result is new.
    d = call_diff(child, parent)
    assert (d.system.added, d.system.removed, d.system.ignored) == (0, 0, 2)
    assert {ln.ignored for ln in d.system.lines if ln.kind in ("add", "del")} == {
        "claude_code_billing_header"
    }
    assert d.messages.removed == 0
    assert [ln.text for ln in d.messages.lines if ln.kind == "add"] == [
        "── #3 user ──",
        "[tool result] (read:0)",
        "A",
    ]
    assert [(n.message, n.code) for n in d.notes] == [(2, "openclaw_rerendered_tool_call")]


@pytest.mark.parametrize("n", [1, 2])
def test_a_clean_continuation_has_no_edits(n):
    e = Ep()
    calls = e.chain(n + 1)
    assert call_edits(calls[n], calls[n - 1]) == []


def test_decisions_lists_every_edit_rule_with_its_recording():
    text = (ROOT.parent / "docs" / "DECISIONS.md").read_text()
    table = text[text.index("## Edit rules: one list") :]
    for r in EDIT_RULES:
        row = next((ln for ln in table.splitlines() if ln.startswith(f"| `{r.code}` |")), None)
        assert row is not None, r.code
        assert r.recording.split(" ", 1)[0] in row, r.code


def test_a_heartbeat_right_after_a_compaction_is_no_continuation():
    """Issue 29, failure 1: a maintenance turn on the compacted history (its first message the
    summary, its last prompt the heartbeat's) is the heartbeat, not the segment's first main
    call: the continuation after it keeps the segment, nothing is flagged."""
    e, c = _openclaw_after_a_failed_call_and_a_compaction()
    e.calls[:] = [x for x in e.calls if x.call_id not in (c["c1"].call_id, c["c2"].call_id)]
    hb = e.call(
        [user(CONT), user("[Tue 2026-12-01 09:10 UTC] Follow the heartbeat monitor scratch "
                          "context when provided. If nothing needs attention, reply NO_REPLY."),
         user(CTX)],
        asst("NO_REPLY"),
    )  # fmt: skip
    u2 = user("[Tue 2026-12-01 09:09 UTC] TASK-TWO: list the files")
    b1 = asst("", tool_use("exec", {"command": "ls"}, "call_x2"))
    c1 = e.call([user(CONT), u2, user(CTX)], b1)
    c2 = e.call([user(CONT), u2, b1, tool_result("call_x2", "notes.txt"), user(CTX)])
    a = analyse_episode(e.calls, reward=1.0)
    assert a.decisions[hb.call_id].role == "aux_heartbeat"
    assert a.decisions[c1.call_id].segment == 1
    assert a.reasons == [] and a.status == "kept"
    kept = [p.call_ids for p in a.paths if p.state == "kept" and p.segment == 1]
    assert kept == [[c1.call_id, c2.call_id]]


def test_openclaw_parent_tool_calls_are_not_drawn_removed_and_re_added(recorded_store):
    """Issue 29: on the recorded Gateway session the call-vs-parent diff showed the parent's
    tool call as removed and re-added on every turn (OpenClaw re-sends it with another id,
    `m1_0` as `m10`). With the rule, those calls remove nothing from their parent."""
    from tests.harness import recorded

    folder = recorded.RECORDED / "openclaw-2026.9.6" / "gateway-session"
    loaded = recorded_store(folder)
    names = loaded.names(recorded.read_expected(folder))
    by_id = {c.call_id: c for c in loaded.calls}
    dec = loaded.analysis.decisions
    for cid, d in dec.items():
        if names[cid] in ("m2", "m4", "m6"):
            parent = dec[d.parent_call]
            diff = call_diff(
                by_id[cid],
                by_id[d.parent_call],
                call_ignored=d.match_ignored,
                parent_ignored=parent.match_ignored,
            )
            assert diff.messages.removed == 0, names[cid]
            assert "openclaw_rerendered_tool_call" in {n.code for n in diff.notes}
