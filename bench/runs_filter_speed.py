"""Issue 25's Runs row in headless Chromium: a filter change until the table is repainted, on a
big store, interleaved (A B A B ...) with the same change on a small store as the floor.

    python3 bench/runs_filter_speed.py --big URL --small URL [--repeats 7]

Each server is a fresh `streamlit run app.py` (warm: Runs painted once before timing). One
sample: with the Runs page's Filters popover open, pick `dropped` in Status (or, the next
sample, take it out again with Backspace), from the click until the count line above the table
("N of M episodes") shows the new count, the script run has ended and two animation frames
have passed. Both directions are samples. Wall time, ms; median (min-max) over the repeats and
the per-pair ratio big / small, median (min-max).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from views_chromium import _serve  # noqa: E402

COUNT_JS = """() => {
  const el = [...document.querySelectorAll('[data-testid="stCaptionContainer"], p, div')]
    .find((e) => /^\\s*[\\d,]+ of [\\d,]+ episodes/.test(e.textContent) && e.children.length <= 1);
  return el ? el.textContent.trim() : null;
}"""
DONE_JS = """([before]) => {
  const el = [...document.querySelectorAll('[data-testid="stCaptionContainer"], p, div')]
    .find((e) => /^\\s*[\\d,]+ of [\\d,]+ episodes/.test(e.textContent) && e.children.length <= 1);
  const app = document.querySelector('[data-testid="stApp"]');
  return !!el && el.textContent.trim() !== before
    && app.getAttribute('data-test-script-state') === 'notRunning';
}"""
FRAMES_JS = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


def _status(page):
    status = page.get_by_test_id("stMultiSelect").filter(has_text="Status")
    if not status.is_visible():
        page.get_by_role("button", name="Filters").click()
        status.wait_for()
    return status


def _settle(page) -> None:
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']")
    page.wait_for_timeout(400)


def change(page, add: bool) -> float:
    """One filter change, timed (seconds)."""
    status = _status(page)
    before = page.evaluate(COUNT_JS)
    status.locator("input").click()
    if add:
        option = page.get_by_role("option", name="dropped", exact=True)
        option.wait_for()
        t0 = time.perf_counter()
        option.click()
    else:
        t0 = time.perf_counter()
        page.keyboard.press("Backspace")
    page.wait_for_function(DONE_JS, arg=[before], polling="raf", timeout=600_000)
    page.evaluate(FRAMES_JS)
    took = time.perf_counter() - t0
    _settle(page)
    return took


def _open(browser, base: str):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(600_000)
    page.goto(base + "/")
    page.wait_for_selector("[data-testid='stDataFrame'] canvas")
    _settle(page)
    change(page, True)  # warm: each way once
    change(page, False)
    return page


def _fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):,.1f} ({min(xs):,.1f}-{max(xs):,.1f})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--big", required=True)
    p.add_argument("--small", required=True)
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args()
    from playwright.sync_api import sync_playwright

    load0 = os.getloadavg()[0]
    big_ms: list[float] = []
    small_ms: list[float] = []
    procs: list[subprocess.Popen] = []
    try:
        big_proc, big_base = _serve(ROOT, a.big)
        small_proc, small_base = _serve(ROOT, a.small)
        procs = [big_proc, small_proc]
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
            )
            big_page, small_page = _open(browser, big_base), _open(browser, small_base)
            for i in range(a.repeats):
                add = i % 2 == 0
                big_ms.append(1000 * change(big_page, add))
                small_ms.append(1000 * change(small_page, add))
            browser.close()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
    ratios = [b / s for b, s in zip(big_ms, small_ms, strict=True)]
    print(f"big store: {_fmt(big_ms)} ms; small store (same run): {_fmt(small_ms)} ms; "
          f"ratio {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}); "
          f"n={a.repeats}; load average {load0:.1f} -> {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
