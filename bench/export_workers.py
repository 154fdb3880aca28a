"""SFT export rows/s: one file vs `--workers 1` vs `--workers 2` (and an older checkout).

    python bench/export_workers.py                        # 4,000 episodes, 5 interleaved rounds
    python bench/export_workers.py --episodes 1000 --repeats 3
    python bench/export_workers.py --base /tmp/clawviz-base   # also that checkout's export
    python bench/export_workers.py --ray                  # also --engine ray (local, 2 CPUs)

The store is `bench/run.py`'s export store: the template log (`gen.write_log`, 12 MB, seed 5)
ingested and analysed, then its episodes copied (`gen.replicate_episodes`) to `--episodes`.
Each export is the command a user runs, `python -m clawviz --db URL export --format sft ...`,
in a child process: wall time, and CPU time of the child and every process it waited for
(the pool's workers), from `wait4`. Rows/s is rows over wall time; rows/s per core is rows
over that CPU time. Runs are interleaved (one, w1, w2, one, w1, w2, ...) and each figure is
the median with the spread (min-max) of its runs. Interpreter start, imports, the staleness
check and the selection are included, as a user waits for them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))


def build_store(out: Path, episodes: int) -> str:
    import gen
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine

    out.mkdir(parents=True, exist_ok=True)
    log, res = out / "template.jsonl", out / "template-results.jsonl"
    if gen.read_meta(log) is None or not res.exists():
        gen.write_log(log, 12_000_000, seed=5, results=res)
    db = out / f"sft-{episodes}.db"
    url = f"sqlite:///{db}"
    if not db.exists():
        with Session(get_engine(url)) as s:
            ingest_paths([log, res], session=s)
            s.commit()
            ensure_analysis(s)
            s.commit()
        gen.replicate_episodes(get_engine(url), episodes)
        with Session(get_engine(url)) as s:
            ensure_analysis(s)
            s.commit()
    return url


def run_child(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the child and its reaped descendants) of one command."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def rows_of(path: Path) -> int:
    if path.is_dir():
        return int(json.loads((path / "_manifest.json").read_text())["rows"])
    return int(json.loads(Path(str(path) + ".report.json").read_text())["rows"])


def fmt(xs: list[float], unit: str = "s", digits: int = 2) -> str:
    return f"{statistics.median(xs):.{digits}f} {unit} ({min(xs):.{digits}f}-{max(xs):.{digits}f})"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--episodes", type=int, default=4000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--base", type=Path, help="an older checkout: its single-file export too")
    p.add_argument("--ray", action="store_true", help="also --engine ray --workers 2")
    p.add_argument("--out", type=Path, default=BENCH / "out" / "export-workers")
    a = p.parse_args(argv)
    url = build_store(a.out, a.episodes)
    res = a.out / "runs"
    shutil.rmtree(res, ignore_errors=True)
    res.mkdir(parents=True)
    export = [sys.executable, "-m", "clawviz", "--db", url, "export", "--format", "sft"]
    configs: list[tuple[str, Path, list[str], Path]] = []
    if a.base:
        configs.append(
            ("base: one file", a.base, ["--out", str(res / "base.parquet")], res / "base.parquet")
        )
    configs += [
        ("one file", ROOT, ["--out", str(res / "one.parquet")], res / "one.parquet"),
        ("--workers 1", ROOT, ["--out", str(res / "w1"), "--workers", "1"], res / "w1"),
        ("--workers 2", ROOT, ["--out", str(res / "w2"), "--workers", "2"], res / "w2"),
    ]
    if a.ray:
        configs.append(
            (
                "--engine ray (2 CPUs)",
                ROOT,
                ["--out", str(res / "ray"), "--engine", "ray"],
                res / "ray",
            )
        )
    samples: dict[str, list[tuple[float, float]]] = {c[0]: [] for c in configs}
    for _name, cwd, extra, _ in configs:  # warm the page cache and the analysis once
        run_child([*export, *extra], cwd)
    for _ in range(a.repeats):
        for name, cwd, extra, _ in configs:
            samples[name].append(run_child([*export, *extra], cwd))
    n_rows = {name: rows_of(out) for name, _, _, out in configs}
    print(f"store: {url} ({a.episodes:,} episodes); rows: {n_rows}; {a.repeats} interleaved rounds")
    print("| export | wall | rows/s (wall) | CPU, all processes | rows/s per core (CPU) |")
    print("|---|---|---|---|---|")
    one = statistics.median(w for w, _ in samples["one file"])
    for name, *_ in configs:
        walls = [w for w, _ in samples[name]]
        cpus = [c for _, c in samples[name]]
        n = n_rows[name]
        print(
            f"| {name} | {fmt(walls)} | {fmt([n / w for w in walls], '', 0)} | {fmt(cpus)} | "
            f"{fmt([n / c for c in cpus], '', 0)} |"
        )
    w2 = statistics.median(w for w, _ in samples["--workers 2"])
    w1 = statistics.median(w for w, _ in samples["--workers 1"])
    print(f"wall ratio --workers 2 vs --workers 1: {w1 / w2:.2f}x; vs one file: {one / w2:.2f}x")


if __name__ == "__main__":
    main()
