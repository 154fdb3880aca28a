"""Each stage's `__init__` names its API (`__all__`), every name resolves to what its module
defines, and importing a stage imports none of its modules until a name is used."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("ingest", "recon", "store", "export", "review", "figures", "jobs")


@pytest.mark.parametrize("stage", STAGES)
def test_every_public_name_resolves_to_its_module(stage: str) -> None:
    pkg = importlib.import_module(f"clawviz.{stage}")
    names = list(pkg.__all__)
    assert names and len(names) == len(set(names))
    assert set(names) == {n for ns in pkg._HOMES.values() for n in ns}
    for module, provided in pkg._HOMES.items():
        home = importlib.import_module(f"clawviz.{stage}.{module}")
        for name in provided:
            assert getattr(pkg, name) is getattr(home, name), f"clawviz.{stage}.{name}"
    assert set(names) <= set(dir(pkg))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = pkg.not_a_name


def test_a_stage_imports_its_modules_only_when_a_name_is_used() -> None:
    code = (
        "import sys\n"
        f"stages = {STAGES!r}\n"
        "for s in stages:\n"
        "    __import__('clawviz.' + s)\n"
        "inner = [m for m in sys.modules if m.count('.') >= 2]\n"
        "before = sorted(m for m in inner if m.split('.')[1] in stages)\n"
        "from clawviz.recon import match_key\n"
        "after = 'clawviz.recon.canonical' in sys.modules\n"
        "print(before, after)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[] True"
