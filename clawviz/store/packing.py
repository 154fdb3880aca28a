"""Compression of stored texts: zstd frames, with zlib streams of older stores still read.

Its own module so that both the schema (`models.PackedText`, which compresses on PostgreSQL)
and the reads and writes of calls (`clawviz.store.calls`) use it without importing each other.
"""

from __future__ import annotations

import threading
import zlib

import zstandard

PACK_LEVEL = 1
"""zstd level: the fastest regular one; higher levels save a few percent for twice the time."""
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""The first bytes of every zstd frame (a zlib stream starts with 0x78)."""

_local = threading.local()
"""zstd (de)compressor objects are not safe across threads: one pair per thread (app pages)."""


def _zstd() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    pair = getattr(_local, "zstd", None)
    if pair is None:
        pair = _local.zstd = (
            zstandard.ZstdCompressor(level=PACK_LEVEL),
            zstandard.ZstdDecompressor(),
        )
    return pair


def compress(data: bytes) -> bytes:
    """A zstd frame of `data` (it records its size, so `decompress` needs no hint)."""
    return _zstd()[0].compress(data)


def decompress(data: bytes) -> bytes:
    """The bytes of a stored compressed value: a zstd frame, or a zlib stream (older stores)."""
    if data[:4] == ZSTD_MAGIC:
        return _zstd()[1].decompress(data)
    return zlib.decompress(data)
