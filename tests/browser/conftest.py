"""Shared browser-test helpers: a real `streamlit run app.py` on a free port, headless Chromium.

Browser tests are marked `browser`; they are skipped when Playwright or Chromium is missing,
unless CLAWVIZ_REQUIRE_BROWSER is set (CI), where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CLAWVIZ_CHROMIUM", "/usr/bin/chromium")
TIMEOUT_MS = 150_000
"""Generous: the first load imports plotly and pandas and renders plotly.js on a busy machine."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@dataclass
class AppServer:
    """A running `streamlit run app.py` and the URL it serves."""

    url: str
    process: subprocess.Popen
    log: Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_health(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout}s")


def start_app(
    database_url: str, log: Path, *, extra_env: dict[str, str] | None = None
) -> AppServer:
    """Start the app on a free port against `database_url` and wait until it is healthy."""
    port = free_port()
    env = {
        **os.environ,
        "CLAWVIZ_DATABASE_URL": database_url,
        "CLAWVIZ_NO_SAMPLES": "1",
        **(extra_env or {}),
    }
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"),
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
        "--global.developmentMode", "false",
    ]  # fmt: skip
    out = log.open("wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, proc)
    except Exception:
        stop_app(proc)
        raise
    return AppServer(url, proc, log)


def stop_app(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def wait_for_app_run(page, timeout: float = TIMEOUT_MS) -> None:
    """Wait until the script run triggered by the last interaction has finished."""
    page.wait_for_selector(
        "[data-testid='stApp'][data-test-connection-state='CONNECTED']",
        timeout=timeout,
        state="attached",
    )
    page.wait_for_selector(
        "[data-testid='stApp'][data-test-script-state='notRunning']",
        timeout=timeout,
        state="attached",
    )
    page.wait_for_timeout(300)


@pytest.fixture(scope="session")
def chromium_browser() -> Iterator:
    """Headless Debian Chromium driven by Playwright (skipped if either is missing)."""
    required = bool(os.environ.get("CLAWVIZ_REQUIRE_BROWSER"))
    try:
        from playwright import sync_api
    except ImportError:
        if required:
            raise
        pytest.skip("playwright is not installed")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        if required:
            pytest.fail(f"CLAWVIZ_REQUIRE_BROWSER is set but there is no Chromium at {CHROMIUM}")
        pytest.skip(f"no Chromium at {CHROMIUM}")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def app_server(sample_db_url: str, tmp_path_factory) -> Iterator[AppServer]:
    """The app served from the session's sample store."""
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    server = start_app(sample_db_url, log)
    try:
        yield server
    finally:
        stop_app(server.process)


@pytest.fixture
def page(chromium_browser) -> Iterator:
    context = chromium_browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    try:
        yield pg
    finally:
        context.close()


SCROLL_MAIN_JS = "(dy) => document.querySelector(\"[data-testid='stMain']\").scrollBy(0, dy)"
"""Scroll the app's main column (the element that scrolls in Streamlit, not the window)."""


def settled_point(page, locate: Callable[[], dict]) -> dict:
    """Hover the point `locate()` finds ({x, y, ...}: viewport coordinates) once it is in
    sight and two readings 300 ms apart agree, and return it.

    Content above it can still be arriving after a run ends (an expander just opened, a cold
    server's first run): a click at the place it had a moment ago lands on something else, or
    on nothing when it has been pushed below the window (it is scrolled back into sight)."""
    deadline = time.monotonic() + 30
    node = locate()
    while True:
        if not 80 <= node["y"] < page.viewport_size["height"] - 20:
            # Out of sight (or under the app's header): scroll it to mid-window.
            page.evaluate(SCROLL_MAIN_JS, node["y"] - page.viewport_size["height"] / 2)
        page.wait_for_timeout(300)
        settled = locate()
        if (settled["x"], settled["y"]) == (node["x"], node["y"]):
            page.mouse.move(node["x"], node["y"])
            page.wait_for_timeout(300)
            hovered = locate()
            if (hovered["x"], hovered["y"]) == (node["x"], node["y"]):
                return node
            settled = hovered
        if time.monotonic() > deadline:
            raise AssertionError(f"the point never stopped moving: {node} then {settled}")
        node = settled


CLICK_ATTEMPTS = 3
"""How many times `click_at` clicks a node before it fails (see there)."""

URL_NAMES_CALL_JS = "(c) => new URL(window.location.href).searchParams.get('call') === c"


def click_at(page, locate: Callable[[], dict], timeout: float | None = None) -> dict:
    """Click the tree node that `locate()` finds ({x, y, call}: viewport coordinates and its
    call id) as a person does (hover, then click), and wait until the address bar names its
    call. Returns the node clicked (where it settled: `settled_point`).

    On a loaded two-core machine a click was lost twice, in one CI run and one local
    PostgreSQL run (the first click on a fresh server; the node had stood still for 600 ms
    before it, and the address bar never changed in 60 s). It did not happen again in about
    ten runs alone, under load or in the suite's order, so its cause is unknown: most likely
    the chart was redrawn between the check and the click.
    A person would click again, and so does this: at most CLICK_ATTEMPTS clicks, each waited
    on for a share of `timeout`, with a warning for each click that did nothing (shown in the
    test summary). A click that never selects its call still fails."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    total = timeout if timeout is not None else TIMEOUT_MS
    share = total / CLICK_ATTEMPTS
    for attempt in range(1, CLICK_ATTEMPTS + 1):
        node = settled_point(page, locate)
        page.mouse.click(node["x"], node["y"])
        try:
            page.wait_for_function(URL_NAMES_CALL_JS, arg=node["call"], timeout=share)
            return node
        except PlaywrightTimeout:
            if attempt == CLICK_ATTEMPTS:
                raise
            # A run the click started may still be on its way: let it finish before a
            # second click, which could otherwise toggle the selection off again.
            wait_for_app_run(page)
            if page.evaluate(URL_NAMES_CALL_JS, node["call"]):
                return node
            after = locate()
            warnings.warn(
                f"click {attempt} on call {node['call']} at ({node['x']:.0f}, {node['y']:.0f}) "
                f"did not select it within {share / 1000:.0f} s (the node is now at "
                f"({after['x']:.0f}, {after['y']:.0f})); clicking again",
                stacklevel=2,
            )
    raise AssertionError("unreachable")


def pick_runs_filter(page, label: str, option: str) -> None:
    """On Runs, pick `option` in the `label` multiselect of the Filters popover (opened with its
    button), then close the option list with Escape, as a person does."""
    page.get_by_role("button", name="Filters").click()
    box = page.get_by_test_id("stMultiSelect").filter(has_text=label)
    box.locator("input").click()
    page.get_by_role("option", name=option, exact=True).click()
    page.keyboard.press("Escape")


def click_table_row(page, grid, row: int) -> None:
    """Tick row `row` of a Streamlit table by its row marker, as a person does: the grid is a
    canvas with no DOM cells, so the click goes to the marker's place (header and rows 35 px
    high; the marker is in the first 30 px) once the table has settled there."""

    def marker() -> dict:
        box = grid.bounding_box()
        return {"x": box["x"] + 15, "y": box["y"] + 35 + 35 * row + 17}

    grid.scroll_into_view_if_needed()
    point = settled_point(page, marker)
    page.mouse.click(point["x"], point["y"])
