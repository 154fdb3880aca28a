"""`results.jsonl` lines (FORMATS §5): one verifier result per attempt."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import orjson

from clawviz.ingest.exchange import FormatError
from clawviz.settings import DEFAULT_SETTINGS


def is_result_record(record: Any) -> bool:
    """A results line names an episode and carries a reward or per-check scores."""
    return (
        isinstance(record, dict)
        and "episode_id" in record
        and ("reward" in record or "checks" in record)
    )


def workspace_roots() -> tuple[Path, ...]:
    """Folders outside a results file's own folder that its workspaces may name: the setting,
    plus CLAWVIZ_WORKSPACE_ROOTS read now (folders separated by ':')."""
    given = [*DEFAULT_SETTINGS.workspace_roots, os.environ.get("CLAWVIZ_WORKSPACE_ROOTS", "")]
    roots = [r for item in given for r in item.split(os.pathsep) if r]
    return tuple(Path(r).resolve() for r in roots)


def _workspace(value: Any, base_dir: Path, name: str) -> str | None:
    """A workspace path resolved against the results file's folder, stored absolute.

    It must lie inside that folder or under one of the `workspace_roots`, after links are
    followed: a results line naming "/etc" (or "../../etc", or a link to it) is refused.
    """
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise FormatError(f"'{name}' is not a string")
    if "\x00" in value:
        raise FormatError(f"'{name}' holds a NUL character")
    path = Path(value)
    if not path.is_absolute():
        path = base_dir / path
    resolved = path.resolve()
    allowed = (base_dir.resolve(), *workspace_roots())
    if not any(resolved == root or root in resolved.parents for root in allowed):
        raise FormatError(
            f"'{name}' {value!r} lies outside the results file's folder {str(base_dir)!r} "
            "(add its folder to the setting workspace_roots or CLAWVIZ_WORKSPACE_ROOTS)"
        )
    return str(resolved)


def _optional_text(record: dict, name: str) -> str | None:
    value = record.get(name)
    if value is None or isinstance(value, str):
        return value
    raise FormatError(f"'{name}' is a {type(value).__name__}, not a string")


def _scores(value: Any, name: str) -> dict[str, float | None]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FormatError(f"'{name}' is not an object of name: score")
    out: dict[str, float | None] = {}
    for k, v in value.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise FormatError(f"{name}.{k} is not a number")
        out[str(k)] = None if v is None else float(v)
    return out


def parse_result(record: Any, *, base_dir: Path) -> dict[str, Any]:
    """Column values of a Result row for one results line; FormatError if it is none."""
    if not is_result_record(record):
        raise FormatError("not a results line (needs 'episode_id' and 'reward' or 'checks')")
    episode_id = record["episode_id"]
    if not isinstance(episode_id, str) or not episode_id:
        raise FormatError("'episode_id' is not a non-empty string")
    reward = record.get("reward")
    if reward is not None:
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            raise FormatError("'reward' is not a number")
        if not math.isfinite(reward):
            raise FormatError("'reward' is not finite")
    attempt = record.get("attempt")
    if attempt is not None and (isinstance(attempt, bool) or not isinstance(attempt, int)):
        raise FormatError("'attempt' is not an integer")
    if attempt is not None and not -(2**63) <= attempt < 2**63:
        raise FormatError("'attempt' is out of range")
    return {
        "episode_id": episode_id,
        "task_id": _optional_text(record, "task_id"),
        "harness": _optional_text(record, "harness"),
        "model": _optional_text(record, "model"),
        "model_role": _optional_text(record, "model_role"),
        "attempt": attempt,
        # A missing reward stays None: it must never be read as 0.
        "reward": None if reward is None else float(reward),
        "checks_json": orjson.dumps(_scores(record.get("checks"), "checks")).decode(),
        "rubric_json": orjson.dumps(_scores(record.get("rubric"), "rubric")).decode(),
        "workspace_before": _workspace(
            record.get("workspace_before"), base_dir, "workspace_before"
        ),
        "workspace_after": _workspace(record.get("workspace_after"), base_dir, "workspace_after"),
    }
