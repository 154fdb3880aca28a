"""Hostile checkers: each escape the issue's hostile round found, tried inside the sandbox.

Every check.py below attacks, reports what it managed as a JSON sub-score, and the test asserts
from outside (files, sockets, the process table) that the attack failed.
"""

from __future__ import annotations

import hashlib
import os
import resource
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

import clawviz
from clawviz.review import sandbox
from clawviz.review.checker import CheckerError, run_checker
from clawviz.settings import DEFAULT_SETTINGS
from tests.sandbox_support import needs_sandbox

pytestmark = needs_sandbox()
REPO = Path(__file__).resolve().parents[2]


def _task(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / f"task_{uuid.uuid4().hex[:6]}"
    (folder / "reward").mkdir(parents=True)
    (folder / "reward" / "check.py").write_text(textwrap.dedent(body))
    return folder


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    (w / "a.txt").write_text("a\n")
    return w


def _processes_with(token: str) -> list[int]:
    """PIDs on this machine whose command line contains token."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if token.encode() in (p / "cmdline").read_bytes():
                found.append(int(p.name))
        except OSError:
            continue
    return found


def _gone_within(token: str, seconds: float) -> bool:
    """True once no process holds token, polled up to `seconds` (the kill is asynchronous; a
    process that survives sleeps 120 s, far past the deadline)."""
    deadline = time.monotonic() + seconds
    while _processes_with(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_parent_environment_is_unreadable(tmp_path, ws, monkeypatch):
    monkeypatch.setenv("CLAWVIZ_DATABASE_PASSWORD", "hunter2-secret")
    me = os.getpid()
    body = f"""
    import json, os
    from pathlib import Path
    leaked, visible = 0.0, []
    for pid in {{os.getppid(), {me}, 1}}:
        try:
            if b"hunter2-secret" in Path(f"/proc/{{pid}}/environ").read_bytes():
                leaked = 1.0
        except OSError:
            pass
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            visible.append(int(p.name))
            try:
                if b"hunter2-secret" in (p / "environ").read_bytes():
                    leaked = 1.0
            except OSError:
                pass
    print(json.dumps({{"leaked": leaked, "app_pid_visible": float(Path("/proc/{me}").exists()),
                      "n_processes": float(len(visible)),
                      "env_keys": float(len(os.environ)),
                      "secret_in_env": float("CLAWVIZ_DATABASE_PASSWORD" in os.environ)}}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.stderr
    assert res.sandbox == "bwrap" and res.warning == ""
    assert res.scores["leaked"] == 0.0
    assert res.scores["secret_in_env"] == 0.0
    assert res.scores["app_pid_visible"] == 0.0 or me <= 3
    # Only the sandbox's own processes (bwrap's init, prlimit-exec'd python) are visible.
    assert res.scores["n_processes"] <= 3
    assert res.scores["env_keys"] <= 8


def test_store_and_app_files_are_out_of_reach(tmp_path, ws):
    store = tmp_path / "store" / "clawviz.db"
    store.parent.mkdir()
    import sqlite3

    con = sqlite3.connect(store)
    con.execute("CREATE TABLE signoff (task_id TEXT, verdict TEXT)")
    con.commit()
    con.close()
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    app_file = Path(clawviz.__file__).resolve()
    body = f"""
    import json, sqlite3
    from pathlib import Path
    forged = 0.0
    try:
        con = sqlite3.connect({str(store)!r})
        con.execute("INSERT INTO signoff VALUES ('task_0001', 'accept')")
        con.commit()
        forged = 1.0
    except Exception:
        pass
    wrote_root = 0.0
    for target in ("/usr/forged", "/etc/forged", "/forged", "/reward/forged"):
        try:
            Path(target).write_text("x")
            wrote_root = 1.0
        except OSError:
            pass
    print(json.dumps({{"forged": forged, "wrote_system": wrote_root,
                      "store_visible": float(Path({str(store)!r}).exists()),
                      "app_visible": float(Path({str(app_file)!r}).exists()),
                    "home_visible": float(Path("/root").is_dir() and any(Path("/root").iterdir())),
                      "shadow_visible": float(Path("/etc/shadow").exists())}}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.stderr
    assert res.scores["store_visible"] == 0.0
    assert res.scores["forged"] == 0.0
    assert res.scores["wrote_system"] == 0.0
    assert res.scores["app_visible"] == 0.0
    assert res.scores["shadow_visible"] == 0.0
    assert res.scores["home_visible"] == 0.0
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
    assert not Path("/usr/forged").exists()


def test_network_is_cut(tmp_path, ws):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    body = f"""
    import json, socket
    ok = 0.0
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
        ok = 1.0
    except OSError:
        pass
    print(json.dumps({{"connected": ok}}))
    """
    try:
        res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()
    assert res.status == "ok", res.stderr
    assert res.scores == {"connected": 0.0}


def test_three_gigabytes_are_refused(tmp_path, ws):
    body = """
    import json
    try:
        block = bytearray(3 * 1024 ** 3)
        got = 1.0
    except MemoryError:
        got = 0.0
    print(json.dumps({"allocated_3gb": got}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.stderr
    assert res.scores == {"allocated_3gb": 0.0}


def test_fork_bomb_hits_the_process_limit(tmp_path, ws):
    body = """
    import json, os, time
    n = 0
    for _ in range(300):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
    print(json.dumps({"forks": float(n)}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.stderr
    assert res.scores["forks"] < DEFAULT_SETTINGS.checker_max_processes


def test_setsid_child_does_not_outlive_the_run(tmp_path, ws):
    token = f"clawviz-escape-{uuid.uuid4().hex}"
    body = f"""
    import json, subprocess, sys
    subprocess.Popen(["setsid", sys.executable, "-c",
                      "import time; time.sleep(120)  # {token}"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)
    print(json.dumps({{"spawned": 1.0}}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.stderr
    assert _gone_within(token, 5.0), _processes_with(token)


def test_setsid_child_is_killed_at_the_time_limit(tmp_path, ws):
    token = f"clawviz-escape-{uuid.uuid4().hex}"
    body = f"""
    import subprocess, sys, time
    subprocess.Popen(["setsid", sys.executable, "-c",
                      "import time; time.sleep(120)  # {token}"], start_new_session=True)
    print("working", flush=True)
    time.sleep(120)
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=2)
    assert res.status == "timeout" and "2 s" in res.message
    assert "working" in res.stdout
    assert _gone_within(token, 5.0), _processes_with(token)


def test_child_holding_stdout_does_not_stretch_the_run(tmp_path, ws):
    body = """
    import json, subprocess, sys
    # Inherits stdout and never closes it.
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(json.dumps({"done": 1.0}), flush=True)
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=5)
    assert res.status == "ok", res.stderr
    assert res.scores == {"done": 1.0}
    assert res.duration < 5


def test_child_holding_stdout_past_the_limit_is_killed(tmp_path, ws):
    body = """
    import subprocess, sys, time
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    time.sleep(120)
    """
    t0 = time.monotonic()
    res = run_checker(_task(tmp_path, body), ws, timeout_s=2)
    assert res.status == "timeout"
    assert time.monotonic() - t0 < 10


def test_300_megabytes_of_stdout_stay_bounded(tmp_path, ws):
    body = """
    import json, sys
    block = b"x" * (1 << 20) + b"\\n"
    for _ in range(300):
        sys.stdout.buffer.write(block)
    sys.stdout.buffer.flush()
    print(json.dumps({"after_flood": 1.0}))
    """
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = run_checker(_task(tmp_path, body), ws, timeout_s=60)
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert res.status == "ok", res.message
    assert res.scores == {"after_flood": 1.0}
    assert "bytes of output cut" in res.stdout
    cap = DEFAULT_SETTINGS.checker_max_output_bytes
    assert len(res.stdout) < cap + 64 * 1024 + 200
    # ru_maxrss is in KB: the 300 MB never sat in this process.
    assert peak_after - peak_before < 100 * 1024


def test_scores_printed_after_one_megabyte_count(tmp_path, ws):
    body = """
    import json
    for i in range(20000):
        print("log line", i, "." * 50)
    print(json.dumps({"late": 0.5, "later": 1.0}, indent=2))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.message
    assert res.scores == {"late": 0.5, "later": 1.0}
    assert res.reward == pytest.approx(0.75)


def test_workspace_copy_is_writable_and_private(tmp_path, ws):
    body = """
    import json
    from pathlib import Path
    Path("/workspace/new.txt").write_text("made inside")
    Path("/tmp/t").write_text("tmp ok")
    print(json.dumps({"cwd": float(str(Path.cwd()) == "/workspace"),
                      "sees_a": float(Path("a.txt").read_text() == "a\\n")}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.stderr
    assert res.scores == {"cwd": 1.0, "sees_a": 1.0}
    assert not (ws / "new.txt").exists()


def test_file_size_limit(tmp_path, ws):
    body = """
    import json
    from pathlib import Path
    try:
        with open("/workspace/big.bin", "wb") as fh:
            for _ in range(200):
                fh.write(b"\\0" * (1 << 20))
        ok = 1.0
    except OSError:
        ok = 0.0
    print(json.dumps({"wrote_200mb": ok}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    # Python ignores SIGXFSZ? No: the default action kills the process. Either way no 200 MB.
    assert res.status in ("ok", "crash")
    if res.status == "ok":
        assert res.scores == {"wrote_200mb": 0.0}
    else:
        assert "file size limit" in res.message


def test_refuses_when_bwrap_cannot_run(tmp_path, ws, monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda python=None: "no user namespaces")
    with pytest.raises(CheckerError, match="Checker not run: no user namespaces.*bubblewrap"):
        run_checker(_task(tmp_path, "print('{\"a\": 1}')\n"), ws, timeout_s=30)


def test_weaker_mode_only_when_allowed_and_warns(tmp_path, ws, monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda python=None: "no user namespaces")
    settings = DEFAULT_SETTINGS.with_(checker_allow_unsandboxed=True)
    res = run_checker(_task(tmp_path, "print('{\"a\": 1}')\n"), ws, timeout_s=30, settings=settings)
    assert res.status == "ok" and res.scores == {"a": 1.0}
    assert res.sandbox == "process_group"
    assert "WITHOUT the bubblewrap sandbox" in res.warning
    assert "no user namespaces" in res.warning


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user")
def test_sandbox_runs_for_an_unprivileged_user(tmp_path):
    """The same sandbox, quotas included, as user nobody, with the system Python (nobody cannot
    read /root)."""
    python = "/usr/bin/python3"
    if not Path(python).exists() or not sandbox._world_traversable(str(REPO / "clawviz")):
        pytest.skip("no system python, or the checkout is not readable by nobody")
    work = Path(__import__("tempfile").mkdtemp(prefix="clawviz-nobody-"))
    try:
        body = """
        import json, os
        n = 0
        while n < 1000:
            try:
                open("/workspace/f%d" % n, "w").close()
            except OSError:
                break
            n += 1
        print(json.dumps({"uid": float(os.getuid()), "files": float(n)}))
        """
        task = _task(work, body)
        ws = work / "ws"
        ws.mkdir()
        for dirpath, dirnames, filenames in os.walk(work):
            for n in [*dirnames, *filenames]:
                os.chown(os.path.join(dirpath, n), 65534, 65534)
        os.chown(work, 65534, 65534)
        script = (
            "import json; from clawviz.review.checker import run_checker; "
            "from clawviz.settings import DEFAULT_SETTINGS as D; "
            f"r = run_checker({str(task)!r}, {str(ws)!r}, timeout_s=30, "
            "settings=D.with_(sandbox_workspace_max_files=100)); "
            "print(json.dumps([r.status, r.sandbox, r.scores]))"
        )
        out = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", python]
            + ["-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=work,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(work)},
        )
        assert out.returncode == 0, out.stderr
        # The file quota holds as an unprivileged user too: 100 inodes, the root one of them.
        last = out.stdout.strip().splitlines()[-1]
        assert last == '["ok", "bwrap", {"uid": 65534.0, "files": 99.0}]'
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)
    assert sys.executable
