"""clawviz benchmarks: speed, memory and storage, as ratios against baselines of the same run.

`python bench/run.py` runs the full set (100 MB and 1 GB logs, 1,000-call episode, 25,000-episode
store) and writes the table into bench/README.md; `python bench/run.py --quick` is a smoke run
with small sizes (CI runs it to prove the script works). Timings are medians of several runs;
nothing here asserts a timing. A figure whose library piece is missing prints
`n/a (not built yet)`; an exception in a built piece is shown and makes the exit status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import importlib
import importlib.metadata
import io
import json
import os
import platform
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

import gen  # noqa: E402
import round2  # noqa: E402

README = BENCH / "README.md"
START = "<!-- results:start -->"
END = "<!-- results:end -->"
MB = 1_000_000


@dataclass(frozen=True)
class Scale:
    """Sizes and repeat counts of one kind of run."""

    name: str
    log_mb: float
    big_log_mb: float | None
    long_calls: int
    short_calls: int
    page_calls: int
    store_episodes: int
    repeats: int
    ingest_repeats: int
    r2_logs_mb: tuple[float, ...] = (39, 390)
    """Logs of the issue-14 figures (39 MB and 390 MB in the issue's table)."""
    big_episode_calls: int = 200_000
    r2_repeats: int = 5
    r2_command_repeats: int = 5
    """Pairs of the whole-command figure on its first log (3 on the 390 MB one)."""


FULL = Scale("full", 100, 1000, 1000, 100, 300, 25_000, 5, 3)
QUICK = Scale(
    "quick",
    5,
    None,
    200,
    20,
    100,
    500,
    3,
    3,
    r2_logs_mb=(5,),
    big_episode_calls=2_000,
    r2_repeats=3,
    r2_command_repeats=2,
)


@dataclass
class Figure:
    """One row of the results table."""

    name: str
    value: str = "n/a"
    baseline: str = ""
    ratio: str = ""
    target: str = ""
    met: str = ""
    note: str = ""


class NotBuilt(Exception):
    """A library piece the figure needs has not landed yet."""


@dataclass
class Bench:
    """State shared by the figures of one run."""

    scale: Scale
    out: Path
    profile: bool = False
    figures: list[Figure] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)


def need(module: str, *names: str) -> Any:
    """Import `module` and check it has `names`, else raise NotBuilt."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and (module == e.name or module.startswith(e.name + ".")):
            raise NotBuilt(module) from e
        raise
    missing = [n for n in names if not hasattr(mod, n)]
    if missing:
        raise NotBuilt(f"{module}.{missing[0]}")
    return mod


@dataclass
class Timing:
    """Medians of wall and CPU time over several runs (seconds), and the wall samples."""

    wall: float
    cpu: float
    samples: list[float]


def median_time(fn: Callable[[], Any], repeats: int) -> Timing:
    """Time `repeats` calls of `fn`; CPU time is this process's, immune to other load."""
    walls, cpus = [], []
    for _ in range(repeats):
        gc.collect()
        c = time.process_time()
        t = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return Timing(statistics.median(walls), statistics.median(cpus), walls)


