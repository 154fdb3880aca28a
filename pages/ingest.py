"""Ingest page: upload files or name a server-side path, watch progress, read the report.

Layout only; saving uploads, running the ingest and the report are `clawviz.ui.ingest`.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import streamlit as st

from clawviz.ui import access, state
from clawviz.ui.ingest import (
    KEY_INGEST_ERROR,
    KEY_PATH_FORM,
    UPLOAD_TYPES,
    report_problem,
    run_ingest,
    save_uploads,
    show_report,
    upload_root,
)
from clawviz.ui.inspector import escape_md
from clawviz.ui.pages import run_page


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
            folder = upload_root() / (time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:8])
            paths, problems = save_uploads(files, folder)
            problem = "\n".join(problems) or None
            if paths:
                run_ingest(paths, problem)
            elif problem:
                report_problem(problem)
    with path_tab:
        # A form sends the typed path with the click: one click ingests (a button disabled
        # until the text box commits needed two).
        with st.form(KEY_PATH_FORM, border=False, enter_to_submit=True):
            raw = st.text_input(
                "File or folder on the server", key=state.KEY_INGEST_PATH, placeholder="/data/logs"
            )
            go = st.form_submit_button("Ingest path", key=state.KEY_INGEST_RUN, type="primary")
        if go:
            path = Path(raw.strip()).expanduser() if raw and raw.strip() else None
            if path is None:
                report_problem("Type a file or folder path first.")
            elif not path.exists():
                report_problem(f"Not found: {path}")
            else:
                run_ingest([path])
    problem = st.session_state.get(KEY_INGEST_ERROR)
    if problem:
        st.error(escape_md(problem))
    report = st.session_state.get(state.KEY_INGEST_REPORT)
    if report is not None:
        show_report(report)


run_page(__file__, main)
