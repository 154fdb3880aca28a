"""A tiny loopback reverse proxy that signs requests in, as oauth2-proxy does: every request and
WebSocket to the app gets `HEADER: USER`, and a header of that name sent by the client is
dropped first (a client cannot name itself).

    python3 tests/browser/header_proxy.py PORT UPSTREAM_URL HEADER USER
"""

from __future__ import annotations

import asyncio
import sys

import aiohttp
from aiohttp import web

HOP = {
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
    "trailer", "content-length", "sec-websocket-key", "sec-websocket-version",
    "sec-websocket-extensions", "sec-websocket-protocol", "sec-websocket-accept",
}  # fmt: skip


def make_app(upstream: str, header: str, user: str) -> web.Application:
    session: dict[str, aiohttp.ClientSession] = {}

    def forwarded(request: web.Request) -> dict[str, str]:
        out = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in HOP and k.lower() != header.lower()
        }
        out[header] = user
        return out

    async def handle(request: web.Request) -> web.StreamResponse:
        client = session["c"]
        url = upstream + request.rel_url.path_qs
        if request.headers.get("Upgrade", "").lower() == "websocket":
            offered = [
                p.strip()
                for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")
                if p.strip()
            ]
            up = await client.ws_connect(url, headers=forwarded(request), protocols=offered)
            down = web.WebSocketResponse(protocols=[up.protocol] if up.protocol else ())
            await down.prepare(request)

            async def pump(src, dst) -> None:
                async for msg in src:
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        await dst.send_bytes(msg.data)
                    elif msg.type == aiohttp.WSMsgType.TEXT:
                        await dst.send_str(msg.data)
                    else:
                        break
                await dst.close()

            await asyncio.gather(pump(down, up), pump(up, down), return_exceptions=True)
            return down
        async with client.request(
            request.method,
            url,
            headers=forwarded(request),
            data=await request.read(),
            allow_redirects=False,
        ) as resp:
            body = await resp.read()
            headers = {k: v for k, v in resp.headers.items() if k.lower() not in HOP}
            return web.Response(status=resp.status, headers=headers, body=body)

    async def start(_app: web.Application) -> None:
        session["c"] = aiohttp.ClientSession(auto_decompress=False)

    async def stop(_app: web.Application) -> None:
        await session["c"].close()

    app = web.Application()
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def main() -> None:
    port, upstream, header, user = sys.argv[1:5]
    web.run_app(make_app(upstream, header, user), host="127.0.0.1", port=int(port), print=None)


if __name__ == "__main__":
    main()