def fmt_s(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def verdict(ok: bool) -> str:
    return "yes" if ok else "**NO**"


@contextlib.contextmanager
def profiled(b: Bench, label: str) -> Iterator[None]:
    """With --profile, write a text profile of the block to out/profiles/.

    pyinstrument (`pip install pyinstrument`) gives a readable call tree; without it, cProfile.
    """
    if not b.profile:
        yield
        return
    path = b.out / "profiles" / f"{label}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        from pyinstrument import Profiler
    except ImportError:
        prof = cProfile.Profile()
        prof.enable()
        try:
            yield
        finally:
            prof.disable()
            write_pstats(prof, path)
        return
    p = Profiler(interval=0.001)
    p.start()
    try:
        yield
    finally:
        p.stop()
        path.write_text(p.output_text(unicode=False, color=False, show_all=False))
        print(f"  profile: {path}")


def write_pstats(prof: cProfile.Profile, path: Path) -> None:
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(60)
    path.write_text(out.getvalue())
    print(f"  profile: {path}")


def profile_thread(b: Bench, label: str, fn: Callable[[], Any]) -> None:
    """cProfile the threads `fn` starts (AppTest runs the page script in its own thread)."""
    prof = cProfile.Profile()

    def hook(*_: Any) -> None:
        sys.setprofile(None)
        prof.enable()

    threading.setprofile(hook)
    try:
        fn()
    finally:
        threading.setprofile(None)
    path = b.out / "profiles" / f"{label}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_pstats(prof, path)


# ----- data ------------------------------------------------------------------------------------
def cached_log(b: Bench, name: str, make: Callable[[Path], Any]) -> tuple[Path, dict]:
    """Generate a log once per out dir (the generator is deterministic) and return its meta."""
    path = b.out / name
    meta = gen.read_meta(path)
    if meta is None or not path.exists():
        t = time.perf_counter()
        make(path)
        meta = gen.read_meta(path)
        print(
            f"  generated {name}: {meta['bytes_written'] / MB:.1f} MB in "
            f"{time.perf_counter() - t:.1f} s"
        )
    return path, meta


def fresh_db(b: Bench, name: str) -> tuple[str, Path]:
    path = b.out / "db" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return f"sqlite:///{path}", path


def ingest_into(url: str, paths: list[Path]) -> Any:
    """Ingest `paths` into the store at `url` with the real pipeline; returns the report."""
    ingest = need("clawviz.jobs.ingest", "ingest_paths")
    from sqlmodel import Session

    from clawviz.store.db import get_engine

    with Session(get_engine(url)) as s:
        report = ingest.ingest_paths(paths, session=s)
        s.commit()
    return report


def store_bytes(url: str, path: Path) -> int:
    """Size of a SQLite store on disk after folding the WAL back into the main file."""
    from sqlalchemy import text

    from clawviz.store.db import get_engine

    engine = get_engine(url)
    with engine.connect() as conn:
        conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
    engine.dispose()
    return sum(
        Path(str(path) + s).stat().st_size
        for s in ("", "-wal", "-shm")
        if Path(str(path) + s).exists()
    )


# ----- figures ---------------------------------------------------------------------------------
def fig_ingest(b: Bench) -> list[Figure]:
    """Ingest wall time vs orjson.loads / pandas.read_json, and store size vs raw / distinct."""
    import orjson
    import pandas as pd

    sc = b.scale
    log, meta = cached_log(
        b, f"log-{sc.log_mb:g}MB.jsonl", lambda p: gen.write_log(p, int(sc.log_mb * MB))
    )
    size = log.stat().st_size
    label = f"{size / MB:.0f} MB log"

    def orjson_only() -> None:
        with open(log, "rb") as f:
            for line in f:
                orjson.loads(line)

    def pandas_only() -> None:
        pd.read_json(log, lines=True)

    t_orjson = median_time(orjson_only, sc.repeats)
    t_pandas = median_time(pandas_only, sc.repeats)
    b.facts["baseline orjson.loads"] = (
        f"{fmt_s(t_orjson.wall)} wall, {fmt_s(t_orjson.cpu)} cpu "
        f"({size / MB / t_orjson.wall:.0f} MB/s)"
    )
    b.facts["baseline pandas.read_json"] = f"{fmt_s(t_pandas.wall)} wall, {fmt_s(t_pandas.cpu)} cpu"

    rows = [
        Figure(f"ingest time, {label}", target="<= 4x"),
        Figure(f"ingest time, {label}", target="<= 0.5x"),
        Figure("store size", target="<= 0.25x raw"),
        Figure("store size", target="<= 1.5x distinct"),
    ]
    rows[0].baseline = f"orjson.loads per line: {fmt_s(t_orjson.cpu)} cpu"
    rows[1].baseline = f"pandas.read_json(lines=True): {fmt_s(t_pandas.cpu)} cpu"
    rows[2].baseline = f"raw log: {size / MB:.1f} MB"
    rows[3].baseline = f"distinct messages: {meta['distinct_bytes'] / MB:.1f} MB"
    try:
        need("clawviz.jobs.ingest", "ingest_paths")
    except NotBuilt:
        for r in rows:
            r.value = "n/a (not built yet)"
        return rows

    from clawviz.store.db import get_engine

    runs, cpus = [], []
    report = None
    for i in range(sc.ingest_repeats):
        url, _ = fresh_db(b, f"ingest-{i}.db")
        get_engine(url)  # table creation is not part of ingest time
        gc.collect()
        c = time.process_time()
        t = time.perf_counter()
        report = ingest_into(url, [log])
        runs.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
        if i > 0:  # the first store is measured below
            get_engine(url).dispose()
    if b.profile:
        url, _ = fresh_db(b, "ingest-profile.db")
        with profiled(b, "ingest"):
            ingest_into(url, [log])
        get_engine(url).dispose()
    t_ingest = statistics.median(runs)
    c_ingest = statistics.median(cpus)
    n_calls = getattr(report, "n_calls", None)
    n_rej = len(getattr(report, "rejected", []) or [])
    b.facts["ingest"] = (
        f"{fmt_s(t_ingest)} for {size / MB:.0f} MB, {meta['n_lines']} lines "
        f"({size / MB / t_ingest:.1f} MB/s); report: {n_calls} calls, "
        f"{getattr(report, 'n_episodes', '?')} episodes, {n_rej} rejected"
    )
    if n_calls is not None and n_calls != meta["n_calls"]:
        b.errors.append(f"ingest read {n_calls} calls, generator wrote {meta['n_calls']}")
    # Judged on CPU time: a shared machine's load slows wall time unevenly between runs.
    r0 = c_ingest / t_orjson.cpu
    r1 = c_ingest / t_pandas.cpu
    rows[0].value = rows[1].value = f"{fmt_s(c_ingest)} cpu ({fmt_s(t_ingest)} wall)"
    rows[0].ratio = f"{r0:.2f}x ({t_ingest / t_orjson.wall:.2f}x wall)"
    rows[1].ratio = f"{r1:.2f}x ({t_ingest / t_pandas.wall:.2f}x wall)"
    rows[0].met, rows[1].met = verdict(r0 <= 4), verdict(r1 <= 0.5)

    url0 = f"sqlite:///{b.out / 'db' / 'ingest-0.db'}"
    stored = store_bytes(url0, b.out / "db" / "ingest-0.db")
    rows[2].value = rows[3].value = f"{stored / MB:.1f} MB"
    s0 = stored / size
    s1 = stored / meta["distinct_bytes"]
    rows[2].ratio, rows[2].met = f"{s0:.3f}x", verdict(s0 <= 0.25)
    rows[3].ratio, rows[3].met = f"{s1:.2f}x", verdict(s1 <= 1.5)
    b.facts["store tables"] = table_sizes(b.out / "db" / "ingest-0.db")
    return rows


def table_sizes(path: Path) -> str:
    """Bytes per table (dbstat), largest first, to explain the store size."""
    import sqlite3

    con = sqlite3.connect(path)
    try:
        rows = con.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 6"
        ).fetchall()
    except sqlite3.OperationalError:
        return "dbstat not available"
    finally:
        con.close()
    return ", ".join(f"{n} {s / MB:.1f} MB" for n, s in rows)


