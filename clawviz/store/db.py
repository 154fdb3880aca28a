"""Engine and session helpers. SQLite by default; creation is idempotent."""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO, TypeVar
from urllib.parse import quote

from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table, event, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, SQLModel, create_engine

from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import models

# Alembic (`clawviz.store.migrations`, ~0.2 s of imports) is imported only where a migration
# runs: a new store is stamped, and an up-to-date one checked, with plain SQL below.

T = TypeVar("T")

_ENGINES: dict[str, Engine] = {}
_READ_ONLY: dict[int, str] = {}  # id() of engines on a store in a read-only folder: its URL


class StoreReadOnly(RuntimeError):
    """A write to a store that can only be read (its folder cannot be written)."""


def is_read_only(engine: Engine) -> bool:
    return id(engine) in _READ_ONLY


def require_writable(engine: Engine) -> None:
    """Raise StoreReadOnly, in one line, before a command writes to a read-only store."""
    if is_read_only(engine):
        raise StoreReadOnly(
            f"the store {mask_url(_READ_ONLY[id(engine)])} is read-only (its folder cannot be "
            "written): it can be read, not written"
        )


def get_engine(url: str | None = None, *, check_schema: bool = True) -> Engine:
    """Return a cached engine for `url` (default: the settings table's database URL), on a
    store created or checked by `init_db` (`check_schema=False`: an uncached engine as is,
    for `migrate`)."""
    url = url or DEFAULT_SETTINGS.resolved_database_url
    if url in _ENGINES:
        return _ENGINES[url]
    kwargs: dict = {}
    read_only = False
    engine_url = url
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": busy_timeout_s()}
        if url in ("sqlite://", "sqlite:///:memory:"):
            kwargs["poolclass"] = StaticPool
        else:
            path = url.split("sqlite:///", 1)[-1]
            if path:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                read_only = _read_only_file(path)
            if read_only:
                # Its folder cannot be written, so SQLite could make no -wal/-shm files: open
                # it immutable (nobody can write there either), and every write is refused.
                engine_url = f"sqlite:///file:{quote(path)}?mode=ro&immutable=1&uri=true"
    engine = create_engine(engine_url, **kwargs)
    if url.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_read_only if read_only else _sqlite_pragmas)
        event.listen(engine, "checkout", _sqlite_checkout)
    if read_only:
        _READ_ONLY[id(engine)] = url
    if check_schema:
        init_db(engine)
        _ENGINES[url] = engine
    return engine


def forget_engines() -> None:
    """In a forked worker: drop the parent's pooled connections without closing them (they
    are the parent's), so the worker's `get_engine` opens its own."""
    for engine in list(_ENGINES.values()):
        engine.dispose(close=False)
    _ENGINES.clear()


BUSY_TIMEOUT_S = 600.0
"""How long a SQLite statement waits for another writer's lock before "database is locked"
(environment: CLAWVIZ_SQLITE_BUSY_TIMEOUT, seconds). It was 30 s: a second writer while one
file of about 1 GB loaded failed. Ingest also retries a file past it (`retry_locked`)."""
LOCK_RETRY_S = 24 * 3600.0
"""How long ingest keeps retrying a file (or its analysis) whose write lock another writer
holds (environment: CLAWVIZ_SQLITE_LOCK_RETRY, seconds)."""


def _env_seconds(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, "") or default)
    except ValueError:
        return default


def busy_timeout_s() -> float:
    return _env_seconds("CLAWVIZ_SQLITE_BUSY_TIMEOUT", BUSY_TIMEOUT_S)


def is_locked(exc: BaseException) -> bool:
    """A SQLite "database is locked" (or "table is locked"): another writer holds the lock;
    the same work succeeds once it commits."""
    msg = str(getattr(exc, "orig", None) or exc).lower()
    return isinstance(exc, OperationalError | sqlite3.OperationalError) and (
        "database is locked" in msg or "database table is locked" in msg
    )


