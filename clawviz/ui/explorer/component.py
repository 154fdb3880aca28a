"""The explorer mounted on the Episode page: a Streamlit Components v2 component (inline JS and
CSS, no iframe). It gets the episode once as `data`; selection, inspector, find and keys run
in the browser, with no server round trip, and the selection goes into the URL (?call=)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from clawviz.figures import explorer_css, explorer_js, pack_payload

NAME = "clawviz_episode_explorer"

_JS = (
    explorer_js()
    + """
export default function (component) {
  const { data, parentElement } = component;
  if (!Array.isArray(data) || !data[0]) return;
  const extra = data[2] || {};
  // New data (a comment saved, another episode) runs this again on the same element: end
  // the previous explorer first, or two would answer every key.
  if (parentElement.__clawvizCleanup) parentElement.__clawvizCleanup();
  const cleanup = clawvizExplorer(parentElement, data[0], {
    initial: data[1],
    comments: extra.comments || {},
    reviewer: extra.reviewer || "",
    reviewerLocked: !!extra.locked,
    commentError: extra.error || "",
    onComment: (value) => component.setTriggerValue("comment", value),
  });
  parentElement.__clawvizCleanup = cleanup;
  return () => {
    if (parentElement.__clawvizCleanup === cleanup) parentElement.__clawvizCleanup = null;
    cleanup();
  };
}
"""
)

_mount = st.components.v2.component(NAME, html="", css=explorer_css(), js=_JS)

KEY_REVIEWER_NAME = "reviewer_name"
"""Session state: the reviewer name typed once (the key of `ui.tasks_widgets.KEY_REVIEWER_NAME`,
not imported: that module imports pandas, which the Episode page's first view does not)."""
KEY_COMMENT_ERROR = "explorer_comment_error"
"""Session state: why the last comment was refused, shown once in the inspector."""


def episode_explorer(
    payload: dict[str, Any],
    *,
    initial: str | None,
    key: str,
    comments: dict[str, list[dict[str, Any]]] | None = None,
) -> None:
    """Mount the explorer for one episode's payload (`clawviz.figures.explorer.build_payload`,
    or its packed form, `packed_explorer_payload`, which is what the page sends),
    with the episode's comments by call; a comment the reviewer adds in the inspector is
    stored by `_save_comment` before the run that shows it."""
    from clawviz.ui import access

    trusted = access.trusted_user()
    extra = {
        "comments": comments or {},
        "reviewer": trusted or st.session_state.get(KEY_REVIEWER_NAME) or "",
        "locked": trusted is not None,
        "error": st.session_state.pop(KEY_COMMENT_ERROR, ""),
    }
    # A list, not a dict: Streamlit scans a dict's values for data frames, importing pandas
    # (the first view of the Episode page imports none, tests/app/test_first_view_lean.py).
    # The payload goes packed, as in the `share` file (each repeated string once; explorer.js
    # unpacks it with the same decoder): `packed_explorer_payload` caches it packed.
    _mount(
        key=key,
        data=[payload if payload.get("packed") else pack_payload(payload), initial, extra],
        height="content",
        on_comment_change=lambda: _save_comment(key, payload["episode"]["id"]),
    )


def store_comment(session: Any, episode_id: str, event: dict[str, Any], trusted: str | None) -> Any:
    """Store the comment the explorer sent (`{call_id, text, reviewer}`) and return its row:
    the reviewer is `trusted` (the trusted proxy header's user) when there is one, whatever
    name the browser sent, else that name. Raises `CommentError` for a refused comment."""
    from clawviz.store import add_comment

    reviewer = trusted or str(event.get("reviewer") or "")
    return add_comment(
        session, episode_id, str(event.get("call_id") or ""), reviewer,
        str(event.get("text") or ""),
    )  # fmt: skip


def _save_comment(key: str, episode_id: str) -> None:
    """The explorer's `comment` trigger: store it (`store_comment`); a refusal is shown once in
    the inspector; a typed name is remembered for this browser session as the sign-off's is."""
    from clawviz.store import CommentError
    from clawviz.ui import access, state

    event = (st.session_state.get(key) or {}).get("comment")
    if not isinstance(event, dict):
        return
    trusted = access.trusted_user()
    try:
        with state.get_session() as session:
            row = store_comment(session, episode_id, event, trusted)
            name = row.reviewer
    except CommentError as exc:
        st.session_state[KEY_COMMENT_ERROR] = str(exc)
        return
    if not trusted:
        st.session_state[KEY_REVIEWER_NAME] = name


def episode_comments(episode_id: str) -> dict[str, list[dict[str, Any]]]:
    """The episode's comments by call (read on every run: they change by the click)."""
    from clawviz.store import comments_by_call
    from clawviz.ui import state

    with state.get_session() as session:
        return comments_by_call(session, episode_id)


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
    from clawviz.figures import build_payload
    from clawviz.ui import data

    view = data.episode_view(url, episode_id, settings_hash, _settings)
    if view is None:
        return None
    return build_payload(
        episode_id, view.calls, view.analysis, redact=redact, prices=_settings.prices
    )


@st.cache_data(show_spinner=False, max_entries=32)
def packed_explorer_payload(
    url: str,
    episode_id: str,
    settings_hash: str,
    _settings: Any,
    redact: bool = False,
    prices: str = "",
) -> dict[str, Any] | None:
    """`explorer_payload` packed for the wire (`pack.pack_payload`, the `share` file's form), as
    the Episode page sends it: smaller to send and to read back from the cache."""
    payload = explorer_payload(url, episode_id, settings_hash, _settings, redact, prices)
    return pack_payload(payload) if payload is not None else None


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
    from clawviz.figures import share_html

    payload = explorer_payload(
        url, episode_id, settings_hash, _settings, redact, str(_settings.prices)
    )
    return share_html(payload or {})
