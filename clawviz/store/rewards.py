"""The one store-level reward accessor: an attempt's reward from its stored Result row.

The rule itself is `clawviz.recon.advantage.reward_from_result` (PIPELINE §5: rubric-weighted
when `reward_weights` is set, else the logged reward, else the mean of the checks). Every
surface that shows a reward (Runs and Episode through the decisions cache, Tasks, Workspace,
`clawviz episodes`) reads it through this module, so they agree under any settings.
"""

from __future__ import annotations

from typing import Any

import orjson

from clawviz.recon import reward_from_result
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.store.models import Result


def _json_dict(text: str | bytes | None) -> dict[str, Any]:
    try:
        obj = orjson.loads(text or "{}")
    except orjson.JSONDecodeError:
        return {}
    return obj if isinstance(obj, dict) else {}


def reward_from_columns(
    reward: float | None,
    checks_json: str | None,
    rubric_json: str | None,
    settings: Settings = DEFAULT_SETTINGS,
) -> float | None:
    """The reward from a Result row's stored columns (for queries that select columns)."""
    return reward_from_result(
        reward,
        _json_dict(checks_json),
        _json_dict(rubric_json),
        weights=settings.reward_weights,
    )


def result_reward(result: Result | None, settings: Settings = DEFAULT_SETTINGS) -> float | None:
    """An attempt's reward from its Result row under `settings`; None without a result."""
    if result is None:
        return None
    return reward_from_columns(result.reward, result.checks_json, result.rubric_json, settings)
