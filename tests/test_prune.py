"""Pruning (PIPELINE §4): retries, branches, longest paths, episode checks, one state per call."""

from __future__ import annotations

import random

import orjson
import pytest
from recon_helpers import OC_MAIN, OC_TOOLS, Ep, asst, tool_result, tool_use, user

from clawviz.recon.pipeline import analyse_episode
from clawviz.settings import DEFAULT_SETTINGS

STATES = {"kept", "pruned", "auxiliary", "failed"}


def run(e, reward=1.0, **settings):
    return analyse_episode(e.calls, reward=reward, settings=DEFAULT_SETTINGS.with_(**settings))


def state(a, call):
    d = a.decisions[call.call_id]
    return d.state, d.reason


def codes(a):
    return [r.code for r in a.reasons]


def test_linear_chain_all_kept_one_path():
    e = Ep()
    cs = e.chain(5)
    a = run(e)
    assert all(state(a, c) == ("kept", None) for c in cs)
    assert a.status == "kept" and a.reasons == []
    assert [p.call_ids for p in a.paths] == [[c.call_id for c in cs]]
    assert a.paths[0].generated_tokens == 50


def test_middle_call_retried_after_5xx():
    e = Ep()
    a1, a2 = e.chain(2)
    bad = e.turn(a2, tool_result("t2", "out"), status=529)
    good = e.turn(a2, tool_result("t2", "out"))
    nxt = e.turn(good, user("continue"))
    a = run(e)
    assert state(a, bad) == ("failed", "failed_http")
    assert state(a, good) == ("kept", None)
    assert a.decisions[good.call_id].retry_of == bad.call_id
    assert state(a, nxt) == ("kept", None)
    assert a.status == "kept"


def test_first_call_retried_two_roots_one_kept():
    e = Ep()
    r1 = e.call([user("go")], asst("a"))
    r2 = e.call([user("go")], asst("b"))
    c = e.turn(r2, user("next"))
    a = run(e)
    assert state(a, r1) == ("pruned", "superseded_retry")
    assert state(a, r2) == ("kept", None)
    assert state(a, c) == ("kept", None)
    assert a.decisions[r2.call_id].retry_of == r1.call_id


def test_final_call_retried_keeps_the_delivered_one():
    e = Ep()
    a1 = e.call([user("go")])
    f1 = e.turn(a1, user("last"), delivered=True)
    f2 = e.turn(a1, user("last"), delivered=False)
    a = run(e)
    assert state(a, f1) == ("kept", None)
    assert state(a, f2) == ("pruned", "superseded_retry")


def test_final_call_retried_without_delivery_keeps_the_latest():
    e = Ep()
    a1 = e.call([user("go")])
    f1 = e.turn(a1, user("last"))
    f2 = e.turn(a1, user("last"))
    a = run(e)
    assert state(a, f1) == ("pruned", "superseded_retry")
    assert state(a, f2) == ("kept", None)


def test_abandoned_branch_after_resend_is_superseded_with_descendants():
    e = Ep()
    root = e.call([user("go")])
    b1 = e.turn(root, user("step"), response=asst("old", tool_use("Bash", {"c": 1}, "o1")))
    b2 = e.turn(b1, tool_result("o1", "x"))
    b3 = e.turn(b2, user("more"))
    # The harness re-sends b1's request and continues from there for two calls.
    n1 = e.turn(root, user("step"), response=asst("new", tool_use("Bash", {"c": 2}, "n1")))
    n2 = e.turn(n1, tool_result("n1", "y"))
    a = run(e)
    for c in (b1, b2, b3):
        assert state(a, c) == ("pruned", "superseded_retry")
    for c in (root, n1, n2):
        assert state(a, c) == ("kept", None)
    assert a.status == "kept"


