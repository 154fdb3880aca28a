"""The explorer mounted on the Episode page: a Streamlit Components v2 component (inline JS and
CSS, no iframe). It gets the episode once as `data`; selection, inspector, find and keys run
in the browser, with no server round trip, and the selection goes into the URL (?call=)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from clawviz.figures.explorer.assets import explorer_css, explorer_js

NAME = "clawviz_episode_explorer"

_JS = (
    explorer_js()
    + """
export default function (component) {
  const { data, parentElement } = component;
  if (!Array.isArray(data) || !data[0]) return;
  return clawvizExplorer(parentElement, data[0], { initial: data[1] });
}
"""
)

_mount = st.components.v2.component(NAME, html="", css=explorer_css(), js=_JS)


def episode_explorer(payload: dict[str, Any], *, initial: str | None, key: str) -> None:
    """Mount the explorer for one episode's payload (`clawviz.figures.explorer.build_payload`)."""
    # A list, not a dict: Streamlit scans a dict's values for data frames, importing pandas
    # (the first view of the Episode page imports none, tests/app/test_first_view_lean.py).
    _mount(key=key, data=[payload, initial], height="content")


@st.cache_data(show_spinner=False, max_entries=32)
def explorer_payload(
    url: str,
    episode_id: str,
    settings_hash: str,
    _settings: Any,
    redact: bool = False,
    prices: str = "",
) -> dict[str, Any] | None:
    """The episode's explorer payload (cached per store, episode, settings, redaction and the
    price table's text, `prices`, which is not in the decisions' settings hash)."""
    from clawviz.figures.explorer import build_payload
    from clawviz.ui import data

    view = data.episode_view(url, episode_id, settings_hash, _settings)
    if view is None:
        return None
    return build_payload(
        episode_id, view.calls, view.analysis, redact=redact, prices=_settings.prices
    )


@st.cache_data(show_spinner=False, max_entries=16)
def share_file(
    url: str,
    episode_id: str,
    settings_hash: str,
    _settings: Any,
    redact: bool = False,
    prices: str = "",
) -> str:
    """The `clawviz share` file of the episode, as text."""
    from clawviz.figures.explorer.assets import share_html

    payload = explorer_payload(
        url, episode_id, settings_hash, _settings, redact, str(_settings.prices)
    )
    return share_html(payload or {})
