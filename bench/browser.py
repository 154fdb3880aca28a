"""The Chromium rows of issue 14, each interleaved with its baseline (A B A B ...).

    python bench/browser.py [--quick] [--mb 39] [--repeats 5] [--rows warm,fresh,log]

- **warm**: the Episode page of the largest episode of an ingested 39 MB log, painted in
  headless Chromium (a new tab each time, server and caches warm), against
  `bench/trivial_page.py` (one Plotly chart) painted the same way. Target <= 1.2x.
- **fresh**: the same first view on a fresh server right after `clawviz ingest` (a new store
  every time; Streamlit's caches cold), against the trivial page's first view on a fresh
  server. Target <= 1.5x.
- **floors** (not a target row): warm paints of `bench/floor_page.py`, the trivial chart in an
  app frame and then with one of each element type of the Episode first view, interleaved with
  the trivial page and the Episode page: what Streamlit's front end charges for the frame and
  for the element types themselves, before any clawviz content; a last side draws the Episode
  page's own tree figure (with its selection wiring) in that page instead of the trivial chart.
- **log**: log -> first useful view. clawviz: `clawviz ingest LOG`, `streamlit run app.py`
  until healthy, the Episode page painted; claude-trace: `claude-trace --generate-html LOG`
  and its HTML painted. Target: clawviz faster. claude-trace is installed from npm into
  bench/out/claude-trace (`npm install @mariozechner/claude-trace`); without npm the row says so.
  A third side, interleaved with both, is this row's floor: the same `clawviz ingest`, then the
  trivial page (server start + paint) instead of the Episode page. No Episode page drawn by a
  Streamlit server can beat claude-trace where that floor does not.

"Painted" = the page's Plotly markers (claude-trace: its first conversation block) are in the
DOM, the Streamlit script run has finished, and two animation frames have passed. Each sample
has a wall time and a CPU time: the CPU, over the sample, of every process this bench started
(the Streamlit servers, Chromium and its renderers, the Playwright driver, the ingest and
claude-trace children), read from /proc. Ratios are the median (min-max) of the per-pair ratios.
On a machine shared with other work judge the CPU ratio; the wall ratio is beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402
import round2  # noqa: E402
from round2 import Sample, Series  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000
CHROMIUM = os.environ.get("CLAWVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]  # fmt: skip
CLAUDE_TRACE = "@mariozechner/claude-trace@1.0.9"
TICKS = os.sysconf("SC_CLK_TCK")

PAINTED_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


# ----- CPU of the process tree this bench started -----------------------------------------------
def _proc_table() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, utime+stime seconds) for every process visible in /proc."""
    out: dict[int, tuple[int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read().decode(errors="replace")
        except OSError:
            continue
        rest = raw[raw.rfind(")") + 2 :].split()
        # utime + stime, plus cutime + cstime: a closed tab's renderer is reaped by Chromium.
        out[int(name)] = (int(rest[1]), sum(int(x) for x in rest[11:15]) / TICKS)
    return out


def tree_cpu() -> float:
    """CPU seconds of this process, its live descendants (with the children they reaped) and
    the children it has waited for."""
    table = _proc_table()
    me = os.getpid()
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    total, todo = 0.0, list(kids.get(me, []))
    while todo:
        pid = todo.pop()
        total += table[pid][1]
        todo.extend(kids.get(pid, []))
    return total + time.process_time() + round2._children_cpu()


SERVERS: list[int] = []
"""Pids of the Streamlit servers running now (their CPU is also reported on its own)."""


def _servers_cpu() -> float:
    table = _proc_table()
    return sum(table[p][1] for p in SERVERS if p in table)


def measure(fn: Callable[[], Any], server_cpu: list[float] | None = None) -> Sample:
    """Wall and tree CPU of `fn`; `server_cpu` gets the CPU of servers that ran throughout."""
    before = set(SERVERS)
    c, s, t = tree_cpu(), _servers_cpu(), time.perf_counter()
    fn()
    wall = time.perf_counter() - t
    if server_cpu is not None and set(SERVERS) == before:
        server_cpu.append(_servers_cpu() - s)
    return Sample(wall, tree_cpu() - c)


# ----- servers and pages -------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit(
    script: Path, db_url: str, log: Path, extra_env: dict[str, str] | None = None
) -> Iterator[str]:
    """`streamlit run script` on a free loopback port until healthy; yields its URL."""
    port = _free_port()
    env = {**os.environ, "CLAWVIZ_DATABASE_URL": db_url, "CLAWVIZ_NO_SAMPLES": "1",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           **(extra_env or {})}  # fmt: skip
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
           "--global.developmentMode", "false"]  # fmt: skip
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    SERVERS.append(proc.pid)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode} (see {log})")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"streamlit did not answer at {url}") from None
                time.sleep(0.1)
        yield url
    finally:
        SERVERS.remove(proc.pid)
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "Nodes")
"""Chromium's own counters of the tab (CDP Performance.getMetrics): where the page's CPU went."""