def fig_peak_rss(b: Bench) -> list[Figure]:
    """Peak RSS of a separate process ingesting the big log (the quick log with --quick)."""
    sc = b.scale
    if sc.big_log_mb is None:
        log, meta = cached_log(
            b, f"log-{sc.log_mb:g}MB.jsonl", lambda p: gen.write_log(p, int(sc.log_mb * MB))
        )
    else:
        log, meta = cached_log(
            b,
            f"log-{sc.big_log_mb:g}MB.jsonl",
            lambda p: gen.write_log(p, int(sc.big_log_mb * MB), seed=3),
        )
    fig = Figure(f"peak RSS ingesting {log.stat().st_size / MB:.0f} MB log", target="<= 300 MB")
    try:
        need("clawviz.jobs.ingest", "ingest_paths")
    except NotBuilt:
        fig.value = "n/a (not built yet)"
        return [fig]
    url, _ = fresh_db(b, "rss.db")
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child-ingest", str(log), url],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child ingest failed: {proc.stderr.strip()[-2000:]}")
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    peak = child["peak_kb"] / 1000
    fig.value = f"{peak:.0f} MB"
    fig.baseline = f"interpreter + imports: {child['imports_kb'] / 1000:.0f} MB"
    fig.met = verdict(peak <= 300)
    b.facts["big ingest"] = f"{fmt_s(time.perf_counter() - t)} wall, in a child process"
    return [fig]


def peak_rss_kb() -> int:
    """This process's peak RSS in KB.

    VmHWM first: Linux carries `ru_maxrss` across exec, so a child started by a big parent
    would report the parent's size.
    """
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child_ingest(log: str, url: str) -> None:
    """--child-ingest: ingest one log and print this process's peak RSS (KB) as JSON."""
    # Imports count towards the baseline, not towards the ingest.
    importlib.import_module("clawviz.store.db")
    importlib.import_module("clawviz.jobs.ingest")

    imports_kb = peak_rss_kb()
    report = ingest_into(url, [Path(log)])
    peak_kb = peak_rss_kb()
    print(
        json.dumps(
            {
                "imports_kb": imports_kb,
                "peak_kb": peak_kb,
                "n_calls": getattr(report, "n_calls", None),
            }
        )
    )


