"""Project-level promises: the core pulls in no Streamlit at runtime (tests/app/test_layering.py
checks the source); README agrees with the settings and CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from clawviz.settings import SETTINGS, readme_table

ROOT = Path(__file__).resolve().parents[1]


def test_core_imports_no_streamlit_at_runtime():
    # Importing every core module must not pull Streamlit in transitively.
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "clawviz").rglob("*.py")
        if p.relative_to(ROOT / "clawviz").parts[0] not in ("ui", "samples")
        and p.name != "__main__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m.removesuffix('.__init__'))\n"
        "print('streamlit' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_readme_lists_every_setting_with_its_default():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_table() in readme, "README settings table is stale: paste readme_table()"
    for s in SETTINGS:
        row = re.search(rf"^\| `{s.name}` \| `([^`]*)` \|", readme, re.M)
        assert row, f"README settings table lacks {s.name}"
        if s.name != "database_url":
            assert row.group(1) == repr(s.default), s.name


def test_readme_has_exactly_two_setup_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", setup, re.S)
    assert len(blocks) == 2 and all(len(b.strip().splitlines()) == 1 for b in blocks)
    assert "streamlit run app.py" in blocks[0] and "pytest" in blocks[1]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set up", 1)[1]
    test_cmd = re.findall(r"```bash\n(.*?)```", setup, re.S)[1].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_cmd in ci
