"""Run untrusted checker code confined by bubblewrap, with rlimits and bounded output.

The sandbox (`bwrap`, Debian package `bubblewrap`) gives the checker:
- new user, PID, network, IPC, UTS and cgroup namespaces (`--unshare-all`), its own session
  (`--new-session`, so it cannot push keys into our terminal) and death with its parent;
- a read-only view of the system (/usr and the /bin, /lib links, a few /etc files, never
  /etc/shadow), a fresh /proc that shows only the sandbox's own processes, a private /dev,
  a size-limited private /tmp, the reward folder read-only and a writable private copy of the
  workspace, and nothing else (no store, no app files, no home folder);
- a cleared environment (a fixed PATH, HOME=/tmp, a UTF-8 locale);
- rlimits on address space, processes, file size, CPU seconds and core dumps, applied inside
  the new user namespace by `prlimit` so the process count is that of the sandbox alone.

At the time limit the whole sandbox is killed: bwrap's PID 1 dies, and with it every process
in the PID namespace, including ones that called setsid. stdout and stderr are read as they
arrive; only a head and a tail (a setting) are kept, so 300 MB of output costs a few MB, and
the scores are parsed from the tail, so a JSON object printed after a large output still
counts.

Where bwrap cannot start (no user namespaces), `run_sandboxed` refuses with a message saying
why, unless the setting `checker_allow_unsandboxed` is on: then the checker runs in today's
weaker mode (own process group, minimal environment, rlimits) and the result carries a
warning that the UI shows.
"""

from __future__ import annotations

import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from clawviz.settings import Settings

NOBODY = 65534
SANDBOX_WORKSPACE = "/workspace"
SANDBOX_REWARD = "/reward"
# /etc entries a Python interpreter and common tools need; /etc/shadow and friends stay out.
_ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "alternatives",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "mime.types",
    "ssl",
    "python3",
    "python3.11",
)
_SANDBOX_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONIOENCODING": "utf-8",
    "PYTHONDONTWRITEBYTECODE": "1",
}
_HEAD_BYTES = 64 * 1024
_DRAIN_GRACE_S = 0.5


class SandboxUnavailable(RuntimeError):
    """bubblewrap cannot run here; the message says why and what to change."""


@dataclass
class Captured:
    """Bounded capture of one stream: the first bytes, the last bytes and the total count."""

    head: bytes
    tail: bytes
    total: int

    @property
    def cut(self) -> int:
        return max(0, self.total - len(self.head) - len(self.tail))

    def text(self) -> str:
        """Head and tail joined by a note of how much was cut (the whole text when nothing was)."""
        head = self.head.decode("utf-8", "replace")
        if not self.cut:
            return head + self.tail.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        return f"{head}\n… [{self.cut} bytes of output cut] …\n{tail}"

    def tail_text(self) -> str:
        """The end of the stream (what the scores are parsed from)."""
        if not self.cut:
            return (self.head + self.tail).decode("utf-8", "replace")
        return self.tail.decode("utf-8", "replace")


class _Stream:
    def __init__(self, tail_cap: int) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.tail_cap = max(1, tail_cap)
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = _HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    def done(self) -> Captured:
        tail = bytes(self.tail[-self.tail_cap :]) if self.tail else b""
        return Captured(bytes(self.head), tail, self.total)


@dataclass
class RunOutcome:
    """What happened to the sandboxed process."""

    returncode: int | None
    stdout: Captured
    stderr: Captured
    timed_out: bool
    duration: float


@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    processes: int
    file_bytes: int
    cpu_seconds: int
    tmp_bytes: int
    output_bytes: int

    @classmethod
    def from_settings(cls, settings: Settings, timeout_s: float) -> Limits:
        return cls(
            memory_bytes=int(settings.checker_max_memory_mb) * 1024 * 1024,
            processes=int(settings.checker_max_processes),
            file_bytes=int(settings.checker_max_file_mb) * 1024 * 1024,
            cpu_seconds=max(1, int(timeout_s) + 1),
            tmp_bytes=int(settings.checker_max_file_mb) * 1024 * 1024,
            output_bytes=int(settings.checker_max_output_bytes),
        )


def _python_for(settings: Settings) -> str:
    wanted = str(settings.checker_python or "")
    if wanted and Path(wanted).is_file() and os.access(wanted, os.X_OK):
        return wanted
    return sys.executable


def _world_traversable(path: str) -> bool:
    """True when every folder above `path` lets others in (so user nobody can reach it)."""
    p = Path(path).resolve()
    for parent in p.parents:
        try:
            if not parent.stat().st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _drop_to_nobody(python: str) -> bool:
    """As root, run bwrap itself as user nobody: root is exempt from RLIMIT_NPROC."""
    return os.geteuid() == 0 and shutil.which("setpriv") is not None and _world_traversable(python)


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    for name in _ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def _python_binds(python: str) -> list[str]:
    """Bind the interpreter's own prefix when it lives outside /usr (a pyenv or venv)."""
    args: list[str] = []
    roots = {str(Path(python).resolve().parent.parent)}
    if Path(python).resolve() == Path(sys.executable).resolve():
        roots |= {sys.prefix, sys.base_prefix}
    for root in sorted(roots):
        if root.startswith("/usr") or root in ("/", ""):
            continue
        args += ["--ro-bind", root, root]
    return args


