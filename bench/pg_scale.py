"""Team-store scale on PostgreSQL (issue 18): Runs and Episode pages on 10,000 episodes /
~150,000 calls, and 4 concurrent `clawviz ingest` processes against one.

    python3 bench/pg_scale.py --pg postgresql+psycopg://user@127.0.0.1:PORT/postgres

`--pg` names a maintenance database; every store is a new database on that server, dropped at
the end. The store is built the way bench/run.py builds its Runs-page store: template episodes
go through the real ingest and analysis (`bench/gen.py write_log`), then
`gen.replicate_episodes` copies them under new ids up to `--episodes`. Page figures are
medians of `--repeats` AppTest runs with fresh data caches, judged on CPU time: this
process's (AppTest runs the page here) plus the server's (`--pgdata`; the database work runs
there), which other load on a shared machine does not inflate; wall times are shown beside
them. The ingest figure runs one process on all four logs and four processes on one log each,
interleaved, `--rounds` times, each on a fresh database; the ratio is per round (one's wall /
four's wall) and its median is reported. Prints a Markdown table (for bench/README.md) and
writes it to bench/out/pg_scale.md.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import gen  # noqa: E402 - bench/gen.py, beside this file
from sqlalchemy import create_engine, text  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402
from sqlalchemy.pool import NullPool  # noqa: E402

MB = 1_000_000


def new_database(server: str, name: str) -> str:
    db = f"bench_{name}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as con:
        con.execute(text(f'CREATE DATABASE "{db}"'))
    admin.dispose()
    return make_url(server).set(database=db).render_as_string(hide_password=False)


def drop_database(server: str, url: str) -> None:
    from clawviz.store import db as store_db

    engine = store_db._ENGINES.pop(url, None)
    if engine is not None:
        engine.dispose()
    name = make_url(url).database
    admin = create_engine(server, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as con:
        con.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


PGDATA: Path | None = None
"""The server's data folder (`--pgdata`): its postmaster.pid names the processes whose CPU
time counts as the server's."""


def server_cpu() -> float:
    """CPU seconds used so far by the PostgreSQL server's processes (postmaster and its live
    children, from /proc), 0 without --pgdata."""
    if PGDATA is None:
        return 0.0
    root = int((PGDATA / "postmaster.pid").read_text().split()[0])
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(proc.name), int(fields[1])
        if pid == root or ppid == root:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def spread(xs: list[float]) -> str:
    return f"{min(xs):.2f}-{max(xs):.2f}"


def write_log(path: Path, target_bytes: int, *, seed: int, start: int) -> int:
    """Whole episodes (ids from `start` on, so logs do not share episodes) up to about
    `target_bytes`; returns the bytes written."""
    rng = random.Random(seed)
    pool = gen.TextPool(rng)
    stats = gen.GenStats()
    with open(path, "wb", buffering=1 << 20) as out:
        for spec in gen.episode_specs(rng, start=start):
            if stats.bytes_written >= target_bytes:
                break
            gen._write_lines(out, gen.EpisodeGen(spec, pool, stats).lines(), stats)
    return stats.bytes_written


def build_store(server: str, out: Path, n_episodes: int) -> tuple[str, dict[str, str]]:
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine

    url = new_database(server, "pages")
    log, results = out / "template.jsonl", out / "template-results.jsonl"
    if not log.exists():
        gen.write_log(log, 12 * MB, seed=5, results=results)
    facts: dict[str, str] = {}
    t = time.perf_counter()
    with Session(get_engine(url)) as s:
        ingest_paths([log, results], session=s)
        ensure_analysis(s)
        s.commit()
    facts["template ingest + analysis"] = f"{time.perf_counter() - t:.1f} s"
    t = time.perf_counter()
    total = gen.replicate_episodes(get_engine(url), n_episodes)
    with get_engine(url).connect().execution_options(isolation_level="AUTOCOMMIT") as con:
        con.execute(text("ANALYZE"))
        n_calls = con.execute(text('SELECT COUNT(*) FROM "call"')).scalar_one()
        size = con.execute(text("SELECT pg_database_size(current_database())")).scalar_one()
    facts["store"] = (
        f"{total:,} episodes, {n_calls:,} calls (replicated in {time.perf_counter() - t:.1f} s; "
        f"{size / 1e9:.2f} GB)"
    )
    return url, facts


