"""Page scripts hold no bare string after their docstring: Streamlit's magic would print it on
the page (a constant's docstring showed up above the Runs title)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_bare_strings_in_page_scripts():
    found = []
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]:
        tree = ast.parse(path.read_text())
        for node in tree.body[1:]:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
