"""AppTest of the Episode page: header, tree, call selection, URL state, compare, bad input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from apphelpers import no_exception, open_page

from clawviz.settings import DEFAULT_SETTINGS
from clawviz.ui import sections, state
from tests.dburl import fresh_url, query

EPISODE = "pages/episode.py"
TOO_MANY = "e31cf886-54eb-430f-8bb4-89af4c2f1420"
SUBAGENT_COMPACTION = "t0001-openclaw-a2"


def _calls(url: str, episode: str) -> list[str]:
    rows = query(
        url,
        'SELECT call_id FROM "call" WHERE episode_id = :e ORDER BY seq, t_request, line',
        e=episode,
    )
    return [r[0] for r in rows]


def _paths(url: str, episode: str) -> list[str]:
    """The episode's paths under the settings the page shows (the shared sample store also
    holds rows of other settings: tests/test_export.py exports it under all_valid)."""
    import json

    ((paths_json,),) = query(
        url,
        "SELECT paths_json FROM episode_status WHERE episode_id = :e AND settings_hash = :h",
        e=episode,
        h=DEFAULT_SETTINGS.settings_hash,
    )
    return [p["path_id"] for p in json.loads(paths_json)]


def test_header_reasons_tree_and_paths(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=TOO_MANY)
    no_exception(at)
    assert "e31cf886" in at.title[0].value
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Status"] == "dropped"
    badges = " ".join(m.value for m in at.markdown)
    assert ":red-badge[too\\_many\\_branches\\: 9 leaves \\> max\\_leaves 8 \\(at call " in badges
    tree = at.get("plotly_chart")
    assert any(getattr(t, "key", None) == state.KEY_TREE for t in tree)
    at.segmented_control(key=state.KEY_SECTION).set_value(sections.SECTION_PATHS).run()
    no_exception(at)
    paths = next(d.value for d in at.dataframe if "GRPO advantage" in d.value.columns)
    assert len(paths) == 9
    assert sorted(paths["state"].unique()) == ["kept", "pruned"]


def test_select_call_with_the_keyed_selectbox_updates_url_and_inspector(sample_db_url, on_store):
    on_store(sample_db_url)
    calls = _calls(sample_db_url, SUBAGENT_COMPACTION)
    at = open_page(EPISODE, episode=SUBAGENT_COMPACTION)
    box = at.selectbox(key=state.KEY_CALL_SELECT)
    assert box.options == calls or len(box.options) == len(calls)
    target = calls[-1]
    box.set_value(target).run()
    no_exception(at)
    assert at.query_params[state.QP_CALL] == target
    assert at.selectbox(key=state.KEY_CALL_SELECT).value == target
    line = next(c.value for c in at.caption if " line " in c.value)
    assert "t0001\\-openclaw\\-a2" in line


def test_url_restores_call_path_and_compare(sample_db_url, on_store):
    on_store(sample_db_url)
    calls = _calls(sample_db_url, TOO_MANY)
    path = _paths(sample_db_url, TOO_MANY)[0]
    other = "ea353e1d-3037-4734-8ac4-1f1b0ffafbe6"
    # A link naming a compare and no section opens Compare (links copied before sections).
    at = open_page(EPISODE, episode=TOO_MANY, call=calls[3], path=path, compare=other)
    no_exception(at)
    assert at.segmented_control(key=state.KEY_SECTION).value == sections.SECTION_COMPARE
    assert at.session_state[state.KEY_CALL_SELECT] == calls[3]
    assert at.selectbox(key=state.KEY_COMPARE_SELECT).value == other
    assert any(path.replace(":", "\\:") in c.value for c in at.caption)
    keys = {getattr(t, "key", None) for t in at.get("plotly_chart")}
    assert {"episode_compare_left", "episode_compare_right"} <= keys
    # The same link with section=call inspects the call; the compare pick is kept.
    at = open_page(
        EPISODE, episode=TOO_MANY, call=calls[3], path=path, compare=other, section="call"
    )
    no_exception(at)
    assert at.selectbox(key=state.KEY_CALL_SELECT).value == calls[3]
    assert at.session_state[state.KEY_COMPARE_SELECT] == other
    assert any(path.replace(":", "\\:") in c.value for c in at.caption)


def test_colour_modes_and_collapse_run_cleanly(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=SUBAGENT_COMPACTION)
    for mode in ("advantage", "reward", "state"):
        at.segmented_control(key=state.KEY_COLOUR_BY).set_value(mode).run()
        no_exception(at)
    at.toggle(key=state.KEY_COLLAPSE_AUX).set_value(True).run()
    no_exception(at)


def test_raw_json_on_demand(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode=SUBAGENT_COMPACTION)
    at.segmented_control(key=state.KEY_PANEL).set_value(sections.PANEL_RAW).run()
    no_exception(at)
    assert at.query_params[state.QP_PANEL] == sections.PANEL_RAW
    n_json = len(at.json)
    at.toggle(key=state.KEY_RAW_JSON).set_value(True).run()
    no_exception(at)
    assert len(at.json) >= n_json + 2


def test_unknown_episode_warns_and_offers_a_picker(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE, episode="no-such-episode")
    no_exception(at)
    assert any("no episode" in w.value for w in at.warning)
    at.text_input(key="episode_find").input("e31cf8").run()  # an id prefix, found in the store
    hits = [b for b in at.button if b.key and b.key.startswith("episode_hit_")]
    assert [b.label.replace("\\", "") for b in hits] == [TOO_MANY]
    hits[0].click().run()
    no_exception(at)
    assert at.query_params[state.QP_EPISODE] == TOO_MANY
    assert "e31cf886" in at.title[0].value


def test_no_episode_in_url_offers_a_picker(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page(EPISODE)
    no_exception(at)
    assert any("Find an episode" in i.value for i in at.info)
    assert at.text_input(key="episode_find") is not None


def test_empty_store(empty_db_url, on_store):
    on_store(empty_db_url)
    at = open_page(EPISODE, episode="x")
    no_exception(at)
    assert any("store is empty" in i.value for i in at.info)


def test_hostile_text_shows_literally(hostile_db_url, on_store, script_text):
    on_store(hostile_db_url)
    at = open_page(EPISODE, episode="xss-ep", call="xss:1")
    no_exception(at)
    texts, codes, markdown = [], [], []
    # Every panel of the inspector and every section, each drawn on its own.
    for panel in sections.PANELS:
        at.segmented_control(key=state.KEY_PANEL).set_value(panel).run()
        no_exception(at)
        texts += [t.value for t in at.text]
        codes += [c.value for c in at.code]
        markdown += [m.value for m in at.markdown]
    for section in (sections.SECTION_PATHS, sections.SECTION_COMPARE):
        at.segmented_control(key=state.KEY_SECTION).set_value(section).run()
        no_exception(at)
        markdown += [m.value for m in at.markdown]
    assert script_text in texts
    assert any(script_text in c for c in codes)
    # Markdown elements may name log values only in escaped form.
    for m in markdown:
        assert not re.search(r"(?<!\\)<", m), m
    assert any("\\<img src\\=x onerror\\=alert\\(1\\)\\>" in m for m in markdown)


def test_one_call_episode_without_reward(hostile_db_url, on_store):
    on_store(hostile_db_url)
    at = open_page(EPISODE, episode="solo-ep")
    no_exception(at)
    infos = " ".join(i.value for i in at.info)
    assert "single call" in infos
    assert "no reward" in infos
    assert {m.label: m.value for m in at.metric}["Reward"] == "—"


@pytest.fixture(scope="module")
def transcript_db_url(tmp_path_factory) -> str:
    """The real pi transcript fixture (990 messages, 2 compactions) replayed into a store."""
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine

    fixture = (
        Path(__file__).resolve().parents[1] / "data" / "transcripts" / "pi-before-compaction.jsonl"
    )
    if not fixture.exists():
        pytest.skip("transcript fixture missing")
    url = fresh_url(tmp_path_factory.mktemp("transcript"), "clawviz")
    with Session(get_engine(url)) as s:
        ingest_paths([fixture], session=s)
        ensure_analysis(s)
    return url


def test_transcript_episode_shows_its_limits(transcript_db_url, on_store):
    from clawviz.ingest.transcripts import TRANSCRIPT_LIMITS

    on_store(transcript_db_url)
    ((episode,),) = query(transcript_db_url, "SELECT episode_id FROM episode")
    at = open_page(EPISODE, episode=episode)
    no_exception(at)
    assert any(str(TRANSCRIPT_LIMITS)[:40] in w.value for w in at.warning)
    assert len(at.selectbox(key=state.KEY_CALL_SELECT).options) > 100


def test_selecting_a_path_row_highlights_it(sample_db_url, on_store):
    on_store(sample_db_url)
    paths = _paths(sample_db_url, TOO_MANY)
    at = open_page(EPISODE, episode=TOO_MANY, section=sections.SECTION_PATHS)
    assert state.QP_PATH not in at.query_params
    at.session_state[state.KEY_PATHS_TABLE] = {
        "selection": {"rows": [2], "columns": [], "cells": []}
    }
    at.run()
    no_exception(at)
    assert at.query_params[state.QP_PATH] == paths[2]
    assert any(paths[2].replace(":", "\\:") in c.value for c in at.caption)
