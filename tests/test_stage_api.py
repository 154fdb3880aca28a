"""Each stage's `__init__` names its API (`__all__`), every name resolves to what its module
defines, and importing a stage imports none of its modules until a name is used."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("ingest", "recon", "store", "export", "review", "figures", "jobs")


@pytest.mark.parametrize("stage", STAGES)
def test_every_public_name_resolves_to_its_module(stage: str) -> None:
    pkg = importlib.import_module(f"clawviz.{stage}")
    names = list(pkg.__all__)
    renamed = getattr(pkg, "_RENAMED", {})
    assert names and len(names) == len(set(names))
    assert set(names) == {n for ns in pkg._HOMES.values() for n in ns} | set(renamed)
    for module, provided in pkg._HOMES.items():
        home = importlib.import_module(f"clawviz.{stage}.{module}")
        for name in provided:
            assert getattr(pkg, name) is getattr(home, name), f"clawviz.{stage}.{name}"
    for name, (module, attr) in renamed.items():
        home = importlib.import_module(f"clawviz.{stage}.{module}")
        assert getattr(pkg, name) is getattr(home, attr), f"clawviz.{stage}.{name}"
    folder = ROOT / "clawviz" / stage
    modules = {p.stem for p in folder.iterdir() if p.suffix == ".py" or p.is_dir()}
    assert not modules & set(names), "a public name that is also a module's is lost on import"
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


# Outside a stage, code imports the stage's names from the stage: by name
# (`from clawviz.store import session_scope`) or through the stage package
# (`from clawviz import store`, then `store.load_calls(...)`), never from one of its modules
# (docs/ARCHITECTURE.md, "Public surfaces"). None is left. An exception would be listed here
# with why; the list can only shrink: a new deep import fails the first test, a moved one fails
# the second until its line is deleted here.
DEEP_IMPORTS_LEFT: dict[str, str] = {}


def _imported_modules(rel: Path, tree: ast.AST) -> Iterator[str]:
    """Every module `rel` imports, and every `module.name` a `from module import name` names
    (a name may be a submodule), relative imports resolved."""
    parts = rel.with_suffix("").parts
    package = parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join((*base, *([node.module] if node.module else [])))
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def _deep_imports() -> set[str]:
    """`path: clawviz.<stage>.<module>` for each module of a stage imported from outside it."""
    found = set()
    for path in [*ROOT.glob("clawviz/**/*.py"), ROOT / "app.py", *ROOT.glob("pages/*.py")]:
        rel = path.relative_to(ROOT)
        own = rel.parts[1] if rel.parts[0] == "clawviz" and len(rel.parts) > 2 else None
        for module in _imported_modules(rel, ast.parse(path.read_text(), str(rel))):
            bits = module.split(".")
            if len(bits) < 3 or bits[0] != "clawviz" or bits[1] not in STAGES or bits[1] == own:
                continue
            stage = ROOT / "clawviz" / bits[1]
            if (stage / f"{bits[2]}.py").exists() or (stage / bits[2] / "__init__.py").exists():
                found.add(f"{rel.as_posix()}: clawviz.{bits[1]}.{bits[2]}")
    return found


def test_outside_a_stage_code_imports_from_the_stage_not_its_modules() -> None:
    new = sorted(_deep_imports() - DEEP_IMPORTS_LEFT.keys())
    assert not new, f"import these from the stage package (add to its __all__): {new}"


def test_the_list_of_deep_imports_left_only_shrinks() -> None:
    gone = sorted(DEEP_IMPORTS_LEFT.keys() - _deep_imports())
    assert not gone, f"no longer imported deep; delete from DEEP_IMPORTS_LEFT: {gone}"
