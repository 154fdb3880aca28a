"""Bounded reading of log files: line length, gzip budget and gzip integrity, regular files only.

- `read_line` reads one line of at most `max_line` bytes; a longer line is skipped in 1 MB
  pieces and reported, never held in memory whole.
- `scan_gzip` decompresses a .gz once, in bounded pieces, before its lines are parsed. It
  checks every member's CRC and length (zlib verifies the gzip trailer) and counts lines, so a
  member whose data is corrupt has its lines rejected as a CRC failure instead of being parsed
  (deflate corruption can decode to plausible bytes before the check fails at the member's end),
  and it stops at the decompression budget.
- `regular_file_problem` says why a path found in a folder is not a regular file to read
  (FIFO, device, socket, dangling or looping link), so a folder walk can skip it with a note.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

_PIECE = 1 << 20
_IN_CHUNK = 1 << 16


def read_line(stream: BinaryIO, max_line: int) -> tuple[bytes, int]:
    """The next line (b"" at the end) and, for a line over `max_line` bytes, its full size.

    An over-long line returns (b"", size) with the rest of it consumed piece by piece.
    """
    data = stream.readline(max_line + 1)
    if len(data) <= max_line or data.endswith(b"\n"):
        return data, 0
    size = len(data)
    while True:
        piece = stream.readline(_PIECE)
        size += len(piece)
        if not piece or piece.endswith(b"\n"):
            return b"", size


@dataclass
class GzipScan:
    """What one pass over a gzip file found."""

    bad: list[tuple[int, int, str]] = field(default_factory=list)
    """(first line, last line, reason) of members whose data failed its check."""
    stop_line: int | None = None
    """The first line past the decompression budget (nothing from it on is read)."""
    budget_reason: str = ""
    total_bytes: int = 0

    def bad_reason(self, line: int) -> str | None:
        for first, last, reason in self.bad:
            if first <= line <= last:
                return reason
        return None


def scan_gzip(path: Path, max_bytes: int) -> GzipScan:
    """Decompress `path` (all members) in bounded pieces; see the module docstring."""
    out = GzipScan()
    newlines = 0
    first_line = 1
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with path.open("rb") as fh:
        pending = b""
        while True:
            if not pending:
                pending = fh.read(_IN_CHUNK)
                if not pending:
                    break
            try:
                piece = d.decompress(pending, _PIECE)
            except zlib.error as exc:
                kind = "CRC check failed" if "data check" in str(exc) else "corrupt data"
                out.bad.append(
                    (
                        first_line,
                        1 << 62,
                        f"gzip {kind} ({exc}) in the member starting at line {first_line}: its "
                        "lines are not loaded (their bytes cannot be trusted)",
                    )
                )
                return out
            pending = d.unconsumed_tail
            if out.total_bytes + len(piece) > max_bytes:
                # Only the lines that end within the budget are read.
                newlines += piece[: max_bytes - out.total_bytes].count(b"\n")
                out.total_bytes = max_bytes
                out.stop_line = newlines + 1
                out.budget_reason = (
                    f"decompressed size passes {max_bytes} bytes (gzip_max_bytes); "
                    f"lines from {newlines + 1} on are not read"
                )
                return out
            out.total_bytes += len(piece)
            newlines += piece.count(b"\n")
            if d.eof:
                pending = d.unused_data + pending
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                first_line = newlines + 1
                if pending.strip(b"\0") == b"" and not fh.peek(1):
                    break
    return out


def regular_file_problem(path: Path) -> str | None:
    """None for a regular file (or a link to one), else why it is not read."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a link that loops"
        if path.is_symlink():
            return f"a dangling link (to {os.readlink(path)!r})"
        return f"cannot be read ({exc.strerror})"
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    kind = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a folder"
        if stat.S_ISDIR(mode)
        else "not a regular file"
    )
    via = f" (through a link to {os.readlink(path)!r})" if path.is_symlink() else ""
    return f"{kind}{via}, not a regular file"
