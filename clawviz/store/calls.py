"""Reads and writes of calls in the content-addressed store.

Each distinct message is stored once (keyed by `canonical.message_hash`); system prompts, tool
definitions and the rest of each request body are content-addressed blobs. Writes are bulk
`INSERT ... ON CONFLICT DO NOTHING`, so a batch that repeats a history adds nothing new.

On SQLite, large texts are stored compressed: the column then holds bytes (a BLOB) instead
of text, so stores written before compression still read. On PostgreSQL those columns are
bytea and every value is a zstd frame (`models.PackedText`, migration 0007). New texts are
zstd frames (level 1, about 3x faster than zlib level 1 at a slightly better ratio); stores
written with zlib still read, since the two formats' first bytes differ (zstd frames start
with 28 b5 2f fd, zlib streams with 78). A message row packs both forms in one stream,
`canonical_json` = compress(canonical + "\n" + raw) with an empty `raw_json`, since the two
forms are nearly the same text; an empty raw part means the raw form equals the canonical
one. The read functions here (`load_calls`, `raw_request`, `message_texts`, `unpack_text`)
undo it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

import orjson
from sqlalchemy import ARRAY, Table, any_, bindparam, column, delete, func, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    InternalError,
    OperationalError,
    ProgrammingError,
    StatementError,
)
from sqlmodel import Session, select

from clawviz.recon import message_hash
from clawviz.store.models import (
    Blob,
    CallRow,
    Episode,
    MessageRow,
    RejectedLine,
    Result,
    Source,
    call_order_by,
    restore_nul,
)
from clawviz.store.packing import (  # noqa: F401 - _local: bench/compiled.py times zstd
    PACK_LEVEL,
    ZSTD_MAGIC,
    _local,
    _zstd,
    compress,
    decompress,
)
from clawviz.types import Call, Message, ParsedExchange, Rollout, Usage, system_text

_CHUNK = 500
PACK_MIN = 256
"""Texts shorter than this stay plain: compression would barely shrink them."""


def _dumps(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


def _dumpb(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)


def unpack_text(value: str | bytes | None) -> str | None:
    """The text of a stored text column (a bytes value is compressed text)."""
    if isinstance(value, bytes):
        return decompress(value).decode()
    return value


def _unpack_json(value: str | bytes) -> Any:
    return orjson.loads(decompress(value) if isinstance(value, bytes) else value)


def _message_json(canonical: str | bytes, raw: str | bytes) -> tuple[str | bytes, str | bytes]:
    """The canonical and raw JSON of a stored message row (either packing), for orjson.loads."""
    if isinstance(canonical, bytes):
        c, _, r = decompress(canonical).partition(b"\n")
        return c, r or c
    return canonical, raw


def message_texts(row: MessageRow) -> tuple[str, str]:
    """A message row's canonical and raw JSON text, however it is stored."""
    c, r = _message_json(row.canonical_json, row.raw_json)
    return (
        c.decode() if isinstance(c, bytes) else c,
        r.decode() if isinstance(r, bytes) else r,
    )


class _Packer:
    """How texts are written: compressed on SQLite (columns there take bytes too) and on
    PostgreSQL (bytea columns, `models.PackedText`, which also compresses the short ones)."""

    def __init__(self, session: Session) -> None:
        self.on = session.get_bind().dialect.name in ("sqlite", "postgresql")

    def text(self, data: bytes) -> str | bytes:
        if self.on and len(data) >= PACK_MIN:
            return compress(data)
        return data.decode()

    def message(self, canonical: bytes, raw: bytes) -> tuple[str | bytes, str | bytes]:
        """(canonical_json, raw_json) column values of a message."""
        if not self.on:
            return canonical.decode(), raw.decode()
        # orjson never writes a raw newline, so "\n" separates the two forms unambiguously.
        rest = b"" if raw == canonical else raw
        return compress(canonical + b"\n" + rest), b""


def _insert_ignore(session: Session, table: Table, rows: list[dict[str, Any]]) -> None:
    """Bulk insert, skipping rows whose primary key already exists."""
    if rows:
        cols = tuple(rows[0])
        _insert_rows(session, table, cols, [tuple(r[c] for c in cols) for r in rows])


def _insert_rows(
    session: Session, table: Table, cols: Sequence[str], rows: list[tuple[Any, ...]]
) -> None:
    """Bulk insert of value tuples in `cols` order, skipping rows whose key already exists."""
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        # The driver's executemany skips SQLAlchemy's per-row parameter processing (hot path).
        sql = (
            f"INSERT OR IGNORE INTO {table.name} ({', '.join(cols)}) "
            f"VALUES ({', '.join('?' * len(cols))})"
        )
        session.connection().exec_driver_sql(sql, rows)
        return
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    session.execute(
        insert(table).on_conflict_do_nothing(), [dict(zip(cols, r, strict=True)) for r in rows]
    )


