"""The scripted model servers (tests/harness) speak each API the way the official SDKs expect.

Each test runs a scenario against the server through the official `openai` / `anthropic` Python
SDK, streamed and not, and checks what the SDK rebuilt (text, parallel tool calls, errors and
SDK retries) and what the server logged per request (its `server.jsonl` is the ground truth the
recorded expected files are written from).
"""

from __future__ import annotations

import json

import pytest

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

from tests.harness.scenario import Scenario, ScenarioError  # noqa: E402
from tests.harness.serve import ThreadedServer  # noqa: E402
from tests.harness.toytok import chat_prompt_ids  # noqa: E402

TOOLS2 = [
    {"name": "read", "arguments": {"path": "a.txt"}},
    {"name": "bash", "arguments": {"command": "ls -la /tmp"}},
]


def _scn(steps, **kw):
    return Scenario({"name": "t", "steps": steps, **kw})


def _actions(srv):
    return [(e["step"], e["action"], e["status"]) for e in srv.entries]


# -- Anthropic Messages ----------------------------------------------------------------------


def _anth(srv, retries=2):
    return anthropic.Anthropic(base_url=srv.url, api_key="sk-test", max_retries=retries, timeout=10)


A_TOOLS = [
    {"name": n, "description": n, "input_schema": {"type": "object"}} for n in ("read", "bash")
]


def test_anthropic_text_tools_and_retry_not_streamed(tmp_path):
    log = tmp_path / "server.jsonl"
    scn = _scn(
        [
            {"name": "m1", "fail": 529, "times": 2, "text": "Hello there."},
            {"name": "m2", "text": "Reading both.", "tools": TOOLS2},
        ]
    )
    with ThreadedServer(scn, log) as srv:
        c = _anth(srv)
        msgs = [{"role": "user", "content": "hi"}]
        r = c.messages.create(model="claude-x", max_tokens=100, messages=msgs, tools=A_TOOLS)
        assert [b.text for b in r.content] == ["Hello there."]
        assert r.stop_reason == "end_turn"
        r2 = c.messages.create(model="claude-x", max_tokens=100, messages=msgs, tools=A_TOOLS)
        assert r2.stop_reason == "tool_use"
        assert [(b.type, getattr(b, "name", None)) for b in r2.content] == [
            ("text", None),
            ("tool_use", "read"),
            ("tool_use", "bash"),
        ]
        assert r2.content[2].input == {"command": "ls -la /tmp"}
        assert _actions(srv) == [
            ("m1", "529", 529),
            ("m1", "529", 529),
            ("m1", "ok", 200),
            ("m2", "tool", 200),
        ]
        # the SDK's own retries count up in x-stainless-retry-count
        assert [e["headers"]["x-stainless-retry-count"] for e in srv.entries[:3]] == [
            "0",
            "1",
            "2",
        ]
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["i"] for x in lines] == [1, 2, 3, 4]


def test_anthropic_streamed_event_sequence_and_tool_json():
    scn = _scn([{"name": "m1", "text": "Let me look at it now.", "tools": TOOLS2}])
    with ThreadedServer(scn) as srv:
        c = _anth(srv)
        with c.messages.stream(
            model="claude-x",
            max_tokens=100,
            messages=[{"role": "user", "content": "go"}],
            tools=A_TOOLS,
        ) as s:
            kinds = [e.type for e in s]
            final = s.get_final_message()
        assert kinds[0] == "message_start"
        assert "content_block_start" in kinds and "content_block_stop" in kinds
        assert kinds[-1] == "message_stop" and "message_delta" in kinds
        assert final.content[0].text == "Let me look at it now."
        assert [b.input for b in final.content[1:]] == [
            {"path": "a.txt"},
            {"command": "ls -la /tmp"},
        ]
        assert final.stop_reason == "tool_use"
        assert final.usage.output_tokens > 0


def test_anthropic_overflow_count_tokens_models_and_summary():
    scn = _scn(
        [{"name": "m1", "overflow": True}, {"name": "m2", "text": "continued"}],
        summary="SUMMARY-TEXT",
    )
    with ThreadedServer(scn) as srv:
        c = _anth(srv, retries=0)
        msgs = [{"role": "user", "content": "hi"}]
        with pytest.raises(anthropic.BadRequestError) as ei:
            c.messages.create(model="m", max_tokens=10, messages=msgs)
        assert ei.value.status_code == 400
        assert "prompt is too long" in ei.value.body["error"]["message"]
        n = c.messages.count_tokens(model="m", messages=msgs)
        assert n.input_tokens > 0
        assert [m.id for m in c.models.list()] == ["scripted-model"]
        # Claude Code compaction prompt: a summary, no step used
        summ = msgs + [
            {"role": "assistant", "content": "ok"},
            {
                "role": "user",
                "content": "Your task is to create a detailed summary of the conversation so far",
            },
        ]
        r = c.messages.create(model="m", max_tokens=10, messages=summ)
        assert r.content[0].text == "SUMMARY-TEXT"
        w = c.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "Warmup"}]
        )
        assert w.content[0].text
        r = c.messages.create(model="m", max_tokens=10, messages=msgs)
        assert r.content[0].text == "continued"
        assert [e["action"] for e in srv.entries] == [
            "overflow",
            "utility",
            "utility",
            "summary",
            "utility",
            "ok",
        ]


