"""Hostile round 3: NaN, infinities, zero, negatives and non-numbers given to numeric settings,
on the command line (`--set`) and through CLAWVIZ_* environment variables. Each is one `error:`
line naming the setting (and the variable), exit 1, never a traceback, and never a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clawviz.settings import SETTINGS_BY_NAME

REPO = Path(__file__).resolve().parents[2]
BAD = ["nan", "inf", "-inf", "-5", "0", "1e400", "", "12abc"]
NAMES = ["sandbox_workspace_max_bytes", "sandbox_tmp_max_files", "checker_timeout_s"]
# A float setting the environment may set (a decision setting comes only from the table).
ENV_FLOATS = ["diagnose_timeout_s"]


def _clawviz(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CLAWVIZ_")}
    return subprocess.run(
        [sys.executable, "-m", "clawviz", "settings", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**base, **(env or {})},
    )


def _refused(proc: subprocess.CompletedProcess, *names: str) -> None:
    assert proc.returncode == 1, proc.stdout[-300:] + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for name in names:
        assert name in lines[0]


@pytest.mark.parametrize("value", BAD)
def test_bad_numbers_in_the_environment_are_one_error_line(value):
    for name in [*NAMES, *ENV_FLOATS]:
        var = f"CLAWVIZ_{name.upper()}"
        _refused(_clawviz(env={var: value}), var, name)


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "0"])
def test_bad_numbers_on_the_command_line_are_one_error_line(value):
    for name in [*NAMES, *ENV_FLOATS]:
        _refused(_clawviz("--set", f"{name}={value}"), name)


def test_good_values_still_apply():
    proc = _clawviz("--json", env={"CLAWVIZ_SANDBOX_TMP_MAX_FILES": "123"})
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r["value"] for r in json.loads(proc.stdout)}
    assert rows["sandbox_tmp_max_files"] == 123
    assert SETTINGS_BY_NAME["diagnose_timeout_s"].kind == "float"
