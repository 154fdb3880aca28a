"""Unit tests of the sample generator's building blocks (wire shapes, labelling, self-check)."""

from __future__ import annotations

import json
import random

import pytest

from clawviz.samples.agent import Action, run_action
from clawviz.samples.episode import Episode, EpisodeMeta, Thread, check_structure, label_episode
from clawviz.samples.wire import (
    IM_END,
    anthropic_sse,
    openai_stream,
    output_tokens,
    prompt_token_ids,
    token_strings,
    tokenize,
)


def _episode(reward: float | None = 1.0) -> tuple[Episode, Thread]:
    meta = EpisodeMeta("e1", "task_0001", "openclaw", 1, "strong", "m")
    ep = Episode(meta, random.Random(0), 1000.0)
    ep.reward = reward
    th = Thread("main", "main", "sys", ["read"], "m", 1000.0)
    th.messages = [{"role": "system", "content": "sys"}]
    th.pending = [{"role": "user", "content": "do it"}]
    return ep, th


def _reply(text: str) -> dict:
    return {"role": "assistant", "content": text}


def test_tokens_concatenate_back_to_the_text():
    text = 'Hello,  world!\n<tool_call>\n{"a": 1}\n</tool_call>'
    assert "".join(token_strings(text)) == text


def test_token_ids_are_one_per_token_and_stable_across_processes():
    text = 'Hello,  world!\n<tool_call>\n{"a": 1}\n</tool_call>'
    ids = tokenize(text)
    assert len(ids) == len(token_strings(text))
    # Pinned: the sample logs store these ids, so they must not depend on the process (a
    # salted hash() would give other ids in every run). A repeated token has the same id.
    assert ids[:4] == [4588, 66888, 122372, 27981]
    assert ids[5] == ids[16] and ids[4] == ids[14]
    assert min(ids) >= 10


def test_prompt_ids_append_cleanly():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi there"}]
    reply = {
        "role": "assistant",
        "content": "ok",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path":"a"}'},
            }
        ],
    }
    first = prompt_token_ids(msgs)
    out = tokenize("".join(output_tokens(reply))) + [IM_END]
    later = prompt_token_ids(msgs + [reply, {"role": "tool", "tool_call_id": "c1", "content": "x"}])
    assert later[: len(first) + len(out)] == first + out


def test_anthropic_sse_truncation_drops_the_stop_event():
    content = [
        {"type": "text", "text": "Some text " * 20},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}},
    ]
    usage = {"input_tokens": 3, "output_tokens": 40}
    full = anthropic_sse(
        random.Random(1),
        msg_id="m",
        model="x",
        content=content,
        stop_reason="tool_use",
        usage=usage,
    )
    cut = anthropic_sse(
        random.Random(1),
        msg_id="m",
        model="x",
        content=content,
        stop_reason="tool_use",
        usage=usage,
        truncate_after=5,
    )
    assert "event: message_stop" in full and "event: message_stop" not in cut
    assert full.startswith(cut)
    pieces = [
        json.loads(ln[6:])["delta"]["partial_json"]
        for ln in full.splitlines()
        if '"input_json_delta"' in ln
    ]
    assert len(pieces) >= 2 and json.loads("".join(pieces)) == {"file_path": "/a"}


def test_openai_stream_rebuilds_the_message_and_ids():
    msg = {
        "role": "assistant",
        "content": "Reading it now.",
        "tool_calls": [
            {
                "id": "c9",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path":"data/tasks.csv"}'},
            }
        ],
    }
    raw, ids, lps = openai_stream(
        random.Random(2),
        resp_id="r",
        created=1,
        model="m",
        message=msg,
        finish_reason="tool_calls",
        prompt_ids=[1, 2],
    )
    frames = [json.loads(f[6:]) for f in raw.split("\n\n") if f.startswith("data: {")]
    assert frames[0]["prompt_token_ids"] == [1, 2]
    got_ids = [i for f in frames for c in f["choices"] for i in c["token_ids"]]
    content = "".join(c["delta"].get("content") or "" for f in frames for c in f["choices"])
    args = "".join(
        tc["function"].get("arguments", "")
        for f in frames
        for c in f["choices"]
        for tc in c["delta"].get("tool_calls", [])
    )
    assert got_ids == ids and len(lps) == len(ids) and ids[-1] == IM_END
    assert content == msg["content"] and args == msg["tool_calls"][0]["function"]["arguments"]
    assert raw.endswith("data: [DONE]\n\n")


def test_label_keeps_the_path_with_most_generated_tokens():
    ep, th = _episode()
    root = ep.call(th, _reply("start"), output_tokens=5)
    snap = (list(th.messages), list(th.pending), th.tip)
    long = ep.call(th, _reply("long"), extra=[{"role": "user", "content": "a"}], output_tokens=50)
    th.messages, th.pending, th.tip = list(snap[0]), list(snap[1]), snap[2]
    short = ep.call(th, _reply("short"), extra=[{"role": "user", "content": "b"}], output_tokens=5)
    verdict = label_episode(ep)
    assert (root.state, long.state) == ("kept", "kept")
    assert (short.state, short.reason) == ("pruned", "not_longest")
    assert verdict == {"status": "kept", "reasons": [], "n_main_leaves": 2, "n_segments": 1}


def test_label_lists_episode_reasons():
    ep, th = _episode(reward=None)
    ep.call(th, _reply("x"), output_tokens=3)
    ep.call(th, _reply("y"), output_tokens=3, status=500, failure="failed_http")
    verdict = label_episode(ep)
    assert [r["code"] for r in verdict["reasons"]] == ["ended_in_error", "missing_reward"]
    assert ep.specs[1].state == "failed" and ep.specs[1].reason == "failed_http"


def test_structure_check_rejects_a_parent_the_messages_do_not_encode():
    ep, th = _episode()
    first = ep.call(th, _reply("one"), output_tokens=1)
    ep.call(th, _reply("two"), extra=[{"role": "user", "content": "more"}], output_tokens=1)
    check_structure(ep)
    ep.specs[1].parent = None
    with pytest.raises(AssertionError, match="intended parent"):
        check_structure(ep)
    ep.specs[1].parent = first
    ep.specs[0].failure = "failed_http"  # a failed call is never a parent
    with pytest.raises(AssertionError):
        check_structure(ep)


def test_actions_run_for_real(tmp_path):
    (tmp_path / "a.txt").write_text("hello world\n")
    assert run_action(tmp_path, Action("read", "a.txt")).output == "hello world\n"
    assert run_action(tmp_path, Action("read", "missing.txt")).is_error
    run_action(tmp_path, Action("edit", "a.txt", old="world", new="there"))
    assert (tmp_path / "a.txt").read_text() == "hello there\n"
    res = run_action(tmp_path, Action("exec", command='python3 -c "print(6 * 7)" | tee out.txt'))
    assert res.output.strip() == "42" and (tmp_path / "out.txt").read_text().strip() == "42"
    assert run_action(tmp_path, Action("exec", command="wc -w a.txt")).output == "2 a.txt\n"
    failing = run_action(tmp_path, Action("exec", command='python3 -c "raise SystemExit(3)"'))
    assert failing.is_error and "[exit code 3]" in failing.output
