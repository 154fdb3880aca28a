"""Hand-made exchange-log records in the real wire shapes, shared by the ingest/store/CLI tests."""

from __future__ import annotations

import json
from typing import Any

CC_SYSTEM = [
    {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.0.31"},
    {
        "type": "text",
        "text": "You are Claude Code, Anthropic's official CLI for Claude.",
        "cache_control": {"type": "ephemeral"},
    },
]
CC_TOOLS = [
    {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}},
    {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}},
]
SESSION = "3f1c0b0e-1111-4a2b-9c3d-000000000001"


def sse(events: list[tuple[str, dict[str, Any]]]) -> str:
    """An SSE body from (event name, data) pairs."""
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def anthropic_tool_use_sse(text: str = "Let me look.", cut_after: int | None = None) -> str:
    """A Claude Code style streamed reply: thinking, text, then a Bash tool_use in fragments."""
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_01A",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [],
                    "stop_reason": None,
                    "usage": {
                        "input_tokens": 3,
                        "cache_creation_input_tokens": 2952,
                        "cache_read_input_tokens": 14127,
                        "output_tokens": 1,
                    },
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Need to list "},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "files."},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "EqQB"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": text[:4]},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "text_delta", "text": text[4:]},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_01B",
                    "name": "Bash",
                    "input": {},
                },
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '{"comma'},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": 'nd": "ls -la"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 190},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    if cut_after is not None:
        events = events[:cut_after]
    return sse(events)


def anthropic_record(
    messages: list[dict[str, Any]],
    *,
    body_raw: str | None = None,
    body: dict[str, Any] | None = None,
    status: int = 200,
    ts: float = 1763542013.0,
    headers: dict[str, str] | None = None,
    clawviz: dict[str, Any] | None = None,
    url: str = "https://api.anthropic.com/v1/messages?beta=true",
    response: Any = "default",
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One claude-trace line for an Anthropic Messages call."""
    req_headers = {
        "anthropic-version": "2023-06-01",
        "x-api-key": "sk-ant-api03-SECRETSECRET",
        "authorization": "Bearer sk-live-SECRET",
        "user-agent": "claude-cli/2.0.31 (external, cli)",
    }
    req_headers.update(headers or {})
    req_body: dict[str, Any] = {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32000,
        "stream": True,
        "system": CC_SYSTEM,
        "messages": messages,
        "tools": CC_TOOLS,
    }
    if metadata is not None:
        req_body["metadata"] = metadata
    rec: dict[str, Any] = {
        "request": {
            "timestamp": ts,
            "method": "POST",
            "url": url,
            "headers": req_headers,
            "body": req_body,
        },
        "logged_at": "2025-11-19T08:46:54.078Z",
    }
    if response == "default":
        resp: dict[str, Any] = {
            "timestamp": ts + 0.7,
            "status_code": status,
            "headers": {
                "content-type": "text/event-stream" if body is None else "application/json"
            },
        }
        if body is not None:
            resp["body"] = body
        else:
            resp["body_raw"] = body_raw if body_raw is not None else anthropic_tool_use_sse()
        rec["response"] = resp
    else:
        rec["response"] = response
    if clawviz is not None:
        rec["clawviz"] = clawviz
    return rec


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant_tool_use(text: str = "Let me look.") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Need to list files.", "signature": "EqQB"},
            {"type": "text", "text": text},
            {"type": "tool_use", "id": "toolu_01B", "name": "Bash", "input": {"command": "ls -la"}},
        ],
    }


def tool_result(text: str = "a.txt\nb.txt") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01B",
                "content": [{"type": "text", "text": text}],
                "is_error": False,
                "cache_control": {"type": "ephemeral"},
            }
        ],
    }


def claude_code_episode(session: str = SESSION) -> list[dict[str, Any]]:
    """Three calls of one Claude Code session; each re-sends the whole history."""
    h = {"x-claude-code-session-id": session}
    m1 = [user("list the files")]
    m2 = m1 + [assistant_tool_use(), tool_result()]
    m3 = m2 + [{"role": "assistant", "content": "Two files."}, user("thanks")]
    done = {
        "id": "msg_01C",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "You're welcome."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return [
        anthropic_record(m1, headers=h, ts=100.0),
        anthropic_record(
            m2,
            headers=h,
            ts=101.0,
            body={**done, "content": [{"type": "text", "text": "Two files."}]},
        ),
        anthropic_record(m3, headers=h, ts=102.0, body=done),
    ]


OPENCLAW_SYSTEM = "You are a personal assistant running inside OpenClaw.\n## Tooling\nexec, read"


def openai_stream_with_tool_calls() -> str:
    """Chat Completions chunks: reasoning, content, two tool calls in fragments by index."""
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "qwen3-4b",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        c = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, **extra}]}
        return f"data: {json.dumps(c)}\n\n"

    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 8,
        "total_tokens": 108,
        "prompt_tokens_details": {"cached_tokens": 80},
    }
    frames = [
        f"data: {json.dumps({**base, 'prompt_token_ids': [1, 2, 3], 'choices': []})}\n\n",
        chunk({"role": "assistant", "reasoning_content": "I should "}, token_ids=[11]),
        chunk({"reasoning_content": "run ls."}, token_ids=[12]),
        chunk({"content": "Running."}, token_ids=[13]),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "exec", "arguments": ""},
                    }
                ]
            },
            token_ids=[14],
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"comm'}}]}, token_ids=[15]),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path"'},
                    }
                ]
            },
            token_ids=[16],
        ),
        chunk(
            {"tool_calls": [{"index": 0, "function": {"arguments": 'and": "ls"}'}}]}, token_ids=[17]
        ),
        chunk(
            {"tool_calls": [{"index": 1, "function": {"arguments": ': "a.txt"}'}}]}, token_ids=[18]
        ),
        chunk({}, finish="tool_calls"),
        f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n",
        "data: [DONE]\n\n",
    ]
    return "".join(frames)


def openai_record(
    messages: list[dict[str, Any]],
    *,
    body_raw: str | None = None,
    body: dict[str, Any] | None = None,
    model: str = "qwen3-4b",
    headers: dict[str, str] | None = None,
    ts: float = 200.0,
    status: int = 200,
    clawviz: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One exchange line of an OpenAI Chat Completions call (OpenClaw style)."""
    rec: dict[str, Any] = {
        "request": {
            "timestamp": ts,
            "method": "POST",
            "url": "http://127.0.0.1:8000/v1/chat/completions",
            "headers": {"content-type": "application/json", **(headers or {})},
            "body": {
                "model": model,
                "stream": body is None,
                "messages": [{"role": "system", "content": OPENCLAW_SYSTEM}] + messages,
                "tools": [
                    {"type": "function", "function": {"name": "exec", "parameters": {}}},
                    {"type": "function", "function": {"name": "read", "parameters": {}}},
                ],
                "logprobs": True,
                "top_logprobs": 1,
            },
        },
        "response": {
            "timestamp": ts + 1.5,
            "status_code": status,
            "headers": {
                "content-type": "application/json" if body is not None else "text/event-stream"
            },
        },
    }
    if body is not None:
        rec["response"]["body"] = body
    else:
        rec["response"]["body_raw"] = (
            body_raw if body_raw is not None else openai_stream_with_tool_calls()
        )
    if clawviz is not None:
        rec["clawviz"] = clawviz
    return rec


def openai_json_body_with_token_ids() -> dict[str, Any]:
    """A vLLM non-streamed reply with return_token_ids and token_id:N logprob tokens."""
    return {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "model": "qwen3-4b",
        "prompt_token_ids": [1, 2, 3, 4],
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Done.", "reasoning_content": "ok"},
                "logprobs": {
                    "content": [
                        {"token": "token_id:9906", "logprob": -0.01, "bytes": [68]},
                        {"token": "token_id:13", "logprob": -0.5, "bytes": [46]},
                    ]
                },
            }
        ],
        "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
    }


