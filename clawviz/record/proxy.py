"""The recording reverse proxy (aiohttp server + client).

Any method and path is forwarded to `upstream + path`; the response is streamed back chunk by
chunk as it arrives, and when the exchange ends (completed, failed or abandoned by the client) it
is logged as one line in the exchange format of FORMATS §1 (claude-trace shape + `clawviz`).

Episode identity, first that applies:
  1. a path prefix `/ep/<episode>/[t/<task>/][h/<harness>/][a/<attempt>/]`, stripped before
     forwarding (point the harness's base URL at `http://proxy/ep/<id>/v1`);
  2. headers `X-Clawviz-Episode` (with optional `X-Clawviz-Task`, `-Harness`, `-Attempt`) or
     `X-Session-Id` (OpenClaw-RL's plugin; `X-Turn-Type` stays in the logged headers);
  3. none: the exchange goes to this run's own file, which is then the episode.
"""

from __future__ import annotations

import asyncio
import base64
import signal
import sys
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO
from urllib.parse import unquote

import aiohttp
import orjson
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from clawviz.ingest import REDACTED, is_secret_header, redact_url
from clawviz.record.logfile import LogWriter

# RFC 9110 §7.6.1 hop-by-hop headers, plus the ones aiohttp recomputes for each hop.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
# Expect: 100-continue is this hop's business: the proxy has the whole body before it forwards.
_REQUEST_DROP = HOP_BY_HOP | {"host", "content-length", "expect"}
HEALTH_PATH = "/_clawviz/health"  # answered by the proxy itself, never forwarded


@dataclass
class EpisodeInfo:
    episode_id: str | None = None
    task_id: str | None = None
    harness: str | None = None
    attempt: int | str | None = None
    fields: dict[str, Any] = field(default_factory=dict)


def split_episode_prefix(raw_path: str) -> tuple[str, EpisodeInfo]:
    """`/ep/<id>/[t/<task>/][h/<harness>/][a/<n>/]rest` -> (`/rest`, info); other paths as is.

    Works on the raw (still percent-encoded) path so the forwarded path is byte-identical."""
    info = EpisodeInfo()
    if not raw_path.startswith("/ep/"):
        return raw_path, info
    path, sep, query = raw_path.partition("?")
    parts = path.split("/")  # ['', 'ep', id, ...]
    if len(parts) < 3 or not parts[2]:
        return raw_path, info
    info.episode_id = unquote(parts[2])
    i = 3
    for key in ("t", "h", "a"):
        if i + 1 < len(parts) and parts[i] == key and parts[i + 1]:
            value = unquote(parts[i + 1])
            if key == "t":
                info.task_id = value
            elif key == "h":
                info.harness = value
            else:
                info.attempt = int(value) if value.isdigit() else value
            i += 2
    rest = "/" + "/".join(parts[i:])
    return rest + (sep + query if sep else ""), info


def episode_from_headers(headers: Any) -> EpisodeInfo:
    info = EpisodeInfo()
    episode = headers.get("x-clawviz-episode") or headers.get("x-session-id")
    if episode:
        info.episode_id = episode
        info.task_id = headers.get("x-clawviz-task") or None
        info.harness = headers.get("x-clawviz-harness") or None
        attempt = headers.get("x-clawviz-attempt")
        if attempt:
            info.attempt = int(attempt) if attempt.isdigit() else attempt
    return info


_URL_HEADERS = frozenset({"referer", "location", "content-location"})
"""Headers whose value is a URL: its secret query parameters and userinfo are redacted as the
logged URL's are (an OAuth redirect's `Location: ...?access_token=`)."""


def redact(headers: Any) -> dict[str, str]:
    """Headers for the log: secret values replaced by a marker (repeated names joined). A
    header is secret when its name says key, token, secret, auth, password or cookie; in a
    URL-bearing header (Referer, Location, Content-Location) the URL's secrets are redacted."""
    out: dict[str, str] = {}
    for k, v in headers.items():
        k = str(k)
        if is_secret_header(k):
            v = REDACTED
        elif k.lower() in _URL_HEADERS:
            v = redact_url(v)
        out[k] = out[k] + ", " + v if k in out else v
    return out


def _forwarded_headers(headers: Any, drop: set[str]) -> CIMultiDict[str]:
    """The request headers to forward, every repeated one kept. A name repeated in another case
    (`X-API-KEY` then `x-api-key`) is spelled as it first came: aiohttp's client session counts
    names case-sensitively and would let the second value replace the first."""
    spelling: dict[str, str] = {}
    out: CIMultiDict[str] = CIMultiDict()
    for k, v in headers.items():
        low = k.lower()
        if low not in drop:
            out.add(spelling.setdefault(low, k), v)
    return out


