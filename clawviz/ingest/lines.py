"""Reading log files: bounded lines of plain or gzip files, and file fingerprints.

Pure reading, no store: `clawviz.jobs.ingest` walks the files, detects their formats and writes
what these readers give to the store.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import xxhash

from clawviz.ingest import bounded
from clawviz.settings import DEFAULT_SETTINGS, Settings


@dataclass
class Rejection:
    """A line that was not loaded: file, 1-based line and a one-line reason."""

    file: str
    line: int
    reason: str


FINGERPRINT = "xxh3-128:"
"""Prefix of a file fingerprint in `Source.sha256` (older stores hold a bare sha256 hex)."""


def fingerprint(path: Path, limit: int | None = None) -> str:
    """The file's identity for idempotent re-ingest: xxh3-128 of its bytes (or its first `limit`).

    A streaming hash, so the fingerprint of a file's first N bytes stays what it was when the
    file was N bytes long: a file that grew by appends is recognised by hashing its old length.
    Several times cheaper than sha256 (it runs at memory speed).
    """
    h = xxhash.xxh3_128()
    left = limit if limit is not None else -1
    with path.open("rb") as f:
        while left:
            chunk = f.read(1 << 20 if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            if left > 0:
                left -= len(chunk)
    return FINGERPRINT + h.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file: how stores written before xxh3 named their sources."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def file_hashes(path: Path, prefixes: Iterable[int]) -> tuple[int, str, dict[int, str]]:
    """(size, fingerprint, {n: fingerprint of the first n bytes}) in one pass over the bytes the
    file had when it was opened (a log that grows meanwhile is read up to that size). Each is
    what `fingerprint` gives for those bytes, so a grown log's old head matches its stored
    source."""
    h = xxhash.xxh3_128()
    heads: dict[int, str] = {}
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        for stop in [*sorted({n for n in prefixes if 0 < n < size}), size]:
            while pos < stop:
                chunk = f.read(min(1 << 20, stop - pos))
                if not chunk:  # truncated meanwhile: hash what there is
                    size = stop = pos
                    break
                h.update(chunk)
                pos += len(chunk)
            heads[stop] = FINGERPRINT + h.copy().hexdigest()
    return size, FINGERPRINT + h.hexdigest(), heads


class _Window(io.RawIOBase):
    """Bytes `start` to `end` of a file (a log's new tail, up to the size that was hashed)."""

    def __init__(self, path: Path, start: int, end: int | None) -> None:
        self.f = path.open("rb", buffering=0)
        self.f.seek(start)
        self.pos = start
        self.end = end

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = len(b) if self.end is None else min(len(b), self.end - self.pos)
        if n <= 0:
            return 0
        got = self.f.readinto(memoryview(b)[:n]) or 0
        self.pos += got
        return got

    def close(self) -> None:
        self.f.close()
        super().close()


UTF8_BOM = b"\xef\xbb\xbf"


class LineReader:
    """Lines of a plain or gzip file as (1-based number, bytes), bounded (`ingest.bounded`).

    Lines over `max_line_bytes` are skipped while streaming; a gzip file is checked first
    (CRC, decompression budget) unless `verify` is off (the format sniff reads a few lines).
    `problems()` lists what was not read, each naming its line.

    `start` / `end` / `first_line` read only a window of a plain file (the new part of a grown
    log), numbering its lines from `first_line`.
    """

    def __init__(
        self,
        path: Path,
        settings: Settings | None = None,
        *,
        verify: bool = True,
        start: int = 0,
        end: int | None = None,
        first_line: int = 1,
    ) -> None:
        settings = settings or DEFAULT_SETTINGS
        self.max_line = int(settings.max_line_bytes)
        self.window = _Window(path, start, end)
        # A large buffer: exchange lines are tens of kilobytes each.
        self.raw: BinaryIO = io.BufferedReader(self.window, 1 << 20)
        magic = self.raw.peek(2)[:2]
        self.gzipped = magic == b"\x1f\x8b"
        self.stream: BinaryIO = (
            gzip.GzipFile(fileobj=self.raw) if self.gzipped else self.raw  # type: ignore[assignment]
        )
        self.scan = (
            bounded.scan_gzip(path, int(settings.gzip_max_bytes))
            if self.gzipped and verify
            else None
        )
        self.error: Rejection | None = None
        self.rejections: list[Rejection] = []
        self.notes: list[Rejection] = []
        """Lines read with something left out that deserves a note (a byte-order mark)."""
        self.path = path
        self.first_line = first_line
        self.n_lines = first_line - 1
        """Number of the last line read (set when the iteration ends)."""

    def position(self) -> int:
        return self.window.pos

    def problems(self) -> list[Rejection]:
        """Lines not read: too long, in a corrupt gzip member, past the budget, cut short."""
        return self.rejections + ([self.error] if self.error else [])

    def lines(self, display: str) -> Iterator[tuple[int, bytes]]:
        n = self.first_line - 1
        scan = self.scan
        reported: set[str] = set()
        try:
            while True:
                if scan is not None and scan.stop_line is not None and n + 1 >= scan.stop_line:
                    self.rejections.append(Rejection(display, n + 1, scan.budget_reason))
                    break
                data, long_size = bounded.read_line(self.stream, self.max_line)
                if not data and not long_size:
                    break
                n += 1
                bad = scan.bad_reason(n) if scan is not None and scan.bad else None
                if bad is not None:
                    if bad not in reported:
                        reported.add(bad)
                        self.rejections.append(Rejection(display, n, bad))
                    continue
                if n == 1 and data.startswith(UTF8_BOM):
                    # A UTF-8 byte-order mark (editors on Windows write one) is not part of
                    # the first record: it is dropped, and the report says so.
                    data = data[len(UTF8_BOM) :]
                    self.notes.append(Rejection(display, 1, "UTF-8 byte-order mark ignored"))
                if long_size:
                    self.rejections.append(
                        Rejection(
                            display,
                            n,
                            f"line of {long_size} bytes is longer than {self.max_line} "
                            "(max_line_bytes); skipped",
                        )
                    )
                    continue
                yield n, data
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            if not (scan is not None and scan.bad):
                what = "gzip CRC check failed" if "CRC" in str(exc) else "gzip stream ends early"
                self.error = Rejection(display, n + 1, f"{what} ({exc})")
        finally:
            self.n_lines = n

    def close(self) -> None:
        self.stream.close()
        self.raw.close()
