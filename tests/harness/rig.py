"""Shared plumbing of the recording scripts (never run by pytest: it needs npm and real harnesses).

A recording is: scripted server (``python3 -m tests.harness.serve``) <- ``clawviz record``
proxy <- the real harness, all on 127.0.0.1, with HOME and every config folder in one temporary
directory. Everything started here is stopped by its PID.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "data" / "recorded"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 20) -> None:
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def npm_install(spec: str, prefix: Path) -> Path:
    """Install `spec` (name@version) into `prefix`; returns its node_modules/.bin."""
    prefix.mkdir(parents=True, exist_ok=True)
    bin_dir = prefix / "node_modules" / ".bin"
    marker = prefix / ".installed"
    if marker.exists() and marker.read_text() == spec:
        return bin_dir
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), spec],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    marker.write_text(spec)
    return bin_dir


class Procs:
    """Processes started by a recording, stopped by PID (SIGTERM, then SIGKILL) in reverse."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, args: list[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(args, **kw)
        self.procs.append(p)
        return p

    def stop(self, p: subprocess.Popen, grace: float = 10) -> None:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)

    def stop_all(self) -> None:
        for p in reversed(self.procs):
            self.stop(p)


class Rig:
    """Scripted server + recording proxy for one scenario run."""

    def __init__(
        self,
        tmp: Path,
        scenario_file: Path,
        episode: str,
        procs: Procs,
        clawviz_src: Path | None = None,
    ):
        self.clawviz_src = clawviz_src or REPO
        self.tmp, self.scenario_file, self.episode, self.procs = tmp, scenario_file, episode, procs
        self.server_log = tmp / "server.jsonl"
        self.exchanges = tmp / "exchanges"
        self.server_port = free_port()
        self.proxy_port = free_port()

    def __enter__(self) -> Rig:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.server = self.procs.start(
            [
                sys.executable,
                "-m",
                "tests.harness.serve",
                "--scenario",
                str(self.scenario_file),
                "--port",
                str(self.server_port),
                "--log",
                str(self.server_log),
            ],
            cwd=REPO,
            env=env,
        )
        wait_port(self.server_port)
        self.proxy = self.procs.start(
            [
                sys.executable,
                "-m",
                "clawviz",
                "record",
                "--upstream",
                f"http://127.0.0.1:{self.server_port}",
                "--listen",
                f"127.0.0.1:{self.proxy_port}",
                "--out",
                str(self.exchanges),
                "--read-timeout",
                "60",
            ],
            cwd=self.clawviz_src,
            env=dict(env, PYTHONPATH=str(self.clawviz_src)),
        )
        wait_port(self.proxy_port)
        return self

    def base_url(self, suffix: str = "/v1") -> str:
        return f"http://127.0.0.1:{self.proxy_port}/ep/{self.episode}{suffix}"

    def __exit__(self, *exc) -> None:
        self.procs.stop(self.proxy)
        self.procs.stop(self.server)


def offline_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment with HOME in `home`, no proxies and nothing inherited that names a key."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TZ")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        TZ="UTC",
    )
    env.update(extra or {})
    return env


def scrub(text: str, replacements: dict[str, str]) -> str:
    """Replace machine-specific strings (temp paths, ports, host name) in a recorded file."""
    for old, new in sorted(replacements.items(), key=lambda kv: -len(kv[0])):
        if old:
            text = text.replace(old, new)
    return text


def machine_replacements(tmp: Path, rig: Rig) -> dict[str, str]:
    out = {
        str(tmp): "/tmp/rig",
        f"127.0.0.1:{rig.proxy_port}": "127.0.0.1:8099",
        f"127.0.0.1:{rig.server_port}": "127.0.0.1:8000",
    }
    # Host and user names only when long enough not to hit ordinary words ("vm", "root").
    for name, new in ((socket.gethostname(), "rig-host"), (os.environ.get("USER", ""), "user")):
        if len(name) >= 6 and name not in ("runner", "ubuntu"):
            out[name] = new
    return out


def save(dest: Path, files: dict[str, Path], replacements: dict[str, str]) -> None:
    """Copy files into `dest` with machine-specific strings replaced; refuse secrets."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name, src in files.items():
        text = scrub(src.read_text(), replacements)
        if re.search(r"sk-(?!scripted)[A-Za-z0-9]{16,}", text):
            raise RuntimeError(f"{src}: looks like it holds an API key; not saved")
        (dest / name).write_text(text)
    from .expect import expected_for

    (dest / "expected.json").write_text(json.dumps(expected_for(dest), indent=1) + "\n")


def one_file(folder: Path, pattern: str) -> Path:
    found = sorted(folder.rglob(pattern))
    if len(found) != 1:
        raise RuntimeError(f"expected one {pattern} under {folder}, found {found}")
    return found[0]


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def run_offline(module: str, args: list[str]) -> int:
    """Re-run `python3 -m module args` in a fresh network namespace that has only loopback.

    The harness then cannot reach anything but the scripted server and the proxy, whatever it
    tries (update checks, telemetry). Needs `unshare -n` (root, or user namespaces).
    """
    if shutil.which("unshare") is None:
        raise RuntimeError("unshare not found: cannot isolate the network (use --no-netns)")
    cmd = [
        "unshare",
        "-n",
        "--",
        "sh",
        "-c",
        'ip link set lo up && exec "$@"',
        "sh",
        sys.executable,
        "-m",
        module,
        *args,
    ]
    return subprocess.call(cmd, cwd=REPO, env=dict(os.environ, RIG_IN_NETNS="1"))
