"""`clawviz follow DIR --db URL`: the `--db` of `clawviz record`, in its own process. A
follower that restarts or falls behind resumes from its last line with nothing doubled."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import orjson
from sqlmodel import Session, select

from clawviz.record.follow import Follower
from clawviz.store.db import get_engine
from clawviz.store.models import CallRow
from tests.dburl import fresh_url

REPO = Path(__file__).resolve().parents[1]


def _line(ep: str, i: int) -> bytes:
    rec = {
        "request": {
            "timestamp": 1000.0 + i,
            "method": "POST",
            "url": "http://h/v1/chat/completions",
            "headers": {},
            "body": {"model": "m", "messages": [{"role": "user", "content": f"{ep} q{i}"}]},
        },
        "response": {
            "timestamp": 1000.5 + i,
            "status_code": 200,
            "headers": {},
            "body": {"choices": [{"message": {"role": "assistant", "content": f"a{i}"}}]},
        },
        "clawviz": {"episode_id": ep, "seq": i},
    }
    return orjson.dumps(rec) + b"\n"


def _calls(url: str) -> list[tuple[str, int]]:
    with Session(get_engine(url)) as s:
        rows = s.exec(select(CallRow.episode_id, CallRow.seq)).all()
    return sorted((e, q) for e, q in rows)


def test_restart_and_growth_load_each_line_once(tmp_path):
    out = tmp_path / "log"
    out.mkdir()
    url = fresh_url(tmp_path, "f")
    (out / "a.jsonl").write_bytes(_line("a", 0) + _line("a", 1))
    (out / "b.jsonl").write_bytes(_line("b", 0))
    f = Follower(out, url, stderr=io.StringIO())
    assert f.pass_once() == 3
    assert f.pass_once() == 0  # nothing changed: nothing read
    with open(out / "a.jsonl", "ab") as fh:
        fh.write(_line("a", 2))
    assert f.pass_once() == 1
    # A restart knows nothing, reads the folder again, and loads only what is new.
    with open(out / "b.jsonl", "ab") as fh:
        fh.write(_line("b", 1))
    g = Follower(out, url, stderr=io.StringIO())
    assert g.pass_once() == 1
    assert _calls(url) == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]


def test_a_line_being_written_waits_for_its_newline(tmp_path):
    out = tmp_path / "log"
    out.mkdir()
    url = fresh_url(tmp_path, "f")
    whole = _line("c", 0) + _line("c", 1)
    (out / "c.jsonl").write_bytes(whole[:-20])  # the second line is half written
    err = io.StringIO()
    f = Follower(out, url, settle=60, stderr=err)
    assert f.pass_once() == 0  # not read while the line is being written: no torn rejection
    (out / "c.jsonl").write_bytes(whole)
    assert f.pass_once() == 2
    assert "not loaded" not in err.getvalue()
    assert _calls(url) == [("c", 0), ("c", 1)]


def test_follow_command_once(tmp_path):
    out = tmp_path / "log"
    out.mkdir()
    (out / "d.jsonl").write_bytes(_line("d", 0))
    url = fresh_url(tmp_path, "f")
    r = subprocess.run(
        [sys.executable, "-m", "clawviz", "follow", str(out), "--db", url, "--once"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "1 call(s) ingested, 0 error(s)" in r.stderr
    assert _calls(url) == [("d", 0)]
