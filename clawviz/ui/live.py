"""The Runs page's live indicator: episodes being recorded right now, refreshed on its own.

A fragment polls two aggregate reads every few seconds; when something was ingested since
(`clawviz record --db`, or any ingest), it clears the caches and reruns the app, so new
episodes and calls appear without a reload.
"""

from __future__ import annotations

import time

import streamlit as st
from sqlmodel import Session

from clawviz.store import LIVE_WINDOW_S, live_state
from clawviz.ui.state import _engine_for, clear_caches

POLL_S = 3.0
KEY_STAMP = "live_store_stamp"


@st.fragment(run_every=POLL_S)
def indicator(url: str) -> None:
    with Session(_engine_for(url)) as s:
        now = live_state(s, time.time())
    seen = st.session_state.get(KEY_STAMP)
    st.session_state[KEY_STAMP] = now.stamp
    if seen is not None and seen != now.stamp:
        clear_caches()
        st.rerun(scope="app")
    if now.live:
        shown = ", ".join(now.live[:5]) + (
            f" and {len(now.live) - 5} more" if len(now.live) > 5 else ""
        )
        st.caption(
            f":red[●] live: {len(now.live)} episode(s) with a call in the last "
            f"{LIVE_WINDOW_S:.0f} s ({shown}); this page refreshes as calls arrive."
        )
