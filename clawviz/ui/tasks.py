"""The Tasks page's logic (`pages/tasks.py` is its layout): the review queue with the
difficulty filter, a task's detail, checker runs and sign-off.

Deep link: ?task=<task id>. Widgets shared with the Workspace page are `ui.tasks_widgets`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from clawviz import store
from clawviz.review import (
    DECISIONS,
    ArchiveError,
    CheckerError,
    ReviewError,
    TaskDetail,
    TaskRow,
    add_review,
    check_reference,
    export_reviews,
    read_task_file,
    record_solvability,
    reference_workspace,
    run_checker,
    run_checker_on_archive_bytes,
    solvable_status,
    task_detail,
    task_queue,
    verdict_label,
)
from clawviz.settings import Settings
from clawviz.store import Finding
from clawviz.ui import access, data, state, tables
from clawviz.ui import findings_widgets as fw
from clawviz.ui import tasks_widgets as w
from clawviz.ui.inspector import escape_md

SORTS = {
    "task": ("task_id", True),
    "status": ("status", True),
    "attempts (most first)": ("attempts", False),
    "s_strong (highest first)": ("s_strong", False),
    "s_small (lowest first)": ("s_small", True),
    "category": ("category", True),
    "open findings (most first)": ("open findings", False),
}
VERDICTS = ("all", "pass", "fail", "n/a")
TERM_COLUMNS = ("s_strong ≥ 0.2", "s_small ≤ 0.6", "strong > small")
SOURCE_ATTEMPT = "An attempt's final workspace"
SOURCE_UPLOAD = "Upload a reference workspace (.zip / .tar.gz)"
KEY_ATTEMPTS_TABLE = "tasks_attempts_table"
KEY_HISTORY_TABLE = "tasks_signoff_history"
# Session state: a decision was saved, so the next run empties the note and the choice.
KEY_SIGNOFF_RESET = "tasks_signoff_reset"
KEY_QUEUE_PAGE = "tasks_queue_page"
QUEUE_PAGE = 200
"""Most rows of the review queue drawn at once (a training run's store has tens of thousands
of tasks; the table and the 'Open a task' box get one page of them)."""


def queue_frame(rows: Sequence[TaskRow]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "task_id": r.task_id,
                "name": r.name,
                "category": r.category or "—",  # a filter option, so a value
                "status": r.status,
                "attempts": r.n_attempts,
                "s_strong": r.s_strong,
                "s_small": r.s_small,
                TERM_COLUMNS[0]: w.VERDICT_TEXT[r.filter.terms[0].passed],
                TERM_COLUMNS[1]: w.VERDICT_TEXT[r.filter.terms[1].passed],
                TERM_COLUMNS[2]: w.VERDICT_TEXT[r.filter.terms[2].passed],
                "filter": verdict_label(r.filter.passed),
                "open findings": r.open_findings,
                "solvable": r.solvable.label if r.solvable else None,
            }
            for r in rows
        ],
        columns=[
            "task_id", "name", "category", "status", "attempts", "s_strong", "s_small",
            *TERM_COLUMNS, "filter", "open findings", "solvable",
        ],
    )  # fmt: skip


def open_task(task_id: str | None) -> None:
    state.set_params(task=task_id)


def on_task_pick() -> None:
    choice = st.session_state.get(w.KEY_TASK_PICK)
    open_task(None if choice == state.NONE_OPTION else choice)


def on_queue_select(shown: list[str]) -> None:
    event = st.session_state.get(w.KEY_QUEUE_TABLE)
    rows = event.selection.rows if event is not None else []
    if rows:
        open_task(shown[rows[0]])


def export_buttons(url_key: str, task_id: str | None = None) -> None:
    with state.get_session() as session:
        csv_text = export_reviews(session, "csv", task_id=task_id)
        json_text = export_reviews(session, "json", task_id=task_id)
    stem = f"reviews-{task_id}" if task_id else "reviews"
    scope = "this task's sign-off decisions" if task_id else "every sign-off decision"
    st.caption(f"Export {scope} (with notes and reviewers)")
    c1, c2, _ = st.columns([1, 1, 2])
    c1.download_button(
        f"Download {'this task' if task_id else 'all'} as CSV",
        csv_text,
        f"{stem}.csv",
        "text/csv",
        key=f"{url_key}_csv",
        icon=":material/download:",
    )
    c2.download_button(
        f"Download {'this task' if task_id else 'all'} as JSON",
        json_text,
        f"{stem}.json",
        "application/json",
        key=f"{url_key}_json",
        icon=":material/download:",
    )


def queue_view() -> None:
    st.title("Tasks")
    settings = state.current_settings()
    url = state.database_url()
    with state.get_session() as session:
        # The pass over every attempt is recomputed only after a change to an attempt (the
        # revision is read before the summary it keys); reviews, findings and checker runs
        # are read on every view, so a sign-off shows at once.
        revision = store.attempts_revision(session)
        summary = data.attempt_summary(url, settings.settings_hash, revision, settings)
        rows = task_queue(session, settings, summary)
    if not rows:
        st.info(
            "No tasks yet. Ingest a task folder (ClawGym `data_entry.json` folders or PinchBench "
            "`task_*.md` files) on the Ingest page, or `python -m clawviz ingest PATH`."
        )
        return
    df = queue_frame(rows)
    reviewed = (df["status"] != "pending").sum()
    passing = (df["filter"] == "pass").sum()
    c = st.columns(4)
    c[0].metric("tasks", f"{len(df):,}")
    c[1].metric("reviewed", f"{int(reviewed):,}")
    c[2].metric("pass the difficulty filter", f"{int(passing):,}")
    c[3].metric("accepted", f"{int((df['status'] == 'accept').sum()):,}")

    f1, f2, f3, f4 = st.columns([2, 2, 1.4, 1.6])
    categories = sorted(df["category"].unique())
    statuses = ["pending", *DECISIONS]
    chosen_cat = f1.multiselect("Category", categories, key=w.KEY_QUEUE_CATEGORY)
    chosen_status = f2.multiselect("Review status", statuses, key=w.KEY_QUEUE_STATUS)
    verdict = f3.selectbox("Difficulty filter", VERDICTS, key=w.KEY_QUEUE_VERDICT)
    sort = f4.selectbox("Sort by", list(SORTS), key=w.KEY_QUEUE_SORT)
    shown = df
    if chosen_cat:
        shown = shown[shown["category"].isin(chosen_cat)]
    if chosen_status:
        shown = shown[shown["status"].isin(chosen_status)]
    if verdict != "all":
        shown = shown[shown["filter"] == verdict]
    col, asc = SORTS[sort]
    shown = shown.sort_values(col, ascending=asc, na_position="last", kind="stable")
    st.caption(
        f"{len(shown):,} of {len(df):,} tasks. Filter terms: s_strong >= 0.2, s_small <= 0.6, "
        "s_strong > s_small (means over attempts with model_role strong / small). "
        "Click a row to open the task."
    )
    view = f"{chosen_cat}|{chosen_status}|{verdict}|{sort}"
    # Previous / next only when there is more than one page; back to the first page when the
    # filters or the sort change.
    page_no, _bar = tables.pager(
        len(shown), view, size=QUEUE_PAGE, key=KEY_QUEUE_PAGE, buttons="tasks", always=False
    )
    part = shown.iloc[page_no * QUEUE_PAGE : (page_no + 1) * QUEUE_PAGE]
    verdict_cols = [*TERM_COLUMNS, "filter"]
    tables.show_table(
        part.style.map(lambda v: w.VERDICT_TINT.get(v, ""), subset=verdict_cols),
        key=w.KEY_QUEUE_TABLE,
        pinned=["task_id", "filter", "status"],
        numbers={"s_strong": 2, "s_small": 2, "attempts": 0, "open findings": 0},
        labels={"task_id": "task", "filter": "difficulty filter"},
        width="stretch",
        on_select=lambda: on_queue_select(part["task_id"].tolist()),
        selection_mode="single-row",
        height=min(640, 38 + 35 * max(len(part), 1)),
    )
    # Every task when they fit on one page, else the tasks of the page shown.
    pickable = df["task_id"].tolist() if len(df) <= QUEUE_PAGE else part["task_id"].tolist()
    if st.session_state.get(w.KEY_TASK_PICK) not in (state.NONE_OPTION, *pickable):
        st.session_state.pop(w.KEY_TASK_PICK, None)
    st.selectbox(
        "Open a task" if len(df) <= QUEUE_PAGE else "Open a task of this page",
        [state.NONE_OPTION, *pickable],
        key=w.KEY_TASK_PICK,
        on_change=on_task_pick,
    )
    export_buttons("queue_export")


def instruction_tab(d: TaskDetail, rows: Sequence[Finding] = ()) -> None:
    fw.area_findings(d.task.task_id, "instruction", list(rows))
    if d.task.instruction:
        st.markdown(w.escape_text(d.task.instruction))
    else:
        st.caption("This task has no instruction text.")
    extra = {k: v for k, v in d.sections.items() if k not in ("Prompt", "Automated Checks")}
    for name, body in extra.items():
        with st.expander(escape_md(name)):
            st.markdown(w.escape_text(body))
    with st.expander("Task metadata (JSON)"):
        st.json(d.data, expanded=1)


def files_tab(d: TaskDetail, rows: Sequence[Finding] = ()) -> None:
    fw.area_findings(d.task.task_id, "inputs", list(rows))
    if not d.input_files or d.files_root is None:
        st.caption("No input files.")
        return
    left, right = st.columns([1, 2.4])
    with left:
        st.caption(f"{len(d.input_files)} files")
        st.code(w.file_tree_text(d.input_files), language=None)
    with right:
        name = st.selectbox("File", d.input_files, key=w.KEY_INPUT_FILE)
        try:
            data, cut = read_task_file(d.files_root, name)
        except (OSError, ValueError) as exc:
            st.error(escape_md(str(exc)))
            return
        w.file_viewer(name, data, cut)


def checker_tab(d: TaskDetail, rows: Sequence[Finding] = ()) -> None:
    fw.area_findings(d.task.task_id, "checker", list(rows))
    if d.checker_code is None:
        st.caption("No checker (reward/check.py) in this task.")
    else:
        label = "reward/check.py" if d.task.kind == "clawgym" else "Automated Checks (grade)"
        st.caption(label)
        st.code(d.checker_code, language="python", line_numbers=True)
    if d.reward_script is not None:
        st.caption("reward/reward.sh")
        st.code(d.reward_script, language="bash", line_numbers=True)


def rubric_tab(d: TaskDetail, rows: Sequence[Finding] = ()) -> None:
    fw.area_findings(d.task.task_id, "rubric", list(rows))
    rubric = d.rubric
    if rubric is None:
        st.caption("No rubric.")
    elif isinstance(rubric, list) and all(isinstance(x, dict) for x in rubric):
        st.dataframe(pd.DataFrame(rubric), hide_index=True, width="stretch")
    elif isinstance(rubric, str):
        st.markdown(w.escape_text(rubric))
    else:
        st.json(rubric)


def attempts_tab(d: TaskDetail) -> None:
    if not d.attempts:
        st.caption("No attempts recorded for this task.")
        return
    table = pd.DataFrame(
        [
            {
                "episode": a.episode_id,
                "role": a.model_role,
                "reward": a.reward,
                "failed checks": len(a.failed_checks) if a.checks else None,
                "attempt": a.attempt,
                "harness": a.harness,
                "model": a.model,
            }
            for a in d.attempts
        ]
    )
    event = tables.show_table(
        table,
        key=KEY_ATTEMPTS_TABLE,
        pinned=["episode", "role", "reward"],
        numbers={"reward": 2, "failed checks": 0, "attempt": 0},
        width="stretch",
        on_select="rerun",
        selection_mode="single-row",
    )
    rows = event.selection.rows if event is not None else []
    bar = st.container(horizontal=True, vertical_alignment="center")
    if not rows or rows[0] >= len(d.attempts):
        bar.caption("Select an attempt to open its episode tree or workspace diff (same tab).")
    else:
        a = d.attempts[rows[0]]
        query = {state.QP_EPISODE: a.episode_id}
        if a.has_calls:
            bar.page_link(
                w.EPISODE_PAGE, label=f"Episode tree of {a.episode_id}",
                icon=":material/account_tree:", query_params=query,
            )  # fmt: skip
        else:
            bar.caption("No calls were recorded for this attempt (no tree).")
        if a.workspace_after or a.workspace_before:
            bar.page_link(
                w.WORKSPACE_PAGE, label="Workspace diff", icon=":material/difference:",
                query_params=query,
            )  # fmt: skip
        else:
            bar.caption("No workspace recorded for this attempt.")
    if d.matrix.checks:
        st.caption("Checks × attempts (score per check; grey: the attempt has no such check)")
        labels = {a.episode_id: f"{a.model_role or '?'} · {a.episode_id}" for a in d.attempts}
        st.plotly_chart(
            w.check_heatmap(d.matrix, labels),
            width="stretch",
            key="tasks_heatmap",
            config={"displayModeBar": False},
        )


def reference_section(d: TaskDetail, settings: Settings) -> None:
    """Verifiable solvability: the checker on the task's reference solution."""
    with state.get_session() as session:
        latest = solvable_status(session).get(d.task.task_id)
    folder = d.checker_path.parent.parent if d.checker_path else None
    ref = reference_workspace(folder)
    c = st.columns([3, 2], vertical_alignment="center")
    if latest:
        c[0].badge(f"solvable: {latest.label}", color="green" if latest.reached else "red")
    else:
        c[0].caption("Solvability: no reference workspace checked yet (upload one below).")
    if folder is not None and ref is not None and c[1].button(
        f"Check {ref.name}", key="tasks_check_reference", icon=":material/verified:",
        help="Run the checker on the task's own reference solution; the task is solvable "
        "when it scores 1.0.",
    ):  # fmt: skip
        with st.spinner("Running the checker on the reference solution…"):
            with state.get_session() as session:
                check_reference(session, d.task.task_id, folder, settings=settings)
        st.rerun()


