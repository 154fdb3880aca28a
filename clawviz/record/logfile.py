"""The proxy's log: one JSON line per exchange, one `os.write` per line, on a writer thread.

Files live in one folder: `<episode>.jsonl` for an exchange that names its episode, else one
`run-<time>-<pid>.jsonl` per proxy run (the file is then the episode, FORMATS §1). A line is
serialised and written whole by a single `os.write` on an `O_APPEND` descriptor, so a `kill -9`
leaves only whole lines (at worst a torn last line, which ingest reports as such). A failed write
(disk full, ...) never reaches the agent: the exchange is counted as lost and reported loudly on
stderr, and the proxy goes on serving.

Open descriptors are a bounded pool (`max_open`, by default a quarter of the open-file limit):
a training run writes far more episodes than `ulimit -n`, so the least recently used file is
closed when the pool is full and reopened for append when its episode speaks again. An `open`
that still fails with EMFILE/ENFILE (sockets took the rest) closes half the pool and retries.
"""

from __future__ import annotations

import errno
import hashlib
import os
import queue
import re
import resource
import stat
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import orjson

from clawviz.settings import DEFAULT_SETTINGS

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def file_name_for(episode_id: str) -> str:
    """A file name for an episode id: the id itself when it is a safe name, else a cleaned id
    plus a short hash (so two ids never share a file)."""
    clean = _SAFE.sub("_", episode_id)[:120].lstrip(".") or "_"
    if clean != episode_id:
        clean += "-" + hashlib.sha1(episode_id.encode()).hexdigest()[:8]
    return clean + ".jsonl"


_BODY_KEYS = ("body", "body_raw", "body_base64")
_CUT_SLACK = 512  # bytes left for the cut marker when a body is cut to fit the line budget


def _logged_body(side: dict[str, Any]) -> bytes:
    """A side's body as the log would hold it (JSON bytes, text or base64), b"" if none."""
    for key in _BODY_KEYS:
        value = side.get(key)
        if value is None:
            continue
        return value.encode() if isinstance(value, str) else orjson.dumps(value)
    return b""


def fit_line(record: dict[str, Any], max_line: int) -> tuple[bytes, bool]:
    """The record as one log line of at most `max_line` bytes (newline included) when its bodies
    can be cut to fit: the longest body first is replaced by `body_truncated`, a prefix of its
    logged text, and `clawviz.truncated_body` says which side and its original size in bytes
    (ingest rejects such a line with that reason, FORMATS §1). Only the log is cut: the client
    and the upstream get every byte. A line too long without any body is returned as it is
    (ingest rejects it as over `max_line_bytes`). The second value: whether a body was cut."""
    line = orjson.dumps(record) + b"\n"
    if len(line) <= max_line:
        return line, False
    record = dict(record)
    cz = dict(record.get("clawviz") or {})
    cut: dict[str, int] = dict(cz.get("truncated_body") or {})
    bodies = {
        name: _logged_body(record[name])
        for name in ("request", "response")
        if isinstance(record.get(name), dict)
    }
    for name in sorted(bodies, key=lambda k: len(bodies[k]), reverse=True):
        raw = bodies[name]
        if len(line) <= max_line or not raw:
            break
        side = {k: v for k, v in record[name].items() if k not in _BODY_KEYS}
        cut[name] = len(raw)
        cz["truncated_body"] = cut
        cz["max_line_bytes"] = max_line
        record["clawviz"] = cz
        keep = max(0, len(raw) - (len(line) - max_line) - _CUT_SLACK)
        for _ in range(8):  # JSON escaping can make the kept text longer than its bytes
            side["body_truncated"] = raw[:keep].decode("utf-8", errors="ignore")
            record[name] = side
            line = orjson.dumps(record) + b"\n"
            if len(line) <= max_line or keep == 0:
                break
            keep = max(0, keep - (len(line) - max_line) - _CUT_SLACK)
        else:
            side["body_truncated"] = ""
            line = orjson.dumps(record) + b"\n"
    return line, bool(cut)


WORKER_SLOTS = 64  # at most this many `--workers`


def default_max_open() -> int:
    """Log files kept open at once: a quarter of the soft open-file limit, between 4 and 512.
    The rest is left to the client and upstream sockets."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return 64
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 512
    return max(4, min(512, soft // 4))


def _count_lines(path: Path) -> int:
    """Lines already in a regular file (so `seq` continues across proxy runs); 0 otherwise."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return 0
    if not stat.S_ISREG(st.st_mode):
        return 0
    n = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            n += block.count(b"\n")
    return n