def child_run(args: list[str]) -> dict:
    """Run this script with a --child-* option; its last stdout line is JSON."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args[0]} failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child_export(fmt: str, url: str, out: str, episodes: list[str]) -> None:
    """--child-export: export (all, or these episodes) and print peak RSS (KB) as JSON."""
    exp = importlib.import_module("clawviz.export")
    importlib.import_module("pyarrow.parquet")
    from sqlmodel import Session

    from clawviz.store.db import get_engine

    imports_kb = peak_rss_kb()
    with Session(get_engine(url)) as s:
        sel = exp.Selection(episode_ids=tuple(episodes) or None)
        report = exp.run_export(s, fmt, out, selection=sel)
    print(json.dumps({"imports_kb": imports_kb, "peak_kb": peak_rss_kb(), "rows": report.rows}))


def long_episode_calls(b: Bench, n: int) -> list[Any]:
    """Calls of one generated n-call episode, through the real ingest and store."""
    store = need("clawviz.store.calls", "load_calls")
    log, _ = cached_log(b, f"episode-{n}.jsonl", lambda p: gen.write_long_episode(p, n))
    url, _ = fresh_db(b, f"episode-{n}.db")
    ingest_into(url, [log])
    from sqlmodel import Session

    from clawviz.store.db import get_engine

    with Session(get_engine(url)) as s:
        t = time.perf_counter()
        calls = store.load_calls(s, f"long-{n}")
        b.facts[f"load_calls({n}-call episode)"] = fmt_s(time.perf_counter() - t)
    get_engine(url).dispose()
    if not calls:
        raise RuntimeError(f"no calls loaded for long-{n}")
    return calls


def fig_analysis(b: Bench) -> list[Figure]:
    """analyse_episode (reconstruct + classify + prune) on a long episode, and its growth."""
    sc = b.scale
    big = Figure(
        f"reconstruct + classify + prune, {sc.long_calls:,}-call episode", target="<= 100 ms"
    )
    growth = Figure(
        f"growth: {sc.long_calls:,}-call vs {sc.short_calls}-call episode", target="<= 12x"
    )
    try:
        analysis = need("clawviz.jobs.analyse", "analyse_episode")
        need("clawviz.jobs.ingest", "ingest_paths")
        need("clawviz.store.calls", "load_calls")
    except NotBuilt:
        big.value = growth.value = "n/a (not built yet)"
        return [big, growth]
    from clawviz.settings import DEFAULT_SETTINGS

    times = {}
    for n in (sc.short_calls, sc.long_calls):
        calls = long_episode_calls(b, n)

        def run(calls: list[Any] = calls) -> Any:
            return analysis.analyse_episode(calls, reward=1.0, settings=DEFAULT_SETTINGS)

        result = run()  # warm-up; also shows what was decided
        times[n] = median_time(run, max(7, sc.repeats))
        states: dict[str, int] = {}
        for d in result.decisions.values():
            states[d.state] = states.get(d.state, 0) + 1
        b.facts[f"analysis of {n}-call episode"] = (
            f"{len(calls)} calls, status {result.status} "
            f"{sorted({r.code for r in result.reasons})}, states {states}, "
            f"{result.n_segments} segments"
        )
        if n == sc.long_calls:
            with profiled(b, "analysis"):
                run()
    # Judged on CPU time: this figure is single-threaded pure Python, and CPU time does not
    # count the time other processes on a shared machine take from it.
    long, short = times[sc.long_calls], times[sc.short_calls]
    big.value = f"{fmt_s(long.cpu)} cpu ({fmt_s(long.wall)} wall)"
    big.met = verdict(long.cpu <= 0.1)
    g = long.cpu / short.cpu
    growth.value = f"{g:.1f}x cpu ({long.wall / short.wall:.1f}x wall)"
    growth.baseline = f"{sc.short_calls}-call: {fmt_s(short.cpu)} cpu"
    growth.ratio = f"{g:.1f}x for {sc.long_calls / sc.short_calls:.0f}x calls"
    growth.met = verdict(g <= 12)
    return [big, growth]


def apptest_median(b: Bench, page: str, url: str, query: dict[str, str], label: str) -> Timing:
    """Median wall time of an AppTest run of `page` (fresh data caches, warm imports)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["CLAWVIZ_DATABASE_URL"] = url
    os.environ["CLAWVIZ_NO_SAMPLES"] = "1"

    def once() -> None:
        st.cache_data.clear()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        for k, v in query.items():
            at.query_params[k] = v
        at.switch_page(page)
        at.run()
        if at.exception:
            raise RuntimeError(f"{page}: {at.exception[0].message}")

    once()  # warm-up: module imports and the cached engine, not part of a page view
    if b.profile:
        profile_thread(b, label, once)
    timing = median_time(once, b.scale.repeats)
    b.facts[f"{label} wall samples"] = ", ".join(fmt_s(s) for s in timing.samples)
    return timing


def analysed_store(b: Bench, name: str, logs: list[Path]) -> tuple[str, Path]:
    """A store holding `logs`, ingested and analysed under the default settings."""
    analysis = need("clawviz.jobs.analyse", "ensure_analysis")
    url, path = fresh_db(b, name)
    ingest_into(url, logs)
    from sqlmodel import Session

    from clawviz.store.db import get_engine

    with Session(get_engine(url)) as s:
        analysis.ensure_analysis(s)
        s.commit()
    return url, path


