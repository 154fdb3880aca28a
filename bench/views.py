"""Issue 26 §3 bench: views at O(page) on a 1k and a 100k-episode store.

`python3 bench/views.py build DIR --episodes 100000 [--pg URL]` builds a store from the bench
generator's template log (real ingest + analysis, then `gen.replicate_episodes`) and prints its
URL; `python3 bench/views.py run --small URL --big URL` measures the rows of bench/README.md
"Issue 26, views" (interleaved, medians and spreads).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen  # noqa: E402

MB = 1 << 20


def build(out: Path, n_episodes: int, url: str | None = None) -> str:
    """A store of `n_episodes` (SQLite file in `out` unless `url`), analysed; returns its URL."""
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine, init_db

    out.mkdir(parents=True, exist_ok=True)
    url = url or f"sqlite:///{out / f'store-{n_episodes}.db'}"
    log, results = out / "template.jsonl", out / "template-results.jsonl"
    if not log.exists():
        gen.write_log(log, 12 * MB, seed=5, results=results)
    engine = get_engine(url)
    init_db(engine)
    t = time.perf_counter()
    with Session(engine) as s:
        ingest_paths([log, results], session=s)
        ensure_analysis(s)
        s.commit()
    print(f"template ingest + analysis {time.perf_counter() - t:.1f} s", file=sys.stderr)
    t = time.perf_counter()
    total = gen.replicate_episodes(engine, n_episodes)
    print(f"{total:,} episodes replicated in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    # The copies were not ingested: their queue rows are drained (found unchanged), the Runs
    # counts rebuilt from the copied rows, and the search index built, as ingest would have.
    from clawviz.settings import DEFAULT_SETTINGS
    from clawviz.store import runstats, search

    t = time.perf_counter()
    with Session(engine) as s:
        ensure_analysis(s)
        s.commit()
        runstats.rebuild(s, DEFAULT_SETTINGS.settings_hash)
        s.commit()
        took = time.perf_counter() - t
        print(f"queue drained, Runs counts built in {took:.1f} s", file=sys.stderr)
        t = time.perf_counter()
        search.refresh_index(s)
        s.commit()
    print(f"search index built in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    return url


ROOT = Path(__file__).resolve().parent.parent


def _median(xs: list[float]) -> float:
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2


def _spread(xs: list[float]) -> str:
    return f"{min(xs):.2f}-{max(xs):.2f}"


def page_once(url: str, page: str, query: dict[str, str]) -> tuple[float, float]:
    """(wall, cpu) of one first view of `page` on the store at `url`: AppTest of app.py with
    every data cache cleared (the first view of a fresh session), imports and engine warm."""
    import os

    import streamlit as st
    from streamlit.testing.v1 import AppTest

    os.environ["CLAWVIZ_DATABASE_URL"] = url
    os.environ["CLAWVIZ_NO_SAMPLES"] = "1"
    st.cache_data.clear()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page(page)
    w, c = time.perf_counter(), time.process_time()
    at.run()
    w, c = time.perf_counter() - w, time.process_time() - c
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].message}")
    return w, c


def interleaved(small: str, big: str, page: str, query: dict[str, str], n: int) -> str:
    """`n` pairs small, big (order alternating), after one warm-up of each; the row text."""
    for url in (small, big):
        page_once(url, page, query)
    pairs: list[tuple[tuple[float, float], tuple[float, float]]] = []
    for i in range(n):
        first, second = (small, big) if i % 2 == 0 else (big, small)
        a = page_once(first, page, query)
        b = page_once(second, page, query)
        pairs.append((a, b) if first == small else (b, a))
    sw = [p[0][0] for p in pairs]
    sc = [p[0][1] for p in pairs]
    bw = [p[1][0] for p in pairs]
    bc = [p[1][1] for p in pairs]
    rc = [b[1] / s[1] for s, b in pairs]
    rw = [b[0] / s[0] for s, b in pairs]
    return (
        f"1k: {_median(sc):.2f} s cpu ({_spread(sc)}), {_median(sw):.2f} s wall ({_spread(sw)}); "
        f"100k: {_median(bc):.2f} s cpu ({_spread(bc)}), {_median(bw):.2f} s wall "
        f"({_spread(bw)}); ratio cpu {_median(rc):.2f}x ({_spread(rc)}), wall {_median(rw):.2f}x "
        f"({_spread(rw)}); n={n} pairs"
    )


def typical_episode(url: str) -> str:
    """A template episode of 15 calls (it is in both stores: copies are suffixed)."""
    from sqlalchemy import create_engine, text

    with create_engine(url).connect() as con:
        row = con.execute(
            text(
                "SELECT episode_id FROM episode WHERE n_calls BETWEEN 14 AND 16 "
                "AND episode_id NOT LIKE '%~%' ORDER BY episode_id LIMIT 1"
            )
        ).one()
    return str(row[0])


def episodes_rss(url: str, n: int) -> str:
    """Peak RSS (VmHWM) and times of `clawviz --json episodes` in a child, `n` runs."""
    import re
    import subprocess

    rss, wall = [], []
    for _ in range(n):
        t = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "clawviz", "--db", url, "--json",
             "episodes"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True,
        )  # fmt: skip
        wall.append(time.perf_counter() - t)
        rss.append(int(re.findall(r"^(\d+)$", proc.stderr, re.M)[-1]) / 1024)
    return f"{_median(rss):.0f} MB ({_spread(rss)}), {_median(wall):.1f} s wall; n={n}"


def search_times(url: str, words: list[str]) -> str:
    """First and second warm `search` of 20 rows in a fresh process, per word."""
    import subprocess

    code = (
        "import sys,time\n"
        "from sqlmodel import Session\n"
        "from clawviz.store import search\n"
        "from clawviz.store.db import get_engine\n"
        "e=get_engine(sys.argv[1]); out=[]; cpu=[]\n"
        "for w in sys.argv[2:]:\n"
        "  for _ in range(2):\n"
        "    with Session(e) as s:\n"
        "      t=time.perf_counter(); c=time.process_time(); h=search.search(s, w, limit=20)\n"
        "      out.append(time.perf_counter()-t); cpu.append(time.process_time()-c)\n"
        "      assert len(h)==20, (w, len(h))\n"
        "print(' '.join(f'{x:.4f}' for x in out))\n"
        "print(' '.join(f'{x:.4f}' for x in cpu))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, url, *words], cwd=ROOT, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    wall_line, cpu_line = proc.stdout.strip().splitlines()[-2:]
    out = []
    for what, line in (("wall", wall_line), ("cpu", cpu_line)):
        xs = [float(x) for x in line.split()]
        first, second = xs[0::2], xs[1::2]
        ratio = [a / b for a, b in zip(first, second, strict=True)]
        out.append(
            f"{what}: first {_median(first):.3f} s ({_spread(first)}), second "
            f"{_median(second):.3f} s ({_spread(second)}), first/second {_median(ratio):.2f}x "
            f"({_spread(ratio)})"
        )
    return "; ".join(out) + f"; {len(words)} words"


def run(small: str, big: str, pairs: int, rows: list[str]) -> None:
    if "runs" in rows:
        print("Runs first view, 100k vs 1k:", interleaved(small, big, "pages/runs.py", {}, pairs))
    if "runs_nostats" in rows:
        # The page computes the dataset statistics by itself only up to STATS_AUTO_LIMIT
        # episodes (the 1k store does, the 100k one waits for a click): the same work on both.
        from clawviz.ui import runs as runs_ui

        limit, runs_ui.STATS_AUTO_LIMIT = runs_ui.STATS_AUTO_LIMIT, 0
        try:
            row = interleaved(small, big, "pages/runs.py", {}, pairs)
        finally:
            runs_ui.STATS_AUTO_LIMIT = limit
        print("Runs first view without the statistics on either, 100k vs 1k:", row)
    if "episode" in rows:
        ep = typical_episode(small)
        q = {"episode": ep}
        print(f"Episode first view ({ep}), 100k vs 1k:",
              interleaved(small, big, "pages/episode.py", q, pairs))  # fmt: skip
    if "rss" in rows:
        print("episodes --json, 1k:", episodes_rss(small, 3))
        print("episodes --json, 100k:", episodes_rss(big, 3))
    if "search" in rows:
        import random

        vocab = gen._make_vocab(random.Random(7))  # the generator's text pool (TextPool)
        words = [vocab[i] for i in (101, 733, 1201, 1999, 2707)]
        print("search, 100k:", search_times(big, words))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("out", type=Path)
    b.add_argument("--episodes", type=int, default=100_000)
    b.add_argument("--url", default=None, help="an empty store to fill (PostgreSQL)")
    r = sub.add_parser("run")
    r.add_argument("--small", required=True, help="URL of the 1k-episode store")
    r.add_argument("--big", required=True, help="URL of the 100k-episode store")
    r.add_argument("--pairs", type=int, default=5)
    r.add_argument("--rows", default="runs,runs_nostats,episode,rss,search")
    args = p.parse_args(argv)
    if args.cmd == "build":
        print(build(args.out, args.episodes, args.url))
    else:
        run(args.small, args.big, args.pairs, args.rows.split(","))


if __name__ == "__main__":
    main()
