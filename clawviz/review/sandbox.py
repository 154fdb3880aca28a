"""Run untrusted checker code confined by bubblewrap, with quotas, rlimits and bounded output.

The sandbox (`bwrap`, Debian package `bubblewrap`) gives the checker:
- new user, PID, network, IPC, UTS and cgroup namespaces (`--unshare-all`), its own session
  (`--new-session`, so it cannot push keys into our terminal) and death with its parent;
- a read-only view of the system (/usr and the /bin, /lib links, a few /etc files, never
  /etc/shadow) and a fresh /proc that shows only the sandbox's own processes;
- a read-only /dev holding only null, zero, full, random, urandom and tty (bound from the
  host), the fd/stdin/stdout/stderr links, a fresh devpts and a bounded /dev/shm;
- three writable tmpfs mounts, each bounded in bytes and in entries (inodes): the workspace
  copy at /workspace (`sandbox_workspace_max_bytes`, `sandbox_workspace_max_files`), /tmp and
  /dev/shm (`sandbox_tmp_max_bytes`, `sandbox_tmp_max_files` each); the reward folder at
  /reward, read-only; nothing of the host is writable, and no host folder is bound, so no
  host path shows in /proc/self/mountinfo;
- a cleared environment (a fixed PATH, HOME=/tmp, a UTF-8 locale);
- rlimits on address space, processes, file size, CPU seconds, open files, message queues and
  core dumps, applied inside the new user namespace by `prlimit` so the process count is that
  of the sandbox alone.

bwrap's `--size` has no inode limit, so the mounts are made by the sandbox's first process
(`_INIT`, run by bwrap with CAP_SYS_ADMIN in the sandbox's own user namespace only): it mounts
the tmpfs filesystems with `size=` and `nr_inodes=`, unpacks the reward folder and the workspace
from a tar streamed on a pipe (`write_payload`), makes /reward and /dev read-only, sets the
user namespace's max_user_namespaces to 0 (a nested namespace could mount an unbounded tmpfs),
drops every capability (bounding and ambient sets too), and runs the checker as uid 65534. It
reports the checker's wait status and what was left of each quota on a second pipe.

At the time limit the whole sandbox is killed: bwrap's PID 1 dies, and with it every process
in the PID namespace, including ones that called setsid. stdout and stderr are read as they
arrive; only a head and a tail (a setting) are kept, so 300 MB of output costs a few MB, and
the scores are parsed from the tail, so a JSON object printed after a large output still
counts.

Where bwrap cannot start (no user namespaces), `run_checker` refuses with a message saying
why, unless the setting `checker_allow_unsandboxed` is on: then the checker runs in today's
weaker mode (own process group, minimal environment, rlimits) and the result carries a
warning that the UI shows.
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from clawviz.review.archive import TreeEntry
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
    report: dict[str, Any] = field(default_factory=dict)
    """What the sandbox's init reported on its pipe: the checker's wait `status` and what was
    `left` of each quota ([bytes, entries]), or a `setup_error`."""


@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    processes: int
    file_bytes: int
    cpu_seconds: int
    tmp_bytes: int
    output_bytes: int
    tmp_files: int = 10_000
    workspace_bytes: int = 1024 * 1024 * 1024
    workspace_files: int = 50_000

    @classmethod
    def from_settings(cls, settings: Settings, timeout_s: float) -> Limits:
        return cls(
            memory_bytes=int(settings.checker_max_memory_mb) * 1024 * 1024,
            processes=int(settings.checker_max_processes),
            file_bytes=int(settings.checker_max_file_mb) * 1024 * 1024,
            cpu_seconds=max(1, int(timeout_s) + 1),
            tmp_bytes=int(settings.sandbox_tmp_max_bytes),
            output_bytes=int(settings.checker_max_output_bytes),
            tmp_files=int(settings.sandbox_tmp_max_files),
            workspace_bytes=int(settings.sandbox_workspace_max_bytes),
            workspace_files=int(settings.sandbox_workspace_max_files),
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


# The sandbox's first process (run by bwrap as user nobody with CAP_SYS_ADMIN, CAP_SYS_RESOURCE
# and CAP_SETPCAP in the sandbox's own user namespace, never on the host). It mounts the bounded
# tmpfs filesystems (bwrap's --size has no inode limit), unpacks the reward folder and the
# workspace from the tar stream on fd 3 into them (no host folder is bound, so no host path
# shows in /proc/self/mountinfo), makes /reward and /dev read-only, forbids nested user
# namespaces (which could mount an unbounded tmpfs), drops every capability, then runs the
# checker and reports its wait status and what was left of each quota on fd 4.
_INIT = r"""
import ctypes, errno, json, os, sys, tarfile
cfg = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p]
NOSUID, NODEV, NOEXEC, REMOUNT, BIND, RDONLY = 2, 4, 8, 32, 4096, 1
REPORT = cfg["report_fd"]

