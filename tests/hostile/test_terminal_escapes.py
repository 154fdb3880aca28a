"""Terminal escape codes and control characters from logs, file names and checker output are
shown as visible escapes in the text output of `episodes`, `diff`, `check` and `explain`."""

from __future__ import annotations

import json

from sqlmodel import Session

import clawviz.review as review_stage
from clawviz.cli import explain
from clawviz.cli.common import visible
from clawviz.cli.main import main as cli_main
from clawviz.jobs.ingest import ingest_paths
from clawviz.review import checker
from clawviz.store.db import get_engine
from tests.dburl import fresh_url

ESC_TITLE = "\x1b]0;owned\x07"
RED = "\x1b[31m"
BIDI = "\u202e"


def _clean(text: str) -> None:
    for bad in ("\x1b", "\x07", "\r", BIDI, "\x9b"):
        assert bad not in text, repr(text)


def test_visible_escapes():
    assert visible(f"a{RED}b\r\n\tc{BIDI}\x9b") == "a\\x1b[31mb\\r\n\tc\\u202e\\x9b"


def test_episodes_and_diff_text_show_escapes(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "before").mkdir(parents=True)
    (run / "after").mkdir()
    (run / "before" / "a.txt").write_text("old\n")
    (run / "after" / "a.txt").write_text(f"new {RED}red\r\n")
    (run / "after" / f"n{ESC_TITLE}.txt").write_text("x\n")
    ep = f"ep{ESC_TITLE}{BIDI}"
    line = {
        "episode_id": ep,
        "task_id": f"t{RED}",
        "reward": 1.0,
        "workspace_before": "before",
        "workspace_after": "after",
    }
    (run / "results.jsonl").write_text(json.dumps(line) + "\n")
    url = fresh_url(tmp_path)
    with Session(get_engine(url)) as s:
        ingest_paths([run / "results.jsonl"], session=s)
    assert cli_main(["--db", url, "diff", ep]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "n\\x1b]0;owned\\x07.txt" in out and "new \\x1b[31mred" in out


def test_episodes_text_shows_escapes(tmp_path, capsys, monkeypatch):
    import clawviz.store as store_stage

    row = {
        "episode_id": f"ep{ESC_TITLE}{BIDI}",
        "task_id": f"t{RED}",
        "harness": "h\r",
        "model": "m",
        "attempt": 1,
        "n_calls": 2,
        "reward": 1.0,
        "status": "ok",
        "reasons": [f"r{RED}"],
        "reasons_at": [None],
    }
    monkeypatch.setattr(store_stage, "fast_episode_rows", lambda *_a: [row])
    assert cli_main(["--db", fresh_url(tmp_path), "episodes"]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "ep\\x1b]0;owned\\x07\\u202e" in out and "r\\x1b[31m" in out


def test_check_text_shows_escapes(sample_db_url, tmp_path, capsys, monkeypatch):
    def fake(*_a, **_k):
        return checker.CheckerResult(
            "ok",
            {f"s{RED}": 1.0},
            1.0,
            stdout=f"agent says {ESC_TITLE}\r",
            stderr=f"{BIDI}warn",
            returncode=0,
            message=f"done {RED}",
        )

    # `clawviz check` takes run_checker from the review stage's surface (clawviz.review).
    monkeypatch.setattr(review_stage, "run_checker", fake)
    argv = ["--db", sample_db_url, "check", "task_0001", "--workspace", str(tmp_path)]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "s\\x1b[31m" in out and "agent says \\x1b]0;owned\\x07" in out


def test_explain_text_shows_escapes(sample_db_url, capsys, monkeypatch):
    monkeypatch.setattr(explain, "explain_text", lambda *_a: f"call 1 {ESC_TITLE}{RED}\n")
    assert cli_main(["--db", sample_db_url, "explain", "t0001-claude-code-a1"]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "call 1 \\x1b]0;owned\\x07\\x1b[31m" in out
