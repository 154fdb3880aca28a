"""What an export reads: the episodes the filters select, with their stored decisions.

Nothing here decides anything: the episodes are filtered with the Runs page's own
`EpisodeFilter`, the paths, states, rewards and advantages are the ones `ensure_analysis`
stored under the settings hash, and the calls are loaded as the analysis loaded them. Episodes
are read in batches, so memory holds one batch of calls at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlmodel import Session, col, select

from clawviz.jobs import ensure_analysis
from clawviz.settings import Settings
from clawviz.store import (
    Blob,
    CallRow,
    EpisodeFilter,
    EpisodeStatus,
    episode_rows,
    filter_rows,
    load_path_calls,
    member_of,
    unpack_text,
)
from clawviz.types import Call, PathInfo, Reason

Progress = Callable[[int, int, str], None]

BATCH = 50
"""Most episodes whose calls are loaded together."""

BATCH_CALLS = 1000
"""Most calls loaded together (an episode larger than this is loaded alone). RL exports pass
fewer: every call's stored rollout holds its whole prompt's token ids."""


@dataclass
class EpisodeData:
    """One selected episode: identity, verdict, kept paths and the calls they name."""

    episode_id: str
    task_id: str | None
    harness: str | None
    model: str | None
    attempt: int | None
    status: str
    reasons: list[Reason]
    reward: float | None
    advantage: float | None
    paths: list[PathInfo]
    calls: dict[str, Call]
    tools: dict[str, Any] = field(default_factory=dict)
    """Raw request `tools` list by call id (for the last call of each kept path)."""

    @property
    def kept_paths(self) -> list[PathInfo]:
        return [p for p in self.paths if p.state == "kept"]

    @property
    def group(self) -> str:
        """The GRPO group, task x harness, as `analysis.apply_grpo` groups attempts."""
        if self.task_id is None:
            return f"solo:{self.episode_id}"
        return f"{self.task_id}::{self.harness or ''}"


@dataclass(frozen=True)
class Selection:
    """Which episodes an export reads."""

    filter: EpisodeFilter = field(default_factory=EpisodeFilter)
    include_dropped: bool = False
    episode_ids: tuple[str, ...] | None = None
    """When set, only these episodes (the Episode page; the Runs page while a search narrows
    its table); an empty tuple selects none."""


ROW_COLS = ("episode_id", "task_id", "harness", "model", "attempt", "n_calls")
"""The Runs table columns an export reads from an episode's row."""


def selected_episodes(session: Session, settings: Settings, selection: Selection) -> list[dict]:
    """The episode rows an export covers, in Runs table order.

    The rows are the Runs table's (`episode_rows`, the pandas-free `episodes_frame`, filtered
    by the same `filter_rows`), and each keeps only the columns the export reads (`ROW_COLS`,
    plain Python values): what the selection holds is ~100 bytes per selected episode (and
    what a sharded export sends its workers)."""
    rows = episode_rows(session, settings.settings_hash)
    if selection.episode_ids is not None:
        wanted = set(selection.episode_ids)
        rows = [r for r in rows if r.episode_id in wanted]
    rows = filter_rows(rows, selection.filter)
    # `episode_rows` leaves out every transcript linked to its session's wire episode
    # (`jobs.sessions`): a cross-check, so the session is exported once, from the wire.
    if not selection.include_dropped:
        rows = [r for r in rows if r.status == "kept"]
    return [
        {
            "episode_id": r.episode_id,
            "task_id": r.task_id,
            "harness": r.harness,
            "model": r.model,
            "attempt": r.attempt,
            "n_calls": r.n_calls,
        }
        for r in rows
    ]


TOOLS_CACHE = 256
"""Most parsed tool lists an export keeps between batches (a harness sends the same list with
every call, so a run has a handful)."""


