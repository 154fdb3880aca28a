"""The Ingest page's logic (`pages/ingest.py` is its layout): saving uploads, running the ingest
with a progress bar, and the report of what it loaded, skipped and rejected."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from clawviz.ui import data, state, tables
from clawviz.ui.pages import EPISODE, page_file

if TYPE_CHECKING:  # the ingest job is imported when an ingest runs, not with the page
    from streamlit.runtime.uploaded_file_manager import UploadedFile

    from clawviz.jobs import FileReport, IngestReport

UPLOAD_TYPES = ["jsonl", "gz", "json", "zip", "tgz", "tar", "md"]
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
EPISODE_PAGE = page_file(EPISODE)
# Session state: the problem of the last attempt (it replaces the report).
KEY_INGEST_ERROR = "ingest_last_error"
KEY_PATH_FORM = "ingest_path_form"


def upload_root() -> Path:
    """Where uploads are kept: `$CLAWVIZ_HOME/uploads` (read at each upload), else
    `~/.clawviz/uploads`."""
    return Path(os.environ.get("CLAWVIZ_HOME", Path.home() / ".clawviz")) / "uploads"


def save_uploads(files: Sequence[UploadedFile], folder: Path) -> tuple[list[Path], list[str]]:
    """Write uploads to `folder`; archives are extracted safely. Returns paths and problems."""
    paths: list[Path] = []
    problems: list[str] = []
    for i, f in enumerate(files):
        # The uploaded name is untrusted: keep only its last component, in its own folder.
        name = Path(f.name).name or f"upload-{i}"
        target_dir = folder / f"{i:03d}"
        target_dir.mkdir(parents=True)
        target = target_dir / name
        target.write_bytes(f.getvalue())
        if name.lower().endswith(ARCHIVE_SUFFIXES):
            from clawviz.review import extract_archive

            out = target_dir / "extracted"
            try:
                extract_archive(target, out, settings=state.current_settings())
            except ValueError as exc:
                problems.append(str(exc))
                continue
            paths.append(out)
        else:
            paths.append(target)
    return paths, problems


# What each file status of the ingest report is called on this page.
STATUS_TEXT = {
    "loaded": "loaded",
    "appended": "loaded (new lines of a grown log)",
    "already_loaded": "already ingested",
    "already_being_loaded": "already being ingested by another process",
    "no_calls": "skipped, no calls",
    "skipped": "skipped",
    "error": "failed",
}
LOADED = ("loaded", "appended")
# Episodes the report links to one by one; beyond them it says how many more.
MAX_EPISODE_LINKS = 12


def run_ingest(paths: list[Path], problem: str | None = None) -> None:
    """Ingest `paths` with a progress bar, recompute decisions, clear caches, keep the report.

    Ends with a rerun, so the sidebar (drawn before this page) shows the new counts.
    """
    from clawviz.jobs import ingest_paths

    bar = st.progress(0.0, text="Starting…")

    def progress(done: int, total: int, msg: str) -> None:
        bar.progress(min(done / total, 1.0) if total else 0.0, text=msg[-120:])

    settings = state.current_settings()
    with state.get_session() as session:
        targets: list[str | os.PathLike[str]] = list(paths)
        report = ingest_paths(targets, session=session, settings=settings, progress=progress)
    bar.progress(1.0, text="Rebuilding trees and decisions…")
    state.clear_caches()
    data.ensure_analysed(state.database_url(), settings.settings_hash, settings)
    bar.empty()
    st.session_state[state.KEY_INGEST_REPORT] = report
    st.session_state[KEY_INGEST_ERROR] = problem  # e.g. an upload refused next to the others
    st.rerun()


def report_problem(message: str) -> None:
    """A problem that replaces the previous report (it is about this attempt, not that one)."""
    st.session_state[KEY_INGEST_ERROR] = message
    st.session_state.pop(state.KEY_INGEST_REPORT, None)


def episode_links(report: IngestReport) -> None:
    """The episodes this ingest created or changed, each a same-tab link to the Episode page."""
    ids = list(getattr(report, "episode_ids", []) or [])
    if not ids:
        return
    st.markdown(f"**Episodes created or changed ({len(ids):,})**")
    row = st.container(horizontal=True)
    for eid in ids[:MAX_EPISODE_LINKS]:
        row.page_link(
            EPISODE_PAGE,
            label=eid,
            icon=":material/account_tree:",
            query_params={state.QP_EPISODE: eid},
        )
    if len(ids) > MAX_EPISODE_LINKS:
        st.caption(
            f"and {len(ids) - MAX_EPISODE_LINKS:,} more: filter the Runs page or open them "
            "from the Episode page's picker."
        )


def summary(report: IngestReport) -> None:
    """One sentence on what happened, before the numbers."""
    logs = [f for f in report.files if f.format != "task_folder"]
    loaded = [f for f in logs if f.status in LOADED]
    folders = len(report.files) - len(logs)
    re_read = f" ({folders} task folder(s) read again)" if folders else ""
    if loaded:
        st.success(
            f"Loaded {len(loaded):,} file(s): {report.n_calls:,} calls in "
            f"{report.n_episodes:,} episode(s), {report.n_results:,} result(s){re_read}."
        )
    elif any(f.status in ("already_loaded", "already_being_loaded") for f in logs):
        st.info(
            "Already ingested: "
            + ("this file was" if len(logs) == 1 else "these files were")
            + f" loaded before (same bytes), so nothing was added{re_read}."
        )
    elif logs and all(f.status == "no_calls" for f in logs):
        which = "this file holds" if len(logs) == 1 else "these files hold"
        st.warning(f"Skipped, no calls: {which} no model call, so nothing was loaded.")
    elif folders:
        st.success(f"Read {folders} task folder(s): {report.n_tasks:,} task(s).")
    else:
        st.warning("Nothing to ingest: no readable log, results or task file was found there.")


def outcomes(files: Sequence[FileReport]) -> str:
    """'44 files: 4 loaded, 40 already ingested': every file's outcome, most common first."""
    counts = Counter(
        "task folder(s) read" if f.format == "task_folder" and f.status in LOADED
        else STATUS_TEXT.get(f.status, f.status)
        for f in files
    )  # fmt: skip
    n = len(files)
    parts = ", ".join(f"{c:,} {what}" for what, c in counts.most_common())
    return f"{n:,} file{'s' if n != 1 else ''}: {parts}"


