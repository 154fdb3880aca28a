"""Episode analysis: tree + roles + pruning + rewards, and its cache in the store per settings.

`analyse_episode` and `apply_grpo` are pure. `ensure_analysis` persists DecisionRow and
EpisodeStatus for every episode whose inputs (calls, result) or settings changed; when nothing
changed it costs one query.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from dataclasses import asdict

import orjson
from sqlalchemy import delete, func, insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from clawviz import store
from clawviz.advantage import grpo_advantages, reward_from_result
from clawviz.classify import classify_calls
from clawviz.models import CallRow, DecisionRow, Episode, EpisodeStatus, Result, utcnow
from clawviz.prune import ABNORMAL_CODES, prune_episode
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.tree import build_call_tree
from clawviz.types import Call, CallDecision, EpisodeAnalysis, PathInfo, Reason

Progress = Callable[[int, int, str], None]
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
        if p.state == "kept":
            p.reward = reward
            p.ppo_return = reward
    return EpisodeAnalysis(
        episode_id=episode_id or UNATTACHED,
        settings_hash=settings.settings_hash,
        status="dropped" if result.reasons else "kept",
        reasons=result.reasons,
        decisions=result.decisions,
        paths=result.paths,
        reward=reward,
        n_segments=cls.n_segments,
    )


def is_grpo_valid(reasons: list[Reason], reward: float | None) -> bool:
    """An attempt counts in its group's statistics: has a reward and no abnormal reason."""
    return reward is not None and not any(r.code in ABNORMAL_CODES for r in reasons)


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
        valid = {a.episode_id: is_grpo_valid(a.reasons, a.reward) for a in members}
        adv, _ = grpo_advantages(rewards, valid, settings)
        for a in members:
            a.advantage = adv[a.episode_id]
            for p in a.paths:
                p.advantage = a.advantage if p.state == "kept" else None


def _group_key(episode_id: str, group: tuple[str | None, str | None] | None) -> Hashable:
    if group is None or group[0] is None:
        return ("solo", episode_id)
    return ("group", group[0], group[1])


def result_reward(result: Result | None, settings: Settings = DEFAULT_SETTINGS) -> float | None:
    """An episode's reward from its Result row (logged reward, else mean of checks)."""
    if result is None:
        return None
    return reward_from_result(
        result.reward,
        orjson.loads(result.checks_json or "{}"),
        orjson.loads(result.rubric_json or "{}"),
        weights=settings.reward_weights,
    )


ANALYSIS_VERSION = 2
"""Bump when reconstruction logic changes: stored decisions of older versions are recomputed."""


def _stamp(n_calls: int | None, last_ts: float | None, result: tuple | None) -> str:
    blob = orjson.dumps([ANALYSIS_VERSION, n_calls, last_ts, list(result) if result else None])
    return hashlib.blake2b(blob, digest_size=8).hexdigest()


def _settings_json(settings: Settings, stamp: str) -> str:
    return orjson.dumps({"settings": settings.decision_values(), "inputs": stamp}).decode()


def ensure_analysis(
    session: Session,
    settings: Settings = DEFAULT_SETTINGS,
    progress: Progress | None = None,
) -> None:
    """Compute and persist decisions for every episode not yet analysed under these settings."""
    try:
        _ensure_analysis(session, settings, progress)
    except IntegrityError:
        # Another process (a second app session, the CLI) stored the same decisions first.
        session.rollback()
        _ensure_analysis(session, settings, progress)


def _ensure_analysis(session: Session, settings: Settings, progress: Progress | None) -> None:
    h = settings.settings_hash
    rows = session.execute(
        select(
            Episode.episode_id,
            Episode.task_id,
            Episode.harness,
            Episode.n_calls,
            Episode.last_ts,
            Result.reward,
            Result.checks_json,
            Result.rubric_json,
            EpisodeStatus.settings_json,
        )
        .outerjoin(Result, Result.episode_id == Episode.episode_id)
        .outerjoin(
            EpisodeStatus,
            (EpisodeStatus.episode_id == Episode.episode_id) & (EpisodeStatus.settings_hash == h),
        )
    ).all()
    group_of: dict[str, tuple[str | None, str | None]] = {}
    stale: list[tuple[str, str, bool]] = []
    for eid, task, harness, n, last_ts, rew, checks, rubric, sjson in rows:
        group_of[eid] = (task, harness)
        has_result = rew is not None or checks is not None
        stamp = _stamp(n, last_ts, (rew, checks, rubric) if has_result else None)
        if sjson is None or orjson.loads(sjson).get("inputs") != stamp:
            stale.append((eid, stamp, sjson is not None))
    _ensure_unattached(session, settings)
    if not stale:
        return
    total = len(stale)
    analyses: list[EpisodeAnalysis] = []
    for i, (eid, stamp, stored) in enumerate(stale):
        if progress:
            progress(i, total, f"analysing {eid}")
        calls = store.load_calls(session, eid)
        reward = result_reward(store.load_result(session, eid), settings)
        try:
            a = analyse_episode(calls, reward=reward, settings=settings)
        except Exception as exc:
            raise RuntimeError(f"analysing episode {eid!r} failed: {exc}") from exc
        a.episode_id = eid
        analyses.append(a)
        _persist(session, a, settings, stamp, replace=stored)
    session.flush()
    _refresh_groups(session, settings, group_of, {a.episode_id for a in analyses})
    session.commit()
    if progress:
        progress(total, total, "analysis done")


