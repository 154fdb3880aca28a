"""`clawviz record --workers N`: N processes on one port, each with its own files, merged by
the order key in `seq`: every exchange appears exactly once, in request order."""

from __future__ import annotations

import concurrent.futures
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import httpx
from record_support import read_log

from tests.dburl import fresh_url

REPO = Path(__file__).resolve().parents[1]


def test_four_workers_log_every_exchange_once_in_order(tmp_path, upstream):
    from sqlmodel import Session

    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.calls import load_calls
    from clawviz.store.db import get_engine

    lt, scripted, url = upstream
    out = tmp_path / "log"
    db = fresh_url(tmp_path, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "clawviz", "record", "--upstream", url, "--workers", "4"]
        + ["--listen", "127.0.0.1:0", "--out", str(out), "--db", db],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "listening on" in line and "4 workers" in line, line
    base = line.split("listening on ")[1].split(" ")[0]
    n_episodes, n_calls = 16, 5

    def episode(ep: int) -> list[int]:
        codes = []
        for i in range(n_calls):  # one after another, each on a new connection
            body = {"model": "m", "messages": [{"role": "user", "content": f"ep{ep} call{i}"}]}
            r = httpx.post(
                f"{base}/ep/ep{ep}/v1/chat/completions", json=body, headers={"Connection": "close"}
            )
            codes.append(r.status_code)
        return codes

    try:
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            assert all(c == [200] * n_calls for c in pool.map(episode, range(n_episodes)))
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    log = read_log(out)
    by_episode: dict[str, list[dict]] = defaultdict(list)
    workers = set()
    for name, recs in log.items():
        assert ".w" in name, name  # each worker its own files: no line of two processes
        for r in recs:
            by_episode[r["clawviz"]["episode_id"]].append(r)
            workers.add(r["clawviz"]["worker"])
            assert name.endswith(f".w{r['clawviz']['worker']}.jsonl")
    assert len(workers) > 1, workers  # the kernel spread the connections
    for ep in range(n_episodes):
        recs = sorted(by_episode[f"ep{ep}"], key=lambda r: r["clawviz"]["seq"])
        got = [r["request"]["body"]["messages"][0]["content"] for r in recs]
        assert got == [f"ep{ep} call{i}" for i in range(n_calls)]  # once each, in order
    # The one follower (--db) loaded it all, merging the workers' files in that order; a
    # later ingest of the folder adds nothing.
    with Session(get_engine(db)) as s:
        calls = load_calls(s, "ep3")
        report = ingest_paths([out], session=s)
        assert report.n_calls == 0 and not report.rejected and not report.errors
    texts = [c.messages[-1]["content"][0]["text"] for c in calls]
    assert texts == [f"ep3 call{i}" for i in range(n_calls)]


def test_order_key_is_unique_and_monotonic_across_workers(tmp_path):
    import io

    from clawviz.record.logfile import LogWriter

    a = LogWriter(tmp_path, stderr=io.StringIO(), worker=0)
    b = LogWriter(tmp_path, stderr=io.StringIO(), worker=3)
    try:
        assert a.file_for("e1") == "e1.w0.jsonl" and b.file_for("e1") == "e1.w3.jsonl"
        keys = [a.order_seq("e1.w0.jsonl", 100.0), a.order_seq("e1.w0.jsonl", 100.0)]
        keys += [b.order_seq("e1.w3.jsonl", 100.0), a.order_seq("e1.w0.jsonl", 100.000002)]
        assert len(set(keys)) == 4
        assert keys[0] < keys[1] < keys[3]  # the same microsecond twice still increases
        assert keys[0] < keys[2]  # the same time: worker breaks the tie
    finally:
        a.close()
        b.close()