class SeenHashes:
    """Hashes already written in this ingest; bounded so memory does not grow with the log."""

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self.recent_blobs = _RecentBlobs()

    @property
    def known(self) -> set[str]:
        """The live set of hashes (the same object across `clear`), for a cheap membership test."""
        return self._seen

    def add_new(self, h: str) -> bool:
        """Record `h`; True if it was not seen before."""
        if h in self._seen:
            return False
        if len(self._seen) >= self.limit:
            self._seen.clear()
        self._seen.add(h)
        return True

    def clear(self) -> None:
        """Forget everything (after a rollback the hashes are no longer in the store)."""
        self._seen.clear()


class _RecentBlobs:
    """The last few blobs' JSON and hash: a call's system prompt, tools and envelope are
    usually the previous call's (of its thread), so comparing bytes skips the sha256."""

    def __init__(self, n: int = 8) -> None:
        self.n = n
        self.items: list[tuple[bytes, str]] = []

    def hash(self, data: bytes) -> str:
        items = self.items
        for i in range(len(items) - 1, -1, -1):
            if items[i][0] == data:
                return items[i][1]
        h = hashlib.sha256(data).hexdigest()
        items.append((data, h))
        if len(items) > self.n:
            del items[0]
        return h


def _blob(value: Any, blobs: dict[str, bytes], recent: _RecentBlobs | None = None) -> str | None:
    """Queue `value` (JSON-encoded) as a blob; return its hash (None for None)."""
    if value is None:
        return None
    data = _dumpb(value)
    h = recent.hash(data) if recent is not None else hashlib.sha256(data).hexdigest()
    blobs.setdefault(h, data)
    return h


def _rollout_json(r: Rollout | None) -> str | None:
    return _dumps(dataclasses.asdict(r)) if r is not None else None


_CALL_COLS = (
    "call_id",
    "episode_id",
    "source_id",
    "source_file",
    "line",
    "seq",
    "endpoint",
    "method",
    "url",
    "http_status",
    "t_request",
    "t_response",
    "model",
    "model_role",
    "turn_type",
    "session_id",
    "task_id",
    "harness",
    "attempt",
    "stop_reason",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "failure",
    "error",
    "delivered",
    "source_kind",
    "system_hash",
    "tools_json",
    "tools_hash",
    "envelope_hash",
    "message_hashes",
    "response_json",
    "raw_response",
    "headers_json",
    "rollout_json",
    "extra_json",
)
_MESSAGE_COLS = ("hash", "role", "canonical_json", "raw_json", "size_bytes")


def _call_row(
    p: ParsedExchange,
    source_id: int | None,
    blobs: dict[str, bytes],
    pack: _Packer,
    recent: _RecentBlobs | None = None,
) -> tuple[Any, ...]:
    """The call's column values in `_CALL_COLS` order."""
    c = p.call
    u = c.usage
    system = p.system_raw if p.system_raw is not None else c.system or None
    raw_response = p.raw_response
    return (
        c.call_id,
        c.episode_id,
        source_id,
        c.source_file,
        c.line,
        c.seq,
        c.endpoint,
        c.method,
        c.url,
        c.http_status,
        c.t_request,
        c.t_response,
        c.model,
        c.model_role,
        c.turn_type,
        c.session_id,
        c.task_id,
        c.harness,
        c.attempt,
        c.stop_reason,
        u.input_tokens,
        u.output_tokens,
        u.cache_read_input_tokens,
        u.cache_creation_input_tokens,
        c.failure,
        c.error,
        c.delivered,
        c.source_kind,
        _blob(system, blobs, recent),
        _dumps(c.tools),
        _blob(p.tools_raw or None, blobs, recent),
        _blob(p.envelope or None, blobs, recent),
        pack.text(_dumpb(p.message_hashes)),
        # Read as plain JSON by SQL queries elsewhere (dataset stats), so never compressed.
        _dumps(c.response) if c.response is not None else None,
        pack.text(raw_response.encode()) if raw_response is not None else None,
        _dumps(c.headers),
        _rollout_json(c.rollout),
        _dumps(c.extra),
    )


def as_parsed(call: Call) -> ParsedExchange:
    """Wrap a call that has no separate wire form (e.g. a replayed transcript turn)."""
    return ParsedExchange(
        call=call,
        raw_messages=list(call.messages),
        message_hashes=[message_hash(m) for m in call.messages],
        system_raw=call.system or None,
    )


