"""Use cases: the only code that both holds a store session and calls the pure stages.

`ingest` loads files into the store and analyses what they changed; `analyse` brings the
stored decisions up to date with the calls and settings; `sessions` links a transcript to its
wire episode; `share` reads a stored episode's explorer payload. Scale-out: `pool` (ingest in
worker processes), `reanalyse` (`reanalyse_stale`: the analysis in processes or Ray tasks),
`rayrt` (the one Ray start). The CLI, the app, the export and the recording proxy's live
ingest call these.

The public names below (`__all__`) are imported from their module on first use
(`clawviz._lazy`); callers outside the stage import them from `clawviz.jobs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clawviz._lazy import lazy_api

if TYPE_CHECKING:
    from clawviz.jobs.analyse import ensure_analysis, episode_analysis
    from clawviz.jobs.ingest import FileReport, IngestReport, ingest_paths
    from clawviz.jobs.rayrt import RayMissing, import_ray, ray_session
    from clawviz.jobs.reanalyse import reanalyse as reanalyse_stale
    from clawviz.jobs.share import load_payload

__all__ = [
    "FileReport",
    "IngestReport",
    "RayMissing",
    "ensure_analysis",
    "episode_analysis",
    "import_ray",
    "ingest_paths",
    "load_payload",
    "ray_session",
    "reanalyse_stale",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "analyse": ("ensure_analysis", "episode_analysis"),
    "ingest": ("FileReport", "IngestReport", "ingest_paths"),
    "rayrt": ("RayMissing", "import_ray", "ray_session"),
    "share": ("load_payload",),
}
"""Which module holds each public name."""

_RENAMED: dict[str, tuple[str, str]] = {
    "reanalyse_stale": ("reanalyse", "reanalyse"),
}
"""Public names published under another name than their module's (clashes, clarity)."""

__getattr__, __dir__ = lazy_api(__name__, _HOMES, _RENAMED)
