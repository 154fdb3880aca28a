"""Reviewer identity from a trusted proxy header, and the read-only deployment (clawviz.ui.access).

AppTest cannot send request headers (Streamlit 1.67 seeds `st.context.headers` from the real
client only), so the header read is one function, `access.request_headers`, tested by itself
and replaced here by what a proxy would send; tests/browser/test_trusted_header.py sends a
real header through a loopback proxy.
"""

from __future__ import annotations

import pytest
from apphelpers import no_exception, open_page
from sqlmodel import Session
from test_tasks_page import store, tasks_page  # noqa: F401 - the fixture is used by name

from clawviz.review.signoff import review_history
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine
from clawviz.ui import access, state
from clawviz.ui import tasks_widgets as w

PROXY = {"Host": "127.0.0.1", "X-Forwarded-User": "ann@example.org"}


def _server(monkeypatch, **changes) -> None:
    monkeypatch.setattr(access, "server_settings", lambda: DEFAULT_SETTINGS.with_(**changes))


def _headers(monkeypatch, headers: dict[str, str]) -> None:
    monkeypatch.setattr(access, "request_headers", lambda: dict(headers))


# --- the header read --------------------------------------------------------------------------
def test_the_header_names_the_user_only_when_the_setting_names_the_header():
    assert access.user_from_headers(PROXY, "X-Forwarded-User") == "ann@example.org"
    assert access.user_from_headers(PROXY, "x-forwarded-user") == "ann@example.org"
    assert access.user_from_headers({"remote-user": " bob "}, "Remote-User") == "bob"
    assert access.user_from_headers(PROXY, "") is None  # the default: headers ignored
    assert access.user_from_headers(PROXY, "Remote-User") is None  # not the header named


@pytest.mark.parametrize("value", ["", "   ", "ann\nX-Admin: 1", "ann\x00", "a" * 201])
def test_a_blank_multiline_control_or_huge_value_names_nobody(value):
    assert access.user_from_headers({"X-Forwarded-User": value}, "X-Forwarded-User") is None


def test_trusted_user_ignores_the_header_by_default(monkeypatch):
    _headers(monkeypatch, PROXY)
    assert DEFAULT_SETTINGS.trusted_user_header == ""
    assert access.trusted_user() is None
    _server(monkeypatch, trusted_user_header="X-Forwarded-User")
    assert access.trusted_user() == "ann@example.org"


def test_the_settings_page_cannot_edit_either_setting():
    from clawviz.ui.settings_form import FORM_SETTINGS

    assert not {"read_only", "trusted_user_header"} & {s.name for s in FORM_SETTINGS}


def _plain(md: str) -> str:
    """Markdown as a reader sees it: escapes and zero-width breaks removed."""
    return md.replace("\\", "").replace("\u200b", "").replace("\u2060", "")


# --- sign-off ---------------------------------------------------------------------------------
def _save(at, decision: str) -> None:
    at.radio(key=w.KEY_SIGNOFF_DECISION).set_value(decision)
    at.button[[b.label for b in at.button].index("Save decision")].click().run()
    no_exception(at)


def test_signoff_reviewer_is_the_proxy_user_and_cannot_be_typed(store, monkeypatch):  # noqa: F811
    _server(monkeypatch, trusted_user_header="X-Forwarded-User")
    _headers(monkeypatch, PROXY)
    at = tasks_page("task_0001")
    assert not [t for t in at.text_input if t.key == w.KEY_SIGNOFF_REVIEWER]
    assert any(_plain(c.value).startswith("Reviewer: ann@example.org") for c in at.caption)
    at.session_state[w.KEY_SIGNOFF_REVIEWER] = "someone else"  # a stale typed name loses
    _save(at, "accept")
    with Session(get_engine(store)) as s:
        assert [(r.decision, r.reviewer) for r in review_history(s, "task_0001")] == [
            ("accept", "ann@example.org")
        ]


def test_without_the_header_in_the_request_the_reviewer_types_a_name(store, monkeypatch):  # noqa: F811
    _server(monkeypatch, trusted_user_header="X-Forwarded-User")
    _headers(monkeypatch, {"Host": "127.0.0.1"})
    at = tasks_page("task_0001")
    at.text_input(key=w.KEY_SIGNOFF_REVIEWER).input("Typed Name")
    _save(at, "revise")
    with Session(get_engine(store)) as s:
        assert [r.reviewer for r in review_history(s, "task_0001")] == ["Typed Name"]


def test_a_header_is_ignored_when_the_setting_is_empty(store, monkeypatch):  # noqa: F811
    _headers(monkeypatch, PROXY)
    at = tasks_page("task_0001")
    assert at.text_input(key=w.KEY_SIGNOFF_REVIEWER).value in ("", None)
    assert not any("ann@example.org" in _plain(c.value) for c in at.caption)


# --- read-only --------------------------------------------------------------------------------
def _notes(at) -> list[str]:
    return [i.value for i in at.info if "read-only" in i.value]


def test_read_only_hides_ingest(empty_db_url, on_store, monkeypatch):
    on_store(empty_db_url)
    _server(monkeypatch, read_only=True)
    at = open_page("pages/ingest.py")
    no_exception(at)
    assert any("Ingest" in n for n in _notes(at))
    assert not [t for t in at.text_input if t.key == state.KEY_INGEST_PATH]
    assert not [b for b in at.button if b.key in (state.KEY_INGEST_RUN, "ingest_upload_run")]
    _server(monkeypatch, read_only=False)
    at = open_page("pages/ingest.py")
    assert at.text_input(key=state.KEY_INGEST_PATH) is not None and not _notes(at)


def test_read_only_shows_settings_but_not_the_form(sample_db_url, on_store, monkeypatch):
    on_store(sample_db_url)
    _server(monkeypatch, read_only=True)
    at = open_page("pages/settings.py")
    no_exception(at)
    assert any("Changing settings" in n for n in _notes(at))
    assert not at.number_input  # max_leaves and every other field of the form
    table = next(d.value for d in at.dataframe if "help" in d.value.columns)
    assert {"read_only", "trusted_user_header"} <= set(table["name"])


def test_read_only_hides_checker_and_diagnosis_runs_but_keeps_signoff(store, monkeypatch):  # noqa: F811
    _server(monkeypatch, read_only=True)
    at = tasks_page("task_0001")
    notes = _notes(at)
    assert any("Running checkers" in n for n in notes)
    assert any("Diagnosis runs" in n for n in notes)
    assert not [b for b in at.button if b.key in (w.KEY_CHECK_RUN, "tasks_check_reference")]
    assert "Diagnose" not in [b.label for b in at.button]
    at.text_input(key=w.KEY_SIGNOFF_REVIEWER).input("Viewer Vic")
    _save(at, "reject")
    with Session(get_engine(store)) as s:
        assert [r.reviewer for r in review_history(s, "task_0001")] == ["Viewer Vic"]
