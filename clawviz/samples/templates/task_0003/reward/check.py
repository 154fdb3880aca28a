"""Checker for task_0003: python3 check.py [WORKSPACE] (default: the current directory).

Prints a JSON object of 6 named sub-scores, each 0.0 or 1.0.
"""

import importlib.util
import json
import re
import sys
from pathlib import Path

# The hidden copy of the public tests the agent must leave unchanged.
REFERENCE_TESTS = Path(__file__).with_name("run_tests.reference")
EXPECTED_RESTOCK = ["SKU-100", "SKU-102", "SKU-103", "SKU-105"]


def _load(ws):
    spec = importlib.util.spec_from_file_location(
        "inventory_under_test", ws / "src" / "inventory.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ok(fn):
    try:
        return bool(fn())
    except Exception:  # a crash in the candidate's code scores 0 for that check
        return False


def check(ws):
    scores = {
        "module_imports": 0.0,
        "restock_inclusive": 0.0,
        "parse_handles_whitespace": 0.0,
        "tests_untouched": 0.0,
        "restock_report": 0.0,
        "changelog_entry": 0.0,
    }
    try:
        inv = _load(ws)
        scores["module_imports"] = 1.0
    except Exception:  # any import error means the module is broken
        inv = None
    if inv is not None:
        scores["restock_inclusive"] = float(
            _ok(lambda: inv.needs_restock(6, 6) and not inv.needs_restock(7, 6))
        )
        scores["parse_handles_whitespace"] = float(
            _ok(lambda: inv.parse_line(" SKU-9 , 3 , 4 ") == ("SKU-9", 3, 4))
            and _ok(lambda: inv.restock_list(["", "SKU-1,1,5", "   "]) == ["SKU-1"])
        )
    tests = ws / "tests" / "run_tests.py"
    if tests.exists():
        scores["tests_untouched"] = float(tests.read_bytes() == REFERENCE_TESTS.read_bytes())
    report = ws / "reports" / "restock.txt"
    if report.exists():
        got = [ln.strip() for ln in report.read_text().splitlines() if ln.strip()]
        scores["restock_report"] = float(got == EXPECTED_RESTOCK)
    changelog = ws / "CHANGELOG.md"
    if changelog.exists():
        text = changelog.read_text()
        m = re.search(r"^## Unreleased[ \t]*\n(.*?)(?=^## |\Z)", text, re.S | re.M)
        scores["changelog_entry"] = float(bool(m and re.search(r"^- \S", m.group(1), re.M)))
    return scores


if __name__ == "__main__":
    workspace = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    print(json.dumps(check(workspace), sort_keys=True))
