"""The ingest job: load files and folders into the store (exchange logs, results, transcripts and
task folders), then analyse the episodes they changed (`clawviz.jobs.analyse`).

Each file is read line by line (plain or gzip) and its format detected from its first records.
An exchange log is written in bounded batches, each its own transaction (`BATCH_HOLD_S` of lock
hold at most, so a concurrent ingest, `record --db`/`follow` or the app's analysis always gets
the SQLite lock within a batch): its source row says `partial:<fingerprint>` until the last
batch is in, and a load that stopped mid-way (killed, disk full) is continued by the next ingest
of the same bytes from its last committed line, with nothing doubled. A new log up to
`ONE_TRANSACTION_BYTES`, results, findings and transcripts load in one transaction each. Either
way a file counts as loaded only when all of it is (minus its rejected lines, which are kept
verbatim with a reason). A file whose bytes were loaded before adds nothing; an exchange log
that has grown since (same name, its old bytes as its head) adds only its new lines,
continuing from where the last load stopped.
"""

from __future__ import annotations

import functools
import gc
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import orjson
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlmodel import Session, col, select

from clawviz import store
from clawviz.ingest import (
    FINGERPRINT,
    FormatError,
    LineReader,
    MessageCache,
    Rejection,
    file_hashes,
    file_sha256,
    parse_exchange,
    parse_result,
    regular_file_problem,
    validate_call,
)
from clawviz.jobs import analyse, raydata, sessions
from clawviz.jobs import pool as jobpool
from clawviz.settings import DEFAULT_SETTINGS, Settings, mask_secrets
from clawviz.store import (
    CallRow,
    Result,
    Source,
    Task,
    claim,
    index_pending,
    insert_prepared_guarded,
    is_locked,
    retry_locked,
    utcnow,
)
from clawviz.types import Call, ParsedExchange

Progress = Callable[[int, int, str], None]
T = TypeVar("T")

LOG_SUFFIXES = (".jsonl", ".jsonl.gz")
SNIFF_LINES = 20
BATCH_LINES = 500
BATCH_BYTES = 8 * 1024 * 1024
BATCH_HOLD_S = 0.5
"""An exchange log's batch holds the write lock about this long at most: a batch that took
longer halves the next one (down to `BATCH_MIN_LINES`), one that took under a quarter of it
doubles the next (up to `BATCH_LINES` / `BATCH_BYTES`)."""
BATCH_MIN_LINES = 10
PARTIAL = "partial:"
"""Prefix of a source's fingerprint while its file is still being loaded in batches."""
REFRESH_EPISODES = 200
"""Episode rows refreshed per transaction at the end of a batched file."""
ONE_TRANSACTION_BYTES = 1 << 20
"""A new exchange log up to this size is loaded in one transaction, as before batches: its
few commits would each wait for another writer's batch, and there is little to continue."""


@dataclass
class SkippedFile:
    """A file that was not read, and why."""

    path: str
    reason: str


@dataclass
class FileReport:
    """What one file contributed."""

    path: str
    format: str
    status: str
    """loaded | appended (a grown log: only its new lines) | already_loaded |
    already_being_loaded (by another process) | no_calls (a log or transcript that holds no
    call: read, nothing to show) | skipped | error."""
    n_lines: int = 0
    n_calls: int = 0
    n_results: int = 0
    n_tasks: int = 0
    n_findings: int = 0
    n_rejected: int = 0
    error: str | None = None
    covered_by: str | None = None
    """A sub-agent transcript whose calls are read with this other (parent session) file."""


@dataclass
class IngestReport:
    """The outcome of one `ingest_paths` run."""

    files: list[FileReport] = field(default_factory=list)
    n_calls: int = 0
    n_episodes: int = 0
    n_results: int = 0
    n_tasks: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    skipped_files: list[SkippedFile] = field(default_factory=list)
    warnings: list[Rejection] = field(default_factory=list)
    """Lines that loaded but deserve a note (e.g. an unknown endpoint kept as non_model)."""
    errors: list[SkippedFile] = field(default_factory=list)
    """Files that failed as a whole (rolled back)."""
    episode_ids: list[str] = field(default_factory=list)
    """Episodes this run created or changed (new calls, a result), sorted."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


HOLD_CALLS = 4_000
"""Calls kept in memory for the analysis at the end of ingest. Messages are shared between a
thread's calls, so a held call is its response and bookkeeping: 4-20 KB (the bench's 1 GB log:
~19 KB), at most ~80 MB; beyond it the largest episodes are reloaded instead."""


class _Held:
    """Calls of this ingest by episode, kept for the analysis at its end (bounded).

    Calls of the file being loaded are staged and join the held ones when its transaction
    commits; a rolled-back file's calls are dropped with it.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = HOLD_CALLS if limit is None else limit
        self.calls: dict[str, list[Call]] = {}
        self.staged: dict[str, list[Call]] = {}
        self.n = 0
        self.evicted: set[str] = set()
        self.rewarded: set[str] = set()
        """Episodes whose result (reward) this ingest loaded: analysed at its end too."""

    def add(self, call: Call) -> None:
        eid = call.episode_id
        if eid is None or eid in self.evicted:
            return
        self.staged.setdefault(eid, []).append(call)
        self.n += 1
        if self.n > self.limit:
            self._evict()

    def _evict(self) -> None:
        """Drop the largest episodes until under the limit (they are reloaded from the store)."""
        sizes: dict[str, int] = {}
        for group in (self.calls, self.staged):
            for eid, calls in group.items():
                sizes[eid] = sizes.get(eid, 0) + len(calls)
        for eid in sorted(sizes, key=sizes.__getitem__, reverse=True):
            if self.n <= self.limit // 2:
                break
            self.n -= sizes[eid]
            self.calls.pop(eid, None)
            self.staged.pop(eid, None)
            self.evicted.add(eid)

    def rename(self, old: str, new: str, source_file: str | None = None) -> None:
        """Staged calls of episode `old` now belong to `new` (a file's fallback resolved); with
        `source_file`, also the held calls of that file (committed in earlier batches)."""
        moved = self.staged.pop(old, [])
        if source_file is not None and old in self.calls:
            mine = [c for c in self.calls[old] if c.source_file == source_file]
            rest = [c for c in self.calls[old] if c.source_file != source_file]
            if rest:
                self.calls[old] = rest
            else:
                del self.calls[old]
            moved = mine + moved
        for call in moved:
            call.episode_id = new
        if new in self.evicted:
            self.n -= len(moved)
        elif moved:
            self.staged.setdefault(new, []).extend(moved)

    def commit(self) -> None:
        for eid, calls in self.staged.items():
            self.calls.setdefault(eid, []).extend(calls)
        self.staged = {}

    def rollback(self) -> None:
        self.n -= sum(len(c) for c in self.staged.values())
        self.staged = {}


@dataclass
class _Target:
    """One thing to ingest: a log file or a task folder, with the path shown to the user."""

    path: Path
    display: str
    kind: str
    """file | task_folder | unreadable."""
    problem: str = ""
    """Why an `unreadable` entry is skipped (FIFO, device, dangling or looping link)."""
    url: str = ""
    """A file at a remote URL (`s3://`, ...; `clawviz.jobs.raydata`): read through pyarrow, its
    size in `size`; `path` is then only its display form."""
    size: int = 0


def _is_task_file(path: Path) -> bool:
    """A PinchBench task markdown file."""
    # Task, findings and transcript readers are imported where a file needs them: an exchange
    # log needs none of them, and the `ingest` command then starts ~0.3 s of CPU sooner.
    from clawviz.review import is_task_folder

    return is_task_folder(path)


