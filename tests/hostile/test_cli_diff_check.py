"""`clawviz diff` and `clawviz check` on the bundled samples, against what the files and the
recorded results say."""

from __future__ import annotations

import difflib
import filecmp
import json
import os
import tarfile
from pathlib import Path

import pytest

from clawviz.cli.main import main as cli_main
from clawviz.review import sandbox
from tests.sandbox_support import needs_sandbox

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
EPISODE = "t0001-claude-code-a1"


def _files(root: Path) -> dict[str, Path]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[p.relative_to(root).as_posix()] = p
    return out


def _result(episode: str) -> dict:
    for line in (SAMPLES / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["episode_id"] == episode:
            return row
    raise KeyError(episode)


def test_diff_json_matches_the_files(sample_db_url, tmp_path, capsys):
    row = _result(EPISODE)
    before = SAMPLES / row["workspace_before"]
    after = tmp_path / "after"
    with tarfile.open(SAMPLES / row["workspace_after"]) as tf:
        tf.extractall(after, filter="data")
    b, a = _files(before), _files(after)
    expected = {p: "added" for p in set(a) - set(b)}
    expected |= {p: "removed" for p in set(b) - set(a)}
    expected |= {p: "changed" for p in set(a) & set(b) if not filecmp.cmp(a[p], b[p], False)}
    assert expected, "the sample attempt changes files"

    assert cli_main(["--db", sample_db_url, "diff", EPISODE, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    got = {
        r["path"]: ("changed" if r["change"] in ("modified", "binary") else r["change"])
        for r in rows
    }
    assert got == expected
    texts = [r for r in rows if r["change"] in ("modified", "added") and r["diff"]]
    assert texts
    r = texts[0]
    old = b[r["path"]].read_text().splitlines() if r["path"] in b else []
    want = "\n".join(
        difflib.unified_diff(
            old,
            a[r["path"]].read_text().splitlines(),
            fromfile=f"before/{r['path']}" if r["path"] in b else "/dev/null",
            tofile=f"after/{r['path']}",
            lineterm="",
        )
    )
    assert r["diff"] == want

    assert cli_main(["--db", sample_db_url, "diff", EPISODE]) == 0
    text = capsys.readouterr().out
    assert f"{r['change']:<9} {r['path']}" in text and want.splitlines()[-1] in text


def test_diff_unknown_episode(sample_db_url, capsys):
    assert cli_main(["--db", sample_db_url, "diff", "no-such-episode"]) == 2
    assert "no attempt 'no-such-episode'" in capsys.readouterr().err


@needs_sandbox()
def test_check_reproduces_the_recorded_checks(sample_db_url, capsys):
    row = _result(EPISODE)
    ws = SAMPLES / row["workspace_after"]
    argv = ["--db", sample_db_url, "check", "task_0001", "--workspace", str(ws), "--json"]
    assert cli_main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "ok" and out["sandbox"] == "bwrap"
    assert out["scores"] == row["checks"]
    assert out["reward"] == pytest.approx(sum(row["checks"].values()) / len(row["checks"]))
    assert cli_main(argv[:-1] + ["--timeout", "30"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("task_0001: ok · reward ")


def test_check_unknown_task(sample_db_url, tmp_path, capsys):
    argv = ["--db", sample_db_url, "check", "task_9999", "--workspace", str(tmp_path)]
    assert cli_main(argv) == 2
    assert "no task 'task_9999'" in capsys.readouterr().err


def test_check_refuses_without_sandbox(sample_db_url, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda python=None: "no user namespaces")
    argv = ["--db", sample_db_url, "check", "task_0001", "--workspace", str(tmp_path)]
    assert cli_main(argv) == 1
    err = capsys.readouterr().err
    assert "Checker not run: no user namespaces" in err


@needs_sandbox()
def test_check_obeys_the_sandbox_quotas_given_with_set(sample_db_url, tmp_path, capsys):
    """`clawviz check --set sandbox_workspace_max_bytes=...`: the quota is the one given, so a
    workspace bigger than it is refused before the checker starts, naming the setting."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.bin").write_bytes(b"\0" * (3 << 20))
    quota = "sandbox_workspace_max_bytes=2097152"
    argv = ["--db", sample_db_url, "--set", quota, "check", "task_0001", "--workspace", str(ws)]
    assert cli_main(argv) == 1
    err = capsys.readouterr().err
    assert "more than its quota of 2097152 bytes (sandbox_workspace_max_bytes)" in err
