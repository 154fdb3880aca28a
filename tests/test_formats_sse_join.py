"""SSE text deltas: joining per block, restarted blocks, key order, odd values, both splits."""

from __future__ import annotations

import json

import orjson
import pytest

from clawviz.ingest import sse


def _stream(events: list[dict]) -> str:
    return "".join(f"event: {e.get('type', '')}\ndata: {json.dumps(e)}\n\n" for e in events)


def _delta(idx: int, text: object) -> dict:
    return {
        "type": "content_block_delta",
        "index": idx,
        "delta": {"type": "text_delta", "text": text},
    }


def test_anthropic_text_deltas_join_per_block_and_restart_drops_old_text():
    events = [
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "A"}},
        _delta(0, "b"),
        _delta(0, "c"),
        _delta(1, "x"),  # no start event: an implicit text block
        # A restarted block 0 keeps only what comes after its new start.
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        _delta(0, "d"),
        _delta(1, "y"),
        {"type": "message_stop"},
    ]
    res = sse.rebuild_anthropic(_stream(events))
    assert res.complete
    assert res.body["content"] == [{"type": "text", "text": "d"}, {"type": "text", "text": "xy"}]


def test_anthropic_text_delta_on_a_block_without_text_keeps_key_order():
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}}
    thinking = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "thinking_delta", "thinking": "t"},
    }
    res = sse.rebuild_anthropic(_stream([start, _delta(0, "a"), thinking, _delta(0, "b")]))
    block = res.body["content"][0]
    assert list(block) == ["type", "text", "thinking"]
    assert orjson.dumps(block) == b'{"type":"thinking","text":"ab","thinking":"t"}'
    assert not res.complete  # no message_stop


@pytest.mark.parametrize("bad", [None, 5, ["x"]])
@pytest.mark.parametrize("first", [True, False])
def test_anthropic_non_string_text_delta_fails_as_concatenation_did(bad, first):
    deltas = [_delta(0, bad)] if first else [_delta(0, "ok"), _delta(0, bad)]
    with pytest.raises(TypeError, match="concatenate"):
        sse.rebuild_anthropic(_stream(deltas))


def _chunk(delta: dict, idx: int = 0) -> dict:
    return {"id": "c1", "model": "m", "choices": [{"index": idx, "delta": delta}]}


def _chat(chunks: list[dict], done: bool = True) -> str:
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    return text + ("data: [DONE]\n\n" if done else "")


def test_openai_chat_content_and_reasoning_join_per_choice_in_key_order():
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"reasoning_content": "think "}),
        _chunk({"content": "Hel"}, idx=1),
        _chunk({"reasoning_content": "more", "content": "Hi"}),
        _chunk({"content": "lo"}, idx=1),
        _chunk({"content": " there"}),
    ]
    res = sse.rebuild_openai_chat(_chat(chunks))
    first, second = (c["message"] for c in res.body["choices"])
    assert first == {"role": "assistant", "content": "Hi there", "reasoning_content": "think more"}
    assert list(first) == ["role", "content", "reasoning_content"]
    assert second == {"role": "assistant", "content": "Hello"}
    assert res.complete


def test_openai_chat_reasoning_only_leaves_content_none():
    res = sse.rebuild_openai_chat(_chat([_chunk({"reasoning": "a"}), _chunk({"reasoning": "b"})]))
    assert res.body["choices"][0]["message"] == {
        "role": "assistant",
        "content": None,
        "reasoning": "ab",
    }


@pytest.mark.parametrize("bad", [5, ["x"], {"a": 1}])
@pytest.mark.parametrize("first", [True, False])
def test_openai_chat_non_string_content_fails_as_concatenation_did(bad, first):
    chunks = (
        [_chunk({"content": bad})]
        if first
        else [_chunk({"content": "a"}), _chunk({"content": bad})]
    )
    with pytest.raises(TypeError):
        sse.rebuild_openai_chat(_chat(chunks))


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("cut", [None, 0.5, 0.8])
def test_batched_and_frame_by_frame_splits_agree(crlf, cut):
    events = [
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *[_delta(0, f'piece {i} \\n "q" ') for i in range(20)],
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    text = _stream(events)
    if cut:
        text = text[: int(len(text) * cut)]
    if crlf:
        text = text.replace("\n", "\r\n")
    fast = sse._event_data(text)
    slow = sse._split_slow(text)
    # The batched path names no event: every frame here carries its type in its data.
    assert [d for _, d in fast[0]] == [f.data for f in slow.frames]
    assert fast[1] == slow.cut_off
    res = sse.rebuild_anthropic(text)
    pieces = "".join(f'piece {i} \\n "q" ' for i in range(20))
    if cut is None:
        assert res.complete and res.body["content"][0]["text"] == pieces
    else:
        assert not res.complete
        assert pieces.startswith(res.body["content"][0]["text"])
