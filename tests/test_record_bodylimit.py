"""One line budget for the proxy and ingest (issue 28, Proxy): the setting `max_line_bytes`.

The proxy forwards every body whole but logs an exchange past the budget with its body cut and
marked (`clawviz.truncated_body`); ingest rejects such a line with that reason, and a file whose
only line is over the budget is a rejected line (file and line), never a silent skip."""

from __future__ import annotations

import io
from dataclasses import replace

import httpx
import orjson
import pytest
from record_support import LoopThread, Scripted, read_log
from sqlmodel import Session

from clawviz.jobs.ingest import ingest_paths
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine
from tests.dburl import fresh_url

LIMIT = 64 << 10
SETTINGS = replace(DEFAULT_SETTINGS, max_line_bytes=LIMIT)


@pytest.fixture
def session(tmp_path):
    engine = get_engine(fresh_url(tmp_path, "bodylimit"))
    with Session(engine) as s:
        yield s


def _request(pad: int) -> dict:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "x" * pad}],
    }


def test_a_file_whose_only_line_is_too_long_is_a_rejected_line(tmp_path, session):
    rec = {
        "request": {
            "timestamp": 1.0,
            "method": "POST",
            "url": "https://api.openai.com/v1/chat/completions",
            "headers": {},
            "body": _request(2 * LIMIT),
        },
        "response": None,
    }
    path = tmp_path / "big.jsonl"
    path.write_bytes(orjson.dumps(rec) + b"\n")
    report = ingest_paths(path, session=session, settings=SETTINGS)
    assert report.rejected, report
    (rej,) = report.rejected
    assert rej.file == str(path) or rej.file.endswith("big.jsonl")
    assert rej.line == 1
    assert "max_line_bytes" in rej.reason
    (skipped,) = report.skipped_files
    assert "no exchange" not in skipped.reason
    assert "line 1" in skipped.reason


def test_fit_line_cuts_the_longest_body_and_marks_it():
    from clawviz.record.logfile import fit_line

    rec = {
        "request": {
            "timestamp": 1.0,
            "method": "POST",
            "url": "u",
            "headers": {},
            "body": _request(4 * LIMIT),
        },
        "response": {"timestamp": 2.0, "status_code": 200, "headers": {}, "body": {"ok": 1}},
        "clawviz": {"seq": 0},
    }
    line, cut = fit_line(rec, LIMIT)
    assert cut
    assert len(line) <= LIMIT and line.endswith(b"\n")
    out = orjson.loads(line)
    size = len(orjson.dumps(rec["request"]["body"]))
    assert out["clawviz"]["truncated_body"] == {"request": size}
    assert "body" not in out["request"]
    assert out["request"]["body_truncated"].startswith('{"model":"m"')
    assert out["response"]["body"] == {"ok": 1}
    assert "truncated_body" not in rec["clawviz"]  # the submitted record is not changed
    # Escaping-heavy text still fits.
    rec["request"]["body"] = {"s": '"\n\\' * LIMIT}
    line, cut = fit_line(rec, LIMIT)
    assert cut and len(line) <= LIMIT


@pytest.fixture()
def rig(tmp_path):
    lt = LoopThread()
    scripted = Scripted()
    port = lt.start_scripted(scripted)
    out = tmp_path / "log"
    proxy = lt.start_proxy(
        f"http://127.0.0.1:{port}", str(out), max_line_bytes=LIMIT, stderr=io.StringIO()
    )
    yield scripted, proxy, out
    if not proxy.fut.done():
        proxy.stop()
    lt.close()


def test_proxy_logs_a_cut_marked_line_and_forwards_the_whole_body(rig, session):
    scripted, proxy, out = rig
    body = orjson.dumps(_request(4 * LIMIT))
    r = httpx.post(
        f"{proxy.url}/ep/big/v1/chat/completions",
        content=body,
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 200
    writer = proxy.stop()
    assert writer.lost == 0
    assert writer.truncated == 1
    assert scripted.received[0]["body"] == body  # forwarded byte for byte
    raw = (out / "big.jsonl").read_bytes()
    assert len(raw) <= LIMIT
    (rec,) = read_log(out)["big.jsonl"]
    # The scripted server echoes the prompt, so both sides may be cut; each notes its size.
    assert rec["clawviz"]["truncated_body"]["request"] == len(body)
    assert rec["request"]["body_truncated"]
    assert "body" not in rec["request"]
    assert rec["response"]["status_code"] == 200
    # Ingest, with the same budget, names the cut line instead of loading a different chat.
    report = ingest_paths(out, session=session, settings=SETTINGS)
    (rej,) = report.rejected
    assert rej.line == 1 and rej.file.endswith("big.jsonl")
    assert "cut by the proxy" in rej.reason and f"request of {len(body)} bytes" in rej.reason


def test_an_over_long_line_beside_unrecognised_lines_is_still_rejected(tmp_path, session):
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b'{"request": {"body": "' + b"y" * (2 * LIMIT) + b'"}}\n{"other": 1}\n')
    report = ingest_paths(path, session=session, settings=SETTINGS)
    (rej,) = report.rejected
    assert rej.line == 1 and rej.file.endswith("mixed.jsonl")
    assert "max_line_bytes" in rej.reason
