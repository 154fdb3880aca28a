"""A scripted OpenAI-compatible Chat Completions server on loopback, for the diagnosis tests.

Each request takes the next step of the script (the last one repeats): ("json", obj) answers
with obj as the message content, ("text", s) with raw text, ("status", code, retry_after) with
an error, ("hang", seconds) sleeps before answering, ("trickle", seconds, obj) sends the
answer for obj one byte every `seconds` (each read returns in time, the whole never does).
Every request body is kept, and the server counts how many requests were in flight at once.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from aiohttp import web


class ScriptedLLM:
    def __init__(self, script: list[tuple], delay: float = 0.0) -> None:
        self.script = list(script)
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _step(self) -> tuple:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        step = self._step()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            if step[0] == "hang":
                await asyncio.sleep(step[1])
            if step[0] == "status":
                headers = {"retry-after": str(step[2])} if len(step) > 2 else {}
                err = {"error": {"message": "slow down", "type": "rate_limit", "code": step[1]}}
                return web.json_response(err, status=step[1], headers=headers)
            if step[0] == "trickle":
                return await self._trickle(request, step[1], self._completion(body, step[2]))
            content = json.dumps(step[1]) if step[0] == "json" else step[1]
            return web.json_response(self._completion(body, content))
        finally:
            self.in_flight -= 1

    async def _trickle(self, request: web.Request, every: float, obj: dict) -> web.StreamResponse:
        data = json.dumps(obj).encode()
        resp = web.StreamResponse(headers={"content-type": "application/json"})
        resp.content_length = len(data)
        await resp.prepare(request)
        for i in range(len(data)):
            await resp.write(data[i : i + 1])
            await asyncio.sleep(every)
        await resp.write_eof()
        return resp

    def _completion(self, body: dict, content: Any) -> dict:
        if not isinstance(content, str):
            content = json.dumps(content)
        return {
                    "id": f"chatcmpl-{len(self.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "m"),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                }  # fmt: skip

    def __enter__(self) -> ScriptedLLM:
        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            app = web.Application()
            app.router.add_post("/v1/chat/completions", self._chat)
            self._runner = web.AppRunner(app)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            self._loop.run_until_complete(site.start())
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self._ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._runner is not None
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