def _collect(paths: list[str | os.PathLike[str]]) -> list[_Target]:
    targets: list[_Target] = []
    for given in paths:
        if raydata.is_remote(str(given)):
            # --engine ray: each task reads its file through pyarrow (issue 27).
            for url, size in raydata.list_logs(str(given)):
                shown = raydata.display_of(url)
                targets.append(_Target(Path(shown), shown, "file", url=url, size=size))
            continue
        if str(given).startswith("file://"):
            # A file:// URL (as `--engine ray` takes, the pyarrow filesystems' form) is its path.
            given = unquote(urlsplit(str(given)).path)
        p = Path(given)
        if not p.exists():
            raise FileNotFoundError(f"{given}: no such file or folder")
        if not p.is_dir():
            problem = regular_file_problem(p)
            if problem is not None:
                targets.append(_Target(p, str(given), "unreadable", problem))
                continue
        if p.is_file():
            kind = "task_folder" if p.suffix == ".md" and _is_task_file(p) else "file"
            targets.append(_Target(p, str(given), kind))
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            root_path = Path(root)
            if "data_entry.json" in files:
                # A task folder's input files are workspace data, never logs.
                targets.append(_Target(root_path, str(root_path), "task_folder"))
                dirs[:] = []
                continue
            for name in sorted(files):
                if name.startswith("."):
                    continue
                if name.endswith(LOG_SUFFIXES):
                    problem = regular_file_problem(root_path / name)
                    kind = "file" if problem is None else "unreadable"
                    targets.append(
                        _Target(root_path / name, str(root_path / name), kind, problem or "")
                    )
                elif (
                    name.endswith(".md")
                    and regular_file_problem(root_path / name) is None
                    and _is_task_file(root_path / name)
                ):
                    targets.append(_Target(root_path / name, str(root_path / name), "task_folder"))
    return targets


def _previous_source(session: Session, path: Path, fp: str) -> Source | None:
    """The source row of a file with these bytes, if it was loaded before.

    Stores written before xxh3 name files by sha256: one with the same size is checked that
    way, so re-ingesting a file they loaded still adds nothing.
    """
    previous = store.source_by_sha(session, fp)
    if previous is not None:
        return previous
    size = path.stat().st_size
    old = session.exec(
        select(Source).where(
            Source.size_bytes == size,
            col(Source.sha256).not_like(FINGERPRINT + "%"),
            col(Source.sha256).not_like(PARTIAL + "%"),
        )
    ).all()
    if old:
        sha = file_sha256(path)
        return next((s for s in old if s.sha256 == sha), None)
    return None


def _head_records(
    path: Path,
    settings: Settings | None = None,
    problems: list[Rejection] | None = None,
    display: str | None = None,
) -> list[Any]:
    """The first `SNIFF_LINES` parseable records of a file (plain or gzip, lines bounded).
    Lines the reader could not read (too long, ...) are added to `problems`."""
    records: list[Any] = []
    reader = LineReader(path, settings, verify=False)
    try:
        for _, data in reader.lines(display or str(path)):
            if len(records) >= SNIFF_LINES:
                break
            if not data.strip():
                continue
            try:
                records.append(orjson.loads(data))
            except orjson.JSONDecodeError:
                continue
    finally:
        reader.close()
    if problems is not None:
        problems.extend(reader.problems())
    return records


def _sniff(
    path: Path,
    settings: Settings | None = None,
    problems: list[Rejection] | None = None,
    display: str | None = None,
) -> tuple[str, list[Any]]:
    """The file's format from its first parseable records, and those records."""
    records = _head_records(path, settings, problems, display)
    from clawviz.ingest import detect_format

    fmt = detect_format(records)
    if fmt is not None:
        return fmt.name, records
    return "unknown", records


def _raw_text(data: bytes) -> str:
    return data.decode("utf-8", "replace").rstrip("\r\n")


def _bad_json_reason(data: bytes, exc: Exception) -> str:
    if not data.endswith(b"\n"):
        return "truncated last line: not valid JSON and no final newline"
    return f"not valid JSON ({str(exc).splitlines()[0]})"


def _truncated_reason(record: Any) -> str | None:
    """Why an exchange line whose body the proxy cut to fit its line budget is not loaded
    (`clawviz.truncated_body`: side -> the logged body's original size), else None."""
    cz = record.get("clawviz") if isinstance(record, dict) else None
    cut = cz.get("truncated_body") if isinstance(cz, dict) else None
    if not cut:
        return None
    limit = cz.get("max_line_bytes") if isinstance(cz, dict) else None
    sides = ", ".join(f"{side} of {size} bytes" for side, size in sorted(dict(cut).items()))
    return (
        f"body cut by the proxy to fit its line budget ({sides}"
        + (f"; max_line_bytes {limit}" if limit else "")
        + "): not loaded, a cut conversation would be read as a different one"
    )


def _fallback_episode(
    display: str, path: Path | None = None, settings: Settings | None = None
) -> str:
    """Episode id of a file whose calls carry no identity: named from the traffic (harness and
    first request time, `identity.traffic_episode_name`), else the path without its suffix."""
    if path is not None:
        from clawviz.ingest import traffic_episode_name

        name = traffic_episode_name(_head_records(path, settings))
        if name is not None:
            return name
    for suffix in (".jsonl.gz", ".jsonl", ".gz"):
        if display.endswith(suffix):
            return display[: -len(suffix)]
    return display


class _FileIngest:
    """State of loading one file."""

    def __init__(
        self,
        session: Session,
        target: _Target,
        sha: str,
        fmt: str,
        report: FileReport,
        held: _Held | None = None,
        *,
        size: int | None = None,
        source: Source | None = None,
    ) -> None:
        self.session = session
        self.held = held if held is not None else _Held()
        self.target = target
        self.sha = sha
        self.report = report
        self.size = target.path.stat().st_size if size is None else size
        """The bytes that were hashed: reading stops there even if the file grew since."""
        if source is None:
            source = Source(path=target.display, sha256=sha, format=fmt, size_bytes=self.size)
            session.add(source)
            session.flush()
        self.source = source
        self.rejects: list[tuple[str, int, str, str]] = []
        self.episodes: set[str] = set()
        self.result_episodes: set[str] = set()
        """Episodes a results file gave a reward to (their decisions change with it)."""
        self.settings: Settings = DEFAULT_SETTINGS
        self.single = False
        """The whole file is one transaction (`ONE_TRANSACTION_BYTES`): batches only flush,
        and a lock error goes up to the caller, which loads the file again."""

    def reject(self, line: int, reason: str, raw: str) -> None:
        self.rejects.append((self.target.display, line, reason, raw))

    def flush_rejects(self, out: IngestReport) -> None:
        store.write_rejections(self.session, self.source, self.rejects)
        out.rejected.extend(Rejection(f, ln, r) for f, ln, r, _ in self.rejects)
        self.report.n_rejected += len(self.rejects)
        self.rejects = []


@dataclass
class _Resume:
    """Where a grown exchange log continues: its first new byte and line, and what is known."""

    start: int
    first_line: int
    id_prefix: str
    named: set[str]


