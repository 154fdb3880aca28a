"""The log commands (`ingest`, `episodes`, `explain`, `search`) import neither pandas, plotly,
streamlit nor networkx; the review choices the parser offers are the sign-off module's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_formats_fixtures import SESSION, claude_code_episode, jsonl

from clawviz.cli import tasks as cli_tasks
from clawviz.review import signoff

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "plotly", "streamlit", "networkx", "numpy")


def _modules_after(argv: list[str], heavy: tuple[str, ...] = HEAVY) -> dict:
    code = (
        "import json, sys, contextlib, io\n"
        "from clawviz.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main({argv!r})\n"
        f"print(json.dumps({{'rc': rc, 'heavy': [m for m in {heavy!r} if m in sys.modules]}}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ingest_episodes_and_explain_import_no_dataframe_chart_or_ui_library(tmp_path):
    log = tmp_path / "cc.jsonl"
    log.write_text(jsonl(claude_code_episode()))
    db = ["--db", f"sqlite:///{tmp_path / 'lean.db'}"]
    assert _modules_after([*db, "ingest", str(log)]) == {"rc": 0, "heavy": []}
    assert _modules_after([*db, "episodes"]) == {"rc": 0, "heavy": []}
    assert _modules_after([*db, "explain", SESSION]) == {"rc": 0, "heavy": []}
    assert _modules_after([*db, "--json", "explain", SESSION]) == {"rc": 0, "heavy": []}
    assert _modules_after([*db, "search", "the"]) == {"rc": 0, "heavy": []}


def test_episodes_reads_current_decisions_without_the_orm(tmp_path):
    log = tmp_path / "cc.jsonl"
    log.write_text(jsonl(claude_code_episode()))
    db = ["--db", f"sqlite:///{tmp_path / 'lean.db'}"]
    # A new store is stamped, and checked, without Alembic (imported by `migrate` only).
    assert _modules_after([*db, "ingest", str(log)], (*HEAVY, "alembic")) == {"rc": 0, "heavy": []}
    assert _modules_after([*db, "ingest", str(log)], (*HEAVY, "alembic")) == {"rc": 0, "heavy": []}
    # Ingest made the decisions: listing them reads the SQLite file without the ORM.
    orm = ("sqlalchemy", "sqlmodel", "pydantic")
    assert _modules_after([*db, "episodes"], orm) == {"rc": 0, "heavy": []}


def test_importing_the_command_line_loads_no_store_or_pipeline():
    code = (
        "import sys\nimport clawviz.cli.main\n"
        "print([m for m in ('sqlalchemy', 'sqlmodel', 'clawviz.recon.tree', 'orjson')"
        " if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_review_choices_are_the_signoff_decisions():
    assert cli_tasks.DECISIONS == signoff.DECISIONS


def test_export_formats_are_the_exporters():
    from clawviz.cli.export import FORMATS as CLI_FORMATS
    from clawviz.export import FORMATS

    assert CLI_FORMATS == tuple(FORMATS)
