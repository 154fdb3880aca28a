"""AppTest of the Export panel on the Runs and Episode pages (sample store)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from apphelpers import no_exception, open_page

from clawviz.export import report_path
from clawviz.ui import state
from clawviz.ui.export_panel import KEY_RESULT, key_open

EPISODE = "pages/episode.py"


def _open(at, panel: str):
    """Open the Export expander, as a click on it does (its content is drawn only while open)."""
    at.session_state[key_open(panel)] = True
    at.run()
    return at


ROOT = Path(__file__).resolve().parents[2]


def test_runs_export_uses_the_current_filters(sample_db_url, on_store, monkeypatch, tmp_path):
    on_store(sample_db_url)
    monkeypatch.setenv("CLAWVIZ_EXPORT_DIR", str(tmp_path))
    at = _open(open_page(), "runs_export")
    at.multiselect(key=state.KEY_FILTER_TASK).select("task_0002").run()
    at.radio(key="runs_export_suffix").set_value(".parquet").run()
    at.button(key="runs_export_run").click().run()
    no_exception(at)
    result = at.session_state[KEY_RESULT]["runs_export"]
    (out,) = tmp_path.glob("runs-sft-*.parquet")
    assert result["path"] == str(out)
    df = pd.read_parquet(out)
    assert set(df["task_id"]) == {"task_0002"} and set(df["status"]) == {"kept"}
    report = json.loads(report_path(out).read_text())
    assert report["rows"] == len(df) == result["rows"] and report["filters"]["tasks"] == [
        "task_0002"
    ]
    assert any("per trajectory" in c.value for c in at.code)
    assert at.get("download_button")


def test_episode_export_of_a_dropped_episode_needs_include_dropped(
    sample_db_url, on_store, monkeypatch, tmp_path
):
    on_store(sample_db_url)
    monkeypatch.setenv("CLAWVIZ_EXPORT_DIR", str(tmp_path))
    at = _open(open_page(EPISODE, episode="t0001-openclaw-a4"), "episode_export")  # dropped
    at.radio(key="episode_export_format").set_value("rl").run()
    at.button(key="episode_export_run").click().run()
    no_exception(at)
    assert at.session_state[KEY_RESULT]["episode_export"]["rows"] == 0
    at.checkbox(key="episode_export_dropped").check().run()
    at.button(key="episode_export_run").click().run()
    no_exception(at)
    # Its calls logged output ids but no prompt ids: the path is skipped, and the report says so.
    text = at.session_state[KEY_RESULT]["episode_export"]["text"]
    assert "no_prompt_token_ids: 1" in text and "t0001-openclaw-a4" in text


def test_runs_export_follows_a_search_that_narrows_the_table(
    sample_db_url, on_store, monkeypatch, tmp_path
):
    on_store(sample_db_url)
    monkeypatch.setenv("CLAWVIZ_EXPORT_DIR", str(tmp_path))
    at = _open(open_page(), "runs_export")
    at.text_input(key=state.KEY_SEARCH_TEXT).input("dumpster").run()
    shown = next(d for d in at.dataframe if "episode_id" in d.value.columns and "n_calls"
                 in d.value.columns).value  # fmt: skip
    at.checkbox(key="runs_export_dropped").check().run()
    at.button(key="runs_export_run").click().run()
    no_exception(at)
    (out,) = tmp_path.glob("runs-sft-*.jsonl")
    exported = {json.loads(line)["episode_id"] for line in out.read_text().splitlines()}
    assert exported and exported <= set(shown["episode_id"])


def test_export_shows_a_progress_bar_that_ends_at_the_rows_written(
    sample_db_url, on_store, monkeypatch, tmp_path
):
    on_store(sample_db_url)
    monkeypatch.setenv("CLAWVIZ_EXPORT_DIR", str(tmp_path))
    at = _open(open_page(), "runs_export")
    at.multiselect(key=state.KEY_FILTER_TASK).select("task_0001").run()
    at.button(key="runs_export_run").click().run()
    no_exception(at)
    rows = at.session_state[KEY_RESULT]["runs_export"]["rows"]
    (bar,) = at.get("progress")
    assert bar.proto.value == 100 and bar.proto.text == f"{rows:,} rows written"


def test_a_long_export_is_left_on_disk_not_offered_as_a_download(
    sample_db_url, on_store, monkeypatch, tmp_path
):
    from clawviz.ui import export_panel

    on_store(sample_db_url)
    monkeypatch.setenv("CLAWVIZ_EXPORT_DIR", str(tmp_path))
    monkeypatch.setattr(export_panel, "DOWNLOAD_MAX_BYTES", 1_000)
    at = _open(open_page(), "runs_export")
    at.multiselect(key=state.KEY_FILTER_TASK).select("task_0001").run()
    at.button(key="runs_export_run").click().run()
    no_exception(at)
    (out,) = tmp_path.glob("runs-sft-*.jsonl")
    assert not at.get("download_button")
    assert any(str(out) in i.value and "too large" in i.value for i in at.info)


def test_the_first_click_on_export_exports_every_kept_episode(
    sample_db_url, on_store, monkeypatch, tmp_path
):
    """No filter touched: the first click is the export (it once did nothing in AppTest)."""
    expected = json.loads((ROOT / "sample_logs" / "expected.json").read_text())
    kept = {e["episode_id"] for e in expected["episodes"] if e["status"] == "kept"}
    on_store(sample_db_url)
    monkeypatch.setenv("CLAWVIZ_EXPORT_DIR", str(tmp_path))
    at = _open(open_page(), "runs_export")
    at.button(key="runs_export_run").click().run()
    no_exception(at)
    (out,) = tmp_path.glob("runs-sft-*.jsonl")
    lines = out.read_text().splitlines()
    assert {json.loads(line)["episode_id"] for line in lines} == kept
    assert at.session_state[KEY_RESULT]["runs_export"]["rows"] == len(lines)


def test_the_closed_panel_draws_no_widget(sample_db_url, on_store):
    """Closed, the panel is its header alone: no radio, checkbox or button reaches the page."""
    on_store(sample_db_url)
    at = open_page()
    keys = {w.key for kind in ("radio", "checkbox", "button") for w in at.get(kind)}
    assert any(e.label == "Export for training" for e in at.expander)
    assert not {k for k in keys if k and k.startswith("runs_export")}
    at = _open(at, "runs_export")
    keys = {w.key for kind in ("radio", "checkbox", "button") for w in at.get(kind)}
    assert {"runs_export_format", "runs_export_dropped", "runs_export_run"} <= keys
