"""The command line: exit codes, reports and --json output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_formats_fixtures import SESSION, claude_code_episode, jsonl, openai_record, user

from clawviz.cli.common import ProgressBar
from clawviz.cli.main import main
from clawviz.settings import SETTINGS
from tests.dburl import fresh_url, query

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def db(tmp_path):
    return fresh_url(tmp_path, "cli")


@pytest.fixture
def clean_log(tmp_path):
    p = tmp_path / "cc.jsonl"
    p.write_text(jsonl(claude_code_episode()))
    return p


@pytest.fixture
def bad_log(tmp_path):
    p = tmp_path / "bad.jsonl"
    rec = openai_record([user("x")], headers={"X-Session-Id": "oc-1"})
    p.write_text(jsonl([rec]) + "not json\n" + json.dumps({"nope": 1}) + "\n")
    return p


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ingest_clean_exits_0_with_report(capsys, db, clean_log):
    code, out, _ = run(capsys, "--db", db, "ingest", str(clean_log))
    assert code == 0
    assert "calls: 3" in out and "episodes: 1" in out and "rejected lines: 0" in out


def test_ingest_with_rejections_exits_2_and_names_file_and_line(capsys, db, bad_log):
    code, out, _ = run(capsys, "ingest", str(bad_log), "--db", db, "--json")
    assert code == 2
    report = json.loads(out)
    assert report["n_calls"] == 1
    assert [(r["file"], r["line"]) for r in report["rejected"]] == [
        (str(bad_log), 2),
        (str(bad_log), 3),
    ]
    assert all(r["reason"] for r in report["rejected"])
    code, out, _ = run(capsys, "--db", db, "ingest", str(bad_log))
    assert code == 0 and "already_loaded" in out  # nothing new: every line of this run loaded


def test_ingest_text_report_lists_rejections(capsys, db, bad_log):
    code, out, _ = run(capsys, "--db", db, "ingest", str(bad_log))
    assert code == 2
    assert f"rejected {bad_log}:2: not valid JSON" in out
    assert f"rejected {bad_log}:3: not an exchange record" in out


def test_ingest_missing_path_exits_1(capsys, db, tmp_path):
    code, _, err = run(capsys, "--db", db, "ingest", str(tmp_path / "missing.jsonl"))
    assert code == 1 and "missing.jsonl" in err


def test_episodes_json_rows(capsys, db, clean_log, bad_log):
    run(capsys, "--db", db, "ingest", str(clean_log), str(bad_log))
    code, out, _ = run(capsys, "--db", db, "episodes", "--json")
    assert code == 0
    rows = {r["episode_id"]: r for r in json.loads(out)}
    assert set(rows) == {SESSION, "oc-1"}
    keys = {"episode_id", "task_id", "harness", "model", "attempt", "n_calls", "reward"}
    assert keys | {"status", "reasons"} <= set(rows[SESSION])
    assert rows[SESSION]["n_calls"] == 3 and rows[SESSION]["harness"] == "claude-code"
    assert rows[SESSION]["status"] in ("kept", "dropped", "unknown")
    code, out, _ = run(capsys, "--db", db, "episodes")
    assert code == 0 and SESSION in out and out.splitlines()[0].startswith("episode_id")


def test_explain_json_has_a_row_per_call_with_source(capsys, db, clean_log):
    run(capsys, "--db", db, "ingest", str(clean_log))
    code, out, _ = run(capsys, "--db", db, "explain", SESSION, "--json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 3
    assert [r["source"]["line"] for r in rows] == [1, 2, 3]
    assert all(r["source"]["file"] == str(clean_log) for r in rows)
    code, out, _ = run(capsys, "--db", db, "explain", SESSION)
    assert code == 0 and out.strip()


def test_explain_unknown_episode_exits_1(capsys, db):
    code, _, err = run(capsys, "--db", db, "explain", "nope")
    assert code == 1 and "nope" in err


def test_settings_lists_every_setting(capsys, db):
    code, out, _ = run(capsys, "settings", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == [s.name for s in SETTINGS]
    assert all(r["help"] for r in rows)
    code, out, _ = run(capsys, "settings")
    assert "max_leaves = 8" in out


def test_python_dash_m_entry_point(tmp_path, clean_log):
    url = fresh_url(tmp_path, "m")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CLAWVIZ_DATABASE_URL": url}
    proc = subprocess.run(
        [sys.executable, "-m", "clawviz", "ingest", str(clean_log), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["n_calls"] == 3
    # the env var chose the store
    assert query(url, 'SELECT COUNT(*) FROM "call"') == [(3,)]


def test_text_report_summarises_skipped_files(capsys, db, tmp_path, clean_log):
    ws = tmp_path / "workspaces" / "a1"
    ws.mkdir(parents=True)
    for i in range(5):
        (ws / f"data{i}.jsonl").write_text('{"volunteer": "ann"}\n')
    code, out, _ = run(capsys, "--db", db, "ingest", str(tmp_path))
    assert code == 0
    assert "skipped  5 file(s), no exchange, results or transcript records" in out
    assert "and 2 more" in out
    code, out, _ = run(capsys, "--db", db, "ingest", str(tmp_path), "--json")
    assert len(json.loads(out)["skipped_files"]) == 5


def test_progress_bar_draws_on_stderr(capsys):
    bar = ProgressBar(width=10)
    bar(50, 100, "logs/a.jsonl")
    bar(50, 100, "logs/a.jsonl")  # same percentage: not redrawn
    bar(100, 100, "logs/a.jsonl")
    bar.close()
    err = capsys.readouterr().err
    assert err.count("\r") == 2
    assert "[#####-----]  50% logs/a.jsonl" in err and "100%" in err
