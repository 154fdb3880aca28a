"""The analysis job: which episodes to (re)analyse, the pure pipeline on each, the result stored.

The only code that both holds a store session and runs `clawviz.recon.pipeline`: it reads what
is stale through `clawviz.store.decisions`, runs `analyse_episode` on each episode's calls and
`apply_grpo` per (task, harness) group, and stores the results through the same module. When
nothing changed it costs one query.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from clawviz import store
from clawviz._gc import bulk_gc
from clawviz.recon import analyse_episode, apply_grpo
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.store import (
    Group,
    Stale,
    bulk_cache,
    group_statuses,
    load_order,
    persist_analyses,
    read_analysis,
    replace_unattached,
    retry_locked,
    stale_episodes,
    store_advantages,
    unattached_stale,
)
from clawviz.types import Call, EpisodeAnalysis, Reason

Progress = Callable[[int, int, str], None]


BATCH = 200
"""Episodes loaded, analysed and committed together by `ensure_analysis`."""


@bulk_gc()  # the analysis's containers are short-lived: fewer collections (clawviz._gc)
def ensure_analysis(
    session: Session,
    settings: Settings = DEFAULT_SETTINGS,
    progress: Progress | None = None,
    held: dict[str, list[Call]] | None = None,
    only: set[str] | None = None,
) -> None:
    """Compute and persist decisions for every episode not yet analysed under these settings.

    `only`: analyse just these episodes (ingest passes the ones it touched); None: every stale one.

    `held`: calls already in memory by episode (ingest passes what it just wrote). An episode
    whose held calls are all its stored calls is analysed from them, without a reload; each is
    removed from `held` once analysed (so memory is released as the analysis goes).
    """

    def attempts() -> None:
        for attempt in range(RETRIES):
            try:
                _ensure_analysis(session, settings, progress, held or {}, only)
                return
            except IntegrityError:
                # Another process (an app session, the CLI, a parallel ingest) stored decisions
                # of the same episodes first: what it finished is skipped on the next attempt.
                session.rollback()
                if attempt == RETRIES - 1:
                    raise

    # On SQLite, another writer (an ingest's long file) may hold the lock past the busy
    # timeout: the analysis waits and goes on (what it committed before is skipped), never fails.
    with bulk_cache(session):  # messages are looked up by hash all over the store
        retry_locked(session, attempts)


RETRIES = 5
"""Attempts of `ensure_analysis` when other processes store the same decisions at once."""


def _calls_of(
    session: Session, batch: list[Stale], held: dict[str, list[Call]]
) -> dict[str, list[Call]]:
    """Each episode's calls: from `held` when it has all of them, else from the store."""
    out: dict[str, list[Call]] = {}
    missing: list[str] = []
    for item in batch:
        calls = held.get(item.episode_id)
        if calls is not None and len(calls) == item.n_calls:
            out[item.episode_id] = sorted(calls, key=load_order)
        else:
            missing.append(item.episode_id)
    if missing:
        out.update(store.load_calls_many(session, missing))
    return out


def _ensure_analysis(
    session: Session,
    settings: Settings,
    progress: Progress | None,
    held: dict[str, list[Call]],
    only: set[str] | None = None,
) -> None:
    stale = stale_episodes(session, settings)
    if only is not None:
        stale = [item for item in stale if item.episode_id in only]
    _ensure_unattached(session, settings)
    if not stale:
        return
    if held:
        # Episodes whose calls are in memory first, each released once analysed: memory then
        # peaks at the held calls or at one reloaded batch, not at both.
        stale.sort(key=lambda item: item.episode_id not in held)
    total = len(stale)
    for start in range(0, total, BATCH):
        batch = stale[start : start + BATCH]
        try:
            calls_of: dict[str, Any] = _calls_of(session, batch, held)
        except Exception:  # noqa: BLE001 - one unreadable episode must not stop the batch
            calls_of = {}
        for item in batch:
            held.pop(item.episode_id, None)
        analyses: list[tuple[EpisodeAnalysis, Stale]] = []
        for i, item in enumerate(batch, start):
            eid = item.episode_id
            if progress:
                progress(i, total, f"analysing {eid}")
            try:
                calls = calls_of[eid] if eid in calls_of else store.load_calls(session, eid)
                a = analyse_episode(calls, reward=item.reward, settings=settings)
            except Exception as exc:  # noqa: BLE001 - a poison record costs its own episode
                a = failed_analysis(eid, settings, item.reward, exc)
            a.episode_id = eid
            analyses.append((a, item))
        persist_analyses(session, analyses, settings)
        _refresh_groups(session, settings, {item.group for item in batch}, batch)
        # Each batch is complete (decisions, statuses, its groups' GRPO): an interrupted run
        # keeps what it finished, and a later run resumes with the rest.
        session.commit()
    if progress:
        progress(total, total, "analysis done")


ANALYSIS_ERROR = "analysis_error"


def failed_analysis(
    episode_id: str, settings: Settings, reward: float | None, exc: BaseException
) -> EpisodeAnalysis:
    """The verdict of an episode whose analysis raised: dropped as analysis_error, with the
    error as evidence (shown on its page); the other episodes and the app carry on."""
    evidence = f"{type(exc).__name__}: {exc}"[:2000]
    return EpisodeAnalysis(
        episode_id,
        settings.settings_hash,
        ANALYSIS_ERROR,  # type: ignore[arg-type]
        [Reason(ANALYSIS_ERROR, evidence)],
        {},
        [],
        reward,
    )


def _ensure_unattached(session: Session, settings: Settings) -> None:
    """Analyse the calls of no episode again when their stored decisions are out of date."""
    if not unattached_stale(session, settings):
        return
    calls = store.load_calls(session, None)  # type: ignore[arg-type]
    replace_unattached(session, settings, analyse_episode(calls, reward=None, settings=settings))


def _refresh_groups(
    session: Session,
    settings: Settings,
    groups: set[Group],
    changed: list[Stale],
) -> None:
    """Recompute GRPO for every group a changed episode belongs to (new attempts move mu)."""
    solo = [item.episode_id for item in changed if item.group[0] is None]
    analyses, group_of = group_statuses(session, settings, groups, solo)
    apply_grpo(analyses, group_of, settings)
    store_advantages(session, settings, analyses)


def episode_analysis(
    session: Session, episode_id: str, settings: Settings = DEFAULT_SETTINGS
) -> EpisodeAnalysis:
    """Read an episode's analysis back from the store (computing it first if needed)."""
    ensure_analysis(session, settings)
    return read_analysis(session, episode_id, settings)