class ExchangeParse:
    """Reading one exchange log into parsed calls, with no store: the part of loading a file that
    the worker processes of `clawviz.jobs.pool` run (parse, canonicalise, hash), while writing
    stays with whoever holds the store. `batches()` yields the calls in batches; what else the
    file gave (rejected lines, notes, the episodes it names) is collected on the object."""

    def __init__(
        self,
        path: Path,
        display: str,
        settings: Settings,
        *,
        size: int,
        id_prefix: str,
        cache: MessageCache | None = None,
        resume: _Resume | None = None,
        skip_through: int = 0,
    ) -> None:
        self.path = path
        self.display = display
        self.settings = settings
        self.size = size
        self.id_prefix = resume.id_prefix if resume else id_prefix
        self.cache = cache if cache is not None else MessageCache()
        self.resume = resume
        self.fallback = _fallback_episode(display, path, settings)
        self.named: set[str] = set(resume.named) if resume else set()
        self.n_fallback = 0
        self.n_lines = 0
        self.episodes: set[str] = set()
        self.rejects: list[tuple[int, str, str]] = []
        """(line, reason, raw) of lines not loaded, taken by the writer after each batch."""
        self.warnings: list[Rejection] = []
        self.skip_through = skip_through
        """Lines up to this one were committed by an earlier load of the file: not parsed."""
        self.batch_lines = BATCH_LINES
        self.batch_bytes = BATCH_BYTES
        """The current batch bounds (the writer narrows them to keep its lock hold short)."""

    def take_rejects(self) -> list[tuple[int, str, str]]:
        out, self.rejects = self.rejects, []
        return out

    def single_named(self) -> str | None:
        """FORMATS §1: identity-less calls (utility calls) join the file's one named episode
        (after an append, also those of the earlier part once a name appears)."""
        if (self.n_fallback or self.resume) and len(self.named) == 1:
            return next(iter(self.named))
        return None

    def _parse(self, n: int, data: bytes) -> ParsedExchange | None:
        try:
            record = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            self.rejects.append((n, _bad_json_reason(data, exc), _raw_text(data)))
            return None
        cut = _truncated_reason(record)
        if cut is not None:
            self.rejects.append((n, cut, ""))
            return None
        try:
            return parse_exchange(
                record,
                source_file=self.display,
                line=n,
                call_id=f"{self.id_prefix}:{n}",
                file_episode=self.fallback,
                cache=self.cache,
            )
        except FormatError as exc:
            self.rejects.append((n, str(exc), _raw_text(data)))
        except Exception as exc:  # noqa: BLE001 - one odd record must not stop the file
            reason = f"cannot read exchange ({type(exc).__name__}: {exc})"
            self.rejects.append((n, reason, _raw_text(data)))
        return None

    def batches(self) -> Iterator[tuple[list[ParsedExchange], int]]:
        """(calls, bytes read so far) per batch of `BATCH_LINES` lines or `BATCH_BYTES`; the
        last batch (maybe empty) comes after the whole file was read."""
        resume = self.resume
        reader = LineReader(
            self.path,
            self.settings,
            start=resume.start if resume else 0,
            end=self.size,
            first_line=resume.first_line if resume else 1,
        )
        batch: list[ParsedExchange] = []
        batch_bytes = 0
        try:
            for n, data in reader.lines(self.display):
                # Only a line that starts with whitespace can be blank: no copy of every long line.
                if (data[:1].isspace() and not data.strip()) or n <= self.skip_through:
                    continue
                parsed = self._parse(n, data)
                if parsed is None:
                    continue
                if parsed.has_identity:
                    self.named.add(parsed.call.episode_id or "")
                else:
                    self.n_fallback += 1
                if parsed.unknown_endpoint:
                    self.warnings.append(
                        Rejection(
                            self.display,
                            n,
                            f"unknown endpoint {parsed.call.extra['unknown_endpoint']} "
                            "kept as a non_model call",
                        )
                    )
                self.episodes.add(parsed.call.episode_id or self.fallback)
                batch.append(parsed)
                batch_bytes += len(data)
                if len(batch) >= self.batch_lines or batch_bytes >= self.batch_bytes:
                    yield batch, reader.position()
                    batch, batch_bytes = [], 0
            self.n_lines = reader.n_lines
            for problem in reader.problems():
                self.rejects.append((problem.line, problem.reason, ""))
            self.warnings.extend(reader.notes)
            yield batch, reader.position()
        finally:
            reader.close()


def _ingest_exchange(
    fi: _FileIngest,
    out: IngestReport,
    tick: Callable[[int], None],
    cache: MessageCache,
    seen: store.SeenHashes,
    resume: _Resume | None = None,
    done: _Done | None = None,
) -> None:
    """Load an exchange log in batches, each committed on its own (`_commit_batch`), then
    resolve its fallback episode and refresh its episodes' rows. The caller marks the file
    loaded. `done`: what an earlier, unfinished load of it committed (continued here)."""
    parse = ExchangeParse(
        fi.target.path,
        fi.target.display,
        fi.settings,
        size=fi.size,
        id_prefix=fi.sha.removeprefix(FINGERPRINT)[:12],
        cache=cache,
        resume=resume,
        skip_through=done.through if done else 0,
    )
    for eid in done.episodes if done else ():
        parse.episodes.add(eid)
        if eid == parse.fallback:
            parse.n_fallback += 1
        else:
            parse.named.add(eid)
    for batch, pos in parse.batches():
        for parsed in batch:
            fi.held.add(parsed.call)
        for line, reason, raw in parse.take_rejects():
            fi.reject(line, reason, raw)
        began = time.perf_counter()
        _commit_batch(fi, out, batch, seen, done.rejected_lines if done else frozenset())
        _fit_batch(parse, time.perf_counter() - began)
        out.warnings.extend(parse.warnings)
        parse.warnings = []
        tick(pos)
    fi.report.n_lines = parse.n_lines
    fi.episodes.update(parse.episodes)
    only = parse.single_named()
    if only is not None:

        def move() -> None:
            store.reassign_episode(fi.session, fi.source.id or 0, parse.fallback, only)
            _end(fi)

        _step(fi, move)
        fi.held.rename(parse.fallback, only, fi.target.display)
        fi.episodes.discard(parse.fallback)
        fi.episodes.add(only)
    ids = sorted(e for e in fi.episodes if e)
    for i in range(0, len(ids), REFRESH_EPISODES):
        chunk = ids[i : i + REFRESH_EPISODES]

        def refresh(chunk: list[str] = chunk) -> None:
            store.refresh_episodes(fi.session, chunk)
            _end(fi)

        _step(fi, refresh)


@dataclass
class _Done:
    """What an unfinished load of a file committed: every line up to `through` is in (as a
    call or a rejected line), with these episodes and rejected line numbers."""

    through: int
    episodes: set[str]
    rejected_lines: frozenset[int]
    n_calls: int
    rejected: list[Rejection]


def _committed(session: Session, source_id: int, from_line: int = 1) -> _Done:
    """What earlier batches of the file of `source_id` committed, from line `from_line` on."""
    last, n_calls, episodes, rejected = store.source_progress(session, source_id, from_line)
    return _Done(
        through=max([last, *(r[1] for r in rejected)]),
        episodes=episodes,
        rejected_lines=frozenset(r[1] for r in rejected),
        n_calls=n_calls,
        rejected=[Rejection(f, ln, r) for f, ln, r in rejected],
    )


def _step(fi: _FileIngest, work: Callable[[], T], undo: Callable[[], None] | None = None) -> T:
    """Run one step of a batched load as its own transaction (retried while another SQLite
    writer holds the lock), or inside the file's one transaction (`fi.single`)."""
    if fi.single:
        return work()
    return retry_locked(fi.session, work, undo)


