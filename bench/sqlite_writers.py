"""Two concurrent ingests into one SQLite store, one of them of a big log (issue 26, part 2).

    python bench/sqlite_writers.py --mb 200 --rounds 3

Each round makes three fresh stores and runs, in alternating order:
- the big generated log (bench/gen.py) alone, `python -m clawviz ingest`;
- the small ingest alone (eight sample Claude Code logs, sample_logs/exchanges/claude-code);
- both at once: the big one started first, the small one as soon as the big one's first batch
  is committed (its source row reads `partial:`), so the small one runs entirely while the big
  file is mid-way.
Wall time of each command (the machine is shared: the load average is printed), whether every
line of both is in the store, and whether the big log was still partial when the small one
finished. Prints Markdown rows; nothing here gates.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import gen  # noqa: E402

SMALL = sorted((ROOT / "sample_logs" / "exchanges" / "claude-code").glob("t000[12]-*.jsonl"))


def _ingest(db: Path, paths: list[Path]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "clawviz", "--db", f"sqlite:///{db}", "ingest", *map(str, paths)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _finish(proc: subprocess.Popen) -> None:
    out, err = proc.communicate()
    if proc.returncode not in (0, 2):  # 2: rejected lines (the samples hold some)
        raise RuntimeError(f"ingest failed ({proc.returncode}): {err.decode()[-400:]}")


def _big_state(db: Path, log: Path) -> tuple[str | None, int]:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.OperationalError:
        return None, 0
    try:
        row = con.execute("SELECT id, sha256 FROM source WHERE path = ?", (str(log),)).fetchone()
        if row is None:
            return None, 0
        n = con.execute("SELECT count(*) FROM call WHERE source_id = ?", (row[0],)).fetchone()
        return row[1], n[0]
    except sqlite3.OperationalError:
        return None, 0
    finally:
        con.close()


def _calls(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM call").fetchone()[0]
    finally:
        con.close()


def _timed(db: Path, paths: list[Path]) -> float:
    t = time.perf_counter()
    _finish(_ingest(db, paths))
    return time.perf_counter() - t


def _together(db: Path, big: Path) -> dict[str, float | bool]:
    t0 = time.perf_counter()
    p_big = _ingest(db, [big])
    while True:
        sha, n = _big_state(db, big)
        if sha is not None and sha.startswith("partial:") and n > 0:
            break
        if p_big.poll() is not None:
            raise RuntimeError("the big ingest ended before a batch was seen")
        time.sleep(0.02)
    t1 = time.perf_counter()
    _finish(_ingest(db, SMALL))
    t2 = time.perf_counter()
    sha, _ = _big_state(db, big)
    _finish(p_big)
    t3 = time.perf_counter()
    return {
        "small": t2 - t1,
        "big": t3 - t0,
        "span": t3 - t0,
        "small_inside": bool(sha and sha.startswith("partial:")),
    }


def _rng(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f} s ({min(xs):.1f}-{max(xs):.1f})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="clawviz-sqlite-writers-"))
    try:
        return _run(a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(a: argparse.Namespace, tmp: Path) -> int:
    big = tmp / "big.jsonl"
    stats = gen.write_log(big, int(a.mb * 1e6))
    small_calls = None
    load0 = os.getloadavg()[0]
    res: dict[str, list[float]] = {"big": [], "small": [], "t_big": [], "t_small": []}
    inside: list[bool] = []
    complete: list[bool] = []
    for r in range(a.rounds):
        order = ["alone", "together"] if r % 2 == 0 else ["together", "alone"]
        for what in order:
            if what == "alone":
                d1, d2 = tmp / f"r{r}-big.db", tmp / f"r{r}-small.db"
                res["big"].append(_timed(d1, [big]))
                res["small"].append(_timed(d2, SMALL))
                small_calls = _calls(d2)
                complete.append(_calls(d1) == stats.n_calls)
            else:
                d = tmp / f"r{r}-both.db"
                got = _together(d, big)
                res["t_big"].append(float(got["big"]))
                res["t_small"].append(float(got["small"]))
                inside.append(bool(got["small_inside"]))
                complete.append(small_calls is None or _calls(d) == stats.n_calls + small_calls)
        print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in res.items()), flush=True)
    seq = [b + s for b, s in zip(res["big"], res["small"], strict=True)]
    med = {k: statistics.median(v) for k, v in res.items()}
    mb = big.stat().st_size / 1e6
    print(f"\nbig log: {mb:.0f} MB, {stats.n_calls} calls; small: {len(SMALL)} logs")
    print(f"load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(
        f"| small ingest while the big log loads vs alone | proceeds | {_rng(res['t_small'])} "
        f"vs {_rng(res['small'])}: **{med['t_small'] / med['small']:.2f}x**; finished while "
        f"the big log was mid-way in {sum(inside)} of {len(inside)} runs | |"
    )
    print(
        f"| big log with the small ingest beside it vs alone | - | {_rng(res['t_big'])} vs "
        f"{_rng(res['big'])}: {med['t_big'] / med['big']:.2f}x | |"
    )
    print(
        f"| both at once vs one after the other (wall) | - | {_rng(res['t_big'])} vs "
        f"{_rng(seq)}: {statistics.median(seq) / med['t_big']:.2f}x of sequential throughput | |"
    )
    print(
        f"| every line of both in the store | all | {sum(complete)} of {len(complete)} stores | |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
