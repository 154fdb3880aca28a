"""The decisions cache in the store: per settings, DecisionRow and EpisodeStatus of each episode.

Persistence only. The decisions are computed by the pure `clawviz.recon.pipeline`, and
`clawviz.jobs.analyse.ensure_analysis` decides what to recompute: it asks `stale_episodes`
which episodes' inputs (calls, result) or settings changed, and stores the analyses through
`persist_analyses`, `replace_unattached` and `store_advantages`; `read_analysis` reads one back.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

import orjson
from sqlalchemy import (
    ColumnElement,
    String,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    literal,
    null,
    or_,
    text,
    update,
)
from sqlmodel import Session, select

from clawviz.recon import UNATTACHED, reward_from_result
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.store import runstats
from clawviz.store.fastread import ANALYSIS_VERSION, settings_json_parts
from clawviz.store.models import (
    NUL_PREFIX,
    AnalysisMark,
    CallRow,
    DecisionRow,
    Episode,
    EpisodeDirty,
    EpisodeStatus,
    Result,
    utcnow,
)
from clawviz.types import Call, CallDecision, EpisodeAnalysis, PathInfo, Reason

_DECISION_FIELDS = tuple(f.name for f in fields(CallDecision))


def _inputs_stamp() -> ColumnElement[str]:
    """SQL text naming an episode's inputs: its calls (count, last time) and its result.

    Built by the database, both when it is stored (in `settings_json`) and when it is checked,
    so the no-op check is one query (`clawviz.store.fastread` holds the same SQL as text).
    Results are never replaced once loaded (ingest keeps the first), so whether there is one,
    its reward and its check sizes stand for its content; no row id, so copied episodes (bench
    stores) keep their stamps. Only digits, signs, letters and `|` occur: the text needs no
    JSON escaping.
    """
    e, r = Episode.__table__.c, Result.__table__.c

    def text(col: Any) -> ColumnElement[str]:
        return func.coalesce(cast(col, String), "")

    parts = [
        e.n_calls,
        e.last_ts,
        case((r.id.is_(None), "none"), else_="result"),
        r.reward,
        func.length(r.checks_json),
        func.length(r.rubric_json),
    ]
    out: ColumnElement[str] = literal(f"v{ANALYSIS_VERSION}", String)
    for col in parts:
        out = out + "|" + text(col)
    return out


_settings_json_parts = settings_json_parts


def load_order(call: Call) -> tuple[Any, ...]:
    """The order `store.load_calls` returns calls in: seq, request time, file, line (None last)."""
    return (
        call.seq is None,
        call.seq or 0,
        call.t_request is None,
        call.t_request or 0.0,
        call.source_file,
        call.line,
    )


@dataclass
class Stale:
    """An episode whose stored analysis is missing or was made from other inputs."""

    episode_id: str
    group: tuple[str | None, str | None]
    stamp: str
    stored: bool
    reward: float | None
    n_calls: int = 0
    queued: int | None = None
    """The `seq` of its change-queue row (None: found by the full check); cleared with it."""


def stale_episodes(session: Session, settings: Settings) -> list[Stale]:
    """Episodes with no status under these settings, or one from other inputs.

    O(changed): for a settings hash registered in `analysis_mark` only the episodes of the
    change queue (`clawviz.store.changes`) are checked, and the queued ones found fresh are
    dequeued (committed). An unregistered hash is registered once: the full check queues every
    stale episode it finds, so the queue holds exactly what is stale whatever the caller then
    analyses (ingest analyses only its own episodes).
    """
    h = settings.settings_hash
    if _registered(session, h) or _register(session, settings):
        return _stale_query(session, settings, queue=True)
    return _stale_query(session, settings, queue=False)


def _registered(session: Session, h: str) -> bool:
    mark = AnalysisMark.__table__.c
    version = session.execute(
        select(mark.analysis_version).where(mark.settings_hash == h)
    ).scalar_one_or_none()
    return version == ANALYSIS_VERSION


_ENQUEUE = (
    "INSERT INTO episode_dirty (settings_hash, episode_id, seq) VALUES (:h, :e, 0) "
    "ON CONFLICT (settings_hash, episode_id) DO NOTHING"
)


def _register(session: Session, settings: Settings) -> bool:
    """List the hash in `analysis_mark` and queue every episode the full check finds stale, in
    one transaction: a change committed after it is queued by the triggers. On PostgreSQL a
    share lock on the input tables waits for writers in flight first (their triggers ran before
    the mark). False on a read-only store (checked in full each time instead)."""
    h = settings.settings_hash
    mark = AnalysisMark.__table__
    try:
        if session.get_bind().dialect.name == "postgresql":
            session.execute(text("LOCK TABLE episode, result IN SHARE MODE"))
        session.execute(delete(mark).where(mark.c.settings_hash == h))
        session.execute(insert(mark).values(settings_hash=h, analysis_version=ANALYSIS_VERSION))
        stale = _stale_query(session, settings, queue=False)
        if stale:
            rows = [{"h": h, "e": item.episode_id} for item in stale]
            session.connection().execute(text(_ENQUEUE), rows)
        session.commit()
        return True
    except Exception:  # noqa: BLE001 - a read-only store or an old schema: the full check
        session.rollback()
        return False


def _stale_query(session: Session, settings: Settings, *, queue: bool) -> list[Stale]:
    """The stamp comparison, over every episode (`queue` False) or over the queued ones."""
    h = settings.settings_hash
    e, r, st = Episode.__table__.c, Result.__table__.c, EpisodeStatus.__table__.c
    q = EpisodeDirty.__table__.c
    prefix, suffix = _settings_json_parts(settings)
    stamp = _inputs_stamp()
    is_stale = st.episode_id.is_(None) | (st.settings_json != literal(prefix) + stamp + suffix)
    joined = Episode.__table__.outerjoin(Result.__table__, r.episode_id == e.episode_id).outerjoin(
        EpisodeStatus.__table__,
        (st.episode_id == e.episode_id) & (st.settings_hash == h),
    )
    columns = [
        e.episode_id, e.task_id, e.harness, e.n_calls, stamp, st.episode_id.is_not(None),
        r.id, r.reward, r.checks_json, r.rubric_json,
    ]  # fmt: skip
    if queue:
        # An outer join: a queued episode that is gone (deleted) comes back with no episode,
        # nothing to analyse, and is dequeued (its Runs counts dropped by `_dequeue`).
        query = (
            select(*columns, q.seq, case((is_stale, 1), else_=0), q.episode_id)
            .select_from(
                # A flat chain of outer joins from the queue (a nested join is materialised
                # over every episode by SQLite): primary-key probes per queued episode.
                EpisodeDirty.__table__.outerjoin(Episode.__table__, e.episode_id == q.episode_id)
                .outerjoin(Result.__table__, r.episode_id == e.episode_id)
                .outerjoin(
                    EpisodeStatus.__table__,
                    (st.episode_id == e.episode_id) & (st.settings_hash == h),
                )
            )
            .where(q.settings_hash == h)
        )
    else:
        query = select(*columns, null(), literal(1), null()).select_from(joined).where(is_stale)
    # Group members together: a batch then refreshes most of its groups only once.
    query = query.order_by(e.task_id, e.harness, e.episode_id)
    out, fresh = [], []
    for row in session.execute(query):
        eid, task, harness, n_calls, stamp_text, stored, rid, rew, checks, rubric, seq, bad, qe = (
            row
        )
        if eid is None:  # queued, then deleted
            fresh.append({"b_h": h, "b_e": qe, "b_s": seq})
            continue
        if not bad:
            fresh.append({"b_h": h, "b_e": eid, "b_s": seq})
            continue
        reward = None
        if rid is not None:
            reward = reward_from_result(
                rew,
                orjson.loads(checks or "{}"),
                orjson.loads(rubric or "{}"),
                weights=settings.reward_weights,
            )
        out.append(Stale(eid, (task, harness), stamp_text, bool(stored), reward, n_calls or 0, seq))
    if queue and fresh:
        _dequeue(session, fresh)
    return out


def _stale_of_queue(session: Session, settings: Settings) -> list[Stale]:
    return _stale_query(session, settings, queue=True)


def _dequeue(session: Session, rows: list[dict[str, Any]]) -> None:
    """Delete queue rows that still carry the `seq` that was read (a newer change keeps its
    row), committed; a read-only store keeps its queue (the check stays right, only slower)."""
    q = EpisodeDirty.__table__
    try:
        # Unchanged inputs, but maybe a changed listing (a link, a deletion): the Runs counts.
        for h in {r["b_h"] for r in rows}:
            runstats.refresh(session, [r["b_e"] for r in rows if r["b_h"] == h], [h])
        session.connection().execute(
            delete(q).where(
                q.c.settings_hash == bindparam("b_h"),
                q.c.episode_id == bindparam("b_e"),
                q.c.seq == bindparam("b_s"),
            ),
            rows,
        )
        session.commit()
    except Exception:  # noqa: BLE001 - read-only: the queue stays, the check still holds
        session.rollback()


_VALUE_FIELDS = tuple(f for f in _DECISION_FIELDS if f != "match_ignored")
_DECISION_COLS = ("settings_hash", "episode_id", *_VALUE_FIELDS, "match_ignored")
"""Columns of `_decision_values`, in their order."""
_decision_fields = attrgetter(*_VALUE_FIELDS)


def _decision_values(a: EpisodeAnalysis, h: str, episode_id: str) -> list[tuple]:
    """The decision rows of an analysis as tuples in `_DECISION_COLS` order (one C call per
    decision reads its fields: dataclasses.asdict deep-copies and costs more than the insert)."""
    return [
        (
            h,
            episode_id,
            *_decision_fields(d),
            orjson.dumps(d.match_ignored).decode() if d.match_ignored else "[]",
        )
        for d in a.decisions.values()
    ]


def _decision_rows(a: EpisodeAnalysis, h: str, episode_id: str) -> list[dict]:
    return [dict(zip(_DECISION_COLS, v, strict=True)) for v in _decision_values(a, h, episode_id)]


def _insert_decisions(session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert decision rows given as dicts (see `_insert_decision_values`)."""
    if rows:
        cols = tuple(rows[0])
        _insert_decision_values(session, cols, [tuple(r[c] for c in cols) for r in rows])


