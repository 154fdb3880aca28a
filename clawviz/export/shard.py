"""Sharded export: the selected episodes split into batches, each written as one Parquet part.

`python -m clawviz export ... --out DIR --workers N` runs the batches in a process pool on this
machine; `--engine ray [--ray-address ADDR]` runs them as Ray tasks (without an address, a local
Ray with `num_cpus` = workers, 2 by default, and no dashboard). Either way the driver selects
the episodes once (the Runs page's filters, as a single-file export does), cuts them into
consecutive batches, and each task opens the store itself, builds its episodes' rows with the
same code as `run_export`, and writes `DIR/part-NNNNN.parquet` (one schema for every part,
`writer._parquet_schema`). The rows are the single-file export's rows, in the same order once
the parts are read in order. The driver merges the tasks' reports and writes
`DIR/_manifest.json` (rows, episodes, parts, report) last: a directory without a manifest is an
export that did not finish.

Workers on other machines (Ray) need the same store URL (PostgreSQL) and `DIR` on a shared
filesystem.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson

from clawviz.export.report import ExportReport
from clawviz.export.rl import AdvantageKind
from clawviz.export.run import FORMATS, Format, new_report, write_rows
from clawviz.export.source import Progress, Selection, selected_episodes
from clawviz.jobs import RayMissing as RayMissing  # re-exported: the export stage names it too
from clawviz.jobs import import_ray, ray_session
from clawviz.settings import DEFAULT_SETTINGS, Settings

Engine = Literal["process", "ray"]
MANIFEST = "_manifest.json"
MAX_SHARD_EPISODES = 2000
"""Most episodes per part (a task's memory is still set by the read batch, not by this)."""

@dataclass(frozen=True)
class ShardTask:
    """One part: which episodes go into it, and how to export them."""

    index: int
    db_url: str
    fmt: Format
    out: str
    rows: list[dict]
    selection: Selection
    settings: Settings
    advantage: AdvantageKind


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def shard_rows(rows: list[dict], workers: int) -> list[list[dict]]:
    """Consecutive batches of episode rows: about four per worker (so a slow batch does not
    leave the others idle), at most `MAX_SHARD_EPISODES` each."""
    if not rows:
        return []
    per = max(1, min(MAX_SHARD_EPISODES, math.ceil(len(rows) / (4 * max(1, workers)))))
    return [rows[i : i + per] for i in range(0, len(rows), per)]


def run_shard(task: ShardTask) -> tuple[int, ExportReport]:
    """Export one part (in a worker process or a Ray task); returns its report."""
    from sqlmodel import Session

    from clawviz.store import get_engine

    out = Path(task.out) / part_name(task.index)
    report = new_report(task.fmt, out, task.selection, task.settings, task.advantage)
    with Session(get_engine(task.db_url)) as session:
        write_rows(
            session,
            task.fmt,
            out,
            report,
            selection=task.selection,
            settings=task.settings,
            advantage=task.advantage,
            rows=task.rows,
        )
    report.stats()  # folds the last trajectory into the sums before the report is sent back
    return task.index, report


def _run_process(tasks: list[ShardTask], workers: int, progress: Progress | None) -> list:
    from clawviz.store import forget_engines

    method = "fork" if sys.platform == "linux" else "spawn"
    ctx = multiprocessing.get_context(method)
    init = forget_engines if method == "fork" else None
    done: list[tuple[int, ExportReport]] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=init) as pool:
        for got in pool.map(run_shard, tasks):
            done.append(got)
            if progress:
                progress(len(done), len(tasks), f"part {got[0]} written")
    return done


def _run_ray(
    tasks: list[ShardTask], address: str | None, workers: int, progress: Progress | None
) -> list:
    # The jobs' Ray (clawviz.jobs.rayrt): the same one-line RayMissing, the same local start.
    with ray_session(address, workers) as ray:
        remote = ray.remote(num_cpus=1, max_retries=2)(run_shard)
        pending = [remote.remote(t) for t in tasks]
        done: list[tuple[int, ExportReport]] = []
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            done.append(ray.get(ready[0]))
            if progress:
                progress(len(done), len(tasks), f"part {done[-1][0]} written")
        return sorted(done, key=lambda d: d[0])


def run_sharded_export(
    db_url: str,
    fmt: Format,
    out_dir: str | os.PathLike[str],
    *,
    selection: Selection | None = None,
    settings: Settings = DEFAULT_SETTINGS,
    advantage: AdvantageKind = "grpo",
    workers: int = 2,
    engine: Engine = "process",
    ray_address: str | None = None,
    progress: Progress | None = None,
) -> ExportReport:
    """Write the selected episodes' rows as `out_dir/part-NNNNN.parquet` plus `_manifest.json`.

    The merged report is returned and is the manifest's `report`. Parts an earlier export left
    in `out_dir` are removed first; on failure the parts written so far are removed."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (choose sft or rl)")
    if engine == "ray":
        import_ray()  # fail before any work when Ray is missing
    selection = selection or Selection()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("part-*.parquet"), out / MANIFEST]:
        old.unlink(missing_ok=True)
    from sqlmodel import Session

    from clawviz.jobs import ensure_analysis
    from clawviz.store import get_engine

    with Session(get_engine(db_url)) as session:
        ensure_analysis(session, settings)
        session.commit()
        rows = selected_episodes(session, settings, selection)
    batches = shard_rows(rows, workers)
    tasks = [
        ShardTask(i, db_url, fmt, str(out), b, selection, settings, advantage)
        for i, b in enumerate(batches)
    ]
    report = new_report(fmt, out, selection, settings, advantage)
    try:
        if engine == "ray":
            done = _run_ray(tasks, ray_address, workers, progress)
        elif workers <= 1:
            done = [run_shard(t) for t in tasks]
        else:
            done = _run_process(tasks, workers, progress)
    except BaseException:
        for part in out.glob("part-*.parquet*"):
            part.unlink(missing_ok=True)
        raise
    parts = []
    for index, part in done:
        report.merge(part)
        parts.append(
            {
                "file": part_name(index),
                "rows": part.rows,
                "episodes": part.episodes_exported,
                "episodes_selected": part.episodes_selected,
                "bytes": part.bytes,
            }
        )
    manifest = {
        "format": fmt,
        "engine": engine,
        "workers": workers,
        "rows": report.rows,
        "episodes": report.episodes_exported,
        "episodes_selected": report.episodes_selected,
        "parts": parts,
        "report": report.to_dict(),
    }
    tmp = out / (MANIFEST + ".partial")
    tmp.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    os.replace(tmp, out / MANIFEST)
    return report