def retry_locked(
    session: Session,
    work: Callable[[], T],
    undo: Callable[[], None] | None = None,
    *,
    limit_s: float | None = None,
) -> T:
    """Run `work` (a whole transaction's worth), again after a rollback (and `undo`) while
    another writer holds SQLite's write lock, for up to `limit_s` (LOCK_RETRY_S) in all."""
    limit = _env_seconds("CLAWVIZ_SQLITE_LOCK_RETRY", LOCK_RETRY_S) if limit_s is None else limit_s
    deadline = time.monotonic() + limit
    pause = 0.05
    while True:
        try:
            return work()
        except (OperationalError, sqlite3.OperationalError) as exc:
            if not is_locked(exc) or time.monotonic() + pause > deadline:
                raise
            session.rollback()
            if undo is not None:
                undo()
            time.sleep(pause)
            pause = min(pause * 2, 1.0)


_CLAIMED: set[tuple[str, str]] = set()
_CLAIMED_LOCK = threading.Lock()


def _claim_key(key: str) -> int:
    """A 63-bit number for `key`: the PostgreSQL advisory lock, the SQLite byte range."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1


@contextmanager
def claim(session: Session, key: str) -> Iterator[bool]:
    """Hold a store-wide claim on `key` (a file being loaded) while the block runs; yields
    False when another live process (or thread) holds it.

    The claim ends with the process that holds it, however it ends: a SQLite store takes an
    fcntl lock on one byte of a file beside it (`<store>.claims`, the byte at the key's
    number), PostgreSQL a session advisory lock on a connection of its own. So a load that
    was killed mid-way is taken over by the next ingest, while one that is still running is
    left to finish (`clawviz.jobs.ingest`, batch commits)."""
    bind = session.get_bind()
    engine = bind.engine if isinstance(bind, Connection) else bind
    local = (str(engine.url), key)
    with _CLAIMED_LOCK:
        if local in _CLAIMED:
            yield False
            return
        _CLAIMED.add(local)
    try:
        with _held_claim(engine, _claim_key(key)) as held:
            yield held
    finally:
        with _CLAIMED_LOCK:
            _CLAIMED.discard(local)


@contextmanager
def _held_claim(engine: Engine, number: int) -> Iterator[bool]:
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            got = bool(
                conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": number}).scalar()
            )
            conn.commit()
            try:
                yield got
            finally:
                if got:
                    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": number})
                    conn.commit()
        return
    path = _sqlite_path(engine)
    if path is None:  # an in-memory store: one process only
        yield True
        return
    f = _claim_file(path)
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, number)
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        fcntl.lockf(f, fcntl.LOCK_UN, 1, number)


_CLAIM_FILES: dict[str, BinaryIO] = {}


def _claim_file(path: str) -> BinaryIO:
    """The process's one open handle on `<store>.claims`: POSIX record locks end when the
    process closes any handle on the file, so it is opened once and kept."""
    with _CLAIMED_LOCK:
        f = _CLAIM_FILES.get(path)
        if f is None or f.closed:
            f = _CLAIM_FILES[path] = open(f"{path}.claims", "a+b")  # noqa: SIM115 (kept open)
        return f


def _read_only_file(path: str) -> bool:
    """An existing SQLite file in a folder this process cannot write (read-only mount or
    permissions)."""
    p = Path(path)
    return "?" not in path and p.is_file() and not os.access(p.parent, os.W_OK)


def _sqlite_read_only(dbapi_conn, record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()
    _set_cache(dbapi_conn, record.info, _cache_kb())


def _sqlite_pragmas(dbapi_conn, record) -> None:
    cur = dbapi_conn.cursor()
    # Takes effect only when the file is created (before WAL is set): rows of compressed
    # message and response text are kilobytes, and 4 KB pages would leave a third unused.
    cur.execute("PRAGMA page_size=16384")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()
    _set_cache(dbapi_conn, record.info, _cache_kb())


SQLITE_CACHE_KB = 2_000
"""Page cache of a SQLite connection for the app's views and other reads of a page or an
episode, in KB (SQLite's own default). Larger made the status-filtered Runs view 6-9% slower at
100,000 episodes, and every pooled connection of a long-lived app server could hold it
(bench/README.md, "The SQLite page cache on the app's views")."""

BULK_CACHE_KB = 32_768
"""Page cache of a SQLite connection inside `bulk_cache`: an analysis, an export or an ingest
looks up messages and blobs by hash all over the file, and with 2 MB it read the same index
pages again and again, a `pread` each (a third of `analyse`'s CPU on a 16,000-episode store was
system time: bench/README.md, "The SQLite page cache"). It fills only as pages are read."""

_BULK: ContextVar[bool] = ContextVar("clawviz_bulk_cache", default=False)


def _cache_kb() -> int:
    return BULK_CACHE_KB if _BULK.get() else SQLITE_CACHE_KB


def _set_cache(dbapi_conn, info: dict, kb: int) -> None:
    if info.get("cache_kb") != kb:
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA cache_size=-{int(kb)}")
        cur.close()
        info["cache_kb"] = kb


def _sqlite_checkout(dbapi_conn, record, _proxy) -> None:
    """A pooled connection takes the cache of its user (`bulk_cache` or not) as it is lent."""
    _set_cache(dbapi_conn, record.info, _cache_kb())


@contextmanager
def bulk_cache(session: Session | None = None) -> Iterator[None]:
    """SQLite connections lent to this thread (or task) inside the block get the large page
    cache (`BULK_CACHE_KB`); they are given back the small one when next lent outside it, so
    an app server's pooled connections do not keep it. `session`: its connection, if it holds
    one already, is switched now and back at the end. No effect on PostgreSQL."""
    token = _BULK.set(True)
    bound = _bound_sqlite(session)
    if bound is not None:
        _set_cache(bound.connection.dbapi_connection, bound.connection.info, BULK_CACHE_KB)
    try:
        yield
    finally:
        _BULK.reset(token)
        bound = _bound_sqlite(session)
        if bound is not None:
            _set_cache(bound.connection.dbapi_connection, bound.connection.info, _cache_kb())


def _bound_sqlite(session: Session | None) -> Connection | None:
    """The connection `session` holds now, on SQLite (None: none, or another backend)."""
    if session is None or not session.in_transaction():
        return None
    bind = session.get_bind()
    if bind.dialect.name != "sqlite":
        return None
    return session.connection()


SCHEMA_LOCK_KEY = 0x636C6177  # "claw": the PostgreSQL advisory lock held while creating tables


@contextmanager
def _schema_lock(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that holds the store-wide schema lock.

    Several processes starting on a new store at once (four `clawviz ingest`, a proxy and the
    app) must not race on CREATE TABLE: PostgreSQL takes a transaction-scoped advisory lock,
    a SQLite file an exclusive lock on a file beside it."""
    lock_file = None
    path = _sqlite_path(engine)
    if path is not None:
        lock_file = open(f"{path}.schema-lock", "a+b")  # noqa: SIM115 (held across the yield)
        fcntl.flock(lock_file, fcntl.LOCK_EX)
    try:
        with engine.begin() as conn:
            if engine.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SCHEMA_LOCK_KEY})
            yield conn
    finally:
        if lock_file is not None:
            fcntl.flock(lock_file, fcntl.LOCK_UN)
            lock_file.close()


