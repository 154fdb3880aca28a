"""AppTest of the Workspace diff page: attempt choice, file tree, diffs, checks, bad archives."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest
from test_tasks_page_store import build_task_store  # noqa: I001 - sibling module of tests/app

from clawviz.store import models
from clawviz.store.db import get_engine
from clawviz.ui import tasks_widgets as w

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 60


@pytest.fixture
def store(tmp_path, monkeypatch):
    url = build_task_store(tmp_path)
    monkeypatch.setenv("CLAWVIZ_DATABASE_URL", url)
    monkeypatch.setenv("CLAWVIZ_NO_SAMPLES", "1")
    return url


def workspace_page(episode: str | None = None, file: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if episode:
        at.query_params["episode"] = episode
    if file:
        at.query_params["file"] = file
    at.run()
    at.switch_page("pages/workspace.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_no_attempt_offers_the_picker(store):
    at = workspace_page()
    assert at.title[0].value == "Workspace diff"
    options = at.selectbox(key=w.KEY_WS_EPISODE).options
    assert {"t1-strong-1", "t1-strong-2", "t1-small-1"} <= set(options)
    at.selectbox(key=w.KEY_WS_EPISODE).select("t1-strong-1").run()
    assert not at.exception
    assert _metrics(at)["A added"] == "2"


def test_folder_attempt_tree_counts_and_unified_diff(store):
    at = workspace_page("t1-strong-1")
    m = _metrics(at)
    assert (m["A added"], m["D removed"], m["M modified"]) == ("2", "1", "2")
    tree = next(d.value for d in at.dataframe if "file" in d.value.columns)
    names = [n.strip("\u2003") for n in tree["file"]]
    assert "build/" in names and "out.txt" in names and "notes.md" in names
    files = at.selectbox(key=w.KEY_WS_FILE).options
    assert "A  build/out.txt" in files and "D  notes.md" in files
    at.selectbox(key=w.KEY_WS_FILE).select("data/tasks.csv").run()
    diff = next(c.value for c in at.code if c.language == "diff")
    assert "-1,todo" in diff and "+1,done" in diff
    # The attempt's checks are beside the diff, failed ones flagged.
    checks = next(d.value for d in at.dataframe if "check" in d.value.columns)
    assert checks.set_index("check").loc["notes_kept", "result"] == "FAIL"
    assert any("1 of 3 checks failed" in c.value for c in at.caption)


def test_side_by_side_json_and_binary(store):
    at = workspace_page("t1-strong-1", file="config.json")
    assert at.selectbox(key=w.KEY_WS_FILE).value == "config.json"
    diff = next(c.value for c in at.code if c.language == "diff")
    # JSON is pretty-printed before diffing, so the change is one readable line.
    assert '-  "mode": "fast",' in diff and '+  "mode": "slow",' in diff
    at.segmented_control(key=w.KEY_WS_MODE).set_value("side_by_side").run()
    rows = next(d.value for d in at.dataframe if "before" in d.value.columns)
    changed = rows[rows["kind"] == "replace"]
    assert list(changed["after"]) == ['  "mode": "slow",']
    at.selectbox(key=w.KEY_WS_FILE).select("build/blob.bin").run()
    assert any("Binary file" in i.value for i in at.info)


def test_archive_attempt(store):
    at = workspace_page("t1-strong-2", file="build/out.txt")
    assert _metrics(at)["A added"] == "2"
    code = [c.value for c in at.code]
    assert any("+42" in c for c in code)


def test_instruction_and_task_link(store):
    at = workspace_page("t1-small-1")
    md = " ".join(m.value for m in at.markdown)
    assert "Write 42 into build/out" in md.replace("\\", "")
    assert r"\<script\>" in md


def test_attempt_without_workspace_and_unknown(store):
    at = workspace_page("t1-small-2")
    assert any("no final workspace" in x.value for x in at.warning)
    assert any(m.label == "reward" for m in at.metric)
    at = workspace_page("nope")
    assert any("There is no attempt" in x.value for x in at.warning)


def test_hostile_archive_shows_clear_error(store, tmp_path):
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tf:
        info = tarfile.TarInfo("../../escape.txt")
        tf.addfile(info)
    with Session(get_engine(store)) as s:
        r = s.exec(select(models.Result).where(models.Result.episode_id == "t1-small-1")).one()
        r.workspace_after = str(evil)
        s.add(r)
        s.commit()
    at = workspace_page("t1-small-1")
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any("evil.tar.gz" in e and "escapes" in e for e in errors)
    assert not (tmp_path.parent / "escape.txt").exists()


def test_hostile_file_name_shown_literally(store, tmp_path):
    after = tmp_path / "hostile_after"
    after.mkdir()
    name = "[x](javascript:alert(1)) **b**.txt"
    (after / name).write_text("<script>alert(1)</script>\n")
    with Session(get_engine(store)) as s:
        r = s.exec(select(models.Result).where(models.Result.episode_id == "t1-small-1")).one()
        r.workspace_after = str(after)
        s.add(r)
        s.commit()
    at = workspace_page("t1-small-1", file=name)
    assert at.selectbox(key=w.KEY_WS_FILE).value == name
    heading = at.subheader[-1].value if at.subheader else ""
    assert any(r"\[x\]\(javascript\:alert\(1\)\) \*\*b\*\*" in h.value for h in at.subheader), (
        heading
    )
    assert any("+<script>alert(1)</script>" in c.value for c in at.code if c.language == "diff")
