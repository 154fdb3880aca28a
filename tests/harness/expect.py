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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .recorded import line_of_entries, read_exchanges, read_server

# Harnesses whose summary request extends the main tip's history (FORMATS §3).
SUMMARY_EXTENDS_TIP = {"codex": True, "pi": False}
FAILED = {"500", "529", "429", "overflow", "cut", "stream_error", "hang"}
FAIL_REASON = {
    "cut": "truncated_stream",
    "stream_error": "truncated_stream",
    "hang": "orphaned_request",  # the client gave up before any answer: no response logged
}


@dataclass
class Pass:
    """One walk over a recording's server log, in order: what both writers keep track of."""

    folder: Path
    scenario: dict[str, Any]
    server: list[dict[str, Any]]
    exchanges: list[dict[str, Any]]
    line_of: dict[int, int]
    calls: list[dict[str, Any]] = field(default_factory=list)
    tip: str | None = None
    """The main thread's last answered call."""
    segment: int = 0
    segments: list[list[str]] = field(default_factory=lambda: [[]])
    last_summary: str | None = None
    attempts: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    last_main_failed: bool = False

    @classmethod
    def of(cls, folder: Path) -> Pass:
        server = read_server(folder)
        exchanges = read_exchanges(folder)
        return cls(
            folder=folder,
            scenario=json.loads((folder / "scenario.json").read_text()),
            server=server,
            exchanges=exchanges,
            line_of=line_of_entries(exchanges, server),
        )

    def fresh(self, prefix: str) -> str:
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        return f"{prefix}-{self.counts[prefix]}"

    def row(self, e: dict[str, Any]) -> dict[str, Any]:
        return {
            "line": self.line_of.get(e["i"]),
            "server_i": e["i"],
            "segment": None,
            "parent": None,
            "link": None,
            "retry_of": None,
        }

    def utility(self, row: dict[str, Any], e: dict[str, Any]) -> None:
        """A utility answer: `aux_utility`, or `aux_non_model` for /models and count_tokens."""
        non_model = e["protocol"] in ("models", "count_tokens")
        name = self.fresh(e["protocol"] if non_model else "utility")
        role = "aux_non_model" if non_model else "aux_utility"
        row.update(name=name, role=role, state="auxiliary", reason=role, thread=name)

    def attempt_name(self, step: str, action: str, prev: list[str]) -> str | None:
        """`<step>-fail<k>` / `<step>-overflow` for a failed attempt, None for an answered one."""
        if action not in FAILED:
            return None
        return f"{step}-overflow" if action == "overflow" else f"{step}-fail{len(prev) + 1}"

    def main(self, row: dict[str, Any], name: str, action: str, retry_of: str | None) -> None:
        """A main-thread call under the tip; the first after a summary links to it."""
        failed = action in FAILED
        row.update(
            name=name,
            role="main",
            state="failed" if failed else "kept",
            reason=FAIL_REASON.get(action, "failed_http") if failed else None,
            segment=self.segment,
            parent=self.tip,
            retry_of=retry_of,
            thread="main",
        )
        if self.tip is None and self.last_summary is not None:
            row["link"] = self.last_summary

    def answered(self, name: str, failed: bool) -> None:
        """A main call is done: it ends the episode failed or becomes the tip."""
        self.last_main_failed = failed
        if not failed:
            self.tip = name
            self.segments[self.segment].append(name)

    def no_rule(self, e: dict[str, Any]) -> ValueError:
        return ValueError(
            f"{self.folder}: server line {e['i']}: action {e['action']!r} has no rule"
        )

    def result(self, writer: str) -> dict[str, Any]:
        missing = [c["name"] for c in self.calls if c["line"] is None]
        if missing:
            raise ValueError(f"{self.folder}: no exchange line for {missing}")
        if len(self.calls) != len(self.exchanges):
            raise ValueError(
                f"{self.folder}: {len(self.exchanges)} exchanges but {len(self.calls)} server lines"
            )
        reasons = ["ended_in_error"] if self.last_main_failed else []
        self.calls.sort(key=lambda c: c["line"])
        return {
            "scenario": self.scenario["name"],
            "written_from": f"scenario.json + server.jsonl (tests/harness/{writer})",
            "episode": {
                "status": "dropped" if reasons else "kept",
                "reasons": reasons,
                "kept_paths": [s for s in self.segments if s],
            },
            "calls": self.calls,
        }


def expected_for(folder: Path) -> dict[str, Any]:
    p = Pass.of(folder)
    overrides = {s["name"]: s.get("expect", {}) for s in p.scenario["steps"]}
    extends = SUMMARY_EXTENDS_TIP[folder.parent.name.split("-")[0]]
    summarised: str | None = None
    for e in p.server:
        action, step = e["action"], e["step"]
        row = p.row(e)
        if action == "utility":
            p.utility(row, e)
        elif action == "summary":
            name = p.fresh("summary")
            # Summaries with no main call between them belong to one compaction (pi's split
            # turn sends a history summary and a turn-prefix summary at once): same tip, one
            # new segment, and the continuation links to the last of them.
            if p.tip is not None:
                summarised = p.tip
                p.segment += 1
                p.segments.append([])
            row.update(
                name=name,
                role="aux_summary",
                state="auxiliary",
                reason="aux_summary",
                link=summarised,
                parent=summarised if extends else None,
                thread=name,
            )
            p.last_summary, p.tip = name, None
        elif step is not None:
            prev = p.attempts.setdefault(step, [])
            name = p.attempt_name(step, action, prev) or step
            p.main(row, name, action, prev[-1] if prev else None)
            prev.append(name)
            row.update(overrides.get(step, {}))
            if row["role"] == "main":
                p.answered(name, action in FAILED)
        else:
            raise p.no_rule(e)
        p.calls.append(row)
    return p.result("expect.py")


def write_main(expected_for: Callable[[Path], dict[str, Any]], argv: list[str] | None) -> int:
    """`python3 -m tests.harness.expect[_claude_code] FOLDER...`: write each expected.json."""
    for arg in argv if argv is not None else sys.argv[1:]:
        folder = Path(arg)
        (folder / "expected.json").write_text(json.dumps(expected_for(folder), indent=1) + "\n")
        print(f"wrote {folder / 'expected.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return write_main(expected_for, argv)


if __name__ == "__main__":
    raise SystemExit(main())
