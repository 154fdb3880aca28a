"""Comments on calls (issue 25 §5): the store round trip on both backends (the suite's
--db-url runs it on PostgreSQL), the counts the Runs page lists, and `explain --json`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select

from clawviz.cli.main import main
from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store import models
from clawviz.store.comments import (
    CommentError,
    add_comment,
    comment_counts,
    comments_for_episode,
)
from clawviz.store.db import get_engine
from tests.conftest import SAMPLE_LOGS, SCRIPT_TEXT
from tests.dburl import fresh_url

LOGS = SAMPLE_LOGS / "exchanges" / "claude-code"
A, B = "t0001-claude-code-a1", "t0001-claude-code-a2"


@pytest.fixture
def store(tmp_path) -> str:
    url = fresh_url(tmp_path, "comments")
    with Session(get_engine(url)) as s:
        ingest_paths([LOGS / f"{A}.jsonl", LOGS / f"{B}.jsonl"], session=s)
        ensure_analysis(s)
    return url


def _calls(s: Session, episode: str) -> list[str]:
    rows = s.exec(select(models.CallRow).where(models.CallRow.episode_id == episode))
    return sorted(r.call_id for r in rows)


def test_round_trip_keeps_reviewer_time_and_hostile_text(store):
    with Session(get_engine(store)) as s:
        calls = _calls(s, A)
        before = datetime.now(UTC) - timedelta(seconds=1)
        first_id = add_comment(s, A, calls[0], "  ada  ", SCRIPT_TEXT).id
        add_comment(s, A, calls[1], "bob", "second call looks retried\nsee line 2")
        add_comment(s, A, calls[0], "bob", "agree")
    with Session(get_engine(store)) as s:
        got = comments_for_episode(s, A)
    assert [(c.call_id, c.reviewer, c.text) for c in got] == [
        (calls[0], "ada", SCRIPT_TEXT),
        (calls[1], "bob", "second call looks retried\nsee line 2"),
        (calls[0], "bob", "agree"),
    ]
    created = got[0].created_at.replace(tzinfo=got[0].created_at.tzinfo or UTC)
    assert before <= created <= datetime.now(UTC) + timedelta(seconds=1)
    assert first_id is not None and got[0].id == first_id


def test_counts_per_episode_leave_out_the_uncommented(store):
    with Session(get_engine(store)) as s:
        a, b = _calls(s, A), _calls(s, B)
        for text in ("one", "two", "three"):
            add_comment(s, A, a[2], "ada", text)
        add_comment(s, B, b[0], "ada", "only one")
        assert comment_counts(s, [A, B, "no-such-episode"]) == {A: 3, B: 1}
        assert comment_counts(s, []) == {}
        assert comment_counts(s, [B]) == {B: 1}


def test_bad_comments_are_refused_and_nothing_is_stored(store):
    with Session(get_engine(store)) as s:
        a, b = _calls(s, A), _calls(s, B)
        cases = [
            ((A, a[0], "", "text"), "reviewer name is required"),
            ((A, a[0], "ada", "   "), "needs some text"),
            ((A, a[0], "ada", "x" * 10_001), "at most 10,000"),
            ((A, b[0], "ada", "text"), "no call"),  # a call of another episode
            ((A, "nope", "ada", "text"), "no call"),
            ((A, a[0], "ad\x1ba", "text"), "control characters"),
        ]
        for args, words in cases:
            with pytest.raises(CommentError, match=words):
                add_comment(s, *args)
        assert comments_for_episode(s, A) == []


def test_explain_json_lists_each_calls_comments(store, capsys):
    with Session(get_engine(store)) as s:
        a = _calls(s, A)
        add_comment(s, A, a[3], "ada", SCRIPT_TEXT)
    assert main(["--db", store, "explain", A, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_id = {r["call_id"]: r for r in rows}
    assert [(c["reviewer"], c["text"]) for c in by_id[a[3]]["comments"]] == [("ada", SCRIPT_TEXT)]
    assert datetime.fromisoformat(by_id[a[3]]["comments"][0]["created_at"]).tzinfo is not None
    assert all(r["comments"] == [] for cid, r in by_id.items() if cid != a[3])


def test_the_explorer_remembers_the_name_the_sign_off_remembers():
    from clawviz.ui.explorer.component import KEY_REVIEWER_NAME
    from clawviz.ui.tasks_widgets import KEY_REVIEWER_NAME as SIGNOFF_KEY

    assert KEY_REVIEWER_NAME == SIGNOFF_KEY


def test_the_trusted_header_user_is_the_reviewer_whatever_name_is_sent(store):
    from clawviz.ui.explorer.component import store_comment

    with Session(get_engine(store)) as s:
        a = _calls(s, A)
        event = {"call_id": a[0], "text": "looks fine", "reviewer": "mallory"}
        assert store_comment(s, A, event, "alice@example.org").reviewer == "alice@example.org"
        assert store_comment(s, A, event, None).reviewer == "mallory"
        with pytest.raises(CommentError, match="reviewer name is required"):
            store_comment(s, A, {**event, "reviewer": ""}, None)
