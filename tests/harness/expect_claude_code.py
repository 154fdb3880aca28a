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

from pathlib import Path
from typing import Any

from .expect import FAIL_REASON, FAILED, Pass, write_main


def expected_for(folder: Path) -> dict[str, Any]:
    p = Pass.of(folder)
    steps = {s["name"]: s for s in p.scenario["steps"]}
    summary_expect = p.scenario.get("summary_expect", {})
    uses: dict[str, int] = {}
    failed_names: set[str] = set()
    for e in p.server:
        action, step = e["action"], e["step"]
        row = p.row(e)
        if action == "utility":
            p.utility(row, e)
        elif action == "summary":
            name = p.fresh("summary")
            row.update(
                name=name,
                role="aux_summary",
                state="auxiliary",
                reason="aux_summary",
                parent=p.tip,
                link=p.tip,
                thread=name,
            )
            row.update(summary_expect.get(name, {}))
            p.last_summary, p.tip = name, None
            p.segment += 1
            p.segments.append([])
        elif step is not None:
            override = steps[step].get("expect", {})
            prev = p.attempts.setdefault(step, [])
            failed = action in FAILED
            name = p.attempt_name(step, action, prev)
            if name is None:
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
                p.calls.append(row)
                continue
            p.main(row, name, action, prev[-1] if prev and prev[-1] in failed_names else None)
            prev.append(name)
            if failed:
                failed_names.add(name)
            row.update(override)
            p.answered(name, failed)
        else:
            raise p.no_rule(e)
        p.calls.append(row)
    return p.result("expect_claude_code.py")


def main(argv: list[str] | None = None) -> int:
    return write_main(expected_for, argv)


if __name__ == "__main__":
    raise SystemExit(main())
