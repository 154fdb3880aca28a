"""Parsing of exchange records: every wire format, failures, identity and redaction."""

from __future__ import annotations

import copy
import json

import pytest
from test_formats_fixtures import (
    SESSION,
    anthropic_record,
    anthropic_tool_use_sse,
    assistant_tool_use,
    claude_code_episode,
    openai_json_body_with_token_ids,
    openai_record,
    responses_record,
    sse,
    tool_result,
    user,
)

from clawviz.ingest import sse as sse_mod
from clawviz.ingest.exchange import FormatError, MessageCache, endpoint_of, parse_exchange


def parse(record, *, file_episode="logs/run1", cache=None):
    return parse_exchange(
        record,
        source_file="logs/run1.jsonl",
        line=7,
        call_id="c7",
        file_episode=file_episode,
        cache=cache,
    )


# ---------------------------------------------------------------- Anthropic Messages


def test_anthropic_sse_rebuilds_thinking_text_and_tool_use():
    p = parse(
        anthropic_record([user("list the files")], headers={"x-claude-code-session-id": SESSION})
    )
    c = p.call
    assert c.endpoint == "anthropic_messages"
    assert c.failure is None and c.http_status == 200
    assert c.response == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Need to list files."},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_01B", "name": "Bash", "input": {"command": "ls -la"}},
        ],
    }
    assert c.stop_reason == "tool_use"
    # Final usage = message_start usage updated by the cumulative message_delta usage.
    assert (c.usage.input_tokens, c.usage.output_tokens) == (3, 190)
    assert (c.usage.cache_read_input_tokens, c.usage.cache_creation_input_tokens) == (14127, 2952)
    assert c.model == "claude-sonnet-4-5-20250929"
    assert c.tools == ["Read", "Bash"]
    assert "You are Claude Code, Anthropic's official CLI" in c.system
    assert c.t_request == 1763542013.0 and c.t_response == pytest.approx(1763542013.7)
    assert p.raw_response.startswith("event: message_start")


def test_anthropic_request_messages_in_internal_shape_and_raw_kept():
    msgs = [user("list the files"), assistant_tool_use(), tool_result()]
    p = parse(anthropic_record(msgs))
    assert p.call.messages[1]["content"][0] == {
        "type": "thinking",
        "thinking": "Need to list files.",
    }
    assert p.call.messages[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01B",
                "content": "a.txt\nb.txt",
                "is_error": False,
            }
        ],
    }
    assert p.raw_messages == msgs  # the wire form, cache_control and signature included
    assert len(p.message_hashes) == 3 and len(set(p.message_hashes)) == 3


def test_string_content_and_single_text_block_hash_the_same():
    a = parse(anthropic_record([{"role": "user", "content": "hi"}]))
    b = parse(anthropic_record([user("hi")]))
    assert a.message_hashes == b.message_hashes


def test_role_system_message_inside_messages_is_kept_in_place():
    note = {"role": "system", "content": "[SYSTEM NOTIFICATION - NOT USER INPUT] agent done"}
    p = parse(anthropic_record([user("go"), note]))
    assert [m["role"] for m in p.call.messages] == ["user", "system"]
    assert "SYSTEM NOTIFICATION" not in p.call.system


def test_anthropic_json_response():
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "Title: Fix bug"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": 4},
    }
    c = parse(anthropic_record([user("Warmup")], body=body)).call
    assert c.response == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Title: Fix bug"}],
    }
    assert c.model == "claude-haiku-4-5" and c.stop_reason == "end_turn"


def test_secret_headers_are_redacted():
    c = parse(anthropic_record([user("x")])).call
    assert c.headers["x-api-key"] == "[redacted]"
    assert c.headers["authorization"] == "[redacted]"
    assert "SECRET" not in json.dumps(c.headers)
    assert c.headers["anthropic-version"] == "2023-06-01"


# ---------------------------------------------------------------- failures


