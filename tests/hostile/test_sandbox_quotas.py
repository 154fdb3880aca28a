"""Hostile checkers against the sandbox's quotas: bytes and entries of the workspace, /tmp and
/dev/shm, a read-only /dev with only the listed device nodes, no host path in mountinfo, and no
way to mount a filesystem of one's own.

Each check.py attacks and reports what it managed; the expected limits come from the settings
given here (and the device numbers from the kernel's documented list, devices.txt), never from
clawviz's own output.
"""

from __future__ import annotations

import errno
import os
import tempfile
import textwrap
import threading
import uuid
from pathlib import Path

import pytest

from clawviz.review.checker import CheckerError, run_checker
from clawviz.settings import DEFAULT_SETTINGS
from tests.sandbox_support import needs_sandbox

pytestmark = needs_sandbox()
MIB = 1024 * 1024


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


def _host_files_starting(prefix: str, folder: str, depth: int) -> list[str]:
    """Paths under folder (to `depth` levels) whose name starts with prefix; folders that other
    processes remove meanwhile are passed over."""
    found: list[str] = []
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:
        return found
    for e in entries:
        if e.name.startswith(prefix):
            found.append(e.path)
        elif depth > 1 and e.is_dir(follow_symlinks=False):
            found += _host_files_starting(prefix, e.path, depth - 1)
    return found


FILL = """
import errno, json, os, sys
def fill(folder, chunk, limit):
    # Write `chunk`-byte files into folder until an error or `limit` bytes; report both.
    written, err, i = 0, 0, 0
    block = b"x" * chunk
    while written < limit:
        try:
            with open(os.path.join(folder, "fill%d" % i), "wb") as fh:
                fh.write(block)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            err = exc.errno
            break
        written += chunk
        i += 1
    return float(written), float(err)
"""


def test_writing_past_the_workspace_quota_never_reaches_the_host_disk(tmp_path, ws):
    """The old sandbox bound a host temp folder at /workspace: 1.26 GB reached the host disk.
    Here the checker names its files with a token the test looks for on the host while it runs."""
    token = f"clawviz-quota-{uuid.uuid4().hex}"
    body = FILL.replace('"fill%d"', f'"{token}-%d"') + textwrap.dedent(
        """
    written, err = fill("/workspace", 1 << 20, 64 << 20)
    import time
    time.sleep(2)  # the attack holds its files while the host is searched
    print(json.dumps({"written": written, "errno": err}))
    """
    )
    settings = DEFAULT_SETTINGS.with_(sandbox_workspace_max_bytes=8 * MIB)
    found: list[str] = []
    result: list = []
    runner = threading.Thread(
        target=lambda: result.append(
            run_checker(_task(tmp_path, body), ws, timeout_s=30, settings=settings)
        )
    )
    runner.start()
    while runner.is_alive():
        found += _host_files_starting(token, tempfile.gettempdir(), depth=3)
        runner.join(timeout=0.05)
    res = result[0]
    assert found == [], f"the checker's files reached the host disk: {found[:3]}"
    assert res.status == "ok", res.message + res.stderr
    assert res.scores["errno"] == errno.ENOSPC
    # a.txt and the page rounding take a little: at most the quota, most of it used.
    assert 4 * MIB <= res.scores["written"] <= 8 * MIB
    assert "sandbox_workspace_max_bytes" in res.message
    assert any("sandbox_workspace_max_bytes" in q for q in res.quota_full)


