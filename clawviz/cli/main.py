"""Command line: `python -m clawviz {ingest,episodes,explain,search,settings,tasks,review,
diagnose,findings,diff,check,record,export,analyse,migrate}`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from clawviz.cli import analyse as cli_analyse
from clawviz.cli import export as cli_export
from clawviz.cli import review_cmds
from clawviz.cli import share as cli_share
from clawviz.cli import tasks as cli_tasks
from clawviz.cli.common import (
    EXIT_FATAL,
    EXIT_OK,
    EXIT_REJECTED,
    ProgressBar,
    add_common,
    add_scale_out,
    scale_out_error,
    settings_of,
    visible,
)
from clawviz.record.cli import register as register_record
from clawviz.settings import (
    DEFAULT_SETTINGS,
    SETTINGS,
    Settings,
    SettingsError,
    allowed,
    mask_secrets,
    masked_url,
)

if TYPE_CHECKING:
    from sqlmodel import Session

    from clawviz.jobs import IngestReport

# Lean command line (issue 14): this module, cli/tasks.py and cli/review_cmds.py import the
# store, the ORM, orjson and the pipeline inside the commands that use them, never at module
# level; tests/test_cli_lean.py fails (strict) if one comes back.


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def _report_text(report: IngestReport) -> str:
    lines = [
        f"files: {len(report.files)}  calls: {report.n_calls}  episodes: {report.n_episodes}  "
        f"results: {report.n_results}  tasks: {report.n_tasks}  rejected lines: "
        f"{len(report.rejected)}"
    ]
    for f in report.files:
        if f.status == "skipped":
            continue
        detail = f"{f.n_calls} calls" if f.format == "exchange" else ""
        if f.format == "results":
            detail = f"{f.n_results} results"
        elif f.format == "task_folder":
            detail = f"{f.n_tasks} tasks"
        elif f.format.startswith("transcript"):
            detail = f"{f.n_calls} calls"
        rej = f", {f.n_rejected} rejected" if f.n_rejected else ""
        lines.append(f"  {f.status:<14} {f.format or '-':<24} {f.path}  {detail}{rej}")
    for f in report.files:
        if f.status == "already_being_loaded":
            lines.append(f"note     {f.path}: already being loaded by another process")
    for r in report.rejected:
        lines.append(f"rejected {r.file}:{r.line}: {r.reason}")
    for w in report.warnings:
        lines.append(f"note     {w.file}:{w.line}: {w.reason}")
    by_reason: dict[str, list[str]] = {}
    for s in report.skipped_files:
        by_reason.setdefault(s.reason, []).append(s.path)
    for reason, paths in by_reason.items():
        # Workspace folders hold many data .jsonl files; name a few, --json lists them all.
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        lines.append(f"skipped  {len(paths)} file(s), {reason}: {shown}")
    for e in report.errors:
        lines.append(f"error    {e.path}: {e.reason}")
    return "\n".join(lines)


def cmd_ingest(args: argparse.Namespace) -> int:
    """Load files and folders; exit 0 if all lines loaded, 2 if some were rejected, 1 on error."""
    from clawviz.jobs import RayMissing, import_ray, ingest_paths
    from clawviz.store import require_writable, session_scope

    if problem := scale_out_error(args):
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_FATAL
    bar = ProgressBar() if sys.stderr.isatty() and not args.json else None
    try:
        if args.engine == "ray":
            import_ray()  # before any work: one line naming the extra when Ray is missing
        with session_scope(args.db) as session:
            require_writable(session.get_bind().engine)
            report = ingest_paths(
                args.paths,
                session=session,
                settings=settings_of(args),
                progress=bar,
                workers=args.workers if args.engine != "ray" else max(2, args.workers),
                engine=args.engine,
                ray_address=args.ray_address,
            )
    except (FileNotFoundError, RayMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FATAL
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        _print_json(report.to_dict())
    else:
        print(_report_text(report))
    if report.errors:
        return EXIT_FATAL
    return EXIT_REJECTED if report.rejected else EXIT_OK


ROWS_CHUNK = 2000
"""Episodes read (and their pinned calls looked up) together by `iter_episode_rows`."""


def episode_rows(session: Session, settings: Settings = DEFAULT_SETTINGS) -> list[dict[str, Any]]:
    """One row per episode with reward (the one reward rule), status and reasons."""
    return list(iter_episode_rows(session, settings))


def iter_episode_rows(
    session: Session, settings: Settings = DEFAULT_SETTINGS
) -> Iterator[dict[str, Any]]:
    """`episode_rows` as a generator: analyses first, then reads the rows `ROWS_CHUNK` at a
    time through a server-side cursor (PostgreSQL) or the driver's cursor (SQLite), so memory
    stays at one chunk at any number of episodes."""
    from clawviz.jobs import ensure_analysis
    from clawviz.store import listing_chunks

    ensure_analysis(session, settings)
    for chunk in listing_chunks(session, settings.settings_hash, ROWS_CHUNK):
        yield from _row_chunk(session, settings, chunk)


def _row_chunk(session: Session, settings: Settings, chunk: Sequence[Any]) -> list[dict[str, Any]]:
    import orjson
    from sqlmodel import col, select

    from clawviz.store import CallRow, reward_from_columns

    rows: list[dict[str, Any]] = []
    for eid, task, harness, model, attempt, n_calls, status, rj, rid, rew, checks, rubric in chunk:
        items = orjson.loads(rj) if rj else []
        rows.append(
            {
                "episode_id": eid,
                "task_id": task,
                "harness": harness,
                "model": model,
                "attempt": attempt,
                "n_calls": n_calls,
                "reward": None
                if rid is None
                else reward_from_columns(rew, checks, rubric, settings),
                "status": status or "unknown",
                "reasons": [i.get("code") for i in items],
                "reasons_at": [i.get("call_id") for i in items],
            }
        )
    # Each reason's pinned call by its number (`clawviz.types.call_label`: the log line).
    pinned = sorted({cid for r in rows for cid in r["reasons_at"] if cid})
    lines: dict[str, str] = {}
    for i in range(0, len(pinned), 500):
        part = pinned[i : i + 500]
        query = select(CallRow.call_id, CallRow.line).where(col(CallRow.call_id).in_(part))
        lines.update({c: str(line) for c, line in session.exec(query)})
    for r in rows:
        r["reasons_at"] = [lines.get(cid) if cid else None for cid in r["reasons_at"]]
    return rows


def _print_json_rows(rows: Iterable[dict[str, Any]]) -> None:
    """`_print_json(list(rows))`, byte for byte, printed row by row as the rows come."""
    out = sys.stdout
    first = True
    for row in rows:
        body = json.dumps(row, indent=2, default=str).replace("\n", "\n  ")
        out.write(("[\n  " if first else ",\n  ") + body)
        first = False
    out.write("[]\n" if first else "\n]\n")


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, list):
            return visible(",".join(str(x) for x in v)) or "-"
        if isinstance(v, float):
            return f"{v:.3f}"
        return visible(str(v))

    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    out = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    out += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in out)


def cmd_episodes(args: argparse.Namespace) -> int:
    """List episodes (read straight from a SQLite store whose decisions are current)."""
    from clawviz import store

    settings = settings_of(args)
    url = args.db or settings.resolved_database_url
    if args.json:
        # Streamed: printed as read, so memory stays at one chunk of rows (issue 26).
        fast = store.iter_fast_episode_rows(url, settings)
        if fast is not None:
            _print_json_rows(fast)
            return EXIT_OK
        from clawviz.store import session_scope

        with session_scope(args.db) as session:
            _print_json_rows(iter_episode_rows(session, settings))
        return EXIT_OK
    rows = store.fast_episode_rows(url, settings)
    if rows is None:
        from clawviz.store import session_scope

        with session_scope(args.db) as session:
            rows = episode_rows(session, settings)
    cols = ["episode_id", "task_id", "harness", "model", "attempt", "n_calls", "reward"]
    for r in rows:
        # `code@N`: the reason and the number of the call it is pinned on.
        at = r.get("reasons_at") or [None] * len(r["reasons"])
        pairs = zip(r["reasons"], at, strict=False)
        r["reasons"] = [c if n is None else f"{c}@{n}" for c, n in pairs]
    print(_table(rows, cols + ["status", "reasons"]))
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    """Full-text search over every distinct message and reply."""
    from clawviz.store import search_messages, session_scope

    with session_scope(args.db) as session:
        try:
            hits = search_messages(
                session, args.text, episode_id=args.episode, role=args.role,
                syntax=args.syntax, limit=args.limit,
            )  # fmt: skip
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FATAL
    if args.json:
        _print_json([h.to_dict() for h in hits])
        return EXIT_OK
    if not hits:
        print(f"no call says {args.text!r}")
    from clawviz.types import call_label

    for h in hits:
        where = f"{h.source_file}:{h.line}"
        print(
            f"{h.episode_id}  call {call_label(h)}  {where}  {h.kind}/{h.role}  {h.call_id}"
            f"\n    {h.snippet}"
        )
    return EXIT_OK


def cmd_migrate(args: argparse.Namespace) -> int:
    """Bring the store to the newest schema (Alembic revisions in clawviz/store/migrations)."""
    from clawviz.store import get_engine, mask_url, migrate, schema_version

    engine = get_engine(args.db, check_schema=False)
    before = schema_version(engine)
    applied = migrate(engine)
    out = {
        "store": mask_url(engine.url),
        "from": before,
        "to": schema_version(engine),
        "applied": applied,
    }
    if args.json:
        _print_json(out)
    elif applied:
        print(f"migrated {out['store']}: {' -> '.join([before or '0001 (v1)', *applied])}")
    else:
        print(f"{out['store']} is at the newest schema ({out['to']})")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    """Explain one episode call by call."""
    from clawviz.cli import explain
    from clawviz.store import Episode, session_scope

    settings = settings_of(args)
    with session_scope(args.db) as session:
        if session.get(Episode, args.episode_id) is None:
            print(f"error: no episode {args.episode_id!r} in the store", file=sys.stderr)
            return EXIT_FATAL
        if args.json:
            _print_json(explain.explain_rows(session, args.episode_id, settings))
        else:
            print(visible(explain.explain_text(session, args.episode_id, settings)))
    return EXIT_OK


def cmd_settings(args: argparse.Namespace) -> int:
    """Print the settings table: name, default, value in use, allowed values, help."""
    current = settings_of(args)

    def plain(v: Any) -> Any:
        return list(v) if isinstance(v, tuple) else (dict(v) if hasattr(v, "keys") else v)

    rows = [
        {
            "name": s.name,
            "default": plain(s.default),
            "value": plain(
                masked_url(current.resolved_database_url)
                if s.name == "database_url"
                else getattr(current, s.name)
            ),
            "affects_decisions": s.affects_decisions,
            "allowed": allowed(s),
            "help": s.help,
        }
        for s in SETTINGS
    ]
    if args.json:
        _print_json(rows)
        return EXIT_OK
    for r in rows:
        print(f"{r['name']} = {r['default']!r}")
        if r["value"] != r["default"]:
            print(f"    (in use: {r['value']!r})")
        print(f"    {r['help']} [{r['allowed']}]")
    print(f"settings hash: {current.settings_hash}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree; `--db` and `--json` work before or after the sub-command."""
    common = argparse.ArgumentParser(add_help=False)
    add_common(common)
    parser = argparse.ArgumentParser(
        prog="clawviz", description="Rebuild, prune and review agent episodes from proxy logs."
    )
    add_common(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", parents=[common], help="load logs, results, transcripts, tasks")
    p.add_argument("paths", nargs="+", help="files or folders (recursive)")
    add_scale_out(
        p,
        workers_help="read exchange logs and analyse episodes in N processes (default 1)",
        engine_help="ray: read and analyse as a Ray Data job (pip install -r "
        "requirements-ray.txt); paths may be file://, s3://, gs:// or hdfs:// URLs",
        ray_help="with --engine ray: the cluster to join (default: a local Ray, --workers CPUs)",
        workers_default=1,
        engine_default="process",
    )
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("episodes", parents=[common], help="one row per episode")
    p.set_defaults(func=cmd_episodes)

    p = sub.add_parser("explain", parents=[common], help="one row per call of an episode")
    p.add_argument("episode_id")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("search", parents=[common], help="full-text search of messages and replies")
    p.add_argument("text", help="words to find (taken literally unless --syntax)")
    p.add_argument("--episode", default=None, help="only this episode")
    p.add_argument("--role", default=None, help="only this role (user, assistant, tool)")
    p.add_argument("--syntax", action="store_true", help="use the backend's query syntax")
    p.add_argument("--limit", type=int, default=200, help="at most this many hits")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("migrate", parents=[common], help="bring the store to the newest schema")
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("settings", parents=[common], help="the settings table with help")
    p.set_defaults(func=cmd_settings)

    cli_tasks.register(sub, common)
    review_cmds.register(sub)
    register_record(sub)
    cli_export.register(sub, common)
    cli_analyse.register(sub, common)
    cli_share.register(sub, common)
    return parser


def _is_store_error(exc: BaseException) -> bool:
    """An SQLAlchemy error, without importing SQLAlchemy when no command did."""
    sa_exc = sys.modules.get("sqlalchemy.exc")
    return sa_exc is not None and isinstance(exc, sa_exc.SQLAlchemyError)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        settings_of(args)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FATAL
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # `clawviz ... | head`: the reader left; exit quietly as other CLI tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:
        db = sys.modules.get("clawviz.store.db")
        if db is not None and isinstance(exc, db.StoreReadOnly):
            print(f"error: store: {exc}", file=sys.stderr)
            return EXIT_FATAL
        if _is_store_error(exc) and "readonly database" in str(exc):
            msg = "error: store: the store is read-only: it can be read, not written"
            print(msg, file=sys.stderr)
            return EXIT_FATAL
        if not _is_store_error(exc):
            raise
        # A store that cannot be opened: one line, never the URL's password or an SQL dump.
        orig = getattr(exc, "orig", None) or exc
        text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
        print(f"error: store: {mask_secrets(text)}", file=sys.stderr)
        return EXIT_FATAL
