"""Engine and session helpers. SQLite by default; creation is idempotent."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, SQLModel, create_engine

from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import migrations, models

_ENGINES: dict[str, Engine] = {}


def get_engine(url: str | None = None, *, check_schema: bool = True) -> Engine:
    """Return a cached engine for `url` (default: the settings table's database URL), on a
    store created or checked by `init_db` (`check_schema=False`: an uncached engine as is,
    for `migrate`)."""
    url = url or DEFAULT_SETTINGS.resolved_database_url
    if url in _ENGINES:
        return _ENGINES[url]
    kwargs: dict = {}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        if url in ("sqlite://", "sqlite:///:memory:"):
            kwargs["poolclass"] = StaticPool
        else:
            path = url.split("sqlite:///", 1)[-1]
            if path:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, **kwargs)
    if url.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    if check_schema:
        init_db(engine)
        _ENGINES[url] = engine
    return engine


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    # Takes effect only when the file is created (before WAL is set): rows of compressed
    # message and response text are kilobytes, and 4 KB pages would leave a third unused.
    cur.execute("PRAGMA page_size=16384")
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


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


def init_db(engine: Engine) -> None:
    """Create a new store (stamped at the newest migration), or check that an existing one is
    at it. Safe when several processes do it at once."""
    with _schema_lock(engine) as conn:
        revision = migrations.current(conn)
        if not inspect(conn).has_table("call"):
            SQLModel.metadata.create_all(conn)
            migrations.stamp(conn, migrations.HEAD)
            _record_version(conn)
        elif revision != migrations.HEAD:
            raise StoreOutdated(
                f"the store {mask_url(engine.url)} is at schema "
                f"{revision or '0001 (v1, before migrations)'}, this clawviz needs "
                f"{migrations.HEAD}: run `python3 -m clawviz migrate --db URL` first"
            )
        else:
            SQLModel.metadata.create_all(conn)  # tables of optional features, if missing


def migrate(engine: Engine) -> list[str]:
    """Bring an existing store to the newest schema (`clawviz migrate`); returns the revisions
    applied. A new store is created at it."""
    with _schema_lock(engine) as conn:
        if not inspect(conn).has_table("call"):
            SQLModel.metadata.create_all(conn)
            migrations.stamp(conn, migrations.HEAD)
            _record_version(conn)
            return []
        applied = migrations.upgrade(conn, from_v1=migrations.current(conn) is None)
        _record_version(conn)
        return applied


def _record_version(conn: Connection) -> None:
    with Session(bind=conn) as s:
        row = s.get(models.Meta, "schema_version") or models.Meta(key="schema_version", value="")
        row.value = migrations.HEAD
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
        return migrations.current(conn)


@contextmanager
def session_scope(url: str | None = None) -> Iterator[Session]:
    with Session(get_engine(url)) as s:
        yield s