def fig_episode_page(b: Bench) -> list[Figure]:
    n = b.scale.page_calls
    fig = Figure(f"Episode page (AppTest run), {n}-call episode", target="<= 1.5 s")
    try:
        need("clawviz.jobs.analyse", "ensure_analysis")
        need("clawviz.jobs.ingest", "ingest_paths")
        if not (ROOT / "app.py").exists() or not (ROOT / "pages" / "episode.py").exists():
            raise NotBuilt("pages/episode.py")
    except NotBuilt:
        fig.value = "n/a (not built yet)"
        return [fig]
    log, _ = cached_log(b, f"episode-{n}.jsonl", lambda p: gen.write_long_episode(p, n))
    url, _ = analysed_store(b, "episode-page.db", [log])
    t = apptest_median(b, "pages/episode.py", url, {"episode": f"long-{n}"}, "episode_page")
    fig.value = f"{fmt_s(t.cpu)} cpu ({fmt_s(t.wall)} wall)"
    fig.met = verdict(t.cpu <= 1.5)
    return [fig]


def fig_runs_page(b: Bench) -> list[Figure]:
    n = b.scale.store_episodes
    fig = Figure(f"Runs page (AppTest run), {n:,} episodes", target="<= 2 s")
    try:
        need("clawviz.jobs.analyse", "ensure_analysis")
        need("clawviz.jobs.ingest", "ingest_paths")
        if not (ROOT / "app.py").exists() or not (ROOT / "pages" / "runs.py").exists():
            raise NotBuilt("pages/runs.py")
    except NotBuilt:
        fig.value = "n/a (not built yet)"
        return [fig]
    results = b.out / "template-results.jsonl"
    log, _ = cached_log(
        b,
        "template.jsonl",
        lambda p: gen.write_log(p, 12 * MB, seed=5, results=results),
    )
    url, path = analysed_store(b, "runs-page.db", [log, results])
    from clawviz.store.db import get_engine

    t = time.perf_counter()
    total = gen.replicate_episodes(get_engine(url), n)
    b.facts["runs store"] = (
        f"{total:,} episodes (templates from {log.name}, replicated in "
        f"{fmt_s(time.perf_counter() - t)}; {store_bytes(url, path) / 1e9:.2f} GB on disk)"
    )
    t = apptest_median(b, "pages/runs.py", url, {}, "runs_page")
    fig.value = f"{fmt_s(t.cpu)} cpu ({fmt_s(t.wall)} wall)"
    fig.met = verdict(t.cpu <= 2)
    return [fig]


# ----- issue 14 (round 2): interleaved with their baselines --------------------------------------
def r2_log(b: Bench, mb: float) -> tuple[Path, dict]:
    """The issue-14 log of `mb` MB (the scale's own log when the sizes agree)."""
    seed = 1 if mb <= 100 else 3
    return cached_log(b, f"log-{mb:g}MB.jsonl", lambda p: gen.write_log(p, int(mb * MB), seed=seed))


def _r2_row(name: str, target: str, base: Any, measured: Any, limit: float) -> Figure:
    text, m = round2.fmt_ratio(base, measured)
    return Figure(
        name,
        value=round2.fmt_series(measured) + f"; wall {round2.fmt_series(measured, 'wall')}",
        baseline=round2.fmt_series(base),
        ratio=text,
        target=target,
        met=verdict(m <= limit),
    )


def fig_r2_ingest(b: Bench) -> list[Figure]:
    """In-process ingest (decisions included) vs a bare orjson.loads of each line, A B A B."""
    need("clawviz.jobs.ingest", "ingest_paths")
    sc = b.scale
    logs = [r2_log(b, sc.r2_logs_mb[0])[0]]
    sse, _ = cached_log(
        b, f"log-{sc.log_mb:g}MB.jsonl", lambda p: gen.write_log(p, int(sc.log_mb * MB))
    )
    if sse != logs[0]:
        logs.append(sse)
    rows = []
    for log in logs:
        ing = round2.InProcessIngest(log, b.out / "db")
        base, meas = round2.interleave(
            round2.orjson_parse(log), ing, sc.r2_repeats, b_setup=ing.setup, warm=False
        )
        label = f"{log.stat().st_size / MB:.0f} MB"
        kind = "SSE-heavy bench log" if log == sse and len(logs) > 1 else "log"
        rows.append(
            _r2_row(
                f"in-process ingest vs orjson.loads per line, {label} {kind}",
                "<= 3.5x",
                base,
                meas,
                3.5,
            )
        )
        ing.close()
    return rows


