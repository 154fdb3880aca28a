"""The pure reconstruction pipeline of one episode: tree, roles, pruning, rewards, GRPO.

PIPELINE §2-5. No store, no I/O: `analyse_episode` takes calls and a reward and returns the
decisions; `apply_grpo` fills the advantages of a set of analyses grouped by (task, harness).
The cache of these results in the store lives in `clawviz.store.decisions`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from clawviz.recon.advantage import grpo_advantages
from clawviz.recon.classify import classify_calls
from clawviz.recon.prune import ABNORMAL_CODES, prune_episode
from clawviz.recon.tree import build_call_tree
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.types import Call, EpisodeAnalysis, Reason, State

UNATTACHED = ""
"""DecisionRow.episode_id of calls no episode could be determined for."""


def analyse_episode(
    calls: list[Call], *, reward: float | None, settings: Settings = DEFAULT_SETTINGS
) -> EpisodeAnalysis:
    """Reconstruct, classify and prune one episode's calls (PIPELINE §2-5, without GRPO)."""
    episode_id = next((c.episode_id for c in calls if c.episode_id), None)
    tree = build_call_tree(calls)
    cls = classify_calls(tree)
    result = prune_episode(
        tree, cls, reward=reward, settings=settings, has_episode=episode_id is not None
    )
    for p in result.paths:
        if p.state == State.KEPT:
            p.reward = reward
            p.ppo_return = reward
    return EpisodeAnalysis(
        episode_id=episode_id or UNATTACHED,
        settings_hash=_settings_hash(settings),
        status=verdict(result.reasons, reward, settings).status,
        reasons=result.reasons,
        decisions=result.decisions,
        paths=result.paths,
        reward=reward,
        n_segments=cls.n_segments,
    )


def _settings_hash(settings: Settings) -> str:
    """`settings.settings_hash` (JSON plus sha256) once per settings, not once per episode."""
    try:
        return _memo_settings_hash(settings)
    except TypeError:  # a field given an unhashable value, bypassing the checks
        return settings.settings_hash


@lru_cache(maxsize=64)
def _memo_settings_hash(settings: Settings) -> str:
    return settings.settings_hash


def drops(reason: Reason, settings: Settings = DEFAULT_SETTINGS) -> bool:
    """Whether a reason drops its episode: the self-check's `unexplained_root` and
    `lost_kept_call` only with `drop_unexplained_root` on, `unexplained_edit` only when more
    kept calls have such edits than `max_unexplained_edits`; every other reason does."""
    if reason.code in ("unexplained_root", "lost_kept_call"):
        return bool(settings.drop_unexplained_root)
    if reason.code == "unexplained_edit":
        return len(reason.call_ids) > settings.max_unexplained_edits
    return True


@dataclass(frozen=True)
class Verdict:
    """What an episode's reasons mean under the settings: its status and whether it counts in
    its GRPO group's statistics."""

    status: Literal["kept", "dropped"]
    grpo_valid: bool


def verdict(
    reasons: list[Reason], reward: float | None, settings: Settings = DEFAULT_SETTINGS
) -> Verdict:
    """The one place the settings turn reasons into decisions (`drops` per reason): dropped
    when any reason drops; GRPO-valid with a reward and no abnormal reason that drops.

    Both users reach it one way, from `jobs.analyse.ensure_analysis`: `analyse_episode` (the
    status stored with the decisions) and `apply_grpo` (on the stored reasons of a group)."""
    dropping = [r for r in reasons if drops(r, settings)]
    return Verdict(
        "dropped" if dropping else "kept",
        reward is not None and not any(r.code in ABNORMAL_CODES for r in dropping),
    )


def is_grpo_valid(
    reasons: list[Reason], reward: float | None, settings: Settings = DEFAULT_SETTINGS
) -> bool:
    """An attempt counts in its group's statistics: has a reward and no abnormal reason."""
    return verdict(reasons, reward, settings).grpo_valid


def apply_grpo(
    analyses: list[EpisodeAnalysis],
    group_of: dict[str, tuple[str | None, str | None]],
    settings: Settings = DEFAULT_SETTINGS,
) -> None:
    """Fill `advantage` on each analysis and its kept paths, grouped by (task_id, harness)."""
    groups: dict[Hashable, list[EpisodeAnalysis]] = {}
    for a in analyses:
        groups.setdefault(_group_key(a.episode_id, group_of.get(a.episode_id)), []).append(a)
    for members in groups.values():
        rewards = {a.episode_id: a.reward for a in members}
        valid = {a.episode_id: is_grpo_valid(a.reasons, a.reward, settings) for a in members}
        adv, _ = grpo_advantages(rewards, valid, settings)
        for a in members:
            a.advantage = adv[a.episode_id]
            for p in a.paths:
                p.advantage = a.advantage if p.state == State.KEPT else None


def _group_key(episode_id: str, group: tuple[str | None, str | None] | None) -> Hashable:
    if group is None or group[0] is None:
        return ("solo", episode_id)
    return ("group", group[0], group[1])