def report(**kw):
    os.write(REPORT, (json.dumps(kw) + "\n").encode())

def fail(msg):
    report(setup_error=msg)
    os._exit(125)

def mount(src, target, fstype, flags, data, optional=False):
    rc = libc.mount(src and src.encode(), target.encode(), fstype and fstype.encode(), flags,
                    data and data.encode())
    if rc != 0 and not optional:
        fail("cannot mount %s: %s" % (target, os.strerror(ctypes.get_errno())))

for target, size, inodes, mode, flags in cfg["tmpfs"]:
    mount("tmpfs", target, "tmpfs", flags, "size=%d,nr_inodes=%d,mode=%s" % (size, inodes, mode))
mount("devpts", "/dev/pts", "devpts", NOSUID | NOEXEC, "newinstance,ptmxmode=0666,mode=0620",
      optional=True)
names = {"reward": "reward folder", "workspace": "workspace"}

dir_modes = []

def unpack(tf):
    for m in tf:
        top, _, rest = m.name.partition("/")
        if top not in names or not rest or ".." in rest.split("/"):
            fail("unexpected member %r in the sandbox payload" % m.name)
        dest = "/%s/%s" % (top, rest)
        try:
            if m.isdir():
                os.makedirs(dest, exist_ok=True)
                dir_modes.append((dest, m.mode & 0o777))
            elif m.issym():
                os.symlink(m.linkname, dest)
            elif m.isfile():
                src = tf.extractfile(m)
                with open(dest, "wb") as out:
                    while True:
                        chunk = src.read(1 << 16)
                        if not chunk:
                            break
                        out.write(chunk)
                os.chmod(dest, m.mode & 0o777)  # the host file's bits, never setuid
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                fail("the %s does not fit in the sandbox (%s)" % (names[top], cfg["quota"][top]))
            fail("cannot unpack %s: %s" % (dest, exc.strerror))

try:
    with os.fdopen(cfg["payload_fd"], "rb") as fh, tarfile.open(fileobj=fh, mode="r|") as tf:
        unpack(tf)
except (tarfile.TarError, EOFError) as exc:
    fail("the workspace stream was cut (%s)" % exc)
for path, mode in reversed(dir_modes):  # last, so a read-only folder could be filled first
    os.chmod(path, mode)
mount(None, "/reward", None, REMOUNT | BIND | RDONLY | NOSUID | NODEV, None)
mount(None, "/dev", None, REMOUNT | BIND | RDONLY | NOSUID, None)
try:
    with open("/proc/sys/user/max_user_namespaces", "w") as fh:
        fh.write("0")
except OSError as exc:
    fail("cannot forbid nested user namespaces: %s" % exc.strerror)
for cap in range(64):
    libc.prctl(24, ctypes.c_ulong(cap), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
libc.prctl(47, ctypes.c_ulong(4), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))

class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

class Data(ctypes.Structure):
    _fields_ = [("e", ctypes.c_uint32), ("p", ctypes.c_uint32), ("i", ctypes.c_uint32)]

if libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()) != 0:
    fail("cannot drop capabilities: %s" % os.strerror(ctypes.get_errno()))
