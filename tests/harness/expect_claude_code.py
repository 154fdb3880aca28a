"""Write a Claude Code recording's expected.json from its scenario and the scripted server's log.

    python3 -m tests.harness.expect_claude_code tests/data/recorded/claude-code-2.0.77/session

Nothing here reads clawviz. The server log (`server.jsonl`) says what each request got: which
step and attempt, or ok / tool / 500 / 529 / 429 / overflow / summary / utility; the exchange
log is only used to find each request's line (`x-scripted-request: <i>` on every answer).

What the scenario means, in Claude Code's terms (FORMATS §3, and what the recordings show):
- **utility** answers (the `Warmup` per sub-agent type at the start of every `claude -p` run,
  path extraction after a Bash run) are `aux_utility`, each its own thread, never a retry of
  anything (every run sends the same warm-ups again, and each is answered);
- a **failed attempt** of a main step (500/529/429/overflow/cut) is `main / failed`, parent =
  the main tip, named `<step>-fail<k>` (`<step>-overflow`), `retry_of` the previous attempt;
  the step's answered attempt is `retry_of` its last failed one;
- an answered **main** step is `main / kept` with parent = the main tip; the first main call
  after a summary starts the next segment, has no parent and links to that summary;
- a **summary** request (Claude Code re-sends the main history with the summary instruction
  appended) is `aux_summary`, parent and link = the main tip it summarised; it ends the segment;
- a step whose `expect` names another role (sub-agents) takes its fields from `expect`
  (role, thread, parent, link) and is auxiliary with no segment;
- a `repeat` step used several times names its uses `<step>`, `<step>-2`, ... (a use is the
  retry only of a failed attempt, never of an earlier answered use);
- `summary_expect` in the scenario, `{"summary-<k>": {...}}`, overrides a summary's fields where
  the recorded request shows Claude Code did not re-send the whole tip: 2.1 compacts only the
  head of the conversation (the request re-sends the history up to a call and keeps the rest
  verbatim after the summary), so that summary extends that call, not the tip.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .expect import FAIL_REASON, FAILED, _jsonl, line_of_entries


def expected_for(folder: Path) -> dict[str, Any]:
    scenario = json.loads((folder / "scenario.json").read_text())
    server = _jsonl(folder / "server.jsonl")
    exchanges = _jsonl(folder / "exchanges.jsonl")
    steps = {s["name"]: s for s in scenario["steps"]}
    summary_expect = scenario.get("summary_expect", {})
    line_of = line_of_entries(exchanges, server)
    calls: list[dict[str, Any]] = []
    tip: str | None = None
    segment = 0
    segments: list[list[str]] = [[]]
    last_summary: str | None = None
    attempts: dict[str, list[str]] = {}
    uses: dict[str, int] = {}
    counts: dict[str, int] = {}
    last_main_failed = False
    failed_names: set[str] = set()

    def fresh(prefix: str) -> str:
        counts[prefix] = counts.get(prefix, 0) + 1
        return f"{prefix}-{counts[prefix]}"

    for e in server:
        action, step = e["action"], e["step"]
        row: dict[str, Any] = {
            "line": line_of.get(e["i"]),
            "server_i": e["i"],
            "segment": None,
            "parent": None,
            "link": None,
            "retry_of": None,
        }
        if action == "utility":
            non_model = e["protocol"] in ("models", "count_tokens")
            name = fresh(e["protocol"] if non_model else "utility")
            role = "aux_non_model" if non_model else "aux_utility"
            row.update(name=name, role=role, state="auxiliary", reason=role, thread=name)
        elif action == "summary":
            name = fresh("summary")
            row.update(
                name=name,
                role="aux_summary",
                state="auxiliary",
                reason="aux_summary",
                parent=tip,
                link=tip,
                thread=name,
            )
            row.update(summary_expect.get(name, {}))
            last_summary, tip = name, None
            segment += 1
            segments.append([])
        elif step is not None:
            override = steps[step].get("expect", {})
            prev = attempts.setdefault(step, [])
            failed = action in FAILED
            if failed:
                name = f"{step}-overflow" if action == "overflow" else f"{step}-fail{len(prev) + 1}"
            else:
                uses[step] = uses.get(step, 0) + 1
                name = step if uses[step] == 1 else f"{step}-{uses[step]}"
            if override.get("role", "main") != "main":
                role = override["role"]
                row.update(
                    name=name,
                    role=role,
                    state="failed" if failed else "auxiliary",
                    reason=FAIL_REASON.get(action, "failed_http") if failed else role,
                    thread=name,
                )
                row.update(override)
                calls.append(row)
                continue
            row.update(
                name=name,
                role="main",
                state="failed" if failed else "kept",
                reason=FAIL_REASON.get(action, "failed_http") if failed else None,
                segment=segment,
                parent=tip,
                retry_of=prev[-1] if prev and prev[-1] in failed_names else None,
                thread="main",
            )
            if tip is None and last_summary is not None:
                row["link"] = last_summary
            prev.append(name)
            if failed:
                failed_names.add(name)
            row.update(override)
            last_main_failed = failed
            if not failed:
                tip = name
                segments[segment].append(name)
        else:
            raise ValueError(f"{folder}: server line {e['i']}: action {action!r} has no rule")
        calls.append(row)
    missing = [c["name"] for c in calls if c["line"] is None]
    if missing:
        raise ValueError(f"{folder}: no exchange line for {missing}")
    if len(calls) != len(exchanges):
        raise ValueError(f"{folder}: {len(exchanges)} exchanges but {len(calls)} server lines")
    reasons = ["ended_in_error"] if last_main_failed else []
    calls.sort(key=lambda c: c["line"])
    return {
        "scenario": scenario["name"],
        "written_from": "scenario.json + server.jsonl (tests/harness/expect_claude_code.py)",
        "episode": {
            "status": "dropped" if reasons else "kept",
            "reasons": reasons,
            "kept_paths": [s for s in segments if s],
        },
        "calls": calls,
    }


def main(argv: list[str] | None = None) -> int:
    for arg in argv if argv is not None else sys.argv[1:]:
        folder = Path(arg)
        (folder / "expected.json").write_text(json.dumps(expected_for(folder), indent=1) + "\n")
        print(f"wrote {folder / 'expected.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