def test_sixty_thousand_files_stop_at_the_default_file_limit(tmp_path, ws):
    body = """
    import json, os
    os.mkdir("/workspace/many")
    n, err = 0, 0
    for i in range(60000):
        try:
            open("/workspace/many/%d" % i, "w").close()
        except OSError as exc:
            err = exc.errno
            break
        n += 1
    print(json.dumps({"created": float(n), "errno": float(err)}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=60)
    limit = DEFAULT_SETTINGS.sandbox_workspace_max_files
    assert limit < 60000
    assert res.status == "ok", res.message + res.stderr
    assert res.scores["errno"] == errno.ENOSPC
    # The root, a.txt and many/ are entries too.
    assert res.scores["created"] == limit - 3
    assert "sandbox_workspace_max_files" in res.message


def test_tmp_and_dev_shm_are_bounded_in_bytes_and_entries(tmp_path, ws):
    body = FILL + textwrap.dedent(
        """
    out = {}
    for name, folder in (("tmp", "/tmp"), ("shm", "/dev/shm")):
        out[name + "_bytes"], out[name + "_errno"] = fill(folder, 1 << 20, 64 << 20)
        for f in os.listdir(folder):
            os.unlink(os.path.join(folder, f))
        n = 0
        while n < 5000:
            try:
                open(os.path.join(folder, "e%d" % n), "w").close()
            except OSError:
                break
            n += 1
        out[name + "_entries"] = float(n)
    print(json.dumps(out))
    """
    )
    settings = DEFAULT_SETTINGS.with_(sandbox_tmp_max_bytes=4 * MIB, sandbox_tmp_max_files=100)
    res = run_checker(_task(tmp_path, body), ws, timeout_s=60, settings=settings)
    assert res.status == "ok", res.message + res.stderr
    for name in ("tmp", "shm"):
        assert res.scores[f"{name}_errno"] == errno.ENOSPC
        assert 3 * MIB <= res.scores[f"{name}_bytes"] <= 4 * MIB
        assert res.scores[f"{name}_entries"] == 99  # the root is the 100th
    assert "sandbox_tmp_max_files" in res.message


def test_every_writable_place_is_a_bounded_tmpfs_and_dev_is_read_only(tmp_path, ws):
    """Walk the sandbox's own mount table: whatever is writable must be one of the three
    bounded tmpfs mounts (the bound device nodes and /dev/pts excepted)."""
    body = """
    import json, os
    writable = []
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point, opts = fields[4], fields[5].split(",")
        sep = fields.index("-")
        fstype, super_opts = fields[sep + 1], fields[sep + 3]
        if "rw" in opts and point not in ("/proc", "/dev/pts") and fstype != "devtmpfs":
            writable.append([point, fstype, super_opts])
    dev_writable = 1.0
    try:
        open("/dev/clawviz-fill", "w").close()
    except OSError:
        dev_writable = 0.0
    print(json.dumps(writable), flush=True)
    print(json.dumps({"dev_writable": dev_writable}))
    """
    settings = DEFAULT_SETTINGS.with_(sandbox_tmp_max_bytes=4 * MIB, sandbox_tmp_max_files=100)
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30, settings=settings)
    assert res.status == "ok", res.message + res.stderr
    assert res.scores == {"dev_writable": 0.0}
    import json

    writable = json.loads(res.stdout.splitlines()[0])
    points = sorted(p for p, _, _ in writable)
    assert points == ["/dev/shm", "/tmp", "/workspace"]
    ws_kib = DEFAULT_SETTINGS.sandbox_workspace_max_bytes // 1024
    expected = {
        "/workspace": f"size={ws_kib}k,nr_inodes={DEFAULT_SETTINGS.sandbox_workspace_max_files}",
        "/tmp": "size=4096k,nr_inodes=100",
        "/dev/shm": "size=4096k,nr_inodes=100",
    }
    for point, fstype, opts in writable:
        assert fstype == "tmpfs"
        assert expected[point] in opts, (point, opts)


def test_mountinfo_shows_no_host_path_of_the_copies(tmp_path, ws):
    body = """
    import json
    print(open("/proc/self/mountinfo").read(), flush=True)
    print(json.dumps({"read": 1.0}))
    """
    task = _task(tmp_path, body)
    res = run_checker(task, ws, timeout_s=30)
    assert res.status == "ok", res.message + res.stderr
    mountinfo = res.stdout
    assert "/workspace" in mountinfo and "/reward" in mountinfo
    for host in (str(tmp_path), str(ws), str(task), "clawviz-check-", "clawviz-ws-"):
        assert host not in mountinfo
    host_tmp = tempfile.gettempdir().rstrip("/") + "/"
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[0].isdigit():
            # Field 4 is the mount's root inside its source filesystem: a host path for binds.
            assert not fields[3].startswith(host_tmp), line


# Character devices by (major, minor), from the kernel's Documentation/admin-guide/devices.txt.
DEVICES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8), "urandom": (1, 9)}
DEVICES["tty"] = (5, 0)


def test_dev_holds_only_the_listed_device_nodes(tmp_path, ws):
    body = """
    import json, os, stat
    entries = {}
    for name in sorted(os.listdir("/dev")):
        st = os.lstat("/dev/" + name)
        if stat.S_ISCHR(st.st_mode):
            entries[name] = ["chr", os.major(st.st_rdev), os.minor(st.st_rdev)]
        elif stat.S_ISBLK(st.st_mode):
            entries[name] = ["blk", os.major(st.st_rdev), os.minor(st.st_rdev)]
        elif stat.S_ISLNK(st.st_mode):
            entries[name] = ["link", os.readlink("/dev/" + name)]
        else:
            entries[name] = ["dir" if stat.S_ISDIR(st.st_mode) else "other"]
    print(json.dumps(entries), flush=True)
    print(json.dumps({"listed": 1.0}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.message + res.stderr
    import json

    entries = json.loads(res.stdout.splitlines()[0])
    devices = {k: tuple(v[1:]) for k, v in entries.items() if v[0] in ("chr", "blk")}
    assert devices == DEVICES
    links = {k: v[1] for k, v in entries.items() if v[0] == "link"}
    assert links == {
        "fd": "/proc/self/fd",
        "stdin": "/proc/self/fd/0",
        "stdout": "/proc/self/fd/1",
        "stderr": "/proc/self/fd/2",
        "ptmx": "pts/ptmx",
    }
    assert {k for k, v in entries.items() if v[0] == "dir"} == {"pts", "shm"}
    assert not [k for k, v in entries.items() if v[0] == "other"]


def test_a_checker_cannot_mount_a_filesystem_of_its_own(tmp_path, ws):
    """A nested user namespace would let the checker mount an unbounded tmpfs; its capabilities
    are all dropped and nested user namespaces are refused."""
    body = """
    import ctypes, json, subprocess
    caps = {}
    for line in open("/proc/self/status"):
        if line.startswith("Cap"):
            key, value = line.split(":")
            caps[key] = float(int(value, 16))
    libc = ctypes.CDLL(None, use_errno=True)
    direct = libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, b"size=1g")
    nested = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         "mount -t tmpfs -o size=1g none /tmp && echo MOUNTED"],
        capture_output=True, text=True)
    print(json.dumps({**caps, "direct_mount_ok": float(direct == 0),
                      "nested_mount_ok": float("MOUNTED" in nested.stdout)}))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.message + res.stderr
    assert res.scores == {
        "CapInh": 0.0,
        "CapPrm": 0.0,
        "CapEff": 0.0,
        "CapBnd": 0.0,
        "CapAmb": 0.0,
        "direct_mount_ok": 0.0,
        "nested_mount_ok": 0.0,
    }


def test_a_workspace_bigger_than_its_quota_is_refused_before_running(tmp_path, ws):
    (ws / "big.bin").write_bytes(b"\0" * (3 * MIB))
    settings = DEFAULT_SETTINGS.with_(sandbox_workspace_max_bytes=2 * MIB)
    with pytest.raises(CheckerError, match="sandbox_workspace_max_bytes"):
        run_checker(_task(tmp_path, "print('{\"a\": 1}')\n"), ws, timeout_s=30, settings=settings)
    for i in range(40):
        (ws / f"f{i}").write_text("x")
    settings = DEFAULT_SETTINGS.with_(sandbox_workspace_max_files=20)
    (ws / "big.bin").unlink()
    with pytest.raises(CheckerError, match="sandbox_workspace_max_files"):
        run_checker(_task(tmp_path, "print('{\"a\": 1}')\n"), ws, timeout_s=30, settings=settings)


def test_ram_that_no_quota_bounds_is_refused(tmp_path, ws):
    """SysV shared memory, semaphore sets and message queues outlive every rlimit until the IPC
    namespace dies, and memfd files sit outside every tmpfs: a checker could fill the host's RAM
    with them. They are refused (ENOSYS); POSIX locks, which live in the bounded /dev/shm, work."""
    body = """
    import ctypes, json, multiprocessing, os
    libc = ctypes.CDLL(None, use_errno=True)
    out = {
        "shmget": float(libc.shmget(0, 64 << 20, 0o1600) >= 0),
        "semget": float(libc.semget(0, 10, 0o1600) >= 0),
        "msgget": float(libc.msgget(0, 0o1600) >= 0),
        # shmget through the x32 ABI (syscall number | 0x40000000).
        "x32_shmget": float(libc.syscall(0x40000000 | 29, 0, 1 << 20, 0o1600) >= 0),
    }
    try:
        fd = os.memfd_create("fill")
        os.write(fd, b"x" * (16 << 20))
        out["memfd"] = 1.0
    except OSError as exc:
        out["memfd"], out["memfd_enosys"] = 0.0, float(exc.errno == 38)
    lock = multiprocessing.Lock()
    with lock:
        out["posix_lock"] = 1.0
    print(json.dumps(out))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.message + res.stderr
    assert res.scores == {
        "shmget": 0.0,
        "semget": 0.0,
        "msgget": 0.0,
        "x32_shmget": 0.0,
        "memfd": 0.0,
        "memfd_enosys": 1.0,
        "posix_lock": 1.0,
    }


def test_a_file_that_shrinks_while_it_is_copied_in_is_a_clear_result(tmp_path, ws, monkeypatch):
    """The workspace is planned, then streamed: a file cut in between must not hang the run or
    hand the checker a half workspace; the result says why nothing ran."""
    from clawviz.review import checker

    real = checker.plan_tree

    def plan_then_shrink(src, **kw):
        entries = real(src, **kw)
        if Path(src) == ws:
            (ws / "a.txt").write_text("")  # planned with 2 bytes, now 0
        return entries

    monkeypatch.setattr(checker, "plan_tree", plan_then_shrink)
    res = run_checker(_task(tmp_path, "print('{\"ran\": 1}')\n"), ws, timeout_s=30)
    assert res.status == "crash" and res.scores == {}
    assert res.message.startswith("Checker not started: cannot copy the workspace in")
    assert "ran" not in res.stdout


def test_read_only_places_stay_read_only_and_shm_runs_nothing(tmp_path, ws):
    body = """
    import errno, json, os, subprocess
    def refused(fn):
        try:
            fn()
        except OSError as exc:
            return float(exc.errno)
        return 0.0
    def write(path, text="x"):
        with open(path, "w") as fh:
            fh.write(text)
    out = {
        "reward": refused(lambda: write("/reward/forged.py")),
        "reward_chmod": refused(lambda: os.chmod("/reward/check.py", 0o777)),
        "sysctl": refused(lambda: write("/proc/sys/kernel/shmmax", "1")),
        "userns_max": refused(lambda: write("/proc/sys/user/max_user_namespaces", "100")),
        "dev": refused(lambda: write("/dev/fill")),
        "root": refused(lambda: write("/forged")),
    }
    write("/dev/shm/run.sh", "#!/bin/sh\\necho ran\\n")
    os.chmod("/dev/shm/run.sh", 0o755)
    out["shm_exec"] = refused(lambda: subprocess.run(["/dev/shm/run.sh"]))
    print(json.dumps(out))
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=30)
    assert res.status == "ok", res.message + res.stderr
    s = res.scores
    assert s["reward"] == s["reward_chmod"] == s["dev"] == s["root"] == errno.EROFS
    assert s["sysctl"] in (errno.EACCES, errno.EPERM, errno.EROFS)
    assert s["userns_max"] in (errno.EACCES, errno.EPERM, errno.EROFS)
    assert s["shm_exec"] == errno.EACCES


def test_a_checker_that_kills_the_sandbox_init_counts_nothing(tmp_path, ws):
    body = """
    import json, os, signal
    print(json.dumps({"looks_perfect": 1.0}), flush=True)
    os.kill(os.getppid(), signal.SIGKILL)
    import time
    time.sleep(30)
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=20)
    assert res.status == "crash", res.message
    assert res.reward is None and res.scores == {}
    assert res.duration < 15
