"""CLI sub-commands for benchmark tasks: `tasks` (the review queue), `review` (sign-off),
`diagnose` (LLM diagnosis) and `findings` (its findings and verdicts)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from clawviz.cli.common import add_common, settings_of
from clawviz.settings import positive_seconds

# The sign-off decisions (clawviz.review.signoff.DECISIONS, which imports the ORM): written out
# so building the parser stays lean; tests/test_cli_lean.py checks the two agree.
DECISIONS = ("accept", "revise", "reject")


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add `tasks`, `review`, `diagnose` and `findings` to the clawviz argparse tree (`common`:
    --db, --json, --set)."""
    p = subparsers.add_parser(
        "tasks", parents=[common], help="benchmark tasks: status and difficulty filter"
    )
    p.set_defaults(func=cmd_tasks)

    r = subparsers.add_parser(
        "review", parents=[common], help="record a sign-off decision for a task"
    )
    r.add_argument("task_id", help="task id")
    r.add_argument("--decision", required=True, choices=DECISIONS)
    r.add_argument("--reviewer", required=True, help="who decides")
    r.add_argument("--note", default="", help="why")
    r.set_defaults(func=cmd_review)

    d = subparsers.add_parser(
        "diagnose", parents=[common], help="LLM diagnosis of tasks (ClawGym-Bench review)"
    )
    d.add_argument("task_ids", nargs="*", help="task ids")
    d.add_argument("--all-pending", action="store_true", help="every task not yet signed off")
    d.add_argument("--base-url", required=True, help="OpenAI-compatible (or Anthropic) base URL")
    d.add_argument("--model", required=True, help="model name")
    d.add_argument("--api", choices=("openai", "anthropic"), default="openai")
    d.add_argument("--api-key-env", default=None, help="environment variable holding the key")
    d.add_argument("--concurrency", type=int, default=4, help="requests in flight at once")
    d.add_argument(
        "--timeout",
        type=positive_seconds,
        default=120.0,
        help="total seconds per request, however slowly the server sends",
    )
    d.add_argument("--file-budget", type=int, default=40_000, help="characters of input files")
    d.set_defaults(func=cmd_diagnose)

    f = subparsers.add_parser(
        "findings", parents=[common], help="a task's diagnosis findings and their verdicts"
    )
    f.add_argument("task_id", help="task id")
    f.set_defaults(func=cmd_findings)


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Diagnose tasks through a model endpoint and store the findings."""
    from clawviz.review import (
        DiagnosisError,
        Endpoint,
        diagnose_tasks,
        save_diagnosis,
        task_detail,
        task_queue,
    )
    from clawviz.store import session_scope

    settings = settings_of(args)
    ep = Endpoint(
        base_url=args.base_url, model=args.model, api=args.api, api_key_env=args.api_key_env,
        timeout_s=args.timeout, max_findings=settings.diagnose_max_findings,
    )  # fmt: skip
    with session_scope(getattr(args, "db", None)) as session:
        ids = list(args.task_ids)
        if args.all_pending:
            ids += [r.task_id for r in task_queue(session, settings) if r.status == "pending"]
        details = []
        for tid in dict.fromkeys(ids):
            detail = task_detail(session, tid, settings)
            if detail is None:
                print(f"error: no task {tid!r} in the store", file=sys.stderr)
                return 2
            details.append(detail)
        if not details:
            print("error: no task given (task ids or --all-pending)", file=sys.stderr)
            return 2

        def progress(done: int, total: int, d: Any) -> None:
            what = d.error or f"{len(d.findings)} finding(s)"
            print(f"[{done}/{total}] {d.task_id}: {what}", file=sys.stderr)

        try:
            results = diagnose_tasks(
                details, ep, concurrency=args.concurrency, file_budget=args.file_budget,
                progress=progress,
            )  # fmt: skip
        except DiagnosisError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for d in results:
            save_diagnosis(session, d)
    out = [
        {"task_id": d.task_id, "findings": len(d.findings), "error": d.error,
         "input_tokens": d.input_tokens, "output_tokens": d.output_tokens,
         "attempts": d.attempts, "prompt_hash": d.prompt_hash}
        for d in results
    ]  # fmt: skip
    if getattr(args, "json", False):
        print(json.dumps(out, indent=2))
    else:
        for o in out:
            tokens = f"{o['input_tokens'] or 0} in / {o['output_tokens'] or 0} out tokens"
            print(f"{o['task_id']}: {o['error'] or str(o['findings']) + ' finding(s)'}; {tokens}")
    return 1 if any(d.error for d in results) else 0


def cmd_findings(args: argparse.Namespace) -> int:
    """List a task's findings with their verdicts."""
    from clawviz.review import list_findings
    from clawviz.store import session_scope

    with session_scope(getattr(args, "db", None)) as session:
        rows = list_findings(session, args.task_id)
        out = [
            {"id": f.id, "area": f.area, "severity": f.severity, "problem": f.problem,
             "suggestion": f.suggestion, "model": f.model, "prompt_hash": f.prompt_hash,
             "created_at": f.created_at.isoformat() if f.created_at else None,
             "verdict": f.verdict, "verdict_note": f.verdict_note, "verdict_by": f.verdict_by}
            for f in rows
        ]  # fmt: skip
    if getattr(args, "json", False):
        print(json.dumps(out, indent=2))
        return 0
    if not out:
        print(f"no findings for {args.task_id}")
    for o in out:
        verdict = o["verdict"] or "open"
        print(f"#{o['id']} [{o['severity']}] {o['area']}: {o['problem']}  ({verdict})")
        if o["suggestion"]:
            print(f"    fix: {o['suggestion']}")
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    """Print the task queue as a table or as JSON."""
    from clawviz.review import task_queue, verdict_label
    from clawviz.store import session_scope

    with session_scope(getattr(args, "db", None)) as session:
        rows = task_queue(session, settings_of(args))
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
    from clawviz.review import ReviewError, add_review
    from clawviz.store import session_scope

    with session_scope(getattr(args, "db", None)) as session:
        try:
            row = add_review(
                session,
                args.task_id,
                args.decision,
                args.reviewer,
                args.note,
                require_known_task=True,
            )
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
    add_common(parser, top=True)
    common = argparse.ArgumentParser(add_help=False)
    add_common(common)
    register(parser.add_subparsers(dest="command", required=True), common)
    args = parser.parse_args(argv)
    return args.func(args)