def _hop_by_hop(headers: Any) -> set[str]:
    """Hop-by-hop names, including those the Connection header lists."""
    names = set(HOP_BY_HOP)
    for value in headers.getall("connection", []):
        names.update(t.strip().lower() for t in value.split(",") if t.strip())
    return names


_FRAGMENT = getattr(orjson, "Fragment", None)  # orjson >= 3.10: embed JSON bytes as they are


def _json_or_raw(data: bytes, content_type: str) -> tuple[str, Any]:
    """('body', JSON) when the bytes are JSON, else ('body_raw', text)."""
    if data and ("json" in content_type or data[:1] in (b"{", b"[")):
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
        else:
            # The server's own bytes, unless they span lines (a JSONL line must not).
            if _FRAGMENT is not None and b"\n" not in data and b"\r" not in data:
                return "body", _FRAGMENT(data)
            return "body", orjson.loads(data)
    return "body_raw", data.decode("utf-8", errors="replace")


DEFAULT_INFLATE_BUDGET = 32 << 20  # bytes a compressed body may inflate to in the log


class OverBudget(Exception):
    """A compressed body inflates past the budget: it is logged as it came, in base64."""


def _inflate(data: bytes, encoding: str, budget: int) -> bytes | None:
    """Content-encoded bytes decoded for the log (the client gets them as sent), never more
    than `budget` bytes of output: a small gzip bomb must not become a huge log line and that
    much proxy memory. None when the bytes cannot be decoded whole (unknown encoding, corrupt
    or cut-off data); OverBudget when they inflate past `budget`."""
    enc = encoding.strip().lower()
    if not enc or enc == "identity":
        return data
    try:
        if enc in ("gzip", "x-gzip"):
            return _zlib_inflate(data, 31, budget)
        if enc == "deflate":
            try:
                return _zlib_inflate(data, 15, budget)  # zlib-wrapped, as RFC 9110 says
            except zlib.error:
                return _zlib_inflate(data, -15, budget)  # raw deflate, as some servers send
        if enc == "zstd":
            import io

            import zstandard  # type: ignore[import-not-found,unused-ignore]

            reader = zstandard.ZstdDecompressor().stream_reader(
                io.BytesIO(data), read_across_frames=True
            )
            out = reader.read(budget + 1)
            if len(out) > budget:
                raise OverBudget
            return out
        if enc == "br":
            import brotli  # type: ignore[import-not-found,unused-ignore]

            dec = brotli.Decompressor()
            # brotli >= 1.1 bounds its output; an older one cannot, so its bytes stay base64.
            out = dec.process(data, output_buffer_limit=budget + 1)
            if len(out) > budget or not dec.is_finished():
                raise OverBudget if len(out) > budget else ValueError("cut-off brotli data")
            return out
    except OverBudget:
        raise
    except Exception:  # noqa: BLE001 - undecodable bytes are logged as base64 instead
        return None
    return None


def _zlib_inflate(data: bytes, wbits: int, budget: int) -> bytes | None:
    """Every member of a gzip/zlib stream, at most `budget` bytes; None if it is cut off."""
    parts: list[bytes] = []
    size = 0
    rest = data
    while True:
        d = zlib.decompressobj(wbits=wbits)
        out = d.decompress(rest, budget + 1 - size)
        size += len(out)
        parts.append(out)
        if size > budget or d.unconsumed_tail:
            raise OverBudget
        if not d.eof:
            return None  # cut off: not a whole body
        rest = d.unused_data
        if wbits != 31 or not rest.strip(b"\0"):
            return b"".join(parts)


# The last frame of a complete stream, per API (FORMATS §2).
_FINAL_EVENTS = (
    b"data: [DONE]",
    b"event: message_stop",
    b"event: response.completed",
    b"event: response.failed",
    b"event: response.incomplete",
)


def _complete(upstream: aiohttp.ClientResponse, chunks: list[bytes]) -> bool:
    """Whether a client that left had already been sent the whole response: the upstream body
    had ended, or the stream's final event was sent (SDKs close the connection right after
    `data: [DONE]` / `message_stop`, before the end of the chunked body)."""
    if upstream.content.at_eof():
        return True
    tail = b"".join(chunks[-4:])[-512:].rstrip()
    if not tail:
        return False
    last = tail.rsplit(b"\n\n", 1)[-1].lstrip()
    return last.startswith(_FINAL_EVENTS)