def write_parsed(
    session: Session,
    items: Sequence[ParsedExchange],
    source: Source | None,
    seen: SeenHashes | None = None,
) -> None:
    """Insert calls, their distinct messages and blobs (no commit)."""
    seen = seen or SeenHashes()
    pack = _Packer(session)
    source_id = source.id if source is not None else None
    blobs: dict[str, bytes] = {}
    messages: list[tuple[Any, ...]] = []
    calls: list[tuple[Any, ...]] = []
    known = seen.known
    for p in items:
        wires = p.raw_wire
        for i, h in enumerate(p.message_hashes):
            # Most messages are history re-sent by every call: skip them without a method call.
            if h not in known and seen.add_new(h):
                msg = p.call.messages[i]
                # The parser's bytes of the raw message (orjson, str keys: the same bytes).
                wire = wires[i] if wires is not None else None
                raw_json = wire if wire is not None else _dumpb(p.raw_messages[i])
                canonical_json, raw_col = pack.message(_dumpb(msg), raw_json)
                messages.append((h, str(msg.get("role")), canonical_json, raw_col, len(raw_json)))
        calls.append(_call_row(p, source_id, blobs, pack, seen.recent_blobs))
    # Blob keys share the seen-set with message keys under a prefix (different hash inputs).
    new_blobs = [(h, pack.text(t)) for h, t in blobs.items() if seen.add_new("blob:" + h)]
    if not _insert_content_now(session, messages, new_blobs):
        _insert_rows(session, MessageRow.__table__, _MESSAGE_COLS, messages)
        _insert_rows(session, Blob.__table__, ("hash", "text"), new_blobs)
    _insert_rows(session, CallRow.__table__, _CALL_COLS, calls)


def _insert_content_now(
    session: Session, messages: list[tuple[Any, ...]], blobs: list[tuple[Any, ...]]
) -> bool:
    """On PostgreSQL, commit content-addressed rows (messages, blobs) at once, in key order, on a
    connection of their own; False elsewhere (the caller writes them in its transaction).

    Concurrent writers share these rows (every episode of a harness sends the same system
    prompt and tools). Inserted in the file's long transaction, a row another writer also
    inserts makes that writer wait for the whole file to commit, and writers that each hold a
    row the other wants deadlock; committed at once there is nothing to wait for. The rows are
    immutable and keyed by their content, so one left by a file that fails later is harmless.
    """
    bind = session.get_bind()
    if bind.dialect.name != "postgresql" or not isinstance(bind, Engine):
        return False
    from sqlalchemy.dialects.postgresql import insert

    with bind.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table, cols, rows in (
            (MessageRow.__table__, _MESSAGE_COLS, messages),
            (Blob.__table__, ("hash", "text"), blobs),
        ):
            if rows:
                conn.execute(
                    insert(table).on_conflict_do_nothing(),
                    [dict(zip(cols, r, strict=True)) for r in sorted(rows, key=lambda r: r[0])],
                )
    return True


def _store_error(exc: BaseException) -> str:
    """A one-line reason for a value the database refused, without the SQL statement."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else ""
    return f"cannot store this line ({type(orig).__name__}: {text[:200]})"


def write_parsed_guarded(
    session: Session,
    items: Sequence[ParsedExchange],
    source: Source | None,
    seen: SeenHashes | None = None,
) -> list[tuple[ParsedExchange, str]]:
    """`write_parsed` inside a savepoint; if the batch fails, retry one call at a time.

    Returns (item, reason) for each call the database refused: one value SQL cannot bind costs
    its own line, never the batch or the file. Hashes noted during a rolled-back attempt are
    forgotten, so no later call refers to a message that was not written.
    """
    if not items:
        return []
    seen = seen if seen is not None else SeenHashes()
    try:
        with session.begin_nested():
            write_parsed(session, items, source, seen)
        return []
    except _VALUE_ERRORS as exc:
        if not _is_value_error(exc):
            raise
        seen.clear()
    failures: list[tuple[ParsedExchange, str]] = []
    for item in items:
        try:
            with session.begin_nested():
                write_parsed(session, [item], source, seen)
        except _VALUE_ERRORS as exc:
            if not _is_value_error(exc):
                raise
            seen.clear()
            failures.append((item, _store_error(exc)))
    return failures


# What a bad value makes the driver raise (a value it cannot bind, a constraint, a range).
# A store failure (disk full, locked, connection lost: OperationalError) is not the line's
# fault and still fails the whole file.
_VALUE_ERRORS = (StatementError, OverflowError, TypeError, ValueError, orjson.JSONEncodeError)


def _is_value_error(exc: BaseException) -> bool:
    if isinstance(exc, (OperationalError, InternalError)):
        return False
    if isinstance(exc, (IntegrityError, DataError, ProgrammingError, InterfaceError)):
        return True
    if isinstance(exc, DBAPIError):
        return False
    if isinstance(exc, StatementError):
        return isinstance(exc.orig, (OverflowError, TypeError, ValueError))
    return True


def write_calls(session: Session, calls: Iterable[Call], source: Source | None) -> None:
    """Insert calls (agreed API); each distinct message stored once. Does not commit."""
    write_parsed(session, [as_parsed(c) for c in calls], source)


def write_rejections(
    session: Session, source: Source | None, rows: Iterable[tuple[str, int, str, str]]
) -> None:
    """Insert rejected lines given as (file, line, reason, raw)."""
    source_id = source.id if source is not None else None
    _insert_ignore(
        session,
        RejectedLine.__table__,
        [
            {"source_id": source_id, "source_file": f, "line": ln, "reason": r, "raw": raw}
            for f, ln, r, raw in rows
        ],
    )


def drop_rejection(session: Session, source_id: int, line: int) -> int:
    """Forget a file's rejected line (a torn last line read again whole); returns rows gone."""
    result = session.execute(
        delete(RejectedLine).where(RejectedLine.source_id == source_id, RejectedLine.line == line)
    )
    return int(result.rowcount or 0)


