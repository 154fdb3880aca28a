"""`ingest --workers N`: exchange logs read in a process pool, written by one writer (SQLite) or
by the workers themselves (PostgreSQL).

The driver (`clawviz.jobs.ingest._ingest_targets`) walks the targets in the order a
single-process ingest does. Before it starts, `IngestPool.plan` fingerprints every file, leaves
out the ones loaded before (and a second listing of the same bytes), and hands each new exchange
log to a worker. A worker runs `clawviz.jobs.ingest.ExchangeParse` on it (JSON, canonical
messages, hashes) and turns its calls into store rows (serialised, compressed: `Prepared`):

- SQLite (one writer): the rows are spooled to a temporary file, and the driver writes that file
  in one transaction when the walk reaches it. The store then receives the same rows in the
  same order as from a single process.
- PostgreSQL: the worker writes its file itself, in its own transaction (content rows committed
  at once, as every writer does), so writes run in parallel.

Results files, transcripts, task folders and grown logs are loaded by the driver as before.
Nothing is analysed until every file is in the store, so an episode whose lines span several
files (or several recorder workers' files) is analysed whole, as in a single process; the
analysis itself is spread over the workers by `clawviz.jobs.reanalyse`.

Idempotence is the single-process ingest's: a file is one transaction, keyed by its
fingerprint (a unique column), calls by their ids. A worker killed mid-file leaves nothing of
that file (its transaction never committed); the driver starts a new pool and reads the file
again (`RESTARTS`), and a later run loads whatever is still missing. A file another worker had
finished when the pool broke keeps its answer (`record_done`): it is neither read again nor
reported failed.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session

from clawviz.ingest import FINGERPRINT, MessageCache, Rejection
from clawviz.settings import Settings
from clawviz.store import (
    Prepared,
    PreparedPacker,
    SeenHashes,
    forget_engines,
    get_engine,
    prepare_rows,
)

RESTARTS = 2
"""New pools started after a worker died before the run gives up on the files left."""


@dataclass
class Chunk:
    """One batch of a file: its calls as rows, its rejected lines and notes, bytes read."""

    items: list[Prepared]
    rejects: list[tuple[int, str, str]]
    warnings: list[Rejection]
    position: int


@dataclass
class Tail:
    """What the whole file gave besides its calls."""

    n_lines: int
    episodes: set[str]
    fallback: str
    single_named: str | None


@dataclass(frozen=True)
class Job:
    """One exchange log for a worker."""

    index: int
    path: str
    display: str
    sha: str
    size: int
    settings: Settings
    packed: bool
    db_url: str | None
    """PostgreSQL: the worker writes the file to this store. None: it spools the rows."""
    spool_dir: str
    parse: Any
    """`clawviz.jobs.ingest.ExchangeParse` (given, not imported: ingest imports this module)."""
    write: Any
    """`clawviz.jobs.ingest.write_prepared`: (session, job, parts, seen) -> (FileReport, an
    IngestReport with its rejected lines, notes, errors and episodes)."""
    inline: bool = False
    """Return the prepared rows in the answer instead of a spool file (Ray: the task may run
    on another machine)."""
    url: str = ""
    """`--engine ray`: read the file through the pyarrow filesystems at this URL
    (`clawviz.jobs.raydata.stage`); `sha` empty: fingerprinted in the task (a remote file)."""
    sniff: Any = None
    """`clawviz.jobs.ingest._sniff`, for a file the driver has not looked at (a remote one)."""
    hashes: Any = None
    """The ingest's `_file_hashes` (size, fingerprint), for that file too."""


@dataclass
class Done:
    """A worker's answer: the spool to write, or (PostgreSQL) what it wrote."""

    index: int
    spool: str | None = None
    report: Any = None
    """Its FileReport."""
    out: Any = None
    """An IngestReport with its rejected lines, notes, errors and episodes."""
    parts: list[Any] | None = None
    """`inline`: the file's chunks and tail."""
    error: str | None = None
    """Ray: why the task could not read the file (its error, reported for that file)."""
    other_format: str | None = None
    """A remote file that is not an exchange log (its format): the driver loads it."""
    sha: str = ""
    size: int = 0
    """A remote file's fingerprint and size, taken in the task."""


# --- the worker ---------------------------------------------------------------------------

_CACHE: MessageCache | None = None
"""A worker's message-conversion cache, kept across its files (a pure speed-up)."""


