"""Who is using the app, and what a read-only deployment lets them do.

Both come from the server's settings (`read_only`, `trusted_user_header`: the settings table
with CLAWVIZ_<NAME> environment overrides), never from the browser session: the Settings page
cannot edit them, so a viewer cannot lift read-only or claim another identity.

- `trusted_user()`: the signed-in user named by the header a trusted reverse proxy sets
  (oauth2-proxy's X-Forwarded-User, Remote-User), or None when the setting is empty (the
  default: a header a client could forge is ignored) or the request carries no such header.
- `blocked(what)`: True (and a note saying why) when the deployment is read-only; pages call
  it before an action that writes the store, runs code or calls out: ingest, settings changes,
  checker runs, diagnosis runs. Sign-off and finding verdicts are not blocked: reviewing is
  what a read-only reviewer deployment is for (docs/DEPLOYMENT.md).
"""

from __future__ import annotations

import unicodedata

import streamlit as st

from clawviz import settings as cfg

MAX_USER_CHARS = 200
"""A longer header value is refused (no proxy sends one; it would only bloat every review)."""


def server_settings() -> cfg.Settings:
    """The deployment's settings (what the server started with, not this browser session's)."""
    return cfg.DEFAULT_SETTINGS


def is_read_only() -> bool:
    return bool(server_settings().read_only)


def blocked(what: str) -> bool:
    """True when `what` (e.g. "Ingest") is off in this read-only deployment; shows why."""
    if not is_read_only():
        return False
    st.info(
        f"{what} is off here: this deployment is read-only (setting `read_only`). "
        "Ask whoever runs clawviz to do it from the writer deployment or the command line.",
        icon=":material/lock:",
    )
    return True


def request_headers() -> dict[str, str]:
    """The current request's HTTP headers (one place, so tests can stand in for a proxy)."""
    try:
        return dict(st.context.headers)
    except (AttributeError, RuntimeError):  # no request (bare script run)
        return {}


def user_from_headers(headers: dict[str, str], header: str) -> str | None:
    """The user a trusted proxy named in `headers[header]` (case-insensitive name), or None
    when `header` is empty (the setting is off) or the value is absent, blank, too long or
    holds control characters."""
    header = header.strip().lower()
    if not header:
        return None
    value = next((v for k, v in headers.items() if k.lower() == header), None)
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > MAX_USER_CHARS:
        return None
    if any(unicodedata.category(ch).startswith("C") for ch in value):
        return None
    return value


def trusted_user() -> str | None:
    """The reviewer identity the trusted proxy header gives for this request, if any."""
    header = server_settings().trusted_user_header
    if not header.strip():
        return None
    return user_from_headers(request_headers(), header)
