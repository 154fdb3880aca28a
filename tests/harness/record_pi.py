"""Record pi-coding-agent (npm @mariozechner/pi-coding-agent) in `--mode rpc`, offline.

    python3 -m tests.harness.record_pi [SCENARIO ...] [--npm-dir DIR] [--keep]

For each scenario in tests/harness/scenarios/pi/ (or the ones named): install pi at the pinned
version into a temporary folder (or --npm-dir, reused across runs), start the scripted server
and `clawviz record` in front of it, run pi with HOME, its agent dir and its session dir in a
temporary directory and a models.json whose only provider points at the proxy, send the
scenario's `prompts` over RPC one after another (each waits for the agent to go idle), then
stop everything by PID and save exchanges.jsonl, server.jsonl, the pi session file and the
scenario under tests/data/recorded/pi-<version>/<scenario>/.

Scenario keys used here besides the steps:
- `prompts`: the user prompts, in order; an item may also be `{"message": ..., "abort_on":
  STEP}` (the RPC `abort` command once the server got the request of that step, e.g. a `hang`
  step: an interrupted turn) or `{"compact": true}` (the RPC `compact` command: /compact);
- `pi`: `api` (openai-completions | anthropic-messages | openai-responses), `settings`
  (merged into pi's settings.json), `context_window`;
- `files`: {name: text} created in the work folder.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path

from .recorder import record_main, run_folder
from .rig import RECORDED, Rig, machine_replacements, offline_env, one_file, save

PI_VERSION = "0.73.1"
PI_SPEC = f"@mariozechner/pi-coding-agent@{PI_VERSION}"
SCENARIOS = Path(__file__).parent / "scenarios" / "pi"
BASE_SETTINGS = {
    "retry": {"enabled": True, "maxRetries": 3, "baseDelayMs": 200},
    "compaction": {"enabled": True, "reserveTokens": 2000, "keepRecentTokens": 40},
}


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class RpcClient:
    def __init__(self, proc: subprocess.Popen, events_path: Path):
        self.proc = proc
        self.q: queue.Queue[dict] = queue.Queue()
        self.events_path = events_path
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.events_path.open("a") as f:
            for raw in iter(self.proc.stdout.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if not line:
                    continue
                f.write(line + "\n")
                f.flush()
                try:
                    self.q.put(json.loads(line))
                except json.JSONDecodeError:
                    self.q.put({"type": "_noise", "text": line})

    def send(self, obj: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def wait_idle(self, timeout: float = 120, quiet: float = 3.0) -> list[dict]:
        """Events until an agent_end followed by `quiet` seconds of silence."""
        seen: list[dict] = []
        ended = False
        end = time.time() + timeout
        while time.time() < end:
            try:
                ev = self.q.get(timeout=quiet if ended else 1.0)
            except queue.Empty:
                if ended:
                    return seen
                if self.proc.poll() is not None:
                    raise RuntimeError(f"pi exited with {self.proc.returncode}") from None
                continue
            seen.append(ev)
            t = ev.get("type")
            if t == "agent_end":
                ended = True
            elif t in ("agent_start", "compaction_start", "auto_retry_start"):
                ended = False
        raise RuntimeError(f"pi did not go idle within {timeout}s")

    def request(self, obj: dict, timeout: float = 20) -> dict:
        obj = dict(obj, id=f"rig-{time.monotonic_ns()}")
        self.send(obj)
        held: list[dict] = []  # other events, given back for wait_idle
        end = time.time() + timeout
        while time.time() < end:
            try:
                ev = self.q.get(timeout=1)
            except queue.Empty:
                continue
            if ev.get("type") == "response" and ev.get("id") == obj["id"]:
                for other in held:
                    self.q.put(other)
                return ev
            held.append(ev)
        raise RuntimeError(f"no response to {obj['type']}")


def _wait_for_step(server_log: Path, step: str, timeout: float = 60) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if server_log.exists():
            for line in server_log.read_text().splitlines():
                if json.loads(line).get("step") == step:
                    return
        time.sleep(0.1)
    raise RuntimeError(f"the server never got a request for step {step!r}")


def record(
    scenario_file: Path, npm_dir: Path | None, keep: bool, clawviz_src: Path | None = None
) -> Path:
    with run_folder("pi", scenario_file, PI_SPEC, npm_dir, keep) as run:
        scn, procs, tmp, bin_dir, work = run.scenario, run.procs, run.tmp, run.bin_dir, run.work
        name, pi_cfg = scn["name"], scn.get("pi", {})
        home = run.home
        agent_dir, sessions = home / ".pi" / "agent", tmp / "sessions"
        for d in (agent_dir, sessions):
            d.mkdir(parents=True, exist_ok=True)
        with Rig(tmp, scenario_file, f"pi-{name}", procs, clawviz_src) as rig:
            models = {
                "providers": {
                    "scripted": {
                        # the Anthropic SDK adds /v1/messages itself
                        "baseUrl": rig.base_url(
                            "" if pi_cfg.get("api") == "anthropic-messages" else "/v1"
                        ),
                        "api": pi_cfg.get("api", "openai-completions"),
                        "apiKey": "sk-scripted-not-a-key",
                        "compat": {
                            "supportsDeveloperRole": False,
                            "supportsReasoningEffort": False,
                        },
                        "models": [
                            {
                                "id": "scripted-model",
                                "contextWindow": pi_cfg.get("context_window", 128000),
                                "maxTokens": 1024,
                            }
                        ],
                    }
                }
            }
            (agent_dir / "models.json").write_text(json.dumps(models, indent=1))
            settings = _merge(BASE_SETTINGS, pi_cfg.get("settings", {}))
            (agent_dir / "settings.json").write_text(json.dumps(settings, indent=1))
            env = offline_env(
                home,
                {"PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1"},
            )
            pi = procs.start(
                [
                    str(bin_dir / "pi"),
                    "--mode",
                    "rpc",
                    "--offline",
                    "--provider",
                    "scripted",
                    "--model",
                    "scripted-model",
                    "--session-dir",
                    str(sessions),
                ],
                cwd=work,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=(tmp / "pi.stderr").open("w"),
            )
            rpc = RpcClient(pi, tmp / "rpc-events.jsonl")
            for prompt in scn["prompts"]:
                if isinstance(prompt, str):
                    prompt = {"message": prompt}
                if prompt.get("compact"):
                    # manual compaction (pi's /compact), answered when the summary is in
                    rpc.request({"type": "compact"}, timeout=60)
                    continue
                rpc.send({"type": "prompt", "message": prompt["message"]})
                if "abort_on" in prompt:
                    _wait_for_step(rig.server_log, prompt["abort_on"])
                    time.sleep(float(prompt.get("abort_after", 0.5)))
                    rpc.request({"type": "abort"})
                rpc.wait_idle()
            state = rpc.request({"type": "get_state"})
            session_file = Path(state["data"]["sessionFile"])
            assert pi.stdin is not None
            pi.stdin.close()
            procs.stop(pi)
        exchanges = one_file(rig.exchanges, "*.jsonl")
        dest = RECORDED / f"pi-{PI_VERSION}" / name
        save(
            dest,
            {
                "exchanges.jsonl": exchanges,
                "server.jsonl": rig.server_log,
                "session.jsonl": session_file,
                "scenario.json": scenario_file,
            },
            machine_replacements(tmp, rig),
        )
        return dest


def main(argv: list[str] | None = None) -> int:
    return record_main("pi", PI_SPEC, SCENARIOS, record, argv)


if __name__ == "__main__":
    raise SystemExit(main())
