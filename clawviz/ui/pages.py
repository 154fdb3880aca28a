"""The page registry: every page of the app, its file, title, icon and URL path, in menu order.

`app.py` builds `st.navigation` from it (`navigation`), and pages link to each other through it
(`page_file`), so a URL path is written once. Each `pages/*.py` file ends with
`run_page(__file__, main)`, the one entry that keeps a deep link inside the app frame
(`clawviz.ui.frame.require_app_frame`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from clawviz.ui.frame import require_app_frame

ROOT = Path(__file__).resolve().parents[2]
PAGES_DIR = ROOT / "pages"


@dataclass(frozen=True)
class PageSpec:
    """One page: `key` is its file stem and its URL path (`/episode?episode=...`); the default
    page is served at `/` instead (Streamlit ignores its path)."""

    key: str
    title: str
    icon: str
    default: bool = False

    @property
    def file(self) -> Path:
        return PAGES_DIR / f"{self.key}.py"

    @property
    def url_path(self) -> str:
        return self.key


PAGES: tuple[PageSpec, ...] = (
    PageSpec("runs", "Runs", ":material/table:", default=True),
    PageSpec("episode", "Episode", ":material/account_tree:"),
    PageSpec("workspace", "Workspace diff", ":material/difference:"),
    PageSpec("tasks", "Tasks", ":material/task:"),
    PageSpec("ingest", "Ingest", ":material/upload:"),
    PageSpec("settings", "Settings", ":material/tune:"),
)
PAGES_BY_KEY = {p.key: p for p in PAGES}

RUNS, EPISODE, WORKSPACE, TASKS, INGEST, SETTINGS = (p.key for p in PAGES)


def page_file(key: str) -> Path:
    """The file of a registered page (the target of `st.switch_page` / `st.page_link`)."""
    return PAGES_BY_KEY[key].file


def navigation() -> st.navigation:  # type: ignore[valid-type]
    """`st.navigation` over every registered page."""
    return st.navigation(
        [
            st.Page(p.file, title=p.title, icon=p.icon, url_path=p.url_path, default=p.default)
            for p in PAGES
        ]
    )


def run_page(file: str, main: Callable[[], None]) -> None:
    """A page file's entry: make sure the app frame ran, then render the page."""
    key = Path(file).stem
    if key not in PAGES_BY_KEY:
        raise RuntimeError(f"page {file} is not in clawviz.ui.pages.PAGES")
    require_app_frame()
    main()