def run_checker_tab(d: TaskDetail) -> None:
    if access.blocked("Running checkers"):
        return
    if d.task.kind != "clawgym" or d.checker_path is None:
        st.caption(
            "Only ClawGym tasks with reward/check.py can be run here"
            + (
                " (PinchBench checks need the run's transcript)."
                if d.task.kind == "pinchbench"
                else "."
            )
        )
        return
    settings = state.current_settings()
    st.caption(
        f"Runs reward/check.py inside a bubblewrap sandbox (no network, no access to this "
        f"machine's files or processes) on a private copy of the workspace, with a "
        f"{settings.checker_timeout_s} s limit (setting checker_timeout_s)."
    )
    reference_section(d, settings)
    source = st.radio("Workspace", [SOURCE_ATTEMPT, SOURCE_UPLOAD], key=w.KEY_CHECK_SOURCE)
    workspace: str | None = None
    upload = None
    if source == SOURCE_ATTEMPT:
        options = {a.episode_id: a.workspace_after for a in d.attempts if a.workspace_after}
        if not options:
            st.caption("No attempt of this task records a final workspace.")
        else:
            by_id = {a.episode_id: a for a in d.attempts}
            pick = st.selectbox(
                "Attempt",
                list(options),
                key=w.KEY_CHECK_ATTEMPT,
                format_func=lambda eid: (
                    f"{eid} · {by_id[eid].model_role or '?'} · recorded reward "
                    f"{w.fmt_score(by_id[eid].reward)}"
                ),
            )
            workspace = options.get(pick)
    else:
        upload = st.file_uploader(
            "Reference workspace archive", type=["zip", "gz", "tgz", "tar"], key=w.KEY_CHECK_UPLOAD
        )
    run = st.button(
        "Run checker",
        key=w.KEY_CHECK_RUN,
        type="primary",
        disabled=workspace is None and upload is None,
        icon=":material/play_arrow:",
    )
    results = st.session_state.setdefault(w.KEY_CHECK_RESULT, {})
    if run:
        with st.status("Running the checker…", expanded=False) as status:
            try:
                if upload is not None:
                    res = run_checker_on_archive_bytes(
                        d.checker_path.parent.parent,
                        upload.name,
                        upload.getvalue(),
                        settings=settings,
                    )
                else:
                    assert workspace is not None  # the button is disabled without one
                    res = run_checker(d.checker_path.parent.parent, workspace, settings=settings)
            except (CheckerError, ArchiveError, OSError) as exc:
                status.update(label="Checker could not start", state="error")
                st.error(escape_md(str(exc)))
                return
            results[d.task.task_id] = res
            if upload is not None:  # an uploaded reference workspace counts for solvability
                with state.get_session() as session:
                    record_solvability(session, d.task.task_id, upload.name, res)
            status.update(
                label=f"Checker: {res.status}",
                state="complete" if res.status == "ok" else "error",
            )
    res = results.get(d.task.task_id)
    if res is not None:
        w.checker_result(res)