class LogWriter:
    """Appends records to files in `out_dir` from a background thread.

    `submit` never blocks on the disk; `close` writes what is queued, then stops the thread.
    `on_written(path)` is called on the writer thread after each line that reached its file.
    """

    def __init__(
        self,
        out_dir: str | Path,
        *,
        run_name: str | None = None,
        stderr: TextIO | None = None,
        on_written: Callable[[Path], None] | None = None,
        max_open: int | None = None,
        worker: int | None = None,
        max_line_bytes: int | None = None,
    ) -> None:
        self.dir = Path(out_dir)
        # The longest line written (the setting `max_line_bytes`, which ingest reads up to):
        # a longer exchange is logged with its body cut and marked (`fit_line`).
        self.max_line = int(
            max_line_bytes if max_line_bytes is not None else DEFAULT_SETTINGS.max_line_bytes
        )
        self.truncated = 0  # lines written with a body cut to fit max_line
        self.dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        # One of `record --workers N`: its own files (`<episode>.w<k>.jsonl`), so no two
        # processes append to one file, and an order key that merges across workers.
        self.worker = worker
        self.run_file = run_name or f"run-{stamp}-{os.getpid()}.jsonl"
        self._last_us: dict[str, int] = {}
        self.stderr = stderr if stderr is not None else sys.stderr
        self.on_written = on_written
        self.submitted = 0
        self.written = 0
        self.lost = 0
        self.last_error: str | None = None
        # True from a failed write until the next line that reaches its file: while it holds,
        # exchanges cannot be logged (`--fail-closed` answers 503).
        self.failing = False
        self._seq: dict[str, int] = {}
        self._seq_lock = threading.Lock()
        self.max_open = max(1, max_open if max_open is not None else default_max_open())
        self._fds: OrderedDict[str, int] = OrderedDict()  # least recently written first
        self.reopened = 0  # opens of a file this writer had closed to stay within max_open
        self._torn: set[str] = set()
        self._closed: set[str] = set()  # names whose descriptor the pool closed
        self._queue: queue.SimpleQueue[tuple[str, dict[str, Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="clawviz-record-log", daemon=True)
        self._thread.start()

    def file_for(self, episode_id: str | None) -> str:
        if not episode_id:
            return self.run_file
        name = file_name_for(episode_id)
        if self.worker is not None:
            name = name[: -len(".jsonl")] + f".w{self.worker}.jsonl"
        return name

    def order_seq(self, name: str, t_request: float) -> int:
        """Under --workers: `seq` as the order key (t_request, worker) packed in one integer,
        microseconds * 64 + worker, strictly increasing within a file. Workers share no
        counter, yet the keys of one episode never collide across them and sort in request
        order, so ingest's ordering by `seq` merges their files."""
        assert self.worker is not None
        us = int(t_request * 1e6)
        with self._seq_lock:
            us = max(us, self._last_us.get(name, -1) + 1)
            self._last_us[name] = us
        return us * WORKER_SLOTS + self.worker

    def next_seq(self, name: str) -> int:
        """The next sequence number in a file (0-based; continues after existing lines)."""
        with self._seq_lock:
            if name not in self._seq:
                self._seq[name] = _count_lines(self.dir / name)
            seq = self._seq[name]
            self._seq[name] = seq + 1
            return seq

    def submit(self, name: str, record: dict[str, Any]) -> None:
        """Queue one record for `name`; the record must not be changed afterwards."""
        self.submitted += 1
        self._queue.put((name, record))

    @property
    def queued(self) -> int:
        """Records submitted and not yet written or lost."""
        return max(0, self.submitted - self.written - self.lost)

    def close(self, timeout: float | None = None) -> None:
        """Write everything queued, then stop the writer thread and close the files."""
        self._queue.put(None)
        self._thread.join(timeout)
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()

    # -- writer thread -------------------------------------------------------------------------

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            name, record = item
            try:
                line, was_cut = fit_line(record, self.max_line)
            except (TypeError, orjson.JSONEncodeError) as exc:
                self._fail(name, f"record does not serialise: {exc}")
                continue
            if self._write(name, line):
                self.written += 1
                self.truncated += was_cut
                self.failing = False
                if self.on_written is not None:
                    try:
                        self.on_written(self.dir / name)
                    except Exception as exc:  # a store error must not stop the log
                        self._say(f"after writing {self.dir / name}: {exc!r}")

    def _write(self, name: str, line: bytes) -> bool:
        if name in self._torn:
            # The previous write left a partial line: start on a fresh line so only that one
            # line is bad, not this one too.
            line = b"\n" + line
        try:
            fd = self._fd(name)
            n = os.write(fd, line)
        except OSError as exc:
            self._fail(name, exc.strerror or str(exc))
            return False
        if n != len(line):
            self._torn.add(name)
            self._fail(name, f"short write ({n} of {len(line)} bytes)")
            return False
        self._torn.discard(name)
        return True

    def _fd(self, name: str) -> int:
        """An O_APPEND descriptor for `name`, from the pool (LRU closed first when full)."""
        fd = self._fds.get(name)
        if fd is not None:
            self._fds.move_to_end(name)
            return fd
        while len(self._fds) >= self.max_open:
            self._close_oldest()
        path = self.dir / name
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE) or not self._fds:
                raise
            # Out of descriptors all the same (the sockets took them): give back half the pool.
            for _ in range((len(self._fds) + 1) // 2):
                self._close_oldest()
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if name in self._closed:
            self.reopened += 1
        self._fds[name] = fd
        return fd

    def _close_oldest(self) -> None:
        old, fd = self._fds.popitem(last=False)
        self._closed.add(old)
        try:
            os.close(fd)
        except OSError:
            pass

    @property
    def open_files(self) -> int:
        return len(self._fds)

    def _fail(self, name: str, reason: str) -> None:
        self.failing = True
        self.lost += 1
        self.last_error = f"{self.dir / name}: {reason}"
        self._say(
            f"ERROR: exchange NOT logged to {self.dir / name}: {reason} "
            f"({self.lost} lost so far); still serving"
        )

    def _say(self, msg: str) -> None:
        try:
            self.stderr.write(f"clawviz record: {msg}\n")
            self.stderr.flush()
        except (OSError, ValueError):
            pass
