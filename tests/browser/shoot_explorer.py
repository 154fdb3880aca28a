"""Walk issue 25's two journeys on the sample store at 1280x720 and save their screenshots:
`python3 tests/browser/shoot_explorer.py OUTDIR`.

Starts `streamlit run app.py` on a fresh store of sample_logs/ (as tests/browser/shoot.py does)
and, in headless Chromium, clicks as a person would:
- "debug why an episode was dropped": Runs -> filter status dropped -> one click on the row ->
  the Episode explorer -> the reason's ⚑ button -> the failed call in the inspector; then the
  Timeline view of an episode with parallel sub-agents;
- "review a task before sign-off": Tasks -> the task -> Attempts -> an attempt's episode in the
  explorer -> back to the task -> a decision, saved;
then `python3 -m clawviz share` of the dropped episode, opened from disk (file://) with a find,
and a share file of the 254-call bench/bigep.py episode with its minimap.
Saves OUTDIR/<name>.png; docs/EXPLORER.md shows them (copied to docs/screenshot-<name>.png).
"""

from __future__ import annotations

import subprocess
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
    click_table_row,
    start_app,
    stop_app,
    wait_for_app_run,
)
from shoot import build_store  # noqa: E402
from test_debug_dropped_journey import DROPPED, _filter_dropped  # noqa: E402

VIEWPORT = {"width": 1280, "height": 720}
DROPPED_EPISODE = "t0001-claude-code-a4"
TIMELINE_EPISODE = "t0001-openclaw-a2"
TASK = "task_0001"
INSPECTOR = '[data-testid="call-inspector"]'


def _explorer_ready(page) -> None:
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
    wait_for_app_run(page)
    page.wait_for_timeout(600)


def debug_journey(page, base: str, save) -> None:
    page.goto(base + "/")
    page.get_by_role("heading", name="Runs").wait_for()
    wait_for_app_run(page)
    _filter_dropped(page)
    page.get_by_role("heading", name="Runs").click()  # close the Filters popover
    page.wait_for_timeout(500)
    save(page, "journey-runs-dropped")
    row = [e["episode_id"] for e in DROPPED].index(DROPPED_EPISODE)
    click_table_row(page, page.get_by_test_id("stDataFrame").first, row)
    page.wait_for_url(f"**/episode?episode={DROPPED_EPISODE}")
    _explorer_ready(page)
    page.get_by_test_id("episode-explorer").locator(
        "button.cvx-reason", has_text="ended_in_error"
    ).click()
    page.wait_for_timeout(400)
    save(page, "explorer")
    page.goto(f"{base}/episode?episode={TIMELINE_EPISODE}")
    _explorer_ready(page)
    page.get_by_test_id("explorer-view-timeline").click()
    page.wait_for_timeout(400)
    bars = page.locator(".cvx-bar")
    bars.nth(bars.count() // 2).click()
    page.wait_for_timeout(400)
    save(page, "timeline")


def review_journey(page, base: str, save) -> None:
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Tasks").click()
    page.get_by_role("heading", name="Tasks").wait_for()
    wait_for_app_run(page)
    click_table_row(page, page.get_by_test_id("stDataFrame").first, 0)
    page.get_by_role("heading", name=TASK).wait_for()
    wait_for_app_run(page)
    page.get_by_role("tab", name="Attempts", exact=True).click()
    page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot").first.wait_for()
    wait_for_app_run(page)
    attempts = page.get_by_test_id("stDataFrame").filter(has_text="episode").first
    click_table_row(page, attempts, 0)
    wait_for_app_run(page)
    link = page.get_by_role("link", name="Episode tree of", exact=False).first
    link.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    save(page, "journey-task-attempts")
    link.click()
    _explorer_ready(page)
    save(page, "journey-task-episode")
    page.go_back()
    page.get_by_role("heading", name=TASK).wait_for()
    wait_for_app_run(page)
    form = page.get_by_test_id("stForm")
    form.get_by_text("accept", exact=True).click()
    page.get_by_label("Reviewer").fill("Dana Reviewer")
    page.get_by_label("Note").fill("attempts read in the explorer; checker and rubric agree")
    page.get_by_role("button", name="Save decision").click()
    wait_for_app_run(page)
    page.get_by_text("Saved: accept by Dana Reviewer.").wait_for(timeout=30_000)
    page.get_by_text("Saved: accept by Dana Reviewer.").scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    save(page, "journey-signoff")


def share_files(page, url: str, tmp: Path, save) -> None:
    out = tmp / "shared.html"
    subprocess.run(
        [sys.executable, "-m", "clawviz", "share", DROPPED_EPISODE, "--db", url, "--out", str(out)],
        cwd=REPO, check=True,
    )  # fmt: skip
    page.goto(out.as_uri())
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
    page.keyboard.press("f")  # the next failed call
    page.locator('[data-testid="explorer-find"]').fill("error")
    page.wait_for_timeout(300)
    save(page, "share")

    sys.path.insert(0, str(REPO / "bench"))
    from bigep import big_episode

    from clawviz.figures.explorer import build_payload
    from clawviz.figures.explorer.assets import share_html
    from clawviz.recon.pipeline import analyse_episode

    calls = [p.call for p in big_episode(254)]
    big = tmp / "big.html"
    analysis = analyse_episode(calls, reward=None)
    big.write_text(share_html(build_payload("bigep-254", calls, analysis)), encoding="utf-8")
    page.goto(big.as_uri())
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
    m = page.get_by_test_id("explorer-minimap").bounding_box()
    page.mouse.click(m["x"] + m["width"] * 0.62, m["y"] + m["height"] / 2)
    page.wait_for_timeout(300)
    page.locator("g.cvx-node.cvx-st-auxiliary").first.click()
    page.wait_for_timeout(300)
    save(page, "explorer-minimap")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    def save(page, name: str) -> None:
        path = out / f"{name}.png"
        page.screenshot(path=str(path))
        print(path, flush=True)

    with tempfile.TemporaryDirectory(prefix="clawviz-shoot-") as tmp:
        url = build_store(Path(tmp))
        server = start_app(url, Path(tmp) / "server.log")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport=VIEWPORT)
                page.set_default_timeout(150_000)
                debug_journey(page, server.url, save)
                review_journey(page, server.url, save)
                share_files(page, url, Path(tmp), save)
                browser.close()
        finally:
            stop_app(server.process)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
