"""Write a recording's expected.json from its scenario and the scripted server's own log.

    python3 -m tests.harness.expect tests/data/recorded/pi-0.73.1/retry-5xx

Nothing here reads clawviz: the server log (`server.jsonl`) says what each request got (which
step, which attempt, ok / tool / 500 / 529 / 429 / overflow / summary / utility); the exchange
log is only used to find each request's line (every answer carries `x-scripted-request: <i>`,
its server log index; an exchange without an answer is paired by request order).

Rules (one main thread, as pi and Codex `exec` run; a step may override any field with
`"expect": {...}` in the scenario, e.g. a sub-agent's role, thread and link):
- a failed attempt (500/529/429/overflow/cut/stream error) is `main / failed`, parent = the
  main tip, `retry_of` = the step's previous attempt; it is named `<step>-fail<k>`
  (`<step>-overflow` for an overflow);
- an answered step is `main / kept` under the tip, `retry_of` its last failed attempt; a main
  call right after a summary starts the next segment (no parent) and links to that summary;
- a summary request is `aux_summary`, linked to the main tip it summarised; it ends the segment.
  Codex sends its compaction request as the whole history plus the compaction prompt, so there
  it is also the tip's child (parent = link = tip); pi sends a fresh `<conversation>` request
  (no parent);
- a utility call is `aux_utility`; /models and count_tokens are `aux_non_model`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# Harnesses whose summary request extends the main tip's history (FORMATS §3).
SUMMARY_EXTENDS_TIP = {"codex": True, "pi": False}
FAILED = {"500", "529", "429", "overflow", "cut", "stream_error", "hang"}
FAIL_REASON = {
    "cut": "truncated_stream",
    "stream_error": "truncated_stream",
    "hang": "orphaned_request",  # the client gave up before any answer: no response logged
}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def line_of_entries(exchanges: list[dict], server: list[dict]) -> dict[int, int]:
    """server log index -> exchange line (1-based)."""
    out: dict[int, int] = {}
    unpaired: list[tuple[float, int]] = []
    for n, ex in enumerate(exchanges, 1):
        resp = ex.get("response") or {}
        hs = {k.lower(): v for k, v in (resp.get("headers") or {}).items()}
        if "x-scripted-request" in hs:
            out[int(hs["x-scripted-request"])] = n
        else:
            unpaired.append((ex["request"]["timestamp"], n))
    rest = [e["i"] for e in server if e["i"] not in out]
    for i, (_, n) in zip(rest, sorted(unpaired), strict=False):
        out[i] = n
    return out


def expected_for(folder: Path) -> dict[str, Any]:
    scenario = json.loads((folder / "scenario.json").read_text())
    server = _jsonl(folder / "server.jsonl")
    exchanges = _jsonl(folder / "exchanges.jsonl")
    overrides = {s["name"]: s.get("expect", {}) for s in scenario["steps"]}
    line_of = line_of_entries(exchanges, server)
    harness = folder.parent.name.split("-")[0]
    extends = SUMMARY_EXTENDS_TIP[harness]
    calls: list[dict[str, Any]] = []
    tip: str | None = None
    segment = 0
    segments: list[list[str]] = [[]]
    last_summary: str | None = None
    summarised: str | None = None
    attempts: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    last_main_failed = False

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
            # Summaries with no main call between them belong to one compaction (pi's split
            # turn sends a history summary and a turn-prefix summary at once): same tip, one
            # new segment, and the continuation links to the last of them.
            if tip is not None:
                summarised = tip
                segment += 1
                segments.append([])
            row.update(
                name=name,
                role="aux_summary",
                state="auxiliary",
                reason="aux_summary",
                link=summarised,
                parent=summarised if extends else None,
                thread=name,
            )
            last_summary, tip = name, None
        elif step is not None:
            prev = attempts.setdefault(step, [])
            failed = action in FAILED
            if failed:
                name = f"{step}-overflow" if action == "overflow" else f"{step}-fail{len(prev) + 1}"
            else:
                name = step
            row.update(
                name=name,
                role="main",
                state="failed" if failed else "kept",
                reason=FAIL_REASON.get(action, "failed_http") if failed else None,
                segment=segment,
                parent=tip,
                retry_of=prev[-1] if prev else None,
                thread="main",
            )
            if tip is None and last_summary is not None:
                row["link"] = last_summary
            prev.append(name)
            row.update(overrides.get(step, {}))
            if row["role"] == "main":
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
        "written_from": "scenario.json + server.jsonl (tests/harness/expect.py)",
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
