"""Public tests for src/inventory.py (plain script: python3 tests/run_tests.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import inventory  # noqa: E402


def test_threshold_inclusive():
    assert inventory.needs_restock(6, 6), "qty == threshold must restock"


def test_below_threshold():
    assert inventory.needs_restock(4, 10)


def test_parse_spaces():
    assert inventory.parse_line(" SKU-102 , 10 , 10") == ("SKU-102", 10, 10)


def test_blank_lines_skipped():
    assert inventory.restock_list(["SKU-1,1,5", "", "  "]) == ["SKU-1"]


if __name__ == "__main__":
    tests = [
        test_threshold_inclusive,
        test_below_threshold,
        test_parse_spaces,
        test_blank_lines_skipped,
    ]
    failed = 0
    for t in tests:
        try:
            t()
            print(f"{t.__name__} ... ok")
        except Exception as e:  # report any failure in one line, no traceback
            failed += 1
            print(f"{t.__name__} ... FAIL {type(e).__name__}: {e}")
    print(f"{len(tests) - failed} passed, {failed} failed" if failed else f"{len(tests)} passed")
    sys.exit(1 if failed else 0)