def test_sse_without_message_stop_is_truncated_stream_with_partial_content():
    c = parse(anthropic_record([user("x")], body_raw=anthropic_tool_use_sse(cut_after=10))).call
    assert c.failure == "truncated_stream"
    assert c.response["content"][1] == {"type": "text", "text": "Let me look."}


def test_sse_cut_mid_frame_is_truncated_not_rejected():
    raw = anthropic_tool_use_sse()[:-25]  # half of the message_stop frame's JSON
    c = parse(anthropic_record([user("x")], body_raw=raw)).call
    assert c.failure == "truncated_stream"


def test_sse_error_event_is_truncated_stream_with_reason():
    raw = anthropic_tool_use_sse(cut_after=9) + sse(
        [
            (
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            )
        ]
    )
    c = parse(anthropic_record([user("x")], body_raw=raw)).call
    assert c.failure == "truncated_stream"
    assert c.error == "overloaded_error: Overloaded"


def test_sse_with_a_garbage_frame_is_rejected():
    frames = anthropic_tool_use_sse().split("\n\n")
    frames[3] = "event: content_block_delta\ndata: {not json"
    with pytest.raises(FormatError, match="SSE does not parse"):
        parse(anthropic_record([user("x")], body_raw="\n\n".join(frames)))


def test_body_raw_that_is_no_sse_is_rejected():
    with pytest.raises(FormatError, match="no SSE data frames"):
        parse(anthropic_record([user("x")], body_raw="<html>bad gateway</html>"))


def test_non_2xx_is_failed_http_with_error_message():
    body = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
    c = parse(anthropic_record([user("x")], body=body, status=500)).call
    assert c.failure == "failed_http" and c.http_status == 500
    assert c.error == "HTTP 500: Internal server error"
    assert c.response is None


def test_context_overflow_400_is_failed_http():
    rec = openai_record(
        [user("x")], body={"error": {"message": "maximum context length is 32768"}}, status=400
    )
    c = parse(rec).call
    assert c.failure == "failed_http" and "maximum context length" in c.error


def test_null_response_is_orphaned_request():
    rec = anthropic_record([user("x")], response=None)
    rec["note"] = "ORPHANED_REQUEST - No matching response received"
    c = parse(rec).call
    assert c.failure == "orphaned_request" and c.response is None and c.http_status is None
    assert c.extra["note"].startswith("ORPHANED_REQUEST")


def test_response_without_body_is_truncated():
    rec = anthropic_record(
        [user("x")], response={"timestamp": 1.0, "status_code": 200, "headers": {}}
    )
    assert parse(rec).call.failure == "truncated_stream"


@pytest.mark.parametrize(
    "record, reason",
    [
        ([1, 2], "is not an exchange record"),
        ({"episode_id": "e1", "reward": 1.0}, "no 'request' object"),
        ({"request": {"method": "POST"}}, "no 'url'"),
        (
            {"request": {"url": "https://api.anthropic.com/v1/messages", "body": "not json"}},
            "not a JSON object",
        ),
        (
            {"request": {"url": "https://api.anthropic.com/v1/messages", "body": {"model": "m"}}},
            "no 'messages'",
        ),
        (
            {"request": {"url": "http://h/v1/chat/completions", "body": {"messages": "hi"}}},
            "no 'messages'",
        ),
        (
            {"request": {"url": "http://h/v1/messages", "body": {"messages": []}}, "response": "x"},
            "neither an object",
        ),
    ],
)
def test_records_that_are_no_exchange_raise_format_error(record, reason):
    with pytest.raises(FormatError, match=reason):
        parse(record)


# ---------------------------------------------------------------- endpoints


@pytest.mark.parametrize(
    "method, url, endpoint, unknown",
    [
        ("POST", "https://api.anthropic.com/v1/messages?beta=true", "anthropic_messages", False),
        (
            "POST",
            "https://api.anthropic.com/v1/messages/count_tokens?beta=true",
            "non_model",
            False,
        ),
        ("GET", "https://api.anthropic.com/v1/models", "non_model", False),
        ("POST", "http://localhost:8000/v1/chat/completions", "openai_chat", False),
        ("POST", "https://api.openai.com/v1/responses", "openai_responses", False),
        (
            "POST",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/claude/invoke",
            "anthropic_messages",
            False,
        ),
        ("POST", "https://api.anthropic.com/api/event_logging/batch", "non_model", True),
    ],
)
def test_endpoint_of(method, url, endpoint, unknown):
    assert endpoint_of(method, url) == (endpoint, unknown)


