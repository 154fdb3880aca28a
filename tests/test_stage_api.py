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


# Outside a stage, code imports the stage's names from the stage (`from clawviz.store import
# session_scope`), not from its modules. These files still reach into a stage's module, by a
# private name, a module used as a namespace (`from clawviz.store import models`), or a file
# another branch was editing. The list can only shrink: a new deep import fails the first test,
# a moved one fails the second until its line is deleted here.
DEEP_IMPORTS_LEFT = frozenset(
    {
        "clawviz/cli/analyse.py: clawviz.jobs.reanalyse",
        "clawviz/cli/main.py: clawviz.store.db",
        "clawviz/cli/main.py: clawviz.store.fastread",
        "clawviz/cli/main.py: clawviz.store.search",
        "clawviz/cli/tasks.py: clawviz.review.diagnosis",
        "clawviz/cli/tasks.py: clawviz.review.findings",
        "clawviz/export/shard.py: clawviz.store.db",
        "clawviz/export/source.py: clawviz.store.calls",
        "clawviz/export/source.py: clawviz.store.queries",
        "clawviz/figures/explorer/__init__.py: clawviz.recon.calldiff",
        "clawviz/jobs/analyse.py: clawviz.store.calls",
        "clawviz/jobs/analyse.py: clawviz.store.db",
        "clawviz/jobs/ingest.py: clawviz.ingest.bounded",
        "clawviz/jobs/ingest.py: clawviz.ingest.formats",
        "clawviz/jobs/ingest.py: clawviz.ingest.identity",
        "clawviz/jobs/ingest.py: clawviz.ingest.lines",
        "clawviz/jobs/ingest.py: clawviz.ingest.transcripts",
        "clawviz/jobs/ingest.py: clawviz.review.findings",
        "clawviz/jobs/ingest.py: clawviz.review.tasks",
        "clawviz/jobs/ingest.py: clawviz.store.calls",
        "clawviz/jobs/ingest.py: clawviz.store.db",
        "clawviz/jobs/ingest.py: clawviz.store.search",
        "clawviz/jobs/pool.py: clawviz.store.calls",
        "clawviz/jobs/pool.py: clawviz.store.db",
        "clawviz/jobs/reanalyse.py: clawviz.store.calls",
        "clawviz/jobs/reanalyse.py: clawviz.store.db",
        "clawviz/jobs/sessions.py: clawviz.store.calls",
        "clawviz/jobs/share.py: clawviz.figures.explorer",
        "clawviz/jobs/share.py: clawviz.store.calls",
        "clawviz/jobs/share.py: clawviz.store.comments",
        "clawviz/jobs/share.py: clawviz.store.models",
        "clawviz/ui/data.py: clawviz.store.calls",
        "clawviz/ui/data.py: clawviz.store.queries",
        "clawviz/ui/data.py: clawviz.store.search",
        "clawviz/ui/episode.py: clawviz.store.nav",
        "clawviz/ui/figcache.py: clawviz.figures.tree",
        "clawviz/ui/findings_widgets.py: clawviz.review.diagnosis",
        "clawviz/ui/findings_widgets.py: clawviz.review.findings",
        "clawviz/ui/history.py: clawviz.store.queries",
        "clawviz/ui/live.py: clawviz.store.queries",
        "clawviz/ui/runs.py: clawviz.figures.runs",
        "clawviz/ui/runs.py: clawviz.store.queries",
        "clawviz/ui/state.py: clawviz.store.db",
        "clawviz/ui/tasks.py: clawviz.review.solvability",
        "pages/runs.py: clawviz.store.queries",
    }
)


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
    new = sorted(_deep_imports() - DEEP_IMPORTS_LEFT)
    assert not new, f"import these from the stage package (add to its __all__): {new}"


def test_the_list_of_deep_imports_left_only_shrinks() -> None:
    gone = sorted(DEEP_IMPORTS_LEFT - _deep_imports())
    assert not gone, f"no longer imported deep; delete from DEEP_IMPORTS_LEFT: {gone}"
