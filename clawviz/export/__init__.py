"""Export for training (PIPELINE §6b): the kept paths as SFT and RL rows a trainer reads.

Rows are built from the decisions the analysis stored (kept paths, rewards, advantages) and from
the logged token ids; nothing here prunes, scores or tokenises again. See docs/EXPORT.md.

The names below are loaded on first use (PEP 562), so `from clawviz.export import Selection`
(the Episode and Runs pages' Export panel) does not import the row builders and writers
(`clawviz.export.run`) until an export actually runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clawviz.export.report import ExportReport
    from clawviz.export.run import FORMATS, report_path, run_export
    from clawviz.export.source import Selection

__all__ = ["FORMATS", "ExportReport", "Selection", "report_path", "run_export"]

_HOME = {
    "ExportReport": "clawviz.export.report",
    "FORMATS": "clawviz.export.run",
    "report_path": "clawviz.export.run",
    "run_export": "clawviz.export.run",
    "Selection": "clawviz.export.source",
}
"""Where each public name lives."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