def _end(fi: _FileIngest) -> None:
    """Commit a step, or only flush it when the file is one transaction."""
    if fi.single:
        fi.session.flush()
    else:
        fi.session.commit()


def _commit_batch(
    fi: _FileIngest,
    out: IngestReport,
    batch: list[ParsedExchange],
    seen: store.SeenHashes,
    done_lines: frozenset[int],
) -> None:
    """Write one batch with its rejected lines and commit it; while another SQLite writer holds
    the lock, the batch alone (never the file) is written again. A call the database refuses
    becomes a rejected line; a line an earlier load already rejected is not stored twice."""
    pending, fi.rejects = fi.rejects, []

    def work() -> tuple[list[tuple[str, int, str, str]], int]:
        failed = store.write_parsed_guarded(fi.session, batch, fi.source, seen)
        rows = pending + [(fi.target.display, p.call.line, why, "") for p, why in failed]
        rows = [r for r in rows if r[1] not in done_lines]
        store.write_rejections(fi.session, fi.source, rows)
        _end(fi)
        return rows, len(failed)

    rows, n_failed = _step(fi, work, seen.clear)
    if not fi.single:
        fi.held.commit()
    fi.report.n_calls += len(batch) - n_failed
    fi.report.n_rejected += len(rows)
    out.rejected.extend(Rejection(f, ln, r) for f, ln, r, _ in rows)