def _insert_decision_values(session: Session, cols: tuple[str, ...], values: list[tuple]) -> None:
    """Insert decision rows; on SQLite through the driver's executemany (the hot path: one row
    per call, and SQLAlchemy's per-value parameter processing cost more than the insert).
    A text starting with `NUL_PREFIX` takes SQLAlchemy's path, which encodes it."""
    if not values:
        return
    plain = session.get_bind().dialect.name == "sqlite" and not any(
        isinstance(v, str) and v.startswith(NUL_PREFIX) for row in values for v in row
    )
    if not plain:
        session.connection().execute(
            insert(DecisionRow.__table__), [dict(zip(cols, v, strict=True)) for v in values]
        )
        return
    sql = f"INSERT INTO decision ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    session.connection().exec_driver_sql(sql, values)


def _chunks(items: list[str], n: int = 500) -> list[list[str]]:
    """Lists short enough for one `IN (...)` (SQLite limits bound parameters)."""
    return [items[i : i + n] for i in range(0, len(items), n)]


def persist_analyses(
    session: Session, analyses: list[tuple[EpisodeAnalysis, Stale]], settings: Settings
) -> None:
    """Replace the stored decisions and statuses of a batch of analysed episodes."""
    h = settings.settings_hash
    dec, sts = DecisionRow.__table__, EpisodeStatus.__table__
    # Every episode of the batch, not only those stored before this run looked: a parallel
    # process may have stored one since (on SQLite the delete and insert are one write).
    replaced = [a.episode_id for a, _ in analyses]
    # Core statements on the session's connection: plain tables, no ORM bookkeeping.
    con = session.connection()
    for chunk in _chunks(replaced):
        con.execute(delete(dec).where(dec.c.settings_hash == h, dec.c.episode_id.in_(chunk)))
        con.execute(delete(sts).where(sts.c.settings_hash == h, sts.c.episode_id.in_(chunk)))
    # Calls can move between episodes (a file's fallback episode resolved later).
    for chunk in _chunks([cid for a, _ in analyses for cid in a.decisions]):
        con.execute(delete(dec).where(dec.c.settings_hash == h, dec.c.call_id.in_(chunk)))
    values = [v for a, _ in analyses for v in _decision_values(a, h, a.episode_id)]
    _insert_decision_values(session, _DECISION_COLS, values)
    prefix, suffix = _settings_json_parts(settings)
    now = utcnow()
    con.execute(
        insert(sts),
        [
            {
                "settings_hash": h,
                "episode_id": a.episode_id,
                "status": a.status,
                "reasons_json": orjson.dumps(a.reasons).decode(),
                "reward": a.reward,
                "advantage": a.advantage,
                "n_segments": a.n_segments,
                "paths_json": orjson.dumps(a.paths).decode(),
                "settings_json": prefix + item.stamp + suffix,
                "computed_at": now,
            }
            for a, item in analyses
        ],
    )
    q = EpisodeDirty.__table__
    queued = [
        {"b_h": h, "b_e": item.episode_id, "b_s": item.queued}
        for _, item in analyses
        if item.queued is not None
    ]
    if queued:
        # In the batch's transaction: dequeued exactly when its analysis is stored.
        con.execute(
            delete(q).where(
                q.c.settings_hash == bindparam("b_h"),
                q.c.episode_id == bindparam("b_e"),
                q.c.seq == bindparam("b_s"),
            ),
            queued,
        )
    runstats.refresh(session, replaced, [h])


def unattached_stale(session: Session, settings: Settings) -> bool:
    """Whether the calls of no episode lack their decisions under these settings."""
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
    return bool(n_calls != n_done)


def replace_unattached(session: Session, settings: Settings, a: EpisodeAnalysis) -> None:
    """Store the decisions of the calls of no episode (replacing the old ones) and commit."""
    h = settings.settings_hash
    session.execute(
        delete(DecisionRow).where(
            DecisionRow.settings_hash == h, DecisionRow.episode_id == UNATTACHED
        )
    )
    rows = _decision_rows(a, h, UNATTACHED)
    if rows:
        session.execute(insert(DecisionRow.__table__), rows)
    session.commit()


Group = tuple[str | None, str | None]
"""(task, harness): the group GRPO compares attempts in."""


def group_statuses(
    session: Session, settings: Settings, groups: set[Group], solo: list[str]
) -> tuple[list[EpisodeAnalysis], dict[str, Group]]:
    """The stored statuses (no decisions) of every episode of these groups and of the `solo`
    episodes (no task), with the group of each."""
    h = settings.settings_hash
    e, st = Episode.__table__.c, EpisodeStatus.__table__.c
    shared = sorted((t, hn) for t, hn in groups if t is not None)
    conditions = []
    for chunk in _chunks(solo):
        conditions.append(st.episode_id.in_(chunk))
    for i in range(0, len(shared), 200):
        conditions.append(
            or_(
                *(
                    (e.task_id == t) & (e.harness.is_(None) if hn is None else e.harness == hn)
                    for t, hn in shared[i : i + 200]
                )
            )
        )
    group_of: dict[str, Group] = {}
    analyses = []
    for cond in conditions:
        query = (
            select(
                st.episode_id,
                st.status,
                st.reasons_json,
                st.paths_json,
                st.reward,
                e.task_id,
                e.harness,
            )
            .select_from(
                EpisodeStatus.__table__.join(Episode.__table__, e.episode_id == st.episode_id)
            )
            .where(st.settings_hash == h, cond)
            # A fixed order: the group's mean and sigma are then summed in the same order
            # however the statuses were written (one process, or several workers' batches).
            .order_by(st.episode_id)
        )
        for eid, status, reasons_json, paths_json, reward, task, harness in session.execute(query):
            if eid in group_of:
                continue
            group_of[eid] = (task, harness)
            reasons = [Reason(**r) for r in orjson.loads(reasons_json)]
            paths = [PathInfo(**p) for p in orjson.loads(paths_json)]
            analyses.append(EpisodeAnalysis(eid, h, status, reasons, {}, paths, reward))  # type: ignore[arg-type]
    return analyses, group_of


def store_advantages(session: Session, settings: Settings, analyses: list[EpisodeAnalysis]) -> None:
    """Write back the advantage and paths of each analysis (after GRPO)."""
    if not analyses:
        return
    h = settings.settings_hash
    sts = EpisodeStatus.__table__
    session.connection().execute(
        update(sts)
        .where(sts.c.settings_hash == bindparam("b_h"), sts.c.episode_id == bindparam("b_e"))
        .values(advantage=bindparam("b_adv"), paths_json=bindparam("b_paths")),
        [
            {
                "b_h": h,
                "b_e": a.episode_id,
                "b_adv": a.advantage,
                "b_paths": orjson.dumps(a.paths).decode(),
            }
            for a in analyses
        ],
    )
    runstats.refresh(session, [a.episode_id for a in analyses], [h])


def read_analysis(
    session: Session, episode_id: str, settings: Settings = DEFAULT_SETTINGS
) -> EpisodeAnalysis:
    """An episode's stored analysis under these settings (KeyError if there is none).

    `clawviz.jobs.analyse.episode_analysis` computes it first when needed."""
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
            match_ignored=orjson.loads(d.match_ignored or "[]"),
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