def fig_r2_commands(b: Bench) -> list[Figure]:
    """`clawviz ingest` then `clawviz episodes` (child processes) vs the orjson parse."""
    need("clawviz.jobs.ingest", "ingest_paths")
    rows = []
    for mb, limit in zip(b.scale.r2_logs_mb, (5.0, 4.0), strict=False):
        log, meta = r2_log(b, mb)
        state: dict[str, str] = {}

        def setup(state: dict[str, str] = state) -> None:
            state["url"], _ = fresh_db(b, "r2-commands.db")

        def commands(state: dict[str, str] = state, log: Path = log, want: int = 0) -> None:
            round2.run_cli(round2.cli("--db", state["url"], "ingest", str(log)))
            out = round2.run_cli(round2.cli("--db", state["url"], "--json", "episodes"))
            if want and len(json.loads(out)) != want:
                raise RuntimeError(f"episodes listed {len(json.loads(out))} episodes")

        repeats = b.scale.r2_command_repeats if mb < 100 else 3
        base, meas = round2.interleave(
            round2.orjson_parse(log),
            commands,
            repeats,
            b_children=True,
            b_setup=setup,
            warm=mb < 100 and b.scale is not QUICK,
        )
        size = log.stat().st_size / MB
        rows.append(
            _r2_row(
                f"commands `ingest` then `episodes` vs orjson parse, {size:.0f} MB",
                f"<= {limit:g}x",
                base,
                meas,
                limit,
            )
        )
    return rows


def fig_r2_import(b: Bench) -> list[Figure]:
    """`import clawviz.cli.main` in a fresh interpreter vs the orjson parse of the 39 MB log."""
    log, _ = r2_log(b, b.scale.r2_logs_mb[0])
    parse = round2.orjson_parse(log)
    base, meas = [], []
    parse()
    round2.child_import_seconds()
    for _ in range(b.scale.r2_repeats):
        base.append(round2.measure(parse))
        meas.append(round2.child_import_seconds())
    a, m = round2.Series(base), round2.Series(meas)
    code = "import clawviz.store.db, clawviz.store.decisions"
    t = round2.measure(
        lambda: subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True),
        children=True,
    )
    b.facts["import of what `episodes` runs (store + decisions, child process incl. start)"] = (
        f"{fmt_s(t.cpu)} cpu"
    )
    return [
        _r2_row(
            f"`import clawviz.cli` alone vs orjson parse of {log.stat().st_size / MB:.0f} MB",
            "<= 0.5x",
            a,
            m,
            0.5,
        )
    ]


def fig_r2_big_episode(b: Bench) -> list[Figure]:
    """`clawviz episodes` on a store holding one very long episode, analysed as ingest does."""
    import bigep
    from sqlmodel import Session

    from clawviz.jobs import analyse as decisions
    from clawviz.store.db import get_engine

    n = b.scale.big_episode_calls
    fig = Figure(f"`episodes` on a {n:,}-call episode", target="<= 2 s, <= 300 MB")
    url, _ = fresh_db(b, "big-episode.db")
    t = time.perf_counter()
    with Session(get_engine(url)) as s:
        # Decisions at ingest: analysed from the calls in memory, as ingest_paths does.
        calls = [p.call for p in bigep.big_episode(n)]
        written = bigep.write_big_episode(s, n)
        t_write = time.perf_counter() - t
        c = time.process_time()
        decisions.ensure_analysis(s, held={"big": calls})
        t_an = time.process_time() - c
    del calls
    get_engine(url).dispose()
    b.facts[f"{n:,}-call episode store"] = (
        f"{written:,} calls written in {fmt_s(t_write)}; analysed from memory in {fmt_s(t_an)} cpu "
        "(the work ingest does at its end)"
    )
    samples, rss = [], []
    for _ in range(3):
        sample, mb, n_rows = round2.child_episodes_rss(url)
        if n_rows != 1:
            raise RuntimeError(f"episodes listed {n_rows} rows")
        samples.append(sample)
        rss.append(mb)
    ser = round2.Series(samples)
    fig.value = (
        f"{round2.fmt_series(ser)}; wall {round2.fmt_series(ser, 'wall')}; peak RSS "
        f"{statistics.median(rss):.0f} MB ({min(rss):.0f}-{max(rss):.0f})"
    )
    fig.baseline = "- (absolute target; child process incl. imports)"
    fig.met = verdict(ser.med("cpu") <= 2 and max(rss) <= 300)
    return [fig]


def fig_r2_browser(b: Bench) -> list[Figure]:
    """The Chromium rows of issue 14 are measured by bench/browser.py (Streamlit servers and
    headless Chromium, minutes per row): this table only points there."""
    rows = [
        ("Episode tree painted in Chromium, warm, vs a trivial Streamlit page", "<= 1.2x"),
        ("the same, first view on a fresh server right after ingest", "<= 1.5x"),
        ("log -> first useful view vs claude-trace --generate-html plus paint", "faster at both"),
    ]
    return [Figure(n, value="see `python bench/browser.py`", target=t) for n, t in rows]


def token_store(b: Bench, n_episodes: int) -> str:
    """An analysed store of `n_episodes` token-id episodes (`gen.token_episodes`) with rewards."""
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.store import calls as store
    from clawviz.store.db import get_engine
    from clawviz.store.models import Result

    url, _ = fresh_db(b, "export-rl.db")
    with Session(get_engine(url)) as s:
        for i, calls in enumerate(gen.token_episodes(n_episodes)):
            store.write_calls(s, calls, None)
            store.refresh_episodes(s, [calls[0].episode_id])
            s.add(Result(episode_id=calls[0].episode_id, reward=[1.0, 0.6, 0.8, 0.55][i % 4]))
        s.commit()
        ensure_analysis(s)
        s.commit()
    return url


