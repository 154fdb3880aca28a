"""Checker runner: success, garbage output, timeout, crash; isolation from the real workspace."""

from __future__ import annotations

import tarfile
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from clawviz.review.archive import ArchiveError
from clawviz.review.checker import (
    CheckerError,
    _interpret,
    last_score_object,
    parse_scores,
    run_checker,
    run_checker_on_archive_bytes,
)


def _task(tmp_path, body: str):
    folder = tmp_path / "task_0001"
    (folder / "reward").mkdir(parents=True, exist_ok=True)
    (folder / "reward" / "check.py").write_text(textwrap.dedent(body))
    return folder


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    (ws / "build" / "out.txt").write_text("42\n")
    return ws


CLAWGYM_STYLE = """
import json, sys
from pathlib import Path
ws = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
out = ws / "build" / "out.txt"
print("checking", ws)
scores = {
    "out_exists": 1.0 if out.exists() else 0.0,
    "out_is_42": 1.0 if out.exists() and out.read_text().strip() == "42" else 0.0,
    "has_readme": 1.0 if (ws / "README.md").exists() else 0.0,
    "cwd_is_workspace": 1.0 if Path.cwd().resolve() == ws.resolve() else 0.0,
}
(ws / "build" / "out.txt").write_text("tampered")
print(json.dumps(scores, indent=2))
"""


def test_success_parses_pretty_json_and_averages(tmp_path, workspace):
    res = run_checker(_task(tmp_path, CLAWGYM_STYLE), workspace, timeout_s=30)
    assert res.status == "ok", res.stderr
    assert res.scores == {
        "out_exists": 1.0,
        "out_is_42": 1.0,
        "has_readme": 0.0,
        "cwd_is_workspace": 1.0,
    }
    assert res.reward == pytest.approx(0.75)
    assert res.failed_checks == ["has_readme"]
    assert res.returncode == 0 and "checking" in res.stdout
    # It ran on a copy: the real workspace is untouched.
    assert (workspace / "build" / "out.txt").read_text() == "42\n"


def test_runs_on_archive_workspace(tmp_path, workspace):
    arc = tmp_path / "after.tar.gz"
    with tarfile.open(arc, "w:gz") as tf:
        tf.add(workspace, arcname=".")
    res = run_checker(_task(tmp_path, CLAWGYM_STYLE), arc, timeout_s=30)
    assert res.status == "ok" and res.scores["out_is_42"] == 1.0


def test_non_json_output_is_bad_output(tmp_path, workspace):
    res = run_checker(_task(tmp_path, "print('all good, trust me')\n"), workspace, timeout_s=30)
    assert res.status == "bad_output"
    assert res.reward is None and res.scores == {}
    assert "no JSON object" in res.message and "trust me" in res.stdout


def test_json_without_numbers_is_bad_output(tmp_path, workspace):
    res = run_checker(_task(tmp_path, 'print(\'{"a": "yes"}\')\n'), workspace, timeout_s=30)
    assert res.status == "bad_output" and "numeric" in res.message


