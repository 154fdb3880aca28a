"""Record Codex CLI (npm @openai/codex) with `codex exec`, offline.

    python3 -m tests.harness.record_codex [SCENARIO ...] [--npm-dir DIR] [--keep]

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

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .rig import (
    RECORDED,
    Procs,
    Rig,
    machine_replacements,
    npm_install,
    offline_env,
    one_file,
    run_offline,
    save,
)

CODEX_VERSION = "0.171.0"
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
    scn = json.loads(scenario_file.read_text())
    name = scn["name"]
    cfg = scn.get("codex", {})
    procs = Procs()
    tmp = Path(tempfile.mkdtemp(prefix=f"rig-codex-{name}-"))
    try:
        bin_dir = npm_install(CODEX_SPEC, npm_dir or tmp / "npm")
        home, work = tmp / "home", tmp / "work"
        codex_home = home / ".codex"
        for d in (codex_home, work):
            d.mkdir(parents=True, exist_ok=True)
        for fname, text in scn.get("files", {}).items():
            (work / fname).write_text(text)
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
    finally:
        procs.stop_all()
        if keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tests.harness.record_codex")
    ap.add_argument("scenarios", nargs="*")
    ap.add_argument("--npm-dir", type=Path, help="reuse this install folder")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--clawviz-src", type=Path, help="run `clawviz record` from this checkout")
    ap.add_argument("--no-netns", action="store_true", help="do not isolate the network")
    a = ap.parse_args(argv)
    files = [SCENARIOS / f"{s}.json" for s in a.scenarios] or sorted(SCENARIOS.glob("*.json"))
    if not a.no_netns and not os.environ.get("RIG_IN_NETNS"):
        npm_dir = a.npm_dir or Path(tempfile.mkdtemp(prefix="rig-codex-npm-"))
        npm_install(CODEX_SPEC, npm_dir)
        rest = [f.stem for f in files] + ["--npm-dir", str(npm_dir)]
        rest += ["--keep"] if a.keep else []
        rest += ["--clawviz-src", str(a.clawviz_src)] if a.clawviz_src else []
        try:
            return run_offline("tests.harness.record_codex", rest)
        finally:
            if a.npm_dir is None:
                shutil.rmtree(npm_dir, ignore_errors=True)
    for f in files:
        print(f"recorded {record(f, a.npm_dir, a.keep, a.clawviz_src)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
