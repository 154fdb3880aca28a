"""Several real processes on one brand-new SQLite store: schema creation and the same ingest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.store.db import get_engine
from clawviz.store.models import CallRow, Review, Source
from tests.dburl import on_postgres

REPO = Path(__file__).resolve().parents[2]
N = 4

pytestmark = pytest.mark.skipif(on_postgres(), reason="one SQLite file shared by processes")


def _spawn(code: str, gate: Path, *args: str) -> subprocess.Popen:
    """A Python process that imports clawviz, says it is ready, then waits for the gate to open,
    so all of them start the work at the same moment whatever their import time."""
    prelude = (
        "import os, sys, time\n"
        "import clawviz.cli.main, clawviz.store.db\n"
        f"open({str(gate)!r} + '.ready.' + str(os.getpid()), 'w').close()\n"
        f"while not os.path.exists({str(gate)!r}):\n"
        "    time.sleep(0.01)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", prelude + code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def _open_gate(gate: Path, n: int) -> None:
    deadline = time.monotonic() + 120
    while len(list(gate.parent.glob(gate.name + ".ready.*"))) < n:
        assert time.monotonic() < deadline, "processes did not start"
        time.sleep(0.05)
    gate.touch()


def _finish(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        out.append((p.returncode, stdout, stderr))
    return out


def test_schema_creation_race_on_a_new_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    code = (
        "from datetime import UTC, datetime\n"
        "from sqlmodel import Session\n"
        "from clawviz.store.db import get_engine\n"
        "from clawviz.store.models import Review\n"
        "with Session(get_engine(sys.argv[1])) as s:\n"
        "    s.add(Review(task_id='t', decision='accept', reviewer=sys.argv[2],\n"
        "                 note='', created_at=datetime.now(UTC)))\n"
        "    s.commit()\n"
    )
    gate = tmp_path / "gate"
    procs = [_spawn(code, gate, url, f"r{i}") for i in range(N)]
    _open_gate(gate, N)
    results = _finish(procs)
    assert [(rc, err) for rc, _, err in results] == [(0, "")] * N
    with Session(get_engine(url)) as s:
        assert sorted(r.reviewer for r in s.exec(select(Review))) == [f"r{i}" for i in range(N)]


def _exchange_line(i: int) -> str:
    return json.dumps(
        {
            "request": {
                "timestamp": 100.0 + i,
                "method": "POST",
                "url": "https://api.anthropic.com/v1/messages",
                "headers": {"x-session-id": "same-file"},
                "body": {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]},
            },
            "response": {
                "timestamp": 100.5 + i,
                "status_code": 200,
                "body": {"content": [{"type": "text", "text": "a"}], "stop_reason": "end_turn"},
            },
        }
    )


def test_concurrent_ingest_of_the_same_file(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    log = tmp_path / "calls.jsonl"
    log.write_text("".join(_exchange_line(i) + "\n" for i in range(1, 101)))
    code = "sys.exit(clawviz.cli.main.main(['--db', sys.argv[1], 'ingest', sys.argv[2]]))\n"
    gate = tmp_path / "gate"
    procs = [_spawn(code, gate, url, str(log)) for _ in range(N)]
    _open_gate(gate, N)
    results = _finish(procs)
    assert [rc for rc, _, _ in results] == [0] * N, results
    assert all(err == "" for _, _, err in results), results
    outs = [out for _, out, _ in results]
    winners = [o for o in outs if f"loaded         exchange                 {log}" in o]
    assert len(winners) == 1, outs
    for o in outs:
        if o in winners:
            continue
        assert ("already_loaded" in o) or (
            "already_being_loaded" in o and "already being loaded by another process" in o
        ), o
        assert "IntegrityError" not in o and "UNIQUE" not in o
    with Session(get_engine(url)) as s:
        assert len(s.exec(select(Source)).all()) == 1
        assert len(s.exec(select(CallRow.call_id)).all()) == 100