def test_openclaw_retry_with_refreshed_context_and_continue_message():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    m1 = e.call([user("[Mon 10:00] do it")], asst("", tool_use("exec", {"c": "ls"}, "x")))
    failed = e.turn(
        m1, tool_result("x", "a.txt"), user("OpenClaw runtime context: t=1"), status=500
    )
    retry = e.turn(
        m1,
        tool_result("x", "a.txt"),
        user("OpenClaw runtime context: t=2"),
        user("Continue the current task from the existing transcript, preserving completed work."),
    )
    done = e.turn(retry, user("thanks"))
    a = run(e)
    assert state(a, failed) == ("failed", "failed_http")
    assert state(a, retry) == ("kept", None)
    assert a.decisions[retry.call_id].retry_of == failed.call_id
    assert a.decisions[retry.call_id].parent_call == m1.call_id
    assert state(a, done) == ("kept", None)
    assert a.status == "kept"


def test_openclaw_retry_of_an_abandoned_successful_sibling():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    m1 = e.call([user("do it")])
    first = e.turn(m1, user("ctx t=1"), response=asst("answer one"))
    retry = e.turn(
        m1,
        user("ctx t=2"),
        user("Continue the current task from the existing transcript, preserving completed work."),
    )
    a = run(e)
    assert state(a, first) == ("pruned", "superseded_retry")
    assert state(a, retry) == ("kept", None)


def branches(n_leaves):
    e = Ep()
    root = e.call([user("go")])
    for i in range(n_leaves):
        e.turn(root, user(f"variant {i}"))
    return e


def test_max_leaves_boundary():
    assert "too_many_branches" not in codes(run(branches(8)))
    a = run(branches(9))
    assert a.status == "dropped"
    reason = next(r for r in a.reasons if r.code == "too_many_branches")
    assert reason.evidence == "9 leaves > max_leaves 8"
    assert "too_many_branches" not in codes(run(branches(9), max_leaves=9))


def test_retries_do_not_count_as_leaves():
    e = Ep()
    root = e.call([user("go")])
    for _ in range(12):
        e.turn(root, user("same"), status=529)
    e.turn(root, user("same"))
    assert "too_many_branches" not in codes(run(e))


def test_longest_path_by_generated_tokens_then_calls_then_latest():
    e = Ep()
    root = e.call([user("go")], tokens=5)
    short = e.turn(root, user("a"), tokens=100)
    long1 = e.turn(root, user("b"), tokens=30)
    long2 = e.turn(long1, user("c"), tokens=30)
    a = run(e)
    assert state(a, short) == ("kept", None)
    assert state(a, long1) == ("pruned", "not_longest")
    assert state(a, long2) == ("pruned", "not_longest")
    assert sorted(p.state for p in a.paths) == ["kept", "pruned"]

    for c in e.calls:
        c.usage.output_tokens = None
    a = run(e)
    assert state(a, long2) == ("kept", None)
    assert state(a, short) == ("pruned", "not_longest")

    e2 = Ep()
    root = e2.call([user("go")])
    first = e2.turn(root, user("a"))
    latest = e2.turn(root, user("b"))
    a = run(e2)
    assert state(a, latest) == ("kept", None)
    assert state(a, first) == ("pruned", "not_longest")


def test_all_valid_keeps_every_valid_path_shared_prefix_once():
    e = Ep()
    root = e.call([user("go")])
    x = e.turn(root, user("a"))
    y = e.turn(root, user("b"))
    bad = e.turn(root, user("b"), status=500)
    a = run(e, branch_policy="all_valid")
    assert {state(a, c) for c in (root, x, y)} == {("kept", None)}
    assert state(a, bad) == ("failed", "failed_http")
    kept = [p for p in a.paths if p.state == "kept"]
    assert len(kept) == 2 and all(p.call_ids[0] == root.call_id for p in kept)


def test_ended_in_error_only_when_last_main_call_failed():
    e = Ep()
    cs = e.chain(2)
    e.turn(cs[1], tool_result("t2", "out"), status=500)  # the harness recovers from this one
    good = e.turn(cs[1], tool_result("t2", "out"))
    assert "ended_in_error" not in codes(run(e))
    last = e.turn(good, user("more"), status=500)
    a = run(e)
    reason = next(r for r in a.reasons if r.code == "ended_in_error")
    assert reason.call_id == last.call_id and "HTTP 500" in reason.evidence


