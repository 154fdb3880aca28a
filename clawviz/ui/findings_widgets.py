"""Diagnosis findings on the Tasks page: each finding beside the part it concerns, with the
reviewer's valid / not valid verdict and a note; the Diagnose action with its progress."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from clawviz.figures import SEVERITY_COLOURS, VERDICT_COLOURS
from clawviz.review import (
    Diagnosis,
    DiagnosisError,
    Endpoint,
    TaskDetail,
    diagnose_tasks,
    judge,
    list_findings,
    runs_of,
    save_diagnosis,
)
from clawviz.store import Finding
from clawviz.ui import access, state
from clawviz.ui.inspector import escape_md

KEY_REVIEWER = "findings_reviewer"
KEY_BASE_URL = "diagnose_base_url"
KEY_MODEL = "diagnose_model"
KEY_API = "diagnose_api"
KEY_KEY_ENV = "diagnose_api_key_env"
KEY_FLASH = "findings_flash"
VERDICT_LABEL = {None: "open", "valid": "valid", "not_valid": "not valid"}
AREA_TITLE = {
    "instruction": "instruction",
    "inputs": "input files",
    "checker": "checker",
    "rubric": "rubric",
}


def task_findings(task_id: str) -> list[Finding]:
    with state.get_session() as session:
        return list_findings(session, task_id)


def reviewer_name() -> str:
    """The name the sign-off form remembers, else what the reviewer typed here."""
    from clawviz.ui.tasks_widgets import KEY_REVIEWER_NAME, KEY_SIGNOFF_REVIEWER

    for key in (KEY_REVIEWER_NAME, KEY_SIGNOFF_REVIEWER):
        name = (st.session_state.get(key) or "").strip()
        if name:
            return name
    return ""


def area_findings(task_id: str, area: str, rows: list[Finding]) -> None:
    """The findings of one area, placed next to that part of the task."""
    mine = [f for f in rows if f.area == area]
    if not mine:
        return
    n_open = sum(1 for f in mine if f.verdict is None)
    title = f"Findings on the {AREA_TITLE[area]}: {len(mine)} ({n_open} open)"
    with st.container(border=True):
        st.markdown(f"**{escape_md(title)}**")
        for f in mine:
            finding_card(task_id, f)


def finding_card(task_id: str, f: Finding) -> None:
    head = st.columns([1, 1, 4], vertical_alignment="center")
    head[0].badge(f.severity, color=SEVERITY_COLOURS.get(f.severity, "gray"))
    verdict = VERDICT_LABEL.get(f.verdict, f.verdict or "open")
    head[1].badge(verdict, color=VERDICT_COLOURS.get(verdict, "blue"))
    head[2].caption(f"#{f.id} · {escape_md(f.model)} · prompt {escape_md(f.prompt_hash or '—')}")
    st.text(f"Problem: {f.problem}")
    if f.suggestion:
        st.text(f"Suggested fix: {f.suggestion}")
    if f.verdict_by:
        note = f" — {f.verdict_note}" if f.verdict_note else ""
        st.caption(escape_md(f"judged {verdict} by {f.verdict_by}{note}"))
    with st.form(f"finding_form_{f.id}", border=False):
        note = st.text_input("Note", key=f"finding_note_{f.id}", placeholder="why (optional)")
        c = st.columns(2)
        valid = c[0].form_submit_button("Valid", icon=":material/check:")
        not_valid = c[1].form_submit_button("Not valid", icon=":material/close:")
    if valid or not_valid:
        name = reviewer_name()
        if not name:
            st.error("Type your name in the Reviewer field of the sign-off panel first.")
            return
        with state.get_session() as session:
            judge(session, f.id or 0, "valid" if valid else "not_valid", name, note)
        st.session_state[KEY_FLASH] = f"Finding #{f.id} judged {'valid' if valid else 'not valid'}."
        st.rerun()


def diagnose_panel(d: TaskDetail, rows: list[Finding]) -> None:
    """The Findings tab: every finding, the runs with their cost, and the Diagnose action."""
    flash = st.session_state.pop(KEY_FLASH, None)
    if flash:
        st.success(flash)
    with state.get_session() as session:
        runs = runs_of(session, d.task.task_id)
    if rows:
        n_open = sum(1 for f in rows if f.verdict is None)
        st.markdown(f"**{len(rows)} finding(s), {n_open} open**")
    if runs:
        st.dataframe(
            pd.DataFrame(
                [{"time (UTC)": r.created_at.strftime("%Y-%m-%d %H:%M"), "model": r.model,
                  "source": r.source, "findings": r.n_findings,
                  "tokens in": r.input_tokens, "tokens out": r.output_tokens,
                  "seconds": round(r.seconds, 1) if r.seconds is not None else None,
                  "error": r.error or "—"} for r in runs]
            ),
            hide_index=True, width="stretch",
        )  # fmt: skip
    else:
        st.caption(
            "No diagnosis yet. A model reads the instruction, input files, checker and "
            "rubric and reports problems; you judge each one before signing off."
        )
    if rows:
        st.caption(
            "Every finding also sits beside the part it concerns (Instruction, Input files, "
            "Checker, Rubric tabs), where you judge it."
        )
        st.dataframe(
            pd.DataFrame(
                [{"#": f.id, "area": f.area, "severity": f.severity,
                  "verdict": VERDICT_LABEL.get(f.verdict, f.verdict), "problem": f.problem,
                  "suggestion": f.suggestion or "—", "model": f.model} for f in rows]
            ),
            hide_index=True, width="stretch",
        )  # fmt: skip
    if access.blocked("Diagnosis runs"):
        return
    with st.expander("Diagnose with a model", expanded=not runs):
        endpoint_form(d)


def endpoint_form(d: TaskDetail) -> None:
    settings = state.current_settings()
    with st.form("diagnose_form", border=False):
        c = st.columns([3, 2])
        base_url = c[0].text_input(
            "Base URL", value=settings.diagnose_base_url, key=KEY_BASE_URL,
            help="An OpenAI-compatible endpoint (vLLM, SGLang, LiteLLM, a hosted API) or "
            "Anthropic Messages.",
        )  # fmt: skip
        model = c[1].text_input("Model", value=settings.diagnose_model, key=KEY_MODEL)
        c2 = st.columns([2, 3])
        api = c2[0].selectbox("API", ("openai", "anthropic"), key=KEY_API,
                              index=0 if settings.diagnose_api == "openai" else 1)  # fmt: skip
        key_env = c2[1].text_input(
            "API key environment variable", value=settings.diagnose_api_key_env,
            key=KEY_KEY_ENV, help="The key is read from the app's environment; it is never "
            "stored or shown. Leave empty for a local server without keys.",
        )  # fmt: skip
        go = st.form_submit_button("Diagnose", type="primary", icon=":material/psychology:")
    if not go:
        return
    if not base_url.strip() or not model.strip():
        st.error("A base URL and a model are needed.")
        return
    ep = Endpoint(
        base_url=base_url.strip(), model=model.strip(),
        api="anthropic" if api == "anthropic" else "openai",
        api_key_env=key_env.strip() or None, timeout_s=settings.diagnose_timeout_s,
        max_findings=settings.diagnose_max_findings,
    )  # fmt: skip
    bar = st.progress(0.0, text=f"Asking {model} about {d.task.task_id}…")

    def progress(done: int, total: int, _r: Diagnosis) -> None:
        bar.progress(done / total, text="Storing findings…")

    try:
        (result,) = diagnose_tasks(
            [d], ep, file_budget=settings.diagnose_file_budget,
            progress=progress,
        )  # fmt: skip
    except DiagnosisError as exc:
        st.error(escape_md(str(exc)))
        return
    with state.get_session() as session:
        save_diagnosis(session, result)
    if result.error:
        st.session_state[KEY_FLASH] = None
        st.error(escape_md(f"The diagnosis failed: {result.error}"))
        return
    st.session_state[KEY_FLASH] = (
        f"{len(result.findings)} finding(s) from {model} "
        f"({result.input_tokens or 0} tokens in, {result.output_tokens or 0} out)."
    )
    st.rerun()
