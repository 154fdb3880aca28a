"""AppTest of the Runs Task filter: a page of tasks, a find box for the others, and the URL's
tasks kept (issue 26 §3: a run has tens of thousands of tasks; each rerun sent them all)."""

from __future__ import annotations

from apphelpers import no_exception, open_page

from clawviz import store
from clawviz.ui import state
from tests.dburl import query


def _tasks(url: str) -> list[str]:
    rows = query(
        url,
        "SELECT DISTINCT task_id FROM episode "
        "WHERE task_id IS NOT NULL AND primary_episode IS NULL",
    )
    return sorted(str(r[0]) for r in rows)


def _table_tasks(at) -> set[str]:
    table = next(d for d in at.dataframe if "episode_id" in d.value.columns).value
    return set(table["task_id"])


def test_the_task_filter_offers_a_page_finds_the_rest_and_keeps_the_links_tasks(
    sample_db_url, on_store, monkeypatch
):
    on_store(sample_db_url)
    monkeypatch.setattr(store, "TASK_OPTIONS", 1)
    tasks = _tasks(sample_db_url)
    assert len(tasks) >= 3
    # A pasted link naming the last task (beyond the first page) and one the store lacks.
    at = open_page()
    at.query_params["task"] = [tasks[-1], "no-such-task"]
    at.run()
    no_exception(at)
    box = at.multiselect(key=state.KEY_FILTER_TASK)
    assert box.options == [tasks[-1], tasks[0]]
    assert box.value == [tasks[-1]]
    assert _table_tasks(at) == {tasks[-1]}
    # Typing part of another task's id offers it; the chosen one stays chosen.
    at.text_input(key=state.KEY_FILTER_TASK_FIND).input(tasks[1].upper()).run()
    no_exception(at)
    box = at.multiselect(key=state.KEY_FILTER_TASK)
    assert box.options == [tasks[-1], tasks[1]] and box.value == [tasks[-1]]
    box.select(tasks[1]).run()
    no_exception(at)
    assert _table_tasks(at) == {tasks[-1], tasks[1]}
    assert sorted(at.query_params["task"]) == sorted([tasks[-1], tasks[1]])


def test_the_task_find_box_says_when_no_task_matches(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    at.text_input(key=state.KEY_FILTER_TASK_FIND).input("no-such-task-anywhere").run()
    no_exception(at)
    assert at.multiselect(key=state.KEY_FILTER_TASK).options == []
    assert any("No other task id contains" in c.value for c in at.caption)