def test_orphaned_request_in_the_middle_and_at_the_end():
    e = Ep()
    cs = e.chain(2)
    mid = e.turn(cs[0], tool_result("t1", "x"), failure="orphaned_request")
    e.turn(cs[1], tool_result("t2", "y"))
    a = run(e)
    assert state(a, mid) == ("failed", "orphaned_request")
    assert "orphaned_request" not in codes(a)
    end = e.turn(e.calls[-1], user("more"), failure="orphaned_request")
    a = run(e)
    assert state(a, end) == ("failed", "orphaned_request")
    assert "orphaned_request" in codes(a) and "ended_in_error" not in codes(a)


def test_truncated_stream_is_failed():
    e = Ep()
    a1 = e.call([user("go")])
    t = e.turn(a1, user("x"), failure="truncated_stream")
    e.turn(a1, user("x"))
    assert state(run(e), t) == ("failed", "truncated_stream")


def test_unsupported_tool_names_the_call_and_tool_search_wrapper():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    m1 = e.call([user("draw")], asst("", tool_use("canvas", {"a": 1}, "c1")))
    e.turn(m1, tool_result("c1", "ok"))
    a = run(e)
    reason = next(r for r in a.reasons if r.code == "unsupported_tool")
    assert reason.evidence == "canvas in call 1"
    assert "unsupported_tool" not in codes(run(e, unsupported_tools=()))
    e2 = Ep(harness="openclaw", system=OC_MAIN, tools=["tool_call"])
    e2.call([user("draw")], asst("", tool_use("tool_call", {"id": "canvas", "args": {}}, "c")))
    assert "unsupported_tool" in codes(run(e2))


def test_reward_checks_and_all_reasons_listed():
    e = Ep()
    cs = e.chain(2)
    assert codes(run(e, reward=None)) == ["missing_reward"]
    a = run(e, reward=0.25)
    assert a.reasons[0].code == "below_reward_threshold"
    assert a.reasons[0].evidence == "reward 0.25 < reward_threshold 0.5"
    assert codes(run(e, reward=0.5)) == []
    for i in range(9):
        e.turn(cs[0], user(f"b{i}"))
    e.turn(cs[-1], user("end"), status=500)
    assert codes(run(e, reward=None)) == ["too_many_branches", "ended_in_error", "missing_reward"]


def test_every_call_has_exactly_one_state_and_kept_has_no_reason():
    rng = random.Random(3)
    for trial in range(20):
        e = Ep(episode_id=f"e{trial}")
        calls = [e.call([user("go")])]
        for i in range(25):
            prev = rng.choice(calls)
            if prev.response is None:
                continue
            kind = rng.random()
            if kind < 0.15:
                e.turn(prev, user(f"m{i}"), status=500)
            elif kind < 0.25:
                e.turn(prev, user("Pre-compaction memory flush. now"))
            else:
                calls.append(e.turn(prev, user(f"m{i % 4}")))
        a = run(e)
        assert set(a.decisions) == {c.call_id for c in e.calls}
        for d in a.decisions.values():
            assert d.state in STATES
            assert (d.reason is None) == (d.state == "kept")


def test_shuffled_input_gives_identical_output():
    e = Ep()
    cs = e.chain(4)
    e.turn(cs[1], tool_result("t2", "out 2"), status=529)
    e.turn(cs[2], user("Your task is to create a detailed summary of the conversation so far"))
    e.call([user("Warmup")], system="You are an agent for Claude Code", tools=["Read"])
    want = orjson.dumps(run(e), default=vars)
    rng = random.Random(11)
    for _ in range(5):
        rng.shuffle(e.calls)
        assert orjson.dumps(run(e), default=vars) == want


@pytest.mark.parametrize("policy", ["longest", "all_valid"])
def test_pruned_branch_calls_never_on_kept_paths(policy):
    e = Ep()
    root = e.call([user("go")])
    a1 = e.turn(root, user("a"))
    a2 = e.turn(a1, user("a again"))
    b1 = e.turn(root, user("b"))
    a = run(e, branch_policy=policy)
    assert sorted(p.state for p in a.paths) == (
        ["kept", "pruned"] if policy == "longest" else ["kept", "kept"]
    )
    on_kept = {cid for p in a.paths if p.state == "kept" for cid in p.call_ids}
    # A call is kept exactly when it is on a kept path.
    for cid, d in a.decisions.items():
        assert (cid in on_kept) == (d.state == "kept"), cid
    assert {root.call_id, a1.call_id, a2.call_id} <= on_kept
    want = ("pruned", "not_longest") if policy == "longest" else ("kept", None)
    assert state(a, b1) == want


