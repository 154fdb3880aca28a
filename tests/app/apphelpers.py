"""AppTest helpers shared by the app test modules (imported as a sibling module)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 120
"""Generous: the suite may share two cores with other work; a page run is ~1 s when idle."""


def open_page(page: str | None = None, **query: str) -> AppTest:
    """Run the app (entrypoint first, as a browser would), then switch to `page`."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if page:
        at.switch_page(page).run()
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
