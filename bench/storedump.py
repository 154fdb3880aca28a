"""Digest of what a store holds, to prove a change to the ingest path leaves it unchanged.

    python bench/storedump.py dump STORE.db            # per-table digests, then the total
    python bench/storedump.py ingest CHECKOUT STORE.db LOG...   # ingest with CHECKOUT's code
    python bench/storedump.py compare BASE_CHECKOUT LOG...      # this checkout vs BASE

Every table's rows are read with stdlib sqlite3, sorted, and hashed; only values that
legitimately differ between two runs are left out (wall-clock timestamps and autoincrement ids
of the bookkeeping tables). Compressed columns are compared as stored bytes, so a change of
packing shows too. `compare` ingests each LOG (a file or folder) into a fresh store with each
checkout in a child process and prints both digests, table by table.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"ingested_at", "created_at", "computed_at", "verdict_at", "updated_at"}
"""Wall-clock columns: they differ between any two runs."""
SKIP_TABLES = {"alembic_version"}


def dump(path: str) -> dict[str, str]:
    """Per table: '<rows> <sha256 of its sorted rows>'."""
    con = sqlite3.connect(path)
    out: dict[str, str] = {}
    tables = [
        r[0]
        for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        if not r[0].startswith("sqlite_") and r[0] not in SKIP_TABLES
    ]
    for t in tables:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({t})") if r[1] not in SKIP]
        rows = [
            repr(tuple(row)).encode()
            for row in con.execute(f"SELECT {', '.join(cols)} FROM {t}")  # noqa: S608
        ]
        rows.sort()
        h = hashlib.sha256(b"\n".join(rows)).hexdigest()[:16]
        out[t] = f"{len(rows)} {h}"
    con.close()
    out["TOTAL"] = hashlib.sha256(repr(sorted(out.items())).encode()).hexdigest()[:16]
    return out


def ingest(checkout: str, db: str, logs: list[str]) -> None:
    """Ingest LOGs into a fresh SQLite store at `db` with the code of `checkout` (a child)."""
    for suffix in ("", "-wal", "-shm"):
        Path(db + suffix).unlink(missing_ok=True)
    code = (
        "import sys\n"
        "from sqlmodel import Session\n"
        "from clawviz.store import db\n"
        "from clawviz.jobs.ingest import ingest_paths\n"
        "e = db.get_engine('sqlite:///' + sys.argv[1])\n"
        "with Session(e) as s:\n"
        "    ingest_paths(sys.argv[2:], session=s)\n"
    )
    env = {**os.environ, "PYTHONPATH": checkout, "CLAWVIZ_NO_SAMPLES": "1"}
    # Absolute paths: both checkouts read the same files (the child runs in its checkout).
    paths = [str(Path(p).resolve()) for p in logs]
    subprocess.run([sys.executable, "-c", code, db, *paths], cwd=checkout, env=env, check=True)


def compare(base: str, logs: list[str]) -> int:
    """Ingest `logs` with `base` and with this checkout; print both digests; 1 if they differ."""
    with tempfile.TemporaryDirectory() as tmp:
        digests = []
        for name, checkout in (("base", base), ("this", str(ROOT))):
            db = os.path.join(tmp, f"{name}.db")
            ingest(checkout, db, logs)
            digests.append(dump(db))
    a, b = digests
    same = a == b
    for t in a:
        mark = "" if a[t] == b.get(t) else "   <-- DIFFERS"
        print(f"  {t:20} {a[t]:30} {b.get(t)}{mark}")
    print("identical" if same else "DIFFERENT", " ".join(logs))
    return 0 if same else 1


def main(argv: list[str]) -> int:
    need = {"dump": 1, "ingest": 3, "compare": 2}
    if not argv or argv[0] not in need or len(argv) - 1 < need[argv[0]]:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, *rest = argv
    if cmd == "dump":
        for t, v in dump(rest[0]).items():
            print(f"{t:20} {v}")
        return 0
    if cmd == "ingest":
        ingest(rest[0], rest[1], rest[2:])
        return 0
    if cmd == "compare":
        return compare(rest[0], rest[1:])
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
