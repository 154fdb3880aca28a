"""AppTest fixtures: fresh Streamlit caches and a way to point the app at a store."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def _fresh_streamlit_caches():
    st.cache_data.clear()
    yield
    st.cache_data.clear()


@pytest.fixture
def on_store(monkeypatch) -> Callable[..., None]:
    """Select the store the app opens (never the user's default store)."""

    def use(url: str, *, samples: bool = False) -> None:
        monkeypatch.setenv("CLAWVIZ_DATABASE_URL", url)
        if samples:
            monkeypatch.delenv("CLAWVIZ_NO_SAMPLES", raising=False)
        else:
            monkeypatch.setenv("CLAWVIZ_NO_SAMPLES", "1")

    return use