def _chunks(job: Job) -> Iterator[Chunk | Tail]:
    """Read and prepare a file: its chunks, then its tail."""
    global _CACHE
    if _CACHE is None:
        _CACHE = MessageCache()
    parse = job.parse(
        Path(job.path),
        job.display,
        job.settings,
        size=job.size,
        id_prefix=job.sha.removeprefix(FINGERPRINT)[:12],
        cache=_CACHE,
    )
    # Per file, so every file's transaction carries each message it needs (a file that fails
    # takes its messages with it; no other file relies on them).
    seen = SeenHashes()
    pack = PreparedPacker(job.packed)
    for batch, pos in parse.batches():
        yield Chunk(prepare_rows(batch, pack, seen), parse.take_rejects(), parse.warnings, pos)
        parse.warnings = []
    yield Tail(parse.n_lines, parse.episodes, parse.fallback, parse.single_named())


def run_job(job: Job) -> Done:
    """A worker's work on one file (in a pool process or a Ray task)."""
    if job.url:
        from clawviz.jobs.raydata import stage

        with stage(job.url) as local:
            if not job.sha:
                size, sha, _ = job.hashes(local, ())
                fmt, _ = job.sniff(local, job.settings, None, job.display)
                if fmt != "exchange":
                    return Done(job.index, other_format=fmt)
                job = dataclasses.replace(job, sha=sha, size=size)
            done = run_job(dataclasses.replace(job, path=str(local), url=""))
            done.sha, done.size = job.sha, job.size
            return done
    if job.db_url is None and job.inline:
        return Done(job.index, parts=list(_chunks(job)))
    if job.db_url is None:
        fd, spool = tempfile.mkstemp(prefix=f"ingest-{job.index:05d}-", dir=job.spool_dir)
        with os.fdopen(fd, "wb") as f:
            for part in _chunks(job):
                pickle.dump(part, f, protocol=pickle.HIGHEST_PROTOCOL)
        return record_done(job, Done(job.index, spool=spool))
    with Session(get_engine(job.db_url)) as session:
        rep, out = job.write(session, job, _chunks(job), SeenHashes())
    return record_done(job, Done(job.index, report=rep, out=out))


def _done_path(spool_dir: str, index: int) -> Path:
    return Path(spool_dir) / f"done-{index:05d}.pickle"