def reviewer_from_login() -> str | None:
    """The logged-in user's name or email when the app runs with authentication."""
    try:
        if st.user.is_logged_in:
            name = st.user.get("name") or st.user.get("email")
            return str(name) if name else None
    except (AttributeError, KeyError, RuntimeError):
        return None
    return None


def signoff_panel(d: TaskDetail) -> None:
    st.subheader("Sign-off", anchor=False)
    st.badge(f"status: {d.status}", color=w.DECISION_COLOUR.get(d.status, "gray"))
    flash = st.session_state.pop(w.KEY_SIGNOFF_FLASH, None)
    if flash:
        st.success(flash)
    login_name = access.trusted_user() or reviewer_from_login()
    remembered = st.session_state.get(w.KEY_REVIEWER_NAME)
    # Widget state goes when the page changes; the name comes back for the next task.
    if remembered and not st.session_state.get(w.KEY_SIGNOFF_REVIEWER):
        st.session_state[w.KEY_SIGNOFF_REVIEWER] = remembered
    # Outside the form: the finding verdicts use the same name before any decision is saved.
    if login_name:
        st.caption(f"Reviewer: {escape_md(login_name)} (logged in)")
        reviewer = st.session_state[w.KEY_REVIEWER_NAME] = login_name
    else:
        reviewer = st.text_input("Reviewer", key=w.KEY_SIGNOFF_REVIEWER, placeholder="your name")
    if st.session_state.pop(KEY_SIGNOFF_RESET, False):
        st.session_state[w.KEY_SIGNOFF_NOTE] = ""
        st.session_state[w.KEY_SIGNOFF_DECISION] = None
    with st.form(w.KEY_SIGNOFF_FORM, border=True):
        # No default: a decision is a choice the reviewer makes, never a pre-filled "accept".
        decision = st.radio(
            "Decision", DECISIONS, index=None, horizontal=True, key=w.KEY_SIGNOFF_DECISION
        )
        note = st.text_area("Note", key=w.KEY_SIGNOFF_NOTE, placeholder="why this decision")
        n_valid = sum(1 for f in fw.task_findings(d.task.task_id) if f.verdict == "valid")
        if n_valid:
            st.caption(f"{n_valid} finding(s) judged valid are recorded with this decision.")
        submitted = st.form_submit_button("Save decision", type="primary")
    if submitted and decision is None:
        st.error("Choose a decision first (" + ", ".join(DECISIONS) + "); nothing was saved.")
    elif submitted and decision is not None:
        try:
            with state.get_session() as session:
                row = add_review(
                    session, d.task.task_id, decision, reviewer or "", note,
                    settings=state.current_settings(), require_known_task=True,
                )  # fmt: skip
        except ReviewError as exc:
            st.error(escape_md(str(exc)))
            return
        if not login_name:
            st.session_state[w.KEY_REVIEWER_NAME] = row.reviewer
        st.session_state[w.KEY_SIGNOFF_FLASH] = (
            f"Saved: {row.decision} by {escape_md(row.reviewer)}."
        )
        # The note and the choice belong to this decision only; the reviewer name stays.
        # They are set (not popped) before the next run draws the form: a popped key leaves
        # the browser showing, and sending back, the old text.
        st.session_state[KEY_SIGNOFF_RESET] = True
        st.rerun()
    st.caption("History (latest last)")
    if d.reviews:
        tables.show_table(
            pd.DataFrame(
                [
                    {
                        "time (UTC)": r.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                        "decision": r.decision,
                        "reviewer": r.reviewer,
                        "note": r.note,
                    }
                    for r in d.reviews
                ]
            ),
            key=KEY_HISTORY_TABLE,
            pinned=["decision", "note"],
            wrap=["note"],
            width="stretch",
        )
        export_buttons("task_export", d.task.task_id)
    else:
        st.caption("No decision yet.")


