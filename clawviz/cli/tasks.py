"""CLI sub-commands for benchmark tasks: `tasks` (the review queue) and `review` (sign-off)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from clawviz.review.signoff import DECISIONS, ReviewError, add_review
from clawviz.review.tasks import task_queue, verdict_label
from clawviz.store.db import session_scope


def register(subparsers: Any) -> None:
    """Add `tasks` and `review` to the clawviz argparse tree."""
    # SUPPRESS keeps a sub-command's --db/--json from clobbering the same top-level options.
    p = subparsers.add_parser("tasks", help="benchmark tasks: status and difficulty filter")
    p.add_argument("--db", default=argparse.SUPPRESS, help="store URL (default: settings)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="JSON output")
    p.set_defaults(func=cmd_tasks)

    r = subparsers.add_parser("review", help="record a sign-off decision for a task")
    r.add_argument("task_id", help="task id")
    r.add_argument("--decision", required=True, choices=DECISIONS)
    r.add_argument("--reviewer", required=True, help="who decides")
    r.add_argument("--note", default="", help="why")
    r.add_argument("--db", default=argparse.SUPPRESS, help="store URL (default: settings)")
    r.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="JSON output")
    r.set_defaults(func=cmd_review)


def cmd_tasks(args: argparse.Namespace) -> int:
    """Print the task queue as a table or as JSON."""
    with session_scope(getattr(args, "db", None)) as session:
        rows = task_queue(session)
    if getattr(args, "json", False):
        print(json.dumps([r.as_dict() for r in rows], indent=2))
        return 0
    header = f"{'task':<28} {'category':<26} {'status':<8} {'n':>3} {'s_strong':>8} "
    header += f"{'s_small':>8} filter"
    print(header)
    for r in rows:
        terms = " ".join(verdict_label(t.passed) for t in r.filter.terms)
        print(
            f"{r.task_id[:28]:<28} {(r.category or '-')[:26]:<26} {r.status:<8} "
            f"{r.n_attempts:>3} {_f(r.s_strong):>8} {_f(r.s_small):>8} "
            f"{verdict_label(r.filter.passed)} ({terms})"
        )
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    """Append one review decision."""
    with session_scope(getattr(args, "db", None)) as session:
        try:
            row = add_review(session, args.task_id, args.decision, args.reviewer, args.note)
        except ReviewError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        out = {
            "id": row.id,
            "task_id": row.task_id,
            "decision": row.decision,
            "reviewer": row.reviewer,
            "note": row.note,
            "created_at": row.created_at.isoformat(),
        }
    if getattr(args, "json", False):
        print(json.dumps(out))
    else:
        print(f"recorded {out['decision']} for {out['task_id']} by {out['reviewer']}")
    return 0


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (the main CLI calls `register` instead)."""
    parser = argparse.ArgumentParser(prog="clawviz")
    parser.add_argument("--db", default=None)
    parser.add_argument("--json", action="store_true")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)
