"""`results.jsonl` lines (FORMATS §5): one verifier result per attempt."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson

from clawviz.ingest.exchange import FormatError


def is_result_record(record: Any) -> bool:
    """A results line names an episode and carries a reward or per-check scores."""
    return (
        isinstance(record, dict)
        and "episode_id" in record
        and ("reward" in record or "checks" in record)
    )


def _workspace(value: Any, base_dir: Path) -> str | None:
    """A workspace path resolved against the results file's folder, stored absolute."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise FormatError("workspace path is not a string")
    path = Path(value)
    if not path.is_absolute():
        path = base_dir / path
    return str(path.resolve())


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
    return {
        "episode_id": episode_id,
        "task_id": record.get("task_id"),
        "harness": record.get("harness"),
        "model": record.get("model"),
        "model_role": record.get("model_role"),
        "attempt": attempt,
        # A missing reward stays None: it must never be read as 0.
        "reward": None if reward is None else float(reward),
        "checks_json": orjson.dumps(_scores(record.get("checks"), "checks")).decode(),
        "rubric_json": orjson.dumps(_scores(record.get("rubric"), "rubric")).decode(),
        "workspace_before": _workspace(record.get("workspace_before"), base_dir),
        "workspace_after": _workspace(record.get("workspace_after"), base_dir),
    }