def _ensure_unattached(session: Session, settings: Settings) -> None:
    h = settings.settings_hash
    n_calls, n_done = session.execute(
        select(
            select(func.count())
            .select_from(CallRow)
            .where(CallRow.episode_id.is_(None))
            .scalar_subquery(),
            select(func.count())
            .select_from(DecisionRow)
            .where(DecisionRow.settings_hash == h, DecisionRow.episode_id == UNATTACHED)
            .scalar_subquery(),
        )
    ).one()
    if n_calls == n_done:
        return
    session.execute(
        delete(DecisionRow).where(
            DecisionRow.settings_hash == h, DecisionRow.episode_id == UNATTACHED
        )
    )
    calls = store.load_calls(session, None)  # type: ignore[arg-type]
    a = analyse_episode(calls, reward=None, settings=settings)
    rows = _decision_rows(a, h, UNATTACHED)
    if rows:
        session.execute(insert(DecisionRow.__table__), rows)
    session.commit()


def _decision_rows(a: EpisodeAnalysis, h: str, episode_id: str) -> list[dict]:
    return [
        {"settings_hash": h, "episode_id": episode_id, **asdict(d)} for d in a.decisions.values()
    ]


def _persist(
    session: Session, a: EpisodeAnalysis, settings: Settings, stamp: str, *, replace: bool = True
) -> None:
    h = settings.settings_hash
    if replace:
        _delete_analysis(session, h, a.episode_id)
    elif a.decisions:
        # Calls can move between episodes (a file's fallback episode resolved later).
        session.execute(
            delete(DecisionRow).where(
                DecisionRow.settings_hash == h, DecisionRow.call_id.in_(list(a.decisions))
            )
        )
    # Core inserts: building ORM objects row by row costs more than the reconstruction.
    rows = _decision_rows(a, h, a.episode_id)
    if rows:
        session.execute(insert(DecisionRow.__table__), rows)
    session.execute(
        insert(EpisodeStatus.__table__),
        [
            {
                "settings_hash": h,
                "episode_id": a.episode_id,
                "status": a.status,
                "reasons_json": orjson.dumps([asdict(r) for r in a.reasons]).decode(),
                "reward": a.reward,
                "advantage": a.advantage,
                "n_segments": a.n_segments,
                "paths_json": orjson.dumps([asdict(p) for p in a.paths]).decode(),
                "settings_json": _settings_json(settings, stamp),
                "computed_at": utcnow(),
            }
        ],
    )


def _delete_analysis(session: Session, h: str, episode_id: str) -> None:
    session.execute(
        delete(DecisionRow).where(
            DecisionRow.settings_hash == h, DecisionRow.episode_id == episode_id
        )
    )
    session.execute(
        delete(EpisodeStatus).where(
            EpisodeStatus.settings_hash == h, EpisodeStatus.episode_id == episode_id
        )
    )


def _refresh_groups(
    session: Session,
    settings: Settings,
    group_of: dict[str, tuple[str | None, str | None]],
    changed: set[str],
) -> None:
    """Recompute GRPO for every group a changed episode belongs to (new attempts move mu)."""
    touched = {_group_key(e, group_of.get(e)) for e in changed}
    members = [e for e in group_of if _group_key(e, group_of[e]) in touched]
    h = settings.settings_hash
    statuses = list(
        session.exec(
            select(EpisodeStatus).where(
                EpisodeStatus.settings_hash == h, EpisodeStatus.episode_id.in_(members)
            )
        )
    )
    analyses = []
    for st in statuses:
        reasons = [Reason(**r) for r in orjson.loads(st.reasons_json)]
        paths = [PathInfo(**p) for p in orjson.loads(st.paths_json)]
        analyses.append(
            EpisodeAnalysis(st.episode_id, h, st.status, reasons, {}, paths, st.reward)  # type: ignore[arg-type]
        )
    apply_grpo(analyses, group_of, settings)
    by_id = {a.episode_id: a for a in analyses}
    for st in statuses:
        a = by_id[st.episode_id]
        st.advantage = a.advantage
        st.paths_json = orjson.dumps([asdict(p) for p in a.paths]).decode()
        session.add(st)


def episode_analysis(
    session: Session, episode_id: str, settings: Settings = DEFAULT_SETTINGS
) -> EpisodeAnalysis:
    """Read an episode's analysis back from the store (computing it first if needed)."""
    ensure_analysis(session, settings)
    h = settings.settings_hash
    st = session.get(EpisodeStatus, (h, episode_id))
    if st is None:
        raise KeyError(f"no episode {episode_id!r} in the store")
    decisions = {
        d.call_id: CallDecision(
            call_id=d.call_id,
            role=d.role,
            state=d.state,
            reason=d.reason,
            role_reason=d.role_reason,
            parent_call=d.parent_call,
            retry_of=d.retry_of,
            segment=d.segment,
            thread=d.thread,
            linked_call=d.linked_call,
            depth=d.depth,
        )
        for d in session.exec(
            select(DecisionRow).where(
                DecisionRow.settings_hash == h, DecisionRow.episode_id == episode_id
            )
        )
    }
    return EpisodeAnalysis(
        episode_id=episode_id,
        settings_hash=h,
        status=st.status,  # type: ignore[arg-type]
        reasons=[Reason(**r) for r in orjson.loads(st.reasons_json)],
        decisions=decisions,
        paths=[PathInfo(**p) for p in orjson.loads(st.paths_json)],
        reward=st.reward,
        advantage=st.advantage,
        n_segments=st.n_segments,
    )
