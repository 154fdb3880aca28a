"""Record Claude Code (npm @anthropic-ai/claude-code) in `-p` print mode, offline.

    python3 -m tests.harness.record_claude_code --version 2.0.77 [SCENARIO ...] [--keep]
    tests/harness/record_claude_code.sh 2.1.332

For each scenario in tests/harness/scenarios/claude-code/ that lists the version (or the ones
named): install Claude Code at that version into a temporary folder (or --npm-dir, reused),
start the scripted server and `clawviz record` in front of it, and run one `claude -p` per
prompt of the scenario in one session (`--session-id` first, then `--resume`; a prompt such as
`/compact` is a slash command), with HOME in the recording folder, `ANTHROPIC_BASE_URL` at the
proxy, a dummy key and every non-essential traffic switch off. The whole run happens in a
network namespace that has only loopback (`unshare -n`), so nothing can reach the internet.
Then everything is stopped by PID and saved under
tests/data/recorded/claude-code-<version>/<scenario>/: exchanges.jsonl (the proxy log),
server.jsonl (the scripted server's own log), scenario.json, the session's transcript files
(`transcripts/`, as Claude Code wrote them under ~/.claude/projects/<cwd>/, sub-agent files
included), Claude Code's stream-json output and expected.json
(tests/harness/expect_claude_code.py, from the scenario and the server log only).

Scenario keys used here besides the steps: `versions` (which releases it is for), `prompts`
(each a string, or `{"prompt": ..., "interrupt_on_hang": true}`: press Ctrl-C on that run once
the server leaves a request of it hanging),
`files` ({name: text} created in the work folder), `allowed_tools` (default: the tools the
scenario's steps call, plus Read/Bash/Task/Agent).

Paths: the recording runs in the fixed folder /tmp/rig-claude-code (work folder `work/`), so the
paths in requests, scenarios and transcripts are the same on every machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from .rig import RECORDED, Procs, Rig, npm_install, offline_env, run_offline, scrub

SPEC = "@anthropic-ai/claude-code@{version}"
SCENARIOS = Path(__file__).parent / "scenarios" / "claude-code"
ROOT = Path("/tmp/rig-claude-code")
DEFAULT_TOOLS = ["Read", "Bash", "Task", "Agent", "Write", "Edit", "Glob", "Grep"]
ENV = {
    "ANTHROPIC_API_KEY": "sk-scripted-not-a-key",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_COST_WARNINGS": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
    "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
}
SESSION_ID = "c1a0de00-0000-4000-8000-00000000c0de"
"""Fixed session id: the transcript file names and `metadata.user_id` stay the same."""


def claude_bin(npm_dir: Path) -> Path:
    pkg = npm_dir / "node_modules" / "@anthropic-ai" / "claude-code"
    for rel in ("cli.js", "bin/claude.exe", "bin/claude"):
        if (pkg / rel).is_file():
            return pkg / rel
    raise RuntimeError(f"no Claude Code entry point under {pkg}")


def _tools(scn: dict) -> list[str]:
    if "allowed_tools" in scn:
        return list(scn["allowed_tools"])
    names = {t["name"] for s in scn["steps"] for t in s.get("tools", [])}
    return sorted(names | set(DEFAULT_TOOLS))


def record(version: str, scenario_file: Path, npm_dir: Path, keep: bool) -> Path:
    scn = json.loads(scenario_file.read_text())
    name = scn["name"]
    procs = Procs()
    if ROOT.exists():
        shutil.rmtree(ROOT)
    tmp = ROOT
    home, work = tmp / "home", tmp / "work"
    for d in (home, work):
        d.mkdir(parents=True)
    for fname, text in scn.get("files", {}).items():
        (work / fname).write_text(text)
    try:
        exe = claude_bin(npm_dir)
        with Rig(tmp, scenario_file, f"claude-code-{version}-{name}", procs) as rig:
            env = offline_env(home, dict(ENV, ANTHROPIC_BASE_URL=rig.base_url("")))
            out = tmp / "stream.jsonl"
            err = (tmp / "claude.stderr").open("w")
            for k, item in enumerate(scn["prompts"]):
                spec = item if isinstance(item, dict) else {"prompt": item}
                prompt = spec["prompt"]
                cmd = [str(exe), "-p", prompt, "--output-format", "stream-json", "--verbose"]
                cmd += ["--allowedTools", *_tools(scn)]
                cmd += ["--session-id", SESSION_ID] if k == 0 else ["--resume", SESSION_ID]
                with out.open("a") as fh:
                    p = procs.start(cmd, cwd=work, env=env, stdout=fh, stderr=err)
                    hang = rig.server_log if spec.get("interrupt_on_hang") else None
                    rc = _wait(p, procs, scn.get("timeout", 180), hang)
                print(f"  claude -p {prompt!r}: exit {rc}", file=sys.stderr)
        dest = RECORDED / f"claude-code-{version}" / name
        save(dest, tmp, rig, scenario_file)
        return dest
    finally:
        procs.stop_all()
        if keep:
            kept = Path(tempfile.mkdtemp(prefix=f"rig-claude-code-{name}-"))
            shutil.copytree(tmp, kept / "run", symlinks=True)
            print(f"kept a copy in {kept}", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)


def _wait(p: subprocess.Popen, procs: Procs, timeout: float, hang_log: Path | None) -> int:
    """Wait for one `claude -p` run; with `hang_log`, press Ctrl-C (SIGINT) once the scripted
    server logs a request it leaves hanging (a new `hang` line in its log)."""
    if hang_log is not None:
        seen = hang_log.read_text().count('"action": "hang"')
        end = time.time() + timeout
        while p.poll() is None and time.time() < end:
            if hang_log.read_text().count('"action": "hang"') > seen:
                time.sleep(1.0)  # the request is in flight: the user gives up
                p.send_signal(signal.SIGINT)
                break
            time.sleep(0.1)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        procs.stop(p)
        return -1


def _replacements(rig: Rig) -> dict[str, str]:
    return {
        f"127.0.0.1:{rig.proxy_port}": "127.0.0.1:8099",
        f"127.0.0.1:{rig.server_port}": "127.0.0.1:8000",
    }


def save(dest: Path, tmp: Path, rig: Rig, scenario_file: Path) -> None:
    """Copy the run's files into `dest` (ports made fixed); refuse anything holding a key."""
    import re

    from .expect_claude_code import expected_for

    files: dict[str, Path] = {
        "exchanges.jsonl": _one(rig.exchanges, "*.jsonl"),
        "server.jsonl": rig.server_log,
        "scenario.json": scenario_file,
        "stream.jsonl": tmp / "stream.jsonl",
    }
    projects = tmp / "home" / ".claude" / "projects"
    for f in sorted(projects.rglob("*")):
        if f.is_file() and f.stat().st_size > 0:
            files[f"transcripts/{f.relative_to(projects)}"] = f
    if dest.exists():
        shutil.rmtree(dest)
    for rel, src in files.items():
        text = scrub(src.read_text(), _replacements(rig))
        if re.search(r"sk-(?!scripted)[A-Za-z0-9]{16,}", text):
            raise RuntimeError(f"{src}: looks like it holds an API key; not saved")
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    (dest / "expected.json").write_text(json.dumps(expected_for(dest), indent=1) + "\n")


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise RuntimeError(f"expected one {pattern} in {folder}, found {found}")
    return found[0]


