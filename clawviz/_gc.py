"""Fewer garbage collections while a bulk job builds many short-lived containers.

An export (and an ingest or an analysis) turns stored JSON into millions of dicts and lists
that live for one row and hold no reference cycles. CPython's collector runs a generation-0
pass every 700 new containers and traverses older generations every 10 of those, so on a
process that already holds a few hundred thousand objects (SQLAlchemy, pyarrow, the loaded
batch) a quarter of an SFT export's CPU went to collections that found almost nothing
(bench/README.md, "SFT export: the collector"). Inside `bulk_gc` the first threshold is raised
to `BULK_GEN0`: collections still run, so cyclic garbage is still freed, but 30 times less
often, and at most `BULK_GEN0` containers wait for it (a few MB).

The thresholds are process-wide, so nested and concurrent uses (the app's export buttons run
in server threads) share one raise: the first entry saves the thresholds, the last exit puts
them back. A process that turned the collector's first threshold to 0 (off) is left alone.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BULK_GEN0 = 20_000
"""Generation-0 threshold inside `bulk_gc` (CPython's default is 700)."""

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def bulk_gc(gen0: int = BULK_GEN0) -> Iterator[None]:
    """Run the body with the collector's first threshold raised to `gen0` (restored after)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            now = gc.get_threshold()
            if 0 < now[0] < gen0:
                _saved = now
                gc.set_threshold(gen0, now[1], now[2])
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
