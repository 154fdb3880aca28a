"""Screenshot of the Episode page on the recorded OpenClaw 2026.9.6 Gateway session.

    python3 -m tests.harness.screenshot_openclaw [--out docs/screenshot-openclaw-episode.png]

Ingests `tests/data/recorded/openclaw-2026.9.6/gateway-session/exchanges.jsonl.gz` (with a
reward of 1.0) into a temporary store, starts `streamlit run app.py` on a free loopback port,
opens the episode with its first sub-agent completion turn selected in headless Chromium
(Playwright, `/usr/bin/chromium`, no background networking), saves the top of the page (header,
reasons, tree) and, after opening "Ignored for matching", the call inspector, then stops the
app by its PID.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from sqlmodel import Session, select

REPO = Path(__file__).resolve().parents[2]
REC = REPO / "tests" / "data" / "recorded" / "openclaw-2026.9.6" / "gateway-session"
EPISODE = "openclaw-gateway-session"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tests.harness.screenshot_openclaw")
    ap.add_argument("--out", default=str(REPO / "docs" / "screenshot-openclaw-episode.png"))
    ap.add_argument("--inspector", default=str(REPO / "docs" / "screenshot-openclaw-inspector.png"))
    a = ap.parse_args(argv)
    sys.path.insert(0, str(REPO / "tests" / "browser"))
    from conftest import CHROMIUM, CHROMIUM_ARGS, start_app, stop_app, wait_for_app_run
    from playwright.sync_api import sync_playwright

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine
    from clawviz.store.models import CallRow

    tmp = Path(tempfile.mkdtemp(prefix="clawviz-shot-"))
    try:
        shutil.copy(REC / "exchanges.jsonl.gz", tmp / "exchanges.jsonl.gz")
        (tmp / "results.jsonl").write_text(json.dumps({"episode_id": EPISODE, "reward": 1.0}))
        url = f"sqlite:///{tmp / 'store.db'}"
        with Session(get_engine(url)) as s:
            ingest_paths([tmp / "exchanges.jsonl.gz", tmp / "results.jsonl"], session=s)
            s.commit()
            ensure_analysis(s)
            calls = {c.line: c.call_id for c in s.exec(select(CallRow))}
        app = start_app(url, tmp / "app.log")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1500, "height": 1100})
                page.goto(f"{app.url}/episode?episode={EPISODE}&call={calls[11]}")
                page.wait_for_selector(
                    "[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point",
                    timeout=150_000,
                )
                wait_for_app_run(page)
                page.screenshot(path=a.out)
                page.get_by_text("Ignored for matching").first.click()
                # Opening the fold reruns the page, which then draws its table.
                page.get_by_test_id("stDataFrame").first.wait_for(timeout=150_000)
                wait_for_app_run(page)
                page.screenshot(path=a.inspector)
                browser.close()
        finally:
            stop_app(app.process)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(a.out, a.inspector)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
