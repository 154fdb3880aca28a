"""Schema migrations: a v1 store (made before migrations) is refused with a clear message until
`clawviz migrate` upgrades it; the revisions build exactly the schema the models describe."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text
from sqlmodel import SQLModel

from clawviz.store import db, migrations
from tests.dburl import fresh_url, on_postgres, query

REPO = Path(__file__).resolve().parents[1]


def _v1_store(url: str) -> None:
    """What the first release made: the 0001 tables, a schema_version row, no revision."""
    engine = create_engine(url)
    with engine.begin() as conn:
        migrations._run(conn, lambda script, rev: script._upgrade_revs("0001", rev))
        conn.execute(text("DROP TABLE alembic_version"))
        conn.execute(text("INSERT INTO meta (key, value) VALUES ('schema_version', '1')"))
        conn.execute(
            text(
                "INSERT INTO source (path, sha256, format, size_bytes, n_lines, n_calls,"
                " n_episodes, n_rejected, ingested_at) VALUES ('old.jsonl', 'abc', 'exchange',"
                " 10, 1, 0, 0, 0, CURRENT_TIMESTAMP)"
            )
        )
    engine.dispose()


def test_a_v1_store_is_refused_until_migrated(tmp_path):
    url = fresh_url(tmp_path, "v1")
    _v1_store(url)
    with pytest.raises(db.StoreOutdated, match="clawviz migrate"):
        db.init_db(create_engine(url))
    proc = subprocess.run(
        [sys.executable, "-m", "clawviz", "--db", url, "--json", "migrate"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["from"] is None and out["to"] == migrations.HEAD
    assert out["applied"][-1] == migrations.HEAD and "0001" not in out["applied"]
    db.init_db(create_engine(url))  # now accepted
    assert query(url, "SELECT path FROM source") == [("old.jsonl",)]  # the data is kept
    again = subprocess.run(
        [sys.executable, "-m", "clawviz", "--db", url, "migrate"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert "newest schema" in again.stdout


@pytest.mark.skipif(not on_postgres(), reason="int4 vs bigint is a PostgreSQL detail")
def test_migrating_v1_on_postgres_widens_counts_to_bigint(tmp_path):
    url = fresh_url(tmp_path, "v1pg")
    _v1_store(url)
    db.migrate(create_engine(url))
    ((kind,),) = query(
        url,
        "SELECT data_type FROM information_schema.columns"
        " WHERE table_name = 'call' AND column_name = 'input_tokens'",
    )
    assert kind == "bigint"


def test_the_revisions_build_the_schema_the_models_describe(tmp_path):
    """A store upgraded revision by revision equals one created from the models (a schema
    change without its revision fails here)."""
    url = fresh_url(tmp_path, "revs")
    engine = create_engine(url)
    with engine.begin() as conn:
        migrations._run(conn, lambda script, rev: script._upgrade_revs(migrations.HEAD, rev))
    with engine.connect() as conn:
        ctx = MigrationContext.configure(
            conn,
            opts={
                "compare_type": on_postgres(),
                # the full-text index beside search_doc is made by clawviz.store.search
                "include_name": lambda name, kind, parent: (
                    not str(name).startswith(("search_fts", "ix_search_doc_tsv"))
                ),
            },
        )
        diff = compare_metadata(ctx, SQLModel.metadata)
        assert diff == []
        assert set(inspect(conn).get_table_names()) >= set(SQLModel.metadata.tables)


def _version_table(url: str) -> dict:
    engine = create_engine(url)
    with engine.connect() as conn:
        i = inspect(conn)
        cols = [
            (c["name"], str(c["type"]), c["nullable"]) for c in i.get_columns("alembic_version")
        ]
        out = {"columns": cols, "pk": i.get_pk_constraint("alembic_version")}
        out["revision"] = MigrationContext.configure(conn).get_current_revision()
    engine.dispose()
    return out


def test_a_new_store_is_stamped_as_alembic_stamps_it(tmp_path):
    """init_db stamps a new store with plain SQL: the version table and row are Alembic's own."""
    ours, theirs = fresh_url(tmp_path, "ours"), fresh_url(tmp_path, "theirs")
    db.init_db(create_engine(ours))
    engine = create_engine(theirs)
    with engine.begin() as conn:
        SQLModel.metadata.create_all(conn)
        migrations.stamp(conn, migrations.HEAD)
    engine.dispose()
    assert _version_table(ours) == _version_table(theirs)
    assert _version_table(ours)["revision"] == migrations.HEAD
    assert db.schema_version(create_engine(ours)) == migrations.HEAD
    assert query(ours, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (migrations.HEAD,)
    ]


def test_a_store_behind_head_is_refused_naming_both_revisions(tmp_path):
    url = fresh_url(tmp_path, "behind")
    db.init_db(create_engine(url))
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0005'"))
    with pytest.raises(
        db.StoreOutdated, match=f"at schema 0005, this clawviz needs {migrations.HEAD}"
    ):
        db.init_db(engine)


def test_creating_and_opening_an_up_to_date_store_imports_no_alembic(tmp_path):
    url = fresh_url(tmp_path, "lean")
    code = (
        "import sys\nfrom sqlalchemy import create_engine\nfrom clawviz.store import db\n"
        f"db.init_db(create_engine({url!r}))\ndb.init_db(create_engine({url!r}))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'alembic'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
