"""Runs first paint in Chromium on a store (issue 26): a fresh `streamlit run app.py` of a
checkout, then the time from `goto` until the episodes table and the first chart are drawn.

`python3 bench/views_chromium.py --repo . --db URL [--repeats 3]`
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(repo: Path, url: str) -> tuple[subprocess.Popen, str]:
    port = _port()
    env = {**os.environ, "CLAWVIZ_DATABASE_URL": url, "CLAWVIZ_NO_SAMPLES": "1",
           "PYTHONPATH": str(repo)}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/_stcore/health", timeout=1)
            return proc, base
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repo", type=Path, required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    from playwright.sync_api import sync_playwright

    table, chart = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for _ in range(a.repeats):
            proc, base = _serve(a.repo.resolve(), a.db)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.set_default_timeout(600_000)
                t = time.perf_counter()
                page.goto(base + "/")
                page.wait_for_selector("[data-testid='stDataFrame'] canvas")
                table.append(time.perf_counter() - t)
                page.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot")
                chart.append(time.perf_counter() - t)
                page.close()
            finally:
                proc.terminate()
                proc.wait(timeout=30)
        browser.close()
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    print(f"table {med(table):.1f} s ({min(table):.1f}-{max(table):.1f}), first chart "
          f"{med(chart):.1f} s ({min(chart):.1f}-{max(chart):.1f}); n={a.repeats}")  # fmt: skip


if __name__ == "__main__":
    main()