def _tools_of(
    session: Session, call_ids: Sequence[str], cache: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The raw request `tools` of these calls, by call id. `cache`: tool lists already parsed,
    by blob hash (filled here; emptied when it holds `TOOLS_CACHE`)."""
    blobs: dict[str, Any] = cache if cache is not None else {}
    out: dict[str, Any] = {}
    hash_of: dict[str, str] = {}
    for i in range(0, len(call_ids), 500):
        chunk = list(call_ids[i : i + 500])
        query = select(CallRow.call_id, CallRow.tools_hash).where(
            member_of(session, col(CallRow.call_id), chunk)
        )
        for cid, h in session.execute(query):
            if h:
                hash_of[cid] = h
    hashes = sorted(set(hash_of.values()) - set(blobs))
    if len(blobs) + len(hashes) > TOOLS_CACHE:
        blobs.clear()
        hashes = sorted(set(hash_of.values()))
    for i in range(0, len(hashes), 500):
        chunk = hashes[i : i + 500]
        query = select(Blob.hash, Blob.text).where(member_of(session, col(Blob.hash), chunk))
        for h, text in session.execute(query):
            blobs[h] = orjson.loads(unpack_text(text) or "null")
    for cid, h in hash_of.items():
        out[cid] = blobs.get(h)
    return out


def batches(rows: list[dict], max_episodes: int, max_calls: int) -> Iterator[tuple[int, list]]:
    """(start index, rows) of consecutive batches within both limits (at least one episode)."""
    start, n_calls = 0, 0
    cur: list[dict] = []
    for i, r in enumerate(rows):
        n = _int_or_none(r.get("n_calls")) or 0
        if cur and (len(cur) >= max_episodes or n_calls + n > max_calls):
            yield start, cur
            start, cur, n_calls = i, [], 0
        cur.append(r)
        n_calls += n
    if cur:
        yield start, cur


_STATUS_COLS = (
    col(EpisodeStatus.episode_id),
    col(EpisodeStatus.status),
    col(EpisodeStatus.reasons_json),
    col(EpisodeStatus.reward),
    col(EpisodeStatus.advantage),
    col(EpisodeStatus.paths_json),
)
"""The stored decision columns an export reads (rows, not ORM objects)."""


def iter_episodes(
    session: Session,
    settings: Settings,
    selection: Selection,
    progress: Progress | None = None,
    *,
    max_calls: int = BATCH_CALLS,
    rows: list[dict] | None = None,
    with_tools: bool = True,
) -> Iterator[EpisodeData]:
    """The selected episodes with calls and stored decisions, one batch of calls in memory.

    With `rows` (episode rows as `selected_episodes` returns them, e.g. one shard of a sharded
    export), those episodes are read and the selection is not queried again. `with_tools`:
    read each kept path's last request `tools` (SFT rows carry them, RL rows do not)."""
    if rows is None:
        ensure_analysis(session, settings)
        rows = selected_episodes(session, settings, selection)
    total = len(rows)
    h = settings.settings_hash
    tools_cache: dict[str, Any] = {}
    for start, batch in batches(rows, BATCH, max_calls):
        ids = [str(r["episode_id"]) for r in batch]
        query = sa.select(*_STATUS_COLS).where(
            col(EpisodeStatus.settings_hash) == h,
            member_of(session, col(EpisodeStatus.episode_id), ids),
        )
        statuses = {s.episode_id: s for s in session.execute(query)}
        paths_of = {
            eid: [PathInfo(**p) for p in orjson.loads(st.paths_json)]
            for eid, st in statuses.items()
        }
        wanted = sorted(
            {c for ps in paths_of.values() for p in ps if p.state == "kept" for c in p.call_ids}
        )
        calls = load_path_calls(session, wanted)
        eps: list[EpisodeData] = []
        for r in batch:
            eid = str(r["episode_id"])
            st = statuses.get(eid)
            if st is None:
                continue
            paths = paths_of[eid]
            mine = {c for p in paths if p.state == "kept" for c in p.call_ids}
            eps.append(
                EpisodeData(
                    episode_id=eid,
                    task_id=_str_or_none(r.get("task_id")),
                    harness=_str_or_none(r.get("harness")),
                    model=_str_or_none(r.get("model")),
                    attempt=_int_or_none(r.get("attempt")),
                    status=st.status,
                    reasons=[Reason(**x) for x in orjson.loads(st.reasons_json)],
                    reward=st.reward,
                    advantage=st.advantage,
                    paths=paths,
                    calls={c: calls[c] for c in mine if c in calls},
                )
            )
        lasts = [p.call_ids[-1] for e in eps for p in e.kept_paths if p.call_ids]
        tools = _tools_of(session, lasts, tools_cache) if with_tools else {}
        for i, e in enumerate(eps):
            e.tools = {
                cid: tools[cid] for p in e.kept_paths for cid in p.call_ids[-1:] if cid in tools
            }
            if progress:
                progress(start + i, total, f"exporting {e.episode_id}")
            yield e
    if progress:
        progress(total, total, "export done")


def _str_or_none(v: Any) -> str | None:
    if v is None or (isinstance(v, float) and v != v):
        return None
    return str(v)


def _int_or_none(v: Any) -> int | None:
    try:
        if v is None or (isinstance(v, float) and v != v):
            return None
        return int(v)
    except (TypeError, ValueError):
        return None
