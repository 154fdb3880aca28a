"""AppTest of the Ingest and Settings pages, and of the first-start sample load."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from apphelpers import no_exception, open_page

from clawviz.ui import state

REJECTING_LOG = "exchanges/claude-code/t0003-claude-code-a4.jsonl"


def test_ingest_page_loads_a_server_side_path_and_reports_rejections(
    empty_db_url, on_store, tmp_path
):
    src = Path(__file__).resolve().parents[2] / "sample_logs" / REJECTING_LOG
    if not src.exists():
        pytest.skip("sample log with bad lines missing")
    shutil.copy(src, tmp_path / src.name)
    on_store(empty_db_url)
    at = open_page("pages/ingest.py")
    no_exception(at)
    assert at.title[0].value == "Ingest"
    at.text_input(key=state.KEY_INGEST_PATH).input(str(tmp_path / src.name))
    at.button(key=state.KEY_INGEST_RUN).click().run()
    no_exception(at)
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Calls"]) > 0
    assert int(metrics["Rejected lines"]) >= 3
    rejected = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert {"file", "line", "reason"} <= set(rejected.columns)
    assert all(rejected["file"].str.contains("t0003-claude-code-a4"))
    # Caches were cleared: the Runs page sees the new episode at once.
    at.switch_page("pages/runs.py").run()
    no_exception(at)
    assert {m.label: m.value for m in at.metric}["Episodes"] == "1"


def test_ingest_page_missing_path_is_an_error_not_a_traceback(empty_db_url, on_store, tmp_path):
    on_store(empty_db_url)
    at = open_page("pages/ingest.py")
    at.text_input(key=state.KEY_INGEST_PATH).input(str(tmp_path / "nope.jsonl"))
    at.button(key=state.KEY_INGEST_RUN).click().run()
    no_exception(at)
    assert any("Not found" in e.value and "nope" in e.value for e in at.error)


def test_settings_page_recomputes_under_a_new_hash(sample_db_url, on_store):
    from clawviz.settings import DEFAULT_SETTINGS

    on_store(sample_db_url)
    at = open_page("pages/settings.py")
    no_exception(at)
    table = next(d.value for d in at.dataframe if "help" in d.value.columns)
    assert "max_leaves" in set(table["name"])
    assert DEFAULT_SETTINGS.settings_hash in at.markdown[0].value
    max_leaves = next(n for n in at.number_input if n.label == "max_leaves")
    max_leaves.set_value(20)
    next(b for b in at.button if b.label == "Apply").click().run()
    no_exception(at)
    new_hash = DEFAULT_SETTINGS.with_(max_leaves=20).settings_hash
    assert new_hash in at.markdown[0].value
    # Under max_leaves 20 the nine-leaf episode is no longer too_many_branches.
    at.switch_page("pages/runs.py").run()
    no_exception(at)
    table = next(d.value for d in at.dataframe if "episode_id" in d.value.columns)
    assert not any("too_many_branches" in r for r in table["reasons"].dropna())


def test_first_start_loads_sample_logs(empty_db_url, on_store):
    on_store(empty_db_url, samples=True)
    at = open_page()
    no_exception(at)
    episodes = int({m.label: m.value for m in at.metric}["Episodes"].replace(",", ""))
    assert episodes >= 20


def test_upload_of_an_archive_and_a_gz_log(empty_db_url, on_store, tmp_path, monkeypatch):
    import io
    import zipfile

    logs = Path(__file__).resolve().parents[2] / "sample_logs" / "exchanges"
    plain = logs / "openclaw" / "t0002-openclaw-a4.jsonl"
    gz = logs / "claude-code" / "t0003-claude-code-a2.jsonl.gz"
    if not (plain.exists() and gz.exists()):
        pytest.skip("sample logs missing")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.write(plain, f"logs/{plain.name}")
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("../escape.jsonl", "{}")
    monkeypatch.setenv("CLAWVIZ_HOME", str(tmp_path / "home"))
    on_store(empty_db_url)
    at = open_page("pages/ingest.py")
    uploader = at.file_uploader(key=state.KEY_UPLOAD)
    uploader.upload("logs.zip", buf.getvalue()).upload(gz.name, gz.read_bytes())
    uploader.upload("evil.zip", evil.getvalue()).run()
    next(b for b in at.button if b.key == "ingest_upload_run").click().run()
    no_exception(at)
    assert any("escape" in e.value for e in at.error)  # the unsafe archive is refused, named
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Episodes"] == "2"
    assert not (tmp_path / "home" / "escape.jsonl").exists()


def test_settings_form_has_a_widget_per_setting_and_refuses_bad_text(sample_db_url, on_store):
    from clawviz.settings import DEFAULT_SETTINGS
    from clawviz.ui.settings_form import FORM_SETTINGS

    on_store(sample_db_url)
    at = open_page("pages/settings.py")
    no_exception(at)
    widgets = [*at.number_input, *at.checkbox, *at.selectbox, *at.text_input]
    assert {s.name for s in FORM_SETTINGS} <= {w.label for w in widgets}
    weights = next(t for t in at.text_input if t.label == "reward_weights")
    weights.input("checks=lots")
    next(b for b in at.button if b.label == "Apply").click().run()
    no_exception(at)
    assert any("reward_weights" in e.value for e in at.error)
    assert DEFAULT_SETTINGS.settings_hash in at.markdown[0].value
    weights = next(t for t in at.text_input if t.label == "reward_weights")
    weights.input("checks=1, rubric=3")
    next(b for b in at.button if b.label == "Apply").click().run()
    no_exception(at)
    want = DEFAULT_SETTINGS.with_(reward_weights={"checks": 1, "rubric": 3}).settings_hash
    assert want in at.markdown[0].value