def record_done(job: Job, done: Done) -> Done:
    """Leave the answer beside the spools as well (a pool process; a Ray task answers Ray).

    A pool whose worker died marks every answer not yet delivered as failed, including files
    another worker had finished: committed (PostgreSQL) or spooled whole (SQLite). The driver
    takes those answers from here (`IngestPool._harvest`), so such a file is reported loaded,
    with its rejected lines and episodes, and is neither read again nor called failed."""
    if not job.inline:
        path = _done_path(job.spool_dir, job.index)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            pickle.dump(done, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    return done


def run_row(row: dict[str, Any]) -> dict[str, Any]:
    """A Ray Data row (`clawviz.jobs.raydata.ingest_rows`): a pickled Job in, its pickled Done
    out. The file's own error is its answer; a dead worker is Ray's to retry."""
    try:
        job: Job = pickle.loads(row["job"])  # noqa: S301 - the driver's own object
        done = run_job(job)
    except Exception as exc:  # noqa: BLE001 - reported as that file's error
        done = Done(row["index"], error=f"{type(exc).__name__}: {exc}")
    return {"done": pickle.dumps(done, protocol=pickle.HIGHEST_PROTOCOL)}


def read_spool(path: str) -> Iterator[Chunk | Tail]:
    with open(path, "rb") as f:
        while True:
            try:
                yield pickle.load(f)  # noqa: S301 - our own worker's file, never user input
            except EOFError:
                return


# --- the pool -----------------------------------------------------------------------------


def _context() -> Any:
    method = "fork" if sys.platform == "linux" else "spawn"
    return multiprocessing.get_context(method)


def store_url(session: Session) -> str:
    """The session's store URL with its password (handed to worker processes, never shown)."""
    return session.get_bind().engine.url.render_as_string(hide_password=False)


class IngestPool:
    """The exchange logs of one ingest, read by `workers` processes."""

    def __init__(
        self,
        workers: int,
        settings: Settings,
        engine: str = "process",
        ray_address: str | None = None,
    ) -> None:
        self.workers = max(1, workers)
        self.settings = settings
        self.engine = engine
        """process (a pool on this machine) | ray (Ray tasks, `--engine ray`)."""
        self.ray_address = ray_address
        self._ray: Any = None
        self._ray_ctx: Any = None
        self._rows: Iterator[tuple[int, Done]] | None = None
        self.jobs: dict[int, Job] = {}
        self.duplicate_of: dict[int, int] = {}
        """Target index -> the earlier target with the same bytes (loaded once)."""
        self.futures: dict[int, Future[Done]] = {}
        self.finished: dict[int, Done] = {}
        self.restarts = 0
        self.direct = False
        """The workers write their files themselves (PostgreSQL)."""
        self.episodes: set[str] = set()
        """Episodes the workers' files touched (refreshed again once all are written)."""
        self._pool: ProcessPoolExecutor | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def start(self, jobs: list[Job]) -> None:
        """Start reading `jobs` (none: no pool at all)."""
        self.jobs = {j.index: j for j in jobs}
        if jobs:
            self._start(jobs)

    def spool_dir(self) -> str:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="clawviz-ingest-")
        return self._tmp.name

    def _start_ray(self, jobs: list[Job]) -> None:
        """The files as one Ray Data job (`clawviz.jobs.raydata.ingest_rows`)."""
        from clawviz.jobs.raydata import ingest_rows
        from clawviz.jobs.rayrt import ray_session

        self._ray_ctx = ray_session(self.ray_address, self.workers)
        self._ray = self._ray_ctx.__enter__()
        self._rows = ingest_rows(jobs, self._ray, run_row)

    def _ray_result(self, index: int) -> Done | BaseException:
        """Answers arrive in any order: take them until `index`'s is in."""
        while index not in self.finished:
            if self._rows is None:
                return RuntimeError("the Ray job failed before this file")
            try:
                i, done = next(self._rows)
            except StopIteration:
                return RuntimeError("the Ray job ended without this file")
            except Exception as exc:  # noqa: BLE001 - retries spent: the files left fail
                self._rows = None
                return exc
            self.finished[i] = done
            if done.sha and not self.jobs[i].sha:  # a remote file, fingerprinted in its task
                self.jobs[i] = dataclasses.replace(self.jobs[i], sha=done.sha, size=done.size)
        done = self.finished[index]
        return RuntimeError(done.error) if done.error is not None else done

    def _start(self, jobs: list[Job]) -> None:
        if self.engine == "ray":
            self._start_ray(jobs)
            return
        ctx = _context()
        init = forget_engines if ctx.get_start_method() == "fork" else None
        self._pool = ProcessPoolExecutor(
            max_workers=min(self.workers, len(jobs)), mp_context=ctx, initializer=init
        )
        for job in jobs:
            self.futures[job.index] = self._pool.submit(run_job, job)

    def _harvest(self) -> None:
        """The pool broke (a worker died): stop it, then take the answers its finished files
        left (`record_done`), once per pool."""
        if self._pool is None:
            return
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None
        if self._tmp is None:
            return
        with os.scandir(self._tmp.name) as entries:
            names = {e.name for e in entries}
        for index in self.jobs:
            path = _done_path(self._tmp.name, index)
            if index not in self.finished and path.name in names:
                with open(path, "rb") as f:
                    self.finished[index] = pickle.load(f)  # noqa: S301 - our worker's answer

    def _restart(self) -> None:
        """A new pool reads every file not finished yet."""
        left = [j for i, j in self.jobs.items() if i not in self.finished]
        self.restarts += 1
        if left:
            self._start(left)

    def result(self, index: int) -> Done | BaseException:
        """The worker's answer for target `index` (waits), or why it has none."""
        if self.engine == "ray":
            return self._ray_result(index)
        while index not in self.finished:
            try:
                self.finished[index] = self.futures[index].result()
            except BrokenProcessPool as exc:
                self._harvest()
                if index in self.finished:
                    break
                if self.restarts >= RESTARTS:
                    return exc
                self._restart()
            except Exception as exc:  # noqa: BLE001 - reported as that file's error
                return exc
        return self.finished[index]

    def close(self) -> None:
        self._rows = None
        if self._ray_ctx is not None:
            self._ray_ctx.__exit__(None, None, None)
            self._ray_ctx = self._ray = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
