"""Export for training (PIPELINE §6b): the kept paths as SFT and RL rows a trainer reads.

Rows are built from the decisions the analysis stored (kept paths, rewards, advantages) and from
the logged token ids; nothing here prunes, scores or tokenises again. See docs/EXPORT.md.
"""

from clawviz.export.report import ExportReport
from clawviz.export.run import FORMATS, report_path, run_export
from clawviz.export.source import Selection

__all__ = ["FORMATS", "ExportReport", "Selection", "report_path", "run_export"]
