"""The content-addressed texts as compressed bytea on PostgreSQL (`models.PackedText`).

Blob.text, message.canonical_json / raw_json and call.message_hashes / raw_response were plain
text on PostgreSQL (SQLite already kept the long ones as zstd bytes, its columns taking bytes).
On PostgreSQL each column becomes bytea and every existing value is rewritten as a zstd frame,
a message row packing both forms in `canonical_json` as clawviz.store.calls writes them. Texts
escaped for NUL (`models.NUL_PREFIX`) are restored first: bytea holds NUL as it is.

SQLite needs nothing: its columns already hold plain text or compressed bytes, and both read.

Revision ID: 0007
Revises: 0006
"""

from collections.abc import Callable, Iterator

import sqlalchemy as sa
from alembic import op
from sqlalchemy.engine import Connection

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

COLUMNS = (
    ("blob", "hash", ("text",)),
    ("message", "hash", ("canonical_json", "raw_json")),
    ("call", "call_id", ("message_hashes", "raw_response")),
)
"""(table, key column, packed columns)."""

_BATCH = 1000


def _rows(conn: Connection, table: str, key: str, cols: tuple[str, ...]) -> Iterator[list]:
    """The table's (key, *cols) rows in key order, a batch at a time (keyset pages)."""
    last = None
    select = f'SELECT {key}, {", ".join(cols)} FROM "{table}"'
    while True:
        if last is None:
            sql = sa.text(f"{select} ORDER BY {key} LIMIT {_BATCH}")
            batch = conn.execute(sql).all()
        else:
            sql = sa.text(f"{select} WHERE {key} > :last ORDER BY {key} LIMIT {_BATCH}")
            batch = conn.execute(sql, {"last": last}).all()
        if not batch:
            return
        yield [list(r) for r in batch]
        last = batch[-1][0]


def _rewrite(conn: Connection, table: str, key: str, cols: tuple[str, ...], fn: Callable) -> None:
    sets = ", ".join(f"{c} = :{c}" for c in cols)
    update = sa.text(f'UPDATE "{table}" SET {sets} WHERE {key} = :k')
    for batch in _rows(conn, table, key, cols):
        conn.execute(
            update, [dict(k=r[0], **dict(zip(cols, fn(r[1:]), strict=True))) for r in batch]
        )


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    from clawviz.store.calls import compress
    from clawviz.store.models import restore_nul

    def pack(value: bytes | None) -> bytes | None:
        return None if value is None else compress(restore_nul(value.decode()).encode())

    def pack_message(values: list) -> list:
        c, r = (restore_nul(bytes(v).decode()) for v in values)
        rest = "" if r == c else r
        return [compress(f"{c}\n{rest}".encode()), b""]

    for table, key, cols in COLUMNS:
        for c in cols:
            op.execute(
                f"ALTER TABLE \"{table}\" ALTER COLUMN {c} TYPE bytea USING convert_to({c}, 'UTF8')"
            )
        if table == "message":
            _rewrite(conn, table, key, cols, pack_message)
        else:
            _rewrite(conn, table, key, cols, lambda vs: [pack(v and bytes(v)) for v in vs])


def downgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "postgresql":
        return
    from clawviz.store.calls import decompress
    from clawviz.store.models import NulSafeString

    def utf8(text: str | None) -> bytes | None:
        """The UTF-8 of a plain text as a v6 store held it (NUL escaped)."""
        if text is None:
            return None
        return NulSafeString().process_bind_param(text, conn.dialect).encode()

    def plain(values: list) -> list:
        return [None if v is None else utf8(decompress(bytes(v)).decode()) for v in values]

    def plain_message(values: list) -> list:
        c, _, r = decompress(bytes(values[0])).decode().partition("\n")
        return [utf8(c), utf8(r or c)]

    for table, key, cols in COLUMNS:
        # Still bytea while rewritten: the values become the UTF-8 of the plain texts.
        _rewrite(conn, table, key, cols, plain_message if table == "message" else plain)
        for c in cols:
            using = f"convert_from({c}, 'UTF8')"
            op.execute(f'ALTER TABLE "{table}" ALTER COLUMN {c} TYPE varchar USING {using}')
