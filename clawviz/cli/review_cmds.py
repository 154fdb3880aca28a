"""CLI sub-commands for what the Workspace and Tasks pages do: `diff` and `check`.

- `clawviz diff EPISODE_ID [--json]`: the attempt's before/after workspace diff, per changed
  file its path, its change (added / removed / modified / binary) and the unified diff text.
- `clawviz check TASK_ID --workspace PATH [--timeout S] [--json]`: run the task's checker in
  the sandbox on a copy of PATH (a folder or an archive) and show status, scores, reward and
  the tail of its output. Exit 0 when the checker ran and finished, 3 when it ran and timed
  out, crashed or printed no scores, 1 when it could not run (e.g. no sandbox), 2 for an
  unknown episode or task.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from clawviz.cli.common import settings_of, visible
from clawviz.settings import positive_seconds

# Lean command line (issue 14): the store and the review modules are imported inside the
# commands, so building the parser loads neither (tests/test_cli_lean.py).

EXIT_OK, EXIT_FATAL, EXIT_UNKNOWN, EXIT_CHECK_FAILED = 0, 1, 2, 3
TAIL_LINES = 40


def register(subparsers: Any) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS, help="store URL")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS)
    d = subparsers.add_parser(
        "diff", parents=[common], help="an attempt's workspace diff, per changed file"
    )
    d.add_argument("episode_id")
    d.set_defaults(func=cmd_diff)
    c = subparsers.add_parser(
        "check", parents=[common], help="run a task's checker (sandboxed) on a workspace"
    )
    c.add_argument("task_id")
    c.add_argument("--workspace", required=True, help="a folder or .zip/.tar.gz/.tgz/.tar")
    c.add_argument(
        "--timeout", type=positive_seconds, default=None, help="seconds (checker_timeout_s)"
    )
    c.set_defaults(func=cmd_check)


def diff_rows(session, episode_id: str) -> list[dict[str, Any]] | None:
    """Per changed file: path, change, line counts, unified diff text (None: unknown episode)."""
    from clawviz.review import attempt_workspaces, diff_workspaces, file_diff, open_workspace

    ws = attempt_workspaces(session, episode_id)
    if ws is None:
        return None
    if ws.before is None and ws.after is None:
        return []
    with ExitStack() as stack:
        before = stack.enter_context(open_workspace(ws.before)) if ws.before else None
        after = stack.enter_context(open_workspace(ws.after)) if ws.after else None
        rows = []
        for entry in diff_workspaces(before, after).changed:
            fd = file_diff(entry, "unified", pretty=False)
            rows.append(
                {
                    "path": entry.path,
                    "change": entry.status,
                    "lines_added": entry.lines_added,
                    "lines_removed": entry.lines_removed,
                    "notice": fd.notice,
                    "diff": fd.unified,
                }
            )
        return rows


def cmd_diff(args: argparse.Namespace) -> int:
    from clawviz.review import ArchiveError
    from clawviz.store import session_scope

    with session_scope(getattr(args, "db", None)) as session:
        try:
            rows = diff_rows(session, args.episode_id)
        except (ArchiveError, FileNotFoundError, OSError) as exc:
            print(visible(f"error: cannot open the workspace: {exc}"), file=sys.stderr)
            return EXIT_FATAL
    if rows is None:
        print(f"error: no attempt {args.episode_id!r} in the store", file=sys.stderr)
        return EXIT_UNKNOWN
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print(f"{args.episode_id}: no changed files (or no workspaces recorded)")
    for r in rows:
        counts = (
            f" (+{r['lines_added']} -{r['lines_removed']})" if r["change"] == "modified" else ""
        )
        print(visible(f"{r['change']:<9} {r['path']}{counts}"))
        if r["notice"]:
            print(visible(f"          {r['notice']}"))
        if r["diff"]:
            print(visible(r["diff"]))
    return EXIT_OK


def _tail(text: str, n: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-n:])


def cmd_check(args: argparse.Namespace) -> int:
    from clawviz.review import ArchiveError, CheckerError, run_checker
    from clawviz.store import Task, session_scope

    with session_scope(getattr(args, "db", None)) as session:
        task = session.get(Task, args.task_id)
        folder = task.folder if task is not None else None
    if task is None:
        print(f"error: no task {args.task_id!r} in the store", file=sys.stderr)
        return EXIT_UNKNOWN
    if not folder:
        print(f"error: task {args.task_id!r} has no folder with a checker", file=sys.stderr)
        return EXIT_UNKNOWN
    try:
        res = run_checker(Path(folder), args.workspace, args.timeout, settings=settings_of(args))
    except (CheckerError, ArchiveError, FileNotFoundError) as exc:
        print(visible(f"error: {exc}"), file=sys.stderr)
        return EXIT_FATAL
    out = {
        "task_id": args.task_id,
        "status": res.status,
        "message": res.message,
        "scores": res.scores,
        "reward": res.reward,
        "returncode": res.returncode,
        "duration_s": round(res.duration, 3),
        "sandbox": res.sandbox,
        "warning": res.warning,
        "stdout_tail": _tail(res.stdout),
        "stderr_tail": _tail(res.stderr),
    }
    if getattr(args, "json", False):
        print(json.dumps(out, indent=2))
    else:
        if res.warning:
            print(visible(f"WARNING: {res.warning}"))
        reward = "-" if res.reward is None else f"{res.reward:.3f}"
        print(visible(f"{args.task_id}: {res.status} · reward {reward} · {res.message}"))
        for name, score in res.scores.items():
            print(f"  {score:6.3f}  {visible(name)}")
        for label, text in (("stdout", out["stdout_tail"]), ("stderr", out["stderr_tail"])):
            if text:
                print(f"--- {label} (last {TAIL_LINES} lines) ---")
                print(visible(text))
    return EXIT_OK if res.status == "ok" else EXIT_CHECK_FAILED