def _fit_batch(parse: ExchangeParse, took: float) -> None:
    """Narrow the next batch after one that held the lock too long; widen it again after
    short ones (`BATCH_HOLD_S`)."""
    if took > BATCH_HOLD_S:
        parse.batch_lines = max(BATCH_MIN_LINES, parse.batch_lines // 2)
        parse.batch_bytes = max(1 << 16, parse.batch_bytes // 2)
    elif took < BATCH_HOLD_S / 4:
        parse.batch_lines = min(BATCH_LINES, parse.batch_lines * 2)
        parse.batch_bytes = min(BATCH_BYTES, parse.batch_bytes * 2)


RESULT_BATCH = 1000
RESULT_BATCH_BYTES = 8 << 20
"""Results lines settled at once (at most this many, and this many bytes of them held): one
look-up of which are in the store already, and one insert of the new ones (a look-up and an
ORM flush per line cost 1.2 ms a line: a training run's 100,000 results took two minutes)."""


def _ingest_results(fi: _FileIngest, out: IngestReport) -> None:
    display = fi.target.display
    base_dir = fi.target.path.resolve().parent
    seen: set[str] = set()
    # (line, the Result's columns or None, the reason it is rejected, the raw line), in order.
    pending: list[tuple[int, dict[str, Any] | None, str, bytes]] = []
    held = 0
    table = Result.__table__  # type: ignore[attr-defined]

    def settle() -> None:
        nonlocal held
        ids = list({v["episode_id"] for _, v, _, _ in pending if v is not None})
        stored: set[str] = set()
        if ids:
            stmt = select(col(Result.episode_id)).where(
                store.member_of(fi.session, col(Result.episode_id), ids)
            )
            stored = set(fi.session.exec(stmt))
        rows = []
        for n, values, reason, data in pending:
            if values is None:
                fi.reject(n, reason, _raw_text(data))
                continue
            eid = values["episode_id"]
            if eid in seen or eid in stored:
                # A result once loaded is never replaced: nothing loaded before changes.
                fi.reject(
                    n, f"duplicate result for episode {eid} (first one kept)", _raw_text(data)
                )
                continue
            seen.add(eid)
            rows.append({**values, "source_id": fi.source.id})
            fi.result_episodes.add(eid)
        if rows:
            fi.session.execute(table.insert(), rows)
            fi.report.n_results += len(rows)
        pending.clear()
        held = 0

    reader = LineReader(fi.target.path, fi.settings)
    try:
        for n, data in reader.lines(display):
            fi.report.n_lines = n
            if not data.strip():
                continue
            try:
                record = orjson.loads(data)
                pending.append((n, parse_result(record, base_dir=base_dir), "", data))
            except orjson.JSONDecodeError as exc:
                pending.append((n, None, _bad_json_reason(data, exc), data))
            except FormatError as exc:
                pending.append((n, None, str(exc), data))
            held += len(data)
            if len(pending) >= RESULT_BATCH or held >= RESULT_BATCH_BYTES:
                settle()
        settle()
        for problem in reader.problems():
            fi.reject(problem.line, problem.reason, "")
        out.warnings.extend(reader.notes)
        fi.flush_rejects(out)
    finally:
        reader.close()
    fi.session.flush()


def _ingest_findings(fi: _FileIngest, out: IngestReport) -> None:
    """A findings JSONL made elsewhere (clawviz.review.findings): each valid line is stored."""
    records: list[tuple[int, Any]] = []
    raws: dict[int, str] = {}
    reader = LineReader(fi.target.path)
    try:
        for n, data in reader.lines(fi.target.display):
            fi.report.n_lines = n
            if not data.strip():
                continue
            try:
                records.append((n, orjson.loads(data)))
                raws[n] = _raw_text(data)
            except orjson.JSONDecodeError as exc:
                fi.reject(n, _bad_json_reason(data, exc), _raw_text(data))
        if reader.error:
            fi.reject(reader.error.line, reader.error.reason, "")
    finally:
        reader.close()
    from clawviz.review import import_records

    result = import_records(fi.session, records, fi.target.display)
    for n, reason in result.rejected or []:
        fi.reject(n, reason, raws.get(n, ""))
    fi.report.n_findings = result.findings
    fi.flush_rejects(out)
    fi.session.flush()


def _ingest_transcript(fi: _FileIngest, out: IngestReport, records: list[Any]) -> None:
    from clawviz.ingest import read_transcript

    read = read_transcript(fi.target.path)
    fi.report.covered_by = getattr(read, "covered_by", None)
    fallback = getattr(read, "episode_id", None) or _fallback_episode(fi.target.display)
    calls = []
    for call in read.calls:
        call.source_kind = "transcript"
        call.source_file = call.source_file or fi.target.display
        call.episode_id = call.episode_id or fallback
        try:
            validate_call(call, messages=True)
        except FormatError as exc:
            fi.reject(call.line, str(exc), "")
            continue
        calls.append(call)
        fi.episodes.add(call.episode_id)
        fi.held.add(call)
    failed = store.write_parsed_guarded(fi.session, [store.as_parsed(c) for c in calls], fi.source)
    for parsed, reason in failed:
        fi.reject(parsed.call.line, reason, "")
    fi.report.n_calls += len(calls) - len(failed)
    for line, reason, raw in read.rejects:
        fi.reject(line, reason, raw)
    # Claude Code sessions read their sub-agent files too; their bad lines name those files.
    for other, rows in (getattr(read, "rejects_by_file", None) or {}).items():
        fi.rejects.extend((str(other), line, reason, raw) for line, reason, raw in rows)
    fi.flush_rejects(out)
    store.refresh_episodes(fi.session, fi.episodes)


def _ingest_task_folder(session: Session, target: _Target, out: IngestReport) -> FileReport:
    from clawviz.review import load_task_folder

    report = FileReport(target.display, "task_folder", "loaded")
    for task in load_task_folder(target.path):
        if session.get(Task, task.task_id) is None:
            session.add(task)
            report.n_tasks += 1
    session.commit()
    return report


def ingest_paths(
    paths: list[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    session: Session,
    settings: Settings = DEFAULT_SETTINGS,
    progress: Progress | None = None,
    workers: int = 1,
    engine: str = "process",
    ray_address: str | None = None,
) -> IngestReport:
    """Ingest files and folders (recursive); raise FileNotFoundError if a path is missing.

    `workers` > 1: exchange logs are read, and the episodes analysed, in that many processes
    (`clawviz.jobs.pool`); the store ends up as a single process leaves it. `engine="ray"`: the
    same with Ray tasks (at `ray_address`, else a local Ray with `workers` CPUs). A `file://`
    URL is read as its local path."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    targets = _collect(list(paths))
    # Ingest allocates many short-lived containers and creates no cycles worth collecting;
    # the cyclic collector would otherwise rescan every live batch again and again.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _ingest_targets(targets, session, progress, settings, workers, engine, ray_address)
    finally:
        if gc_was_enabled:
            gc.enable()


def _ingest_targets(
    targets: list[_Target],
    session: Session,
    progress: Progress | None,
    settings: Settings = DEFAULT_SETTINGS,
    workers: int = 1,
    engine: str = "process",
    ray_address: str | None = None,
) -> IngestReport:
    pool = None
    if workers > 1 or engine == "ray":
        pool = jobpool.IngestPool(workers, settings, engine, ray_address)
    try:
        if pool is not None:
            _start_pool(pool, targets, session, settings)
        # Message and blob keys are random hashes: a larger page cache keeps B-tree inserts
        # from re-reading pages (SQLite, `store.bulk_cache`).
        with store.bulk_cache(session):
            return _load_targets(targets, session, progress, settings, pool)
    finally:
        if pool is not None:
            pool.close()


def _load_targets(
    targets: list[_Target],
    session: Session,
    progress: Progress | None,
    settings: Settings,
    pool: Any = None,
) -> IngestReport:
    out = IngestReport()
    total = sum(_size(t) for t in targets if t.kind == "file")
    done = 0
    cache = MessageCache()
    seen = store.SeenHashes()
    held = _Held()
    episodes: set[str] = set()
    for index, target in enumerate(targets):
        if target.kind == "unreadable":
            # Only regular files are read: a FIFO or /dev/zero would hang or never end.
            out.skipped_files.append(SkippedFile(target.display, target.problem))
            continue
        if target.kind == "task_folder":
            rep = retry_locked(
                session, functools.partial(_ingest_task_folder, session, target, out)
            )
            out.files.append(rep)
            out.n_tasks += rep.n_tasks
            continue
        size = _size(target)
        if progress:
            progress(done, total, target.display)

        if pool is not None and index in pool.jobs and not _remote_other(pool, index):
            # Read by a worker; written here (SQLite) or by the worker (PostgreSQL).
            out.files.append(_load_pooled(pool, index, session, out, seen, episodes))
            index_pending(session)  # in target order, as below
            done += size
            if progress:
                progress(done, total, target.display)
            continue
        if pool is not None and index in pool.duplicate_of:
            out.files.append(FileReport(target.display, "exchange", "already_loaded"))
            done += size
            continue

        def load(target: _Target = target, done: int = done) -> FileReport:
            return _ingest_file(
                session, target, out, cache, seen, held, episodes, done, total, progress, settings
            )

        def undo(display: str = target.display) -> None:
            # The file's transaction was rolled back: it is read again from its first line.
            held.rollback()
            seen.clear()
            out.rejected = [r for r in out.rejected if r.file != display]
            out.warnings = [w for w in out.warnings if w.file != display]

        # SQLite has one writer: while another holds the lock (a long file of a concurrent
        # ingest) past the busy timeout, the file waits and loads again, never fails.
        if target.url:
            remote = _load_remote(target, load, session, undo, settings)
            if isinstance(remote, str):
                out.skipped_files.append(SkippedFile(target.display, remote))
                done += size
                continue
            rep = remote
        else:
            rep = retry_locked(session, load, undo)
        index_pending(session)  # the search index follows each file (issue 26, views)
        out.files.append(rep)
        done += size
        if progress:
            progress(done, total, target.display)
    _warn_uncovered(targets, out)

    def fill() -> None:
        if pool is not None and pool.direct:
            # Workers wrote files of one episode side by side, each refreshing its episodes
            # from the calls its own transaction saw: once more now that all are committed.
            store.refresh_episodes(session, pool.episodes)
        store.fill_episodes_from_results(session)
        session.commit()

    retry_locked(session, fill)
    # Decisions at ingest, from the calls still in memory: `episodes` and the app only read.
    try:
        # Only the episodes this ingest touched (its calls, its results): a parallel ingest
        # analyses its own, and nothing else is recomputed.
        # (waits, and retries, while another SQLite writer holds the lock: `ensure_analysis`)
        only = episodes | held.rewarded
        if pool is not None:
            from clawviz.jobs import reanalyse

            reanalyse.reanalyse(
                session,
                settings,
                workers=pool.workers,
                engine="ray" if pool.engine == "ray" else "process",
                ray_address=pool.ray_address,
                only=only,
            )
        else:
            analyse.ensure_analysis(session, settings, held=held.calls, only=only)
        sessions.link_sessions(session, only, settings)  # one episode per session
    except SQLAlchemyError as exc:
        # The calls are committed; their decisions are then made on first view instead.
        session.rollback()
        out.warnings.append(
            Rejection("", 0, f"decisions not stored at ingest ({str(exc).splitlines()[0][:200]})")
        )
    _compact_attempts(session)
    out.n_calls = sum(f.n_calls for f in out.files)
    out.n_results = sum(f.n_results for f in out.files)
    out.n_episodes = len(episodes)
    out.episode_ids = sorted(episodes)
    return out


def _compact_attempts(session: Session) -> None:
    """PostgreSQL: fold the attempts revision's per-transaction rows (this ingest's and any
    other writer's since the last ingest) into one, so the Tasks page's read of it stays
    O(writers since then). The revision is unchanged. A failure (a read-only role, a
    deadlock with another ingest's compaction) costs only the folding: the next one does it."""
    if session.get_bind().dialect.name != "postgresql":
        return
    try:
        store.compact_attempts(session.connection())
        session.commit()
    except SQLAlchemyError:
        session.rollback()


def _warn_uncovered(targets: list[_Target], out: IngestReport) -> None:
    """Warn about sub-agent transcripts whose parent session file was not given with them."""
    given = {t.path.resolve() for t in targets if t.kind != "unreadable"}
    for rep in out.files:
        if rep.covered_by and Path(rep.covered_by).resolve() not in given:
            out.warnings.append(
                Rejection(
                    rep.path,
                    0,
                    f"sub-agent session: its calls are loaded with its parent session file "
                    f"{rep.covered_by}, which this ingest did not include",
                )
            )


def _ingest_file(
    session: Session,
    target: _Target,
    out: IngestReport,
    cache: MessageCache,
    seen: store.SeenHashes,
    held: _Held,
    episodes: set[str],
    done: int,
    total: int,
    progress: Progress | None,
    settings: Settings = DEFAULT_SETTINGS,
) -> FileReport:
    grown = _grown_candidates(session, target)
    cut = _partial_candidates(session, target)
    size, sha, heads = file_hashes(target.path, {c.size_bytes for c in grown + cut})
    previous = _previous_source(session, target.path, sha)
    if previous is not None:
        return FileReport(target.display, previous.format, "already_loaded")
    for part in cut:
        if part.size_bytes < size and PARTIAL + heads.get(part.size_bytes, "") == part.sha256:
            # An unfinished load of this log's first bytes, and the log has grown since:
            # finish those, then add the rest as a grown log.
            head = part.sha256.removeprefix(PARTIAL)
            cut_rep = _load_exchange(
                session, target, out, cache, seen, held, episodes, head, part.size_bytes, settings
            )
            if cut_rep.status != "loaded":
                return cut_rep
            rest = _ingest_file(
                session, target, out, cache, seen, held, episodes, done, total, progress, settings
            )
            if rest.status == "appended":
                rest.status = "loaded"
                rest.n_lines = max(rest.n_lines, cut_rep.n_lines)
                rest.n_calls += cut_rep.n_calls
                rest.n_rejected += cut_rep.n_rejected
            return rest
    for cand in grown:
        if cand.size_bytes < size and heads.get(cand.size_bytes) == cand.sha256:
            return _append_file(session, target, out, cache, seen, held, episodes, cand, size, sha)
    unread: list[Rejection] = []
    fmt, records = _sniff(target.path, settings, unread, target.display)
    if fmt == "unknown":
        if unread:
            # Lines the reader refused (over max_line_bytes, ...) are rejected lines, named by
            # file and line, not a silent skip: such a line may be the file's only exchange.
            out.rejected.extend(unread)
            first = unread[0]
            what = "no readable record" if not records else "no recognised record"
            out.skipped_files.append(
                SkippedFile(
                    target.display,
                    f"{what} in its first {SNIFF_LINES} lines; {len(unread)} line(s) rejected "
                    f"(line {first.line}: {first.reason})",
                )
            )
            return FileReport(target.display, fmt, "skipped", n_rejected=len(unread))
        out.skipped_files.append(
            SkippedFile(
                target.display,
                f"no exchange, results or transcript records in its first {SNIFF_LINES} lines",
            )
        )
        return FileReport(target.display, fmt, "skipped")

    def tick(pos: int) -> None:
        if progress:
            progress(done + pos, total, target.display)

    if fmt == "exchange":
        return _load_exchange(
            session, target, out, cache, seen, held, episodes, sha, size, settings, tick
        )
    report = FileReport(target.display, fmt, "loaded")
    try:
        fi = _FileIngest(session, target, sha, fmt, report, held, size=size)
        fi.settings = settings
        if fmt == "results":
            _ingest_results(fi, out)
        elif fmt == "findings":
            _ingest_findings(fi, out)
        else:
            _ingest_transcript(fi, out, records)
        fi.source.n_lines = report.n_lines
        fi.source.n_calls = report.n_calls
        fi.source.n_rejected = report.n_rejected
        fi.source.n_episodes = len(fi.episodes)
        session.add(fi.source)
        session.commit()
        held.commit()
        episodes.update(fi.episodes)
        held.rewarded.update(fi.result_episodes)
        if fmt not in ("results", "findings") and report.n_calls == 0:
            report.status = "no_calls"
    except IntegrityError as exc:
        if "sha256" not in str(exc).lower():
            return _file_failed(session, seen, target, out, report, exc)
        session.rollback()
        seen.clear()
        out.rejected = [r for r in out.rejected if r.file != target.display]
        # Another process loaded (or is loading) the same bytes: not an error of this file.
        done_by_other = store.source_by_sha(session, sha) is not None
        session.rollback()
        status = "already_loaded" if done_by_other else "already_being_loaded"
        return FileReport(target.display, fmt, status)
    except Exception as exc:  # noqa: BLE001 - a broken file is reported, the others still load
        if is_locked(exc):
            raise  # another writer holds the lock: the file is loaded again (`_ingest_targets`)
        return _file_failed(session, seen, target, out, report, exc)
    return report


def _load_exchange(
    session: Session,
    target: _Target,
    out: IngestReport,
    cache: MessageCache,
    seen: store.SeenHashes,
    held: _Held,
    episodes: set[str],
    sha: str,
    size: int,
    settings: Settings,
    tick: Callable[[int], None] = lambda _: None,
) -> FileReport:
    """Load a new exchange log (its first `size` bytes, fingerprint `sha`) in batches.

    Its source row is committed first as `partial:<sha>`; each batch then commits its calls
    and rejected lines; the row takes its real fingerprint when all is in. The load holds a
    claim on `sha` (`db.claim`): another live process loading the same bytes makes this one
    report `already_being_loaded`; a load that ended mid-way (killed) is continued from its
    last committed line."""
    display = target.display
    with claim(session, sha) as mine:
        if not mine:
            return FileReport(display, "exchange", "already_being_loaded")
        session.rollback()  # see what was committed up to the claim
        if store.source_by_sha(session, sha) is not None:
            return FileReport(display, "exchange", "already_loaded")
        report = FileReport(display, "exchange", "loaded")
        source = store.source_by_sha(session, PARTIAL + sha)
        done = None
        single = source is None and size <= ONE_TRANSACTION_BYTES
        try:
            if single:
                source = Source(path=display, sha256=sha, format="exchange", size_bytes=size)
                session.add(source)
                session.flush()
            elif source is None:

                def create() -> Source:
                    row = Source(
                        path=display, sha256=PARTIAL + sha, format="exchange", size_bytes=size
                    )
                    session.add(row)
                    session.commit()
                    return row

                source = retry_locked(session, create)
            else:
                done = _committed(session, source.id or 0)
                report.n_calls, report.n_rejected = done.n_calls, len(done.rejected)
                out.rejected.extend(done.rejected)
            fi = _FileIngest(
                session, target, sha, "exchange", report, held, size=size, source=source
            )
            fi.settings = settings
            fi.single = single
            _ingest_exchange(fi, out, tick, cache, seen, done=done)

            def mark() -> None:
                fi.source.sha256 = sha
                fi.source.n_lines = report.n_lines
                fi.source.n_calls = report.n_calls
                fi.source.n_rejected = report.n_rejected
                fi.source.n_episodes = len(fi.episodes)
                session.add(fi.source)
                session.commit()

            _step(fi, mark)
            held.commit()
        except Exception as exc:  # noqa: BLE001 - a broken file is reported, the others still load
            if is_locked(exc):
                raise  # past the lock retry: the file is loaded again (`_ingest_targets`)
            session.rollback()
            held.rollback()
            if single and isinstance(exc, IntegrityError) and "sha256" in str(exc).lower():
                # Another process (`ingest --workers`) wrote the same bytes meanwhile.
                seen.clear()
                out.rejected = [r for r in out.rejected if r.file != display]
                loaded = store.source_by_sha(session, sha) is not None
                session.rollback()
                status = "already_loaded" if loaded else "already_being_loaded"
                return FileReport(display, "exchange", status)
            kept = "" if single else _kept_note(session, source)
            rep = _file_failed(session, seen, target, out, report, exc)
            if kept:
                rep.error = f"{rep.error} ({kept})"
                out.errors[-1] = SkippedFile(display, rep.error)
            return rep
    episodes.update(fi.episodes)
    held.rewarded.update(fi.result_episodes)
    if report.n_calls == 0:
        report.status = "no_calls"
    return report


def _kept_note(session: Session, source: Source | None) -> str:
    """After a batched load failed mid-way: its committed batches are kept (the next ingest of
    the file continues from them) and named in its error; a source row with nothing committed
    yet is removed, as if the file had never been read."""
    if source is None or source.id is None:
        return ""
    try:
        session.rollback()
        _, n_calls, _, rejected = store.source_progress(session, source.id)
        if not n_calls and not rejected:
            store.drop_source(session, source.id)
            session.commit()
            return ""
    except SQLAlchemyError:
        session.rollback()
        return ""
    return (
        f"{n_calls} calls and {len(rejected)} rejected lines of its committed batches are kept; "
        "the next ingest of the file continues from there"
    )


def _partial_candidates(session: Session, target: _Target) -> list[Source]:
    """Unfinished batched loads of an exchange log under this file name (a recording that may
    have grown since the load stopped)."""
    name = target.path.name
    if target.kind != "file" or name.endswith(".gz"):
        return []
    rows = session.exec(
        select(Source).where(
            col(Source.sha256).startswith(PARTIAL),
            Source.format == "exchange",
            Source.path.endswith(name),
        )
    ).all()
    return [r for r in rows if Path(r.path).name == name]


def _file_failed(
    session: Session,
    seen: store.SeenHashes,
    target: _Target,
    out: IngestReport,
    report: FileReport,
    exc: Exception,
) -> FileReport:
    session.rollback()
    seen.clear()
    # Rejections already added to the report for this file were rolled back with it.
    out.rejected = [r for r in out.rejected if r.file != target.display]
    report.status, report.error = "error", f"{type(exc).__name__}: {mask_secrets(str(exc))}"
    report.n_calls = report.n_results = report.n_rejected = 0
    out.errors.append(SkippedFile(target.display, report.error))
    return report


def _grown_candidates(session: Session, target: _Target) -> list[Source]:
    """Exchange logs loaded before under this file name and smaller than it is now: the file
    may be one of them grown (a live recording). Largest first."""
    name = target.path.name
    if target.kind != "file" or name.endswith(".gz"):
        return []
    size = target.path.stat().st_size
    rows = session.exec(
        select(Source).where(
            Source.format == "exchange",
            Source.size_bytes < size,
            Source.size_bytes > 0,
            Source.path.endswith(name),
        )
    ).all()
    return sorted(
        (r for r in rows if Path(r.path).name == name), key=lambda r: r.size_bytes, reverse=True
    )


def _torn_tail(path: Path, size: int) -> int:
    """Bytes after the last newline in the first `size` bytes of a file."""
    with path.open("rb") as f:
        end = size
        while end > 0:
            start = max(0, end - (1 << 16))
            f.seek(start)
            block = f.read(end - start)
            i = block.rfind(b"\n")
            if i >= 0:
                return size - (start + i + 1)
            end = start
    return size


def _append_file(
    session: Session,
    target: _Target,
    out: IngestReport,
    cache: MessageCache,
    seen: store.SeenHashes,
    held: _Held,
    episodes: set[str],
    source: Source,
    size: int,
    sha: str,
) -> FileReport:
    """Load only the lines a grown exchange log gained since `source` was loaded from it.

    Its first `source.size_bytes` bytes are the ones loaded then (their fingerprint matched), so
    reading continues there, with line numbers and call ids continuing too. A last line that
    was torn then (no newline yet) is read again whole, and its old rejection dropped.
    """
    report = FileReport(target.display, "exchange", "appended")
    with claim(session, f"append:{source.id}") as mine:
        if not mine:
            return FileReport(target.display, "exchange", "already_being_loaded")
        matched = source.sha256
        session.rollback()
        session.refresh(source)
        if source.sha256 == sha:
            return FileReport(target.display, "exchange", "already_loaded")
        if source.sha256 != matched:
            # Another process appended part of the new lines meanwhile: the next run adds the rest.
            return FileReport(target.display, "exchange", "already_being_loaded")
        try:
            fi = _append_batches(session, target, out, cache, seen, held, source, size, sha, report)
        except Exception as exc:  # noqa: BLE001 - as for a new file: reported, the others load
            if is_locked(exc):
                raise  # another writer holds the lock: the file is loaded again (`_ingest_targets`)
            session.rollback()
            held.rollback()
            seen.clear()
            out.rejected = [r for r in out.rejected if r.file != target.display]
            report.status, report.error = "error", f"{type(exc).__name__}: {exc}"
            report.n_calls = report.n_rejected = 0
            out.errors.append(SkippedFile(target.display, report.error))
            return report
    episodes.update(fi.episodes)
    return report


def _append_batches(
    session: Session,
    target: _Target,
    out: IngestReport,
    cache: MessageCache,
    seen: store.SeenHashes,
    held: _Held,
    source: Source,
    size: int,
    sha: str,
    report: FileReport,
) -> _FileIngest:
    """`_append_file`'s load, in batches: the source row keeps its old fingerprint and size
    until the last batch is in, so an append that stopped mid-way is continued (from its last
    committed line) by the next ingest of the log."""
    torn = _torn_tail(target.path, source.size_bytes)
    start, first_line = source.size_bytes - torn, source.n_lines + 1
    if torn:
        first_line = source.n_lines

        def drop() -> None:
            dropped = store.drop_rejection(session, source.id or 0, first_line)
            source.n_rejected -= dropped
            session.add(source)
            session.commit()

        retry_locked(session, drop)
    first_id = session.exec(
        select(CallRow.call_id).where(CallRow.source_id == source.id).limit(1)
    ).first()
    fallback = _fallback_episode(target.display, target.path)
    named = set(
        session.exec(
            select(CallRow.episode_id)
            .where(CallRow.source_id == source.id, CallRow.episode_id != fallback)
            .distinct()
        ).all()
    )
    resume = _Resume(
        start=start,
        first_line=first_line,
        id_prefix=first_id.split(":")[0] if first_id else sha.removeprefix(FINGERPRINT)[:12],
        named={e for e in named if e},
    )
    done = _committed(session, source.id or 0, first_line)
    report.n_calls, report.n_rejected = done.n_calls, len(done.rejected)
    out.rejected.extend(done.rejected)
    fi = _FileIngest(session, target, sha, "exchange", report, held, size=size, source=source)
    _ingest_exchange(fi, out, lambda _: None, cache, seen, resume, done)

    def mark() -> None:
        source.sha256 = sha
        source.size_bytes = size
        source.n_lines = max(report.n_lines, source.n_lines)
        source.n_calls += report.n_calls
        source.n_rejected += report.n_rejected
        source.n_episodes = len(
            session.exec(
                select(CallRow.episode_id).where(CallRow.source_id == source.id).distinct()
            ).all()
        )
        source.ingested_at = utcnow()
        session.add(source)
        session.commit()

    retry_locked(session, mark)
    held.commit()
    return fi


# --- `ingest --workers N` (`clawviz.jobs.pool`): which files the workers read, and writing them


def _start_pool(
    pool: jobpool.IngestPool, targets: list[_Target], session: Session, settings: Settings
) -> None:
    """Hand the new exchange logs among `targets` to the pool's workers.

    Every file is fingerprinted here: one loaded before is left to the ordinary path (which
    reports it already loaded), as is a grown log (appended, as before) and any other format;
    a second listing of the same bytes is loaded once (`duplicate_of`)."""
    dialect = session.get_bind().dialect.name
    pool.direct = dialect == "postgresql"
    url = jobpool.store_url(session) if dialect == "postgresql" else None
    jobs: list[jobpool.Job] = []
    by_sha: dict[str, int] = {}
    for i, target in enumerate(targets):
        if target.url and pool.engine == "ray":
            jobs.append(_remote_job(pool, i, target, settings, dialect, url))
            continue
        if target.kind != "file" or target.url or _grown_candidates(session, target):
            continue
        try:
            size, sha, _ = file_hashes(target.path, ())
        except OSError:
            continue  # the ordinary path reports it
        if sha in by_sha:
            pool.duplicate_of[i] = by_sha[sha]
            continue
        if _previous_source(session, target.path, sha) is not None:
            continue
        if store.source_by_sha(session, PARTIAL + sha) is not None:
            continue  # an unfinished batched load: the ordinary path continues it
        fmt, _ = _sniff(target.path, settings, None, target.display)
        if fmt != "exchange":
            continue
        by_sha[sha] = i
        jobs.append(
            jobpool.Job(
                i,
                str(target.path),
                target.display,
                sha,
                size,
                settings,
                dialect in ("sqlite", "postgresql"),
                url,
                pool.spool_dir(),
                ExchangeParse,
                write_prepared,
                inline=pool.engine == "ray",
                url=raydata.url_of(target.path) if pool.engine == "ray" else "",
            )
        )
    session.rollback()  # end the read transaction: the workers and other writers go ahead
    pool.start(jobs)


def write_prepared(
    session: Session,
    job: jobpool.Job,
    parts: Iterator[jobpool.Chunk | jobpool.Tail],
    seen: store.SeenHashes,
) -> tuple[FileReport, IngestReport]:
    """Write one exchange log a worker prepared, in one transaction, as `_ingest_file` loads
    one; returns its report and an IngestReport with its rejected lines, notes, errors and (in
    `episode_ids`) its episodes."""
    out = IngestReport()
    target = _Target(Path(job.path), job.display, "file")
    report = FileReport(job.display, "exchange", "loaded")
    try:
        fi = _FileIngest(session, target, job.sha, "exchange", report, size=job.size)
        fi.settings = job.settings
        for part in parts:
            if isinstance(part, jobpool.Tail):
                _finish_prepared(fi, part)
                continue
            for line, reason, raw in part.rejects:
                fi.reject(line, reason, raw)
            failed = insert_prepared_guarded(session, part.items, fi.source.id, seen)
            for line, reason in failed:
                fi.reject(line, reason, "")
            report.n_calls += len(part.items) - len(failed)
            out.warnings.extend(part.warnings)
            fi.flush_rejects(out)
        fi.source.n_lines = report.n_lines
        fi.source.n_calls = report.n_calls
        fi.source.n_rejected = report.n_rejected
        fi.source.n_episodes = len(fi.episodes)
        session.add(fi.source)
        session.commit()
        out.episode_ids = sorted(fi.episodes)
        if report.n_calls == 0:
            report.status = "no_calls"
    except IntegrityError as exc:
        if "sha256" not in str(exc).lower():
            return _file_failed(session, seen, target, out, report, exc), out
        session.rollback()
        seen.clear()
        out.rejected = []
        # Another process loaded (or is loading) the same bytes: not an error of this file.
        done_by_other = store.source_by_sha(session, job.sha) is not None
        session.rollback()
        status = "already_loaded" if done_by_other else "already_being_loaded"
        return FileReport(job.display, "exchange", status), out
    except Exception as exc:  # noqa: BLE001 - a broken file is reported, the others still load
        if is_locked(exc):
            raise  # another writer holds the lock: the file is written again
        return _file_failed(session, seen, target, out, report, exc), out
    return report, out


def _finish_prepared(fi: _FileIngest, tail: jobpool.Tail) -> None:
    fi.report.n_lines = tail.n_lines
    fi.episodes.update(tail.episodes)
    if tail.single_named is not None:
        store.reassign_episode(fi.session, fi.source.id or 0, tail.fallback, tail.single_named)
        fi.episodes.discard(tail.fallback)
        fi.episodes.add(tail.single_named)
    store.refresh_episodes(fi.session, fi.episodes)


def _load_pooled(
    pool: jobpool.IngestPool,
    index: int,
    session: Session,
    out: IngestReport,
    seen: store.SeenHashes,
    episodes: set[str],
) -> FileReport:
    """Target `index`'s report: what its worker wrote (PostgreSQL), or its spool written here
    (SQLite, the one writer)."""
    job = pool.jobs[index]
    done = pool.result(index)
    if isinstance(done, BaseException):
        if pool.direct and (src := store.source_by_sha(session, job.sha)) is not None:
            # Its worker committed it and died before answering: the file is in the store
            # (which run wrote it is not known, so it is not claimed as this one's).
            _, _, stored, _ = store.source_progress(session, src.id or 0)
            session.rollback()
            pool.episodes.update(stored)
            episodes.update(stored)
            return FileReport(job.display, "exchange", "already_loaded")
        reason = f"worker failed: {type(done).__name__}: {mask_secrets(str(done))}"
        out.errors.append(SkippedFile(job.display, reason))
        return FileReport(job.display, "exchange", "error", error=reason)
    if done.parts is not None:
        parts = done.parts

        def write_parts() -> tuple[FileReport, IngestReport]:
            return write_prepared(session, job, iter(parts), seen)

        rep, mine = retry_locked(session, write_parts, seen.clear)
    elif done.spool is None:
        rep, mine = done.report, done.out
        pool.episodes.update(mine.episode_ids)
    else:
        spool = done.spool

        def write() -> tuple[FileReport, IngestReport]:
            return write_prepared(session, job, jobpool.read_spool(spool), seen)

        try:
            rep, mine = retry_locked(session, write, seen.clear)
        finally:
            Path(spool).unlink(missing_ok=True)
    out.rejected.extend(mine.rejected)
    out.warnings.extend(mine.warnings)
    out.errors.extend(mine.errors)
    episodes.update(mine.episode_ids)
    return rep


# --- remote files (`s3://`, ... `clawviz.jobs.raydata`): read in the tasks, else staged here


def _size(target: _Target) -> int:
    return target.size if target.url else target.path.stat().st_size


def _remote_job(
    pool: jobpool.IngestPool,
    index: int,
    target: _Target,
    settings: Settings,
    dialect: str,
    url: str | None,
) -> jobpool.Job:
    """A remote file for a Ray task, which fingerprints and sniffs it (the driver never reads
    its bytes); one loaded before fails on its unique fingerprint and is reported
    already loaded."""
    return jobpool.Job(
        index,
        target.url,
        target.display,
        "",
        target.size,
        settings,
        dialect in ("sqlite", "postgresql"),
        url,
        pool.spool_dir(),
        ExchangeParse,
        write_prepared,
        inline=True,
        url=target.url,
        sniff=_sniff,
        hashes=file_hashes,
    )


def _remote_other(pool: jobpool.IngestPool, index: int) -> bool:
    """A remote file its task found not to be an exchange log: the driver loads it."""
    if pool.jobs[index].sniff is None:  # a local file: sniffed by the driver already
        return False
    done = pool.result(index)
    return not isinstance(done, BaseException) and done.other_format is not None


def _load_remote(
    target: _Target,
    load: Callable[..., FileReport],
    session: Session,
    undo: Callable[[], None],
    settings: Settings,
) -> FileReport | str:
    """A remote exchange log loaded here (no Ray task read it): copied to a local file first,
    then loaded as one. Any other format is skipped, with the reason: a transcript's folder
    links sub-agents and sessions, and a results or findings file names workspaces relative
    to its own folder, so a lone copy would load as something else."""
    with raydata.stage(target.url) as local:
        fmt, _ = _sniff(local, settings, None, target.display)
        if fmt != "exchange":
            return (
                f"only exchange logs are read from a URL, this is {fmt} (it refers to files "
                "beside it): ingest it from a local path"
            )
        staged = _Target(local, target.display, "file")
        rep: FileReport = retry_locked(session, functools.partial(load, staged), undo)
        return rep
