"""AppTest helpers shared by the app test modules (imported as a sibling module)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
DEFAULT_PAGE = "pages/runs.py"
"""What app.py shows at `/`."""
TIMEOUT = 120
"""Generous: the suite may share two cores with other work; a page run is ~1 s when idle."""


def open_page(page: str | None = None, **query: str) -> AppTest:
    """Run the app (entrypoint first, as a browser would), then switch to `page`."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    # The page's first run of its own goes through the frame's one redirect
    # (clawviz.ui.frame.require_app_frame: AppTest, unlike the server, re-enters Streamlit's
    # legacy pages/ mode before every run), which would swallow that run's widget event: the
    # first click after opening a page once did nothing. Let it happen here, as the end of
    # the page's first visit.
    at.switch_page(page or DEFAULT_PAGE).run()
    return at


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
