"""Runs on a 100,000-episode store in Chromium (issue 26 §3): the page opens on one page of
rows, pages on, and a row click opens its episode.

The store is built by the bench generator (`python3 bench/views.py build DIR --episodes 100000`,
a few minutes and ~4 GB), so this test runs in the bench and is kept out of CI: it is skipped
unless `CLAWVIZ_BENCH_STORE` names that store's URL (bench/README.md, "Issue 26, views").
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import click_table_row, start_app, stop_app, wait_for_app_run

STORE = os.environ.get("CLAWVIZ_BENCH_STORE")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.bench,
    pytest.mark.skipif(not STORE, reason="bench only: CLAWVIZ_BENCH_STORE names a 100k store"),
]


def _count(url: str) -> int:
    from sqlalchemy import create_engine, text

    with create_engine(url).connect() as con:
        return int(con.execute(text("SELECT COUNT(*) FROM episode")).scalar_one())


def test_runs_on_a_100k_store_shows_a_page_and_a_click_opens_the_episode(page, tmp_path):
    n = _count(STORE)
    assert n >= 100_000
    server = start_app(STORE, tmp_path / "server.log")
    try:
        page.goto(server.url + "/")
        page.get_by_role("heading", name="Runs").wait_for()
        caption = page.get_by_text(re.compile(r"of [\d,]+ episodes · click a row"))
        caption.wait_for()
        wait_for_app_run(page)
        assert caption.inner_text().startswith(f"{n:,} of {n:,} episodes")
        page.get_by_text(f"rows 1–25 of {n:,}").wait_for()
        page.get_by_role("button", name="Next").click()
        page.get_by_text(f"rows 26–50 of {n:,}").wait_for()
        wait_for_app_run(page)
        click_table_row(page, page.get_by_test_id("stDataFrame").first, 0)
        page.wait_for_url("**/episode?episode=*")
        episode = parse_qs(urlparse(page.url).query)["episode"][0]
        page.locator("h1").filter(has_text=episode).first.wait_for()
    finally:
        stop_app(server.process)
