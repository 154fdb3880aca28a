"""A scripted local model server and an in-thread proxy for the `clawviz record` tests.

The scripted server decides every byte it sends, so expected results come from it, never from
the proxy's log. It records what it received and, per stream, how many events it sent and
whether the far side went away (its write failed). It also writes its own "direct" exchange
record of each call, the baseline the proxy's log must ingest to the same reconstruction.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from clawviz.ingest.sse import DONE, encode_frame


def chat_events(text_parts: list[str], *, final: bool = True, usage: bool = True) -> list[bytes]:
    """OpenAI Chat Completions SSE frames for a reply made of `text_parts`."""
    out = []
    for i, part in enumerate(text_parts):
        delta: dict[str, Any] = {"content": part}
        if i == 0:
            delta["role"] = "assistant"
        chunk = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "scripted-1",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        }
        out.append(encode_frame(chunk).encode())
    if final:
        last = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "scripted-1",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
        if usage:
            last["usage"] = {"prompt_tokens": 7, "completion_tokens": len(text_parts)}
            last["usage"]["total_tokens"] = 7 + len(text_parts)
        out.append(encode_frame(last).encode())
        out.append(encode_frame(DONE).encode())
    return out


def chat_json(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 1,
        "model": "scripted-1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


def anthropic_events(text_parts: list[str], *, final: bool = True) -> list[bytes]:
    """Anthropic Messages SSE frames for a reply made of `text_parts`."""

    def frame(name: str, data: dict[str, Any]) -> bytes:
        return encode_frame(data, name).encode()

    msg = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "scripted-claude",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 11, "output_tokens": 1},
    }
    out = [
        frame("message_start", {"type": "message_start", "message": msg}),
        frame(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for part in text_parts:
        out.append(
            frame(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": part},
                },
            )
        )
    if final:
        out.append(frame("content_block_stop", {"type": "content_block_stop", "index": 0}))
        out.append(
            frame(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": len(text_parts)},
                },
            )
        )
        out.append(frame("message_stop", {"type": "message_stop"}))
    return out


def anthropic_json(text: str) -> dict[str, Any]:
    return {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "scripted-claude",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 3},
    }


@dataclass
class Stream:
    """What the scripted server did on one streamed response."""

    path: str
    events: list[bytes]
    request_body: bytes = b""
    sent: int = 0
    went_away: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class Scripted:
    """The scripted model server. Behaviour per request from header `x-script`:

    - (none): reply text `reply_text(body)`; streamed when the body says `"stream": true`;
    - `slow:N:SECONDS`: a stream of the reply text then N events, SECONDS apart;
    - `no-final`: a stream that ends without its final event;
    - `hang`: wait 30 s before answering;
    - `status:N`: a JSON error with HTTP status N;
    - `set-cookie`: a JSON answer that sets the cookie `session=tok-setcookie-66666`;
    - `big:N`: a JSON answer with an N-character text;
    - `encode:gzip|zstd|OTHER`: a JSON answer sent with that Content-Encoding (OTHER: opaque bytes).
    """

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.streams: list[Stream] = []
        self.direct: list[dict[str, Any]] = []
        self.sent_bodies: list[bytes] = []
        self.hangs_cancelled = threading.Event()

    @staticmethod
    def reply_text(body: dict[str, Any]) -> str:
        msgs = body.get("messages") or []
        last = msgs[-1]["content"] if msgs else ""
        if isinstance(last, list):
            last = "".join(b.get("text", "") for b in last if isinstance(b, dict))
        return f"echo: {last}"

    def _direct(self, request: web.Request, raw: bytes, t0: float, status: int, **resp) -> None:
        body = orjson.loads(raw) if raw else None
        ep = request.headers.get("x-clawviz-episode")
        rec = {
            "request": {
                "timestamp": t0,
                "method": request.method,
                "url": f"http://upstream{request.path_qs}",
                "headers": {str(k): v for k, v in request.headers.items()},
                "body": body,
            },
            "response": {"timestamp": time.time(), "status_code": status, **resp},
            "clawviz": {"episode_id": ep} if ep else {},
        }
        self.direct.append(rec)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        t0 = time.time()
        raw = await request.read()
        self.received.append(
            {
                "method": request.method,
                "path": request.path_qs,
                "headers": request.headers.copy(),
                "body": raw,
            }
        )
        script = request.headers.get("x-script", "")
        if request.method == "GET":
            data = {"object": "list", "data": [{"id": "scripted-1", "object": "model"}]}
            self._direct(request, raw, t0, 200, body=data)
            return web.json_response(data)
        if script == "hang":
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.hangs_cancelled.set()  # the far side went away while we waited
                raise
        if request.headers.get("Content-Encoding") == "gzip":
            import gzip

            raw = gzip.decompress(raw)
        body = orjson.loads(raw)
        anthropic = request.path.endswith("/messages")
        if script.startswith("set-cookie"):
            resp = web.json_response(chat_json("cookie set"))
            resp.headers["Set-Cookie"] = "session=tok-setcookie-66666; Path=/"
            return resp
        if script.startswith("status:"):
            status = int(script.split(":")[1])
            data = {"error": {"type": "server_error", "message": "scripted failure"}}
            self._direct(request, raw, t0, status, body=data)
            return web.json_response(data, status=status)
        if script.startswith("encode:"):
            enc = script.split(":")[1]
            data = orjson.dumps(chat_json("compressed"))
            if enc == "gzip":
                import gzip

                data = gzip.compress(data)
            elif enc == "zstd":
                import zstandard

                data = zstandard.ZstdCompressor().compress(data)
            else:
                data = b"\x00\x01opaque" + data[::-1]
            self.sent_bodies.append(data)
            return web.Response(
                body=data, headers={"Content-Type": "application/json", "Content-Encoding": enc}
            )
        if script.startswith("big:"):
            text = "x" * int(script.split(":")[1])
            data = anthropic_json(text) if anthropic else chat_json(text)
            return web.json_response(data)
        text = self.reply_text(body)
        if script.startswith("slow:"):
            _, n, gap = script.split(":")
            parts = [text + " "] + [f"e{i} " for i in range(int(n))]
            delay = float(gap)
        else:
            parts = [w + " " for w in text.split(" ")]
            delay = 0.0
        if not body.get("stream") and not script.startswith(("slow", "no-final")):
            data = anthropic_json(text) if anthropic else chat_json(text)
            self._direct(request, raw, t0, 200, body=data)
            return web.json_response(data)
        final = script != "no-final"
        events = (
            anthropic_events(parts, final=final) if anthropic else chat_events(parts, final=final)
        )
        stream = Stream(request.path, events, raw)
        self.streams.append(stream)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        try:
            for ev in events:
                await resp.write(ev)
                stream.sent += 1
                if delay:
                    await asyncio.sleep(delay)
            await resp.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            stream.went_away = True
            raise
        finally:
            stream.done.set()
            self._direct(
                request,
                raw,
                t0,
                200,
                headers={"content-type": "text/event-stream"},
                body_raw=b"".join(events[: stream.sent]).decode(),
            )
        return resp


class LoopThread:
    """An asyncio loop on a daemon thread, running the scripted server and (optionally) a proxy."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runners: list[web.AppRunner] = []

    def run(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start_scripted(self, scripted: Scripted) -> int:
        async def go() -> int:
            app = web.Application(client_max_size=1 << 30)
            app.router.add_route("*", "/{tail:.*}", scripted.handle)
            # auto_decompress=False: `received` holds the body bytes exactly as they came.
            runner = web.AppRunner(
                app, handler_cancellation=True, access_log=None, auto_decompress=False
            )
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.runners.append(runner)
            return site._server.sockets[0].getsockname()[1]

        return self.run(go())

    def start_proxy(self, upstream: str, out_dir: str, **kw: Any) -> ProxyHandle:
        from clawviz.record.proxy import serve

        ready = asyncio.Event()
        stop = asyncio.Event()

        fut = asyncio.run_coroutine_threadsafe(
            serve(upstream, "127.0.0.1", 0, out_dir, ready=ready, stop=stop, **kw), self.loop
        )

        async def wait_ready() -> int:
            await asyncio.wait_for(ready.wait(), 10)
            return ready.port  # type: ignore[attr-defined]

        port = self.run(wait_ready())
        return ProxyHandle(self, port, stop, fut, upstream)

    def close(self) -> None:
        async def down() -> None:
            for r in self.runners:
                await r.cleanup()

        self.run(down())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@dataclass
class ProxyHandle:
    lt: LoopThread
    port: int
    stop_event: asyncio.Event
    fut: Any
    upstream: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, timeout: float = 30) -> Any:
        self.lt.loop.call_soon_threadsafe(self.stop_event.set)
        return self.fut.result(timeout)


def read_log(out_dir: Any) -> dict[str, list[dict[str, Any]]]:
    """Every line of every `*.jsonl` in `out_dir`, parsed, by file name."""
    from pathlib import Path

    return {
        p.name: [orjson.loads(line) for line in p.read_bytes().splitlines() if line.strip()]
        for p in sorted(Path(out_dir).glob("*.jsonl"))
        if p.is_file()  # not a /dev/full stand-in
    }