def show_report(report: IngestReport) -> None:
    st.subheader("Report")
    summary(report)
    m = st.columns(5)
    # Task folders are read again on every ingest; "loaded" counts the logs that added calls.
    loaded = sum(1 for f in report.files if f.status in LOADED and f.format != "task_folder")
    m[0].metric("Files loaded", f"{loaded:,}")
    m[1].metric("Calls", f"{report.n_calls:,}")
    m[2].metric("Episodes", f"{report.n_episodes:,}")
    m[3].metric("Results", f"{report.n_results:,}")
    m[4].metric("Rejected lines", f"{len(report.rejected):,}")
    if report.files:
        st.caption(outcomes(report.files))
    episode_links(report)
    if report.files:
        with st.expander(f"Files ({len(report.files)})", expanded=bool(report.errors)):
            rows = [
                {
                    "file": f.path,
                    "status": STATUS_TEXT.get(f.status, f.status),
                    "format": f.format,
                    "calls": f.n_calls,
                    "results": f.n_results,
                    "tasks": f.n_tasks,
                    "rejected": f.n_rejected,
                    "error": f.error,
                }
                for f in report.files
            ]
            tables.show_table(
                pd.DataFrame(rows),
                key="ingest_files_table",
                pinned=["file", "status"],
                numbers={"calls": 0, "results": 0, "tasks": 0, "rejected": 0},
                wrap=["error"],
            )
    problems = [("skipped", s) for s in report.skipped_files] + [
        ("failed", s) for s in getattr(report, "errors", [])
    ]
    if problems:
        failed = sum(1 for kind, _ in problems if kind == "failed")
        rows = [{"file": s.path, "what": kind, "reason": s.reason} for kind, s in problems]
        if failed:
            st.warning(f"{len(problems)} files were skipped or failed as a whole.")
        box = st.container() if failed else st.expander(f"Skipped files ({len(problems)})")
        with box:
            tables.show_table(
                pd.DataFrame(rows), key="ingest_skipped_table", pinned=["file"], wrap=["reason"]
            )
    if report.rejected:
        st.warning(f"{len(report.rejected)} lines were rejected; every other line was loaded.")
        rows = [{"file": str(r.file), "line": r.line, "reason": r.reason} for r in report.rejected]
        tables.show_table(
            pd.DataFrame(rows),
            key="ingest_rejected_table",
            pinned=["file", "line"],
            numbers={"line": 0},
            wrap=["reason"],
        )
    elif loaded:
        st.success("No line was rejected.")
