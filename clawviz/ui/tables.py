"""One way every page draws a table: key columns first and pinned, numbers formatted, missing
values shown as "—" (never None / NaN), long text columns wrapped.

Cells keep their raw values (a number column still sorts as numbers): decimals come from the
column config, and `st.dataframe(placeholder=...)` draws "—" in every missing cell (Streamlit
1.67 otherwise draws "None"). Link cells are not used: Streamlit's LinkColumn always opens a new
tab, so a row is opened by selecting it and following a `st.page_link` shown for it (same tab,
one history entry).
"""

from __future__ import annotations

import math
import numbers as _numbers
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import pandas as pd
import streamlit as st

MISSING = "—"
WRAP_ROW_HEIGHT = 66
"""Streamlit 1.67 wraps cell text only when the row height is above 4rem (64 px)."""
WRAP_AFTER = 48
"""A wrap column whose longest cell is longer than this gets wrapping (taller rows)."""


def is_missing(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, float) and math.isnan(v)


def fmt_num(v: Any, digits: int = 2, *, signed: bool = False) -> str:
    """A number for people: `0.466667` -> `0.47`; missing -> `—`; integers keep no decimals."""
    if is_missing(v):
        return MISSING
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, _numbers.Integral):
        return f"{v:+,}" if signed else f"{v:,}"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def fmt_text(v: Any) -> str:
    return MISSING if is_missing(v) or v == "" else str(v)


def number_format(digits: int, signed: bool = False) -> str:
    """The printf format of a number column (`%.2f`, `%+.2f`; 0 digits: grouped integers)."""
    if digits == 0:
        return "%+d" if signed else "localized"
    return f"%+.{digits}f" if signed else f"%.{digits}f"


def _column_config(
    frame: pd.DataFrame,
    *,
    pinned: list[str],
    numbers: dict[str, int],
    signed: set[str],
    wrap: list[str],
    labels: dict[str, str],
    hidden: set[str],
) -> dict[str, Any]:
    """The `column_config` of every column of `frame` under the shared rules (hidden: None)."""
    config: dict[str, Any] = {}
    for c in frame.columns:
        if c in hidden:
            config[c] = None
            continue
        label = labels.get(c, c)
        pin = True if c in pinned else None
        if c in numbers:
            fmt = number_format(numbers[c], c in signed)
            config[c] = st.column_config.NumberColumn(label, pinned=pin, format=fmt)
        else:
            width: Literal["large"] | None = "large" if c in wrap else None
            config[c] = st.column_config.Column(label, pinned=pin, width=width)
    return config


def _blank_text_as_missing(frame: pd.DataFrame, numbers: Mapping[str, int]) -> pd.DataFrame:
    """`frame` with empty text cells set to None: an empty text cell is a missing value too,
    so it gets the placeholder. A copy when anything may change; `frame` itself otherwise."""
    text_cols = [
        c
        for c in frame.columns
        if c not in numbers
        and (frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c].dtype))
    ]
    if not text_cols:
        return frame
    frame = frame.copy()
    for c in text_cols:
        frame[c] = frame[c].where(frame[c].astype(str) != "", None)
    return frame


def _needs_wrap(frame: pd.DataFrame, wrap: list[str]) -> bool:
    """Whether some cell of a wrap column is longer than WRAP_AFTER (so rows get taller)."""
    longest = max((len(str(v)) for c in wrap for v in frame[c].dropna()), default=0)
    return longest > WRAP_AFTER


def show_table(
    df: pd.DataFrame,
    *,
    key: str | None = None,
    pinned: Iterable[str] = (),
    numbers: Mapping[str, int] | None = None,
    signed: Iterable[str] = (),
    wrap: Iterable[str] = (),
    labels: Mapping[str, str] | None = None,
    hidden: Iterable[str] = (),
    column_config: Mapping[str, Any] | None = None,
    **kwargs: Any,
):
    """`st.dataframe` of `df` under the shared rules; returns what `st.dataframe` returns.

    `df` may also be a pandas Styler (cell tints); its data is read for the rules.
    pinned: key columns, shown first (in this order) and pinned while scrolling.
    numbers: column -> decimals (0 for integer counts); signed: those shown with a sign.
    wrap: long text columns (reasons, notes) that wrap instead of being cut.
    labels: column -> header text. hidden: columns left out of the view.
    """
    styler = df if not isinstance(df, pd.DataFrame) else None
    frame: pd.DataFrame = styler.data if styler is not None else df
    numbers = dict(numbers or {})
    pinned = [c for c in pinned if c in frame.columns]
    hidden = set(hidden)
    wrap = [c for c in wrap if c in frame.columns]
    order = pinned + [c for c in frame.columns if c not in pinned and c not in hidden]
    config = _column_config(
        frame,
        pinned=pinned,
        numbers=numbers,
        signed=set(signed),
        wrap=wrap,
        labels=dict(labels or {}),
        hidden=hidden,
    )
    config.update(column_config or {})
    if styler is None:
        frame = _blank_text_as_missing(frame, numbers)
    if wrap and "row_height" not in kwargs and len(frame) and _needs_wrap(frame, wrap):
        kwargs["row_height"] = WRAP_ROW_HEIGHT
    kwargs.setdefault("hide_index", True)
    kwargs.setdefault("placeholder", MISSING)
    return st.dataframe(
        styler if styler is not None else frame,
        key=key,
        column_order=order,
        column_config=config,
        **kwargs,
    )


def _step_page(key: str, view: str, by: int) -> None:
    """Button callback: move the page of this view (before the run draws it)."""
    saved_view, page = st.session_state.get(key, (view, 0))
    st.session_state[key] = (view, max(0, (page if saved_view == view else 0) + by))


def pager(
    total: int, view: str, *, size: int, key: str, buttons: str, always: bool = True
) -> tuple[int, Any]:
    """Previous / next page buttons (keys `<buttons>_prev`, `<buttons>_next`) and the rows
    shown, over `total` rows of `size` a page; the page (in session state under `key`) goes back
    to the first when `view` changes. With `always` False nothing is drawn for a single page.
    Returns the page and the bar (None when not drawn)."""
    last = max(0, (total - 1) // size)
    saved_view, page = st.session_state.get(key, (view, 0))
    page = min(page if saved_view == view else 0, last)
    st.session_state[key] = (view, page)
    if last == 0 and not always:
        return 0, None
    bar = st.container(horizontal=True, vertical_alignment="center", gap="small")
    bar.button(
        "Previous", key=f"{buttons}_prev", icon=":material/chevron_left:", disabled=page <= 0,
        on_click=_step_page, args=(key, view, -1),
    )  # fmt: skip
    bar.button(
        "Next", key=f"{buttons}_next", icon=":material/chevron_right:", disabled=page >= last,
        on_click=_step_page, args=(key, view, 1),
    )  # fmt: skip
    lo = page * size + 1 if total else 0
    bar.caption(f"rows {lo:,}–{min(total, (page + 1) * size):,} of {total:,}")
    return page, bar
