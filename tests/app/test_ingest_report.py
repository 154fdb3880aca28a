"""AppTest of the Ingest page's report: one click, the episodes it made (linked), counts that
refresh, "already ingested", a 0-call file skipped, and "not found" replacing the old report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from apphelpers import no_exception, open_page

from clawviz.ui import state

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
LOG = SAMPLES / "exchanges" / "claude-code" / "t0003-claude-code-a4.jsonl"
EPISODE_ID = "t0003-claude-code-a4"  # named by the recorder in each line's clawviz block


def _ingest(at, path: Path):
    # Typed and clicked in one go, as a person does: the form sends both at once.
    at.text_input(key=state.KEY_INGEST_PATH).input(str(path))
    at.button(key=state.KEY_INGEST_RUN).click().run()
    no_exception(at)
    return at


def _sidebar_text(at) -> str:
    return " ".join(c.value for c in at.sidebar.caption)


def _files_table(at):
    return next(d.value for d in at.dataframe if "status" in d.value.columns)


def test_one_click_ingest_links_its_episodes_and_refreshes_counts(empty_db_url, on_store, tmp_path):
    shutil.copy(LOG, tmp_path / LOG.name)
    on_store(empty_db_url)
    at = open_page("pages/ingest.py")
    assert "0 episodes" in _sidebar_text(at)
    _ingest(at, tmp_path / LOG.name)
    links = [(x.proto.page, x.proto.query_string, x.value) for x in at.page_link]
    assert ("episode", f"episode={EPISODE_ID}", EPISODE_ID) in links
    assert any("Loaded 1 file" in s.value for s in at.success)
    # The sidebar, drawn before the page, shows the new counts in the same click.
    assert "1 episodes" in _sidebar_text(at)
    assert list(_files_table(at)["status"]) == ["loaded"]

    _ingest(at, tmp_path / LOG.name)
    assert any("Already ingested" in i.value for i in at.info)
    assert list(_files_table(at)["status"]) == ["already ingested"]
    assert "1 file: 1 already ingested" in [c.value for c in at.caption]
    assert not any(x.proto.page == "episode" for x in at.page_link)

    # A path that does not exist replaces the report instead of sitting above it.
    _ingest(at, tmp_path / "nope.jsonl")
    assert any("Not found" in e.value and "nope" in e.value for e in at.error)
    assert not any(s.value == "Report" for s in at.subheader)
    assert not any("Already ingested" in i.value for i in at.info)


def test_a_file_without_calls_is_skipped_not_loaded(empty_db_url, on_store, tmp_path):
    line = json.loads(LOG.read_text().splitlines()[0])
    line["request"]["body"] = "not a JSON object"  # every line rejected: no call in the file
    bad = tmp_path / "no-calls.jsonl"
    bad.write_text(json.dumps(line) + "\n")
    on_store(empty_db_url)
    at = _ingest(open_page("pages/ingest.py"), bad)
    assert any("Skipped, no calls" in w.value for w in at.warning)
    assert list(_files_table(at)["status"]) == ["skipped, no calls"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Files loaded"] == "0"
    assert "1 file: 1 skipped, no calls" in [c.value for c in at.caption]
    assert not any("Loaded" in s.value for s in at.success)


def test_a_folder_ingested_again_loads_no_file(empty_db_url, on_store, tmp_path):
    """Its logs are already in the store; its task folders are read again, not "loaded"."""
    folder = tmp_path / "logs"
    shutil.copytree(SAMPLES / "exchanges" / "openclaw", folder / "exchanges")
    shutil.copytree(SAMPLES / "tasks", folder / "tasks")
    n_logs = len(list((folder / "exchanges").glob("*.jsonl")))
    n_tasks = len([p for p in (folder / "tasks").iterdir() if p.is_dir()])
    on_store(empty_db_url)
    at = _ingest(open_page("pages/ingest.py"), folder)
    assert {m.label: m.value for m in at.metric}["Files loaded"] == str(n_logs)
    at = _ingest(at, folder)
    assert {m.label: m.value for m in at.metric}["Files loaded"] == "0"
    assert any("Already ingested" in i.value for i in at.info)
    (line,) = [c.value for c in at.caption if " file" in c.value and ":" in c.value]
    assert f"{n_logs} already ingested" in line and f"{n_tasks} task folder(s) read" in line
