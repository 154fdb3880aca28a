"""The one settings table: every tunable with its default and help text.

The CLI, the app and the docs all read `SETTINGS`; decisions record the settings that produced
them through `settings_hash`. A setting that does not change decisions can also be set by the
environment variable CLAWVIZ_<NAME> (e.g. CLAWVIZ_CHECKER_ALLOW_UNSANDBOXED=1,
CLAWVIZ_MAX_LINE_BYTES=1048576).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Setting:
    """One tunable: name, default value, help text, and whether it changes decisions."""

    name: str
    default: Any
    help: str
    affects_decisions: bool = True


_DEFAULT_DB = Path(os.environ.get("CLAWVIZ_HOME", Path.home() / ".clawviz")) / "clawviz.db"

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "database_url",
        f"sqlite:///{_DEFAULT_DB}",
        "SQLAlchemy URL of the store. Env var CLAWVIZ_DATABASE_URL overrides it.",
        affects_decisions=False,
    ),
    Setting(
        "max_leaves",
        8,
        "An episode whose main segment trees have more leaves than this (after retries are "
        "removed) is dropped as too_many_branches. The paper does not disclose its value.",
    ),
    Setting(
        "branch_policy",
        "longest",
        "'longest' keeps one root-to-leaf path per segment (most generated tokens); "
        "'all_valid' keeps every valid path (PPO on the tree).",
    ),
    Setting(
        "unsupported_tools",
        ("canvas",),
        "A main call that uses one of these tools drops the episode (unsupported_tool).",
    ),
    Setting(
        "reward_threshold",
        0.5,
        "Episodes with reward below this are dropped for SFT selection (below_reward_threshold).",
    ),
    Setting(
        "grpo_leave_one_out",
        False,
        "GRPO baseline: mean of the other attempts in the group instead of the whole group.",
    ),
    Setting(
        "grpo_no_std",
        False,
        "Dr. GRPO: do not divide the advantage by the group's standard deviation.",
    ),
    Setting(
        "grpo_eps",
        1e-6,
        "Added to sigma in A_i = (R_i - mu) / (sigma + eps); groups with sigma < eps get 0.",
    ),
    Setting(
        "is_ratio_cap",
        2.0,
        "C in the truncated importance ratio min(exp(logp_train - logp_rollout), C).",
    ),
    Setting(
        "reward_weights",
        None,
        "Optional {'checks': w, 'rubric': w} weights combining check mean and rubric score.",
    ),
    Setting(
        "max_line_bytes",
        64 * 1024 * 1024,
        "Longest log line read, in bytes; a longer line is rejected while streaming (never held "
        "in memory whole).",
        affects_decisions=False,
    ),
    Setting(
        "gzip_max_bytes",
        16 * 1024 * 1024 * 1024,
        "Decompression budget of one .gz file, in bytes; lines past it are not read.",
        affects_decisions=False,
    ),
    Setting(
        "checker_timeout_s",
        60,
        "Time limit for running a task's checker in a separate process.",
        affects_decisions=False,
    ),
    Setting(
        "checker_allow_unsandboxed",
        False,
        "Where bubblewrap cannot run, run checkers anyway in the weaker process-group mode "
        "(no namespaces: a checker can read files, environment and network). Shown as a warning.",
        affects_decisions=False,
    ),
    Setting(
        "checker_python",
        "/usr/bin/python3",
        "Interpreter for checkers inside the sandbox (falls back to the app's own Python).",
        affects_decisions=False,
    ),
    Setting(
        "checker_max_memory_mb",
        1024,
        "Address-space limit (RLIMIT_AS) of a checker, in MB.",
        affects_decisions=False,
    ),
    Setting(
        "checker_max_processes",
        64,
        "Process limit (RLIMIT_NPROC) inside a checker's sandbox.",
        affects_decisions=False,
    ),
    Setting(
        "checker_max_file_mb",
        64,
        "Largest file a checker may write (RLIMIT_FSIZE), and the size of its private /tmp, in MB.",
        affects_decisions=False,
    ),
    Setting(
        "checker_max_output_bytes",
        1_000_000,
        "Bytes of a checker's stdout/stderr tail kept (plus a 64 KB head); scores are parsed "
        "from the tail.",
        affects_decisions=False,
    ),
    Setting(
        "workspace_roots",
        (),
        "Folders a results.jsonl line may name workspaces under besides the results file's own "
        "folder (env CLAWVIZ_WORKSPACE_ROOTS adds more, separated by ':').",
        affects_decisions=False,
    ),
    Setting(
        "archive_max_bytes",
        512 * 1024 * 1024,
        "Largest total uncompressed size an archive may extract to.",
        affects_decisions=False,
    ),
    Setting(
        "archive_max_files",
        20000,
        "Largest number of entries an archive may extract.",
        affects_decisions=False,
    ),
    Setting(
        "diagnose_base_url",
        "http://127.0.0.1:8000/v1",
        "Endpoint of the model that diagnoses tasks (OpenAI-compatible, or Anthropic Messages).",
        affects_decisions=False,
    ),
    Setting(
        "diagnose_model",
        "",
        "Model name sent to the diagnosis endpoint.",
        affects_decisions=False,
    ),
    Setting(
        "diagnose_api",
        "openai",
        "'openai' (Chat Completions: vLLM, SGLang, LiteLLM, hosted) or 'anthropic' (Messages).",
        affects_decisions=False,
    ),
    Setting(
        "diagnose_api_key_env",
        "",
        "Environment variable holding the diagnosis API key (empty: no key). Keys are read from "
        "the environment only, never stored or shown.",
        affects_decisions=False,
    ),
    Setting(
        "diagnose_timeout_s",
        120.0,
        "Time limit of one diagnosis request (the SDK also retries 429 / 5xx answers).",
        affects_decisions=False,
    ),
    Setting(
        "diagnose_file_budget",
        40000,
        "Characters of input-file contents a diagnosis prompt may hold (the rest is truncated "
        "with a note; the whole file tree is always listed).",
        affects_decisions=False,
    ),
    Setting(
        "diagnose_concurrency",
        4,
        "Diagnosis requests in flight at once (CLI --concurrency and the queue's Diagnose).",
        affects_decisions=False,
    ),
)

SETTINGS_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


@dataclass(frozen=True)
class Settings:
    """Resolved values of the settings table (defaults overridden by keyword)."""

    values: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        if name == "values":
            raise AttributeError(name)
        if name in self.values:
            return self.values[name]
        if name in SETTINGS_BY_NAME:
            setting = SETTINGS_BY_NAME[name]
            if not setting.affects_decisions and name != "database_url":
                env = os.environ.get(f"CLAWVIZ_{name.upper()}")
                if env is not None:
                    return _from_env(env, setting.default)
            return setting.default
        raise AttributeError(name)

    def with_(self, **changes: Any) -> Settings:
        unknown = set(changes) - set(SETTINGS_BY_NAME)
        if unknown:
            raise KeyError(f"unknown settings: {sorted(unknown)}")
        return Settings({**self.values, **changes})

    def decision_values(self) -> dict[str, Any]:
        """The values that change decisions, with defaults filled in."""
        return {s.name: _jsonable(getattr(self, s.name)) for s in SETTINGS if s.affects_decisions}

    @property
    def settings_hash(self) -> str:
        blob = json.dumps(self.decision_values(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def resolved_database_url(self) -> str:
        return os.environ.get("CLAWVIZ_DATABASE_URL") or self.database_url


_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)(?P<pw>[^\s@]*)@")


def mask_secrets(text: str) -> str:
    """Text with the password of every URL in it replaced by ***
    (`postgresql://u:pw@host/db` -> `postgresql://u:***@host/db`)."""
    return _URL_PASSWORD.sub(lambda m: f"{m['head']}***@", text)


def masked_url(url: str) -> str:
    """A store URL fit to show: password masked (sidebar, `clawviz settings`, logs, errors)."""
    return mask_secrets(url)


def _from_env(text: str, default: Any) -> Any:
    """A setting's value from its environment variable (CLAWVIZ_<NAME>): JSON, else the text;
    booleans also as 1/0, true/false, yes/no."""
    if isinstance(default, bool):
        return text.strip().lower() in ("1", "true", "yes", "on")
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return tuple(value) if isinstance(default, tuple) and isinstance(value, list) else value


def _jsonable(v: Any) -> Any:
    if isinstance(v, (tuple, list, set, frozenset)):
        return sorted(v) if isinstance(v, (set, frozenset)) else list(v)
    return v


DEFAULT_SETTINGS = Settings()