def test_non_model_call_is_kept_with_its_body():
    rec = {
        "request": {
            "timestamp": 5.0,
            "method": "GET",
            "url": "https://api.anthropic.com/v1/models",
            "headers": {},
        },
        "response": {"timestamp": 5.1, "status_code": 200, "body": {"data": []}},
    }
    p = parse(rec)
    assert p.call.endpoint == "non_model" and p.call.messages == [] and p.call.failure is None
    assert not p.unknown_endpoint


def test_unknown_endpoint_is_kept_and_flagged():
    rec = {
        "request": {"method": "POST", "url": "https://x/api/telemetry", "body": {"events": [1]}},
        "response": {"status_code": 204},
    }
    p = parse(rec)
    assert p.call.endpoint == "non_model" and p.unknown_endpoint
    assert p.call.extra["unknown_endpoint"] == "/api/telemetry"
    assert p.envelope == {"events": [1]}


# ---------------------------------------------------------------- OpenAI Chat Completions


def test_openai_stream_tool_call_fragments_by_index():
    history = [
        user("list"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "exec", "arguments": '{"command": "pwd"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "/root"},
    ]
    p = parse(openai_record(history))
    c = p.call
    assert c.endpoint == "openai_chat"
    assert c.response["content"] == [
        {"type": "thinking", "thinking": "I should run ls."},
        {"type": "text", "text": "Running."},
        {"type": "tool_use", "id": "call_1", "name": "exec", "input": {"command": "ls"}},
        {"type": "tool_use", "id": "call_2", "name": "read", "input": {"path": "a.txt"}},
    ]
    assert c.stop_reason == "tool_calls"
    assert (c.usage.input_tokens, c.usage.output_tokens, c.usage.cache_read_input_tokens) == (
        100,
        8,
        80,
    )
    assert c.rollout.prompt_token_ids == [1, 2, 3]
    assert c.rollout.output_token_ids == [11, 12, 13, 14, 15, 16, 17, 18]
    # The leading system message is the system prompt, not part of the history.
    assert c.system.startswith("You are a personal assistant running inside OpenClaw.")
    assert [m["role"] for m in c.messages] == ["user", "assistant", "user"]
    assert c.messages[1]["content"] == [
        {"type": "tool_use", "id": "call_0", "name": "exec", "input": {"command": "pwd"}}
    ]
    assert c.messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_0", "content": "/root", "is_error": False}
    ]
    assert c.tools == ["exec", "read"]
    assert p.system_raw == [{"role": "system", "content": c.system}]


def test_openai_stream_without_done_or_finish_is_truncated():
    raw = "".join(f for f in sse_frames_openai()[:5])
    c = parse(openai_record([user("x")], body_raw=raw)).call
    assert c.failure == "truncated_stream"


def sse_frames_openai():
    from test_formats_fixtures import openai_stream_with_tool_calls

    return [f + "\n\n" for f in openai_stream_with_tool_calls().split("\n\n") if f]


def test_openai_json_with_vllm_token_ids_and_token_id_logprobs():
    c = parse(openai_record([user("x")], body=openai_json_body_with_token_ids())).call
    assert c.response["content"] == [
        {"type": "thinking", "thinking": "ok"},
        {"type": "text", "text": "Done."},
    ]
    assert c.rollout.prompt_token_ids == [1, 2, 3, 4]
    assert c.rollout.output_token_ids == [9906, 13]  # from the token_id:N logprob tokens
    assert c.rollout.output_logprobs == [-0.01, -0.5]
    assert c.generated_tokens == 2