libc.prctl(38, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
os.chdir("/workspace")
pid = os.fork()
if pid == 0:
    os.close(REPORT)
    try:
        os.execv(cfg["argv"][0], cfg["argv"])
    finally:
        os._exit(127)
_, status = os.waitpid(pid, 0)
left = {}
for name, path in (("workspace", "/workspace"), ("tmp", "/tmp"), ("shm", "/dev/shm")):
    st = os.statvfs(path)
    left[name] = [st.f_bavail * st.f_frsize, st.f_favail]
report(status=status, left=left)
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""
PAYLOAD_FD = 3
REPORT_FD = 4
_DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
"""The device nodes a checker gets (bound from the host): /dev/tty is there so that programs
probing for a terminal get ENXIO rather than ENOENT; nothing else (no /dev/shm of the host, no
disks, no /dev/mem). /dev itself is a read-only tmpfs; /dev/pts is a fresh devpts instance."""
_PAGE = 4096
_INIT_CAPS = ("CAP_SYS_ADMIN", "CAP_SYS_RESOURCE", "CAP_SETPCAP")


# System calls that make RAM-backed memory no mount bounds, refused with ENOSYS by a seccomp
# filter: SysV shared memory, semaphore sets and message queues (their segments outlive every
# process's rlimits until the IPC namespace dies, and the IPC namespace's sysctls are owned by a
# root uid the sandbox does not map, so they cannot be lowered), memfd_create and memfd_secret
# (anonymous files outside every tmpfs quota). POSIX shared memory and semaphores work: they
# live in the bounded /dev/shm.
_RAM_SYSCALLS = {
    # machine: (AUDIT_ARCH_*, {name: number})
    "x86_64": (
        0xC000003E,
        {"shmget": 29, "semget": 64, "msgget": 68, "memfd_create": 319, "memfd_secret": 447},
    ),
    "aarch64": (
        0xC00000B7,
        {"shmget": 194, "semget": 190, "msgget": 186, "memfd_create": 279, "memfd_secret": 447},
    ),
}


def seccomp_program(machine: str | None = None) -> bytes | None:
    """A classic BPF seccomp filter (struct sock_filter[]) refusing `_RAM_SYSCALLS` with ENOSYS,
    and every system call of another ABI (x32, i386), or None on a machine not listed."""
    import platform
    import struct

    entry = _RAM_SYSCALLS.get(machine or platform.machine())
    if entry is None:
        return None
    arch, numbers = entry
    ld_w_abs, jeq_k, jge_k, ret_k = 0x20, 0x15, 0x35, 0x06
    allow, refuse = 0x7FFF0000, 0x00050000 | 38  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO|ENOSYS
    nrs = sorted(numbers.values())
    n = len(nrs)
    # 0: ld arch; 1: arch == native ? 2 : refuse; 2: ld nr; 3: nr >= x32 bit ? refuse : 4;
    # 4..4+n-1: nr == k ? refuse : next; 4+n: allow; 5+n: refuse.
    prog = [(ld_w_abs, 0, 0, 4), (jeq_k, 0, n + 3, arch), (ld_w_abs, 0, 0, 0)]
    prog.append((jge_k, n + 1, 0, 0x40000000))
    for i, nr in enumerate(nrs):
        prog.append((jeq_k, n - i, 0, nr))
    prog += [(ret_k, 0, 0, allow), (ret_k, 0, 0, refuse)]
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


def _dev_args() -> list[str]:
    args = ["--size", str(64 * 1024), "--tmpfs", "/dev"]
    for name in _DEV_NODES:
        args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ):
        args += ["--symlink", target, f"/dev/{name}"]
    return [*args, "--dir", "/dev/shm", "--dir", "/dev/pts"]


