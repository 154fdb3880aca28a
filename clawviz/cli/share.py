"""`python -m clawviz share EPISODE --out FILE.html [--redact] [--plain]`: the Episode explorer
as one self-contained offline HTML file (data and code inline, no server, no network; the data
gzipped unless --plain; issue 25)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from clawviz.cli.common import settings_of


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add `share` to the clawviz argparse tree (`common`: --db, --json, --set)."""
    p = subparsers.add_parser(
        "share",
        parents=[common],
        help="write one episode's explorer as one self-contained HTML file",
        description="Write the Episode explorer of one episode (tree, inspector, diffs, "
        "decisions) as one HTML file that opens from disk with no server and no network.",
    )
    p.add_argument("episode_id")
    p.add_argument("--out", required=True, help="output file (.html)")
    p.add_argument(
        "--redact", action="store_true", help="leave out system prompts and tool results"
    )
    p.add_argument(
        "--plain", action="store_true",
        help="embed the data as readable JSON instead of gzipped (greppable, about 5x larger; "
        "for a browser without DecompressionStream)",
    )  # fmt: skip
    p.set_defaults(func=cmd_share)


def cmd_share(args: argparse.Namespace) -> int:
    from clawviz.figures import share_html
    from clawviz.jobs import load_payload
    from clawviz.store import session_scope

    settings = settings_of(args)
    with session_scope(args.db) as session:
        try:
            payload = load_payload(session, args.episode_id, settings, redact=args.redact)
        except KeyError:
            print(f"error: no episode {args.episode_id!r} in the store", file=sys.stderr)
            return 1
    out = Path(args.out)
    text = share_html(payload, compress=not args.plain)
    out.write_text(text, encoding="utf-8")
    print(
        f"wrote {out} ({len(text.encode('utf-8')):,} bytes, {len(payload['calls'])} calls"
        + (", redacted" if args.redact else "")
        + ")"
    )
    return 0