def source_progress(
    session: Session, source_id: int, from_line: int = 1
) -> tuple[int, int, set[str], list[tuple[str, int, str]]]:
    """What is stored of a file's lines from `from_line` on (a batched load that stopped
    mid-way): its last call's line, its number of calls, their episodes, and its rejected
    lines as (file, line, reason) in line order."""
    where = (CallRow.source_id == source_id, CallRow.line >= from_line)
    last, n = session.execute(select(func.max(CallRow.line), func.count()).where(*where)).one()
    episodes = session.execute(select(CallRow.episode_id).where(*where).distinct()).scalars()
    rejected = session.execute(
        select(RejectedLine.source_file, RejectedLine.line, RejectedLine.reason)
        .where(RejectedLine.source_id == source_id, RejectedLine.line >= from_line)
        .order_by(RejectedLine.line)
    ).all()
    return (
        int(last or 0),
        int(n or 0),
        {e for e in episodes if e},
        [(f, int(ln), r) for f, ln, r in rejected],
    )


def drop_source(session: Session, source_id: int) -> None:
    """Forget a source row that nothing refers to (a load that failed before its first batch)."""
    session.execute(delete(Source).where(Source.id == source_id))


def reassign_episode(session: Session, source_id: int, old: str, new: str) -> None:
    """Move a file's fallback-episode calls to the one episode its other calls name."""
    session.execute(
        update(CallRow)
        .where(CallRow.source_id == source_id, CallRow.episode_id == old)
        .values(episode_id=new)
    )


def _chunks(seq: Sequence[Any], n: int = _CHUNK) -> Iterable[Sequence[Any]]:
    for i in range(0, len(seq), n):
        yield seq[i : i + n]


def member_of(session: Session, column: Any, values: Sequence[Any]) -> Any:
    """`column IN (values)`; on PostgreSQL `column = ANY(:values)` with one bound array.

    An IN list of 500 values is 500 placeholders that psycopg parses again for every query
    (a third of an SFT export's client CPU on PostgreSQL); one array parameter is one
    placeholder, and the statement is the same for every chunk, so it is prepared once. The
    column's type binds each element (`NulSafeString` escapes NUL there too)."""
    if session.get_bind().dialect.name == "postgresql":
        return column == any_(bindparam(None, list(values), type_=ARRAY(column.type)))
    return column.in_(values)


_EPISODE_COLS = (
    "episode_id",
    "task_id",
    "harness",
    "model",
    "model_role",
    "attempt",
    "n_calls",
    "source_kind",
    "first_ts",
    "last_ts",
)


def _call_stats(session: Session, chunk: list[str]) -> list[Any]:
    """Per episode: call count, first and last time, and the facts its calls name."""
    return list(
        session.execute(
            select(
                CallRow.episode_id,
                func.count(),
                func.min(CallRow.t_request),
                func.max(func.coalesce(CallRow.t_response, CallRow.t_request)),
                func.max(CallRow.task_id),
                func.max(CallRow.harness),
                func.max(CallRow.attempt),
                func.max(CallRow.model_role),
                func.max(CallRow.source_kind),
            )
            .where(CallRow.episode_id.in_(chunk))
            .group_by(CallRow.episode_id)
        ).all()
    )