def _bwrap_base(python: str) -> list[str]:
    """[setpriv …] bwrap with the namespaces, the read-only system and the mount points."""
    cmd: list[str] = []
    if _drop_to_nobody(python):
        cmd += ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    cmd += [shutil.which("bwrap") or "bwrap", "--unshare-all", "--unshare-user"]
    cmd += ["--die-with-parent", "--new-session", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    cmd += ["--hostname", "sandbox"]
    for cap in _INIT_CAPS:
        cmd += ["--cap-add", cap]
    cmd += [*_system_binds(), *_python_binds(python), "--proc", "/proc", *_dev_args()]
    for mount_point in ("/tmp", SANDBOX_WORKSPACE, SANDBOX_REWARD):
        cmd += ["--dir", mount_point]
    return [*cmd, "--remount-ro", "/", "--chdir", "/", "--clearenv"]


@dataclass(frozen=True)
class Payload:
    """What is unpacked into the sandbox: the reward folder and the workspace, as planned trees."""

    reward: list[TreeEntry]
    workspace: list[TreeEntry]


def tmpfs_need(entries: list[TreeEntry]) -> tuple[int, int]:
    """(bytes, inodes) a tree takes in a tmpfs: whole pages per file and per long link, one
    inode per entry plus the root."""
    size = 0
    for e in entries:
        if e.kind == "file":
            size += -(-e.size // _PAGE) * _PAGE
        elif e.kind == "link" and len(os.readlink(e.path)) >= 128:
            size += _PAGE
    return size, len(entries) + 1


def quota_problem(payload: Payload, limits: Limits) -> str | None:
    """None when the workspace fits its tmpfs quota, else a sentence naming the setting."""
    size, inodes = tmpfs_need(payload.workspace)
    if size > limits.workspace_bytes:
        return (
            f"the workspace takes {size} bytes in the sandbox, more than its quota of "
            f"{limits.workspace_bytes} bytes (sandbox_workspace_max_bytes)"
        )
    if inodes > limits.workspace_files:
        return (
            f"the workspace has {inodes} entries, more than the sandbox's quota of "
            f"{limits.workspace_files} (sandbox_workspace_max_files)"
        )
    return None


def _at_most(which: int, value: int) -> int:
    """`value`, or the hard limit when it is lower (an unprivileged prlimit cannot raise it)."""
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def bwrap_command(
    python: str,
    script: str,
    limits: Limits,
    payload: Payload,
    *,
    payload_fd: int = PAYLOAD_FD,
    report_fd: int = REPORT_FD,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The full argv: [setpriv …] bwrap … -- python -c _INIT (which mounts the quotas, unpacks
    the payload from fd 3 and runs prlimit … -- python /reward/<script> /workspace)."""
    prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
    cmd = _bwrap_base(python)
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    for k, v in _SANDBOX_ENV.items():
        cmd += ["--setenv", k, v]
    checker = [
        prlimit,
        f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}",
        f"--fsize={limits.file_bytes}",
        f"--cpu={limits.cpu_seconds}",
        "--core=0",
        f"--nofile={_at_most(resource.RLIMIT_NOFILE, 1024)}",
        f"--msgqueue={_at_most(resource.RLIMIT_MSGQUEUE, 819200)}",
        "--",
        python,
        f"{SANDBOX_REWARD}/{script}",
        SANDBOX_WORKSPACE,
    ]
    reward_size, reward_inodes = tmpfs_need(payload.reward)
    flags = 2 | 4  # nosuid, nodev
    tmpfs = [
        [SANDBOX_WORKSPACE, limits.workspace_bytes, limits.workspace_files, "0755", flags],
        ["/tmp", limits.tmp_bytes, limits.tmp_files, "1777", flags],
        ["/dev/shm", limits.tmp_bytes, limits.tmp_files, "1777", flags | 8],
        [SANDBOX_REWARD, reward_size + 1024 * 1024, reward_inodes + 16, "0755", flags],
    ]
    cfg = {
        "tmpfs": tmpfs,
        "argv": checker,
        "payload_fd": payload_fd,
        "report_fd": report_fd,
        "quota": {
            "workspace": f"sandbox_workspace_max_bytes={limits.workspace_bytes}, "
            f"sandbox_workspace_max_files={limits.workspace_files}",
            "reward": "the reward folder's own size",
        },
    }
    return [*cmd, "--", python, "-I", "-S", "-c", _INIT, json.dumps(cfg)]


def write_payload(payload: Payload, out: IO[bytes]) -> None:
    """Stream the reward folder and the workspace as one tar (reward/…, workspace/…) to `out`.

    Each file is read for exactly the size planned (and counted against the archive limits), so
    a file that grows after planning cannot stretch the stream."""
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tf:
        for top, entries in (("reward", payload.reward), ("workspace", payload.workspace)):
            for e in entries:
                info = tarfile.TarInfo(f"{top}/{e.rel}")
                info.mode = e.mode
                if e.kind == "dir":
                    info.type = tarfile.DIRTYPE
                    tf.addfile(info)
                elif e.kind == "link":
                    info.type, info.linkname = tarfile.SYMTYPE, os.readlink(e.path)
                    tf.addfile(info)
                else:
                    info.size = e.size
                    with e.path.open("rb") as fh:
                        tf.addfile(info, fh)


_PROBE: dict[tuple[str, bool], str | None] = {}


def bwrap_problem(python: str | None = None) -> str | None:
    """None when bwrap can start a sandbox here, with the bounded mounts, else one sentence
    saying why not (cached)."""
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
        problem = _probe(python)
    _PROBE[key] = problem
    return problem


def _probe(python: str) -> str | None:
    """Run a checker that prints one score line through the real command."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="clawviz-probe-") as tmp:
        script = Path(tmp) / "probe.py"
        script.write_text("print('{\"probe\": 1}')\n")
        entry = TreeEntry(script, "probe.py", "file", script.stat().st_size, 0o644)
        limits = Limits(256 * 1024 * 1024, 16, 1 << 20, 10, 1 << 20, 4096, 64, 1 << 20, 64)
        try:
            out = run_sandboxed(python, "probe.py", limits, Payload([entry], []), timeout_s=20)
        except OSError as exc:
            return f"bwrap cannot start ({exc})"
    if out.returncode == 0 and b'{"probe": 1}' in out.stdout.head:
        return None
    err = out.stderr.text().strip().splitlines()
    why = out.report.get("setup_error") or (err[-1] if err else f"exit code {out.returncode}")
    return (
        f"bwrap cannot create a sandbox here ({why}); user namespaces may be disabled "
        "(kernel.unprivileged_userns_clone)"
    )


def run_sandboxed(
    python: str, script: str, limits: Limits, payload: Payload, *, timeout_s: float
) -> RunOutcome:
    """Run `script` of the payload's reward folder in the sandbox (`bwrap_command`), streaming
    the payload in and reading the init's report back (`RunOutcome.report`)."""
    payload_r, payload_w = os.pipe()
    report_r, report_w = os.pipe()
    filter_r: int | None = None
    program = seccomp_program()
    if program is not None:
        # A few dozen bytes: the pipe holds them until bwrap reads the filter.
        filter_r, filter_w = os.pipe()
        os.write(filter_w, program)
        os.close(filter_w)
    cmd = bwrap_command(
        python,
        script,
        limits,
        payload,
        payload_fd=payload_r,
        report_fd=report_w,
        seccomp_fd=filter_r,
    )
    problems: list[str] = []

    def feed() -> None:
        try:
            with os.fdopen(payload_w, "wb") as out:
                write_payload(payload, out)
        except BrokenPipeError:
            pass  # the sandbox stopped reading; its report says why
        except OSError as exc:
            # A file that cannot be read, or that shrank after it was planned.
            where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
            problems.append(f"cannot copy the workspace in:{where} {exc.strerror or exc}")
        except tarfile.TarError as exc:
            problems.append(f"cannot copy the workspace in ({exc})")

    feeder = threading.Thread(target=feed, daemon=True)
    ours = [payload_r, report_w, payload_w] + ([] if filter_r is None else [filter_r])

    def started() -> None:
        # The child holds its own copies now; ours would keep the pipes open forever.
        for fd in ours:
            if fd != payload_w:
                os.close(fd)
        ours[:] = []
        feeder.start()

    try:
        outcome = run_bounded(
            cmd,
            env=dict(_SANDBOX_ENV),
            cwd="/",
            timeout_s=timeout_s,
            tail_bytes=limits.output_bytes,
            pass_fds=tuple(fd for fd in ours if fd != payload_w),
            started=started,
        )
        outcome.report = _read_report(report_r)
    finally:
        for fd in [*ours, report_r]:  # ours is empty once the sandbox started
            os.close(fd)
        if feeder.is_alive():
            feeder.join(timeout=5)
    if problems:  # the app's side knows why the stream was cut; the sandbox saw only the cut
        outcome.report["setup_error"] = problems[0]
    status = outcome.report.get("status")
    if isinstance(status, int) and not outcome.timed_out:
        # The checker's own exit (a signal as a negative code, as subprocess reports it).
        outcome.returncode = os.waitstatus_to_exitcode(status)
    return outcome


def _read_report(fd: int) -> dict[str, Any]:
    """The init's last JSON line on the report pipe (bounded; {} when there is none)."""
    os.set_blocking(fd, False)
    data = bytearray()
    deadline = time.monotonic() + 1.0
    while len(data) < 65536 and time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            time.sleep(0.01)
            continue
        if not chunk:
            break
        data += chunk
    for line in reversed(bytes(data).splitlines()):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            return obj
    return {}


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
    pass_fds: tuple[int, ...] = (),
    started: Callable[[], object] | None = None,
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
        pass_fds=pass_fds,
    )
    if started is not None:
        started()
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
