"""`analyse --workers N | --engine ray`: decisions recomputed in parallel (after a settings
change, or at the end of `ingest --workers N`).

The driver lists the stale episodes once (`clawviz.store.decisions.stale_episodes`, as
`clawviz.jobs.analyse.ensure_analysis` does) and cuts them into batches. Each task (a pool
process or a Ray task) opens the store, loads its batch's calls and runs the pure
`analyse_episode` on each; an episode whose analysis raises gets `analysis_error` alone
(`analyse.failed_analysis`). The driver stores each batch as it comes back, with its groups'
GRPO (`persist_analyses`, `analyse._refresh_groups`), and commits it: the one writer, so this
works on SQLite too. A group's advantages are recomputed with every batch holding one of its
episodes; the last such refresh sees all of them, so the result is the single process's.
A final `ensure_analysis` picks up anything another process left stale meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from clawviz import store
from clawviz.jobs import analyse
from clawviz.jobs.pool import _context, store_url
from clawviz.recon import analyse_episode
from clawviz.settings import Settings
from clawviz.store import (
    Stale,
    forget_engines,
    get_engine,
    persist_analyses,
    retry_locked,
    stale_episodes,
)
from clawviz.types import EpisodeAnalysis

Engine = Literal["process", "ray"]
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Batch:
    """Episodes for one task: (episode id, reward) each."""

    index: int
    db_url: str
    settings: Settings
    episodes: list[tuple[str, float | None]]


def batches_of(stale: list[Stale], workers: int) -> list[list[Stale]]:
    """About four batches per worker (a slow one does not idle the others), at most
    `analyse.BATCH` episodes each."""
    per = max(1, min(analyse.BATCH, math.ceil(len(stale) / (4 * max(1, workers)))))
    return [stale[i : i + per] for i in range(0, len(stale), per)]


def analyse_batch(batch: Batch) -> tuple[int, list[EpisodeAnalysis]]:
    """Load and analyse one batch's episodes (in a worker); each failure costs its episode."""
    out: list[EpisodeAnalysis] = []
    with Session(get_engine(batch.db_url)) as session:
        try:
            calls_of: dict[str, Any] = store.load_calls_many(
                session, [eid for eid, _ in batch.episodes]
            )
        except Exception:  # noqa: BLE001 - one unreadable episode must not stop the batch
            session.rollback()
            calls_of = {}
        for eid, reward in batch.episodes:
            try:
                calls = calls_of[eid] if eid in calls_of else store.load_calls(session, eid)
                a = analyse_episode(calls, reward=reward, settings=batch.settings)
            except Exception as exc:  # noqa: BLE001 - a poison record costs its own episode
                a = analyse.failed_analysis(eid, batch.settings, reward, exc)
            a.episode_id = eid
            out.append(a)
    return batch.index, out


def _run_process(tasks: list[Batch], workers: int) -> Iterator[tuple[int, list[Any]]]:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = _context()
    init = forget_engines if ctx.get_start_method() == "fork" else None
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=init) as pool:
        futures = [pool.submit(analyse_batch, t) for t in tasks]
        for fut in as_completed(futures):
            yield fut.result()


def _run_ray(
    tasks: list[Batch], workers: int, address: str | None
) -> Iterator[tuple[int, list[Any]]]:
    from clawviz.jobs.rayrt import ray_session

    with ray_session(address, workers) as ray:
        remote = ray.remote(num_cpus=1, max_retries=2)(analyse_batch)
        pending = [remote.remote(t) for t in tasks]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            yield ray.get(ready[0])


def _in_memory(url: str) -> bool:
    return url.startswith("sqlite") and (url.endswith(":memory:") or url.rstrip("/") == "sqlite:")


def reanalyse(
    session: Session,
    settings: Settings,
    *,
    workers: int = 2,
    engine: Engine = "process",
    ray_address: str | None = None,
    only: set[str] | None = None,
    progress: Progress | None = None,
) -> int:
    """Compute and store the decisions of every stale episode (or of `only`) under `settings`
    in `workers` processes or Ray tasks; returns how many episodes were analysed."""
    url = store_url(session)
    stale = [s for s in stale_episodes(session, settings) if only is None or s.episode_id in only]
    if (workers <= 1 and engine == "process") or _in_memory(url) or not stale:
        analyse.ensure_analysis(session, settings, progress, only=only)
        return len(stale)
    analyse._ensure_unattached(session, settings)
    session.commit()
    parts = batches_of(stale, workers)
    tasks = [
        Batch(i, url, settings, [(s.episode_id, s.reward) for s in part])
        for i, part in enumerate(parts)
    ]
    if engine == "ray":
        from clawviz.jobs.rayrt import import_ray

        import_ray()  # fail before any work when Ray is missing
    results = (
        _run_ray(tasks, workers, ray_address) if engine == "ray" else _run_process(tasks, workers)
    )
    n = 0
    for index, analyses in results:
        part = parts[index]

        def store_batch(part: list[Stale] = part, analyses: list[Any] = analyses) -> None:
            persist_analyses(session, list(zip(analyses, part, strict=True)), settings)
            analyse._refresh_groups(session, settings, {s.group for s in part}, part)
            session.commit()

        try:
            retry_locked(session, store_batch)
        except IntegrityError:
            # Another process stored some of these first: the final pass below sees to them.
            session.rollback()
        n += len(part)
        if progress:
            progress(n, len(stale), f"analysed {n} of {len(stale)} episodes")
    # Whatever another process left stale meanwhile (or a batch that lost a race).
    analyse.ensure_analysis(session, settings, only=only)
    if progress:
        progress(len(stale), len(stale), "analysis done")
    return len(stale)
