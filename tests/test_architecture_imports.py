"""The import graph of clawviz has no cycle, imports inside functions included.

`lint-imports` (`.ci/run`) checks the floors and, per package, that no two sibling modules
import each other; this test checks the whole graph at once, module by module, so a cycle
that runs through several packages, or hides behind a function-level import (grimp reads every
import statement, wherever it is), fails here with the modules named. A stage's `__init__`
names its lazy API under `TYPE_CHECKING`; those imports are kept in the graph, since they
stand for the imports `clawviz._lazy` makes on first use.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in adj:
        if root in index:
            continue
        work = [(root, iter(adj[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(adj[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_module_imports_itself_through_others() -> None:
    sys.path.insert(0, str(ROOT))
    try:
        graph = grimp.build_graph("clawviz", cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))
    assert len(graph.modules) > 100
    assert graph.direct_import_exists(importer="clawviz.jobs.ingest", imported="clawviz.store")
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle_across_packages() -> None:
    graph = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c", "q", "q.d"):
        graph.add_module(m)
    graph.add_import(importer="p.a", imported="q.d")
    graph.add_import(importer="q.d", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph) == [["p.a", "p.b", "q.d"]]
