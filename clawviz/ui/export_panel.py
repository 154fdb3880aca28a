"""The Export panel of the Runs and Episode pages: `clawviz.export.run_export` with a progress bar.

The file is written under the exports folder (`CLAWVIZ_EXPORT_DIR`, else `CLAWVIZ_HOME/exports`,
else `~/.clawviz/exports`) and offered for download up to `DOWNLOAD_MAX_BYTES`; the report is
shown as text. The progress bar moves once per exported episode (`run_export`'s callback).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import streamlit as st
from sqlmodel import Session

from clawviz.export import Selection
from clawviz.settings import Settings
from clawviz.ui.state import _engine_for

KEY_RESULT = "export_last_result"
"""Session-state key: the last export's {path, report_text, rows, key} per panel."""

DOWNLOAD_MAX_BYTES = 200_000_000
"""Largest export offered as a download button: Streamlit holds a download's bytes in the
server's memory, so a long export (a 1 GB store gives GBs of JSONL) is left on disk instead."""

LABELS = {"sft": "SFT (messages + train flags)", "rl": "RL (token ids, loss mask, logprobs)"}


def export_dir() -> Path:
    """Where the app writes exports."""
    if os.environ.get("CLAWVIZ_EXPORT_DIR"):
        return Path(os.environ["CLAWVIZ_EXPORT_DIR"])
    home = os.environ.get("CLAWVIZ_HOME")
    return (Path(home) if home else Path.home() / ".clawviz") / "exports"


def export_name(scope: str, fmt: str, suffix: str, settings_hash: str) -> str:
    """File name of one export: scope, format, settings hash and a UTC time stamp."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", scope).strip("_")[:60] or "export"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{safe}-{fmt}-{settings_hash}-{stamp}{suffix}"


def key_open(key: str) -> str:
    """Session-state key of panel `key`'s expander (True while open)."""
    return f"{key}_open"


def export_panel(
    url: str, settings: Settings, selection: Selection, *, key: str, scope: str
) -> None:
    """An expander with the format choices, the Export button, progress and the result.

    Its content is drawn only while it is open (`key_open(key)`; opening it reruns the page):
    Streamlit sends a closed expander's widgets to the browser all the same, and these would
    be the only radios and checkbox of the Episode page's first view (each element type costs
    its front-end code in every new tab; bench/README.md, "fifth pass: floors")."""
    box = st.expander(
        "Export for training", icon=":material/download:", key=key_open(key), on_change="rerun"
    )
    with box:
        if not box.open:
            return
        c = st.columns([3, 2, 2, 2])
        fmt = c[0].radio(
            "Format", list(LABELS), format_func=LABELS.__getitem__, key=f"{key}_format"
        )
        suffix = c[1].radio("File", [".jsonl", ".parquet"], key=f"{key}_suffix")
        advantage = c[2].radio(
            "RL advantage",
            ["grpo", "ppo"],
            key=f"{key}_advantage",
            disabled=fmt != "rl",
            help="GRPO per attempt, or the PPO return per path (per token when values are logged).",
        )
        include_dropped = c[3].checkbox(
            "Include dropped episodes",
            value=selection.include_dropped,
            key=f"{key}_dropped",
            help="Also export the kept paths of dropped episodes (for analysis); rows carry "
            "their status and reasons.",
        )
        st.caption(
            f"Kept paths under the current settings ({settings.settings_hash}); see "
            "docs/EXPORT.md for the row schema."
        )
        if st.button("Export", key=f"{key}_run", icon=":material/file_export:"):
            _run(url, settings, selection, key, scope, fmt, suffix, advantage, include_dropped)
        result: dict[str, Any] | None = (st.session_state.get(KEY_RESULT) or {}).get(key)
        if result:
            _show(result, key)


def _run(
    url: str,
    settings: Settings,
    selection: Selection,
    key: str,
    scope: str,
    fmt: str,
    suffix: str,
    advantage: str,
    include_dropped: bool,
) -> None:
    bar = st.progress(0.0, text="Exporting…")

    def progress(done: int, total: int, msg: str) -> None:
        bar.progress(min(done / total, 1.0) if total else 1.0, text=msg[:80])

    out = export_dir() / export_name(scope, fmt, suffix, settings.settings_hash)
    sel = Selection(selection.filter, include_dropped, selection.episode_ids)
    # Imported here: the row builders and writers are not needed until an export runs.
    from clawviz.export import run_export

    try:
        with Session(_engine_for(url)) as s:
            report = run_export(
                s, fmt, out, selection=sel, settings=settings, advantage=advantage,  # type: ignore[arg-type]
                progress=progress,
            )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - shown on the page; nothing half-written remains
        bar.empty()
        st.error(f"Export failed: {type(exc).__name__}: {exc}")
        return
    bar.progress(1.0, text=f"{report.rows:,} rows written")
    results = dict(st.session_state.get(KEY_RESULT) or {})
    results[key] = {"path": str(out), "text": report.text(), "rows": report.rows}
    st.session_state[KEY_RESULT] = results


def _show(result: dict[str, Any], key: str) -> None:
    path = Path(result["path"])
    # Log text (ids, reasons) is shown as plain text, never as Markdown or HTML.
    st.code(result["text"], language=None)
    if not path.exists():
        st.warning(f"The file {path} is gone.")
        return
    st.text(f"Written to {path}")
    size = path.stat().st_size
    if size > DOWNLOAD_MAX_BYTES:
        st.info(
            f"{size / 1e6:,.0f} MB: too large to download through the browser (the app would "
            f"hold it in memory); read it from {path}."
        )
        return
    with path.open("rb") as fh:
        st.download_button(
            f"Download {path.name}",
            fh,
            file_name=path.name,
            key=f"{key}_download",
            icon=":material/download:",
            mime="application/octet-stream",
        )