def test_anthropic_stream_error_and_cut_then_whole_reply():
    scn = _scn(
        [
            {"name": "m1", "text": "this one fails half way through", "stream_error": True},
            {"name": "m2", "text": "this one is cut off in the middle", "cut": True},
        ]
    )
    with ThreadedServer(scn) as srv:
        c = _anth(srv, retries=0)
        msgs = [{"role": "user", "content": "hi"}]

        def final():
            with c.messages.stream(model="m", max_tokens=10, messages=msgs) as s:
                return s.get_final_message()

        with pytest.raises(anthropic.APIStatusError) as ei:
            final()
        assert "Overloaded" in str(ei.value)
        assert final().content[0].text == "this one fails half way through"
        cut_errors = []
        try:
            final()
        except Exception as e:  # what the SDK raises on a dropped stream (httpx or SDK error)
            cut_errors.append(type(e).__name__)
        assert cut_errors, "a cut stream must not give a final message"
        assert final().content[0].text == "this one is cut off in the middle"
        assert [(e["step"], e["action"]) for e in srv.entries] == [
            ("m1", "stream_error"),
            ("m1", "ok"),
            ("m2", "cut"),
            ("m2", "ok"),
        ]


# -- OpenAI Chat Completions ------------------------------------------------------------------


def _oai(srv, retries=2):
    return openai.OpenAI(
        base_url=srv.url + "/v1", api_key="sk-test", max_retries=retries, timeout=10
    )


O_TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("read", "bash")
]


def test_chat_not_streamed_token_ids_logprobs_and_500_retry():
    scn = _scn(
        [
            {"name": "m1", "fail": 500, "text": "Hello there."},
            {"name": "m2", "tools": TOOLS2},
        ]
    )
    with ThreadedServer(scn) as srv:
        c = _oai(srv)
        msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
        r = c.chat.completions.create(
            model="m", messages=msgs, logprobs=True, extra_body={"return_token_ids": True}
        )
        assert r.choices[0].message.content == "Hello there."
        d = r.model_dump()
        assert d["prompt_token_ids"] == chat_prompt_ids(msgs)
        out_ids = d["choices"][0]["token_ids"]
        assert len(r.choices[0].logprobs.content) == len(out_ids)
        assert "".join(t.token for t in r.choices[0].logprobs.content[:-1]) == "Hello there."
        msgs2 = msgs + [
            {"role": "assistant", "content": "Hello there."},
            {"role": "user", "content": "go"},
        ]
        r2 = c.chat.completions.create(model="m", messages=msgs2, tools=O_TOOLS)
        # token ids agree across calls: prompt 2 = prompt 1 + output 1 + the new user turn
        p2 = r2.model_dump()["prompt_token_ids"]
        assert p2[: len(d["prompt_token_ids"]) + len(out_ids)] == d["prompt_token_ids"] + out_ids
        calls = r2.choices[0].message.tool_calls
        assert r2.choices[0].finish_reason == "tool_calls"
        assert [(t.function.name, json.loads(t.function.arguments)) for t in calls] == [
            ("read", {"path": "a.txt"}),
            ("bash", {"command": "ls -la /tmp"}),
        ]
        assert _actions(srv) == [("m1", "500", 500), ("m1", "ok", 200), ("m2", "tool", 200)]


def test_chat_streamed_parallel_tools_usage_and_token_ids():
    scn = _scn([{"name": "m1", "text": "Both at once.", "tools": TOOLS2}])
    with ThreadedServer(scn) as srv:
        c = _oai(srv)
        msgs = [{"role": "user", "content": "hi"}]
        stream = c.chat.completions.create(
            model="m",
            messages=msgs,
            tools=O_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
            logprobs=True,
            extra_body={"return_tokens_as_token_ids": True},
        )
        text, args, names, ids, finish, usage, lps = "", {}, {}, [], None, None, []
        prompt_ids = None
        for ch in stream:
            dd = ch.model_dump()
            prompt_ids = prompt_ids or dd.get("prompt_token_ids")
            if ch.usage:
                usage = ch.usage
            for choice in dd["choices"]:
                ids += choice.get("token_ids") or []
                lps += (choice.get("logprobs") or {}).get("content") or []
                delta = choice["delta"]
                text += delta.get("content") or ""
                for tc in delta.get("tool_calls") or []:
                    if tc.get("id"):
                        names[tc["index"]] = tc["function"]["name"]
                    args[tc["index"]] = args.get(tc["index"], "") + tc["function"]["arguments"]
                finish = choice["finish_reason"] or finish
        assert text == "Both at once."
        assert names == {0: "read", 1: "bash"}
        assert {k: json.loads(v) for k, v in args.items()} == {
            0: {"path": "a.txt"},
            1: {"command": "ls -la /tmp"},
        }
        assert finish == "tool_calls"
        assert usage.completion_tokens == len(ids)
        assert prompt_ids == chat_prompt_ids(msgs)
        assert [lp["token"] for lp in lps] == [f"token_id:{i}" for i in ids]


