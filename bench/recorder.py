"""`clawviz record` for a training run (issue 26 targets), every figure against a baseline
measured in the same run:

    python bench/recorder.py            # full run (~5 min on a loaded 2-core machine)
    python bench/recorder.py --quick    # smoke run (~1 min)

1. exchanges logged under `ulimit -n 256`: 5,000 episodes, one call each, 32 at a time (the
   proxy runs with RLIMIT_NOFILE 256; every line of every log file is counted afterwards);
2. the proxy process's CPU per request with `--db` (the follower ingesting into a SQLite store,
   a child process of its own) vs without, two proxies on one upstream, rounds alternating
   (ABBA); the follower's CPU is shown beside it;
3. `record --workers 2` vs `--workers 1`, requests/s from a client keeping 64 requests in
   flight, rounds alternating (ABBA).

The upstream is bench/proxy.py's (aiohttp, own process, a 1 KB JSON answer); the client is
aiohttp in this process. Prints a Markdown table; nothing here gates.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def _body(words: int) -> bytes:
    return (
        b'{"model": "bench", "messages": [{"role": "user", "content": "'
        + b"word " * words
        + b'"}], "stream": false}'
    )


BODY = _body(400)  # 2 KB; `--body-kb` for larger (a typical agent history is ~75 KB)


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids]


def _upstream(tmp: Path) -> tuple[subprocess.Popen, int]:
    port_file = tmp / "upstream.port"
    up = subprocess.Popen(
        [sys.executable, str(BENCH / "proxy.py"), "--serve-upstream", str(port_file)]
    )
    for _ in range(400):
        if port_file.exists() and port_file.read_text():
            return up, int(port_file.read_text())
        time.sleep(0.05)
    raise RuntimeError("upstream did not start")


def _low_nofile() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def _record(
    up_port: int, out: Path, *extra: str, limited: bool = False
) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "clawviz", "record", "--upstream", f"http://127.0.0.1:{up_port}"]
        + ["--listen", "127.0.0.1:0", "--out", str(out), *extra],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_low_nofile if limited else None,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"proxy did not start: {line}")
    return proc, int(m.group(1))


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err or ""


async def _drive(port: int, n: int, concurrency: int, episodes: int, tag: str) -> float:
    """Send `n` requests (episode i % episodes), `concurrency` in flight; wall seconds."""
    import aiohttp

    sem = asyncio.Semaphore(concurrency)
    conn = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=conn) as s:

        async def one(i: int) -> None:
            async with sem:
                url = f"http://127.0.0.1:{port}/ep/{tag}-{i % episodes}/v1/chat/completions"
                async with s.post(
                    url, data=BODY, headers={"content-type": "application/json"}
                ) as r:
                    await r.read()
                    assert r.status == 200, r.status

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - t0


def _abba(n: int, a: str, b: str) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        out += [a, b, b, a]
    return out[:n]


def _count_lines(folder: Path) -> tuple[int, int]:
    files = list(folder.rglob("*.jsonl"))
    return sum(f.read_bytes().count(b"\n") for f in files), len(files)


def ulimit_row(up: int, tmp: Path, n_episodes: int) -> str:
    out = tmp / "ulimit"
    proc, port = _record(up, out, limited=True)
    try:
        wall = asyncio.run(_drive(port, n_episodes, 32, n_episodes, "ul"))
    finally:
        err = _stop(proc)
    lines, files = _count_lines(out)
    m = re.search(r"(\d+) exchange\(s\) logged, (\d+) lost", err)
    said = f"; the proxy says {m.group(1)} logged, {m.group(2)} lost" if m else ""
    pct = 100.0 * lines / n_episodes
    return (
        f"| exchanges logged under `ulimit -n 256`, {n_episodes:,} episodes, 32 at a time | 100% "
        f"| {pct:.1f}% ({lines:,} lines in {files:,} files, {wall:.1f} s wall{said}) "
        f"| {'met' if lines == n_episodes else 'missed'} |"
    )


def db_row(up: int, tmp: Path, rounds: int, n: int) -> str:
    plain, p_port = _record(up, tmp / "plain")
    store = tmp / "store.db"
    withdb, d_port = _record(up, tmp / "withdb", "--db", f"sqlite:///{store}")
    ports = {"plain": p_port, "db": d_port}
    procs = {"plain": plain, "db": withdb}
    per: dict[str, list[float]] = {"plain": [], "db": []}
    follower: list[float] = []
    try:
        time.sleep(2.0)  # the follower's start (imports) is not the proxy's cost
        for k in _abba(rounds * 2, "plain", "db"):
            kids = _children(withdb.pid)
            before = _cpu_s(procs[k].pid)
            f_before = sum(_cpu_s(c) for c in kids)
            asyncio.run(_drive(ports[k], n, 8, 50, f"cpu{k}"))
            time.sleep(0.5)  # lines written by the writer thread
            per[k].append((_cpu_s(procs[k].pid) - before) / n * 1e3)
            if k == "db":
                time.sleep(1.5)  # the follower's round of ingest
                follower.append((sum(_cpu_s(c) for c in kids) - f_before) / n * 1e3)
    finally:
        _stop(plain)
        _stop(withdb)
    ratios = [d / p for p, d in zip(per["plain"], per["db"], strict=False)]
    med = {k: statistics.median(v) for k, v in per.items()}
    r = med["db"] / med["plain"]
    return (
        f"| proxy CPU per request, `--db` vs without | <= 1.2x | **{r:.2f}x** "
        f"(with {med['db']:.2f} ms "
        f"({min(per['db']):.2f}-{max(per['db']):.2f}), without {med['plain']:.2f} ms "
        f"({min(per['plain']):.2f}-{max(per['plain']):.2f}); per-pair ratios "
        f"{min(ratios):.2f}-{max(ratios):.2f}; {len(per['db'])} rounds of {n} each; the follower "
        f"process spent {statistics.median(follower):.2f} ms per request beside it) "
        f"| {'met' if r <= 1.2 else 'missed'} |"
    )


def workers_row(up: int, tmp: Path, rounds: int, n: int) -> str:
    one, port1 = _record(up, tmp / "w1")
    two, port2 = _record(up, tmp / "w2", "--workers", "2")
    ports = {"1": port1, "2": port2}
    rps: dict[str, list[float]] = {"1": [], "2": []}
    busy: dict[str, list[float]] = {"1": [], "2": []}
    procs = {"1": one, "2": two}

    def tree_cpu(k: str) -> float:
        pid = procs[k].pid
        return _cpu_s(pid) + sum(_cpu_s(c) for c in _children(pid))

    try:
        time.sleep(1.0)
        for k in _abba(rounds * 2, "1", "2"):
            before = tree_cpu(k)
            wall = asyncio.run(_drive(ports[k], n, 64, 200, f"w{k}"))
            rps[k].append(n / wall)
            busy[k].append((tree_cpu(k) - before) / wall)
    finally:
        _stop(one)
        _stop(two)
    med = {k: statistics.median(v) for k, v in rps.items()}
    r = med["2"] / med["1"]
    ratios = [b / a for a, b in zip(rps["1"], rps["2"], strict=False)]
    return (
        f"| `record --workers 2` vs 1, requests/s (64 in flight, {len(BODY) / 1024:.0f} KB "
        f"requests) | >= 1.6x | **{r:.2f}x** "
        f"(2 workers {med['2']:.0f}/s ({min(rps['2']):.0f}-{max(rps['2']):.0f}), 1 worker "
        f"{med['1']:.0f}/s ({min(rps['1']):.0f}-{max(rps['1']):.0f}); per-pair ratios "
        f"{min(ratios):.2f}-{max(ratios):.2f}; {len(rps['1'])} rounds of {n} each; the proxy "
        f"processes kept {statistics.median(busy['1']):.2f} and "
        f"{statistics.median(busy['2']):.2f} cores busy) "
        f"| {'met' if r >= 1.6 else 'missed'} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["ulimit", "db", "workers"], action="append")
    ap.add_argument("--body-kb", type=float, default=2.0, help="request body size")
    a = ap.parse_args(argv)
    global BODY
    BODY = _body(int(a.body_kb * 1024 / 5))
    n_eps, rounds, n_cpu, n_rps = (1000, 2, 200, 500) if a.quick else (5000, 4, 500, 2000)
    tmp = Path(tempfile.mkdtemp(prefix="clawviz-recorder-bench-"))
    up, up_port = _upstream(tmp)
    rows = []
    load0 = os.getloadavg()[0]
    try:
        if not a.only or "ulimit" in a.only:
            rows.append(ulimit_row(up_port, tmp, n_eps))
            print(rows[-1], flush=True)
        if not a.only or "db" in a.only:
            rows.append(db_row(up_port, tmp, rounds, n_cpu))
            print(rows[-1], flush=True)
        if not a.only or "workers" in a.only:
            rows.append(workers_row(up_port, tmp, rounds, n_rps))
            print(rows[-1], flush=True)
    finally:
        up.terminate()
        up.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nload average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print("| what | target | measured | |\n|---|---|---|---|\n" + "\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
