"""The Settings page form, derived from the fields of `clawviz.settings.Settings`.

One widget per editable setting, chosen by its kind (integer and number inputs with the field's
bounds, checkboxes, a select box for choices, text for name lists and weights); the help text of
the field is the widget's tooltip. Applying validates through `Settings.with_`, so the form can
never store a value the CLI would refuse.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from clawviz.settings import (
    DEFAULT_SETTINGS,
    SETTINGS,
    Setting,
    Settings,
    SettingsError,
    parse_value,
)

FORM_SETTINGS: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.editable)


def _float_step(s: Setting, value: float) -> tuple[float, str | None]:
    """Step and display format of a float input (tiny defaults such as 1e-6 in e-notation)."""
    if s.default and abs(float(s.default)) < 1e-3:
        return float(s.default), "%.1e"
    if s.maximum is not None and s.maximum <= 1.0:
        return 0.05, None
    return 0.5, None


def _text_of(s: Setting, value: Any) -> str:
    if s.kind == "names":
        return ", ".join(value)
    if s.kind == "weights":
        return "" if value is None else ", ".join(f"{k}={v:g}" for k, v in value.items())
    return str(value)


def _widget(s: Setting, value: Any, where: Any) -> Any:
    """One widget for one setting; returns what it holds (text for names and weights)."""
    if s.kind == "int":
        return where.number_input(
            s.name,
            min_value=None if s.minimum is None else int(s.minimum),
            max_value=None if s.maximum is None else int(s.maximum),
            value=int(value),
            step=1,
            help=s.help,
        )
    if s.kind == "float":
        step, fmt = _float_step(s, value)
        return where.number_input(
            s.name,
            min_value=s.minimum,
            max_value=s.maximum,
            value=float(value),
            step=step,
            format=fmt,
            help=s.help,
        )
    if s.kind == "bool":
        return where.checkbox(s.name, value=bool(value), help=s.help)
    if s.kind == "choice":
        return where.selectbox(
            s.name, list(s.choices), index=list(s.choices).index(value), help=s.help
        )
    return where.text_input(s.name, value=_text_of(s, value), help=s.help)


def settings_from_form(raw: dict[str, Any]) -> Settings:
    """The form's widget values as validated settings (text widgets are parsed first)."""
    values = {}
    for s in FORM_SETTINGS:
        v = raw[s.name]
        values[s.name] = parse_value(s.name, v) if isinstance(v, str) and s.kind != "choice" else v
    return DEFAULT_SETTINGS.with_(**values)


def edit_form(current: Settings, form_key: str) -> Settings | None | bool:
    """Render the form. Returns the new settings on Apply, False on Reset, None otherwise.

    A value the settings refuse is shown as an error naming the setting (and None returned).
    """
    with st.form(form_key):
        cols = st.columns(2)
        raw = {
            s.name: _widget(s, getattr(current, s.name), cols[i % 2])
            for i, s in enumerate(FORM_SETTINGS)
        }
        b1, b2 = st.columns([1, 5])
        apply = b1.form_submit_button("Apply", type="primary")
        reset = b2.form_submit_button("Reset to defaults")
    if reset:
        return False
    if not apply:
        return None
    try:
        return settings_from_form(raw)
    except SettingsError as exc:
        st.error(str(exc))
        return None
