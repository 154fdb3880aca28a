"""Bounded reading: over-long lines, gzip bombs, corrupt gzip, FIFOs, devices and bad links."""

from __future__ import annotations

import gzip
import json
import os
import threading
import zlib
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.jobs.ingest import ingest_paths
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine
from clawviz.store.models import CallRow
from tests.dburl import fresh_url

URL = "https://api.anthropic.com/v1/messages"


def _line(i: int, text: str = "hello") -> bytes:
    rec = {
        "request": {
            "timestamp": 1000.0 + i,
            "method": "POST",
            "url": URL,
            "headers": {"x-session-id": "sess"},
            "body": {"model": "m", "messages": [{"role": "user", "content": f"{text} {i}"}]},
        },
        "response": {
            "timestamp": 1000.5 + i,
            "status_code": 200,
            "body": {
                "content": [{"type": "text", "text": f"reply {i}"}],
                "usage": {"input_tokens": 1, "output_tokens": 1},
                "stop_reason": "end_turn",
            },
        },
    }
    return json.dumps(rec).encode() + b"\n"


@pytest.fixture
def session(tmp_path):
    with Session(get_engine(fresh_url(tmp_path))) as s:
        yield s


def _lines(session) -> list[int]:
    return sorted(session.exec(select(CallRow.line)).all())


def _ingest_within(paths, session, seconds=60, **kw):
    """Ingest in a thread; fail (instead of hanging the suite) if it does not finish."""
    box: dict = {}

    def run():
        try:
            box["report"] = ingest_paths(paths, session=session, **kw)
        except Exception as exc:  # noqa: BLE001
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "ingest hung"
    if "error" in box:
        raise box["error"]
    return box["report"]


def test_overlong_line_is_rejected_while_streaming(session, tmp_path):
    settings = DEFAULT_SETTINGS.with_(max_line_bytes=4096)
    path = tmp_path / "long.jsonl"
    path.write_bytes(_line(1) + _line(2, "x" * 20000) + _line(3))
    report = ingest_paths([path], session=session, settings=settings)
    assert _lines(session) == [1, 3]
    [rej] = report.rejected
    assert rej.file == str(path) and rej.line == 2
    size = len(_line(2, "x" * 20000))
    assert rej.reason == f"line of {size} bytes is longer than 4096 (max_line_bytes); skipped"


def test_gzip_bomb_line_costs_only_itself(session, tmp_path):
    """A small .gz holding a 64 MB line: rejected with bounded memory, neighbours kept."""
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=9) as gz:
        gz.write(_line(1))
        block = b"A" * (1 << 20)
        for _ in range(64):
            gz.write(block)
        gz.write(b"\n")
        gz.write(_line(3))
    assert path.stat().st_size < 1_000_000
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = ingest_paths(
        [path], session=session, settings=DEFAULT_SETTINGS.with_(max_line_bytes=1 << 20)
    )
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert _lines(session) == [1, 3]
    assert [(r.line, r.reason) for r in report.rejected] == [
        (2, f"line of {64 * (1 << 20) + 1} bytes is longer than 1048576 (max_line_bytes); skipped")
    ]
    assert after - before < 48 * 1024  # KB: the 64 MB line never sat in memory


def test_decompression_budget(session, tmp_path):
    path = tmp_path / "big.jsonl.gz"
    with gzip.open(path, "wb") as gz:
        for i in range(1, 101):
            gz.write(_line(i, "y" * 1000))
    one = len(_line(1, "y" * 1000))
    budget = 10 * one + one // 2
    report = ingest_paths(
        [path], session=session, settings=DEFAULT_SETTINGS.with_(gzip_max_bytes=budget)
    )
    kept = _lines(session)
    # The ten lines that end within the budget are read; the eleventh crosses it.
    assert kept == list(range(1, 11))
    [rej] = report.rejected
    assert rej.line == 11
    assert rej.reason.startswith(f"decompressed size passes {budget} bytes (gzip_max_bytes)")


def _two_member_gzip(path: Path, first: bytes, second: bytes, corrupt_second_crc: bool) -> None:
    a = gzip.compress(first)
    b = bytearray(gzip.compress(second))
    if corrupt_second_crc:
        b[-8] ^= 0xFF  # the member's CRC32 trailer
    path.write_bytes(a + bytes(b))


def test_gzip_crc_error_is_reported_and_earlier_lines_kept(session, tmp_path):
    path = tmp_path / "crc.jsonl.gz"
    _two_member_gzip(path, _line(1) + _line(2), _line(3) + _line(4), corrupt_second_crc=True)
    report = ingest_paths([path], session=session)
    assert _lines(session) == [1, 2]
    [rej] = report.rejected
    assert rej.line == 3
    assert rej.reason.startswith("gzip CRC check failed")
    assert "the member starting at line 3" in rej.reason


def test_corrupt_gzip_never_stores_a_garbage_line(session, tmp_path):
    """Flip a byte inside the deflate data of a one-member file: the bytes may still decode to
    valid JSON with other content; no line of that member may be stored."""
    data = b"".join(_line(i) for i in range(1, 6))
    comp = bytearray(zlib.compress(data, 9)[2:-4])  # raw deflate
    found = None
    for pos in range(len(comp) // 3, len(comp) - 4):
        trial = bytearray(comp)
        trial[pos] ^= 0x01
        try:
            out = zlib.decompressobj(-15).decompress(bytes(trial))
        except zlib.error:
            continue
        if out != data and out.count(b"\n") == 5:
            found = trial
            break
    assert found is not None, "no silent corruption found to test with"
    header = gzip.compress(b"")[:10]
    trailer = zlib.crc32(data).to_bytes(4, "little") + len(data).to_bytes(4, "little")
    path = tmp_path / "garbage.jsonl.gz"
    path.write_bytes(header + bytes(found) + trailer)
    report = ingest_paths([path], session=session)
    assert _lines(session) == []
    assert [r.line for r in report.rejected] == [1]
    assert report.rejected[0].reason.startswith("gzip ")


def test_folder_reads_only_regular_files(session, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "good.jsonl").write_bytes(_line(1))
    os.mkfifo(folder / "fifo.jsonl")
    os.symlink("/dev/zero", folder / "zero.jsonl")
    os.symlink(folder / "missing.jsonl", folder / "dangling.jsonl")
    os.symlink(folder / "loop.jsonl", folder / "loop.jsonl")
    os.mkfifo(folder / "task.md")
    report = _ingest_within([folder], session)
    assert _lines(session) == [1]
    skipped = {Path(s.path).name: s.reason for s in report.skipped_files}
    assert skipped["fifo.jsonl"] == "a FIFO, not a regular file"
    assert skipped["zero.jsonl"] == "a device (through a link to '/dev/zero'), not a regular file"
    assert skipped["dangling.jsonl"].startswith("a dangling link (to ")
    assert skipped["loop.jsonl"] == "a link that loops"
    assert report.errors == []


def test_fifo_given_by_name_is_skipped(session, tmp_path):
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    report = _ingest_within([fifo], session)
    assert [(s.path, s.reason) for s in report.skipped_files] == [
        (str(fifo), "a FIFO, not a regular file")
    ]
