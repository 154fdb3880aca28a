"""Options every CLI command takes: `--db`, `--json` and `--set name=value` (repeatable).

`--set` reads the typed settings table (`clawviz.settings`), so every command takes every
setting by the same name the Settings page and the README use.
"""

from __future__ import annotations

import argparse
import re
import sys

from clawviz.settings import DEFAULT_SETTINGS, SETTINGS, Settings, allowed, parse_assignment

# C0 controls but tab and newline, DEL, C1 controls (ESC, CSI, OSC...), and the Unicode
# bidirectional overrides and isolates that reorder what a terminal shows.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    if c == "\r":
        return "\\r"
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def visible(text: str) -> str:
    """Text safe for a terminal: control characters and escape sequences shown as visible
    escapes (`\\x1b`, `\\r`, `\\u202e`); newlines and tabs are kept."""
    return _UNSAFE.sub(_escape, text)


SET_HELP = (
    "override a setting, e.g. --set max_leaves=12 (repeatable; `clawviz settings` lists "
    + (", ".join(s.name for s in SETTINGS if s.editable))
    + ")"
)


def add_common(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """Add --db, --json and --set; on a sub-command they default to SUPPRESS so that the same
    options given before the sub-command are not clobbered."""
    default = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--db", default=default, help="store URL (default: settings / CLAWVIZ_DATABASE_URL)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="JSON output",
    )
    parser.add_argument(
        "--set",
        dest="set",
        action="append",
        metavar="NAME=VALUE",
        default=[] if top else argparse.SUPPRESS,
        help=SET_HELP,
    )


def settings_of(args: argparse.Namespace) -> Settings:
    """DEFAULT_SETTINGS with the command line's --set values (raises SettingsError, also for a
    bad CLAWVIZ_* environment variable)."""
    from clawviz.settings import ENV_ERROR, SettingsError

    if ENV_ERROR:
        raise SettingsError(ENV_ERROR)
    changes = dict(parse_assignment(a) for a in getattr(args, "set", None) or [])
    return DEFAULT_SETTINGS.with_(**changes)


def add_scale_out(
    p: argparse.ArgumentParser,
    *,
    workers_help: str,
    engine_help: str,
    ray_help: str,
    workers_default: int | None = None,
    engine_default: str | None = None,
) -> None:
    """The `--workers N`, `--engine process|ray` and `--ray-address` flags `ingest`, `analyse`
    and `export` share (each with its own help and defaults); `scale_out_error` checks them."""
    p.add_argument("--workers", type=int, default=workers_default, help=workers_help)
    p.add_argument("--engine", choices=("process", "ray"), default=engine_default, help=engine_help)
    p.add_argument("--ray-address", default=None, help=ray_help)


def scale_out_error(args: argparse.Namespace) -> str | None:
    """Why the scale-out flags cannot run together (None: they can)."""
    if args.workers is not None and args.workers < 1:
        return "--workers must be at least 1"
    if args.ray_address and args.engine != "ray":
        return "--ray-address needs --engine ray"
    return None


__all__ = ["add_common", "add_scale_out", "allowed", "scale_out_error", "settings_of"]


EXIT_OK = 0
EXIT_FATAL = 1
EXIT_REJECTED = 2


class ProgressBar:
    """A one-line progress bar on stderr (only used when stderr is a terminal)."""

    def __init__(self, width: int = 30) -> None:
        self.width = width
        self.last = -1

    def __call__(self, done: int, total: int, msg: str) -> None:
        frac = done / total if total else 1.0
        pct = int(frac * 100)
        if pct == self.last:
            return
        self.last = pct
        filled = int(frac * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        sys.stderr.write(f"\r[{bar}] {pct:3d}% {msg[-40:]:<40}")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()
