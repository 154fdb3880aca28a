"""Ingest page: upload files or name a server-side path, watch progress, read the report."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pandas as pd
import streamlit as st

from clawviz.ui import access, data, state
from clawviz.ui.inspector import escape_md
from clawviz.ui.pages import run_page

UPLOAD_TYPES = ["jsonl", "gz", "json", "zip", "tgz", "tar", "md"]
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
UPLOAD_ROOT = Path(os.environ.get("CLAWVIZ_HOME", Path.home() / ".clawviz")) / "uploads"


def _save_uploads(files, folder: Path) -> tuple[list[Path], list[str]]:
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
            try:
                from clawviz.review.archive import extract_archive
            except ImportError:
                problems.append(f"{name}: archives cannot be read (clawviz.review.archive missing)")
                continue
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


def run_ingest(paths: list[Path]) -> None:
    """Ingest `paths` with a progress bar, recompute decisions, clear caches, keep the report."""
    from clawviz.ingest.load import ingest_paths

    bar = st.progress(0.0, text="Starting…")

    def progress(done: int, total: int, msg: str) -> None:
        bar.progress(min(done / total, 1.0) if total else 0.0, text=msg[-120:])

    settings = state.current_settings()
    with state.get_session() as session:
        report = ingest_paths(paths, session=session, settings=settings, progress=progress)
    bar.progress(1.0, text="Rebuilding trees and decisions…")
    state.clear_caches()
    data.ensure_analysed(state.database_url(), settings.settings_hash, settings)
    bar.empty()
    st.session_state[state.KEY_INGEST_REPORT] = report


def show_report(report) -> None:
    st.subheader("Report")
    m = st.columns(5)
    loaded = sum(1 for f in report.files if f.status == "loaded")
    m[0].metric("Files loaded", f"{loaded:,} of {len(report.files):,}")
    m[1].metric("Calls", f"{report.n_calls:,}")
    m[2].metric("Episodes", f"{report.n_episodes:,}")
    m[3].metric("Results", f"{report.n_results:,}")
    m[4].metric("Rejected lines", f"{len(report.rejected):,}")
    if report.files:
        with st.expander(f"Files ({len(report.files)})", expanded=bool(report.errors)):
            rows = [
                {
                    "file": f.path,
                    "format": f.format,
                    "status": f.status,
                    "calls": f.n_calls,
                    "results": f.n_results,
                    "tasks": f.n_tasks,
                    "rejected": f.n_rejected,
                    "error": f.error or "",
                }
                for f in report.files
            ]
            st.dataframe(pd.DataFrame(rows), hide_index=True, key="ingest_files_table")
    problems = [("skipped", s) for s in report.skipped_files] + [
        ("failed", s) for s in getattr(report, "errors", [])
    ]
    if problems:
        st.warning(f"{len(problems)} files were skipped or failed as a whole.")
        rows = [{"file": s.path, "what": kind, "reason": s.reason} for kind, s in problems]
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="ingest_skipped_table")
    if report.rejected:
        st.warning(f"{len(report.rejected)} lines were rejected; every other line was loaded.")
        rows = [{"file": str(r.file), "line": r.line, "reason": r.reason} for r in report.rejected]
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="ingest_rejected_table")
    else:
        st.success("No line was rejected.")


def main() -> None:
    st.title("Ingest")
    st.caption(
        "Proxy exchange logs (.jsonl, .jsonl.gz), results.jsonl, harness transcripts, task "
        "folders, or .zip / .tar.gz archives of them. Re-ingesting the same bytes adds nothing."
    )
    if access.blocked("Ingest (uploads and server-side paths)"):
        return
    upload_tab, path_tab = st.tabs(["Upload files", "Server-side path"])
    with upload_tab:
        files = st.file_uploader(
            "Files", type=UPLOAD_TYPES, accept_multiple_files=True, key=state.KEY_UPLOAD
        )
        if st.button("Ingest uploaded files", disabled=not files, key="ingest_upload_run"):
            # Uploads are kept: results name workspaces relative to their file, and the
            # Workspace diff page reads them later.
            folder = UPLOAD_ROOT / (time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8])
            paths, problems = _save_uploads(files, folder)
            for p in problems:
                st.error(escape_md(p))
            if paths:
                run_ingest(paths)
    with path_tab:
        raw = st.text_input(
            "File or folder on the server", key=state.KEY_INGEST_PATH, placeholder="/data/logs"
        )
        if st.button("Ingest path", disabled=not raw, key=state.KEY_INGEST_RUN):
            path = Path(raw).expanduser()
            if not path.exists():
                st.error(f"Not found: {escape_md(str(path))}")
            else:
                run_ingest([path])
    report = st.session_state.get(state.KEY_INGEST_REPORT)
    if report is not None:
        show_report(report)


run_page(__file__, main)
