"""Hostile round 3, checker output: floods and odd bytes the last round did not try (stderr
floods, a 50 MB line with no newline, NUL and invalid UTF-8, carriage returns, both streams at
once, scores so large their mean overflows). Expected values come from the scripts below."""

from __future__ import annotations

import math
import textwrap
import uuid
from pathlib import Path

import pytest

from clawviz.review.checker import _interpret
from clawviz.settings import DEFAULT_SETTINGS
from tests.sandbox_support import needs_sandbox

MB = 1 << 20


def _task(tmp_path: Path, body: str) -> Path:
    folder = tmp_path / f"task_{uuid.uuid4().hex[:6]}"
    (folder / "reward").mkdir(parents=True)
    (folder / "reward" / "check.py").write_text(textwrap.dedent(body))
    return folder


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


@needs_sandbox()
def test_floods_on_both_streams_a_long_line_and_odd_bytes(tmp_path, ws):
    from clawviz.review.checker import run_checker

    body = """
    import json, os, sys, threading
    def flood_err():
        block = b"e" * (1 << 20)
        for _ in range(200):
            os.write(2, block)
    t = threading.Thread(target=flood_err)
    t.start()
    out = sys.stdout.buffer
    out.write(b"x" * (50 << 20))           # one 50 MB line, no newline yet
    out.write(b"\\x00\\xff\\xfe\\x1b[2J\\r")  # NUL, invalid UTF-8, an escape, a bare CR
    out.write(json.dumps({"after_the_flood": 1.0, "ok": True}).encode() + b"\\r\\n")
    out.flush()
    t.join()
    """
    res = run_checker(_task(tmp_path, body), ws, timeout_s=60)
    assert res.status == "ok", res.message
    assert res.scores == {"after_the_flood": 1.0, "ok": 1.0}
    cap = DEFAULT_SETTINGS.checker_max_output_bytes
    for text in (res.stdout, res.stderr):
        assert "bytes of output cut" in text
        assert len(text.encode()) < cap + 64 * 1024 + 4096


def test_scores_whose_sum_overflows_still_average_to_a_finite_reward():
    res = _interpret(0, '{"a": 1e308, "b": 1e308, "c": 1e308}\n', "", 0.1)
    assert res.status == "ok"
    assert res.reward is not None and math.isfinite(res.reward)
    assert res.reward == pytest.approx(1e308)


def test_a_score_value_that_overflows_json_is_no_score():
    # 1e999 reads as inf: not a finite number, so the line is not in the score format.
    assert _interpret(0, '{"a": 1e999}\n', "", 0.1).status == "bad_output"
    assert _interpret(0, '{"a": -Infinity}\n', "", 0.1).status == "bad_output"
