"""Ingest of a results.jsonl at a training run's size (issue 26): `python3 -m clawviz ingest` of
two checkouts, alternated, each into a fresh store, and the stores compared.

    git worktree add --detach /tmp/clawviz-base <commit>
    python3 bench/results_ingest.py --base /tmp/clawviz-base [--lines 50000] [--rounds 3] \\
        [--pg postgresql+psycopg://clawviz@127.0.0.1:PORT/postgres]

The file has `--lines` results lines (5% of them repeat an earlier episode, 1% are not JSON),
of 5,000 tasks with a strong and a small role. Each run is timed with the child's CPU (user +
system of the command) and wall; both checkouts' result and rejected-line tables must hash the
same, or the script says which differ. With `--pg` every store is a new database on that server.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent


def write_results(path: Path, lines: int) -> None:
    rng = random.Random(7)
    with path.open("w") as f:
        for i in range(lines):
            r = rng.random()
            if r < 0.01:
                f.write('{"episode_id": "broken\n')
                continue
            eid = f"ep-{rng.randrange(i + 1):07d}" if r < 0.06 else f"ep-{i:07d}"
            record = {
                "episode_id": eid,
                "task_id": f"task_{i % 5000:05d}",
                "model_role": "strong" if i % 2 else "small",
                "reward": rng.random(),
                "checks": {"exists": 1.0, "correct": rng.random()},
            }
            f.write(json.dumps(record) + "\n")


def new_store(pg: str | None, folder: Path) -> str:
    if pg is None:
        return f"sqlite:///{folder / f's-{uuid.uuid4().hex[:8]}.db'}"
    name = f"ri_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(pg, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return sa.engine.make_url(pg).set(database=name).render_as_string(hide_password=False)


def digest(url: str) -> str:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        results = conn.execute(sa.text(
            "SELECT id, episode_id, task_id, model_role, reward, checks_json, rubric_json "
            "FROM result ORDER BY id"
        )).all()  # fmt: skip
        rejected = conn.execute(sa.text("SELECT line, reason, raw FROM rejected_line ORDER BY id"))
        blob = json.dumps([[list(r) for r in results], [list(r) for r in rejected]])
    engine.dispose()
    return f"{len(results)} results, {hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def run(checkout: Path, log: Path, url: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "clawviz", "ingest", str(log), "--db", url],
        cwd=checkout, env={**os.environ, "PYTHONPATH": str(checkout)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    if done.returncode not in (0, 2):  # 2: some lines were rejected, as the file has them
        raise SystemExit(f"{checkout}: ingest failed ({done.returncode}): {done.stderr[-2000:]!r}")
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--lines", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pg", help="a PostgreSQL maintenance database URL (default: SQLite)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="clawviz-results-") as tmp:
        folder = Path(tmp)
        log = folder / "results.jsonl"
        write_results(log, args.lines)
        checkouts = {"base": args.base.resolve(), "this": ROOT}
        got: dict[str, list[tuple[float, float]]] = {k: [] for k in checkouts}
        digests: dict[str, set[str]] = {k: set() for k in checkouts}
        for r in range(args.rounds):
            for name, checkout in checkouts.items():
                url = new_store(args.pg, folder)
                wall, cpu = run(checkout, log, url)
                got[name].append((wall, cpu))
                digests[name].add(digest(url))
                print(f"round {r} {name}: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
        backend = "PostgreSQL" if args.pg else "SQLite"
        load = os.getloadavg()[0]
        print(f"{args.lines:,} lines, {backend}, {args.rounds} rounds, load {load:.1f}")
        for name, samples in got.items():
            cpu = [c for _, c in samples]
            wall = [w for w, _ in samples]
            print(
                f"  {name}: CPU {statistics.median(cpu):.1f} s ({min(cpu):.1f}-{max(cpu):.1f}), "
                f"wall {statistics.median(wall):.1f} s, {args.lines / statistics.median(wall):,.0f}"
                f" lines/s; store {', '.join(sorted(digests[name]))}"
            )
        same = digests["base"] == digests["this"] and len(digests["this"]) == 1
        print("  stores: " + ("identical" if same else "DIFFER"))


if __name__ == "__main__":
    main()
