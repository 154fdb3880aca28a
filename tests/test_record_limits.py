"""`clawviz record` for a training run: more episodes than open files, nothing lost."""

from __future__ import annotations

import concurrent.futures
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from record_support import read_log

REPO = Path(__file__).resolve().parents[1]


def _low_nofile() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def start_limited(upstream: str, out: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """The proxy as a process under `ulimit -n 256`."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "clawviz", "record", "--upstream", upstream]
        + ["--listen", "127.0.0.1:0", "--out", str(out), *extra],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_low_nofile,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "listening on" in line, line
    return proc, line.split("listening on ")[1].split(" ")[0]


def test_more_episodes_than_ulimit_n_all_logged(tmp_path, upstream):
    lt, scripted, url = upstream
    out = tmp_path / "log"
    proc, base = start_limited(url, out)
    n_episodes, rounds = 400, 2  # 400 files > 256 descriptors; round 2 reopens each for append
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    local = __import__("threading").local()

    def call(job: tuple[int, int]) -> int:
        ep, r = job
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=base, timeout=30)
        msg = {**body, "messages": [{"role": "user", "content": f"ep{ep} round{r}"}]}
        return local.client.post(f"/ep/ep{ep}/v1/chat/completions", json=msg).status_code

    try:
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            for r in range(rounds):
                codes = list(pool.map(call, [(ep, r) for ep in range(n_episodes)]))
                assert codes == [200] * n_episodes
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"{n_episodes * rounds} exchange(s) logged, 0 lost" in err, err
    log = read_log(out)
    assert len(log) == n_episodes
    for ep in range(n_episodes):
        recs = log[f"ep{ep}.jsonl"]
        assert [r["clawviz"]["seq"] for r in recs] == list(range(rounds))
        got = [r["request"]["body"]["messages"][0]["content"] for r in recs]
        assert got == [f"ep{ep} round{r}" for r in range(rounds)]


def test_pool_closes_least_recently_used_and_reopens_for_append(tmp_path):
    import io

    from clawviz.record.logfile import LogWriter

    w = LogWriter(tmp_path, run_name="r.jsonl", stderr=io.StringIO(), max_open=3)
    order = ["a", "b", "c", "a", "d", "b", "a"]  # d evicts b (a was used after b)
    for i, name in enumerate(order):
        w.submit(f"{name}.jsonl", {"i": i})
    w.close()
    assert w.lost == 0 and w.written == len(order)
    assert w.reopened == 1  # only b came back after being closed
    for name in "abcd":
        lines = (tmp_path / f"{name}.jsonl").read_text().splitlines()
        assert [int(x.split(":")[1].rstrip("}")) for x in lines] == [
            i for i, n in enumerate(order) if n == name
        ]


# -- a log write that fails is never silent ----------------------------------------------------


def _health(base: str) -> tuple[int, dict]:
    r = httpx.get(f"{base}/_clawviz/health")
    return r.status_code, r.json()


def test_health_counts_logged_and_lost_and_exit_status(tmp_path, upstream):
    lt, scripted, url = upstream
    out = tmp_path / "log"
    out.mkdir()
    (out / "full.jsonl").symlink_to("/dev/full")  # every write to this episode: ENOSPC
    proc, base = start_limited(url, out)
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    try:
        code, h = _health(base)
        assert code == 200 and (h["logged"], h["lost"], h["queued"]) == (0, 0, 0), h
        assert httpx.post(f"{base}/ep/ok/v1/chat/completions", json=body).status_code == 200
        assert httpx.post(f"{base}/ep/full/v1/chat/completions", json=body).status_code == 200
        for _ in range(100):  # the writer thread is behind the answer by a moment
            code, h = _health(base)
            if h["queued"] == 0:
                break
            time.sleep(0.05)
        assert code == 503 and h["logged"] == 1 and h["lost"] == 1 and not h["logging"], h
        assert "No space left on device" in h["last_error"]
        assert not any("_clawviz" in r["path"] for r in scripted.received)  # never forwarded
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "NOT logged" in err and "1 lost" in err
    assert [len(v) for v in read_log(out).values()] == [1]


def test_fail_closed_answers_503_while_the_log_fails_and_recovers(tmp_path, upstream):
    import io

    lt, scripted, url = upstream
    out = tmp_path / "log"
    out.mkdir()
    (out / "full.jsonl").symlink_to("/dev/full")
    proxy = lt.start_proxy(url, str(out), stderr=io.StringIO(), fail_closed=True)
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    post = lambda ep: httpx.post(f"{proxy.url}/ep/{ep}/v1/chat/completions", json=body)  # noqa: E731
    assert post("full").status_code == 200  # answered before its line failed
    for _ in range(100):
        code, h = _health(proxy.url)
        if h["queued"] == 0:
            break
        time.sleep(0.05)
    assert h["lost"] == 1 and code == 503
    n_forwarded = len(scripted.received)
    r = post("ok")  # refused, not forwarded: its line is the probe, and it is written
    assert r.status_code == 503 and r.json()["error"]["type"] == "not_logging"
    assert len(scripted.received) == n_forwarded
    for _ in range(100):
        code, h = _health(proxy.url)
        if h["queued"] == 0:
            break
        time.sleep(0.05)
    assert code == 200 and h["refused"] == 1 and h["logged"] == 1, h
    assert post("ok").status_code == 200  # logging is back: served again
    writer = proxy.stop()
    assert (writer.written, writer.lost) == (2, 1)
    recs = read_log(out)["ok.jsonl"]
    assert [r["response"]["status_code"] for r in recs] == [503, 200]
    assert recs[0]["clawviz"]["forwarded"] is False
