"""Migration 0007: a v6 store with data (packed texts as plain text, as PostgreSQL stores held
them) is upgraded, and everything reads back identically; on PostgreSQL the content-addressed
texts become bytea holding zstd frames, NUL bytes included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import MetaData, create_engine, insert, select, text
from sqlmodel import Session, SQLModel

from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store import calls as store
from clawviz.store import migrations
from clawviz.store.db import get_engine, migrate
from clawviz.store.models import NUL_PREFIX, NulSafeString
from tests.dburl import fresh_url, on_postgres, query
from tests.test_store_backends import RECORD

REPO = Path(__file__).resolve().parents[1]
PACKED = {
    "blob": ("text",),
    "message": ("canonical_json", "raw_json"),
    "call": ("message_hashes", "raw_response"),
}
NUL_TEXT = RECORD["request"]["body"]["messages"][0]["content"]


def _plain(table: str, row: dict) -> dict:
    """A row with its packed columns as the plain texts they stand for."""
    row = dict(row)
    if table == "message":
        c, r = store._message_json(row["canonical_json"], row["raw_json"])
        row["canonical_json"] = c.decode() if isinstance(c, bytes) else c
        row["raw_json"] = r.decode() if isinstance(r, bytes) else r
    else:
        for col in PACKED.get(table, ()):
            row[col] = store.unpack_text(row[col])
    return row


# The change queues of 0009 (clawviz.store.changes) are bookkeeping that did not exist at 0006:
# a v6 store has none to copy, and 0009 fills them from what it finds (a settings hash takes the
# full staleness check once). What this test follows is the data, so they are left out, as are
# the Runs counts of 0011 (clawviz.store.runstats: derived, built on a hash's first Runs view)
# and the attempts revision of 0012 (a counter of changes, bumped by the copy itself).
QUEUES = frozenset(
    {
        "analysis_mark", "episode_dirty", "search_pending", "runs_mark", "runs_agg",
        "runs_member", "attempts_change",
    }
)  # fmt: skip


def _tables() -> list:
    return [t for t in SQLModel.metadata.sorted_tables if t.name not in QUEUES]


def _snapshot(url: str) -> dict:
    """Every row of every data table (packed texts unpacked), and every episode's calls and
    every call's raw request as the store's readers rebuild them."""
    engine = get_engine(url)
    out: dict = {}
    with Session(engine) as s:
        for table in _tables():
            rows = [_plain(table.name, dict(r._mapping)) for r in s.execute(select(table))]
            key = [c.name for c in table.primary_key.columns]
            rows.sort(key=lambda r: tuple(str(r[k]) for k in key))
            out[table.name] = rows
        out["calls"] = {
            e["episode_id"]: store.load_calls(s, e["episode_id"]) for e in out["episode"]
        }
        ids = [r["call_id"] for r in out["call"]]
        out["raw"] = {cid: store.raw_request(s, cid) for cid in ids}
    return out


def _v6_copy(reference: dict, url: str) -> None:
    """A store at revision 0006 holding the reference rows, packed texts as plain text (NUL
    escaped where the backend needs it, as 0006's NulSafeString wrote them)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        migrations._run(conn, lambda script, rev: script._upgrade_revs("0006", rev))
    meta = MetaData()
    meta.reflect(engine)
    escape = NulSafeString()
    with engine.begin() as conn:
        for table in _tables():
            rows = []
            for row in reference[table.name]:
                if table.name == "meta":
                    row = {**row, "value": "0006"} if row["key"] == "schema_version" else row
                rows.append(
                    {k: escape.process_bind_param(v, engine.dialect) for k, v in row.items()}
                )
            if rows:
                conn.execute(insert(meta.tables[table.name]), rows)
            if engine.dialect.name == "postgresql" and "id" in table.c and rows:
                conn.execute(
                    text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), :n)"),
                    {"n": max(r["id"] for r in rows)},
                )
    engine.dispose()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[str, dict]:
    folder = tmp_path_factory.mktemp("bytea")
    log = folder / "nul.jsonl"
    log.write_text(json.dumps(RECORD) + "\n")
    url = fresh_url(folder, "reference")
    with Session(get_engine(url)) as s:
        ingest_paths([REPO / "sample_logs", log], session=s)
        ensure_analysis(s)
        s.commit()
    return url, _snapshot(url)


def test_a_v6_store_upgrades_and_reads_back_identically(reference, tmp_path):
    _, ref = reference
    assert ref["calls"]["nul-ep"][0].messages[0]["content"][0]["text"] == NUL_TEXT
    assert len(ref["call"]) > 50 and len(ref["blob"]) > 0
    url = fresh_url(tmp_path, "v6")
    _v6_copy(ref, url)
    assert query(url, "SELECT version_num FROM alembic_version") == [("0006",)]
    # 0008 episode.primary_episode/cross_check, 0009 the change queues, 0010 call_comment,
    # 0011 the Runs counts, 0012 the attempts revision
    assert migrate(create_engine(url)) == ["0007", "0008", "0009", "0010", "0011", "0012"]
    after = _snapshot(url)
    for key in ref:
        assert after[key] == ref[key], key
    # Down to 0006 and up again: the same store.
    engine = create_engine(url)
    with engine.begin() as conn:
        migrations._run(conn, lambda script, rev: script._downgrade_revs("0006", rev))
    assert query(url, "SELECT version_num FROM alembic_version") == [("0006",)]
    assert migrate(engine) == ["0007", "0008", "0009", "0010", "0011", "0012"]
    engine.dispose()
    assert _snapshot(url) == after
    # The upgraded store takes new writes.
    more = tmp_path / "more.jsonl"
    record = json.loads(json.dumps(RECORD))
    record["clawviz"]["episode_id"] = "after-0007"
    more.write_text(json.dumps(record) + "\n")
    with Session(get_engine(url)) as s:
        assert ingest_paths([more], session=s).n_calls == 1
        s.commit()
        (call,) = store.load_calls(s, "after-0007")
    assert call.messages[0]["content"][0]["text"] == NUL_TEXT
    if on_postgres():
        _assert_bytea_frames(url)


@pytest.mark.skipif(not on_postgres(), reason="bytea is the PostgreSQL form")
def test_on_postgres_the_packed_texts_are_bytea_zstd_frames(reference):
    _assert_bytea_frames(reference[0])


def _assert_bytea_frames(url: str) -> None:
    for table, cols in PACKED.items():
        for col in cols:
            ((kind,),) = query(
                url,
                "SELECT data_type FROM information_schema.columns"
                " WHERE table_name = :t AND column_name = :c",
                t=table,
                c=col,
            )
            assert kind == "bytea", (table, col)
            values = [
                bytes(v) for (v,) in query(url, f'SELECT {col} FROM "{table}"') if v is not None
            ]
            if col == "raw_json":  # packed with canonical_json
                assert set(values) == {b""}
                continue
            values = [v for v in values if v]
            assert values and all(bytes(v)[:4] == b"\x28\xb5\x2f\xfd" for v in values)
    # The frame holds the message's JSON itself, not a NUL-escaped form (read without clawviz).
    import zstandard

    texts = [
        zstandard.ZstdDecompressor().decompress(bytes(v)).decode()
        for (v,) in query(url, "SELECT canonical_json FROM message")
    ]
    assert not any(t.startswith(NUL_PREFIX) for t in texts)
    assert NUL_TEXT in {s for t in texts for s in _strings(json.loads(t.split("\n")[0]))}


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in _strings(v)] if isinstance(value, list) else []