def scenarios_for(version: str, names: list[str]) -> list[Path]:
    files = [SCENARIOS / f"{n}.json" for n in names] or sorted(SCENARIOS.glob("*.json"))
    return [f for f in files if version in json.loads(f.read_text()).get("versions", [version])]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tests.harness.record_claude_code")
    ap.add_argument("scenarios", nargs="*", help="scenario file stems (default: all for VERSION)")
    ap.add_argument("--version", required=True, help="Claude Code release, e.g. 2.0.77")
    ap.add_argument("--npm-dir", type=Path, help="reuse this install folder")
    ap.add_argument("--keep", action="store_true", help="keep a copy of the run folder")
    ap.add_argument("--no-netns", action="store_true", help="do not isolate the network")
    a = ap.parse_args(argv)
    files = scenarios_for(a.version, a.scenarios)
    if not files:
        print(f"no scenario lists version {a.version}", file=sys.stderr)
        return 2
    spec = SPEC.format(version=a.version)
    if not a.no_netns and not os.environ.get("RIG_IN_NETNS"):
        # install with the network, then record in a namespace that has only loopback
        npm_dir = a.npm_dir or Path(tempfile.mkdtemp(prefix="rig-claude-code-npm-"))
        npm_install(spec, npm_dir)
        rest = [f.stem for f in files] + ["--version", a.version, "--npm-dir", str(npm_dir)]
        rest += ["--keep"] if a.keep else []
        try:
            return run_offline("tests.harness.record_claude_code", rest)
        finally:
            if a.npm_dir is None:
                shutil.rmtree(npm_dir, ignore_errors=True)
    npm_dir = a.npm_dir or Path(tempfile.mkdtemp(prefix="rig-claude-code-npm-"))
    npm_install(spec, npm_dir)
    for f in files:
        print(f"recording Claude Code {a.version}: {f.stem} (session {uuid.UUID(SESSION_ID)})")
        dest = record(a.version, f, npm_dir, a.keep)
        print(f"recorded {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
