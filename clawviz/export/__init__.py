"""Export for training (PIPELINE §6b): the kept paths as SFT and RL rows a trainer reads.

Rows are built from the decisions the analysis stored (kept paths, rewards, advantages) and from
the logged token ids; nothing here prunes, scores or tokenises again. See docs/EXPORT.md.

The names below are loaded on first use (PEP 562), so `from clawviz.export import Selection`
(the Episode and Runs pages' Export panel) does not import the row builders and writers
(`clawviz.export.run`) until an export actually runs.

The public names below (`__all__`) are imported from their module on first use
(`clawviz._lazy`); callers outside the stage import them from `clawviz.export`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clawviz._lazy import lazy_api

if TYPE_CHECKING:
    from clawviz.export.report import ExportReport
    from clawviz.export.run import FORMATS, report_path, run_export
    from clawviz.export.shard import MANIFEST, RayMissing, run_sharded_export
    from clawviz.export.source import Selection

__all__ = [
    "ExportReport",
    "FORMATS",
    "MANIFEST",
    "RayMissing",
    "Selection",
    "report_path",
    "run_export",
    "run_sharded_export",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "report": ("ExportReport",),
    "run": ("FORMATS", "report_path", "run_export"),
    "shard": ("MANIFEST", "RayMissing", "run_sharded_export"),
    "source": ("Selection",),
}
"""Which module holds each public name."""

__getattr__, __dir__ = lazy_api(__name__, _HOMES)
