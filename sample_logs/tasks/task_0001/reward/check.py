"""Checker for task_0001: python3 check.py [WORKSPACE] (default: the current directory).

Prints a JSON object of 15 named sub-scores, each 0.0 or 1.0 (each worth 1/15 of the reward).
"""

import json
import re
import sys
from pathlib import Path

EXPECTED = {"todo": 2, "in_progress": 2, "done": 2, "blocked": 1}
CHECKS = (
    "stats_exists",
    "stats_valid_json",
    "stats_total",
    "stats_todo",
    "stats_in_progress",
    "stats_done",
    "stats_blocked",
    "test_log_exists",
    "test_log_passed",
    "report_exists",
    "report_updates_ordered",
    "report_blocked_nora",
    "report_next_steps",
    "announcement_exists",
    "announcement_under_120_words",
)


def _read_text(path):
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _section(text, title):
    """Body of the markdown section '## <title>' (up to the next '## ')."""
    m = re.search(r"^##\s+" + re.escape(title) + r"\s*$(.*?)(?=^##\s|\Z)", text, re.M | re.S | re.I)
    return m.group(1) if m else ""


def check(ws):
    scores = {name: 0.0 for name in CHECKS}
    build = ws / "build"

    stats_path = build / "stats.json"
    if stats_path.exists():
        scores["stats_exists"] = 1.0
        try:
            stats = json.loads(_read_text(stats_path) or "")
        except ValueError:
            stats = None
        if isinstance(stats, dict):
            scores["stats_valid_json"] = 1.0
            by_status = stats.get("by_status") or {}
            scores["stats_total"] = float(stats.get("total") == 7)
            for status, n in EXPECTED.items():
                scores[f"stats_{status}"] = float(by_status.get(status) == n)

    log = _read_text(build / "test_log.txt")
    if log is not None:
        scores["test_log_exists"] = 1.0
        scores["test_log_passed"] = float("passed" in log and "FAIL" not in log)

    report = _read_text(build / "weekly_report.md")
    if report is not None:
        scores["report_exists"] = 1.0
        updates = _section(report, "Recent updates")
        order = [int(m) for m in re.findall(r"^\s*[-*]?\s*Task (\d+)", updates, re.M)]
        scores["report_updates_ordered"] = float(order == [4, 3, 2])
        blocked = _section(report, "Blocked")
        scores["report_blocked_nora"] = float("5" in blocked and "Nora" in blocked)
        nxt = _section(report, "Next steps")
        scores["report_next_steps"] = float(
            all(s in nxt for s in ("Task 2", "Marco", "Task 4", "Sam")) and "Task 3" not in nxt
        )

    # Precondition kept from the original checker: without the file, the length score is 0 too.
    ann = _read_text(build / "announcement_rewrite.txt")
    if ann is not None:
        scores["announcement_exists"] = 1.0
        words = len(ann.split())
        keeps_facts = "April 18" in ann and "boat ramp" in ann
        scores["announcement_under_120_words"] = float(0 < words < 120 and keeps_facts)
    return scores


if __name__ == "__main__":
    workspace = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    print(json.dumps(check(workspace), sort_keys=True))