def _sqlite_path(engine: Engine) -> str | None:
    if engine.dialect.name != "sqlite":
        return None
    db = engine.url.database
    return db if db and db != ":memory:" else None


class StoreOutdated(RuntimeError):
    """The store's schema is older than this clawviz: `clawviz migrate` brings it up."""


def _ready(engine: Engine) -> bool:
    """True when the store already holds every table at the newest revision: checked with a
    plain read, so a store in a read-only folder (no lock file can be made) can be read."""
    with engine.connect() as conn:
        names = set(inspect(conn).get_table_names())
        if not names.issuperset(SQLModel.metadata.tables):
            return False
        return _current(conn) == _head()


def init_db(engine: Engine) -> None:
    """Create a new store (stamped at the newest migration), or check that an existing one is
    at it. Safe when several processes do it at once; an up-to-date store needs no lock."""
    if _ready(engine):
        return
    require_writable(engine)
    with _schema_lock(engine) as conn:
        revision, head = _current(conn), _head()
        if not inspect(conn).has_table("call"):
            SQLModel.metadata.create_all(conn)
            _stamp(conn, head)
            _record_version(conn)
        elif revision != head:
            raise StoreOutdated(
                f"the store {mask_url(engine.url)} is at schema "
                f"{revision or '0001 (v1, before migrations)'}, this clawviz needs "
                f"{head}: run `python3 -m clawviz migrate --db URL` first"
            )
        elif missing := [
            t for name, t in SQLModel.metadata.tables.items() if not inspect(conn).has_table(name)
        ]:
            # Tables of optional features. Only when some is missing: `create_all` also runs
            # the change triggers' DDL (`models._create_change_triggers`), and on PostgreSQL a
            # DROP/CREATE TRIGGER locks `call` and `episode` whole, which deadlocks with a
            # process that created this store a moment ago and is ingesting into it.
            SQLModel.metadata.create_all(conn, tables=missing)


