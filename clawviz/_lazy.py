"""Lazy public names of a stage package (PEP 562), as `clawviz.<stage>.__init__` declares them.

A stage's `__init__` names its API over private modules (the way inspect_ai's `log/__init__.py`
does) without importing them: `lazy_api` returns the module's `__getattr__` and `__dir__`, and a
name's module is imported on first use. So `import clawviz.recon` costs nothing, and the lean
command line (`tests/test_cli_lean.py`) loads only what a command uses.

A name that would read wrong on the stage, or clash with one of its modules (the function
`store.search.search`: once the module is imported, Python sets the package attribute `search`
to the module), is published under another name through `renamed` (public name -> module and
the name it has there).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_api(
    package: str,
    homes: Mapping[str, tuple[str, ...]],
    renamed: Mapping[str, tuple[str, str]] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose public names live in the modules of
    `homes` (module path relative to the package -> the names it provides) and, under another
    name, in `renamed` (public name -> (module, its name there))."""
    where = {
        name: (f"{package}.{module}", name) for module, names in homes.items() for name in names
    }
    for public, (module, attr) in (renamed or {}).items():
        where[public] = (f"{package}.{module}", attr)

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        home, attr = where[name]
        value = getattr(importlib.import_module(home), attr)
        setattr(sys.modules[package], name, value)  # the next look-up is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
