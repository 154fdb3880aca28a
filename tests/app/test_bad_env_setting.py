"""A bad CLAWVIZ_<NAME> variable (nan, -5, text) is one clear error in the app, as it is one
error line in the CLI (tests/hostile/test_numeric_settings.py): never a silent fallback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from apphelpers import no_exception, open_page

import clawviz.settings as settings_table


def test_the_app_names_the_bad_variable_and_opens_on_the_defaults(monkeypatch, on_store, tmp_path):
    # The error the settings table makes of CLAWVIZ_DIAGNOSE_TIMEOUT_S=nan, from a fresh process
    # (the table reads the environment once, at import).
    out = subprocess.run(
        [sys.executable, "-c", "import clawviz.settings as s; print(s.ENV_ERROR)"],
        env={"CLAWVIZ_DIAGNOSE_TIMEOUT_S": "nan", "PATH": "/usr/bin:/bin"},
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert "CLAWVIZ_DIAGNOSE_TIMEOUT_S" in out
    monkeypatch.setattr(settings_table, "ENV_ERROR", out)
    on_store(f"sqlite:///{tmp_path / 'store.db'}")
    at = open_page()
    no_exception(at)
    errors = [e.value for e in at.sidebar.error]
    assert any("CLAWVIZ_DIAGNOSE_TIMEOUT_S" in e and "default" in e for e in errors), errors


def test_no_error_when_the_environment_is_good(on_store, tmp_path):
    on_store(f"sqlite:///{tmp_path / 'store.db'}")
    at = open_page()
    no_exception(at)
    assert not at.sidebar.error
