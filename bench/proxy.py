"""`clawviz record` overhead: every figure against direct calls to the same server, same run.

    python bench/proxy.py            # full run (~2 min); rewrites the proxy section of README.md
    python bench/proxy.py --quick    # smoke run (~20 s); README untouched

A local upstream (aiohttp, own process) serves JSON answers and SSE streams; the proxy runs as
`python -m clawviz record` (own process, logging to a temporary folder). The client alternates
direct and proxied calls (ABBA order) so drift on this shared machine hits both alike. Figures
are medians with the 10th-90th percentile spread; nothing here gates.

1. latency added per call (p50, p99): a 2 KB request and a 75 KB request (a typical agent
   history) with a 1 KB JSON answer, over one keep-alive connection;
2. time to first byte of a 500-event SSE stream sent at once, and its time to the last byte;
3. 64 concurrent streams (100 events each, 10 ms apart, like a 100 token/s model): wall time
   for all 64, direct vs proxied.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "bench" / "README.md"
START, END = "<!-- proxy-bench:start -->", "<!-- proxy-bench:end -->"

ANSWER = json.dumps(
    {
        "id": "chatcmpl-b",
        "object": "chat.completion",
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "word " * 180},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 180, "total_tokens": 190},
    }
).encode()


def _event(i: int) -> bytes:
    chunk = {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": f"tok{i} "}}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


# -- the upstream (own process) ----------------------------------------------------------------


def serve_upstream(port_file: str) -> None:
    from aiohttp import web

    async def json_answer(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=ANSWER, content_type="application/json")

    async def sse(request: web.Request) -> web.StreamResponse:
        await request.read()
        n = int(request.query.get("n", "500"))
        gap = float(request.query.get("gap", "0"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for i in range(n):
            await resp.write(_event(i))
            if gap:
                await asyncio.sleep(gap)
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def main() -> None:
        app = web.Application(client_max_size=1 << 28)
        app.router.add_post("/v1/chat/completions", json_answer)
        app.router.add_post("/v1/sse", sse)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        Path(port_file).write_text(str(port))
        await asyncio.Event().wait()

    asyncio.run(main())


# -- helpers -----------------------------------------------------------------------------------


def _wait_port_file(path: Path, proc: subprocess.Popen) -> int:
    for _ in range(200):
        if path.exists() and path.read_text():
            return int(path.read_text())
        if proc.poll() is not None:
            raise RuntimeError("upstream died")
        time.sleep(0.05)
    raise RuntimeError("upstream did not start")


def _start(tmp: Path) -> tuple[list[subprocess.Popen], int, int]:
    port_file = tmp / "upstream.port"
    up = subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(port_file)])
    up_port = _wait_port_file(port_file, up)
    proxy = subprocess.Popen(
        [sys.executable, "-m", "clawviz", "record", "--upstream", f"http://127.0.0.1:{up_port}"]
        + ["--listen", "127.0.0.1:0", "--out", str(tmp / "log")],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proxy.stderr.readline()  # type: ignore[union-attr]
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        raise RuntimeError(f"proxy did not start: {line}")
    return [up, proxy], up_port, int(m.group(1))


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def spread(xs: list[float], scale: float = 1.0, digits: int = 2) -> str:
    return (
        f"{statistics.median(xs) * scale:.{digits}f} "
        f"({pct(xs, 0.1) * scale:.{digits}f}-{pct(xs, 0.9) * scale:.{digits}f})"
    )


def _abba(n: int) -> list[str]:
    order = []
    for i in range(n):
        order += ["direct", "proxy"] if i % 2 == 0 else ["proxy", "direct"]
    return order


# -- 1. latency per call -----------------------------------------------------------------------


def _body(size: int) -> bytes:
    filler = "x" * max(0, size - 120)
    return json.dumps(
        {"model": "bench", "messages": [{"role": "user", "content": filler}]}
    ).encode()


def latency(ports: dict[str, int], n: int, size: int) -> dict[str, list[float]]:
    body = _body(size)
    conns = {k: http.client.HTTPConnection("127.0.0.1", p) for k, p in ports.items()}
    paths = {"direct": "/v1/chat/completions", "proxy": "/ep/bench-lat/v1/chat/completions"}
    out: dict[str, list[float]] = {"direct": [], "proxy": []}
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}
    for _warm in range(20):
        for k in conns:
            conns[k].request("POST", paths[k], body, headers)
            conns[k].getresponse().read()
    for k in _abba(n):
        t0 = time.perf_counter()
        conns[k].request("POST", paths[k], body, headers)
        r = conns[k].getresponse()
        r.read()
        out[k].append(time.perf_counter() - t0)
    for c in conns.values():
        c.close()
    return out


# -- 2. time to first byte of a 500-event stream -----------------------------------------------


def _ttfb_once(port: int, path: str) -> tuple[float, float]:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = b'{"model":"bench","stream":true,"messages":[]}'
    req = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    t0 = time.perf_counter()
    sock.sendall(req)
    buf = b""
    first = None
    while True:
        data = sock.recv(65536)
        if not data:
            break
        buf += data
        if first is None:
            head_end = buf.find(b"\r\n\r\n")
            if head_end >= 0 and b"data: " in buf[head_end:]:
                first = time.perf_counter() - t0
        if buf.endswith(b"0\r\n\r\n"):
            break
    last = time.perf_counter() - t0
    sock.close()
    return first or last, last


def ttfb(ports: dict[str, int], n: int) -> dict[str, dict[str, list[float]]]:
    paths = {"direct": "/v1/sse?n=500", "proxy": "/ep/bench-sse/v1/sse?n=500"}
    out: dict[str, dict[str, list[float]]] = {
        "direct": {"first": [], "last": []},
        "proxy": {"first": [], "last": []},
    }
    for k in ports:
        _ttfb_once(ports[k], paths[k])
    for k in _abba(n):
        first, last = _ttfb_once(ports[k], paths[k])
        out[k]["first"].append(first)
        out[k]["last"].append(last)
    return out


# -- 3. 64 concurrent streams ------------------------------------------------------------------


async def _streams(port: int, path: str, n: int) -> float:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:

        async def one(i: int) -> int:
            async with s.post(
                f"http://127.0.0.1:{port}{path.format(i=i)}", json={"model": "b", "stream": True}
            ) as r:
                total = 0
                async for chunk in r.content.iter_any():
                    total += len(chunk)
                return total

        t0 = time.perf_counter()
        sizes = await asyncio.gather(*(one(i) for i in range(n)))
        wall = time.perf_counter() - t0
        assert len(set(sizes)) == 1, sizes
        return wall


def concurrent(ports: dict[str, int], rounds: int, n: int = 64) -> dict[str, list[float]]:
    paths = {"direct": "/v1/sse?n=100&gap=0.01", "proxy": "/ep/bench-c{i}/v1/sse?n=100&gap=0.01"}
    out: dict[str, list[float]] = {"direct": [], "proxy": []}
    for k in _abba(rounds):
        out[k].append(asyncio.run(_streams(ports[k], paths[k], n)))
    return out


# -- report ------------------------------------------------------------------------------------


def run(quick: bool) -> tuple[str, bool]:
    n_lat, n_ttfb, rounds = (200, 20, 2) if quick else (2000, 100, 8)
    tmp = Path(tempfile.mkdtemp(prefix="clawviz-proxy-bench-"))
    procs, up, px = _start(tmp)
    ports = {"direct": up, "proxy": px}
    try:
        lat_small = latency(ports, n_lat, 2_000)
        lat_big = latency(ports, n_lat // 2, 75_000)
        tt = ttfb(ports, n_ttfb)
        conc = concurrent(ports, rounds)
    finally:
        _stop(procs)
    log_lines = sum(p.read_bytes().count(b"\n") for p in (tmp / "log").glob("*.jsonl"))
    expected = 20 + n_lat + 20 + n_lat // 2 + 1 + n_ttfb + rounds * 64
    shutil.rmtree(tmp, ignore_errors=True)

    rows = []
    ok = True

    def added(d: dict[str, list[float]], q: float) -> float:
        return pct(d["proxy"], q) - pct(d["direct"], q)

    for label, d in (("2 KB request", lat_small), ("75 KB request", lat_big)):
        for q, target in ((0.5, 2.0), (0.99, 10.0)):
            a = added(d, q) * 1000
            met = a <= target
            ok &= met
            rows.append(
                f"| latency added per call, p{int(q * 100)}, {label} | <= {target:g} ms | "
                f"{a:.2f} ms (direct {pct(d['direct'], q) * 1000:.2f}, "
                f"proxied {pct(d['proxy'], q) * 1000:.2f}) | {'met' if met else 'missed'} |"
            )
    d_first = statistics.median(tt["proxy"]["first"]) - statistics.median(tt["direct"]["first"])
    met = d_first * 1000 <= 2.0
    ok &= met
    rows.append(
        f"| time to first byte, 500-event SSE | within 2 ms of direct | +{d_first * 1000:.2f} ms "
        f"(direct {spread(tt['direct']['first'], 1000)}, "
        f"proxied {spread(tt['proxy']['first'], 1000)} ms) | {'met' if met else 'missed'} |"
    )
    d_last = statistics.median(tt["proxy"]["last"]) / statistics.median(tt["direct"]["last"])
    rows.append(
        f"| (same stream, to the last byte) | - | x{d_last:.2f} "
        f"(direct {spread(tt['direct']['last'], 1000)}, "
        f"proxied {spread(tt['proxy']['last'], 1000)} ms) | - |"
    )
    slow = statistics.median(conc["proxy"]) / statistics.median(conc["direct"]) - 1
    met = slow <= 0.05
    ok &= met
    rows.append(
        f"| 64 concurrent streams (100 events, 10 ms apart) | <= 5 % slower | "
        f"{slow * 100:+.1f} % (direct {spread(conc['direct'])} s, "
        f"proxied {spread(conc['proxy'])} s) | {'met' if met else 'missed'} |"
    )
    rows.append(
        f"| log lines written | one per exchange | {log_lines} of {expected} | "
        f"{'met' if log_lines == expected else 'missed'} |"
    )
    header = (
        f"`python bench/proxy.py` ({time.strftime('%Y-%m-%d', time.gmtime())}, "
        f"{'quick' if quick else 'full'} run: {n_lat} + {n_lat // 2} calls, {n_ttfb} streams, "
        f"{rounds} rounds of 64; {os.cpu_count()} cores shared with other work). "
        "Medians with the 10th-90th percentile range in brackets; latency rows are differences "
        "of the same percentile, proxied minus direct, measured interleaved (ABBA).\n\n"
        "| what | target | measured | |\n|---|---|---|---|\n"
    )
    return header + "\n".join(rows) + "\n", ok


def write_readme(table: str) -> None:
    text = README.read_text()
    block = f"{START}\n{table}{END}"
    if START in text:
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n## Recording proxy (`bench/proxy.py`)\n\n" + block + "\n"
    README.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--serve-upstream", metavar="PORT_FILE")
    args = ap.parse_args(argv)
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return 0
    random.seed(0)
    table, ok = run(args.quick)
    print(table)
    if not args.quick:
        write_readme(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
