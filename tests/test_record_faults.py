"""`clawviz record` under faults: each case of issue 11, against the scripted server."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import orjson
import pytest
from record_support import LoopThread, read_log

from tests.dburl import fresh_url

REPO = Path(__file__).resolve().parents[1]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _parse(out: Path, name: str) -> list[dict]:
    return read_log(out)[name]


def _ingest_calls(tmp_path: Path, out: Path):
    from sqlmodel import Session, select

    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine
    from clawviz.store.models import CallRow

    url = fresh_url(tmp_path, "store")
    with Session(get_engine(url)) as s:
        report = ingest_paths([out], session=s)
        assert not report.rejected and not report.errors
        return list(s.exec(select(CallRow)).all())


def test_upstream_unreachable_is_502_and_logged_failed(tmp_path):
    lt = LoopThread()
    err = io.StringIO()
    proxy = lt.start_proxy(f"http://127.0.0.1:{_closed_port()}", str(tmp_path / "log"), stderr=err)
    r = httpx.post(f"{proxy.url}/ep/u/v1/chat/completions", json={"model": "m", "messages": []})
    proxy.stop()
    lt.close()
    assert r.status_code == 502
    assert r.json()["error"]["type"] == "upstream_unreachable"
    (rec,) = _parse(tmp_path / "log", "u.jsonl")
    assert rec["response"]["status_code"] == 502
    assert rec["clawviz"]["proxy_error"] == "upstream_unreachable"
    assert "upstream unreachable" in err.getvalue()
    (call,) = _ingest_calls(tmp_path, tmp_path / "log")
    assert call.failure == "failed_http" and call.http_status == 502


def test_upstream_timeout_is_504_and_logged_failed(tmp_path, upstream):
    lt, scripted, url = upstream
    proxy = lt.start_proxy(url, str(tmp_path / "log"), read_timeout=0.3, stderr=io.StringIO())
    t0 = time.monotonic()
    r = httpx.post(
        f"{proxy.url}/ep/t/v1/chat/completions",
        json={"model": "m", "messages": []},
        headers={"x-script": "hang"},
        timeout=10,
    )
    elapsed = time.monotonic() - t0
    proxy.stop()
    assert r.status_code == 504 and elapsed < 10  # the scripted server hangs for 30 s
    (rec,) = _parse(tmp_path / "log", "t.jsonl")
    assert rec["response"]["status_code"] == 504
    assert rec["clawviz"]["proxy_error"] == "upstream_timeout"
    (call,) = _ingest_calls(tmp_path, tmp_path / "log")
    assert call.failure == "failed_http" and call.http_status == 504


def test_client_disconnect_mid_stream_cancels_upstream(tmp_path, upstream):
    lt, scripted, url = upstream
    proxy = lt.start_proxy(url, str(tmp_path / "log"), stderr=io.StringIO())
    got = b""
    with httpx.Client(timeout=10) as c:
        with c.stream(
            "POST",
            f"{proxy.url}/ep/d/v1/chat/completions",
            json={"model": "m", "messages": [], "stream": True},
            headers={"x-script": "slow:200:0.01"},
        ) as r:
            for chunk in r.iter_raw():
                got += chunk
                if got.count(b"\n\n") >= 3:
                    break
    # Leaving the block closed the connection mid-stream.
    (stream,) = scripted.streams
    assert stream.done.wait(10)
    assert stream.went_away, "the upstream stream was not cancelled"
    assert stream.sent < 150  # 200 events 10 ms apart: cut off long before the end
    proxy.stop()
    (rec,) = _parse(tmp_path / "log", "d.jsonl")
    assert rec["clawviz"]["delivered"] is False
    logged = rec["response"]["body_raw"].encode()
    everything = b"".join(stream.events)
    assert (
        everything.startswith(logged) and logged.startswith(got) and len(logged) < len(everything)
    )
    (call,) = _ingest_calls(tmp_path, tmp_path / "log")
    assert call.delivered is False and call.failure == "truncated_stream"


def test_client_gone_before_headers_cancels_upstream(tmp_path, upstream):
    lt, scripted, url = upstream
    proxy = lt.start_proxy(url, str(tmp_path / "log"), stderr=io.StringIO())
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{proxy.url}/ep/g/v1/chat/completions",
            json={"model": "m", "messages": []},
            headers={"x-script": "hang"},
            timeout=httpx.Timeout(10, read=0.5),
        )
    assert scripted.hangs_cancelled.wait(10), "upstream request was not cancelled"
    proxy.stop()
    (rec,) = _parse(tmp_path / "log", "g.jsonl")
    assert rec["response"] is None
    assert rec["clawviz"]["delivered"] is False
    (call,) = _ingest_calls(tmp_path, tmp_path / "log")
    assert call.failure == "orphaned_request" and call.delivered is False


def test_stream_without_final_event_logged_as_is(tmp_path, upstream):
    lt, scripted, url = upstream
    proxy = lt.start_proxy(url, str(tmp_path / "log"), stderr=io.StringIO())
    for path in ("/ep/n/v1/messages", "/ep/n/v1/chat/completions"):
        r = httpx.post(
            proxy.url + path,
            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
            headers={"x-script": "no-final"},
        )
        assert r.status_code == 200
    proxy.stop()
    recs = _parse(tmp_path / "log", "n.jsonl")
    for rec, stream in zip(recs, scripted.streams, strict=True):
        assert rec["response"]["body_raw"] == b"".join(stream.events).decode()
        assert rec["clawviz"]["delivered"] is True
    calls = _ingest_calls(tmp_path, tmp_path / "log")
    assert [c.failure for c in calls] == ["truncated_stream", "truncated_stream"]


def test_disk_full_keeps_serving_and_reports(tmp_path, upstream):
    lt, scripted, url = upstream
    out = tmp_path / "log"
    out.mkdir()
    (out / "full.jsonl").symlink_to("/dev/full")  # every write: ENOSPC
    err = io.StringIO()
    proxy = lt.start_proxy(url, str(out), stderr=err)
    body = {"model": "m", "messages": [{"role": "user", "content": "still here"}]}
    r1 = httpx.post(f"{proxy.url}/ep/full/v1/chat/completions", json=body)
    r2 = httpx.post(f"{proxy.url}/ep/ok/v1/chat/completions", json=body)
    writer = proxy.stop()
    assert r1.status_code == r2.status_code == 200
    assert r1.json()["choices"][0]["message"]["content"] == "echo: still here"
    assert writer.lost == 1 and writer.written == 1
    assert "NOT logged" in err.getvalue() and "No space left on device" in err.getvalue()
    assert len(_parse(out, "ok.jsonl")) == 1


def test_short_write_tears_only_its_own_line(tmp_path, monkeypatch):
    from clawviz.record import logfile

    real = os.write
    calls = {"n": 0}

    def flaky(fd, data):
        calls["n"] += 1
        if calls["n"] == 2:
            return real(fd, data[: len(data) // 2])  # disk filled up mid-line
        return real(fd, data)

    monkeypatch.setattr(logfile.os, "write", flaky)
    w = logfile.LogWriter(tmp_path, run_name="r.jsonl", stderr=io.StringIO())
    for i in range(3):
        w.submit("r.jsonl", {"request": {"url": "u", "i": i}})
    w.close()
    lines = (tmp_path / "r.jsonl").read_bytes().split(b"\n")
    assert orjson.loads(lines[0])["request"]["i"] == 0
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(lines[1])
    assert orjson.loads(lines[2])["request"]["i"] == 2
    assert w.lost == 1


# -- the proxy as a real process: SIGTERM and kill -9 ------------------------------------------


def _start_process(upstream: str, out: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "clawviz", "record", "--upstream", upstream]
        + ["--listen", "127.0.0.1:0", "--out", str(out)],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stderr.readline()
    assert "listening on" in line, line
    return proc, line.split("listening on ")[1].split(" ")[0]


def test_sigterm_finishes_in_flight_then_exits(tmp_path, upstream):
    lt, scripted, url = upstream
    out = tmp_path / "log"
    proc, base = _start_process(url, out)
    try:
        received: list[bytes] = []
        first = threading.Event()

        def client():
            with httpx.stream(
                "POST",
                f"{base}/ep/s/v1/chat/completions",
                json={"model": "m", "messages": [], "stream": True},
                headers={"x-script": "slow:100:0.02"},
                timeout=10,
            ) as r:
                for chunk in r.iter_raw():
                    received.append(chunk)
                    first.set()

        t = threading.Thread(target=client)
        t.start()
        assert first.wait(10)
        proc.send_signal(signal.SIGTERM)
        refused_while_draining = False
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{base}/v1/models", timeout=2)  # the signal is not handled yet
            except httpx.ConnectError:
                refused_while_draining = t.is_alive()
                break
            time.sleep(0.02)
        assert refused_while_draining  # no new exchanges once stopping, the old one goes on
        t.join(10)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    (stream,) = scripted.streams
    assert b"".join(received) == b"".join(stream.events)  # the whole stream reached the client
    (rec,) = _parse(out, "s.jsonl")
    assert rec["clawviz"]["delivered"] is True
    assert rec["response"]["body_raw"].encode() == b"".join(stream.events)


def test_kill_9_leaves_only_whole_lines(tmp_path, upstream):
    lt, scripted, url = upstream
    out = tmp_path / "log"
    proc, base = _start_process(url, out)
    stop = threading.Event()
    done = []

    def client(i):
        with httpx.Client(timeout=5) as c:
            while not stop.is_set():
                try:
                    c.post(
                        f"{base}/ep/k/v1/chat/completions",
                        json={"model": "m", "messages": [{"role": "user", "content": "y" * 20000}]},
                        headers={"x-script": "big:100000"},
                    )
                    done.append(i)
                except httpx.HTTPError:
                    return

    threads = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(done) < 12 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    stop.set()
    for t in threads:
        t.join(10)
    data = (out / "k.jsonl").read_bytes()
    *whole, tail = data.split(b"\n")
    assert len(whole) >= 5
    for line in whole:
        rec = orjson.loads(line)
        assert len(rec["response"]["body"]["choices"][0]["message"]["content"]) == 100000
    # The kernel may cut the one write in progress when SIGKILL lands (a short write): then
    # only the last line is torn, and ingest reports it as such and loads every other line.
    assert len(_ingest_calls_allowing_torn(tmp_path, out, torn=bool(tail))) == len(whole)


def _ingest_calls_allowing_torn(tmp_path, out, *, torn):
    from sqlmodel import Session, select

    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine
    from clawviz.store.models import CallRow

    with Session(get_engine(fresh_url(tmp_path, "k"))) as s:
        report = ingest_paths([out], session=s)
        reasons = [r.reason for r in report.rejected]
        assert len(reasons) == int(torn) and all("truncated last line" in r for r in reasons)
        return list(s.exec(select(CallRow)).all())


def test_seq_continues_in_an_existing_episode_file(tmp_path):
    from clawviz.record import logfile

    (tmp_path / "ep-1.jsonl").write_bytes(b'{"a":1}\n{"a":2}\n{"a":3}\n')
    w = logfile.LogWriter(tmp_path, stderr=io.StringIO())
    assert [w.next_seq("ep-1.jsonl") for _ in range(2)] == [3, 4]
    assert w.next_seq(w.file_for(None)) == 0  # this run's own file starts at 0
    assert w.file_for("a/b c") != w.file_for("a_b_c")  # cleaned ids never share a file
    w.close()