def test_choices_token_ids_win_over_logprob_tokens():
    body = openai_json_body_with_token_ids()
    body["choices"][0]["token_ids"] = [7, 8]
    assert parse(openai_record([user("x")], body=body)).call.rollout.output_token_ids == [7, 8]


def test_sglang_meta_info_logprobs():
    body = {
        "id": "x",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}
        ],
        "meta_info": {
            "prompt_tokens": 3,
            "completion_tokens": 2,
            "output_token_logprobs": [[-0.1, 42, None], [-0.2, 43, None]],
        },
    }
    c = parse(openai_record([user("x")], body=body)).call
    assert c.rollout.output_token_ids == [42, 43] and c.rollout.output_logprobs == [-0.1, -0.2]


def test_clawviz_rollout_wins_and_server_fills_gaps():
    cv = {"episode_id": "e1", "rollout": {"output_logprobs": [-1.0, -2.0], "policy_version": 41}}
    c = parse(openai_record([user("x")], body=openai_json_body_with_token_ids(), clawviz=cv)).call
    assert c.rollout.output_logprobs == [-1.0, -2.0] and c.rollout.policy_version == 41
    assert c.rollout.output_token_ids == [9906, 13]


def test_developer_message_after_history_stays_a_system_message():
    msgs = [user("a"), {"role": "developer", "content": "be brief"}]
    c = parse(openai_record(msgs)).call
    assert [m["role"] for m in c.messages] == ["user", "system"]


# ---------------------------------------------------------------- OpenAI Responses


def test_responses_json_items_grouped_into_internal_messages():
    p = parse(responses_record())
    c = p.call
    assert c.endpoint == "openai_responses"
    assert c.system == "You are Codex, based on GPT-5."
    assert [m["role"] for m in c.messages] == ["system", "user", "assistant", "user"]
    assert c.messages[2]["content"] == [
        {"type": "thinking", "thinking": "look first"},
        {"type": "tool_use", "id": "call_a", "name": "shell", "input": {"command": ["ls"]}},
    ]
    assert c.messages[3]["content"][0]["tool_use_id"] == "call_a"
    assert c.response == {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]}
    assert c.stop_reason == "completed" and c.usage.output_tokens == 7
    assert len(p.raw_messages[2]) == 2  # the reasoning and function_call items, as sent


def test_responses_sse_rebuilt():
    c = parse(responses_record(stream=True)).call
    assert c.failure is None
    assert c.response["content"] == [
        {"type": "text", "text": "Fixed."},
        {"type": "tool_use", "id": "call_b", "name": "shell", "input": {"command": ["pytest"]}},
    ]
    assert c.usage.cache_read_input_tokens == 40


def test_responses_sse_without_completed_is_truncated():
    rec = responses_record(stream=True)
    raw = rec["response"]["body_raw"]
    rec["response"]["body_raw"] = raw[: raw.index("event: response.completed")]
    assert parse(rec).call.failure == "truncated_stream"


def test_responses_string_input():
    rec = responses_record()
    rec["request"]["body"]["input"] = "hello"
    assert parse(rec).call.messages == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    ]


# ---------------------------------------------------------------- identity


def test_identity_clawviz_object_wins_and_fields_kept():
    cv = {
        "episode_id": "t0007-openclaw-a3",
        "task_id": "task_0007",
        "harness": "openclaw",
        "attempt": 3,
        "seq": 12,
        "delivered": True,
        "model_role": "strong",
        "role": "main",
    }
    p = parse(openai_record([user("x")], headers={"X-Session-Id": "other"}, clawviz=cv))
    c = p.call
    assert p.has_identity
    assert (c.episode_id, c.task_id, c.harness, c.attempt, c.seq) == (
        "t0007-openclaw-a3",
        "task_0007",
        "openclaw",
        3,
        12,
    )
    assert (c.delivered, c.model_role, c.turn_type, c.session_id) == (
        True,
        "strong",
        "main",
        "other",
    )


