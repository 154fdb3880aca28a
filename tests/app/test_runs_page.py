"""AppTest of the Runs page on the sample store, on an empty store and on hostile text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apphelpers import no_exception, open_page

from clawviz.ui import runs, state
from tests.dburl import fresh_url, query

TOO_MANY = "e31cf886-54eb-430f-8bb4-89af4c2f1420"


def _episode_count(url: str) -> int:
    return query(url, "SELECT COUNT(*) FROM episode")[0][0]


def _table(at):
    return next(d for d in at.dataframe if "episode_id" in d.value.columns).value


def test_runs_page_lists_every_episode_with_charts(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    no_exception(at)
    assert at.title[0].value == "Runs"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Episodes"] == str(_episode_count(sample_db_url))
    table = _table(at)
    assert len(table) == _episode_count(sample_db_url)
    assert {
        "task_id",
        "harness",
        "model",
        "attempt",
        "reward",
        "advantage",
        "status",
        "reasons",
    } <= set(table.columns)
    row = table[table["episode_id"] == TOO_MANY].iloc[0]
    assert row["status"] == "dropped" and "too_many_branches" in row["reasons"]
    # The charts are a section drawn only while it is open (closed by default): none here.
    assert not at.get("plotly_chart")
    assert [e.label for e in at.expander if e.label == runs.CHARTS_LABEL] == [runs.CHARTS_LABEL]
    # Dataset statistics next to the paper's figures.
    stats = next(d.value for d in at.dataframe if "statistic" in d.value.columns)
    assert list(stats["paper (ClawGym SFT)"]) == [13.0, 18670.0, 15.82, 3.25]
    assert stats["this store"].notna().all()


def test_the_charts_section_draws_the_shown_episodes_charts_when_open(sample_db_url, on_store):
    on_store(sample_db_url)
    # Open, as ?charts=1 says (the section writes it when opened; a pasted link keeps it).
    at = open_page(charts="1")
    no_exception(at)
    keys = [c.key for c in at.get("plotly_chart")]
    assert keys == ["runs_reasons_chart", "runs_reward_chart", "runs_adv_chart"]
    reasons = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert "too_many_branches" in reasons["y"] and len(reasons["y"]) > 1
    # A filter change keeps the section open and redraws it for the episodes shown.
    at.multiselect(key=state.KEY_FILTER_REASON).select("too_many_branches").run()
    no_exception(at)
    assert _qp(at, "charts") == ["1"] and _qp(at, "reason") == ["too_many_branches"]
    after = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    # The one episode with that reason has no other: its chart has that one bar.
    assert list(after["y"]) == ["too_many_branches"]


def test_reason_filter_narrows_the_table(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    at.multiselect(key=state.KEY_FILTER_REASON).select("too_many_branches").run()
    no_exception(at)
    assert list(_table(at)["episode_id"]) == [TOO_MANY]
    at.multiselect(key=state.KEY_FILTER_REASON).unselect("too_many_branches")
    at.multiselect(key=state.KEY_FILTER_HARNESS).select("openclaw").run()
    assert set(_table(at)["harness"]) == {"openclaw"}


def test_reward_range_excludes_missing_rewards_when_asked(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    at.slider(key=state.KEY_FILTER_REWARD).set_value((0.9, 1.0))
    at.checkbox(key=state.KEY_FILTER_NO_REWARD).uncheck().run()
    rewards = _table(at)["reward"]
    assert len(rewards) > 0 and (rewards >= 0.9).all()


def _qp(at, name: str) -> list[str]:
    value = at.query_params.get(name, [])
    return [value] if isinstance(value, str) else list(value)


def _open_links(at) -> list[tuple[str, str]]:
    return [(link.proto.page, link.proto.query_string) for link in at.page_link]


def test_selecting_a_row_offers_a_same_tab_link_to_the_episode(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    assert not any(page.endswith("episode") for page, _ in _open_links(at))
    table = _table(at)
    target = table.index[table["episode_id"] == TOO_MANY][0]
    at.session_state[state.KEY_RUNS_TABLE] = {
        "selection": {"rows": [int(target)], "columns": [], "cells": []}
    }
    at.run()
    no_exception(at)
    # A page link (one history entry), not st.switch_page with query parameters (two).
    assert ("episode", f"episode={TOO_MANY}") in _open_links(at)
    assert state.QP_EPISODE not in at.query_params
    # Following it shows the episode.
    at.switch_page("pages/episode.py")
    at.query_params[state.QP_EPISODE] = TOO_MANY
    at.run()
    assert at.title[0].value.endswith("e31cf886\\-54eb\\-430f\\-8bb4\\-89af4c2f1420")


def test_runs_table_key_columns_first_pinned_and_formatted(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    frame = next(d for d in at.dataframe if "episode_id" in d.value.columns)
    proto = frame.proto
    order = list(proto.column_order)
    # The key columns of issue 25 §3 first, in this order (they fit at 1280 px), then the
    # narrow notes and cross-check marks; the id last.
    assert order == [
        "task_id", "harness", "model", "attempt", "n_calls", "reward", "advantage", "status",
        "short_reasons", "notes", "check", "episode_id",
    ]  # fmt: skip
    config = json.loads(proto.columns)
    assert config["task_id"].get("pinned") is True
    assert config["reward"]["type_config"]["format"] == "%.2f"
    assert config["advantage"]["type_config"]["format"] == "%+.2f"
    assert config["n_calls"]["label"] == "calls"
    # Missing values (a dropped episode has no advantage) are drawn as "—", never None.
    assert proto.placeholder == "—"
    assert frame.value["advantage"].isna().any()
    # Reasons are cut short in the table; the whole list stays in the (hidden) reasons column.
    row = frame.value[frame.value["episode_id"] == TOO_MANY].iloc[0]
    assert "too_many_branches" in row["reasons"]
    short, full = frame.value["short_reasons"].fillna(""), frame.value["reasons"].fillna("")
    assert all(len(v) <= 30 for v in short)
    long = frame.value[full.str.len() > 30]
    assert len(long) and all(s.split(",")[0].split(" ")[0] in r for s, r in
                             zip(long["short_reasons"], long["reasons"], strict=True))  # fmt: skip
    assert config["short_reasons"]["help"]


def test_pages_step_through_the_filtered_rows(sample_db_url, on_store, monkeypatch):
    import clawviz.store as store_stage

    on_store(sample_db_url)
    monkeypatch.setattr(store_stage, "RUNS_PAGE_SIZE", 5)  # where the Runs page reads it
    at = open_page()
    no_exception(at)
    n = _episode_count(sample_db_url)
    ids = list(_table(at)["episode_id"])
    assert len(ids) == 5
    seen = list(ids)
    while not at.button(key="runs_next").disabled:
        at.button(key="runs_next").click().run()
        no_exception(at)
        seen += list(_table(at)["episode_id"])
    # Every episode once, in the Runs order (task, harness, attempt, id) read by its own SQL.
    want = [r[0] for r in query(sample_db_url, "SELECT episode_id FROM episode "
                                "ORDER BY task_id, harness, attempt, episode_id")]  # fmt: skip
    assert len(seen) == n and seen == want
    at.button(key="runs_prev").click().run()
    assert list(_table(at)["episode_id"]) == want[-(n % 5 or 5) - 5 : -(n % 5 or 5)]


def test_sort_orders_the_rows_in_sql(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    at.selectbox(key="runs_sort").set_value("reward").run()
    at.toggle(key="runs_sort_desc").set_value(True).run()
    no_exception(at)
    rewards = list(_table(at)["reward"].dropna())
    assert rewards == sorted(rewards, reverse=True) and len(rewards) > 3
    best = query(sample_db_url, "SELECT MAX(reward) FROM result")[0][0]
    assert rewards[0] == best


def test_filters_live_in_the_url_and_a_pasted_url_restores_them(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    at.multiselect(key=state.KEY_FILTER_REASON).select("too_many_branches").run()
    assert _qp(at, "reason") == ["too_many_branches"]
    at.slider(key=state.KEY_FILTER_REWARD).set_value((0.5, 1.0)).run()
    assert _qp(at, "reward") == ["0.5-1"]
    assert _qp(at, "reason") == ["too_many_branches"]
    # A fresh browser session on the pasted URL shows the same filters and rows.
    pasted = open_page(reason="too_many_branches", reward="0.5-1", status="dropped")
    no_exception(pasted)
    assert pasted.multiselect(key=state.KEY_FILTER_REASON).value == ["too_many_branches"]
    assert pasted.multiselect(key=state.KEY_FILTER_STATUS).value == ["dropped"]
    assert pasted.slider(key=state.KEY_FILTER_REWARD).value == (0.5, 1.0)
    assert list(_table(pasted)["episode_id"]) == [TOO_MANY]
    # A value the store does not have is dropped, not an error.
    odd = open_page(harness="no-such-harness", reward="banana")
    no_exception(odd)
    assert odd.multiselect(key=state.KEY_FILTER_HARNESS).value == []
    assert len(_table(odd)) == _episode_count(sample_db_url)


def test_sources_and_rejected_lines_are_listed(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    rejected = next(d.value for d in at.dataframe if "raw" in d.value.columns)
    assert len(rejected) >= 4
    assert {"file", "line", "reason", "raw"} <= set(rejected.columns)
    assert any("t0003-claude-code-a4" in f for f in rejected["file"])


def test_empty_store_says_so(empty_db_url, on_store):
    on_store(empty_db_url)
    at = open_page()
    no_exception(at)
    assert any("store is empty" in i.value for i in at.info)


def test_hostile_rejected_line_is_data_not_markup(hostile_db_url, on_store):
    on_store(hostile_db_url)
    at = open_page()
    no_exception(at)
    rejected = next(d.value for d in at.dataframe if "raw" in d.value.columns)
    assert rejected["raw"].iloc[0].startswith("<script>")
    assert not any("<script>" in m.value for m in at.markdown)


def test_reload_button_sees_rows_written_by_another_process(tmp_path, on_store):
    import shutil

    from clawviz.store.db import get_engine

    src = Path(__file__).resolve().parents[2] / "sample_logs" / "exchanges" / "openclaw"
    logs = sorted(src.glob("*.jsonl"))[:2]
    if len(logs) < 2:
        pytest.skip("sample logs missing")
    url = fresh_url(tmp_path, "store")
    for p in logs:
        shutil.copy(p, tmp_path / p.name)
    _ingest(url, [tmp_path / logs[0].name], get_engine)
    on_store(url)
    at = open_page()
    assert {m.label: m.value for m in at.metric}["Episodes"] == "1"
    _ingest(url, [tmp_path / logs[1].name], get_engine)
    at.run()
    # The live indicator saw the store change (issue 11): no Reload needed any more.
    assert {m.label: m.value for m in at.metric}["Episodes"] == "2"
    at.button(key=state.KEY_RELOAD).click().run()
    no_exception(at)
    assert {m.label: m.value for m in at.metric}["Episodes"] == "2"
    assert set(_table(at)["status"]) <= {"kept", "dropped"}


def _ingest(url, paths, get_engine) -> None:
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths

    with Session(get_engine(url)) as s:
        ingest_paths(paths, session=s)
        ensure_analysis(s)


def _episodes_saying(word: str) -> set[str]:
    """Episodes whose raw log records mention `word` anywhere (any case), read from the logs."""
    import json

    found = set()
    for log in (Path(__file__).resolve().parents[2] / "sample_logs" / "exchanges").rglob("*.jsonl"):
        for line in log.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if (
                word
                in json.dumps(
                    [record.get("request", {}).get("body"), record.get("response")],
                    ensure_ascii=False,
                ).lower()
            ):
                found.add(record.get("clawviz", {}).get("episode_id"))
    return found


def test_search_box_lists_hits_and_narrows_the_table(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page()
    at.text_input(key=state.KEY_SEARCH_TEXT).input("dumpster").run()
    no_exception(at)
    hits = next(d for d in at.dataframe if "snippet" in d.value.columns).value
    assert set(hits["episode_id"]) == _episodes_saying("dumpster")
    # A picked hit offers a same-tab link to its call.
    at.session_state[state.KEY_SEARCH_TABLE] = {
        "selection": {"rows": [0], "columns": [], "cells": []}
    }
    at.run()
    first = hits.iloc[0]
    wanted = ("episode", f"episode={first['episode_id']}&call={first['call_id']}")
    assert wanted in [
        (x.proto.page, x.proto.query_string.replace("%3A", ":")) for x in at.page_link
    ]
    assert _qp(at, "q") == ["dumpster"]
    assert set(_table(at)["episode_id"]) == _episodes_saying("dumpster")
    at.text_input(key=state.KEY_SEARCH_TEXT).input("zzqnotawordanywhere").run()
    assert any("No message or reply says" in i.value for i in at.info)


@pytest.fixture
def recorded_store(tmp_path):
    """A committed recording's wire log and the harness's own transcripts of the same run,
    ingested (as tests/test_sessions.py loads them) into a store file, analysed."""
    import shutil

    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine
    from tests.harness import recorded
    from tests.test_sessions import WITH_TRANSCRIPTS, _transcripts

    folder = WITH_TRANSCRIPTS[0]
    wire = tmp_path / "wire" / recorded.exchanges_file(folder).name
    wire.parent.mkdir()
    shutil.copy(recorded.exchanges_file(folder), wire)
    transcripts = []
    for f in _transcripts(folder):
        dst = tmp_path / "transcripts" / f.relative_to(folder)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst)
        transcripts.append(dst)
    url = fresh_url(tmp_path, "recorded")
    with Session(get_engine(url)) as s:
        for group in ([wire], transcripts):
            assert not ingest_paths(group, session=s).rejected
            s.commit()
        ensure_analysis(s)
        s.commit()
    return url


def test_transcripts_are_cross_checks_and_notes_are_counted(recorded_store, on_store,
                                                           monkeypatch):  # fmt: skip
    from sqlmodel import Session

    import clawviz.store as store_stage
    from clawviz.store import comments
    from clawviz.store.db import get_engine

    url = recorded_store
    wire = query(url, "SELECT episode_id FROM episode WHERE source_kind = 'exchange'")
    others = query(url, "SELECT COUNT(*) FROM episode WHERE source_kind <> 'exchange'")[0][0]
    assert len(wire) == 1 and others > 0
    wire_id = wire[0][0]
    calls = [r[0] for r in query(url, f"SELECT call_id FROM call WHERE episode_id = '{wire_id}'")]
    with Session(get_engine(url)) as s:
        comments.add_comment(s, wire_id, calls[0], "ana", "why is this retried?")
        comments.add_comment(s, wire_id, calls[-1], "bo", "fine")
    asked: list[tuple[str, ...]] = []
    real = comments.comment_counts

    def counting(session, episode_ids):
        asked.append(tuple(episode_ids))
        return real(session, episode_ids)

    monkeypatch.setattr(store_stage, "comment_counts", counting)
    on_store(url)
    at = open_page()
    no_exception(at)
    table = _table(at)
    # One run, one episode: the transcripts are not rows, nor counted.
    assert list(table["episode_id"]) == [wire_id]
    assert {m.label: m.value for m in at.metric}["Episodes"] == "1"
    row = table.iloc[0]
    assert row["notes"] == 2
    assert row["check"] == "✓ agrees"
    plural = "s are" if others != 1 else " is"
    assert any(f"{others} transcript{plural} shown as cross-checks of their wire episodes"
               in c.value for c in at.caption), [c.value for c in at.caption]  # fmt: skip
    # The comment counts are read for the page's rows only.
    assert asked and all(a == (wire_id,) for a in asked)


def test_notes_are_read_for_the_page_only(sample_db_url, on_store, monkeypatch):
    import clawviz.store as store_stage

    asked: list[tuple[str, ...]] = []
    monkeypatch.setattr(store_stage, "comment_counts",
                        lambda s, ids: asked.append(tuple(ids)) or {})  # fmt: skip
    monkeypatch.setattr(store_stage, "RUNS_PAGE_SIZE", 5)
    on_store(sample_db_url)
    at = open_page()
    no_exception(at)
    table = _table(at)
    assert len(table) == 5 and table["notes"].isna().all()
    # Each read (one per run of the table) asks for the page's five rows, never the store's.
    assert asked and set(asked) == {tuple(table["episode_id"])}
    # The sample store has no linked transcript: no cross-check caption, no check marks.
    assert not any("cross-checks" in c.value for c in at.caption)
    assert table["check"].isna().all()