def bwrap_command(
    python: str, reward_dir: Path, work_dir: Path, script: str, limits: Limits
) -> list[str]:
    """The full argv: [setpriv …] bwrap … -- prlimit … -- python /reward/check.py /workspace."""
    bwrap = shutil.which("bwrap") or "bwrap"
    prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
    cmd: list[str] = []
    if _drop_to_nobody(python):
        cmd += ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    cmd += [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--uid",
        str(NOBODY),
        "--gid",
        str(NOBODY),
        "--hostname",
        "sandbox",
        *_system_binds(),
        *_python_binds(python),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(limits.tmp_bytes),
        "--tmpfs",
        "/tmp",
        "--ro-bind",
        str(reward_dir),
        SANDBOX_REWARD,
        "--bind",
        str(work_dir),
        SANDBOX_WORKSPACE,
        "--remount-ro",
        "/",
        "--chdir",
        SANDBOX_WORKSPACE,
        "--clearenv",
    ]
    for k, v in _SANDBOX_ENV.items():
        cmd += ["--setenv", k, v]
    cmd += [
        "--",
        prlimit,
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        f"--cpu={limits.cpu_seconds}",
        "--core=0",
        "--",
        python,
        f"{SANDBOX_REWARD}/{script}",
        SANDBOX_WORKSPACE,
    ]
    return cmd


_PROBE: dict[tuple[str, bool], str | None] = {}


def bwrap_problem(python: str | None = None) -> str | None:
    """None when bwrap can start a sandbox here, else one sentence saying why not (cached)."""
    python = python or sys.executable
    key = (python, _drop_to_nobody(python))
    if key in _PROBE:
        return _PROBE[key]
    problem: str | None = None
    if shutil.which("bwrap") is None:
        problem = "bubblewrap (bwrap) is not installed; install the Debian package 'bubblewrap'"
    elif shutil.which("prlimit") is None:
        problem = "prlimit (util-linux) is not installed"
    else:
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
        cmd = cmd if key[1] else []
        cmd += ["bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
        cmd += [*_system_binds(), *_python_binds(python), "--proc", "/proc", "--dev", "/dev"]
        cmd += ["--", python, "-c", "pass"]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=20, env=_SANDBOX_ENV)
            if proc.returncode != 0:
                err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
                problem = "bwrap cannot create a sandbox here" + (
                    f" ({err[-1]})" if err else f" (exit code {proc.returncode})"
                )
                problem += "; user namespaces may be disabled (kernel.unprivileged_userns_clone)"
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem = f"bwrap cannot start ({exc})"
    _PROBE[key] = problem
    return problem


def prepare_for_sandbox(root: Path, python: str) -> None:
    """Hand the private copies to user nobody when the sandbox will run as nobody."""
    if not _drop_to_nobody(python):
        return
    root.chmod(0o711)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            os.lchown(os.path.join(dirpath, name), NOBODY, NOBODY)
    os.lchown(root, 0, 0)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass


def run_bounded(
    cmd: list[str],
    *,
    env: dict[str, str],
    cwd: str | Path | None,
    timeout_s: float,
    tail_bytes: int,
    preexec_fn=None,
) -> RunOutcome:
    """Run `cmd` in its own session; read stdout/stderr incrementally; kill at the deadline.

    Reading stops at the deadline, or a short grace after the main process exits (a grandchild
    that keeps the pipe open cannot stretch the run).
    """
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=preexec_fn,
    )
    out, err = proc.stdout, proc.stderr
    assert out is not None and err is not None  # both are pipes
    streams = {out.fileno(): _Stream(tail_bytes), err.fileno(): _Stream(tail_bytes)}
    sel = selectors.DefaultSelector()
    for f in (out, err):
        os.set_blocking(f.fileno(), False)
        sel.register(f.fileno(), selectors.EVENT_READ)
    timed_out = False
    exited_at: float | None = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if proc.poll() is not None and exited_at is None:
                exited_at = now
            if exited_at is not None and now > exited_at + _DRAIN_GRACE_S:
                break
            if now >= deadline:
                timed_out = proc.poll() is None
                break
            wait = min(deadline - now, 0.2)
            for key, _ in sel.select(timeout=wait):
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                if chunk:
                    streams[key.fd].add(chunk)
                else:
                    sel.unregister(key.fd)
    finally:
        sel.close()
        # Kill the session whatever happened: children left behind must not outlive the run.
        _kill(proc)
        proc.wait()
        out.close()
        err.close()
    s_out, s_err = list(streams.values())  # registered in that order
    return RunOutcome(
        returncode=None if timed_out else proc.returncode,
        stdout=s_out.done(),
        stderr=s_err.done(),
        timed_out=timed_out,
        duration=time.monotonic() - t0,
    )


def rlimit_preexec(limits: Limits):
    """A preexec_fn applying the limits (the weaker process-group mode)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply
