"""One export: select episodes, build SFT or RL rows from their stored decisions, stream them out.

`run_export` is what the CLI (`python -m clawviz export`) and the app's Export buttons call.
The report is returned, and written beside the file as `FILE.report.json`.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Literal

import orjson
from sqlmodel import Session

from clawviz import store
from clawviz._gc import bulk_gc
from clawviz.export.report import ExportReport
from clawviz.export.rl import AdvantageKind, rl_rows
from clawviz.export.sft import PathRows, sft_rows
from clawviz.export.source import BATCH_CALLS, EpisodeData, Progress, Selection, iter_episodes
from clawviz.export.writer import RowWriter
from clawviz.settings import DEFAULT_SETTINGS, Settings

Format = Literal["sft", "rl"]
FORMATS: tuple[str, ...] = ("sft", "rl")
RL_BATCH_CALLS = 64
"""Calls loaded together by an RL export: each stored rollout holds its whole prompt's ids."""


def report_path(out: str | os.PathLike[str]) -> Path:
    """Where the report of an export to `out` is written."""
    p = Path(out)
    return p.with_name(p.name + ".report.json")


def episode_rows(
    ep: EpisodeData, fmt: Format, settings: Settings, advantage: AdvantageKind = "grpo"
) -> PathRows:
    """The rows one episode contributes to an export of this format."""
    if fmt == "sft":
        return sft_rows(ep, settings.settings_hash)
    return rl_rows(ep, settings.settings_hash, advantage)


def _account(report: ExportReport, ep: EpisodeData, got: PathRows, fmt: Format) -> None:
    for s in got.skipped:
        report.skip(
            s.code, f"{s.episode_id} {s.path_id}" + (f": {s.evidence}" if s.evidence else "")
        )
    for k, v in got.omitted.items():
        report.omitted_blocks[k] += v
    report.rows_shared_prefix_only += got.shared_only
    paths = {r["path_id"] for r in got.rows}
    report.paths_exported += len(paths)
    if got.rows:
        report.episodes_exported += 1
    for segment, call_ids in got.trained_calls:
        calls = [ep.calls[c] for c in call_ids]
        report.add_trajectory(ep.episode_id, segment, calls)
    for row in got.rows:
        if fmt == "sft":
            # Replies before `prefix_messages` are trained by an earlier row: counted there.
            at = [i for i, t in enumerate(row["train"]) if t]
            own = [
                c for c, i in zip(row["call_ids"], at, strict=True) if i >= row["prefix_messages"]
            ]
            report.trained_messages += len(own)
            report.trained_tokens += sum(ep.calls[c].generated_tokens or 0 for c in own)
        else:
            trained = sum(row["loss_mask"])
            report.trained_tokens += trained
            report.context_tokens += len(row["loss_mask"]) - trained
            if row["drift_reason"]:
                report.splits[row["drift_reason"]] += 1
            report.calls_without_logprobs += sum(
                1
                for cid in row["call_ids"]
                if (r := ep.calls[cid].rollout) is None
                or r.output_logprobs is None
                or len(r.output_logprobs) != len(r.output_token_ids or [])
            )


def new_report(
    fmt: Format,
    out: str | os.PathLike[str],
    selection: Selection,
    settings: Settings,
    advantage: AdvantageKind,
) -> ExportReport:
    """An empty report of an export of `selection` to `out`."""
    return ExportReport(
        format=fmt,
        path=str(out),
        settings_hash=settings.settings_hash,
        advantage=advantage if fmt == "rl" else None,
        filters={
            **{k: list(v) if isinstance(v, tuple) else v for k, v in _filter_dict(selection)},
            "include_dropped": selection.include_dropped,
        },
    )


def write_rows(
    session: Session,
    fmt: Format,
    out: str | os.PathLike[str],
    report: ExportReport,
    *,
    selection: Selection,
    settings: Settings,
    advantage: AdvantageKind = "grpo",
    progress: Progress | None = None,
    rows: list[dict] | None = None,
) -> ExportReport:
    """Write the rows of the selected episodes (or of these episode `rows`) to `out`, adding
    what was written and skipped to `report`; the file appears only when complete."""
    writer = RowWriter(out, fmt)
    try:
        # Rows are acyclic: collections found little (clawviz._gc). Messages are read by
        # hash all over the store: the large page cache (SQLite, `store.bulk_cache`).
        with bulk_gc(), store.bulk_cache(session):
            max_calls = RL_BATCH_CALLS if fmt == "rl" else BATCH_CALLS
            for ep in iter_episodes(
                session,
                settings,
                selection,
                progress,
                max_calls=max_calls,
                rows=rows,
                with_tools=fmt == "sft",
            ):
                report.episodes_selected += 1
                try:
                    got = episode_rows(ep, fmt, settings, advantage)
                except Exception as exc:  # noqa: BLE001 - one bad episode costs only itself
                    for p in ep.kept_paths:
                        report.skip(
                            "export_error",
                            f"{ep.episode_id} {p.path_id}: {type(exc).__name__}: {exc}",
                        )
                    continue
                for row in got.rows:
                    writer.write(row)
                report.rows += len(got.rows)
                _account(report, ep, got, fmt)
    except BaseException:
        writer.abort()
        raise
    report.bytes += writer.close()
    return report


def run_export(
    session: Session,
    fmt: Format,
    out: str | os.PathLike[str],
    *,
    selection: Selection | None = None,
    settings: Settings = DEFAULT_SETTINGS,
    advantage: AdvantageKind = "grpo",
    progress: Progress | None = None,
) -> ExportReport:
    """Write the selected episodes' kept paths as `fmt` rows to `out` (.jsonl or .parquet)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (choose sft or rl)")
    selection = selection or Selection()
    report = new_report(fmt, out, selection, settings, advantage)
    write_rows(
        session,
        fmt,
        out,
        report,
        selection=selection,
        settings=settings,
        advantage=advantage,
        progress=progress,
    )
    report_path(out).write_bytes(
        orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    )
    return report


def _filter_dict(selection: Selection) -> list[tuple[str, object]]:
    items = list(dataclasses.asdict(selection.filter).items())
    if selection.episode_ids is not None:
        items.append(("episode_ids", selection.episode_ids))
    return items
