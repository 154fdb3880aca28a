"""Deep links stay inside the app frame (menu, sidebar, settings, analysis).

Streamlit 1.67 treats an app with a `pages/` folder as a legacy multipage app until app.py first
calls `st.navigation`: a deep link (`/episode?episode=...`) opened first on a fresh server would
run its page file alone. `require_app_frame` is the one place that detects this and re-runs the
session through app.py. It reads and clears `PagesManager.uses_pages_directory`, a private
Streamlit class attribute (what `st.navigation` itself clears); requirements.txt pins Streamlit
to the tested range, and the import is guarded so another version fails with a clear message
instead of a deep link silently losing the frame. Only `clawviz.ui.pages.run_page` calls it.
"""

from __future__ import annotations

import streamlit as st

TESTED_STREAMLIT = ">=1.67,<1.68"
KEY_FRAME_REDIRECTED = "frame_redirected"
"""Set once a page run directly by Streamlit's legacy pages/ mode was re-run through app.py."""


def _pages_manager() -> type:
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError as exc:  # pragma: no cover - depends on the installed Streamlit
        raise RuntimeError(
            f"clawviz needs streamlit{TESTED_STREAMLIT} (streamlit.runtime.pages_manager is "
            f"missing in {st.__version__}); install requirements.txt"
        ) from exc
    if not hasattr(PagesManager, "uses_pages_directory"):  # pragma: no cover
        raise RuntimeError(
            f"clawviz needs streamlit{TESTED_STREAMLIT}: PagesManager.uses_pages_directory is "
            f"gone in {st.__version__}, so deep links would lose the app frame"
        )
    return PagesManager


def require_app_frame() -> None:
    """Re-run through app.py when Streamlit ran a page file directly (legacy pages/ mode)."""
    manager = _pages_manager()
    if not manager.uses_pages_directory:  # type: ignore[attr-defined]
        return
    manager.uses_pages_directory = False  # type: ignore[attr-defined]
    # Once per session: AppTest resets the flag before every run, and a rerun there would
    # swallow the widget event that triggered the run.
    if not st.session_state.get(KEY_FRAME_REDIRECTED):
        st.session_state[KEY_FRAME_REDIRECTED] = True
        st.rerun()
