"""Public tests for tools/summarize.py (plain script: python3 tests/test_summarize.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))

from summarize import summarize  # noqa: E402


def test_counts():
    rows = [{"status": "todo"}, {"status": "done"}, {"status": "done"}]
    assert summarize(rows) == {
        "total": 3,
        "by_status": {"todo": 1, "in_progress": 0, "done": 2, "blocked": 0},
    }


def test_empty():
    assert summarize([])["total"] == 0


if __name__ == "__main__":
    tests = [test_counts, test_empty]
    failed = 0
    for t in tests:
        try:
            t()
            print(f"{t.__name__} ... ok")
        except AssertionError as e:
            failed += 1
            print(f"{t.__name__} ... FAIL {e}")
    print(f"{len(tests) - failed} passed, {failed} failed" if failed else f"{len(tests)} passed")
    sys.exit(1 if failed else 0)