def test_chat_overflow_and_429_shapes():
    scn = _scn(
        [{"name": "m1", "fail": 429, "times": 1, "text": "ok"}, {"name": "m2", "overflow": True}]
    )
    with ThreadedServer(scn) as srv:
        c = _oai(srv, retries=0)
        msgs = [{"role": "user", "content": "hi"}]
        with pytest.raises(openai.RateLimitError):
            c.chat.completions.create(model="m", messages=msgs)
        assert (
            c.chat.completions.create(model="m", messages=msgs).choices[0].message.content == "ok"
        )
        with pytest.raises(openai.BadRequestError) as ei:
            c.chat.completions.create(model="m", messages=msgs, stream=True)
        assert ei.value.code == "context_length_exceeded"
        assert [m.id for m in c.models.list()] == ["scripted-model"]


# -- OpenAI Responses --------------------------------------------------------------------------


R_TOOLS = [
    {"type": "function", "name": n, "parameters": {"type": "object"}} for n in ("read", "bash")
]


def test_responses_streamed_events_and_function_calls():
    scn = _scn(
        [
            {"name": "m1", "text": "Two calls follow.", "tools": TOOLS2},
            {"name": "m2", "text": "done"},
        ]
    )
    with ThreadedServer(scn) as srv:
        c = _oai(srv)
        with c.responses.stream(model="m", input="hi", tools=R_TOOLS) as s:
            kinds = [e.type for e in s]
            final = s.get_final_response()
        assert kinds[:2] == ["response.created", "response.in_progress"]
        assert kinds[-1] == "response.completed"
        assert "response.output_text.delta" in kinds
        assert "response.function_call_arguments.delta" in kinds
        assert final.output_text == "Two calls follow."
        fcs = [o for o in final.output if o.type == "function_call"]
        assert [(f.name, json.loads(f.arguments), f.call_id) for f in fcs] == [
            ("read", {"path": "a.txt"}, "m1_0"),
            ("bash", {"command": "ls -la /tmp"}, "m1_1"),
        ]
        assert final.usage.total_tokens > 0
        r = c.responses.create(
            model="m",
            input=[
                {"role": "user", "content": "hi"},
                {"type": "function_call_output", "call_id": "m1_0", "output": "x"},
            ],
        )
        assert r.output_text == "done"
        assert [e["last_user"] for e in srv.entries] == ["hi", ""]


def test_responses_codex_compaction_and_match_steps():
    scn = _scn(
        [
            {"name": "sub", "match": {"first_user_contains": "SUBTASK"}, "text": "sub result"},
            {"name": "m1", "text": "main", "usage": {"input_tokens": 999999}},
        ],
        summary="CODEX-SUMMARY",
    )
    with ThreadedServer(scn) as srv:
        c = _oai(srv, retries=0)
        r = c.responses.create(model="m", input="main task")
        assert r.output_text == "main" and r.usage.input_tokens == 999999
        r = c.responses.create(model="m", input="do SUBTASK now")
        assert r.output_text == "sub result"
        comp = c.responses.create(
            model="m",
            input=[
                {"role": "user", "content": "main task"},
                {
                    "role": "user",
                    "content": "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a ...",
                },
            ],
        )
        assert comp.output_text == "CODEX-SUMMARY"
        assert r.output_text == "sub result"
        assert [(e["step"], e["action"]) for e in srv.entries] == [
            ("m1", "ok"),
            ("sub", "ok"),
            (None, "summary"),
        ]


def test_bad_scenarios_name_the_step(tmp_path):
    with pytest.raises(ScenarioError, match=r"steps\[0\].*fail must be"):
        Scenario({"steps": [{"name": "a", "fail": 503}]})
    with pytest.raises(ScenarioError, match="does nothing"):
        Scenario({"steps": [{"name": "a"}]})
    with pytest.raises(ScenarioError, match="repeated"):
        Scenario({"steps": [{"name": "a", "text": "x"}, {"name": "a", "text": "y"}]})
    p = tmp_path / "s.json"
    p.write_text('{"steps": [\n oops]}')
    with pytest.raises(ScenarioError, match=r"s\.json: line 2"):
        Scenario.load(p)
