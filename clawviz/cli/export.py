"""`python -m clawviz export --format sft|rl --out FILE [filters]`: kept paths as training rows."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Literal

from clawviz.cli.common import (
    EXIT_FATAL,
    EXIT_OK,
    ProgressBar,
    add_scale_out,
    scale_out_error,
    settings_of,
)
from clawviz.settings import SettingsError

FORMATS = ("sft", "rl")
"""`clawviz.export.FORMATS` (the parser is built without importing the store and pandas)."""

SUFFIXES = (".jsonl", ".parquet")


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add `export` to the clawviz argparse tree (`common`: --db, --json, --set)."""
    p = subparsers.add_parser(
        "export",
        parents=[common],
        help="write the kept paths as SFT or RL training rows (JSONL or Parquet)",
        description="Write the kept paths of the selected episodes as training rows, with the "
        "decisions the app shows (docs/EXPORT.md). The report is printed and written beside "
        "the file as FILE.report.json.",
    )
    p.add_argument("--format", required=True, choices=FORMATS, dest="fmt")
    p.add_argument(
        "--out",
        required=True,
        help="output file, .jsonl or .parquet; with --workers or --engine ray, a directory of "
        "Parquet parts (part-00000.parquet ...) and _manifest.json",
    )
    p.add_argument("--task", action="append", default=[], help="task id (repeatable)")
    p.add_argument("--harness", action="append", default=[], help="harness (repeatable)")
    p.add_argument("--model", action="append", default=[], help="model (repeatable)")
    p.add_argument(
        "--status", action="append", default=[], choices=("kept", "dropped"), help="status"
    )
    p.add_argument("--reason", action="append", default=[], help="reason code (repeatable)")
    p.add_argument("--reward-min", type=float, default=None)
    p.add_argument("--reward-max", type=float, default=None)
    p.add_argument(
        "--exclude-missing-reward",
        action="store_true",
        help="leave out episodes without a reward (with --include-dropped)",
    )
    p.add_argument("--episode", action="append", default=[], help="episode id (repeatable)")
    p.add_argument(
        "--include-dropped",
        action="store_true",
        help="also export the kept paths of dropped episodes (for analysis)",
    )
    p.add_argument(
        "--advantage",
        choices=("grpo", "ppo"),
        default="grpo",
        help="RL rows: GRPO per attempt, or the PPO return per path (per token with values)",
    )
    add_scale_out(
        p,
        workers_help="write sharded Parquet into the --out directory with N worker processes",
        engine_help="sharded export engine: a process pool (default) or Ray tasks "
        "(pip install -r requirements-ray.txt)",
        ray_help="with --engine ray: the cluster to join (default: a local Ray with 2 CPUs)",
    )
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    """Export; exit 0 when the file was written, 1 on a usage or store error."""
    from clawviz.export import Selection, report_path, run_export
    from clawviz.store import EpisodeFilter, session_scope

    sharded = args.workers is not None or args.engine is not None
    if sharded and args.out.lower().endswith(SUFFIXES):
        print(
            f"error: --out {args.out!r}: a sharded export (--workers, --engine) writes a "
            "directory of Parquet parts; give a directory",
            file=sys.stderr,
        )
        return EXIT_FATAL
    if problem := scale_out_error(args):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_FATAL
    if not sharded and not args.out.lower().endswith(SUFFIXES):
        print(f"error: --out {args.out!r} must end in .jsonl or .parquet", file=sys.stderr)
        return EXIT_FATAL
    if "dropped" in args.status and not args.include_dropped:
        print("error: --status dropped needs --include-dropped", file=sys.stderr)
        return EXIT_FATAL
    try:
        settings = settings_of(args)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FATAL
    selection = Selection(
        filter=EpisodeFilter(
            tasks=tuple(args.task),
            harnesses=tuple(args.harness),
            models=tuple(args.model),
            statuses=tuple(args.status),
            reasons=tuple(args.reason),
            reward_min=args.reward_min,
            reward_max=args.reward_max,
            include_missing_reward=not args.exclude_missing_reward,
        ),
        include_dropped=args.include_dropped,
        episode_ids=tuple(args.episode) or None,
    )
    bar = ProgressBar() if sys.stderr.isatty() and not args.json else None
    if sharded:
        return _sharded(args, selection, settings, bar)
    try:
        with session_scope(args.db) as session:
            report = run_export(
                session,
                args.fmt,
                args.out,
                selection=selection,
                settings=settings,
                advantage=args.advantage,
                progress=bar,
            )
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FATAL
    finally:
        if bar is not None:
            bar.close()
    return _print_report(args, report, f"  report: {report_path(args.out)}")


def _print_report(args: argparse.Namespace, report: Any, where: str) -> int:
    """The export's report (JSON with --json, else its text and `where` the files are)."""
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print(report.text())
        print(where)
    return EXIT_OK


def _sharded(args: argparse.Namespace, selection: Any, settings: Any, bar: Any) -> int:
    """`--workers N` / `--engine ray`: Parquet parts and `_manifest.json` in the --out dir."""
    from clawviz.export import MANIFEST, RayMissing, run_sharded_export
    from clawviz.store import get_engine

    engine: Literal["process", "ray"] = "ray" if args.engine == "ray" else "process"
    workers = args.workers or 2
    try:
        url = get_engine(args.db).url.render_as_string(hide_password=False)
        report = run_sharded_export(
            url,
            args.fmt,
            args.out,
            selection=selection,
            settings=settings,
            advantage=args.advantage,
            workers=workers,
            engine=engine,
            ray_address=args.ray_address,
            progress=bar,
        )
    except (RayMissing, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FATAL
    finally:
        if bar is not None:
            bar.close()
    where = f"  engine {engine}, {workers} workers; manifest: {Path(args.out) / MANIFEST}"
    return _print_report(args, report, where)
