"""Export memory at store scale: peak RSS exporting 1/8 of a ~1 GB store and all of it.

    python bench/export_scale.py              # ~1 GB SFT store and ~1 GB RL store (~30-60 min)
    python bench/export_scale.py --gb 0.05    # a small smoke run (a few minutes)
    python bench/export_scale.py --keep       # keep the stores in bench/out/scale/db/

Streaming writes keep an export's memory set by its batch (docs/EXPORT.md), not by the store:
this measures it. Each store is grown until its SQLite file holds `--gb` GB:

- SFT: the template episodes of `bench/run.py`'s export figure (real ingest + analysis of a
  generated 12 MB log) copied row for row with `gen.replicate_episodes` (messages are
  content-addressed, so copies share them; every copy is read and exported on its own);
- RL: `gen.token_episodes` (13 calls, vLLM-style token ids on every call, last prompt ~18.7K
  tokens), written with the store's writer and analysed; each call stores its prompt's ids, so
  the store grows ~0.9 MB per episode.

Then a child process (interpreter + imports + one `run_export`) exports the first 1/8 of the
episodes, and another all of them, to Parquet and to JSONL, interleaved (1/8, all, 1/8, all);
each reports its peak RSS (`VmHWM`), its RSS after imports (the baseline measured in the same
child), CPU time, rows and bytes written. Bounded memory means the two peaks are close while
the second export reads 8x the data. The table goes to stdout (and `--readme` rewrites the
block between the `export-scale` markers of bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

import gen  # noqa: E402

MB = 1_000_000
README = BENCH / "README.md"
START = "<!-- export-scale:start -->"
END = "<!-- export-scale:end -->"


def peak_rss_kb() -> int:
    """Peak RSS of this process (VmHWM: ru_maxrss would carry a big parent's size over exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def store_size(path: Path) -> int:
    return sum(
        Path(str(path) + s).stat().st_size for s in ("", "-wal") if Path(str(path) + s).exists()
    )


def checkpoint(url: str) -> None:
    from sqlalchemy import text

    from clawviz.store.db import get_engine

    engine = get_engine(url)
    with engine.connect() as conn:
        conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
    engine.dispose()


def fresh(db: Path, name: str) -> tuple[str, Path]:
    path = db / name
    for s in ("", "-wal", "-shm"):
        Path(str(path) + s).unlink(missing_ok=True)
    return f"sqlite:///{path}", path


def sft_store(out: Path, db: Path, target: int) -> tuple[str, Path, int]:
    """Template episodes through the real ingest and analysis, copied until the file is big."""
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine

    log, results = out / "template.jsonl", out / "template-results.jsonl"
    if gen.read_meta(log) is None or not log.exists():
        gen.write_log(log, 12 * MB, seed=5, results=results)
    url, path = fresh(db, "scale-sft.db")
    with Session(get_engine(url)) as s:
        ingest_paths([log, results], session=s)
        s.commit()
        ensure_analysis(s)
        s.commit()
    checkpoint(url)
    get_engine(url).dispose()
    # replicate_episodes copies every episode once, so size the copy count on a trial copy:
    # bytes per copied episode (copies share the content-addressed messages).
    trial_url, trial = fresh(db, "scale-sft-trial.db")
    shutil.copy(path, trial)
    base = store_size(trial)
    n_t = gen.replicate_episodes(get_engine(trial_url), 0)
    gen.replicate_episodes(get_engine(trial_url), 20 * n_t)
    checkpoint(trial_url)
    per = (store_size(trial) - base) / (19 * n_t)
    trial.unlink()
    n = n_t + int((target - base) / per) + 1
    n = gen.replicate_episodes(get_engine(url), n)
    checkpoint(url)
    print(f"  sft store: {n:,} episodes, {store_size(path) / MB:,.0f} MB", flush=True)
    return url, path, n


def rl_store(db: Path, target: int) -> tuple[str, Path, int]:
    """Token-id episodes written in chunks of 50 until the file is big, then analysed."""
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.store import calls as store
    from clawviz.store.db import get_engine
    from clawviz.store.models import Result

    url, path = fresh(db, "scale-rl.db")
    engine = get_engine(url)
    n = 0
    episodes = gen.token_episodes(1_000_000)
    while store_size(path) < target:
        with Session(engine) as s:
            for _ in range(50):
                calls = next(episodes)
                store.write_calls(s, calls, None)
                store.refresh_episodes(s, [calls[0].episode_id])
                s.add(Result(episode_id=calls[0].episode_id, reward=[1.0, 0.6, 0.8, 0.55][n % 4]))
                n += 1
            s.commit()
        checkpoint(url)
        if n % 500 == 0:
            print(f"  rl store: {n:,} episodes, {store_size(path) / MB:,.0f} MB", flush=True)
    with Session(engine) as s:
        ensure_analysis(s)
        s.commit()
    checkpoint(url)
    print(f"  rl store: {n:,} episodes, {store_size(path) / MB:,.0f} MB", flush=True)
    return url, path, n


def child(fmt: str, url: str, out: str, ids_file: str) -> None:
    """--child: one export (all, or the episodes listed in ids_file) in a fresh process."""
    import pyarrow.parquet  # noqa: F401  (the writer's import, before the baseline)
    from sqlmodel import Session

    from clawviz.export import Selection, run_export
    from clawviz.store.db import get_engine

    imports_kb = peak_rss_kb()
    ids = tuple(json.loads(Path(ids_file).read_text())) if ids_file != "-" else None
    cpu0, t0 = time.process_time(), time.perf_counter()
    with Session(get_engine(url)) as s:
        report = run_export(s, fmt, out, selection=Selection(episode_ids=ids))
    print(
        json.dumps(
            {
                "imports_kb": imports_kb,
                "peak_kb": peak_rss_kb(),
                "rows": report.rows,
                "episodes": report.episodes_exported,
                "cpu": time.process_time() - cpu0,
                "wall": time.perf_counter() - t0,
                "bytes": Path(out).stat().st_size,
            }
        )
    )


def run_child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", *args],
        capture_output=True,
        text=True,
        timeout=7200,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def episode_ids(url: str) -> list[str]:
    from sqlalchemy import text

    from clawviz.store.db import get_engine

    engine = get_engine(url)
    with engine.connect() as conn:
        ids = sorted(r[0] for r in conn.execute(text("SELECT episode_id FROM episode")))
    engine.dispose()
    return ids


def measure(fmt: str, url: str, path: Path, n_eps: int, work: Path, repeats: int) -> list[str]:
    ids = episode_ids(url)
    part = work / f"{fmt}-eighth.json"
    part.write_text(json.dumps(ids[: max(1, len(ids) // 8)]))
    lines = []
    for suffix in (".parquet", ".jsonl"):
        out = str(work / f"{fmt}-scale{suffix}")
        got: dict[str, list[dict]] = {"1/8": [], "all": []}
        for _ in range(repeats):  # interleaved: 1/8, all, 1/8, all
            got["1/8"].append(run_child([fmt, url, out, str(part)]))
            got["all"].append(run_child([fmt, url, out, "-"]))
        med = {k: {f: statistics.median(r[f] for r in v) for f in v[0]} for k, v in got.items()}
        spread = {
            k: "-".join(f"{f(r['peak_kb'] for r in v) / 1000:.0f}" for f in (min, max))
            for k, v in got.items()
        }
        a, e = med["all"], med["1/8"]
        lines.append(
            f"| {fmt.upper()} to {suffix[1:]} | {store_size(path) / MB:,.0f} MB, {n_eps:,} "
            f"episodes | {e['peak_kb'] / 1000:.0f} MB ({spread['1/8']}); {e['rows']:,.0f} rows, "
            f"{e['bytes'] / MB:,.0f} MB out, {e['cpu']:.0f} s cpu "
            f"| {a['peak_kb'] / 1000:.0f} MB ({spread['all']}); {a['rows']:,.0f} rows, "
            f"{a['bytes'] / MB:,.0f} MB out, {a['cpu']:.0f} s cpu, "
            f"{a['rows'] / a['cpu']:,.0f} rows/s "
            f"| {a['imports_kb'] / 1000:.0f} MB "
            f"| {(a['peak_kb'] - a['imports_kb']) / max(1, e['peak_kb'] - e['imports_kb']):.2f}x |"
        )
        print(lines[-1], flush=True)
    return lines


def write_readme(table: str) -> None:
    text = README.read_text()
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        README.write_text(head + START + "\n" + table + END + tail)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gb", type=float, default=1.0, help="store size to grow each store to")
    p.add_argument("--out", type=Path, default=BENCH / "out" / "scale")
    p.add_argument("--repeats", type=int, default=2, help="interleaved (1/8, all) pairs")
    p.add_argument("--only", choices=("sft", "rl"), help="one of the two stores")
    p.add_argument("--keep", action="store_true", help="keep the stores")
    p.add_argument("--readme", action="store_true", help="rewrite the block in bench/README.md")
    p.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(*a.child)
        return 0
    db = a.out / "db"
    db.mkdir(parents=True, exist_ok=True)
    target = int(a.gb * 1000 * MB)
    rows = [
        "| export | store | peak RSS, 1/8 of the episodes | peak RSS, all episodes "
        "| after imports (baseline) | growth above imports, all / 1/8 |",
        "|---|---|---|---|---|---|",
    ]
    t0 = time.perf_counter()
    for fmt in ("sft", "rl"):
        if a.only and fmt != a.only:
            continue
        t = time.perf_counter()
        url, path, n = sft_store(a.out, db, target) if fmt == "sft" else rl_store(db, target)
        print(f"- {fmt} store built in {time.perf_counter() - t:.0f} s", flush=True)
        rows += measure(fmt, url, path, n, db, a.repeats)
        if not a.keep:
            for s in ("", "-wal", "-shm"):
                Path(str(path) + s).unlink(missing_ok=True)
    for f in db.glob("*-scale.*"):
        f.unlink()
    table = "\n".join(rows) + "\n"
    print(table)
    print(f"total {time.perf_counter() - t0:.0f} s on {os.cpu_count()} cores")
    if a.readme:
        write_readme(table)
    if not a.keep:
        shutil.rmtree(db, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
