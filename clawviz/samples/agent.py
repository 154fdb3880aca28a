"""What the simulated agent does in a task: harness-neutral actions, run for real on a workspace.

A plan is a list of `AgentTurn`s. Each action is executed on a real copy of the task's input
files while the episode is generated, so tool results, the after-workspace and the checker's
scores all agree (nothing about a result is made up after the fact).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

Mistakes = frozenset[str]


@dataclass(frozen=True)
class Action:
    """One tool use: kind is read | list | exec | write | edit."""

    kind: str
    path: str = ""
    command: str = ""
    content: str = ""
    old: str = ""
    new: str = ""


@dataclass
class AgentTurn:
    """One assistant message: optional thinking, text, and the actions it calls (none = final)."""

    text: str
    actions: list[Action] = field(default_factory=list)
    thinking: str = ""


@dataclass
class ActionResult:
    """What a tool returned."""

    output: str
    is_error: bool = False


def run_action(ws: Path, action: Action) -> ActionResult:
    """Execute `action` in workspace `ws` and return what the tool would print."""
    if action.kind == "read":
        p = ws / action.path
        if not p.is_file():
            return ActionResult(f"ENOENT: no such file or directory, open '{action.path}'", True)
        return ActionResult(p.read_text())
    if action.kind == "list":
        files = sorted(str(p.relative_to(ws)) for p in ws.rglob("*") if p.is_file())
        return ActionResult("\n".join(files))
    if action.kind == "write":
        p = ws / action.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(action.content)
        return ActionResult(f"Wrote {len(action.content.encode())} bytes to {action.path}")
    if action.kind == "edit":
        p = ws / action.path
        text = p.read_text() if p.is_file() else ""
        if action.old not in text:
            return ActionResult(f"Edit failed: old text not found in {action.path}", True)
        p.write_text(text.replace(action.old, action.new, 1))
        return ActionResult(f"Edited {action.path}")
    if action.kind == "exec":
        return _run_command(ws, action.command)
    raise ValueError(f"unknown action kind {action.kind!r}")


def _run_command(ws: Path, command: str) -> ActionResult:
    """Run a `python3 ...` or `wc -w FILE` command, optionally `| tee FILE`, in `ws`."""
    tee = None
    if " | tee " in command:
        command, tee = (s.strip() for s in command.split(" | tee ", 1))
    argv = shlex.split(command)
    if argv[:2] == ["wc", "-w"]:
        p = ws / argv[2]
        if not p.is_file():
            return ActionResult(f"wc: {argv[2]}: No such file or directory", True)
        out, code = f"{len(p.read_text().split())} {argv[2]}\n", 0
    elif argv[0] == "python3":
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONHASHSEED": "0"}
        # -S: fast start-up; no_debug_ranges: tracebacks read the same on every Python 3.11+.
        proc = subprocess.run(
            [sys.executable, "-B", "-E", "-s", "-S", "-X", "no_debug_ranges", *argv[1:]],
            cwd=ws,
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        out, code = proc.stdout + proc.stderr, proc.returncode
        out = out.replace(str(ws), "/workspace")
    else:
        raise ValueError(f"the sample agent cannot run {command!r}")
    if tee:
        (ws / tee).parent.mkdir(parents=True, exist_ok=True)
        (ws / tee).write_text(out)
    if code:
        out += f"\n[exit code {code}]"
    return ActionResult(out, bool(code))


def _t(text: str, *actions: Action, thinking: str = "") -> AgentTurn:
    return AgentTurn(text, list(actions), thinking)


def plan_task_0001(m: Mistakes) -> list[AgentTurn]:
    """The volunteer-remediation task; `m` names what this attempt gets wrong."""
    turns = [
        _t(
            "I'll start by looking at the task data.",
            Action("read", "data/tasks.csv"),
            Action("read", "data/updates.jsonl"),
            thinking="Four deliverables under build/. First read the CSV and the updates.",
        ),
        _t("Now the announcement I have to rewrite.", Action("read", "data/announcement.txt")),
    ]
    if "hand_stats" in m:
        stats = {"total": 7, "by_status": {"todo": 1, "in_progress": 3, "done": 2, "blocked": 1}}
        turns.append(
            _t(
                "I'll write the statistics directly.",
                Action("write", "build/stats.json", content=json.dumps(stats, indent=2) + "\n"),
            )
        )
    else:
        turns.append(
            _t(
                "Running the summary tool to produce build/stats.json.",
                Action(
                    "exec",
                    command="python3 tools/summarize.py data/tasks.csv --out build/stats.json",
                ),
                thinking="The tool writes the file itself with --out.",
            )
        )
    if "no_test_log" not in m:
        turns.append(
            _t(
                "Running the public tests and saving the log.",
                Action("exec", command="python3 tests/test_summarize.py | tee build/test_log.txt"),
            )
        )
    if "stop_after_tests" in m:
        return turns
    order = [2, 4, 3] if "updates_unordered" in m else [4, 3, 2]
    notes = {
        4: ("2026-04-15 09:15", "Sam", "9 of 15 crew slots filled; need a second shift lead."),
        3: ("2026-04-14 18:20", "Lena", "Letter draft shared with the legal volunteer for review."),
        2: (
            "2026-04-14 10:05",
            "Marco",
            "Quote received for 12 kits; waiting for budget sign-off.",
        ),
    }
    lines = ["# Weekly report: Willow Creek remediation", "", "## Recent updates"]
    lines += [f"- Task {i} ({notes[i][0]}, {notes[i][1]}): {notes[i][2]}" for i in order]
    if "no_blocked" not in m:
        lines += [
            "",
            "## Blocked",
            "- Task 5 Secure dumpster permit (Nora): waiting on the county.",
        ]
    if "no_next_steps" not in m:
        lines += [
            "",
            "## Next steps",
            "- Task 2 (Marco): get budget sign-off and order the kits.",
            "- Task 4 (Sam): find a second shift lead for Saturday.",
        ]
    turns.append(
        _t(
            "Writing the weekly report.",
            Action("write", "build/weekly_report.md", content="\n".join(lines) + "\n"),
        )
    )
    if "no_announcement" not in m:
        if "long_announcement" in m:
            body = Path(__file__).parent / "templates/task_0001/input_files/data/announcement.txt"
            text = body.read_text().replace("ANNOUNCEMENT FROM THE", "UPDATE FROM THE")
        else:
            text = (
                "Spring shoreline cleanup: Saturday, April 18, 9:00 at the Willow Creek "
                "boat ramp.\n\n"
                "We provide gloves, grabbers, bags and safety vests. Wear sturdy closed shoes and "
                "clothes that can get muddy, and bring water and sun protection. Children are "
                "welcome with an adult, and the Elm Street bakery brings snacks.\n\n"
                "Want to lead a group or have a question? Reply here or talk to Sam, who "
                "coordinates the crews.\n\nThank you for helping keep Willow Creek clean!\n"
            )
        turns.append(
            _t(
                "Now the shorter announcement.",
                Action("write", "build/announcement_rewrite.txt", content=text),
            )
        )
        turns.append(
            _t(
                "Checking the word count.",
                Action("exec", command="wc -w build/announcement_rewrite.txt"),
            )
        )
    turns.append(
        _t(
            "Done. build/ now holds stats.json, test_log.txt, weekly_report.md and "
            "announcement_rewrite.txt; task 5 (Nora) is the only blocked item."
        )
    )
    return turns


def plan_task_0002(m: Mistakes) -> list[AgentTurn]:
    """The sales-summary task."""
    rev = {"north": 0.0, "south": 0.0, "east": 0.0, "west": 0.0}
    prod: dict[str, float] = {}
    rows = [
        ("north", "kayak paddle", 4, 89.50),
        ("south", "dry bag", 12, 24.00),
        ("north", "dry bag", 7, 24.00),
        ("east", "life vest", 5, 64.90),
        ("west", "kayak paddle", 2, 89.50),
        ("south", "life vest", 3, 64.90),
        ("east", "dry bag", 9, 24.00),
        ("west", "water filter", 6, 39.95),
        ("north", "water filter", 3, 39.95),
        ("south", "kayak paddle", 1, 89.50),
    ]
    for region, product, units, price in rows:
        if "skip_last_row" in m and (region, product, units) == ("south", "kayak paddle", 1):
            continue
        rev[region] += units * price
        prod[product] = prod.get(product, 0.0) + units * price
    by_region = {k: round(v, 2) for k, v in rev.items()}
    top = max(prod, key=lambda k: prod[k])
    if "wrong_top" in m:
        top = "kayak paddle"
    summary = {
        "total_revenue": round(sum(rev.values()), 2),
        "revenue_by_region": by_region,
        "top_product": top,
    }
    table = ["| region | revenue |", "|---|---|"]
    table += [f"| {k} | {v:.2f} |" for k, v in by_region.items()]
    report = "# Weekly sales\n\n" + "\n".join(table) + f"\n\nTop product: {top}.\n"
    check = (
        "python3 -c \"import json; s = json.load(open('output/summary.json')); "
        "print(s['total_revenue'], s['top_product'], sorted(s['revenue_by_region']))\""
    )
    turns = [
        _t("Let me see what is in the workspace.", Action("list")),
        _t("Reading the sales data.", Action("read", "data/sales.csv")),
        _t(
            "Writing the summary.",
            Action("write", "output/summary.json", content=json.dumps(summary, indent=2) + "\n"),
            thinking="Revenue = units * unit_price; group by region and by product.",
        ),
    ]
    if "no_report" not in m:
        turns.append(_t("And the report.", Action("write", "output/report.md", content=report)))
    turns.append(_t("Checking that the summary parses.", Action("exec", command=check)))
    turns.append(_t(f"Done: total revenue {summary['total_revenue']:.2f}, top product {top}."))
    return turns


def plan_task_0003(m: Mistakes) -> list[AgentTurn]:
    """The inventory bug-fix task."""
    turns = [
        _t("Looking at the code and the tests.", Action("read", "src/inventory.py")),
        _t("", Action("read", "tests/run_tests.py"), Action("read", "data/stock.txt")),
        _t(
            "Running the tests to see the failures.",
            Action("exec", command="python3 tests/run_tests.py"),
        ),
    ]
    if "no_inclusive_fix" not in m:
        turns.append(
            _t(
                "Fixing the threshold comparison.",
                Action(
                    "edit",
                    "src/inventory.py",
                    old="return qty < threshold",
                    new="return qty <= threshold",
                ),
                thinking="qty == threshold must restock, so < becomes <=.",
            )
        )
    if "no_parse_fix" not in m:
        turns.append(
            _t(
                "Making the parser tolerate spaces and blank lines.",
                Action(
                    "edit",
                    "src/inventory.py",
                    old='    sku, qty, threshold = line.split(",")\n'
                    "    return sku, int(qty), int(threshold)",
                    new='    sku, qty, threshold = (part.strip() for part in line.split(","))\n'
                    "    return sku, int(qty), int(threshold)",
                ),
                Action(
                    "edit",
                    "src/inventory.py",
                    old="    for line in lines:\n",
                    new="    for line in lines:\n"
                    "        if not line.strip():\n            continue\n",
                ),
            )
        )
    if "edit_tests" in m:
        turns.append(
            _t(
                "The whitespace test looks too strict; relaxing it.",
                Action(
                    "edit",
                    "tests/run_tests.py",
                    old='inventory.parse_line(" SKU-102 , 10 , 10")',
                    new='inventory.parse_line("SKU-102,10,10")',
                ),
            )
        )
    turns.append(_t("Re-running the tests.", Action("exec", command="python3 tests/run_tests.py")))
    if "no_report" not in m:
        turns.append(
            _t(
                "Producing the restock report.",
                Action(
                    "exec",
                    command="python3 src/inventory.py data/stock.txt | tee reports/restock.txt",
                ),
            )
        )
    if "no_changelog" not in m:
        turns.append(
            _t(
                "Adding the changelog entry.",
                Action(
                    "edit",
                    "CHANGELOG.md",
                    old="## Unreleased\n",
                    new="## Unreleased\n- Restock items whose quantity equals the threshold; "
                    "ignore blank lines and spaces in stock files.\n",
                ),
            )
        )
    turns.append(_t("The fixes are in place; reports/restock.txt lists the SKUs to restock."))
    return turns


PLANS = {"task_0001": plan_task_0001, "task_0002": plan_task_0002, "task_0003": plan_task_0003}
