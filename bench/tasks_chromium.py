"""The Tasks page in Chromium (issue 26 §3): its first view, then a rerun (the `r` key, what a
filter, a sort or a sign-off costs) timed from the key press until the script run has ended.

    python3 bench/tasks_chromium.py --repo . --db sqlite:////tmp/v/store-100000.db \\
        [--base-repo BASE --base-db URL] [--rounds 2] [--reruns 5]

Each round serves each checkout fresh (`streamlit run app.py`, 1280x800 headless Chromium) and
alternates them; a rerun is timed in the page (performance.now() from the key press until
`data-test-script-state` goes from running to notRunning). Medians and spreads.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from views_chromium import _serve  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
WATCH_JS = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  let ran = false;
  window.__cvTook = null;
  const obs = new MutationObserver(() => {
    const state = app.getAttribute("data-test-script-state");
    if (state === "running") ran = true;
    if (ran && state === "notRunning") {
      obs.disconnect();
      window.__cvTook = performance.now() - window.__cvStart;
    }
  });
  obs.observe(app, {attributes: true});
  window.__cvStart = performance.now();
}"""


def _one(browser, repo: Path, db: str, reruns: int) -> tuple[float, list[float]]:
    proc, base = _serve(repo, db)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        t = time.perf_counter()
        page.goto(base + "/tasks")
        page.wait_for_selector("h1:has-text('Tasks')", timeout=180_000)
        page.wait_for_selector(IDLE, state="attached", timeout=180_000)
        first = time.perf_counter() - t
        page.wait_for_timeout(500)
        times = []
        for _ in range(reruns):
            page.evaluate(WATCH_JS)
            page.keyboard.press("r")
            page.wait_for_function("() => window.__cvTook !== null", timeout=180_000)
            times.append(page.evaluate("() => window.__cvTook") / 1000)
            page.wait_for_timeout(300)
        page.close()
        return first, times
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", type=Path, default=Path("."))
    ap.add_argument("--db", required=True)
    ap.add_argument("--base-repo", type=Path)
    ap.add_argument("--base-db", help="the base's store (default: --db)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--reruns", type=int, default=5)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    runs = {"this": (args.repo, args.db)}
    if args.base_repo:
        runs = {"base": (args.base_repo, args.base_db or args.db), **runs}
    got: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in runs}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        for r in range(args.rounds):
            for name, (repo, db) in runs.items():
                first, reruns = _one(browser, repo.resolve(), db, args.reruns)
                got[name][0].append(first)
                got[name][1].extend(reruns)
                print(f"round {r} {name}: first view {first:.1f} s, reruns "
                      + ", ".join(f"{x:.2f}" for x in reruns), flush=True)  # fmt: skip
        browser.close()
    for name, (firsts, reruns) in got.items():
        print(
            f"{name}: first view {statistics.median(firsts):.1f} s "
            f"({min(firsts):.1f}-{max(firsts):.1f}); rerun {statistics.median(reruns):.2f} s "
            f"({min(reruns):.2f}-{max(reruns):.2f}), {len(reruns)} reruns"
        )


if __name__ == "__main__":
    main()
