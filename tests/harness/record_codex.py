"""Record Codex CLI (npm @openai/codex) with `codex exec`, offline.

    python3 -m tests.harness.record_codex [SCENARIO ...] [--npm-dir DIR] [--keep]
    RIG_CODEX_VERSION=0.169.1 python3 -m tests.harness.record_codex failed-call-compaction

For each scenario in tests/harness/scenarios/codex/ (or the ones named): install Codex at the
pinned version into a temporary folder (or --npm-dir), start the scripted server and
`clawviz record` in front of it, write a CODEX_HOME/config.toml whose only model provider is
the proxy (`wire_api = "responses"`), and run `codex exec` for the first prompt and
`codex exec resume --last` for each further one, in a network namespace with only loopback.
Everything is stopped by PID. Saved under tests/data/recorded/codex-<version>/<scenario>/:
exchanges.jsonl, server.jsonl, the rollout file (`rollout.jsonl`) and the scenario.

Scenario keys used here besides the steps: `prompts`, `files`, and `codex` with `config`
(extra top-level config.toml lines, e.g. `model_auto_compact_token_limit = 4000`).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .recorder import record_main, run_folder
from .rig import RECORDED, Rig, machine_replacements, offline_env, one_file, save

CODEX_VERSION = os.environ.get("RIG_CODEX_VERSION", "0.171.0")
"""The release recorded; `RIG_CODEX_VERSION=0.169.1 python3 -m tests.harness.record_codex S`
records an older one (its own folder, `codex-<version>/`)."""
CODEX_SPEC = f"@openai/codex@{CODEX_VERSION}"
SCENARIOS = Path(__file__).parent / "scenarios" / "codex"
# Features that would reach for the network, start background servers or add tools the
# scenarios do not script.
DISABLED_FEATURES = [
    "apps",
    "remote_plugin",
    "browser_use",
    "browser_use_external",
    "computer_use",
    "in_app_updates",
    "daemon_auto_start",
    "api_key_model_discovery",
    "cli_daybreak",
]


def config_toml(base_url: str, extra: list[str]) -> str:
    lines = [
        'model = "scripted-model"',
        'model_provider = "scripted"',
        'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"',
        "check_for_update_on_startup = false",
        "model_context_window = 32000",
        *extra,
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[features]",
        *[f"{f} = false" for f in DISABLED_FEATURES],
        "",
        "[model_providers.scripted]",
        'name = "scripted"',
        f'base_url = "{base_url}"',
        'wire_api = "responses"',
        'env_key = "SCRIPTED_API_KEY"',
        "request_max_retries = 3",
        "stream_max_retries = 1",
        "stream_idle_timeout_ms = 20000",
        "",
    ]
    return "\n".join(lines)


def _thread_source(rollout: Path) -> str:
    with rollout.open() as f:
        first = json.loads(f.readline() or "{}")
    return str((first.get("payload") or {}).get("thread_source", "user"))


def record(
    scenario_file: Path, npm_dir: Path | None, keep: bool, clawviz_src: Path | None = None
) -> Path:
    with run_folder("codex", scenario_file, CODEX_SPEC, npm_dir, keep) as run:
        scn, procs, tmp, bin_dir, work = run.scenario, run.procs, run.tmp, run.bin_dir, run.work
        name, cfg = scn["name"], scn.get("codex", {})
        home = run.home
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        with Rig(tmp, scenario_file, f"codex-{name}", procs, clawviz_src) as rig:
            (codex_home / "config.toml").write_text(
                config_toml(rig.base_url("/v1"), cfg.get("config", []))
            )
            env = offline_env(
                home,
                {"CODEX_HOME": str(codex_home), "SCRIPTED_API_KEY": "sk-scripted-not-a-key"},
            )
            out = (tmp / "codex.out").open("a")
            for n, prompt in enumerate(scn["prompts"]):
                args = [str(bin_dir / "codex"), "exec"]
                if n:
                    args += ["resume", "--last"]
                args += ["--skip-git-repo-check", "--json", prompt]
                p = procs.start(
                    args,
                    cwd=work,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                )
                try:
                    p.wait(cfg.get("timeout", 180))
                except subprocess.TimeoutExpired:
                    procs.stop(p)
                    raise RuntimeError(f"codex exec did not finish: {tmp / 'codex.out'}") from None
                if p.returncode != 0 and not cfg.get("may_fail"):
                    raise RuntimeError(f"codex exec exited {p.returncode}: {tmp / 'codex.out'}")
        exchanges = one_file(rig.exchanges, "*.jsonl")
        # the main thread's rollout first; each sub-agent thread writes one of its own
        rollouts = sorted(
            (codex_home / "sessions").rglob("rollout-*.jsonl"),
            key=lambda p: (_thread_source(p) != "user", p.name),
        )
        if not rollouts:
            raise RuntimeError(f"no rollout file under {codex_home / 'sessions'}")
        dest = RECORDED / f"codex-{CODEX_VERSION}" / name
        repl = machine_replacements(tmp, rig)
        iid = codex_home / "installation_id"
        if iid.exists():
            repl[iid.read_text().strip()] = "00000000-0000-4000-8000-000000000000"
        save(
            dest,
            {
                "exchanges.jsonl": exchanges,
                "server.jsonl": rig.server_log,
                **{
                    ("rollout.jsonl" if k == 0 else f"rollout-sub{k}.jsonl"): p
                    for k, p in enumerate(rollouts)
                },
                "scenario.json": scenario_file,
            },
            repl,
        )
        return dest


def main(argv: list[str] | None = None) -> int:
    return record_main("codex", CODEX_SPEC, SCENARIOS, record, argv)


if __name__ == "__main__":
    raise SystemExit(main())