def paint_streamlit(browser: Any, url: str, metrics: list[dict[str, float]] | None = None) -> None:
    """Open `url` in a new tab and wait until its Plotly markers are painted and the run ended;
    `metrics` gets the tab's Chromium counters (METRICS) at that moment."""
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(180_000)
        cdp = None
        if metrics is not None:
            cdp = ctx.new_cdp_session(pg)
            cdp.send("Performance.enable")
        pg.goto(url)
        pg.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point")
        pg.wait_for_selector(
            "[data-testid='stApp'][data-test-script-state='notRunning']", state="attached"
        )
        pg.evaluate(PAINTED_JS)
        if cdp is not None and metrics is not None:
            got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            metrics.append({k: got.get(k, 0.0) for k in METRICS})
    finally:
        ctx.close()


def paint_html(browser: Any, path: Path) -> None:
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        pg = ctx.new_page()
        pg.set_default_timeout(180_000)
        pg.goto(path.as_uri())
        pg.wait_for_selector("simple-conversation-view div.mt-8")
        pg.evaluate(PAINTED_JS)
    finally:
        ctx.close()


# ----- data --------------------------------------------------------------------------------------
def cli(*args: str) -> str:
    return round2.run_cli(round2.cli(*args))


def largest_episode(url: str) -> str:
    rows = json.loads(cli("--db", url, "--json", "episodes"))
    return max(rows, key=lambda r: (r["n_calls"], r["episode_id"]))["episode_id"]


