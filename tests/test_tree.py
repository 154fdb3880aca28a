"""Call tree (PIPELINE §2): longest-prefix parents, retries, roots, canonical matching."""

from __future__ import annotations

import copy
import random

from recon_helpers import Ep, asst, tool_result, tool_use, user

from clawviz.recon.canonical import match_key
from clawviz.recon.markers import ALL_IGNORE_PATTERNS
from clawviz.recon.tree import build_call_tree


def parents(calls):
    tree = build_call_tree(calls)
    return {c.call_id: tree.parent[c.call_id] for c in tree.calls}


def test_linear_chain_parents_are_previous_calls():
    e = Ep()
    cs = e.chain(5)
    p = parents(e.calls)
    assert p[cs[0].call_id] is None
    for prev, cur in zip(cs, cs[1:], strict=False):
        assert p[cur.call_id] == prev.call_id


def test_parent_is_longest_prefix_not_latest_call():
    e = Ep()
    a, b = e.chain(2)
    side = e.call([user("unrelated question")])
    # A branch from `a` arriving after `b` and `side` still hangs below `a`.
    branch = e.turn(a, tool_result("t1", "different output"))
    p = parents(e.calls)
    assert p[branch.call_id] == a.call_id
    assert p[side.call_id] is None


def test_failed_call_is_never_a_parent():
    e = Ep()
    a = e.call([user("go")])
    bad = e.turn(a, user("next"), status=529)
    after = e.call(bad.messages + [asst("partial"), user("more")])
    p = parents(e.calls)
    assert p[bad.call_id] == a.call_id
    assert p[after.call_id] == a.call_id


def test_identical_resend_is_sibling_with_resend_of():
    e = Ep()
    a = e.call([user("go")])
    first = e.turn(a, user("next"), status=500)
    second = e.turn(a, user("next"))
    tree = build_call_tree(e.calls)
    assert tree.parent[second.call_id] == a.call_id
    assert tree.resend_of[second.call_id] == first.call_id


def test_identical_root_resend():
    e = Ep()
    first = e.call([user("go")], status=529)
    second = e.call([user("go")])
    tree = build_call_tree(e.calls)
    assert tree.parent[second.call_id] is None
    assert tree.resend_of[second.call_id] == first.call_id
    assert tree.roots == [first.call_id, second.call_id]


def test_same_messages_different_system_is_not_a_resend():
    e = Ep()
    e.call([user("Warmup")], system="You are a file search specialist for Claude Code")
    b = e.call([user("Warmup")], system="You are an agent for Claude Code")
    assert build_call_tree(e.calls).resend_of[b.call_id] is None


def test_shuffled_input_gives_identical_tree():
    e = Ep()
    cs = e.chain(6)
    e.turn(cs[2], tool_result("t3", "other branch"))
    e.call([user("go")], status=529)
    want = parents(e.calls)
    rng = random.Random(7)
    for _ in range(5):
        shuffled = e.calls[:]
        rng.shuffle(shuffled)
        assert parents(shuffled) == want


def test_order_by_request_time_when_no_seq():
    e = Ep()
    a, b = e.chain(2)
    for c in e.calls:
        c.seq = None
    # Written in response-completion order: b's line comes first.
    a.line, b.line = 2, 1
    assert parents(e.calls)[b.call_id] == a.call_id


def key(m):
    return match_key(m, ignore_patterns=ALL_IGNORE_PATTERNS)


def test_match_key_string_vs_blocks_and_cache_control():
    plain = {"role": "user", "content": "hello world"}
    blocks = {
        "role": "user",
        "content": [
            {"type": "text", "text": "hello ", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "world"},
        ],
    }
    assert key(plain) == key(blocks)
    assert key(plain) != key({"role": "assistant", "content": "hello world"})


def test_match_key_system_reminder_and_whitespace():
    a = user("<system-reminder>todo list is empty</system-reminder>\nfix the bug")
    b = user("<system-reminder>todo list: 3 items</system-reminder>fix   the bug\n")
    assert key(a) == key(b)
    assert key(a) != key(user("fix the bugs"))


def test_match_key_tool_call_reserialised_and_id_rewritten():
    a = asst("ok", {"type": "tool_use", "id": "call_1", "name": "exec", "input": {"b": 1, "a": 2}})
    b = asst("ok", {"type": "tool_use", "id": "x9", "name": "exec", "input": '{"a": 2,  "b": 1}'})
    assert key(a) == key(b)
    c = asst("ok", {"type": "tool_use", "id": "x9", "name": "exec", "input": {"a": 3, "b": 1}})
    assert key(a) != key(c)