def test_identity_openclaw_rl_headers():
    c = parse(
        openai_record([user("x")], headers={"X-Session-Id": "sess-9", "X-Turn-Type": "side"})
    ).call
    assert (c.episode_id, c.turn_type, c.harness) == ("sess-9", "side", "openclaw")


def test_identity_claude_code_session_header():
    c = parse(claude_code_episode()[0]).call
    assert c.episode_id == SESSION and c.session_id == SESSION and c.harness == "claude-code"


def test_identity_clawgym_model_prefix():
    c = parse(
        openai_record([user("x")], model="main__task-3-17", body=openai_json_body_with_token_ids())
    ).call
    assert (c.episode_id, c.turn_type) == ("task-3-17", "main")
    assert c.model == "qwen3-4b"  # the served model, not the routing string


def test_identity_anthropic_metadata_user_id_session_part():
    meta = {"user_id": "user_ab12cd_account_0000-1111_session_9e8f7a6b-0000-4000-8000-000000000009"}
    c = parse(anthropic_record([user("x")], metadata=meta)).call
    assert c.episode_id == "9e8f7a6b-0000-4000-8000-000000000009"
    meta_json = {"user_id": json.dumps({"device_id": "d", "session_id": "s-json"})}
    assert parse(anthropic_record([user("x")], metadata=meta_json)).call.episode_id == "s-json"


def test_identity_falls_back_to_the_file():
    p = parse(anthropic_record([user("x")]))
    assert p.call.episode_id == "logs/run1" and not p.has_identity


def test_identity_precedence_header_before_model_prefix():
    c = parse(
        openai_record(
            [user("x")], model="side__from-model", headers={"X-Session-Id": "from-header"}
        )
    ).call
    assert c.episode_id == "from-header" and c.turn_type == "side"


# ---------------------------------------------------------------- cache


def test_message_cache_gives_the_same_result_as_no_cache():
    recs = claude_code_episode()
    cache = MessageCache()
    with_cache = [parse(copy.deepcopy(r), cache=cache) for r in recs]
    without = [parse(copy.deepcopy(r)) for r in recs]
    for a, b in zip(with_cache, without, strict=True):
        assert a.call.messages == b.call.messages and a.message_hashes == b.message_hashes


def test_sse_split_frames_ignores_comments_and_crlf():
    text = ': keep-alive\r\n\r\nevent: ping\r\ndata: {"type": "ping"}\r\n\r\n'
    frames = sse_mod.split_frames(text).frames
    assert [f.data for f in frames] == [{"type": "ping"}]


def test_done_inside_content_text_is_not_the_end_of_a_stream():
    from test_formats_fixtures import openai_stream_with_tool_calls

    raw = openai_stream_with_tool_calls().replace('"Running."', '"data: [DONE] Running."')
    raw = raw.replace("data: [DONE]\n\n", "")
    body = sse_mod.rebuild_openai_chat(raw)
    assert body.complete  # finish_reason was seen
    raw_cut = raw.split('"finish_reason": "tool_calls"')[0].rsplit("data:", 1)[0]
    assert not sse_mod.rebuild_openai_chat(raw_cut).complete


def test_prefix_reuse_matches_a_fresh_conversion_when_history_changes_mid_way():
    import random

    rng = random.Random(7)
    convs = {k: [user(f"start {k}")] for k in "abc"}
    records = []
    for step in range(30):
        k = rng.choice("abc")
        hist = convs[k]
        if step % 7 == 3 and len(hist) > 2:
            # Claude Code moves its cache breakpoint: an earlier message changes its raw form.
            i = rng.randrange(len(hist))
            hist[i] = {**hist[i], "content": [{"type": "text", "text": f"edited {step}"}]}
        hist.append({"role": "assistant", "content": f"reply {step}"})
        hist.append(user(f"next {step}"))
        records.append(anthropic_record(copy.deepcopy(hist)))
    cache = MessageCache(n_recent=4)
    for rec in records:
        a = parse(copy.deepcopy(rec), cache=cache)
        b = parse(copy.deepcopy(rec))
        assert a.message_hashes == b.message_hashes and a.call.messages == b.call.messages