def _processes_with(token: str) -> list[int]:
    """PIDs on this machine (the sandbox's included: the host sees every PID namespace) whose
    command line holds token."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if token.encode() in (p / "cmdline").read_bytes():
                    found.append(int(p.name))
            except OSError:
                continue
    return found


def _gone_within(token: str, seconds: float) -> bool:
    """True once no process holds token (polled up to `seconds`: killing is asynchronous)."""
    deadline = time.monotonic() + seconds
    while _processes_with(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_timeout_kills_the_process_group(tmp_path, workspace):
    """A grandchild in its own session outlives a naive kill of the checker alone. Handshake,
    not sleeps: the grandchild says it is running on a pipe, the checker prints that it heard
    it, and the test sees the grandchild in the process table before the limit passes."""
    token = f"clawviz-grandchild-{uuid.uuid4().hex}"
    body = f"""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c",
        "print('up', flush=True); import time; time.sleep(120)  # {token}"],
        stdout=subprocess.PIPE, start_new_session=True)
    assert child.stdout.readline().strip() == b"up"
    print("grandchild running", flush=True)
    time.sleep(120)
    """
    seen: list[bool] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set() and not seen:
            if _processes_with(token):
                seen.append(True)
            stop.wait(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    t0 = time.monotonic()
    try:
        res = run_checker(_task(tmp_path, body), workspace, timeout_s=1.5)
    finally:
        stop.set()
        watcher.join()
    assert time.monotonic() - t0 < 10
    assert res.status == "timeout" and "1.5 s" in res.message
    assert "grandchild running" in res.stdout
    assert seen, "the grandchild never appeared in the process table"
    assert _gone_within(token, 5.0), "the grandchild outlived the time limit"


def test_crash_reports_exit_code_and_stderr(tmp_path, workspace):
    body = "import json\nprint(json.dumps({'partial': 1.0}))\nraise RuntimeError('checker broke')\n"
    res = run_checker(_task(tmp_path, body), workspace, timeout_s=30)
    assert res.status == "crash" and res.returncode == 1
    assert "RuntimeError: checker broke" in res.message
    assert "Traceback" in res.stderr


def test_minimal_environment(tmp_path, workspace, monkeypatch):
    monkeypatch.setenv("CLAWVIZ_SECRET_TOKEN", "s3cret")
    body = "import json, os\nleak = 'CLAWVIZ_SECRET_TOKEN' in os.environ\n"
    body += "print(json.dumps({'leak': float(leak)}))\n"
    res = run_checker(_task(tmp_path, body), workspace, timeout_s=30)
    assert res.status == "ok" and res.scores == {"leak": 0.0}


def test_missing_checker(tmp_path, workspace):
    with pytest.raises(CheckerError, match="no reward/check.py"):
        run_checker(tmp_path / "nothing", workspace)


def test_parse_scores_variants():
    assert parse_scores('{"a": 1}') == {"a": 1}
    assert parse_scores('log line\n{"a": 0.5}\n') == {"a": 0.5}
    assert parse_scores('{"a": 0}\nmore\n{"b": 1}\n') == {"b": 1}
    assert parse_scores('noise\n{\n  "a": 1,\n  "b": {"c": 2}\n}\n') == {"a": 1, "b": {"c": 2}}
    assert parse_scores("[1, 2]") is None
    assert parse_scores("") is None
    assert parse_scores("{not json}") is None


def test_uploaded_reference_archive(tmp_path, workspace):
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("build/out.txt", "42\n")
        zf.writestr("README.md", "hi\n")
    res = run_checker_on_archive_bytes(
        _task(tmp_path, CLAWGYM_STYLE), "Reference.ZIP", buf.getvalue(), timeout_s=30
    )
    assert res.status == "ok" and res.reward == 1.0
    with pytest.raises(ArchiveError, match="notes.txt: upload a .zip"):
        run_checker_on_archive_bytes(_task(tmp_path, CLAWGYM_STYLE), "notes.txt", b"x")


def test_the_checkers_own_last_score_line_wins_over_echoed_json():
    out = (
        'log\n{"out_exists": 1.0, "ok": true}\n'
        '{"role": "assistant", "content": "all checks pass", "reward": 1}\n'
        '{"a": 1} and agent text after it\n'
        '{"nested": {"a": 1}}\n'
    )
    assert last_score_object(out) == {"out_exists": 1.0, "ok": True}
    res = _interpret(0, out, "", 0.1)
    assert res.status == "ok" and res.scores == {"out_exists": 1.0, "ok": 1.0}
    assert last_score_object('{\n  "a": 0.5,\n  "b": 1\n}\n') == {"a": 0.5, "b": 1}
    assert last_score_object('{"a": NaN}') is None and last_score_object("{}") is None
    assert _interpret(0, '{"note": "x"}', "", 0.1).status == "bad_output"


def test_scores_come_from_the_kept_tail_not_the_head():
    res = _interpret(0, '{"head": 1.0}\n' + "x" * 100, "", 0.1, scores_text='{"tail": 0.0}')
    assert res.scores == {"tail": 0.0}


def test_non_zero_exit_is_a_crash_with_no_reward_whatever_was_printed():
    res = _interpret(3, '{"a": 1.0, "b": 1.0}\n', "boom\n", 0.1)
    assert res.status == "crash" and res.returncode == 3
    assert res.reward is None and res.scores == {}
    assert "code 3: boom" in res.message


def test_ci_makes_a_sandbox_that_cannot_start_a_failure(monkeypatch):
    from pathlib import Path

    from tests import sandbox_support

    assert (
        "export CLAWVIZ_REQUIRE_SANDBOX=1" in (Path(__file__).parent.parent / ".ci/run").read_text()
    )
    monkeypatch.setattr(sandbox_support, "sandbox_problem", lambda: "no user namespaces")
    monkeypatch.delenv("CLAWVIZ_REQUIRE_SANDBOX", raising=False)
    assert sandbox_support.needs_sandbox().args == (True,)
    monkeypatch.setenv("CLAWVIZ_REQUIRE_SANDBOX", "1")
    assert sandbox_support.needs_sandbox().args == (False,)


def test_the_copy_keeps_permission_bits_but_never_setuid(tmp_path, workspace):
    """A checker may test a file's mode: the copy has the host's bits (a read-only folder is
    filled before its mode is set), never a setuid bit."""
    (workspace / "ro.txt").write_text("a")
    (workspace / "ro.txt").chmod(0o444)
    (workspace / "tool").write_text("#!/bin/sh\n")
    (workspace / "tool").chmod(0o4755)
    (workspace / "sealed").mkdir()
    (workspace / "sealed" / "in.txt").write_text("c")
    (workspace / "sealed").chmod(0o555)
    body = """
    import json, os, stat
    mode = lambda p: float(stat.S_IMODE(os.stat("/workspace/" + p).st_mode))
    print(json.dumps({"ro": mode("ro.txt"), "tool": mode("tool"), "sealed": mode("sealed"),
                      "inner": float(os.path.exists("/workspace/sealed/in.txt"))}))
    """
    try:
        res = run_checker(_task(tmp_path, body), workspace, timeout_s=30)
    finally:
        (workspace / "sealed").chmod(0o755)
    assert res.status == "ok", res.message + res.stderr
    assert res.scores == {"ro": 0o444, "tool": 0o755, "sealed": 0o555, "inner": 1.0}