def tree_json(url: str, episode: str, out: Path) -> Path:
    """The Episode page's tree figure of `episode` (default options) as plotly JSON."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from sqlmodel import Session

    from clawviz.figures.layout import tree_layout
    from clawviz.figures.tree import tree_figure
    from clawviz.jobs.analyse import episode_analysis
    from clawviz.settings import DEFAULT_SETTINGS
    from clawviz.store import db
    from clawviz.store.calls import load_calls

    with Session(db.get_engine(url)) as s:
        calls = load_calls(s, episode)
        analysis = episode_analysis(s, episode, DEFAULT_SETTINGS)
    path = out / "floor-tree.json"
    path.write_text(tree_figure(tree_layout(calls, analysis)).to_json())
    return path


def claude_trace(out: Path) -> Path | None:
    """The claude-trace CLI, installed from npm into `out` once (None when npm is missing)."""
    exe = out / "node_modules" / ".bin" / "claude-trace"
    if exe.exists():
        return exe
    if shutil.which("npm") is None:
        return None
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(out),
                    CLAUDE_TRACE], check=True, capture_output=True)  # fmt: skip
    return exe if exe.exists() else None


def _med(xs: list[float]) -> str:
    if not xs:
        return "-"
    return f"{round2.fmt(statistics.median(xs))} ({round2.fmt(min(xs))}-{round2.fmt(max(xs))})"


def _metrics(a: list[dict[str, float]], b: list[dict[str, float]]) -> str:
    def med(xs: list[dict[str, float]], k: str) -> float:
        return statistics.median(x[k] for x in xs)

    parts = []
    for k in METRICS:
        if k == "Nodes":
            parts.append(f"DOM nodes {med(a, k):.0f} -> {med(b, k):.0f}")
        else:
            parts.append(f"{k} {round2.fmt(med(a, k))} -> {round2.fmt(med(b, k))}")
    return ", ".join(parts)


def row(name: str, target: str, a: Series, b: Series, limit: float | None) -> dict[str, Any]:
    text, m = round2.fmt_ratio(a, b)
    return {
        "figure": name,
        "measured": f"{round2.fmt_series(b, 'wall')}; {round2.fmt_series(b)}",
        "baseline": f"{round2.fmt_series(a, 'wall')}; {round2.fmt_series(a)}",
        "ratio": text,
        "target": target,
        "met": "yes" if limit is not None and m <= limit else ("**NO**" if limit else ""),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="5 MB log, 2 repeats")
    p.add_argument("--mb", type=float, default=None, help="log size (default 39; --quick 5)")
    p.add_argument("--repeats", type=int, default=None, help="pairs per row (default 5)")
    p.add_argument("--rows", default="warm,fresh,log", help="which rows")
    args = p.parse_args(argv)
    mb = args.mb or (5 if args.quick else 39)
    repeats = args.repeats or (2 if args.quick else 5)
    out = ROOT / "bench" / "out" / ("quick" if args.quick else "full")
    dbdir = out / "db"
    dbdir.mkdir(parents=True, exist_ok=True)
    log = out / f"log-{mb:g}MB.jsonl"
    if gen.read_meta(log) is None or not log.exists():
        gen.write_log(log, int(mb * MB), seed=1 if mb <= 100 else 3)
    server_log = out / "browser-servers.log"
    trivial = ROOT / "bench" / "trivial_page.py"
    app = ROOT / "app.py"
    rows = []
    which = set(args.rows.split(","))

    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        url = round2.fresh_url(dbdir, "browser-warm.db")
        cli("--db", url, "ingest", str(log))
        episode = largest_episode(url)
        print(f"log {log.name} ({log.stat().st_size / MB:.0f} MB), episode {episode}")

        if "warm" in which:
            with (
                streamlit(trivial, url, server_log) as t_url,
                streamlit(app, url, server_log) as a_url,
            ):
                ep_url = f"{a_url}/episode?episode={episode}"
                paint_streamlit(browser, t_url)
                paint_streamlit(browser, ep_url)
                a, b, sa, sb = [], [], [], []
                ma: list[dict[str, float]] = []
                mb_: list[dict[str, float]] = []
                for _ in range(repeats):
                    a.append(measure(lambda: paint_streamlit(browser, t_url, ma), sa))
                    b.append(measure(lambda: paint_streamlit(browser, ep_url, mb_), sb))
                rows.append(row("Episode tree painted in Chromium, warm, vs a trivial Streamlit "
                                "page with one Plotly chart", "<= 1.2x", Series(a), Series(b),
                                1.2))  # fmt: skip
                rows[-1]["server"] = (
                    f"server cpu: trivial {_med(sa)}, episode {_med(sb)}; in the tab (Chromium "
                    f"counters, medians, trivial -> episode): {_metrics(ma, mb_)}"
                )
                print(rows[-1])

        if "floors" in which:
            floor = ROOT / "bench" / "floor_page.py"
            with (
                streamlit(trivial, url, server_log) as t_url,
                streamlit(floor, url, server_log, {"CLAWVIZ_FLOOR_PAGE": "frame"}) as f_url,
                streamlit(floor, url, server_log, {"CLAWVIZ_FLOOR_PAGE": "widgets"}) as w_url,
                streamlit(
                    floor,
                    url,
                    server_log,
                    {
                        "CLAWVIZ_FLOOR_PAGE": "widgets",
                        "CLAWVIZ_FLOOR_FIGURE": str(tree_json(url, episode, out)),
                    },
                ) as g_url,
                streamlit(app, url, server_log) as a_url,
            ):
                sides = {"trivial": t_url, "frame": f_url, "widgets": w_url, "tree": g_url,
                         "episode": f"{a_url}/episode?episode={episode}"}  # fmt: skip
                for u in sides.values():
                    paint_streamlit(browser, u)
                got: dict[str, list[Sample]] = {k: [] for k in sides}
                counters: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
                for _ in range(repeats):
                    for k, u in sides.items():
                        got[k].append(measure(lambda u=u, k=k: paint_streamlit(
                            browser, u, counters[k])))  # fmt: skip
                base = Series(got["trivial"])
                for k, label in (("frame", "trivial chart inside an app frame (navigation, "
                                  "sidebar)"), ("widgets", "the frame plus one of each element "
                                  "type of the Episode first view, no clawviz code"),
                                 ("tree", "the same with the Episode page's own tree figure "
                                  "and its selection wiring instead of the trivial chart"),
                                 ("episode", "the Episode page")):  # fmt: skip
                    rows.append(row(f"  floor, warm: {label}, vs the trivial page", "",
                                    base, Series(got[k]), None))  # fmt: skip
                    rows[-1]["server"] = _metrics(counters["trivial"], counters[k])
                    print(rows[-1])

        if "fresh" in which:
            a, b, sa, sb = [], [], [], []
            for i in range(repeats):
                with streamlit(trivial, url, server_log) as t_url:
                    a.append(measure(lambda t_url=t_url: paint_streamlit(browser, t_url), sa))
                f_url = round2.fresh_url(dbdir, f"browser-fresh-{i % 2}.db")
                cli("--db", f_url, "ingest", str(log))
                with streamlit(app, f_url, server_log) as a_url:
                    ep = f"{a_url}/episode?episode={episode}"
                    b.append(measure(lambda ep=ep: paint_streamlit(browser, ep), sb))
            rows.append(row("the same, first view on a fresh server right after ingest",
                            "<= 1.5x", Series(a), Series(b), 1.5))  # fmt: skip
            rows[-1]["server"] = f"server cpu: trivial {_med(sa)}, episode {_med(sb)}"
            print(rows[-1])

        if "log" in which:
            exe = claude_trace(ROOT / "bench" / "out" / "claude-trace")
            if exe is None:
                rows.append(
                    {"figure": "log -> first useful view vs claude-trace",
                     "measured": "n/a: npm is missing, claude-trace cannot be installed"}
                )  # fmt: skip
            else:
                a, b, c = [], [], []
                html = out / "claude-trace.html"

                def trace_view() -> None:
                    html.unlink(missing_ok=True)
                    subprocess.run([str(exe), "--generate-html", str(log), str(html), "--no-open"],
                                   check=True, capture_output=True, cwd=out)  # fmt: skip
                    paint_html(browser, html)

                name = (f"log -> first useful view vs claude-trace --generate-html plus paint, "
                        f"{log.stat().st_size / MB:.0f} MB")  # fmt: skip
                try:
                    for i in range(repeats):
                        a.append(measure(trace_view))
                        l_url = round2.fresh_url(dbdir, f"browser-log-{i % 2}.db")

                        def clawviz_view(l_url: str = l_url) -> None:
                            cli("--db", l_url, "ingest", str(log))
                            with streamlit(app, l_url, server_log) as a_url:
                                paint_streamlit(browser, f"{a_url}/episode?episode={episode}")

                        b.append(measure(clawviz_view))
                        f_url = round2.fresh_url(dbdir, f"browser-floor-{i % 2}.db")

                        def floor_view(f_url: str = f_url) -> None:
                            cli("--db", f_url, "ingest", str(log))
                            with streamlit(trivial, f_url, server_log) as t_url:
                                paint_streamlit(browser, t_url)

                        c.append(measure(floor_view))
                    rows.append(row(name, "faster (< 1x)", Series(a), Series(b), 1.0))
                    rows.append(row("  floor of that row: `clawviz ingest` + a trivial Streamlit "
                                    "page (server start + paint) vs claude-trace", "",
                                    Series(a), Series(c), None))  # fmt: skip
                except Exception as exc:
                    if type(exc).__name__ != "TimeoutError":
                        raise
                    # At 390 MB claude-trace's HTML is ~0.5 GB: Chromium may not load it at all.
                    size = html.stat().st_size / MB if html.exists() else 0
                    rows.append({"figure": name, "measured": f"n/a: claude-trace's HTML "
                                 f"({size:.0f} MB) did not paint within the page timeout "
                                 f"({type(exc).__name__})"})  # fmt: skip
                print(rows[-1])
        browser.close()

    print()
    print(
        "| figure | clawviz (wall; cpu) | baseline (wall; cpu) | ratio (cpu; wall) | target | met |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        if r.get("server"):
            print(f"  ({r['figure'][:40]}...: {r['server']})", file=sys.stderr)
    for r in rows:
        print("| " + " | ".join(str(r.get(k, "")) for k in
              ("figure", "measured", "baseline", "ratio", "target", "met")) + " |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
