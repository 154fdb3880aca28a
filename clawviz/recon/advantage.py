"""Rewards and advantages (PIPELINE §5): reward from results, GRPO per group, PPO returns, TIS."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.types import Call, Rollout

K = TypeVar("K", bound=Hashable)
"""An attempt's key in a GRPO group (an episode id in the pipeline)."""


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def reward_from_result(
    reward: float | None,
    checks: Mapping[str, float] | None,
    rubric: Mapping[str, float] | None = None,
    *,
    weights: Mapping[str, float] | None = None,
) -> float | None:
    """The attempt's reward: rubric-weighted when `weights` is set, else the logged reward,
    else the mean of the named checks (each 1/N). None when nothing is known (never 0)."""
    check_vals = [float(v) for v in (checks or {}).values() if _is_number(v)]
    rubric_vals = [float(v) for v in (rubric or {}).values() if _is_number(v)]
    if weights:
        parts = [
            (float(weights.get("checks", 0.0)), _mean(check_vals)),
            (float(weights.get("rubric", 0.0)), _mean(rubric_vals)),
        ]
        weighted = [(w, v) for w, v in parts if v is not None and w > 0]
        total = sum(w for w, _ in weighted)
        if total > 0:
            return sum(w * v for w, v in weighted) / total
    if reward is not None:
        return float(reward)
    return _mean(check_vals)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class GroupStats:
    """Statistics of one GRPO group over its valid attempts."""

    n_valid: int
    mean: float | None
    std: float | None


def grpo_advantages(
    rewards: Mapping[K, float | None],
    valid: Mapping[K, bool],
    settings: Settings = DEFAULT_SETTINGS,
) -> tuple[dict[K, float | None], GroupStats]:
    """GRPO advantage per attempt of ONE group (each attempt counts once, PIPELINE §5).

    Valid attempts: not abnormal and with a reward. Population std (ddof 0);
    A = (R - mu) / (sigma + eps); 0 when fewer than 2 valid attempts or sigma < eps.
    Invalid attempts get None.
    """
    eps = float(settings.grpo_eps)
    ids = [a for a in rewards if valid.get(a) and rewards[a] is not None]
    vals = {a: float(rewards[a]) for a in ids}  # type: ignore[arg-type]
    out: dict[K, float | None] = {a: None for a in rewards}
    n = len(ids)
    if n == 0:
        return out, GroupStats(0, None, None)
    mu = sum(vals.values()) / n
    sigma = math.sqrt(sum((v - mu) ** 2 for v in vals.values()) / n)
    stats = GroupStats(n, mu, sigma)
    if n < 2 or sigma < eps:
        return {a: (0.0 if a in vals else None) for a in rewards}, stats
    total = sum(vals.values())
    for a, r in vals.items():
        baseline = (total - r) / (n - 1) if settings.grpo_leave_one_out else mu
        diff = r - baseline
        out[a] = diff if settings.grpo_no_std else diff / (sigma + eps)
    return out, stats


def ppo_token_advantages(calls: list[Call], reward: float) -> list[list[float]] | None:
    """Per generated token `A_t = R - V(s_t)` along one kept path (gamma = lambda = 1).

    Returns one list per call, or None when any call of the path has no logged values.
    """
    out: list[list[float]] = []
    for call in calls:
        values = call.rollout.values if call.rollout else None
        if values is None:
            return None
        out.append([reward - float(v) for v in values])
    return out


@dataclass(frozen=True)
class ImportanceStats:
    """Truncated importance ratios of one call's generated tokens."""

    ratios: list[float]
    clipped_fraction: float
    mean_ratio: float
    clipped: tuple[bool, ...] = ()
    """Per token: whether its ratio exceeded the cap (and so was truncated to it)."""


def importance_ratios(r: Rollout | None, cap: float = 2.0) -> ImportanceStats | None:
    """`min(exp(logp_train - logp_rollout), C)` per token, when both logprob lists exist."""
    if r is None or r.output_logprobs is None or r.trainer_logprobs is None:
        return None
    if len(r.output_logprobs) != len(r.trainer_logprobs) or not r.output_logprobs:
        return None
    if any(v is None for v in (*r.output_logprobs, *r.trainer_logprobs)):
        return None  # a token without both logprobs has no ratio; the view says why
    raw = [math.exp(t - o) for t, o in zip(r.trainer_logprobs, r.output_logprobs, strict=True)]
    ratios = [min(x, cap) for x in raw]
    flags = tuple(x > cap for x in raw)
    return ImportanceStats(ratios, sum(flags) / len(raw), sum(ratios) / len(ratios), flags)
