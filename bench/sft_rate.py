"""SFT export rows/s per core, in-process (`clawviz.export.run_export`), this checkout vs another.

    python bench/sft_rate.py --base /tmp/clawviz-base                 # 4,000-episode SQLite store
    python bench/sft_rate.py --base /tmp/clawviz-base --db postgresql+psycopg://.../sft4k
    python bench/sft_rate.py --rounds 5 --format jsonl

The store is `bench/export_workers.py`'s (the template log ingested and analysed, its episodes
copied to `--episodes`), or any analysed store given with `--db`. Each checkout runs in its own
child process (its `clawviz` on `sys.path`), exports every kept episode once to warm the
caches and the interpreter, then `--inner` more times; its figure is the least CPU time
(`time.process_time`, the export's own process: a PostgreSQL server's backends are not in it)
of those. Imports, interpreter start and the first export are left out: this is the rate a
long export runs at (`bench/export_workers.py` times the whole command). The checkouts
alternate (base, this, base, this, ...), and the table gives the median and spread (min-max)
over `--rounds` rounds, and the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

CHILD = r"""
import json, sys, time
sys.path.insert(0, ".")
from sqlmodel import Session
from clawviz.export.run import run_export
from clawviz.store.db import get_engine
url, out, inner = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = get_engine(url)
with Session(engine) as s:
    run_export(s, "sft", out)
times = []
for _ in range(inner):
    with Session(engine) as s:
        t = time.process_time()
        report = run_export(s, "sft", out)
        times.append(time.process_time() - t)
print(json.dumps({"rows": report.rows, "cpu": min(times)}))
"""


def child(checkout: Path, url: str, out: Path, inner: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, url, str(out), str(inner)],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def spread(xs: list[float], digits: int = 0) -> str:
    return f"{statistics.median(xs):,.{digits}f} ({min(xs):,.{digits}f}-{max(xs):,.{digits}f})"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=4000)
    p.add_argument("--db", help="an analysed store to export (default: build the bench store)")
    p.add_argument("--base", type=Path, help="another checkout, alternated with this one")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--inner", type=int, default=2, help="timed exports per child (least kept)")
    p.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    p.add_argument("--out", type=Path, default=BENCH / "out" / "export-workers")
    a = p.parse_args(argv)
    if a.db:
        url = a.db
    else:
        sys.path.insert(0, str(BENCH))
        sys.path.insert(0, str(ROOT))
        import export_workers

        url = export_workers.build_store(a.out, a.episodes)
    a.out.mkdir(parents=True, exist_ok=True)
    sides = [("base", a.base)] if a.base else []
    sides.append(("this", ROOT))
    got: dict[str, list[dict]] = {name: [] for name, _ in sides}
    for r in range(a.rounds):
        for name, checkout in sides:
            res = child(checkout, url, a.out / f"rate-{name}.{a.format}", a.inner)
            res["rate"] = res["rows"] / res["cpu"]
            got[name].append(res)
            print(json.dumps({"round": r, "side": name, **res}), flush=True)
    rows = {name: {g["rows"] for g in got[name]} for name in got}
    print(f"store: {url}; rows: {rows}; {a.rounds} rounds, {a.format}")
    print("| checkout | CPU per export | rows/s per core |")
    print("|---|---|---|")
    for name, _ in sides:
        cpu = [g["cpu"] for g in got[name]]
        rate = [g["rate"] for g in got[name]]
        print(f"| {name} | {spread(cpu, 2)} s | {spread(rate)} |")
    if a.base:
        ratios = [t["rate"] / b["rate"] for b, t in zip(got["base"], got["this"], strict=True)]
        print(
            f"this / base, per round: {', '.join(f'{x:.2f}' for x in ratios)}; "
            f"median {statistics.median(ratios):.2f}x"
        )


if __name__ == "__main__":
    main()
