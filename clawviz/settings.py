"""The one settings table: a frozen, hashable dataclass whose fields carry default, help, bounds.

Everything else is derived from the fields of `Settings`: the Settings page form
(`clawviz.ui.settings_form`), the CLI's `--set name=value` (`parse_assignment`), the README
table (`readme_table`, checked by tests/test_project.py) and the cache key (`settings_hash`, over
the fields whose `affects_decisions` is true). Values are validated on construction, so
`DEFAULT_SETTINGS.with_(max_leaves="9")` raises `SettingsError` naming the setting. A setting
that changes no decision can also be given as the environment variable CLAWVIZ_<NAME>
(`env_overrides`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Kind = Literal["int", "float", "bool", "str", "choice", "names", "weights", "prices"]


class SettingsError(ValueError):
    """A setting value of the wrong type or outside its bounds; the message names the setting."""


@dataclass(frozen=True)
class Setting:
    """One tunable as the form, the CLI and the docs see it (built from a `Settings` field)."""

    name: str
    default: Any
    help: str
    affects_decisions: bool = True
    kind: Kind = "str"
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    editable: bool = True
    """Shown as a widget on the Settings page (the store URL is not: it is chosen at start)."""


class Weights(Mapping[str, float]):
    """Frozen, hashable `{'checks': w, 'rubric': w}` (a dict is converted on construction)."""

    KEYS = ("checks", "rubric")

    def __init__(self, items: Mapping[str, Any]) -> None:
        self._items = {str(k): float(v) for k, v in items.items()}

    def __getitem__(self, key: str) -> float:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._items.items())))

    def __repr__(self) -> str:
        return repr(self._items)


@dataclass(frozen=True)
class Price:
    """Prices per million tokens of the models whose name matches `pattern` (a glob, `*` and
    `?`, case-insensitive): input (not cached), output, cache read, cache write."""

    pattern: str
    input: float
    output: float
    cache_read: float
    cache_write: float

    FIELDS = ("input", "output", "cache_read", "cache_write")

    def text(self) -> str:
        return self.pattern + "=" + "/".join(f"{getattr(self, k):g}" for k in self.FIELDS)


class Prices(tuple[Price, ...]):
    """The price table: the first row whose pattern matches a model prices its calls.
    Its text form (CLI `--set`, env CLAWVIZ_PRICES, the Settings form) is
    `claude-sonnet-4*=3/15/0.3/3.75; gpt-4o*=2.5/10/1.25/0`."""

    def __str__(self) -> str:
        return "; ".join(p.text() for p in self)

    def __repr__(self) -> str:
        return repr(str(self))

    def price_for(self, model: str | None) -> Price | None:
        """The first row whose pattern matches `model` (None: no model or no row matches)."""
        if not model:
            return None
        import fnmatch

        name = model.lower()
        return next((p for p in self if fnmatch.fnmatchcase(name, p.pattern.lower())), None)


def _meta(
    help: str,
    kind: Kind,
    *,
    affects_decisions: bool = True,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] = (),
    editable: bool = True,
) -> dict[str, Any]:
    return {
        "help": help,
        "kind": kind,
        "affects_decisions": affects_decisions,
        "minimum": minimum,
        "maximum": maximum,
        "choices": choices,
        "editable": editable,
    }


_DEFAULT_DB = Path(os.environ.get("CLAWVIZ_HOME", Path.home() / ".clawviz")) / "clawviz.db"


@dataclass(frozen=True)
class Settings:
    """Resolved values of every setting; `with_(**changes)` returns a validated copy."""

    database_url: str = field(
        default=f"sqlite:///{_DEFAULT_DB}",
        metadata=_meta(
            "SQLAlchemy URL of the store. Env var CLAWVIZ_DATABASE_URL overrides it.",
            "str",
            affects_decisions=False,
            editable=False,
        ),
    )
    max_leaves: int = field(
        default=8,
        metadata=_meta(
            "An episode whose main segment trees have more leaves than this (after retries are "
            "removed) is dropped as too_many_branches. The paper does not disclose its value.",
            "int",
            minimum=1,
            maximum=10_000,
        ),
    )
    branch_policy: str = field(
        default="longest",
        metadata=_meta(
            "'longest' keeps one root-to-leaf path per segment (most generated tokens); "
            "'all_valid' keeps every valid path (PPO on the tree).",
            "choice",
            choices=("longest", "all_valid"),
        ),
    )
    drop_unexplained_root: bool = field(
        default=True,
        metadata=_meta(
            "The self-check (PIPELINE §2) flags an episode whose tree the rules cannot explain "
            "(a second main root with no compaction, retry or session boundary before it; a "
            "compaction continuation with no summary link) as unexplained_root. On: such an "
            "episode is dropped (training on a wrongly rebuilt tree is worse than dropping it). "
            "Off: the reason is still listed, the episode is kept.",
            "bool",
        ),
    )
    max_unexplained_edits: int = field(
        default=1,
        metadata=_meta(
            "A kept call whose history differs from its parent's request plus reply in a way no "
            "edit rule explains (recon.edits) is flagged unexplained_edit. An episode with more "
            "such kept calls than this is dropped; up to this many, the flag is listed and the "
            "episode kept (0: any such call drops it).",
            "int",
            minimum=0,
            maximum=10_000,
        ),
    )
    unsupported_tools: tuple[str, ...] = field(
        default=("canvas",),
        metadata=_meta(
            "A main call that uses one of these tools drops the episode (unsupported_tool).",
            "names",
        ),
    )
    reward_threshold: float = field(
        default=0.5,
        metadata=_meta(
            "Episodes with reward below this are dropped for SFT selection "
            "(below_reward_threshold).",
            "float",
            minimum=0.0,
            maximum=1.0,
        ),
    )
    grpo_leave_one_out: bool = field(
        default=False,
        metadata=_meta(
            "GRPO baseline: mean of the other attempts in the group instead of the whole group.",
            "bool",
        ),
    )
    grpo_no_std: bool = field(
        default=False,
        metadata=_meta(
            "Dr. GRPO: do not divide the advantage by the group's standard deviation.", "bool"
        ),
    )
    grpo_eps: float = field(
        default=1e-6,
        metadata=_meta(
            "Added to sigma in A_i = (R_i - mu) / (sigma + eps); groups with sigma < eps get 0.",
            "float",
            minimum=0.0,
            maximum=1.0,
        ),
    )
    is_ratio_cap: float = field(
        default=2.0,
        metadata=_meta(
            "C in the truncated importance ratio min(exp(logp_train - logp_rollout), C).",
            "float",
            minimum=1.0,
            maximum=1000.0,
        ),
    )
    reward_weights: Weights | None = field(
        default=None,
        metadata=_meta(
            "Optional {'checks': w, 'rubric': w} weights combining check mean and rubric score.",
            "weights",
            minimum=0.0,
        ),
    )
    difficulty_strong_min: float = field(
        default=0.2,
        metadata=_meta(
            "Difficulty filter (ClawGym-Bench): a task passes only if the strong model's mean "
            "reward is at least this.",
            "float",
            affects_decisions=False,
            minimum=0.0,
            maximum=1.0,
        ),
    )
    difficulty_small_max: float = field(
        default=0.6,
        metadata=_meta(
            "Difficulty filter: a task passes only if the small model's mean reward is at most "
            "this.",
            "float",
            affects_decisions=False,
            minimum=0.0,
            maximum=1.0,
        ),
    )
    checker_timeout_s: int = field(
        default=60,
        metadata=_meta(
            "Time limit for running a task's checker in a separate process.",
            "int",
            affects_decisions=False,
            minimum=1,
            maximum=86_400,
        ),
    )
    archive_max_bytes: int = field(
        default=512 * 1024 * 1024,
        metadata=_meta(
            "Largest total uncompressed size an archive may extract to.",
            "int",
            affects_decisions=False,
            minimum=1,
        ),
    )
    archive_max_files: int = field(
        default=20000,
        metadata=_meta(
            "Largest number of entries an archive may extract.",
            "int",
            affects_decisions=False,
            minimum=1,
        ),
    )

    max_line_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata=_meta(
            "Longest log line, in bytes. Ingest rejects a longer line while streaming (never "
            "held in memory whole); `clawviz record` logs an exchange past it with its body cut "
            "and marked (`truncated_body`), and forwards it whole.",
            "int",
            affects_decisions=False,
            minimum=1024,
        ),
    )
    gzip_max_bytes: int = field(
        default=16 * 1024 * 1024 * 1024,
        metadata=_meta(
            "Decompression budget of one .gz file, in bytes; lines past it are not read.",
            "int",
            affects_decisions=False,
            minimum=1024,
        ),
    )
    checker_allow_unsandboxed: bool = field(
        default=False,
        metadata=_meta(
            "Where bubblewrap cannot run, run checkers anyway in the weaker process-group mode "
            "(no namespaces: a checker can read files, environment and network). Shown as a "
            "warning.",
            "bool",
            affects_decisions=False,
        ),
    )
    checker_python: str = field(
        default="/usr/bin/python3",
        metadata=_meta(
            "Interpreter for checkers inside the sandbox (falls back to the app's own Python).",
            "str",
            affects_decisions=False,
        ),
    )
    checker_max_memory_mb: int = field(
        default=1024,
        metadata=_meta(
            "Address-space limit (RLIMIT_AS) of a checker, in MB.",
            "int",
            affects_decisions=False,
            minimum=16,
        ),
    )
    checker_max_processes: int = field(
        default=64,
        metadata=_meta(
            "Process limit (RLIMIT_NPROC) inside a checker's sandbox.",
            "int",
            affects_decisions=False,
            minimum=1,
        ),
    )
    checker_max_file_mb: int = field(
        default=64,
        metadata=_meta(
            "Largest file a checker may write (RLIMIT_FSIZE), in MB.",
            "int",
            affects_decisions=False,
            minimum=1,
        ),
    )
    sandbox_workspace_max_bytes: int = field(
        default=1024 * 1024 * 1024,
        metadata=_meta(
            "Size of the checker's writable workspace copy (a tmpfs in RAM inside the sandbox, "
            "never on the host disk), in bytes; the copy and the checker's writes share it.",
            "int",
            affects_decisions=False,
            minimum=1024 * 1024,
        ),
    )
    sandbox_workspace_max_files: int = field(
        default=50_000,
        metadata=_meta(
            "Entries (files, folders, links) the checker's workspace copy may hold, its own "
            "included (the tmpfs inode limit).",
            "int",
            affects_decisions=False,
            minimum=16,
        ),
    )
    sandbox_tmp_max_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata=_meta(
            "Size of the checker's private /tmp, and separately of its /dev/shm (tmpfs in RAM), "
            "in bytes.",
            "int",
            affects_decisions=False,
            minimum=1024 * 1024,
        ),
    )
    sandbox_tmp_max_files: int = field(
        default=10_000,
        metadata=_meta(
            "Entries the checker's /tmp, and separately its /dev/shm, may hold (tmpfs inodes).",
            "int",
            affects_decisions=False,
            minimum=16,
        ),
    )
    checker_max_output_bytes: int = field(
        default=1_000_000,
        metadata=_meta(
            "Bytes of a checker's stdout/stderr tail kept (plus a 64 KB head); scores are parsed "
            "from the tail.",
            "int",
            affects_decisions=False,
            minimum=1024,
        ),
    )
    workspace_roots: tuple[str, ...] = field(
        default=(),
        metadata=_meta(
            "Folders a results.jsonl line may name workspaces under besides the results file's "
            "own folder (env CLAWVIZ_WORKSPACE_ROOTS adds more, separated by ':').",
            "names",
            affects_decisions=False,
        ),
    )
    require_solvable_for_accept: bool = field(
        default=False,
        metadata=_meta(
            "A task can be accepted only after its checker scored 1.0 on a reference solution "
            "workspace (verifiable solvability, PIPELINE 7).",
            "bool",
            affects_decisions=False,
        ),
    )
    diagnose_base_url: str = field(
        default="http://127.0.0.1:8000/v1",
        metadata=_meta(
            "Endpoint of the model that diagnoses tasks (OpenAI-compatible, or Anthropic "
            "Messages).",
            "str",
            affects_decisions=False,
        ),
    )
    diagnose_model: str = field(
        default="",
        metadata=_meta(
            "Model name sent to the diagnosis endpoint.", "str", affects_decisions=False
        ),
    )
    diagnose_api: str = field(
        default="openai",
        metadata=_meta(
            "'openai' (Chat Completions: vLLM, SGLang, LiteLLM, hosted) or 'anthropic' (Messages).",
            "choice",
            affects_decisions=False,
            choices=("openai", "anthropic"),
        ),
    )
    diagnose_api_key_env: str = field(
        default="",
        metadata=_meta(
            "Environment variable holding the diagnosis API key (empty: no key). Keys are read "
            "from the environment only, never stored or shown.",
            "str",
            affects_decisions=False,
        ),
    )
    diagnose_timeout_s: float = field(
        default=120.0,
        metadata=_meta(
            "Total deadline of one diagnosis request, its SDK retries of 429 / 5xx answers "
            "included, however slowly the server sends.",
            "float",
            affects_decisions=False,
            minimum=1.0,
            maximum=3600.0,
        ),
    )
    diagnose_max_findings: int = field(
        default=200,
        metadata=_meta(
            "Findings kept from one diagnosis answer; the rest are dropped and counted (an "
            "answer once held 20,000).",
            "int",
            affects_decisions=False,
            minimum=1,
            maximum=10000,
        ),
    )
    diagnose_file_budget: int = field(
        default=40000,
        metadata=_meta(
            "Characters of input-file contents a diagnosis prompt may hold (the rest is "
            "truncated with a note; the whole file tree is always listed).",
            "int",
            affects_decisions=False,
            minimum=0,
        ),
    )
    diagnose_concurrency: int = field(
        default=4,
        metadata=_meta(
            "Diagnosis requests in flight at once (CLI --concurrency and the queue's Diagnose).",
            "int",
            affects_decisions=False,
            minimum=1,
            maximum=64,
        ),
    )

    prices: Prices = field(
        default=Prices(),
        metadata=_meta(
            "Prices per million tokens for the cost of a call and of an episode, from the usage "
            "the server reported: rows `model-glob=input/output/cache_read/cache_write`, "
            "separated by ';', the first matching row wins (e.g. "
            "`claude-sonnet-4*=3/15/0.3/3.75; gpt-4o*=2.5/10/1.25/0`). Input is the uncached "
            "input (OpenAI's prompt tokens less their cached ones). Empty: no cost is shown; a "
            "model no row matches has no cost, never a guessed one.",
            "prices",
            affects_decisions=False,
            minimum=0.0,
        ),
    )

    read_only: bool = field(
        default=False,
        metadata=_meta(
            "A read-only deployment for viewers: the app hides Ingest (uploads and server-side "
            "paths), changing settings, checker runs and diagnosis runs, with a note why. "
            "Sign-off and finding verdicts stay (reviewers' work). Set at start with "
            "CLAWVIZ_READ_ONLY=true; not editable in the app.",
            "bool",
            affects_decisions=False,
            editable=False,
        ),
    )
    trusted_user_header: str = field(
        default="",
        metadata=_meta(
            "HTTP header naming the signed-in user, set by a trusted reverse proxy (e.g. "
            "X-Forwarded-User from oauth2-proxy, Remote-User): the sign-off reviewer is that "
            "user, not editable. Empty: headers are ignored and reviewers type a name. Only "
            "set it when every request passes through that proxy. Env "
            "CLAWVIZ_TRUSTED_USER_HEADER; not editable in the app.",
            "str",
            affects_decisions=False,
            editable=False,
        ),
    )

    def __post_init__(self) -> None:
        for s in SETTINGS:
            object.__setattr__(self, s.name, _validate(s, getattr(self, s.name)))

    def with_(self, **changes: Any) -> Settings:
        """A copy with `changes` applied; unknown names and bad values raise SettingsError."""
        unknown = set(changes) - set(SETTINGS_BY_NAME)
        if unknown:
            raise SettingsError(f"unknown settings: {sorted(unknown)}")
        return dataclasses.replace(self, **changes)

    def decision_values(self) -> dict[str, Any]:
        """The values that change decisions, with defaults filled in."""
        return {s.name: _jsonable(getattr(self, s.name)) for s in SETTINGS if s.affects_decisions}

    def overrides(self) -> dict[str, Any]:
        """The settings whose value differs from the default."""
        return {
            s.name: getattr(self, s.name) for s in SETTINGS if getattr(self, s.name) != s.default
        }

    @functools.cached_property
    def settings_hash(self) -> str:
        """The cache key of decisions: a hash of `decision_values` (computed once: the
        settings are frozen, and an export asks for it once per episode)."""
        blob = json.dumps(self.decision_values(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def resolved_database_url(self) -> str:
        return os.environ.get("CLAWVIZ_DATABASE_URL") or self.database_url


def _bounds(s: Setting, v: float) -> None:
    if s.minimum is not None and v < s.minimum:
        raise SettingsError(f"setting {s.name}: {v!r} is below the minimum {s.minimum!r}")
    if s.maximum is not None and v > s.maximum:
        raise SettingsError(f"setting {s.name}: {v!r} is above the maximum {s.maximum!r}")


def _number(s: Setting, value: Any, want: type) -> Any:
    ok = isinstance(value, (int, float) if want is float else int) and not isinstance(value, bool)
    if not ok:
        raise SettingsError(
            f"setting {s.name} takes {'a number' if want is float else 'an integer'}, "
            f"not {type(value).__name__} {value!r}"
        )
    if want is float:
        value = float(value)
        if not math.isfinite(value):
            raise SettingsError(f"setting {s.name}: {value!r} is not a finite number")
    _bounds(s, value)
    return value


def _weights(s: Setting, value: Any) -> Weights | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise SettingsError(f"setting {s.name} takes {{'checks': w, 'rubric': w}}, not {value!r}")
    bad = set(value) - set(Weights.KEYS)
    if bad:
        raise SettingsError(f"setting {s.name}: unknown keys {sorted(bad)} (use checks, rubric)")
    for k, w in value.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
            raise SettingsError(f"setting {s.name}: weight {k} must be a number, not {w!r}")
        _bounds(s, w)
    return value if isinstance(value, Weights) else Weights(value)


def _price_row(s: Setting, pattern: Any, values: Any) -> Price:
    if not isinstance(pattern, str) or not pattern.strip() or any(c in pattern for c in "=;"):
        raise SettingsError(f"setting {s.name}: {pattern!r} is not a model pattern")
    if isinstance(values, Mapping):
        bad = set(values) - set(Price.FIELDS)
        if bad:
            raise SettingsError(
                f"setting {s.name}: {pattern}: unknown keys {sorted(bad)} "
                f"(use {', '.join(Price.FIELDS)})"
            )
        values = [values.get(k, 0.0) for k in Price.FIELDS]
    if isinstance(values, (str, bytes)) or len(values) != 4:
        raise SettingsError(
            f"setting {s.name}: {pattern} takes 4 prices (input/output/cache_read/cache_write), "
            f"not {values!r}"
        )
    nums = [_number(s, v, float) for v in values]
    return Price(pattern.strip(), *nums)


def _prices(s: Setting, value: Any) -> Prices:
    """A price table from a Prices, a mapping pattern -> 4 prices (or a dict of them), or rows."""
    if isinstance(value, Prices):
        return value
    if isinstance(value, Price):
        value = [value]
    if isinstance(value, Mapping):
        rows = [_price_row(s, k, v) for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        pairs = [
            (v.pattern, [getattr(v, k) for k in Price.FIELDS]) if isinstance(v, Price) else v
            for v in value
        ]
        if not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
            raise SettingsError(f"setting {s.name} takes rows (pattern, 4 prices), not {value!r}")
        rows = [_price_row(s, k, v) for k, v in pairs]
    else:
        raise SettingsError(f"setting {s.name} takes a price table, not {value!r}")
    seen = [r.pattern.lower() for r in rows]
    dup = sorted({p for p in seen if seen.count(p) > 1})
    if dup:
        raise SettingsError(f"setting {s.name}: pattern {dup[0]!r} is given twice")
    return Prices(rows)


def _parse_prices(text: str) -> list[tuple[str, list[float]]]:
    rows = []
    for part in text.split(";"):
        if not part.strip():
            continue
        pattern, sep, nums = part.partition("=")
        if not sep:
            raise ValueError(part)
        rows.append((pattern.strip(), [float(n) for n in nums.split("/")]))
    return rows


def _validate(s: Setting, value: Any) -> Any:
    """`value` checked against the setting's kind and bounds (ints become floats for floats)."""
    if s.kind == "prices":
        return _prices(s, value)
    if s.kind == "int":
        return _number(s, value, int)
    if s.kind == "float":
        return _number(s, value, float)
    if s.kind == "bool":
        if not isinstance(value, bool):
            raise SettingsError(f"setting {s.name} takes true or false, not {value!r}")
        return value
    if s.kind == "names":
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise SettingsError(f"setting {s.name} takes a list of names, not {value!r}")
        return tuple(value)
    if s.kind == "weights":
        return _weights(s, value)
    if not isinstance(value, str):
        raise SettingsError(f"setting {s.name} takes text, not {type(value).__name__} {value!r}")
    if s.choices and value not in s.choices:
        raise SettingsError(f"setting {s.name}: {value!r} is not one of {', '.join(s.choices)}")
    return value