def detail_view(task_id: str) -> None:
    with state.get_session() as session:
        d = task_detail(session, task_id, state.current_settings())
    if st.button("All tasks", icon=":material/arrow_back:"):
        open_task(None)
        st.rerun()
    if d is None:
        st.title("Tasks")
        st.warning(f"There is no task {escape_md(task_id)} in this store.")
        return
    st.title(escape_md(d.task.task_id), anchor=False)
    facts = [d.task.name if d.task.name != d.task.task_id else None, d.task.category, d.task.kind]
    facts.append(d.task.grading_type)
    st.caption(" · ".join(escape_md(str(f)) for f in facts if f))
    main, side = st.columns([3, 1.25], gap="large")
    with side:
        st.subheader("Difficulty filter", anchor=False)
        for term in d.filter.terms:
            st.markdown(f"{w.verdict_badge(term.passed)} `{term.name}` — {term.value}")
        overall = verdict_label(d.filter.passed)
        st.badge(f"overall: {overall}", color=w.VERDICT_COLOUR[overall])
        signoff_panel(d)
    with main:
        rows = fw.task_findings(d.task.task_id)
        # Stable labels: a tab whose label changes is a new element, and the browser would
        # fall back to the first tab on every rerun (after Diagnose, after each verdict).
        tabs = st.tabs(
            ["Instruction", "Input files", "Checker", "Rubric", "Attempts", "Run checker",
             "Findings"]
        )  # fmt: skip
        with tabs[0]:
            instruction_tab(d, rows)
        with tabs[1]:
            files_tab(d, rows)
        with tabs[2]:
            checker_tab(d, rows)
        with tabs[3]:
            rubric_tab(d, rows)
        with tabs[4]:
            attempts_tab(d)
        with tabs[5]:
            run_checker_tab(d)
        with tabs[6]:
            fw.diagnose_panel(d, rows)
