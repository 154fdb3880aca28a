"""`python3 -m clawviz follow DIR --db URL`: ingest a recording folder as it grows.

The follower is the `--db` of `clawviz record` moved off the proxy's hot path: `record --db`
starts it as a child process, so ingest runs on its own core and its own interpreter lock, and
the proxy only writes its log. It can also run on its own, on any folder of exchange logs.

Every `interval` seconds it lists the folder's `*.jsonl` files and ingests those whose size or
modification time changed since it last ingested them, in one `ingest_paths` call. Ingest
knows a grown log and reads only its new lines, and a log it already holds is
`already_loaded`: a follower that restarts, or falls behind, resumes with nothing doubled. A
file whose last byte is not a newline (a line being written) waits for the next pass, unless it
has not changed for `settle` seconds (a line torn by a crash, which ingest reports as such).
Store errors are printed and the files are tried again on the next pass.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO


class Follower:
    def __init__(
        self,
        folder: str | Path,
        db_url: str,
        *,
        interval: float = 0.5,
        settle: float = 5.0,
        stderr: TextIO | None = None,
    ) -> None:
        from clawviz.store import get_engine

        self.folder = Path(folder)
        self.db_url = db_url
        self.interval = interval
        self.settle = settle
        self.stderr = stderr if stderr is not None else sys.stderr
        self.n_passes = 0
        self.n_calls = 0
        self.errors = 0
        self._done: dict[str, tuple[int, int]] = {}  # name -> (size, mtime_ns) last ingested
        self._engine = get_engine(db_url)  # a bad URL shows now, not at the first exchange
        if self._engine.dialect.name == "sqlite":
            # Opening checked the schema through a pooled connection; a store file replaced
            # before the first pass must not be written through it (see pass_once).
            self._engine.dispose()

    def changed(self) -> list[tuple[str, tuple[int, int]]]:
        """Files to ingest now, with the (size, mtime) they have."""
        out = []
        now = time.time_ns()
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return []
        for e in entries:
            if not e.name.endswith(".jsonl"):
                continue
            try:
                if not e.is_file():
                    continue
                st = e.stat()
            except OSError:
                continue
            mark = (st.st_size, st.st_mtime_ns)
            if st.st_size == 0 or self._done.get(e.name) == mark:
                continue
            if not _ends_with_newline(Path(e.path), st.st_size):
                if now - st.st_mtime_ns < self.settle * 1e9:
                    continue  # a line is being written: next pass
            out.append((e.name, mark))
        return sorted(out)

    def pass_once(self) -> int:
        """One pass: ingest what changed; returns the calls added."""
        from sqlmodel import Session

        from clawviz.jobs import ingest_paths

        todo = self.changed()
        if not todo:
            return 0
        try:
            with Session(self._engine) as session:
                report = ingest_paths([self.folder / n for n, _ in todo], session=session)
        except Exception as exc:  # noqa: BLE001 - report, and try these files again next pass
            self.errors += 1
            self._say(f"ERROR: could not ingest into {self.db_url}: {type(exc).__name__}: {exc}")
            return 0
        finally:
            if self._engine.dialect.name == "sqlite":
                # A pooled connection would go on writing to a store file that was replaced.
                self._engine.dispose()
        failed = {Path(f.path).name for f in report.errors}
        for f in report.errors:
            self.errors += 1
            self._say(f"ERROR: ingest of {f.path} failed: {f.reason}")
        for r in report.rejected:
            self._say(f"note: {r.file}:{r.line} not loaded: {r.reason}")
        for name, mark in todo:
            if name not in failed:
                self._done[name] = mark
        self.n_passes += 1
        self.n_calls += report.n_calls
        return report.n_calls

    def run(self, stop: threading.Event) -> None:
        """Follow until `stop` is set, then make one last pass."""
        while not stop.is_set():
            self.pass_once()
            stop.wait(self.interval)
        self.settle = 0.0  # the writer has stopped: a line without its newline is torn
        self.pass_once()

    def _say(self, msg: str) -> None:
        from clawviz.settings import mask_secrets

        try:
            self.stderr.write(mask_secrets(f"clawviz follow: {msg}\n"))
            self.stderr.flush()
        except (OSError, ValueError):
            pass


def _ends_with_newline(path: Path, size: int) -> bool:
    try:
        with open(path, "rb") as fh:
            fh.seek(size - 1)
            return fh.read(1) == b"\n"
    except OSError:
        return False


def cmd_follow(args: Any) -> int:
    from clawviz.settings import mask_secrets

    folder = args.dir
    db_url = getattr(args, "db", None)
    if not db_url:
        print("error: follow needs --db URL", file=sys.stderr)
        return 1
    try:
        follower = Follower(folder, db_url, interval=getattr(args, "interval", 0.5))
    except Exception as exc:  # noqa: BLE001 - a clear message instead of a traceback
        msg = f"clawviz follow: ERROR: could not open store {db_url}: {exc}"
        print(mask_secrets(msg), file=sys.stderr)
        return 1
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if getattr(args, "once", False):
        stop.set()
    if getattr(args, "stop_on_eof", False):
        # `record --db` stops its follower by closing this pipe: unlike a signal, that cannot
        # arrive before the handler is in place, so a short run is never left unloaded.
        def wait_eof() -> None:
            while sys.stdin.buffer.read(1 << 16):
                pass
            stop.set()

        threading.Thread(target=wait_eof, daemon=True).start()
    sys.stderr.write(mask_secrets(f"clawviz follow: following {folder}/ into {db_url}\n"))
    sys.stderr.flush()
    follower.run(stop)
    sys.stderr.write(
        f"clawviz follow: stopped; {follower.n_calls} call(s) ingested, "
        f"{follower.errors} error(s)\n"
    )
    return 1 if follower.errors else 0


class FollowerProcess:
    """`clawviz follow OUT --db URL` as a child of `clawviz record --db URL`: the proxy's
    process only writes the log. The child's stderr is relayed to `stderr`."""

    def __init__(self, folder: str | Path, db_url: str, *, interval: float, stderr: TextIO) -> None:
        import subprocess

        self.stderr = stderr
        self.folder = folder
        self.db_url = db_url
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "clawviz", "follow", str(folder), "--db", db_url]
            + ["--interval", repr(interval), "--stop-on-eof"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._relay = threading.Thread(target=self._relay_lines, daemon=True)
        self._relay.start()

    def _relay_lines(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            try:
                self.stderr.write(line)
                self.stderr.flush()
            except (OSError, ValueError):
                pass

    def close(self, timeout: float | None = 60) -> int:
        """Let the follower make its last pass over what was written, then stop it."""
        import subprocess

        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()  # the follower's cue: one last pass, then exit
            except OSError:
                pass
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            self.stderr.write("clawviz record: the follower did not stop in time; killed\n")
        self._relay.join(5)
        if rc != 0:
            from clawviz.settings import mask_secrets

            self.stderr.write(
                mask_secrets(
                    f"clawviz record: ERROR: the follower exited with status {rc}; the log is "
                    f"complete, load it with `clawviz ingest {self.folder} --db {self.db_url}`\n"
                )
            )
        return rc