def page_times(
    url: str, page: str, query: dict[str, str], repeats: int
) -> tuple[list[float], list[float]]:
    """Wall times and CPU times (this process, where AppTest runs the page, plus the server)
    of `repeats` page runs."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["CLAWVIZ_DATABASE_URL"] = url
    os.environ["CLAWVIZ_NO_SAMPLES"] = "1"

    def once() -> tuple[float, float]:
        st.cache_data.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
        for k, v in query.items():
            at.query_params[k] = v
        at.switch_page(page)
        c, sc = time.process_time(), server_cpu()
        t = time.perf_counter()
        at.run()
        wall = time.perf_counter() - t
        cpu = time.process_time() - c + server_cpu() - sc
        if at.exception:
            raise RuntimeError(f"{page}: {at.exception[0].message}")
        return wall, cpu

    once()  # warm-up: imports and the cached engine, not part of a page view
    runs = [once() for _ in range(repeats)]
    return [w for w, _ in runs], [c for _, c in runs]


def typical_episode(url: str) -> tuple[str, int]:
    """A template episode (not a copy) with the median number of calls."""
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as con:
        rows = con.execute(
            text("SELECT episode_id, n_calls FROM episode WHERE episode_id NOT LIKE '%~%'")
        ).all()
    engine.dispose()
    rows = sorted(rows, key=lambda r: (r[1], r[0]))
    eid, n = rows[len(rows) // 2]
    return eid, int(n)


CPU_USED: list[float] = []
"""CPU seconds of each `ingest_wall` run: the ingest processes' own and the server's."""


def ingest_wall(server: str, logs: list[Path], n_procs: int) -> float:
    """Wall time of `n_procs` `clawviz ingest` processes sharing `logs` on a fresh store."""
    from clawviz.store.db import get_engine

    url = new_database(server, f"ingest{n_procs}")
    get_engine(url)  # the schema exists before the clock starts (for both runs alike)
    groups = [logs[i::n_procs] for i in range(n_procs)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    server0 = server_cpu()
    t = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "clawviz", "--db", url, "ingest", *map(str, g)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        for g in groups
    ]  # fmt: skip
    for p in procs:
        _, err = p.communicate()
        if p.returncode not in (0, 2):
            raise RuntimeError(f"ingest exited {p.returncode}: {err[-2000:]}")
    wall = time.perf_counter() - t
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_USED.append(
        cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime + server_cpu() - server0
    )
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as con:
        n = con.execute(text('SELECT COUNT(*) FROM "call"')).scalar_one()
    engine.dispose()
    drop_database(server, url)
    if not n:
        raise RuntimeError("the ingest loaded nothing")
    return wall


def concurrent_ingest(server: str, out: Path, mb: float, rounds: int) -> dict[str, object]:
    logs = []
    total = 0
    for k in range(4):
        p = out / f"ingest-{k}.jsonl"
        if not p.exists():
            write_log(p, int(mb * MB), seed=11 + k, start=100_000 * (k + 1))
        logs.append(p)
        total += p.stat().st_size
    ones: list[float] = []
    fours: list[float] = []
    ratios: list[float] = []
    cpus: dict[int, list[float]] = {1: [], 4: []}
    for r in range(rounds):
        order: list[tuple[int, list[float]]] = [(1, ones), (4, fours)]
        if r % 2:
            order.reverse()  # interleaved, alternating which goes first
        walls = {}
        for n, into in order:
            walls[n] = ingest_wall(server, logs, n)
            into.append(walls[n])
            cpus[n].append(CPU_USED[-1])
        ratios.append(walls[1] / walls[4])
    return {"bytes": total, "one": ones, "four": fours, "ratio": ratios, "cpu": cpus}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pg", required=True, help="maintenance database URL of the server")
    p.add_argument("--episodes", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ingest-mb", type=float, default=8.0, help="size of each of the 4 logs")
    p.add_argument("--pgdata", type=Path, help="the server's data folder (its CPU is counted)")
    p.add_argument("--skip-pages", action="store_true")
    p.add_argument("--skip-ingest", action="store_true")
    a = p.parse_args(argv)
    global PGDATA
    PGDATA = a.pgdata
    out = ROOT / "bench" / "out" / "pg_scale"
    out.mkdir(parents=True, exist_ok=True)
    rows: list[str] = []
    facts: dict[str, str] = {"cores": str(os.cpu_count())}

    def row(what: str, target: str, walls: list[float], cpus: list[float], limit: float) -> None:
        w, c = statistics.median(walls), statistics.median(cpus)
        rows.append(
            f"| {what} | {target} | {c:.2f} s cpu (spread {spread(cpus)}); wall {w:.2f} s "
            f"(spread {spread(walls)}); n={len(walls)} | {'yes' if c <= limit else '**NO**'} |"
        )

    if not a.skip_pages:
        url, built = build_store(a.pg, out, a.episodes)
        facts.update(built)
        try:
            walls, cpus = page_times(url, "pages/runs.py", {}, a.repeats)
            row(f"Runs page (AppTest), {a.episodes:,} episodes", "<= 2 s", walls, cpus, 2.0)
            eid, n = typical_episode(url)
            walls, cpus = page_times(url, "pages/episode.py", {"episode": eid}, a.repeats)
            row(f"Episode page (AppTest), {n}-call episode", "<= 1.5 s", walls, cpus, 1.5)
        finally:
            drop_database(a.pg, url)
    if not a.skip_ingest:
        r = concurrent_ingest(a.pg, out, a.ingest_mb, a.rounds)
        mbs = r["bytes"] / MB  # type: ignore[operator]
        one, four, ratio = r["one"], r["four"], r["ratio"]
        rows.append(
            f"| 1 ingest process, 4 logs ({mbs:.0f} MB) | baseline | "
            f"{statistics.median(one):.1f} s (spread {spread(one)}) = "  # type: ignore[arg-type]
            f"{mbs / statistics.median(one):.2f} MB/s | |"  # type: ignore[arg-type]
        )
        rows.append(
            f"| 4 concurrent ingest processes, 1 log each | >= 2.5x of one | "
            f"{statistics.median(four):.1f} s (spread {spread(four)}) = "  # type: ignore[arg-type]
            f"{mbs / statistics.median(four):.2f} MB/s; "  # type: ignore[arg-type]
            f"**{statistics.median(ratio):.2f}x** (per round "  # type: ignore[arg-type]
            f"{', '.join(f'{x:.2f}' for x in ratio)}) | "  # type: ignore[union-attr]
            f"{'yes' if statistics.median(ratio) >= 2.5 else '**NO**'} |"  # type: ignore[arg-type]
        )
        cpu = r["cpu"]
        facts["ingest CPU (processes + server), median"] = (
            f"one process {statistics.median(cpu[1]):.1f} s, "  # type: ignore[index]
            f"four {statistics.median(cpu[4]):.1f} s"  # type: ignore[index]
        )
    facts["load average at the end"] = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    table = "\n".join(
        ["| what | target | measured (median) | met |", "| --- | --- | --- | --- |", *rows]
    )
    text_out = table + "\n\n" + "\n".join(f"- {k}: {v}" for k, v in facts.items()) + "\n"
    (ROOT / "bench" / "out" / "pg_scale.md").write_text(text_out)
    print(text_out)


if __name__ == "__main__":
    main()
