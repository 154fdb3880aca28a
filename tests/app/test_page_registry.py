"""Every page is registered, enters through `run_page`, and only `run_page` touches the frame."""

from __future__ import annotations

import ast
from pathlib import Path

from clawviz.ui import pages

ROOT = Path(__file__).resolve().parents[2]


def test_registry_and_pages_folder_agree():
    assert {p.stem for p in (ROOT / "pages").glob("*.py")} == set(pages.PAGES_BY_KEY)
    assert all(p.file.exists() for p in pages.PAGES)
    assert [p.key for p in pages.PAGES if p.default] == ["runs"]


def test_every_page_ends_with_run_page():
    for spec in pages.PAGES:
        tree = ast.parse(spec.file.read_text(encoding="utf-8"))
        last = tree.body[-1]
        assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call), spec.key
        assert ast.unparse(last.value) == "run_page(__file__, main)", spec.key
        # No other module-level statement renders anything before the frame check.
        top_calls = [n for n in tree.body[:-1] if isinstance(n, ast.Expr)]
        assert all(isinstance(n.value, ast.Constant) for n in top_calls), spec.key


def test_the_private_streamlit_flag_has_one_home_and_one_caller():
    users, callers = [], []
    for path in [
        ROOT / "app.py",
        *(ROOT / "pages").glob("*.py"),
        *(ROOT / "clawviz").rglob("*.py"),
    ]:
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        if "uses_pages_directory" in text:
            users.append(rel)
        if "require_app_frame()" in text.replace("def require_app_frame()", ""):
            callers.append(rel)
    assert users == ["clawviz/ui/frame.py"]
    assert callers == ["clawviz/ui/pages.py"]


def test_links_use_registered_files():
    from clawviz.ui import tasks_widgets as w

    assert {w.TASKS_PAGE, w.WORKSPACE_PAGE, w.EPISODE_PAGE} <= {p.file for p in pages.PAGES}