def test_match_key_thinking_stripped_and_tool_result_error_flag():
    assert key(asst("answer", thinking="let me think")) == key(asst("answer"))
    assert key(tool_result("t1", "boom", True)) != key(tool_result("t1", "boom", False))
    assert key(tool_result("t1", "out")) == key(tool_result("other-id", "out"))


def test_rerendered_history_still_matches():
    e = Ep()
    a = e.call(
        [user("go")],
        asst("Let me look.", tool_use("Read", {"path": "/a", "n": 1}, "t1"), thinking="hmm"),
    )
    moved = copy.deepcopy(a.messages)
    moved[0]["content"][0]["cache_control"] = {"type": "ephemeral"}
    rerendered = asst("Let me  look.\n", tool_use("Read", {"n": 1, "path": "/a"}, "rewritten"))
    b = e.call(moved + [rerendered, tool_result("rewritten", "contents")])
    assert parents(e.calls)[b.call_id] == a.call_id


def test_billing_header_change_is_not_a_new_resend_group():
    e = Ep()
    first = e.call(
        [user("go")], status=529, system="x-anthropic-billing-header: cch=1;\n" + e.system
    )
    second = e.call([user("go")], system="x-anthropic-billing-header: cch=2;\n" + e.system)
    assert build_call_tree(e.calls).resend_of[second.call_id] == first.call_id


def test_system_message_inside_messages():
    e = Ep()
    a = e.call([user("go")])
    note = {"role": "system", "content": "[SYSTEM NOTIFICATION - NOT USER INPUT] agent done"}
    b = e.turn(a, note)
    assert parents(e.calls)[b.call_id] == a.call_id


def test_odd_content_shapes_do_not_break_matching():
    odd = [
        {"role": "user", "content": None},
        {"role": "user", "content": 5},
        {"role": "user", "content": {"type": "text", "text": "one block"}},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "Task", "input": None}]},
        {"role": "user", "content": [{"type": "tool_result", "content": [{"type": "text"}]}]},
    ]
    keys = [key(m) for m in odd]
    assert len(set(keys)) == len(keys)
    assert key(odd[2]) == key(user("one block"))


def test_copies_of_a_message_take_one_edge_whatever_object_arrives_first():
    # The trie tells siblings apart by match key only once a second object arrives below a
    # node: copies (equal, or equal up to whitespace/reminders) must still share one edge.
    e = Ep()
    a = e.call([user("go")])
    same = copy.deepcopy(a.messages + [a.response])
    loose = copy.deepcopy(same)
    loose[0] = user("<system-reminder>x</system-reminder>\n go ")
    b = e.call(same + [user("one")])
    c = e.call(loose + [user("two")])
    d = e.call([user("go!"), copy.deepcopy(a.response), user("three")])
    p = parents(e.calls)
    assert p[b.call_id] == a.call_id
    assert p[c.call_id] == a.call_id
    assert p[d.call_id] is None
    assert len({key(m) for m in (a.messages[0], loose[0])}) == 1


def _reference_parents(calls):
    """Brute force PIPELINE §2: the latest successful call whose messages + response is the
    longest key prefix of a request (independent of the trie and its shortcuts)."""
    ordered = build_call_tree(calls).calls
    out = {}
    for i, c in enumerate(ordered):
        want = [key(m) for m in c.messages]
        best, depth = None, 0
        for x in ordered[:i]:
            if x.response is None or x.failure is not None:
                continue
            path = [key(m) for m in x.messages + [x.response]]
            if len(path) >= depth and want[: len(path)] == path:
                best, depth = x.call_id, len(path)
        out[c.call_id] = best
    return out


def test_random_branching_episodes_match_brute_force_parents():
    rng = random.Random(11)
    for _ in range(30):
        e = Ep()
        e.call([user("go")])
        for i in range(rng.randint(3, 25)):
            base = rng.choice(e.calls)
            kind = rng.random()
            if kind < 0.6 and base.response is not None:
                # Continue a call; sometimes with a copied (equal, other object) history.
                prev = copy.deepcopy(base) if rng.random() < 0.3 else base
                text = rng.choice(["out a", "out  a", "out b"])
                e.turn(prev, tool_result(f"t{i}", text), status=rng.choice([200, 200, 529]))
            elif kind < 0.8:
                # Re-send a prefix of a history (a retry, or a shorter branch).
                cut = rng.randint(1, len(base.messages))
                e.call(base.messages[:cut])
            else:
                e.call([user(rng.choice(["go", "other root"]))])
        assert parents(e.calls) == _reference_parents(e.calls)
