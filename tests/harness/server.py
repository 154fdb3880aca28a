"""Scripted model server: OpenAI Chat Completions, Anthropic Messages and OpenAI Responses.

One aiohttp app serves all three (by URL path, with or without a `/v1` prefix, under any
prefix such as a proxy's `/ep/<id>/`). Every request is decided by the `Scenario`
(`scenario.py`) and logged, one JSON line per request, to `server.jsonl` *before* the answer is
sent: index, method, path, protocol, stream, step, attempt, action, status.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from aiohttp import web

from clawviz.ingest.sse import DONE, encode_frame

from . import toytok
from .scenario import Decision, Scenario, View, user_text_of

BASE_TIME = 1767225600  # fixed `created` base so answers do not depend on the clock
# the request's index in server.jsonl, for the `x-scripted-request` answer header
REQUEST_INDEX = web.RequestKey("scripted_i", int) if hasattr(web, "RequestKey") else "scripted_i"
LOGGED_HEADERS = (
    "x-stainless-retry-count",
    "session_id",
    "x-codex-turn-metadata",
    "x-claude-code-session-id",
    "x-session-id",
    "x-turn-type",
)

# -- request views ---------------------------------------------------------------------------


def _protocol(path: str) -> str:
    p = path.rstrip("/")
    if p.endswith("/chat/completions"):
        return "chat"
    if p.endswith("/messages/count_tokens"):
        return "count_tokens"
    if p.endswith("/messages"):
        return "anthropic"
    if p.endswith("/responses") or p.endswith("/responses/compact"):
        return "responses"
    if p.endswith("/models") or "/models/" in p:
        return "models"
    return "unknown"


def make_view(path: str, method: str, headers: dict[str, str], body: Any, raw: str) -> View:
    proto = _protocol(path)
    system, users, last_user, has_tools = "", [], "", False
    last_out = ""
    outs: list[str] = []
    if isinstance(body, dict):
        has_tools = bool(body.get("tools"))
        if proto in ("anthropic", "count_tokens"):
            s = body.get("system")
            system = s if isinstance(s, str) else user_text_of(s)
            msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        elif proto == "chat":
            msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
            system = "\n".join(
                user_text_of(m.get("content")) for m in msgs if m.get("role") in ("system",)
            )
            if not system:
                system = "\n".join(
                    user_text_of(m.get("content")) for m in msgs if m.get("role") == "developer"
                )
        else:
            system = str(body.get("instructions") or "")
            inp = body.get("input")
            if isinstance(inp, str):
                inp = [{"role": "user", "content": inp}]
            msgs = [
                m
                for m in inp or []
                if isinstance(m, dict) and m.get("type", "message") == "message"
            ]
        last_out = _last_tool_output(proto, body)
        outs = _tool_outputs(proto, body)
        last_role_user = None
        for m in msgs:
            if m.get("role") != "user":
                continue
            t = user_text_of(m.get("content"))
            last_role_user = t
            if t:
                users.append(t)
        last_user = last_role_user or ""
        if proto == "responses":
            # Codex: the last *item* decides (a function_call_output after the user text).
            items = body.get("input") if isinstance(body.get("input"), list) else []
            if items and not (
                isinstance(items[-1], dict)
                and items[-1].get("role") == "user"
                and items[-1].get("type", "message") == "message"
            ):
                last_user = ""
    return View(
        path=path,
        method=method,
        system=system,
        user_texts=users,
        last_user=last_user,
        has_tools=has_tools,
        headers={k.lower(): v for k, v in headers.items()},
        raw=raw,
        stream=bool(isinstance(body, dict) and body.get("stream")),
        model=str(body.get("model", "")) if isinstance(body, dict) else "",
        last_tool_output=last_out,
        tool_outputs=outs,
    )


def _tool_outputs(proto: str, body: dict[str, Any]) -> list[str]:
    """Text of every tool result of the request, in order (templating `{{output[k].KEY}}`)."""
    if proto == "responses":
        items = body.get("input") if isinstance(body.get("input"), list) else []
        return [
            o if isinstance(o := i.get("output"), str) else user_text_of(o)
            for i in items
            if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
    out: list[str] = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if proto == "chat" and m.get("role") == "tool":
            out.append(user_text_of(m.get("content")))
        elif proto == "anthropic" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    c = b.get("content")
                    out.append(c if isinstance(c, str) else user_text_of(c))
    return out


def _last_tool_output(proto: str, body: dict[str, Any]) -> str:
    if proto == "responses":
        items = body.get("input") if isinstance(body.get("input"), list) else []
        outs = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if not outs:
            return ""
        out = outs[-1].get("output")
        return out if isinstance(out, str) else user_text_of(out)
    msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    for m in reversed(msgs):
        if proto == "chat" and m.get("role") == "tool":
            return user_text_of(m.get("content"))
        if proto == "anthropic" and isinstance(m.get("content"), list):
            for b in reversed(m["content"]):
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    c = b.get("content")
                    return c if isinstance(c, str) else user_text_of(c)
    return ""


# -- error bodies in each API's real shape ----------------------------------------------------


def _error(proto: str, d: Decision) -> tuple[int, dict[str, Any], dict[str, str]]:
    headers = {"retry-after": "0", "retry-after-ms": "20"}
    if proto in ("anthropic", "count_tokens"):
        kind, msg = {
            500: ("api_error", "Internal server error"),
            529: ("overloaded_error", "Overloaded"),
            429: ("rate_limit_error", "Number of request tokens has exceeded your rate limit."),
            400: ("invalid_request_error", "prompt is too long: 213462 tokens > 200000 maximum"),
        }[d.status]
        body = {"type": "error", "error": {"type": kind, "message": msg}}
        headers["request-id"] = f"req_scripted_{d.step}_{d.attempt}"
        return d.status, body, headers
    code, kind, msg = {
        500: (None, "server_error", "The server had an error while processing your request."),
        529: (None, "server_error", "The engine is currently overloaded, please try again."),
        429: ("rate_limit_exceeded", "requests", "Rate limit reached. Please try again."),
        400: (
            "context_length_exceeded",
            "invalid_request_error",
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 131072 tokens. Please reduce the length of the messages.",
        ),
    }[d.status]
    if proto == "responses" and d.status == 400:
        msg = "Your input exceeds the context window of this model. Please adjust your input."
    err = {"message": msg, "type": kind, "param": "messages" if d.status == 400 else None}
    err["code"] = code
    return d.status, {"error": err}, headers


# -- reply content ----------------------------------------------------------------------------


def _chunks(text: str, n: int = 4) -> list[str]:
    ps = toytok.pieces(text)
    return ["".join(ps[i : i + n]) for i in range(0, len(ps), n)] or [""]


def _args_json(t: dict[str, Any]) -> str:
    a = t.get("arguments", {})
    return a if isinstance(a, str) else json.dumps(a, separators=(",", ":"))


class ScriptedServer:
    def __init__(
        self, scenario: Scenario, log_path: str | Path | None = None, protocol: str = "any"
    ):
        self.scenario = scenario
        self.protocol = protocol
        self.log_path = Path(log_path) if log_path else None
        self.count = 0
        self.entries: list[dict[str, Any]] = []
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.write_text("")
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        self.app.on_response_prepare.append(self._tag)
        self.app.router.add_route("*", "/{tail:.*}", self.handle)

    async def _tag(self, request: web.Request, response: web.StreamResponse) -> None:
        if REQUEST_INDEX in request:
            response.headers["x-scripted-request"] = str(request[REQUEST_INDEX])

    def _log(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)
        if self.log_path:
            with self.log_path.open("a") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Decide, log, answer. Every answer carries `x-scripted-request: <i>` (its log index),
        so a recorded exchange can be paired with the server's own log line."""
        raw = await request.text() if request.can_read_body else ""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = None
        path = request.path
        proto = _protocol(path)
        view = make_view(path, request.method, dict(request.headers), body, raw)
        self.count += 1
        idx = self.count
        request[REQUEST_INDEX] = idx
        wrong = self.protocol != "any" and proto in ("chat", "anthropic", "responses")
        wrong = wrong and proto != self.protocol
        if body is None or proto == "unknown" or wrong:
            d = Decision("bad_request", status=400 if body is None else 404)
        else:
            d = self.scenario.decide(view)
            if d.action == "utility" and proto == "models":
                d.text = "models"
        entry = {
            "i": idx,
            "method": request.method,
            "path": path,
            "protocol": proto,
            "stream": view.stream,
            "step": d.step,
            "attempt": d.attempt,
            "action": d.action,
            "status": d.status,
            "last_user": view.last_user[:160],
            "tool_calls": [t["id"] for t in d.tools],
        }
        hs = {h: request.headers[h] for h in LOGGED_HEADERS if h in request.headers}
        if hs:
            entry["headers"] = hs
        self._log(entry)
        if d.action == "bad_request":
            return web.json_response(
                {"error": {"message": f"scripted server: cannot answer {path}"}}, status=d.status
            )
        if d.status != 200:
            status, ebody, eh = _error(proto, d)
            return web.json_response(ebody, status=status, headers=eh)
        if d.action == "hang":
            await asyncio.sleep(d.hang or 0)
            _drop(request)
            return web.Response(status=504)
        if proto == "models":
            return web.json_response(self._models())
        if proto == "count_tokens":
            return web.json_response({"input_tokens": toytok.count_tokens(body)})
        if d.cut and not view.stream:
            _drop(request)
            return web.Response(status=502)
        rid = f"{idx:04d}"
        if proto == "anthropic":
            return await self._anthropic(request, body, d, rid, view.stream)
        if proto == "chat":
            return await self._chat(request, body, d, rid, view.stream)
        return await self._responses(request, body, d, rid, view.stream)

    def _models(self) -> dict[str, Any]:
        data = [
            {
                "id": m,
                "object": "model",
                "type": "model",
                "display_name": m,
                "created": BASE_TIME,
                "created_at": "2026-01-01T00:00:00Z",
                "owned_by": "scripted",
            }
            for m in self.scenario.model_ids
        ]
        return {
            "object": "list",
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }

    # -- Anthropic Messages -------------------------------------------------------------------
    async def _anthropic(self, request, body, d: Decision, rid: str, stream: bool):
        model = body.get("model", "scripted-model")
        usage_in = (d.usage or {}).get("input_tokens", toytok.count_tokens(body))
        blocks: list[dict[str, Any]] = []
        if d.text is not None:
            blocks.append({"type": "text", "text": d.text})
        for t in d.tools:
            args = t.get("arguments", {})
            if isinstance(args, str):
                args = json.loads(args)
            blocks.append({"type": "tool_use", "id": t["id"], "name": t["name"], "input": args})
        out_tokens = (d.usage or {}).get("output_tokens", max(1, toytok.count_tokens(blocks)))
        stop = d.stop_reason or ("tool_use" if d.tools else "end_turn")
        usage = {
            "input_tokens": usage_in,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": out_tokens,
        }
        msg = {
            "id": f"msg_scripted{rid}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not stream:
            return web.json_response(msg, headers={"request-id": f"req_scripted{rid}"})
        events: list[tuple[str, dict[str, Any]]] = []
        start = dict(msg, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
        events.append(("message_start", {"type": "message_start", "message": start}))
        events.append(("ping", {"type": "ping"}))
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                cb = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": c} for c in _chunks(b["text"])]
            else:
                cb = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                js = json.dumps(b["input"], separators=(",", ":"))
                parts = [js[k : k + 12] for k in range(0, len(js), 12)] or [""]
                deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
                    {"type": "input_json_delta", "partial_json": p} for p in parts
                ]
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": cb},
                )
            )
            for dl in deltas:
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": i, "delta": dl},
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": out_tokens},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        frames = [encode_frame(p, e, json.dumps) for e, p in events]
        if d.stream_error:
            err = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            frames = frames[: max(3, len(frames) // 2)] + [encode_frame(err, "error", json.dumps)]
        return await self._stream(request, frames, d.cut, {"request-id": f"req_scripted{rid}"})

    # -- OpenAI Chat Completions (vLLM-style token ids) ---------------------------------------
    async def _chat(self, request, body, d: Decision, rid: str, stream: bool):
        model = body.get("model", "scripted-model")
        messages = body.get("messages") or []
        prompt_ids = toytok.chat_prompt_ids(messages)
        calls = [(t["name"], _args_json(t)) for t in d.tools]
        out_ids = toytok.assistant_body_ids(d.text, calls)
        out_pieces = toytok.pieces(d.text or "")
        for name, args in calls:
            out_pieces += toytok.pieces(toytok.tool_call_text(name, args))
        out_pieces.append("<|end|>")
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        want_lp = bool(body.get("logprobs"))
        top_n = int(body.get("top_logprobs") or 0)

        def lp_entry(k: int) -> dict[str, Any]:
            tok = f"token_id:{out_ids[k]}" if as_ids else out_pieces[k]
            lp = toytok.logprob(k)
            top = [{"token": tok, "logprob": lp, "bytes": list(tok.encode())}][:top_n]
            return {"token": tok, "logprob": lp, "bytes": list(tok.encode()), "top_logprobs": top}

        usage_in = (d.usage or {}).get("input_tokens", len(prompt_ids))
        usage_out = (d.usage or {}).get("output_tokens", len(out_ids))
        usage = {
            "prompt_tokens": usage_in,
            "completion_tokens": usage_out,
            "total_tokens": usage_in + usage_out,
        }
        finish = d.stop_reason or ("tool_calls" if d.tools else "stop")
        tool_calls = [
            {"id": t["id"], "type": "function", "function": {"name": n, "arguments": a}}
            for t, (n, a) in zip(d.tools, calls, strict=True)
        ]
        cid = f"chatcmpl-scripted{rid}"
        created = BASE_TIME + int(rid)
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": d.text}
            if tool_calls:
                message["tool_calls"] = tool_calls
            choice = {
                "index": 0,
                "message": message,
                "logprobs": {"content": [lp_entry(k) for k in range(len(out_ids))]}
                if want_lp
                else None,
                "finish_reason": finish,
                "token_ids": out_ids,
            }
            return web.json_response(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                    "usage": usage,
                    "prompt_token_ids": prompt_ids,
                }
            )
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
        chunks: list[dict[str, Any]] = []
        pos = 0

        def choice_chunk(delta, n_tokens, finish_reason=None):
            nonlocal pos
            ch: dict[str, Any] = {
                "index": 0,
                "delta": delta,
                "logprobs": {"content": [lp_entry(k) for k in range(pos, pos + n_tokens)]}
                if want_lp and n_tokens
                else None,
                "finish_reason": finish_reason,
                "token_ids": out_ids[pos : pos + n_tokens],
            }
            pos += n_tokens
            return dict(base, choices=[ch])

        first = choice_chunk({"role": "assistant", "content": ""}, 0)
        first["prompt_token_ids"] = prompt_ids
        chunks.append(first)
        for c in _chunks(d.text or "") if d.text else []:
            chunks.append(choice_chunk({"content": c}, len(toytok.pieces(c))))
        for k, (t, (name, args)) in enumerate(zip(d.tools, calls, strict=True)):
            head = {
                "tool_calls": [
                    {
                        "index": k,
                        "id": t["id"],
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
            n_call = len(toytok.pieces(toytok.tool_call_text(name, args)))
            chunks.append(choice_chunk(head, 0))
            parts = [args[j : j + 12] for j in range(0, len(args), 12)] or [""]
            for j, p in enumerate(parts):
                n = n_call if j == len(parts) - 1 else 0
                chunks.append(
                    choice_chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]}, n)
                )
        chunks.append(choice_chunk({}, len(out_ids) - pos, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append(dict(base, choices=[], usage=usage))
        frames = [encode_frame(c, dumps=json.dumps) for c in chunks] + [encode_frame(DONE)]
        if d.stream_error:
            err = {"error": {"message": "The server had an error.", "type": "server_error"}}
            frames = frames[: max(2, len(frames) // 2)] + [encode_frame(err, dumps=json.dumps)]
        return await self._stream(request, frames, d.cut, {})

    # -- OpenAI Responses (as Codex consumes it) ------------------------------------------------
    async def _responses(self, request, body, d: Decision, rid: str, stream: bool):
        model = body.get("model", "scripted-model")
        resp_id = f"resp_scripted{rid}"
        items: list[dict[str, Any]] = []
        if d.text is not None:
            items.append(
                {
                    "id": f"msg_scripted{rid}",
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": d.text, "annotations": []}],
                }
            )
        for k, t in enumerate(d.tools):
            items.append(
                {
                    "id": f"fc_scripted{rid}_{k}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": t["id"],
                    "name": t["name"],
                    "arguments": _args_json(t),
                    **({"namespace": t["namespace"]} if t.get("namespace") else {}),
                }
            )
        usage_in = (d.usage or {}).get("input_tokens", toytok.count_tokens(body.get("input")))
        usage_out = (d.usage or {}).get("output_tokens", max(1, toytok.count_tokens(items)))
        usage = {
            "input_tokens": usage_in,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage_out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage_in + usage_out,
        }
        created = BASE_TIME + int(rid)

        def response_obj(status: str, output: list, with_usage: bool) -> dict[str, Any]:
            r: dict[str, Any] = {
                "id": resp_id,
                "object": "response",
                "created_at": created,
                "status": status,
                "error": None,
                "incomplete_details": None,
                "instructions": None,
                "model": model,
                "output": output,
                "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
                "tool_choice": body.get("tool_choice", "auto"),
                "tools": [],
                "usage": usage if with_usage else None,
            }
            return r

        if not stream:
            return web.json_response(response_obj("completed", items, True))
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": response_obj("in_progress", [], False)},
            {"type": "response.in_progress", "response": response_obj("in_progress", [], False)},
        ]
        for k, it in enumerate(items):
            if it["type"] == "message":
                text = it["content"][0]["text"]
                added = dict(it, status="in_progress", content=[])
                events.append(
                    {"type": "response.output_item.added", "output_index": k, "item": added}
                )
                part0 = {"type": "output_text", "text": "", "annotations": []}
                ref = {"item_id": it["id"], "output_index": k, "content_index": 0}
                events.append(dict(ref, type="response.content_part.added", part=part0))
                for c in _chunks(text):
                    events.append(dict(ref, type="response.output_text.delta", delta=c))
                events.append(dict(ref, type="response.output_text.done", text=text))
                events.append(dict(ref, type="response.content_part.done", part=it["content"][0]))
            else:
                added = dict(it, status="in_progress", arguments="")
                events.append(
                    {"type": "response.output_item.added", "output_index": k, "item": added}
                )
                args = it["arguments"]
                for j in range(0, len(args), 12):
                    events.append(
                        {
                            "type": "response.function_call_arguments.delta",
                            "item_id": it["id"],
                            "output_index": k,
                            "delta": args[j : j + 12],
                        }
                    )
                events.append(
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": it["id"],
                        "output_index": k,
                        "arguments": args,
                    }
                )
            events.append({"type": "response.output_item.done", "output_index": k, "item": it})
        events.append(
            {"type": "response.completed", "response": response_obj("completed", items, True)}
        )
        if d.stream_error:
            failed = response_obj("failed", [], False)
            failed["error"] = {"code": "server_error", "message": "The server had an error."}
            events = events[: max(2, len(events) // 2)] + [
                {"type": "response.failed", "response": failed}
            ]
        for n, e in enumerate(events):
            e["sequence_number"] = n
        frames = [encode_frame(e, e["type"], json.dumps) for e in events]
        return await self._stream(request, frames, d.cut, {})

    async def _stream(self, request, frames: list[str], cut: bool, headers: dict[str, str]):
        resp = web.StreamResponse(
            status=200,
            headers={"content-type": "text/event-stream", "cache-control": "no-cache", **headers},
        )
        await resp.prepare(request)
        if cut:
            frames = frames[: max(1, len(frames) // 2)]
        for f in frames:
            await resp.write(f.encode())
        if cut:
            await asyncio.sleep(0.05)
            _drop(request)
            return resp
        await resp.write_eof()
        return resp


def _drop(request: web.Request) -> None:
    tr = request.transport
    if tr is not None:
        tr.close()


async def start(
    scenario: Scenario,
    port: int = 0,
    log_path: str | Path | None = None,
    host: str = "127.0.0.1",
    protocol: str = "any",
) -> tuple[web.AppRunner, ScriptedServer, int]:
    """Start on `host:port` (0 = any free port); returns (runner, server, port)."""
    srv = ScriptedServer(scenario, log_path, protocol)
    runner = web.AppRunner(srv.app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    real_port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, srv, real_port