def _log_body(
    side: dict[str, Any],
    cz: dict[str, Any],
    name: str,
    data: bytes,
    headers: Any,
    budget: int = DEFAULT_INFLATE_BUDGET,
) -> None:
    """Put a body into the log record: JSON as `body`, text (SSE) as `body_raw`, decoded from
    its content-encoding within `budget` bytes; bytes that cannot be decoded, or would inflate
    past the budget, as `body_base64` with their encoding (and the budget) noted."""
    encoding = headers.get("content-encoding", "")
    try:
        decoded = _inflate(data, encoding, budget)
    except OverBudget:
        side["body_base64"] = base64.b64encode(data).decode()
        cz.setdefault("body_encoding", {})[name] = encoding
        cz.setdefault("inflate_budget_exceeded", {})[name] = budget
        return
    if decoded is None:
        side["body_base64"] = base64.b64encode(data).decode()
        cz.setdefault("body_encoding", {})[name] = encoding
        return
    if decoded is not data:
        cz.setdefault("decoded", {})[name] = encoding
    key, value = _json_or_raw(decoded, headers.get("content-type", ""))
    side[key] = value


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Proxy:
    """The aiohttp handler; one instance per proxy run."""

    def __init__(
        self,
        upstream: str,
        writer: LogWriter,
        *,
        connect_timeout: float = 10.0,
        read_timeout: float = 600.0,
        fail_closed: bool = False,
        inflate_budget: int = DEFAULT_INFLATE_BUDGET,
        stderr: TextIO | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.inflate_budget = inflate_budget
        self.writer = writer
        self.fail_closed = fail_closed
        self.refused = 0  # answered 503 under --fail-closed while the log was failing
        self.timeout = aiohttp.ClientTimeout(
            total=None, connect=connect_timeout, sock_read=read_timeout
        )
        self.stderr = stderr if stderr is not None else sys.stderr
        self.session: aiohttp.ClientSession | None = None
        self.inflight = 0
        self.idle = asyncio.Event()
        self.idle.set()

    async def start(self) -> None:
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
        # auto_decompress=False: the client gets the server's bytes as sent.
        self.session = aiohttp.ClientSession(
            connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
        )

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.inflight += 1  # counted from the first byte, so SIGTERM waits for it
        self.idle.clear()
        try:
            return await self._handle(request)
        finally:
            self.inflight -= 1
            if self.inflight == 0:
                self.idle.set()

    def health(self) -> dict[str, Any]:
        w = self.writer
        return {
            "ok": not w.failing,
            "logging": not w.failing,
            "logged": w.written,
            "lost": w.lost,
            "truncated": w.truncated,
            "queued": w.queued,
            "refused": self.refused,
            "in_flight": self.inflight,
            "open_files": w.open_files,
            "fail_closed": self.fail_closed,
            "last_error": w.last_error,
        }

    async def handle_health(self, request: web.Request) -> web.Response:
        """`GET /_clawviz/health`: the log's counts; 503 while exchanges cannot be logged."""
        data = self.health()
        return web.Response(
            status=200 if data["ok"] else 503,
            body=orjson.dumps(data),
            content_type="application/json",
        )

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        t_wall = time.time()
        t0 = time.perf_counter()
        path, info = split_episode_prefix(request.raw_path)
        if info.episode_id is None:
            info = episode_from_headers(request.headers)
        body = await request.read()
        drop = _hop_by_hop(request.headers) | _REQUEST_DROP
        fwd = _forwarded_headers(request.headers, drop)
        url = self.upstream + path
        name = self.writer.file_for(info.episode_id)
        cz: dict[str, Any] = {}
        if info.episode_id is not None:
            cz["episode_id"] = info.episode_id
        for key in ("task_id", "harness", "attempt"):
            if getattr(info, key) is not None:
                cz[key] = getattr(info, key)
        if self.writer.worker is None:
            cz["seq"] = self.writer.next_seq(name)
        else:
            cz["seq"] = self.writer.order_seq(name, t_wall)
            cz["worker"] = self.writer.worker
        req_log: dict[str, Any] = {
            "timestamp": t_wall,
            "method": request.method,
            "url": redact_url(url),  # the forwarded URL is `url`, byte for byte
            "headers": redact(fwd),
        }
        if body:
            _log_body(req_log, cz, "request", body, request.headers, self.inflate_budget)
        else:
            req_log["body"] = None
        record: dict[str, Any] = {"request": req_log, "response": None}
        try:
            if self.fail_closed and self.writer.failing:
                # Not forwarded: a rollout that cannot be recorded must not count. This
                # exchange is still submitted; if its line is written, logging is back.
                self.refused += 1
                return await self._fail(
                    request,
                    record,
                    cz,
                    t0,
                    503,
                    "not_logging",
                    RuntimeError(f"the log cannot be written ({self.writer.last_error})"),
                    forwarded=False,
                )
            return await self._exchange(request, url, fwd, body, record, cz, t0)
        finally:
            record["logged_at"] = _now_iso()
            record["clawviz"] = cz
            self.writer.submit(name, record)

    async def _exchange(
        self,
        request: web.Request,
        url: str,
        fwd: CIMultiDict[str],
        body: bytes,
        record: dict[str, Any],
        cz: dict[str, Any],
        t0: float,
    ) -> web.StreamResponse:
        assert self.session is not None
        cz["delivered"] = False
        try:
            upstream = await self.session.request(
                request.method,
                URL(url, encoded=True),  # the path and query exactly as the client sent them
                headers=fwd,
                data=body if body else None,
                allow_redirects=False,
                timeout=self.timeout,
                skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"),
            )
        except TimeoutError as exc:
            return await self._fail(request, record, cz, t0, 504, "upstream_timeout", exc, url=url)
        except (aiohttp.ClientError, OSError) as exc:
            return await self._fail(
                request, record, cz, t0, 502, "upstream_unreachable", exc, url=url
            )
        except asyncio.CancelledError:
            cz["proxy_error"] = "client went away before the response headers"
            raise
        cz["t_headers"] = time.perf_counter() - t0
        drop = _hop_by_hop(upstream.headers)
        out = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for k, v in upstream.headers.items():
            if k.lower() not in drop:
                out.headers.add(k, v)
        resp_headers = redact(out.headers)
        chunks: list[bytes] = []
        response: dict[str, Any] = {
            "timestamp": None,
            "status_code": upstream.status,
            "headers": resp_headers,
        }
        record["response"] = response
        try:
            await out.prepare(request)
            async for chunk in upstream.content.iter_any():
                if "t_first_byte" not in cz:
                    cz["t_first_byte"] = time.perf_counter() - t0
                await out.write(chunk)
                chunks.append(chunk)
            await out.write_eof()
            cz["delivered"] = True
        except (ConnectionResetError, aiohttp.ClientConnectionResetError) as exc:
            # The client went away (its write failed): stop reading, which cancels upstream.
            cz["delivered"] = _complete(upstream, chunks)
            if not cz["delivered"]:
                cz["proxy_error"] = f"client went away: {exc}"
        except asyncio.CancelledError:
            cz["delivered"] = _complete(upstream, chunks)
            if not cz["delivered"]:
                cz["proxy_error"] = "client went away"
            raise
        except (TimeoutError, aiohttp.ClientError) as exc:
            # Upstream broke mid-stream: end the client's connection the same way.
            cz["proxy_error"] = f"upstream broke mid-stream: {type(exc).__name__}: {exc}"
            if request.transport is not None:
                request.transport.close()
        finally:
            if cz["delivered"] and upstream.content.at_eof():
                upstream.release()  # back to the pool for the next call
            else:
                upstream.close()  # abandon: closing the connection cancels the upstream
            now = time.perf_counter()
            cz["t_last_byte"] = now - t0
            response["timestamp"] = time.time()
            _log_body(
                response, cz, "response", b"".join(chunks), upstream.headers, self.inflate_budget
            )
        return out

    async def _fail(
        self,
        request: web.Request,
        record: dict[str, Any],
        cz: dict[str, Any],
        t0: float,
        status: int,
        kind: str,
        exc: BaseException,
        *,
        forwarded: bool = True,
        url: str | None = None,
    ) -> web.Response:
        detail = str(exc)
        if url is not None:  # an error that quotes the URL must not bring its secrets back
            detail = detail.replace(url, record["request"]["url"])
        message = f"clawviz record: {kind.replace('_', ' ')}: {type(exc).__name__}: {detail}"
        payload = {"type": "error", "error": {"type": kind, "message": message}}
        data = orjson.dumps(payload)
        cz["proxy_error"] = kind
        if not forwarded:
            cz["forwarded"] = False
        cz["t_last_byte"] = time.perf_counter() - t0
        record["response"] = {
            "timestamp": time.time(),
            "status_code": status,
            "headers": {"Content-Type": "application/json"},
            "body": payload,
        }
        self._say(f"{request.method} {record['request']['url']}: {message}")
        resp = web.Response(status=status, body=data, content_type="application/json")
        try:
            await resp.prepare(request)
            await resp.write_eof()
            cz["delivered"] = True
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            pass
        return resp

    def _say(self, msg: str) -> None:
        try:
            self.stderr.write(f"clawviz record: {msg}\n")
            self.stderr.flush()
        except (OSError, ValueError):
            pass


def make_app(proxy: Proxy) -> web.Application:
    # Requests carry whole conversations (and images): no 1 MiB body limit. A body is always
    # forwarded whole; only its logged copy is cut to the line budget (`logfile.fit_line`).
    app = web.Application(client_max_size=1 << 30)
    app.router.add_route("GET", HEALTH_PATH, proxy.handle_health)
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    return app


async def serve(
    upstream: str,
    host: str,
    port: int,
    out_dir: str,
    *,
    read_timeout: float = 600.0,
    connect_timeout: float = 10.0,
    drain_timeout: float = 600.0,
    db_url: str | None = None,
    db_window: float = 0.5,
    max_open: int | None = None,
    fail_closed: bool = False,
    inflate_budget: int = DEFAULT_INFLATE_BUDGET,
    max_line_bytes: int | None = None,
    worker: int | None = None,
    ready: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
    stderr: TextIO | None = None,
) -> LogWriter:
    """Run the proxy until SIGTERM/SIGINT (or `stop`): then stop accepting, let in-flight
    exchanges finish (up to `drain_timeout`), write the log and return."""
    err = stderr if stderr is not None else sys.stderr
    writer = LogWriter(
        out_dir, stderr=err, max_open=max_open, worker=worker, max_line_bytes=max_line_bytes
    )
    follower = None
    if db_url:
        # Ingest runs in its own process (`clawviz follow`), off the proxy's hot path.
        from clawviz.record.follow import FollowerProcess

        follower = FollowerProcess(out_dir, db_url, interval=db_window, stderr=err)
    proxy = Proxy(
        upstream,
        writer,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        fail_closed=fail_closed,
        inflate_budget=inflate_budget,
        stderr=err,
    )
    await proxy.start()
    runner = web.AppRunner(
        make_app(proxy),
        handler_cancellation=True,
        access_log=None,
        shutdown_timeout=drain_timeout,
        auto_decompress=False,  # forward a compressed request body as it came
    )
    await runner.setup()
    # Workers share the port: the kernel spreads connections over them (SO_REUSEPORT).
    site = web.TCPSite(runner, host, port, reuse_address=True, reuse_port=worker is not None)
    await site.start()
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    sockets = getattr(site._server, "sockets", None) or []
    bound = sockets[0].getsockname() if sockets else (host, port)
    err.write(
        f"clawviz record: listening on http://{bound[0]}:{bound[1]} -> {upstream}, "
        f"logging to {out_dir}/" + (f", ingesting into {db_url}" if db_url else "") + "\n"
    )
    err.flush()
    if ready is not None:
        ready.port = bound[1]  # type: ignore[attr-defined]
        ready.set()
    try:
        await stop.wait()
    finally:
        err.write(f"clawviz record: stopping; {proxy.inflight} exchange(s) in flight\n")
        err.flush()
        await site.stop()  # no new connections
        try:
            await asyncio.wait_for(proxy.idle.wait(), drain_timeout)
        except TimeoutError:
            err.write(f"clawviz record: {proxy.inflight} exchange(s) cut off after drain\n")
        await runner.cleanup()
        await proxy.close()
        await asyncio.to_thread(writer.close)
        if follower is not None:
            await asyncio.to_thread(follower.close)
        err.write(
            f"clawviz record: stopped; {writer.written} exchange(s) logged, {writer.lost} lost"
            + (f", {proxy.refused} refused (503, log failing)" if proxy.refused else "")
            + (
                f", {writer.truncated} with a body cut to max_line_bytes ({writer.max_line})"
                if writer.truncated
                else ""
            )
            + "\n"
        )
        if writer.lost:
            err.write(
                f"clawviz record: ERROR: {writer.lost} exchange(s) were answered but NOT logged "
                f"(last: {writer.last_error}); exit status 1\n"
            )
        err.flush()
    return writer
