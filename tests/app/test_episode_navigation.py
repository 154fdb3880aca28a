"""AppTest of the Episode page's navigation: the switcher (previous / next in the Runs order),
the episode remembered across pages, the URL written only by a selection, the Workspace link."""

from __future__ import annotations

from apphelpers import no_exception, open_page

from clawviz.ui import state
from tests.dburl import query

EPISODE = "pages/episode.py"
TASKS = "pages/tasks.py"
TOO_MANY = "e31cf886-54eb-430f-8bb4-89af4c2f1420"
NO_WORKSPACE = "t0003-claude-code-a3"
KEY_PREV, KEY_NEXT, KEY_FIND = "episode_prev", "episode_next", "episode_find"


def _qp(at, name: str) -> list[str]:
    value = at.query_params.get(name, [])
    return [value] if isinstance(value, str) else list(value)


def _dropped(url: str) -> list[str]:
    """Dropped episodes in the store's Runs order (episodes_frame orders by episode id)."""
    rows = query(
        url,
        "SELECT e.episode_id FROM episode e JOIN episode_status s ON s.episode_id = e.episode_id "
        "WHERE s.status = 'dropped'",
    )
    return [r[0] for r in rows]


def test_opening_an_episode_writes_no_call_to_the_url(sample_db_url, on_store):
    # Every URL write pushes a browser history entry: only a selection may write one.
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=TOO_MANY)
    no_exception(at)
    assert _qp(at, state.QP_CALL) == []
    assert _qp(at, state.QP_EPISODE) == [TOO_MANY]
    calls = at.selectbox(key=state.KEY_CALL_SELECT).options
    at.selectbox(key=state.KEY_CALL_SELECT).select_index(len(calls) - 1).run()
    assert _qp(at, state.QP_CALL) != []
    # Back in the browser drops the call from the URL: the page follows the URL, not the
    # widget's remembered value.
    chosen = at.selectbox(key=state.KEY_CALL_SELECT).value
    del at.query_params[state.QP_CALL]
    at.run()
    assert at.selectbox(key=state.KEY_CALL_SELECT).value != chosen


def test_previous_and_next_walk_the_runs_filters(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    at.multiselect(key=state.KEY_FILTER_STATUS).select("dropped").run()
    shown = list(
        next(d for d in at.dataframe if "episode_id" in d.value.columns).value["episode_id"]
    )
    assert sorted(shown) == sorted(_dropped(sample_db_url)) and len(shown) >= 3
    at.switch_page(EPISODE)
    at.query_params.clear()
    at.query_params[state.QP_EPISODE] = shown[0]
    at.run()
    no_exception(at)
    assert at.button(key=KEY_PREV).disabled
    assert not at.button(key=KEY_NEXT).disabled
    assert [b.key for b in at.selectbox] == [state.KEY_CALL_SELECT], "no episode selectbox"
    assert any(f"1 of {len(shown)} in the Runs filters" in c.value for c in at.caption)
    at.button(key=KEY_NEXT).click().run()
    assert _qp(at, state.QP_EPISODE) == [shown[1]]
    assert shown[1].replace("-", "\\-") in at.title[0].value
    at.button(key=KEY_PREV).click().run()
    assert _qp(at, state.QP_EPISODE) == [shown[0]]
    # The find box: the episode by its id, one click opens it.
    at.text_input(key=KEY_FIND).input(shown[-1]).run()
    hits = [b for b in at.button if b.key and b.key.startswith("episode_hit_")]
    assert [b.label.replace("\\", "") for b in hits] == [shown[-1]]
    hits[0].click().run()
    assert _qp(at, state.QP_EPISODE) == [shown[-1]]
    assert at.button(key=KEY_NEXT).disabled
    assert at.text_input(key=KEY_FIND).value == ""


def test_previous_and_next_walk_the_default_runs_order_without_filters(sample_db_url, on_store):
    """No Runs filters: the neighbours come from bounded queries (store.nav) in the Runs
    table's default order: task, harness, attempt, id."""
    on_store(sample_db_url)
    rows = query(sample_db_url, "SELECT episode_id, task_id, harness, attempt FROM episode")
    order = [
        r[0]
        for r in sorted(
            rows,
            key=lambda r: (r[1] is None, r[1] or "", r[2] is None, r[2] or "",
                           r[3] is None, r[3] or 0, r[0]),
        )
    ]  # fmt: skip
    at = open_page(EPISODE, episode=order[1])
    no_exception(at)
    assert any(f"2 of {len(order)} in the Runs table" in c.value for c in at.caption)
    at.button(key=KEY_NEXT).click().run()
    assert _qp(at, state.QP_EPISODE) == [order[2]]
    at.button(key=KEY_PREV).click().run()
    at.button(key=KEY_PREV).click().run()
    assert _qp(at, state.QP_EPISODE) == [order[0]]
    assert at.button(key=KEY_PREV).disabled


def test_the_last_episode_is_remembered_across_pages(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=TOO_MANY)
    at.switch_page(TASKS)
    at.query_params.clear()
    at.run()
    no_exception(at)
    at.switch_page(EPISODE).run()  # the menu: no query parameters
    no_exception(at)
    assert "e31cf886" in at.title[0].value
    assert not any("Find an episode" in i.value for i in at.info)


def test_workspace_link_only_for_attempts_with_a_workspace(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=TOO_MANY)
    links = [(x.proto.page, x.proto.query_string) for x in at.page_link]
    assert ("workspace", f"episode={TOO_MANY}") in links
    at = open_page(EPISODE, episode=NO_WORKSPACE)
    no_exception(at)
    assert not any(x.proto.page == "workspace" for x in at.page_link)
    assert any("No workspace recorded" in c.value for c in at.caption)