def migrate(engine: Engine) -> list[str]:
    """Bring an existing store to the newest schema (`clawviz migrate`); returns the revisions
    applied. A new store is created at it."""
    from clawviz.store import migrations

    with _schema_lock(engine) as conn:
        if not inspect(conn).has_table("call"):
            SQLModel.metadata.create_all(conn)
            migrations.stamp(conn, migrations.HEAD)
            _record_version(conn)
            return []
        applied = migrations.upgrade(conn, from_v1=migrations.current(conn) is None)
        _record_version(conn)
        return applied


_VERSION = "alembic_version"  # Alembic's version table, as its `version_table_impl` makes it


def _head() -> str:
    """`migrations.HEAD`, read from the revision files without Alembic where they allow."""
    from clawviz.store.fastread import head_revision

    head = head_revision()
    if head is None:  # not a single head: Alembic says which, or fails as it always did
        from clawviz.store import migrations

        head = migrations.HEAD
    return head


def _current(conn: Connection) -> str | None:
    """`migrations.current(conn)` with a plain query (Alembic for more than one row)."""
    if not inspect(conn).has_table(_VERSION):
        return None
    rows = conn.execute(text(f"SELECT version_num FROM {_VERSION}")).fetchall()
    if len(rows) > 1:
        from clawviz.store import migrations

        return migrations.current(conn)  # raises Alembic's "more than one head" error
    return rows[0][0] if rows else None


def _stamp(conn: Connection, head: str) -> None:
    """`migrations.stamp(conn, head)` on a store with no version table: the table Alembic
    would create (tests/test_migrations.py compares them), and one row."""
    if inspect(conn).has_table(_VERSION):
        from clawviz.store import migrations

        migrations.stamp(conn, head)
        return
    version = Table(
        _VERSION,
        MetaData(),
        Column("version_num", String(32), nullable=False),
        PrimaryKeyConstraint("version_num", name=f"{_VERSION}_pkc"),
    )
    version.create(conn)
    conn.execute(version.insert().values(version_num=head))


def _record_version(conn: Connection) -> None:
    with Session(bind=conn) as s:
        row = s.get(models.Meta, "schema_version") or models.Meta(key="schema_version", value="")
        row.value = _head()
        s.add(row)
        s.flush()


def mask_url(url: object) -> str:
    """A database URL with its password replaced by ***."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(str(url)).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 (not a URL: show nothing of it)
        return "<database URL>"


def schema_version(engine: Engine) -> str | None:
    """The store's migration revision (None for a v1 store made before migrations)."""
    with engine.connect() as conn:
        return _current(conn)


@contextmanager
def session_scope(url: str | None = None) -> Iterator[Session]:
    with Session(get_engine(url)) as s:
        yield s