def responses_record(*, stream: bool = False, ts: float = 300.0) -> dict[str, Any]:
    """A Codex style Responses API call: instructions, input items, output items."""
    body_req = {
        "model": "gpt-5-codex",
        "instructions": "You are Codex, based on GPT-5.",
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "<permissions>"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix the test"}],
            },
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "look first"}],
                "encrypted_content": "gAAA",
            },
            {
                "type": "function_call",
                "call_id": "call_a",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
            },
            {"type": "function_call_output", "call_id": "call_a", "output": "a.py"},
        ],
        "tools": [{"type": "function", "name": "shell", "parameters": {}}],
        "stream": stream,
    }
    out_items = [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Fixed."}],
        },
    ]
    rec: dict[str, Any] = {
        "request": {
            "timestamp": ts,
            "method": "POST",
            "url": "https://api.openai.com/v1/responses",
            "headers": {"session_id": "codex-sess-1", "originator": "codex_cli_rs"},
            "body": body_req,
        },
        "response": {"timestamp": ts + 2, "status_code": 200, "headers": {}},
    }
    if stream:
        events = [
            (
                "response.created",
                {
                    "type": "response.created",
                    "response": {"id": "resp_1", "status": "in_progress", "model": "gpt-5-codex"},
                },
            ),
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {"type": "message", "role": "assistant", "content": []},
                },
            ),
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": "Fix",
                },
            ),
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": "ed.",
                },
            ),
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": 1,
                    "item": {
                        "type": "function_call",
                        "call_id": "call_b",
                        "name": "shell",
                        "arguments": "",
                    },
                },
            ),
            (
                "response.function_call_arguments.delta",
                {
                    "type": "response.function_call_arguments.delta",
                    "output_index": 1,
                    "delta": '{"command":',
                },
            ),
            (
                "response.function_call_arguments.delta",
                {
                    "type": "response.function_call_arguments.delta",
                    "output_index": 1,
                    "delta": '["pytest"]}',
                },
            ),
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {
                        "id": "resp_1",
                        "status": "completed",
                        "model": "gpt-5-codex",
                        "usage": {
                            "input_tokens": 50,
                            "output_tokens": 7,
                            "input_tokens_details": {"cached_tokens": 40},
                        },
                    },
                },
            ),
        ]
        rec["response"]["body_raw"] = sse(events)
    else:
        rec["response"]["body"] = {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "model": "gpt-5-codex",
            "output": out_items,
            "usage": {"input_tokens": 50, "output_tokens": 7, "total_tokens": 57},
        }
    return rec


def jsonl(records: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)