def _model_counts(session: Session, chunk: list[str]) -> dict[str, Counter[str]]:
    """Per episode: how many model calls each model answered."""
    models: dict[str, Counter[str]] = {}
    for eid, model, n in session.execute(
        select(CallRow.episode_id, CallRow.model, func.count())
        .where(
            CallRow.episode_id.in_(chunk),
            CallRow.model.is_not(None),
            CallRow.endpoint != "non_model",
        )
        .group_by(CallRow.episode_id, CallRow.model)
    ).all():
        models.setdefault(eid, Counter())[model] = n
    return models


def _result_facts(session: Session, chunk: list[str]) -> dict[str, Any]:
    return {
        r.episode_id: r
        for r in session.execute(
            select(
                Result.episode_id,
                Result.task_id,
                Result.harness,
                Result.attempt,
                Result.model_role,
            ).where(Result.episode_id.in_(chunk))
        )
    }


def _merged_episode(
    old: dict[str, Any] | None,
    stats: Any,
    models: Counter[str] | None,
    res: Any,
) -> dict[str, Any]:
    """An episode's columns: counts and times from its calls; task, harness, attempt and role
    kept when known, else from its calls, else from its result."""
    eid, n, t0, t1, task, harness, attempt, role, kind = stats
    ep = dict(old) if old else _new_episode(eid)
    ep["n_calls"] = n
    ep["first_ts"], ep["last_ts"] = t0, t1
    ep["source_kind"] = kind or ep["source_kind"]
    if models:
        ep["model"] = models.most_common(1)[0][0]
    ep["task_id"] = ep["task_id"] or task or (res.task_id if res else None)
    ep["harness"] = ep["harness"] or harness or (res.harness if res else None)
    ep["attempt"] = ep["attempt"] if ep["attempt"] is not None else attempt
    if ep["attempt"] is None and res is not None:
        ep["attempt"] = res.attempt
    ep["model_role"] = ep["model_role"] or role or (res.model_role if res else None)
    return ep


def refresh_episodes(session: Session, episode_ids: Iterable[str]) -> None:
    """Create or update Episode rows from their calls; fill missing facts from results."""
    ids = sorted({e for e in episode_ids if e})
    session.flush()
    table = Episode.__table__
    for chunk in _chunks(ids):
        stats = _call_stats(session, chunk)
        models = _model_counts(session, chunk)
        results = _result_facts(session, chunk)
        # Plain rows rather than ORM objects: per-attribute instrumentation dominated this step.
        existing = {
            r.episode_id: r._asdict()
            for r in session.execute(
                select(*(table.c[c] for c in _EPISODE_COLS)).where(table.c.episode_id.in_(chunk))
            )
        }
        inserts: list[tuple[Any, ...]] = []
        updates: list[dict[str, Any]] = []
        for row in stats:
            eid = row[0]
            old = existing.get(eid)
            ep = _merged_episode(old, row, models.get(eid), results.get(eid))
            if old is None:
                inserts.append(tuple(ep[c] for c in _EPISODE_COLS))
            elif ep != old:
                updates.append({f"v_{c}": v for c, v in ep.items()})
        _insert_rows(session, table, _EPISODE_COLS, inserts)
        if updates:
            session.execute(
                update(table)
                .where(table.c.episode_id == bindparam("v_episode_id"))
                .values({c: bindparam(f"v_{c}") for c in _EPISODE_COLS[1:]}),
                updates,
            )
    # Episode objects this session already holds must not show the values from before.
    wanted = set(ids)
    for obj in list(session.identity_map.values()):
        if isinstance(obj, Episode) and obj.episode_id in wanted:
            session.expire(obj)


@cache
def _episode_defaults() -> tuple[tuple[str, Any], ...]:
    defaults = Episode(episode_id="")
    return tuple((c, getattr(defaults, c)) for c in _EPISODE_COLS)


def _new_episode(episode_id: str) -> dict[str, Any]:
    """Column values of an Episode row that does not exist yet (the model's defaults)."""
    return {**dict(_episode_defaults()), "episode_id": episode_id}


def fill_episodes_from_results(session: Session) -> None:
    """Fill episode facts the logs did not carry from their results (only empty fields)."""
    rows = session.exec(
        select(Episode, Result).where(Episode.episode_id == Result.episode_id)
    ).all()
    for ep, res in rows:
        changed = False
        for name in ("task_id", "harness", "attempt", "model_role"):
            if getattr(ep, name) is None and getattr(res, name) is not None:
                setattr(ep, name, getattr(res, name))
                changed = True
        if changed:
            session.add(ep)
    session.flush()