def test_failed_auxiliary_call_is_failed_and_non_model_always_auxiliary():
    e = Ep()
    tip = e.chain(2)[-1]
    s = e.turn(
        tip,
        user("Your task is to create a detailed summary of the conversation so far"),
        status=500,
    )
    nm = e.call([], endpoint="non_model", method="GET", url="/v1/models", status=404)
    a = run(e)
    assert a.decisions[s.call_id].role == "aux_summary"
    assert state(a, s) == ("failed", "failed_http")
    assert state(a, nm) == ("auxiliary", "aux_non_model")
    assert a.status == "kept"


def test_resent_branch_repeating_tool_calls_with_new_ids():
    # Re-sent request gets the same answer with a new tool id; the next request then equals the
    # abandoned branch's next request except for that id, which matching ignores.
    e = Ep()
    root = e.call([user("go")])
    old = e.turn(root, user("step"), response=asst("write", tool_use("Write", {"f": 1}, "id_a")))
    old2 = e.turn(old, tool_result("id_a", "done"))
    new = e.turn(root, user("step"), response=asst("write", tool_use("Write", {"f": 1}, "id_b")))
    new2 = e.turn(new, tool_result("id_b", "done"))
    a = run(e)
    assert a.decisions[new2.call_id].parent_call == new.call_id
    assert a.decisions[new2.call_id].retry_of is None
    assert a.decisions[new.call_id].retry_of == old.call_id
    assert [state(a, c)[1] for c in (old, old2)] == ["superseded_retry"] * 2
    assert [state(a, c)[0] for c in (root, new, new2)] == ["kept"] * 3


def test_openclaw_continue_inside_runtime_context_message():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    m1 = e.call([user("do it")], asst("", tool_use("read", {"p": "a"}, "r")))
    failed = e.turn(m1, tool_result("r", "text"), status=500)
    retry = e.turn(
        m1,
        tool_result("r", "text"),
        user(
            "OpenClaw runtime context for the immediately preceding user message.\nCurrent "
            "time: 10:04\n\nContinue the current task from the existing transcript, preserving "
            "completed work."
        ),
    )
    a = run(e)
    assert a.decisions[retry.call_id].retry_of == failed.call_id
    assert state(a, retry) == ("kept", None)


def test_continuation_carrying_the_retry_prompt_never_supersedes_a_segment():
    e = Ep(harness="openclaw", system=OC_MAIN, tools=OC_TOOLS)
    cs = e.chain(2)
    e.turn(cs[-1], tool_result("t2", "huge"), status=400)
    e.call(
        [
            user(
                "<conversation>\n[User]: go\n</conversation>\n\nThe messages above are a "
                "conversation to summarize."
            )
        ],
        asst("## Goal\nship it"),
        system="You are a context summarization assistant.",
        tools=[],
    )
    cont = e.call(
        [
            user(
                "The conversation history before this point was compacted into the following "
                "summary:\n\n<summary>\n## Goal\nship it\n</summary>"
            ),
            user(
                "Continue the current task from the existing transcript, preserving completed work."
            ),
        ]
    )
    a = run(e)
    assert [state(a, c) for c in cs] == [("kept", None)] * 2
    assert state(a, cont) == ("kept", None) and a.decisions[cont.call_id].segment == 1
    assert a.decisions[cont.call_id].retry_of is None


def test_compactions_are_not_branches():
    from test_classify import claude_code_compactions

    e, _, _ = claude_code_compactions(10)
    a = run(e)
    assert a.n_segments == 11
    assert "too_many_branches" not in codes(a)
    # Branches still count, in any segment, next to the final tip.
    e, _, conts = claude_code_compactions(2)
    for i in range(8):
        e.turn(conts[0], user(f"branch {i}"))
    a = run(e)
    reason = next(r for r in a.reasons if r.code == "too_many_branches")
    assert reason.evidence == "9 leaves > max_leaves 8"
