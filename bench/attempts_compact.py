"""The Tasks queue's revision read on PostgreSQL, before and after its rows are folded (issue 26).

    python3 bench/attempts_compact.py --pg postgresql+psycopg://clawviz@127.0.0.1:55432/postgres

In a fresh database it writes `--rows` rows into `attempts_change`, as that many writing
transactions leave them (one row each, id = a transaction id, n = 1), then times, each a
median of `--rounds` reads on one connection:
- `attempts_revision` with every row still there (what each Tasks view read before ingest
  folded them);
- `compact_attempts` of all of them (once: the first ingest after an upgrade), and of the
  `--batch` rows one more ingest leaves;
- `attempts_revision` after folding, before and after a VACUUM (autovacuum's, in a store).
The revision is checked to be the same before and after each fold.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from clawviz.store import attempts_revision, compact_attempts  # noqa: E402
from clawviz.store.db import init_db  # noqa: E402


def _ms(fn, rounds: int) -> tuple[float, float, float]:
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples), min(samples), max(samples)


def _fill(conn, start: int, rows: int) -> None:
    conn.execute(
        text("INSERT INTO attempts_change (id, n) SELECT g, 1 FROM generate_series(:a, :b) g"),
        {"a": start, "b": start + rows - 1},
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pg", required=True, help="URL of a PostgreSQL maintenance database")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    name = f"bench_attempts_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.pg, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = args.pg.rsplit("/", 1)[0] + "/" + name
    engine = create_engine(url)
    init_db(engine)
    with engine.begin() as conn:
        _fill(conn, 1_000, args.rows)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE attempts_change"))
    out = {}
    with engine.connect() as conn:
        conn.commit()
        rev = attempts_revision(conn)
        conn.rollback()

        def read() -> None:
            attempts_revision(conn)
            conn.rollback()

        out["revision, unfolded"] = _ms(read, args.rounds)
        t0 = time.perf_counter()
        with conn.begin():
            compact_attempts(conn)
        out["fold, all rows (once)"] = ((time.perf_counter() - t0) * 1000,) * 3
        assert attempts_revision(conn) == rev
        conn.rollback()
        out["revision, folded (dead rows not yet vacuumed)"] = _ms(read, args.rounds)
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as auto:
            auto.execute(text("VACUUM attempts_change"))
        out["revision, folded and vacuumed"] = _ms(read, args.rounds)
        folds = []
        start = 10_000_000
        for _ in range(args.rounds):
            with conn.begin():
                _fill(conn, start, args.batch)
            start += args.batch
            before = attempts_revision(conn)
            conn.rollback()
            t0 = time.perf_counter()
            with conn.begin():
                compact_attempts(conn)
            folds.append((time.perf_counter() - t0) * 1000)
            assert attempts_revision(conn) == before
            conn.rollback()
        out[f"fold, {args.batch:,} rows (one more ingest)"] = (
            statistics.median(folds),
            min(folds),
            max(folds),
        )
    engine.dispose()
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE "{name}"'))
    print(f"{args.rows:,} rows; ms as median (min-max) of {args.rounds}")
    for k, (med, lo, hi) in out.items():
        print(f"  {k}: {med:.2f} ({lo:.2f}-{hi:.2f})")


if __name__ == "__main__":
    main()