def list_episodes(session: Session) -> list[Episode]:
    """All episodes, ordered by task, harness, attempt and id."""
    return list(
        session.exec(
            select(Episode).order_by(
                Episode.task_id, Episode.harness, Episode.attempt, Episode.episode_id
            )
        )
    )


def load_result(session: Session, episode_id: str) -> Result | None:
    """The verifier's result for an episode, if one was ingested."""
    return session.exec(select(Result).where(Result.episode_id == episode_id)).first()


def _load_blobs(session: Session, hashes: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for chunk in _chunks(sorted(hashes)):
        query = select(Blob.hash, Blob.text).where(member_of(session, Blob.hash, chunk))
        for h, text in session.execute(query):
            out[h] = _unpack_json(text)
    return out


def _load_messages(session: Session, hashes: set[str], column: str) -> dict[str, Any]:
    """Messages by hash in their `canonical_json` or `raw_json` form."""
    want_raw = column == "raw_json"
    out: dict[str, Any] = {}
    for chunk in _chunks(sorted(hashes)):
        query = select(MessageRow.hash, MessageRow.canonical_json, MessageRow.raw_json)
        for h, canonical, raw in session.execute(
            query.where(member_of(session, MessageRow.hash, chunk))
        ):
            c, r = _message_json(canonical, raw)
            out[h] = orjson.loads(r if want_raw else c)
    return out


def row_to_call(row: CallRow, messages: dict[str, Message], systems: dict[str, Any]) -> Call:
    """Rebuild a `Call` from its row and the loaded messages / system blobs."""
    rollout = orjson.loads(row.rollout_json) if row.rollout_json else None
    system_raw = systems.get(row.system_hash) if row.system_hash else None
    return Call(
        call_id=row.call_id,
        source_file=row.source_file,
        line=row.line,
        endpoint=row.endpoint,  # type: ignore[arg-type]
        method=row.method,
        url=row.url,
        seq=row.seq,
        t_request=row.t_request,
        t_response=row.t_response,
        http_status=row.http_status,
        episode_id=row.episode_id,
        task_id=row.task_id,
        harness=row.harness,
        attempt=row.attempt,
        model=row.model,
        model_role=row.model_role,
        turn_type=row.turn_type,
        session_id=row.session_id,
        headers=orjson.loads(row.headers_json),
        system=system_text(system_raw),
        tools=orjson.loads(row.tools_json),
        messages=[messages[h] for h in _unpack_json(row.message_hashes)],
        response=orjson.loads(row.response_json) if row.response_json else None,
        stop_reason=row.stop_reason,
        usage=Usage(
            row.input_tokens,
            row.output_tokens,
            row.cache_read_input_tokens,
            row.cache_creation_input_tokens,
        ),
        failure=row.failure,  # type: ignore[arg-type]
        error=row.error,
        delivered=row.delivered,
        rollout=Rollout(**rollout) if rollout else None,
        source_kind=row.source_kind,  # type: ignore[arg-type]
        extra=orjson.loads(row.extra_json),
    )


def load_calls(session: Session, episode_id: str) -> list[Call]:
    """An episode's calls with messages rebuilt, ordered by seq, request time, file and line."""
    rows = list(
        session.exec(
            select(CallRow)
            .where(CallRow.episode_id == episode_id)
            .order_by(*call_order_by(CallRow.__table__.c))
        )
    )
    hashes: set[str] = set()
    for r in rows:
        hashes.update(_unpack_json(r.message_hashes))
    messages = _load_messages(session, hashes, "canonical_json")
    systems = _load_blobs(session, {r.system_hash for r in rows if r.system_hash})
    return [row_to_call(r, messages, systems) for r in rows]


_ANALYSIS_COLS = (
    "call_id",
    "source_file",
    "line",
    "endpoint",
    "method",
    "url",
    "seq",
    "t_request",
    "t_response",
    "http_status",
    "episode_id",
    "task_id",
    "harness",
    "attempt",
    "model",
    "model_role",
    "turn_type",
    "session_id",
    "headers_json",
    "system_hash",
    "tools_json",
    "message_hashes",
    "response_json",
    "stop_reason",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "failure",
    "error",
    "delivered",
    "rollout_json",
    "source_kind",
    "extra_json",
)
"""The call columns `row_to_call` reads (not `raw_response`, the verbatim response text)."""


def load_calls_many(session: Session, episode_ids: Sequence[str]) -> dict[str, list[Call]]:
    """The calls of many episodes at once, each list as `load_calls` returns it.

    One query per chunk of episodes instead of three per episode; messages and system prompts
    shared between the episodes are loaded (and held) once.
    """
    table = CallRow.__table__
    cols = [table.c[name] for name in _ANALYSIS_COLS]
    rows: dict[str, list[Any]] = {e: [] for e in episode_ids}
    for chunk in _chunks(sorted(rows)):
        query = (
            select(*cols)
            .where(table.c.episode_id.in_(chunk))
            .order_by(table.c.episode_id, *call_order_by(table.c))
        )
        for r in session.execute(query):
            rows[r.episode_id].append(r)
    hashes: set[str] = set()
    for group in rows.values():
        for r in group:
            hashes.update(_unpack_json(r.message_hashes))
    messages = _load_messages(session, hashes, "canonical_json")
    systems = _load_blobs(
        session, {r.system_hash for group in rows.values() for r in group if r.system_hash}
    )
    return {e: [row_to_call(r, messages, systems) for r in group] for e, group in rows.items()}


def raw_request(session: Session, call_id: str) -> dict[str, Any]:
    """The request body of a call rebuilt for display: raw messages plus the envelope."""
    row = session.get(CallRow, call_id)
    if row is None:
        raise KeyError(call_id)
    hashes = _unpack_json(row.message_hashes)
    raws = _load_messages(session, set(hashes), "raw_json")
    blobs = _load_blobs(
        session, {h for h in (row.system_hash, row.tools_hash, row.envelope_hash) if h}
    )
    body: dict[str, Any] = dict(blobs.get(row.envelope_hash, {})) if row.envelope_hash else {}
    system = blobs.get(row.system_hash) if row.system_hash else None
    tools = blobs.get(row.tools_hash) if row.tools_hash else None
    messages = [raws[h] for h in hashes]
    if row.endpoint == "openai_responses":
        if system is not None:
            body["instructions"] = system
        body["input"] = [item for group in messages for item in group]
    elif row.endpoint == "openai_chat":
        if isinstance(system, str):
            # A call with no wire form (a transcript turn) keeps its system prompt as text.
            system = [{"role": "system", "content": system}]
        body["messages"] = list(system or []) + messages
    elif row.endpoint == "anthropic_messages" or messages:
        if system is not None:
            body["system"] = system
        body["messages"] = messages
    if tools is not None:
        body["tools"] = tools
    return body


def source_by_sha(session: Session, sha256: str) -> Source | None:
    """The source row of a file with these bytes, if it was ingested before."""
    return session.exec(select(Source).where(Source.sha256 == sha256)).first()


_EXPORT_COLS = (
    "call_id",
    "system_hash",
    "message_hashes",
    "response_json",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "rollout_json",
)
"""The call columns an export reads (`clawviz.export`): what its row builders and report use
of a `Call`."""


def load_path_calls(session: Session, call_ids: Sequence[str]) -> dict[str, Call]:
    """The calls named by kept paths, by id, with only the fields an export reads.

    Unlike `load_calls_many` (the analysis's loader), only the calls on kept paths are
    read, and only their messages, system prompt, reply, usage and rollout: the other `Call`
    fields keep their defaults (headers, tools, extra and the log position are never part of
    a row). The columns are selected untyped (`sqlalchemy.column`), so no per-value result
    processing runs: of what the column types would undo, `call_id` may carry an escaped NUL
    (restored here), `message_hashes` is plain or packed (undone by `_unpack_json`, a bytea
    view included), and the JSON columns never start with the NUL marker (JSON text starts
    with `{`, `[` or a literal). Rows are fetched whole (`fetchall`) as tuples.
    """
    table: Any = CallRow.__table__  # type: ignore[attr-defined]
    cols: list[Any] = [column(name) for name in _EXPORT_COLS]
    rows: list[Any] = []
    for i in range(0, len(call_ids), 500):
        chunk = list(call_ids[i : i + 500])
        query = select(*cols).select_from(table).where(member_of(session, table.c.call_id, chunk))
        rows.extend(session.connection().execute(query).fetchall())
    hashes_of = [_unpack_json(_as_bytes(r[2])) for r in rows]
    messages = _load_messages(session, {h for hs in hashes_of for h in hs}, "canonical_json")
    systems: dict[str, str] = {
        h: system_text(raw) for h, raw in _load_blobs(session, {r[1] for r in rows if r[1]}).items()
    }
    get_message = messages.__getitem__
    loads = orjson.loads
    out: dict[str, Call] = {}
    for (raw_id, system_hash, _, response, n_in, n_out, n_read, n_made, rollout), hashes in zip(
        rows, hashes_of, strict=True
    ):
        cid = restore_nul(raw_id)
        rolled = loads(rollout) if rollout else None
        out[cid] = Call(
            call_id=cid,
            source_file="",
            line=0,
            endpoint="anthropic_messages",
            system=systems.get(system_hash, "") if system_hash else "",
            messages=list(map(get_message, hashes)),
            response=loads(response) if response else None,
            usage=Usage(_opt_int(n_in), _opt_int(n_out), _opt_int(n_read), _opt_int(n_made)),
            rollout=Rollout(**rolled) if rolled else None,
        )
    return out


def _as_bytes(value: Any) -> Any:
    """A bytea value as bytes (a driver may hand a memoryview); anything else as it is."""
    return bytes(value) if isinstance(value, memoryview) else value


def _opt_int(v: Any) -> int | None:
    try:
        if v is None or (isinstance(v, float) and v != v):
            return None
        return int(v)
    except (TypeError, ValueError):
        return None


# --- rows prepared without a store (`clawviz.jobs.pool`'s workers), written by the driver ---

Prepared = tuple[tuple[Any, ...], list[tuple[Any, ...]], list[tuple[str, Any]]]
"""One call as store rows: its `CallRow` values (source id left empty), the messages it is
the first in its file to carry, and its new blobs."""
_CALL_TABLE: Any = CallRow.__table__  # type: ignore[attr-defined]
_MESSAGE_TABLE: Any = MessageRow.__table__  # type: ignore[attr-defined]
_BLOB_TABLE: Any = Blob.__table__  # type: ignore[attr-defined]


class PreparedPacker:
    """`_Packer` without a session (`clawviz.jobs.pool`'s workers): the dialect decides
    (compressed on SQLite and PostgreSQL)."""

    def __init__(self, on: bool) -> None:
        self.on = on

    text = _Packer.text
    message = _Packer.message


def prepare_rows(batch: list[ParsedExchange], pack: Any, seen: SeenHashes) -> list[Prepared]:
    """The rows `write_parsed` would write for `batch`, made without a store."""
    out: list[Prepared] = []
    known = seen.known
    for p in batch:
        messages: list[tuple[Any, ...]] = []
        wires = p.raw_wire
        for i, h in enumerate(p.message_hashes):
            if h not in known and seen.add_new(h):
                msg = p.call.messages[i]
                wire = wires[i] if wires is not None else None
                raw_json = wire if wire is not None else _dumpb(p.raw_messages[i])
                canonical_json, raw_col = pack.message(_dumpb(msg), raw_json)
                messages.append((h, str(msg.get("role")), canonical_json, raw_col, len(raw_json)))
        blobs: dict[str, bytes] = {}
        row = _call_row(p, None, blobs, pack, seen.recent_blobs)
        new_blobs = [(h, pack.text(t)) for h, t in blobs.items() if seen.add_new("blob:" + h)]
        out.append((row, messages, new_blobs))
    return out


def _insert_prepared(
    session: Session, items: list[Prepared], source_id: int | None, seen: SeenHashes
) -> None:
    messages = [m for it in items for m in it[1] if seen.add_new(m[0])]
    blobs = [b for it in items for b in it[2] if seen.add_new("blob:" + b[0])]
    calls = [it[0][:2] + (source_id,) + it[0][3:] for it in items if it[0]]
    if not _insert_content_now(session, messages, blobs):
        _insert_rows(session, _MESSAGE_TABLE, _MESSAGE_COLS, messages)
        _insert_rows(session, _BLOB_TABLE, ("hash", "text"), blobs)
    _insert_rows(session, _CALL_TABLE, _CALL_COLS, calls)


def insert_prepared_guarded(
    session: Session, items: list[Prepared], source_id: int | None, seen: SeenHashes
) -> list[tuple[int, str]]:
    """`write_parsed_guarded` for prepared rows: (line, reason) of each call refused.

    A refused call's messages and blobs are still written (content-addressed, harmless), since
    a later call of the file may be the second to carry them."""
    if not items:
        return []
    try:
        with session.begin_nested():
            _insert_prepared(session, items, source_id, seen)
        return []
    except _VALUE_ERRORS as exc:
        if not _is_value_error(exc):
            raise
        seen.clear()
    failed: list[tuple[int, str]] = []
    line_col = _CALL_COLS.index("line")
    for row, messages, blobs in items:
        try:
            with session.begin_nested():
                _insert_prepared(session, [((), messages, blobs)], source_id, seen)  # content only
        except _VALUE_ERRORS as exc:
            if not _is_value_error(exc):
                raise
            seen.clear()
        try:
            with session.begin_nested():
                _insert_rows(
                    session,
                    _CALL_TABLE,
                    _CALL_COLS,
                    [row[:2] + (source_id,) + row[3:]],
                )
        except _VALUE_ERRORS as exc:
            if not _is_value_error(exc):
                raise
            failed.append((row[line_col], _store_error(exc)))
    return failed
