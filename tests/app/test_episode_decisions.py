"""AppTest of the Episode page's decision display: why a sample is dropped, each reason's button
to the call that caused it, the inspector's retry note and replacement link, not_longest's
winning path. Expectations from sample_logs/expected.json."""

from __future__ import annotations

import json
from pathlib import Path

from apphelpers import no_exception, open_page

from clawviz.settings import DEFAULT_SETTINGS
from clawviz.ui import state
from tests.dburl import query

EPISODE = "pages/episode.py"
EXPECTED = json.loads((Path(__file__).parents[2] / "sample_logs" / "expected.json").read_text())


def _call_at(url: str, episode: str, line: int) -> str:
    ((cid,),) = query(
        url, 'SELECT call_id FROM "call" WHERE episode_id = :e AND line = :l', e=episode, l=line
    )
    return cid


def _expected(episode: str, line: int) -> dict:
    return next(c for c in EXPECTED["calls"] if c["episode_id"] == episode and c["line"] == line)


def _button(at, label: str):
    return next(b for b in at.button if b.label == label)


def test_dropped_header_lists_reasons_with_a_button_to_each_causing_call(sample_db_url, on_store):
    on_store(sample_db_url)
    ep = "t0001-claude-code-a4"
    # expected: line 5 is the last main call, failed (HTTP 500 again; harness gives up).
    assert _expected(ep, 5)["state"] == "failed"
    at = open_page(EPISODE, episode=ep)
    no_exception(at)
    md = " ".join(m.value for m in at.markdown)
    assert "**Dropped** · 2 reason(s)" in md
    assert "ended\\_in\\_error\\: last main call 5 failed \\(HTTP 500\\) \\(at call 5\\)" in md
    assert "reward 0\\.47 \\< reward\\_threshold 0\\.5" in md
    _button(at, "Inspect call 5").click().run()
    no_exception(at)
    failed = _call_at(sample_db_url, ep, 5)
    assert at.query_params[state.QP_CALL] == failed
    assert at.selectbox(key=state.KEY_CALL_SELECT).value == failed
    errors = " ".join(e.value for e in at.error)
    assert (
        "This call caused **ended\\_in\\_error**: last main call 5 failed \\(HTTP 500\\)" in errors
    )
    info = " ".join(i.value for i in at.info)
    assert "retry of call 4 \\(identical re\\-send\\)" in info


def test_kept_retry_caption_and_superseded_link(sample_db_url, on_store):
    on_store(sample_db_url)
    ep = "t0001-openclaw-a3"
    # expected: line 6 is the kept retry of line 3 (OpenClaw retry, body differs).
    assert _expected(ep, 6)["retry_of"]["line"] == 3
    at = open_page(EPISODE, episode=ep, call=_call_at(sample_db_url, ep, 6))
    no_exception(at)
    info = " ".join(i.value for i in at.info)
    assert "retry of call 3 \\(harness retry with a changed body\\)" in info
    assert "kept over call 3" in info
    assert at.selectbox(key=state.KEY_CALL_SELECT).options[0].startswith("call 1 · ")

    ep = "t0001-claude-code-a3"
    # expected: line 4 continued the abandoned branch; line 5 re-sent line 3's request.
    assert _expected(ep, 4)["reason"] == "superseded_retry"
    assert _expected(ep, 5)["retry_of"]["line"] == 3
    at = open_page(EPISODE, episode=ep, call=_call_at(sample_db_url, ep, 4))
    no_exception(at)
    assert "below call 3, replaced by call 5" in " ".join(i.value for i in at.info)
    _button(at, "Go to call 5, its replacement").click().run()
    no_exception(at)
    assert at.query_params[state.QP_CALL] == _call_at(sample_db_url, ep, 5)


def test_not_longest_call_names_the_winner_and_highlights_it(sample_db_url, on_store):
    on_store(sample_db_url)
    ep = "e31cf886-54eb-430f-8bb4-89af4c2f1420"
    pruned = [
        c for c in EXPECTED["calls"] if c["episode_id"] == ep and c["reason"] == "not_longest"
    ]
    at = open_page(EPISODE, episode=ep, call=_call_at(sample_db_url, ep, pruned[0]["line"]))
    no_exception(at)
    info = " ".join(i.value for i in at.info)
    assert "not_longest: path 0\\:" in info and "generated tokens; this one has" in info
    _button(at, "Highlight the winning path").click().run()
    no_exception(at)
    path = at.query_params[state.QP_PATH]
    ((paths_json,),) = query(  # the row of the settings the page shows (the store has others)
        sample_db_url,
        "SELECT paths_json FROM episode_status WHERE episode_id = :e AND settings_hash = :h",
        e=ep,
        h=DEFAULT_SETTINGS.settings_hash,
    )
    kept = [p["path_id"] for p in json.loads(paths_json) if p["state"] == "kept"]
    assert [path] == kept
    # The Paths section shows the table; the highlight the URL names survives the switch.
    at.segmented_control(key=state.KEY_SECTION).set_value("paths").run()
    no_exception(at)
    assert at.query_params[state.QP_PATH] == path
    table = next(d.value for d in at.dataframe if "call numbers" in d.value.columns)
    assert (table["why"] != "").sum() == 8 and table["leaf"].str.startswith("call ").all()
