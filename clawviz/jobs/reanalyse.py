"""`analyse --workers N | --engine ray`: decisions recomputed in parallel (after a settings
change, or at the end of `ingest --workers N`).

The driver lists the stale episodes once (`clawviz.store.decisions.stale_episodes`, as
`clawviz.jobs.analyse.ensure_analysis` does) and cuts them into batches. Each task (a pool
process, or a row of a Ray Data job with `--engine ray`) opens the store, loads its batch's
calls (every file's lines of an episode meet in the store, keyed by episode) and runs the pure
`analyse_episode` on each; an episode whose analysis raises gets `analysis_error` alone
(`analyse.failed_analysis`). The task then stores its batch's decisions and statuses itself
(`persist_analyses`, one transaction; on SQLite it waits for the write lock as every writer
does), so storing runs in the workers, not in one driver. A retried task replaces its own
episodes' rows (delete and insert in one transaction): never a doubled row. A batch that
lost a race with another process comes back unstored and the driver stores it. Once every
batch is in, the driver recomputes the GRPO advantages of every group a batch touched
(`analyse._refresh_groups`): a group's advantage needs all its members, so this is the one
serial step, one query and one update per group. A final `ensure_analysis` picks up anything
another process left stale meanwhile.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from clawviz import store
from clawviz._gc import bulk_gc
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
    """Episodes for one task."""

    index: int
    db_url: str
    settings: Settings
    stale: list[Stale]
    write: bool = True
    """Store the batch's decisions in the task (False: return them to the driver)."""


def batches_of(stale: list[Stale], workers: int) -> list[list[Stale]]:
    """About four batches per worker (a slow one does not idle the others), at most
    `analyse.BATCH` episodes each."""
    per = max(1, min(analyse.BATCH, math.ceil(len(stale) / (4 * max(1, workers)))))
    return [stale[i : i + per] for i in range(0, len(stale), per)]


@bulk_gc()  # the analysis's containers are short-lived: fewer collections (clawviz._gc)
def analyse_batch(batch: Batch) -> tuple[int, list[EpisodeAnalysis] | None]:
    """Load, analyse and (`batch.write`) store one batch's episodes, in a worker; each failure
    costs its episode. Returns the analyses when they are still to be stored, else None."""
    out: list[EpisodeAnalysis] = []
    # Messages are looked up by hash all over the store: the large page cache (SQLite).
    with Session(get_engine(batch.db_url)) as session, store.bulk_cache():
        ids = [s.episode_id for s in batch.stale]
        try:
            calls_of: dict[str, Any] = store.load_calls_many(session, ids)
        except Exception:  # noqa: BLE001 - one unreadable episode must not stop the batch
            session.rollback()
            calls_of = {}
        for item in batch.stale:
            eid, reward = item.episode_id, item.reward
            try:
                calls = calls_of[eid] if eid in calls_of else store.load_calls(session, eid)
                a = analyse_episode(calls, reward=reward, settings=batch.settings)
            except Exception as exc:  # noqa: BLE001 - a poison record costs its own episode
                a = analyse.failed_analysis(eid, batch.settings, reward, exc)
            a.episode_id = eid
            out.append(a)
        session.rollback()  # end the read transaction before writing
        if not batch.write:
            return batch.index, out

        def store_batch() -> None:
            persist_analyses(session, list(zip(out, batch.stale, strict=True)), batch.settings)
            session.commit()

        try:
            retry_locked(session, store_batch)
        except IntegrityError:
            # Another process stored some of these first: the driver stores the batch again.
            session.rollback()
            return batch.index, out
    return batch.index, None


def _run_process(tasks: list[Batch], workers: int) -> Iterator[tuple[int, list[Any] | None]]:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = _context()
    init = forget_engines if ctx.get_start_method() == "fork" else None
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=init) as pool:
        futures = [pool.submit(analyse_batch, t) for t in tasks]
        for fut in as_completed(futures):
            yield fut.result()


def _analyse_row(row: dict[str, Any]) -> dict[str, Any]:
    """One Ray Data row: a pickled Batch in, its pickled answer out."""
    task: Batch = pickle.loads(row["batch"])  # noqa: S301 - the driver's own object
    return {"answer": pickle.dumps(analyse_batch(task), protocol=pickle.HIGHEST_PROTOCOL)}


def _run_ray(
    tasks: list[Batch], workers: int, address: str | None
) -> Iterator[tuple[int, list[Any] | None]]:
    """The batches as a Ray Data job: one row per batch, mapped by `analyse_batch` (one CPU
    each, retried by Ray if its worker dies), answers streamed back as they finish."""
    from clawviz.jobs.rayrt import ray_session

    with ray_session(address, workers) as ray:
        from clawviz.jobs.raydata import dataset, map_retried

        ds = dataset(
            ray, [{"batch": pickle.dumps(t, protocol=pickle.HIGHEST_PROTOCOL)} for t in tasks]
        )
        for row in map_retried(ds, _analyse_row).iter_rows():
            yield pickle.loads(row["answer"])  # noqa: S301 - our own task's answer


def _in_memory(url: str) -> bool:
    return url.startswith("sqlite") and (url.endswith(":memory:") or url.rstrip("/") == "sqlite:")


@bulk_gc()  # the analysis's containers are short-lived: fewer collections (clawviz._gc)
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
    tasks = [Batch(i, url, settings, part) for i, part in enumerate(parts)]
    if engine == "ray":
        from clawviz.jobs.rayrt import import_ray

        import_ray()  # fail before any work when Ray is missing
    results = (
        _run_ray(tasks, workers, ray_address) if engine == "ray" else _run_process(tasks, workers)
    )
    n = 0
    for index, analyses in results:
        part = parts[index]
        if analyses is not None:  # lost a race in the task: stored here

            def store_batch(part: list[Stale] = part, analyses: list[Any] = analyses) -> None:
                persist_analyses(session, list(zip(analyses, part, strict=True)), settings)
                session.commit()

            try:
                retry_locked(session, store_batch)
            except IntegrityError:
                session.rollback()  # the final pass below sees to them
        n += len(part)
        if progress:
            progress(n, len(stale), f"analysed {n} of {len(stale)} episodes")

    def groups() -> None:
        # Every group a batch touched, once all are stored: the single process's advantages.
        analyse._refresh_groups(session, settings, {s.group for s in stale}, stale)
        session.commit()

    retry_locked(session, groups)
    # Whatever another process left stale meanwhile (or a batch that lost a race).
    analyse.ensure_analysis(session, settings, only=only)
    if progress:
        progress(len(stale), len(stale), "analysis done")
    return len(stale)
