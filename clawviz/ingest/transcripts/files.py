"""Transcript file names and heads, plain or gzipped (`<id>.jsonl` / `<id>.jsonl.gz`)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"

JSONL_SUFFIXES = (".jsonl.gz", ".jsonl")
"""Transcript file names: plain JSONL or gzipped JSONL."""


def jsonl_stem(path: str | Path) -> str:
    """A transcript's name without `.jsonl` / `.jsonl.gz` (its session or agent id)."""
    name = Path(path).name
    for suffix in JSONL_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return Path(path).stem


def jsonl_files(folder: Path, prefix: str = "") -> list[Path]:
    """`<prefix>*.jsonl` and `<prefix>*.jsonl.gz` files of a folder, sorted."""
    return sorted(p for s in JSONL_SUFFIXES for p in folder.glob(f"{prefix}*{s}") if p.is_file())


def jsonl_sibling(folder: Path, stem: str) -> Path | None:
    """`<stem>.jsonl` in `folder`, else `<stem>.jsonl.gz`, if either exists."""
    for suffix in JSONL_SUFFIXES[::-1]:
        p = folder / f"{stem}{suffix}"
        if p.is_file():
            return p
    return None


def read_head(path: str | Path, max_lines: int) -> list[bytes]:
    """The first lines of a plain or gzipped file, without reading it all ([] if unreadable)."""
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == GZIP_MAGIC
            raw.seek(0)
            fh = gzip.GzipFile(fileobj=raw) if gz else raw
            return [line for _, line in zip(range(max_lines), fh, strict=False)]
    except (OSError, EOFError, zlib.error):
        return []
