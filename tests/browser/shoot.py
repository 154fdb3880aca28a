"""Screenshots of every page on the sample store: `python3 tests/browser/shoot.py OUTDIR`.

Starts `streamlit run app.py` on a fresh store of sample_logs/ (a temporary SQLite file), opens
each page in headless Chromium as a person would (the Episode page with a node of the tree
clicked), saves OUTDIR/<page>.png and stops the server. Used to refresh the docs/ screenshots.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from conftest import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO,
    start_app,
    stop_app,
    wait_for_app_run,
)
from test_episode_click import click_node  # noqa: E402

EPISODE = "t0001-openclaw-a2"
TASK = "task_0001"
VIEWPORT = {"width": 1500, "height": 1100}


def build_store(folder: Path) -> str:
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine

    url = f"sqlite:///{folder / 'samples.db'}"
    with Session(get_engine(url)) as s:
        ingest_paths([REPO / "sample_logs"], session=s)
        ensure_analysis(s)
    return url


def call_id(url: str, episode: str, line: int) -> str:
    """The id of `episode`'s call at log line `line` (ids hash the file, so they are looked up)."""
    from sqlmodel import Session, select

    from clawviz.store.db import get_engine
    from clawviz.store.models import CallRow

    with Session(get_engine(url)) as s:
        row = s.exec(
            select(CallRow).where(CallRow.episode_id == episode, CallRow.line == line)
        ).one()
        return row.call_id


# (name, episode, call's log line, query beyond episode and call, heading scrolled to the top)
DEEP_SHOTS = (
    ("episode-dropped", "t0001-claude-code-a4", 5, "", None),
    ("episode-retry", "t0001-claude-code-a1", 10, "", None),
    ("call-diff", "t0001-openclaw-a2", 12, "&panel=request", "Call inspector"),
    ("tokens", "t0001-openclaw-a2", 4, "&panel=tokens", "Call inspector"),
    (
        "compare",
        "t0001-openclaw-a2",
        0,
        "&compare=t0001-openclaw-a1",
        "Compare with another episode",
    ),
)


def settle(page) -> None:
    wait_for_app_run(page)
    page.wait_for_timeout(800)
    wait_for_app_run(page)


def shoot(base: str, out: Path, url: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    saved: list[Path] = []

    def save(page, name: str) -> None:
        path = out / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        saved.append(path)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.set_default_timeout(150_000)
        page.goto(base + "/")
        page.get_by_test_id("stDataFrame").first.wait_for()
        settle(page)
        save(page, "runs")

        page.goto(f"{base}/episode?episode={EPISODE}")
        page.wait_for_selector("[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point")
        settle(page)
        click_node(page, -2, timeout=150_000)
        settle(page)
        save(page, "episode")

        for name, episode, line, query, heading in DEEP_SHOTS:
            call = f"&call={call_id(url, episode, line)}" if line else ""
            page.goto(f"{base}/episode?episode={episode}{call}{query}")
            page.wait_for_selector(
                "[data-testid='stPlotlyChart'] .js-plotly-plot .scatterlayer .point"
            )
            settle(page)
            if heading:
                page.get_by_role("heading", name=heading).first.evaluate(
                    "(h) => h.scrollIntoView({block: 'start'})"
                )
                page.wait_for_timeout(300)
            save(page, name)

        page.goto(f"{base}/tasks?task={TASK}")
        page.get_by_role("heading", name=TASK).wait_for()
        page.get_by_role("tab", name="Attempts", exact=True).click()
        settle(page)
        save(page, "tasks")

        for name, path in (("workspace", f"/workspace?episode={EPISODE}"),
                           ("settings", "/settings")):  # fmt: skip
            page.goto(base + path)
            page.locator("h1").first.wait_for()
            settle(page)
            save(page, name)

        # Ingest, with a report: the sample folder again (one click; "already ingested").
        page.goto(base + "/ingest")
        page.get_by_role("tab", name="Server-side path").click()
        page.get_by_label("File or folder on the server").fill(str(REPO / "sample_logs"))
        page.get_by_role("button", name="Ingest path").click()
        page.get_by_role("heading", name="Report").wait_for()
        settle(page)
        save(page, "ingest")
        browser.close()
    return saved


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="clawviz-shoot-") as tmp:
        url = build_store(Path(tmp))
        server = start_app(url, Path(tmp) / "server.log")
        try:
            for path in shoot(server.url, out, url):
                print(path)
        finally:
            stop_app(server.process)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