def fig_export(b: Bench) -> list[Figure]:
    """Export throughput (rows/s, MB/s) against plain orjson lines and against reading the input.

    Baselines, interleaved with the export in the same run: (a) writing the same rows (already
    in memory) as orjson lines, the floor of any JSONL writer; (b) reading the same episodes
    from the store as the export does (`iter_episodes`), building no row.
    """
    try:
        exp = need("clawviz.export", "run_export")
        src = need("clawviz.export.source", "iter_episodes", "Selection")
        need("clawviz.jobs.analyse", "ensure_analysis")
    except NotBuilt:
        return [Figure("export", value="n/a (not built yet)")]
    import orjson
    from sqlmodel import Session

    from clawviz.settings import DEFAULT_SETTINGS
    from clawviz.store.db import get_engine

    results = b.out / "template-results.jsonl"
    log, _ = cached_log(
        b, "template.jsonl", lambda p: gen.write_log(p, 12 * MB, seed=5, results=results)
    )
    sft_url, _ = analysed_store(b, "export-sft.db", [log, results])
    n_sft = 200 if b.scale is QUICK else 1_000
    n_sft = gen.replicate_episodes(get_engine(sft_url), n_sft)
    n_tok = 40 if b.scale is QUICK else 300
    rl_url = token_store(b, n_tok)
    out_dir = b.out / "db" / "export"
    out_dir.mkdir(parents=True, exist_ok=True)
    figs = []
    for fmt, url, what in (
        ("sft", sft_url, f"{n_sft:,} episodes copied from {log.name}"),
        ("rl", rl_url, f"{n_tok} token-id episodes of 13 calls, ~18.7K tokens"),
    ):
        engine = get_engine(url)
        first = out_dir / f"{fmt}-first.jsonl"
        with Session(engine) as s:
            exp.run_export(s, fmt, first)
        rows = [orjson.loads(x) for x in first.read_bytes().splitlines()]
        jsonl_mb = first.stat().st_size / MB
        base_path = out_dir / f"{fmt}-baseline.jsonl"
        max_calls = 64 if fmt == "rl" else 1000

        def lines(rows: list[dict] = rows, path: Path = base_path) -> None:
            with path.open("wb") as fh:
                for r in rows:
                    fh.write(orjson.dumps(r) + b"\n")

        def read(engine: Any = engine, max_calls: int = max_calls) -> None:
            with Session(engine) as s:
                for _ in src.iter_episodes(
                    s, DEFAULT_SETTINGS, src.Selection(), max_calls=max_calls
                ):
                    pass

        for suffix in (".jsonl", ".parquet"):
            out = out_dir / f"{fmt}{suffix}"

            def run(fmt: str = fmt, engine: Any = engine, out: Path = out) -> None:
                with Session(engine) as s:
                    exp.run_export(s, fmt, out)

            runs, bases, reads = [], [], []
            for _ in range(b.scale.repeats):  # interleaved: export, lines, read, export, ...
                runs.append(median_time(run, 1).cpu)
                bases.append(median_time(lines, 1).cpu)
                reads.append(median_time(read, 1).cpu)
            cpu, base, rd = (statistics.median(x) for x in (runs, bases, reads))
            size = out.stat().st_size / MB
            figs.append(
                Figure(
                    f"{fmt.upper()} export to {suffix[1:]}, {len(rows):,} rows ({what})",
                    value=f"{len(rows) / cpu:,.0f} rows/s, {size / cpu:.1f} MB/s of "
                    f"{suffix[1:]} ({jsonl_mb / cpu:.1f} MB/s JSONL-equivalent); "
                    f"{fmt_s(cpu)} cpu, spread {min(runs):.2f}-{max(runs):.2f} s; {size:.1f} MB",
                    baseline=f"(a) orjson lines {len(rows) / base:,.0f} rows/s, "
                    f"{jsonl_mb / base:.0f} MB/s ({fmt_s(base)}); (b) reading the input "
                    f"{fmt_s(rd)}",
                    ratio=f"{cpu / base:.0f}x (a), {cpu / rd:.1f}x (b)",
                    note="cpu medians of interleaved runs",
                )
            )
        # Peak RSS of a child exporting a slice of the store and the whole store: bounded
        # memory means the two are close, whatever the store's size.
        ids = [r["episode_id"] for r in rows]
        part = sorted(set(ids))[: max(1, len(set(ids)) // 8)]
        for label, only in (("1/8 of the episodes", part), ("all episodes", [])):
            child = child_run(
                ["--child-export", fmt, url, str(out_dir / f"{fmt}-rss.parquet"), *only]
            )
            b.facts[f"{fmt} export peak RSS, {label}"] = (
                f"{child['peak_kb'] / 1000:.0f} MB ({child['imports_kb'] / 1000:.0f} MB after "
                f"imports; {child['rows']:,} rows to Parquet, in a child process)"
            )
    return figs


# ----- report ----------------------------------------------------------------------------------
def machine() -> dict[str, str]:
    """CPU model, cores, RAM, OS, Python and package versions of this run."""
    cpu = platform.processor() or "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    ram = "?"
    with contextlib.suppress(OSError, ValueError, IndexError):
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        ram = f"{kb / 1024 / 1024:.1f} GiB"
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    versions = []
    for pkg in ("streamlit", "pandas", "orjson", "sqlmodel", "sqlalchemy", "plotly", "networkx"):
        try:
            versions.append(f"{pkg} {importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{pkg} -")
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit or "?",
        "cpu": cpu,
        "cores": f"{os.cpu_count()} ({usable} usable)",
        "ram": ram,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "packages": ", ".join(versions),
    }


def render(b: Bench, mach: dict[str, str], seconds: float) -> str:
    lines = [
        f"Run: `{b.scale.name}` ({seconds:.0f} s). Medians: ingest of {b.scale.ingest_repeats} "
        f"runs, analysis of {max(7, b.scale.repeats)}, baselines and pages of {b.scale.repeats}.",
        "",
        "| figure | this run | baseline (same run) | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for f in b.figures:
        lines.append(f"| {f.name} | {f.value} | {f.baseline} | {f.ratio} | {f.target} | {f.met} |")
    lines += ["", "Machine:", ""]
    lines += [f"- {k}: {v}" for k, v in mach.items()]
    if b.facts:
        lines += ["", "Details:", ""]
        lines += [f"- {k}: {v}" for k, v in b.facts.items()]
    if b.errors:
        lines += ["", "Errors:", ""]
        lines += [f"- {e}" for e in b.errors]
    return "\n".join(lines) + "\n"


def write_readme(table: str) -> None:
    text = README.read_text() if README.exists() else f"# Benchmarks\n\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{table}{END}{tail}")


FIGURES: tuple[Callable[[Bench], list[Figure]], ...] = (
    fig_ingest,
    fig_peak_rss,
    fig_analysis,
    fig_episode_page,
    fig_runs_page,
    fig_r2_ingest,
    fig_r2_commands,
    fig_r2_import,
    fig_r2_big_episode,
    fig_r2_browser,
    fig_export,
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, under 2 minutes")
    p.add_argument("--out", type=Path, default=BENCH / "out", help="generated data and stores")
    p.add_argument("--profile", action="store_true", help="pyinstrument profiles to OUT/profiles")
    p.add_argument("--only", help="comma-separated figure functions, e.g. fig_analysis")
    p.add_argument("--no-readme", action="store_true", help="do not update bench/README.md")
    p.add_argument("--keep", action="store_true", help="keep the stores in OUT/<run>/db/")
    p.add_argument("--child-ingest", nargs=2, metavar=("LOG", "URL"), help=argparse.SUPPRESS)
    p.add_argument("--child-export", nargs="+", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child_ingest:
        child_ingest(*a.child_ingest)
        return 0
    if a.child_export:
        fmt, url, out, *episodes = a.child_export
        child_export(fmt, url, out, episodes)
        return 0

    scale = QUICK if a.quick else FULL
    out = a.out / scale.name
    out.mkdir(parents=True, exist_ok=True)
    b = Bench(scale, out, profile=a.profile)
    mach = machine()
    print(f"clawviz bench ({scale.name}) on {mach['cpu']}, {mach['cores']} cores, {mach['ram']}")
    t0 = time.perf_counter()
    only = set(a.only.split(",")) if a.only else None
    for fn in FIGURES:
        if only and fn.__name__ not in only:
            continue
        print(f"- {fn.__name__} ...", flush=True)
        t = time.perf_counter()
        try:
            rows = fn(b)
        except Exception as e:  # one broken piece must not hide the other figures
            traceback.print_exc()
            b.errors.append(f"{fn.__name__}: {type(e).__name__}: {e}")
            rows = [Figure(fn.__name__, value=f"error: {type(e).__name__}")]
        b.figures.extend(rows)
        print(
            f"  {fmt_s(time.perf_counter() - t)}: "
            + "; ".join(f"{r.name} = {r.value}" for r in rows)
        )
    if not a.keep:
        shutil.rmtree(out / "db", ignore_errors=True)
    table = render(b, mach, time.perf_counter() - t0)
    print()
    print(table)
    if scale is FULL and not a.no_readme and not only:
        write_readme(table)
        print(f"wrote {README.relative_to(ROOT)}")
    return 1 if b.errors else 0


if __name__ == "__main__":
    sys.exit(main())
