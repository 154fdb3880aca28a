"""`clawviz record --db URL`: each logged exchange is ingested into the store moments later.

The writer thread names each file it appended a line to; a store thread gathers the names for
`window` seconds and then runs the ordinary ingest (`ingest_paths`) on those files. Ingest knows
a grown log and reads only its new lines, so this is the same code path as
`clawviz ingest DIR`, done often. Store errors are reported on stderr; the proxy serves on.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TextIO


class LiveIngest:
    def __init__(self, db_url: str, *, window: float = 0.5, stderr: TextIO | None = None) -> None:
        self.db_url = db_url
        self.window = window
        self.stderr = stderr if stderr is not None else sys.stderr
        self.n_batches = 0
        self.n_calls = 0
        self.errors = 0
        self._pending: set[Path] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="clawviz-record-db", daemon=True)
        # Open (and create) the store now, so a bad URL shows before the first exchange.
        from clawviz.store.db import get_engine

        self._engine = get_engine(db_url)
        self._thread.start()

    def notify(self, path: Path) -> None:
        """A line was appended to `path` (called on the log writer thread)."""
        with self._lock:
            self._pending.add(path)
        self._wake.set()

    def close(self, timeout: float | None = 60) -> None:
        """Ingest what is pending, then stop."""
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if not self._stopping:
                # Gather the exchanges of a short window into one ingest (one transaction).
                threading.Event().wait(self.window)
            with self._lock:
                paths, self._pending = sorted(self._pending), set()
                self._wake.clear()
            if paths:
                self._ingest(paths)
            if self._stopping:
                with self._lock:
                    if not self._pending:
                        return

    def _ingest(self, paths: list[Path]) -> None:
        from sqlmodel import Session

        from clawviz.jobs.ingest import ingest_paths

        try:
            with Session(self._engine) as session:
                report = ingest_paths([p for p in paths if p.is_file()], session=session)
        except Exception as exc:  # noqa: BLE001 - the store must never stop the recording
            self.errors += 1
            self._say(f"ERROR: could not ingest into {self.db_url}: {type(exc).__name__}: {exc}")
            return
        self.n_batches += 1
        self.n_calls += report.n_calls
        for f in report.errors:
            self.errors += 1
            self._say(f"ERROR: ingest of {f.path} failed: {f.reason}")
        for r in report.rejected:
            self._say(f"note: {r.file}:{r.line} not loaded: {r.reason}")

    def _say(self, msg: str) -> None:
        try:
            self.stderr.write(f"clawviz record: {msg}\n")
            self.stderr.flush()
        except (OSError, ValueError):
            pass
