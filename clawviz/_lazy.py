"""Lazy public names of a stage package (PEP 562), as `clawviz.<stage>.__init__` declares them.

A stage's `__init__` names its API over private modules (the way inspect_ai's `log/__init__.py`
does) without importing them: `lazy_api` returns the module's `__getattr__` and `__dir__`, and a
name's module is imported on first use. So `import clawviz.recon` costs nothing, and the lean
command line (`tests/test_cli_lean.py`) loads only what a command uses.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_api(
    package: str, homes: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose public names live in the modules of
    `homes` (module path relative to the package -> the names it provides)."""
    where = {name: f"{package}.{module}" for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> Any:
        home = where.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)  # the next look-up is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