def parse_value(name: str, text: str) -> Any:
    """A setting's value from command-line text (`9`, `true`, `a,b`, `checks=1,rubric=3`)."""
    s = SETTINGS_BY_NAME.get(name)
    if s is None:
        raise SettingsError(f"unknown setting {name!r} (see `clawviz settings`)")
    text = text.strip()
    try:
        if s.kind == "int":
            return int(text)
        if s.kind == "float":
            return float(text)
        if s.kind == "bool":
            low = text.lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return low in ("true", "1", "yes")
        if s.kind == "names":
            return tuple(t.strip() for t in text.split(",") if t.strip())
        if s.kind == "prices":
            return _parse_prices(text)
        if s.kind == "weights":
            if text.lower() in ("", "none", "null"):
                return None
            pairs = [p.split("=", 1) for p in text.split(",") if p.strip()]
            return {k.strip(): float(v) for k, v in pairs}
    except ValueError as exc:
        raise SettingsError(f"setting {name}: cannot read {text!r} as {s.kind}") from exc
    return text


def positive_seconds(text: str) -> float:
    """A time limit from the command line (`--timeout`): a finite number of seconds above 0.

    Raises argparse.ArgumentTypeError with a clear message for `nan`, `inf`, `0`, `-5` or text;
    argparse shows it as `argument --timeout: ...` (use it as the argument's `type`)."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive, finite number of seconds")
    return value


def parse_assignment(text: str) -> tuple[str, Any]:
    """`name=value` (the CLI's `--set`) as a name and a typed value."""
    name, sep, value = text.partition("=")
    if not sep:
        raise SettingsError(f"--set takes name=value, not {text!r}")
    return name.strip(), parse_value(name.strip(), value)


def _jsonable(v: Any) -> Any:
    if isinstance(v, Prices):
        return str(v)
    if isinstance(v, Weights):
        return dict(v)
    if isinstance(v, (tuple, list, set, frozenset)):
        return sorted(v) if isinstance(v, (set, frozenset)) else list(v)
    return v


def _setting_of(f: dataclasses.Field[Any]) -> Setting:
    m = f.metadata
    return Setting(
        name=f.name,
        default=f.default,
        help=m["help"],
        affects_decisions=m["affects_decisions"],
        kind=m["kind"],
        minimum=m["minimum"],
        maximum=m["maximum"],
        choices=m["choices"],
        editable=m["editable"],
    )


SETTINGS: tuple[Setting, ...] = tuple(_setting_of(f) for f in dataclasses.fields(Settings))
"""Every setting in declaration order, as the form, the CLI and the README show them."""

SETTINGS_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


_README_DB = "'sqlite:///~/.clawviz/clawviz.db'"


def readme_table() -> str:
    """The README's settings table (name, default, whether it changes decisions, help)."""
    lines = [
        "| Setting | Default | Changes decisions | Allowed | Help |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in SETTINGS:
        default = (
            "'sqlite:///~/.clawviz/clawviz.db'" if s.name == "database_url" else repr(s.default)
        )
        yes = "yes" if s.affects_decisions else "no"
        lines.append(f"| `{s.name}` | `{default}` | {yes} | {allowed(s)} | {s.help} |")
    return "\n".join(lines)


def allowed(s: Setting) -> str:
    """The values a setting accepts, in words (README table, CLI help)."""
    if s.choices:
        return " or ".join(s.choices)
    if s.kind == "bool":
        return "true or false"
    if s.kind == "names":
        return "comma-separated names"
    lo = "" if s.minimum is None else f"{s.minimum:g}"
    hi = "" if s.maximum is None else f"{s.maximum:g}"
    what = {"int": "integer", "float": "number", "weights": "weights"}.get(s.kind, "text")
    if s.kind == "weights":
        return f"none or checks=w,rubric=w (w >= {lo})" if lo else "none or checks=w,rubric=w"
    if s.kind == "prices":
        return "rows glob=in/out/cache_read/cache_write separated by ; (prices >= 0)"
    if lo and hi:
        return f"{what} {lo} .. {hi}"
    if lo:
        return f"{what} >= {lo}"
    return what


_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)(?P<pw>[^\s@]*)@")


def mask_secrets(text: str) -> str:
    """Text with the password of every URL in it replaced by ***
    (`postgresql://u:pw@host/db` -> `postgresql://u:***@host/db`)."""
    return _URL_PASSWORD.sub(lambda m: f"{m['head']}***@", text)


def masked_url(url: str) -> str:
    """A store URL fit to show: password masked (sidebar, `clawviz settings`, logs, errors)."""
    return mask_secrets(url)


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Values of settings that change no decision given as CLAWVIZ_<NAME> environment variables
    (e.g. CLAWVIZ_CHECKER_ALLOW_UNSANDBOXED=1), read like `--set` values. Decision settings
    come only from the settings table, so a cache key never depends on the environment."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for s in SETTINGS:
        if s.affects_decisions or s.name == "database_url":
            continue
        text = env.get(f"CLAWVIZ_{s.name.upper()}")
        if text is not None:
            out[s.name] = parse_value(s.name, text)
    return out


def _from_environment() -> tuple[Settings, str | None]:
    """The defaults with the environment's overrides, or, when one is bad, the plain defaults and
    an error naming the variable (the CLI refuses to run with it: `settings_of`), so importing
    clawviz never ends in a traceback."""
    try:
        return Settings(**env_overrides()), None
    except SettingsError as exc:
        for s in SETTINGS:
            var = f"CLAWVIZ_{s.name.upper()}"
            if s.affects_decisions or s.name == "database_url" or var not in os.environ:
                continue
            try:
                Settings(**{s.name: parse_value(s.name, os.environ[var])})
            except SettingsError as bad:
                return Settings(), f"environment variable {var}={os.environ[var]!r}: {bad}"
        return Settings(), f"{exc} (from a CLAWVIZ_* environment variable)"


DEFAULT_SETTINGS, ENV_ERROR = _from_environment()
