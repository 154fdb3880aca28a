"""The pure core never imports Streamlit: only app.py, pages/ and clawviz/ui/ may."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_core_modules_do_not_import_streamlit():
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "clawviz").rglob("*.py")
        if "ui" not in p.relative_to(ROOT / "clawviz").parts[:1] and "streamlit" in _imports(p)
    ]
    assert offenders == []


def test_pure_ui_helpers_stay_pure():
    # The inspector helpers are unit-tested without a Streamlit runtime.
    assert "streamlit" not in _imports(ROOT / "clawviz" / "ui" / "inspector.py")
