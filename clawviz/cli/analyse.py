"""`python -m clawviz analyse [--workers N | --engine ray]`: store the decisions of every episode
not yet analysed under the current settings (after `--set reward_threshold=0.7`, say), in
parallel."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Literal

from clawviz.cli.common import (
    EXIT_FATAL,
    EXIT_OK,
    ProgressBar,
    add_scale_out,
    scale_out_error,
    settings_of,
)


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add `analyse` to the clawviz argparse tree (`common`: --db, --json, --set)."""
    p = subparsers.add_parser(
        "analyse",
        parents=[common],
        help="compute the decisions of every stale episode under the current settings",
        description="Compute and store the decisions of every episode whose stored ones were "
        "made under other settings or from other inputs (what the app and `episodes` would "
        "otherwise compute on first view). With --workers N or --engine ray the episodes are "
        "analysed in parallel; the decisions are the single process's.",
    )
    add_scale_out(
        p,
        workers_help="analyse in N worker processes (default 1)",
        engine_help="a process pool (default) or a Ray Data job (pip install -r "
        "requirements-ray.txt)",
        ray_help="with --engine ray: the cluster to join (default: a local Ray, --workers CPUs)",
    )
    p.set_defaults(func=cmd_analyse)


def cmd_analyse(args: argparse.Namespace) -> int:
    """Analyse; exit 0 when every stale episode was analysed, 1 on a usage or store error."""
    from clawviz.jobs import RayMissing, import_ray, reanalyse_stale
    from clawviz.store import require_writable, session_scope

    if problem := scale_out_error(args):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_FATAL
    engine: Literal["process", "ray"] = "ray" if args.engine == "ray" else "process"
    workers = args.workers or (2 if engine == "ray" else 1)
    settings = settings_of(args)
    bar = ProgressBar() if sys.stderr.isatty() and not args.json else None
    try:
        if engine == "ray":
            import_ray()  # before any work: one line naming the extra when Ray is missing
        with session_scope(args.db) as session:
            require_writable(session.get_bind().engine)
            n = reanalyse_stale(
                session,
                settings,
                workers=workers,
                engine=engine,
                ray_address=args.ray_address,
                progress=bar,
            )
            counts = _status_counts(session, settings.settings_hash)
    except RayMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FATAL
    finally:
        if bar is not None:
            bar.close()
    out = {
        "analysed": n,
        "settings_hash": settings.settings_hash,
        "engine": engine,
        "workers": workers,
        "statuses": counts,
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no episodes"
        print(
            f"analysed {n} episode(s) under settings {settings.settings_hash} "
            f"({engine}, {workers} worker(s)); now: {shown}"
        )
    return EXIT_OK


def _status_counts(session: Any, settings_hash: str) -> dict[str, int]:
    from sqlmodel import func, select

    from clawviz.store import EpisodeStatus

    rows = session.exec(
        select(EpisodeStatus.status, func.count())
        .where(EpisodeStatus.settings_hash == settings_hash)
        .group_by(EpisodeStatus.status)
    ).all()
    return {status: int(n) for status, n in rows}
