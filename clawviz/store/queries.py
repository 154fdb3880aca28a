"""Read-side queries for the app: one SQL statement each, straight into pandas.

Pages call these (through `clawviz.ui` caches) and only render the frames; the functions are
pure of Streamlit so the CLI and tests can use them too. They stay fast on 25,000 episodes by
never loading ORM objects row by row.

pandas is imported by the functions that build a frame, not by this module: the Episode page's
first view reads `episode_rows` (plain tuples) and so never loads pandas (0.5 s of a fresh
server's first run; bench/README.md "sixth pass").
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
from sqlalchemy import text
from sqlmodel import Session

from clawviz.store.models import reason_codes, restore_nul

if TYPE_CHECKING:
    import pandas as pd

PAPER_STATS: dict[str, float] = {
    "turns": 13.0,
    "tokens": 18_670.0,
    "tool_calls": 15.82,
    "tool_types": 3.25,
}
"""Per-trajectory means the ClawGym SFT paper reports for its kept trajectories."""

STAT_LABELS: dict[str, str] = {
    "turns": "Turns",
    "tokens": "Tokens",
    "tool_calls": "Tool calls",
    "tool_types": "Tool types",
}

EPISODE_COLUMNS = [
    "episode_id",
    "task_id",
    "harness",
    "model",
    "attempt",
    "n_calls",
    "reward",
    "advantage",
    "status",
    "reasons",
    "source_kind",
]


@dataclass(frozen=True)
class EpisodeFilter:
    """What the Runs page filters on; empty tuples mean "any"."""

    tasks: tuple[str, ...] = ()
    harnesses: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    statuses: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    reward_min: float | None = None
    reward_max: float | None = None
    include_missing_reward: bool = True


@dataclass
class DatasetStats:
    """Per-trajectory statistics of kept episodes, next to the paper's figures."""

    n_trajectories: int
    per_trajectory: pd.DataFrame
    means: dict[str, float] = field(default_factory=dict)

    def comparison(self) -> pd.DataFrame:
        """One row per statistic: ours, the paper's, and the ratio."""
        import pandas as pd

        rows = []
        for key, label in STAT_LABELS.items():
            ours = self.means.get(key)
            paper = PAPER_STATS[key]
            rows.append(
                {
                    "statistic": label,
                    "this store": ours,
                    "paper (ClawGym SFT)": paper,
                    "ratio": (ours / paper) if ours is not None else None,
                }
            )
        return pd.DataFrame(rows)


def _read(session: Session, sql: str, **params) -> pd.DataFrame:
    import pandas as pd

    return pd.read_sql_query(text(sql), session.connection(), params=params)


LIVE_WINDOW_S = 120.0
"""An episode with a call this recent (recorder time) counts as live on the Runs page."""


@dataclass(frozen=True)
class LiveState:
    """What changes while a recording runs: the store's size and the live episodes."""

    stamp: tuple[int, int, float]
    """(episodes, calls, latest call time): differs whenever anything was ingested."""
    live: tuple[str, ...]
    """Episodes with a call in the last `LIVE_WINDOW_S` seconds, newest first."""


def live_state(session: Session, now: float, window_s: float = LIVE_WINDOW_S) -> LiveState:
    """Two cheap aggregate reads (the Runs page polls them while it is open)."""
    conn = session.connection()
    n_ep, n_calls, last = conn.execute(
        text("SELECT COUNT(*), COALESCE(SUM(n_calls), 0), COALESCE(MAX(last_ts), 0) FROM episode")
    ).one()
    live = conn.execute(
        text("SELECT episode_id FROM episode WHERE last_ts >= :cut ORDER BY last_ts DESC LIMIT 50"),
        {"cut": now - window_s},
    ).scalars()
    return LiveState((int(n_ep), int(n_calls), float(last)), tuple(live))


def store_counts(session: Session) -> dict[str, int]:
    """Row counts of the main tables (sources, episodes, calls, results, tasks, rejected)."""
    sql = (
        "SELECT (SELECT COUNT(*) FROM source) AS sources, "
        "(SELECT COUNT(*) FROM episode) AS episodes, "
        '(SELECT COUNT(*) FROM "call") AS calls, '
        "(SELECT COUNT(*) FROM result) AS results, "
        "(SELECT COUNT(*) FROM task) AS tasks, "
        "(SELECT COUNT(*) FROM rejected_line) AS rejected"
    )
    row = session.connection().execute(text(sql)).mappings().one()
    return {k: int(v or 0) for k, v in row.items()}


REASON_SEP = ", "
"""Joins an episode's reason codes in the `reasons` column (a plain string, cheap to render)."""


def _joined_reasons(reasons_json: pd.Series) -> pd.Series:
    """`reasons_json` values as joined reason codes, parsing each distinct value once."""
    distinct = reasons_json.dropna().unique()
    joined = {v: REASON_SEP.join(reason_codes(v)) for v in distinct}
    return reasons_json.map(joined).fillna("").astype(str)


def split_reasons(joined: str | None) -> list[str]:
    """The reason codes of one `reasons` cell."""
    return joined.split(REASON_SEP) if joined else []


# Episodes joined with their verdict under :h and their verifier result; callers add WHERE / ORDER.
_EPISODE_ROWS_SQL = """
        SELECT e.episode_id, e.task_id, e.harness, e.model, e.attempt, e.n_calls,
               COALESCE(s.reward, r.reward) AS reward, s.advantage AS advantage,
               COALESCE(s.status, 'not analysed') AS status,
               s.reasons_json AS reasons, e.source_kind
        FROM episode e
        LEFT JOIN episode_status s
          ON s.episode_id = e.episode_id AND s.settings_hash = :h
        LEFT JOIN result r ON r.episode_id = e.episode_id
"""

_PRIMARY_SQL = "e.primary_episode IS NULL"
"""A transcript linked to its session's wire episode (`jobs.sessions`) is a cross-check of that
episode, not a second one: every Runs listing, count and chart leaves it out."""
_PRIMARY_WHERE = f" WHERE {_PRIMARY_SQL}"

_EPISODE_ORDER_SQL = """
        ORDER BY e.task_id IS NULL, e.task_id, e.harness IS NULL, e.harness,
                 e.attempt IS NULL, e.attempt, e.episode_id
"""
"""The Runs table's order of every episode (`episodes_frame`, `episode_rows`)."""


def episodes_frame(session: Session, settings_hash: str) -> pd.DataFrame:
    """Every episode with its verdict under `settings_hash` and its verifier result.

    `reasons` holds the episode's reason codes joined by `REASON_SEP` (one string per row: a
    list column makes the 25,000-row table's pickling and Arrow conversion slow).
    """
    sql = _EPISODE_ROWS_SQL + _PRIMARY_WHERE + _EPISODE_ORDER_SQL
    return _episode_rows(_read(session, sql, h=settings_hash))


class EpisodeRow(NamedTuple):
    """One row of `episodes_frame` as a plain tuple (same columns, same order, same values;
    missing values are None, never NaN)."""

    episode_id: str
    task_id: str | None
    harness: str | None
    model: str | None
    attempt: int | None
    n_calls: int | None
    reward: float | None
    advantage: float | None
    status: str
    reasons: str
    source_kind: str | None


def _float_or_none(v: object) -> float | None:
    if v is None:
        return None
    x = float(v)  # type: ignore[arg-type]
    return None if math.isnan(x) else x


def _int_or_none(v: object) -> int | None:
    return None if v is None else int(v)  # type: ignore[call-overload]


def episode_rows(session: Session, settings_hash: str) -> list[EpisodeRow]:
    """`episodes_frame` without pandas, same rows and order (the Episode page's switcher: its
    first view imports no pandas). Each distinct `reasons_json` is parsed once, as there."""
    rows = session.connection().execute(
        text(_EPISODE_ROWS_SQL + _PRIMARY_WHERE + _EPISODE_ORDER_SQL), {"h": settings_hash}
    )
    joined: dict[str | None, str] = {None: ""}
    out: list[EpisodeRow] = []
    for ep, task, harness, model, attempt, n_calls, reward, adv, status, rj, kind in rows:
        if rj not in joined:
            joined[rj] = REASON_SEP.join(reason_codes(rj))
        out.append(
            EpisodeRow(
                str(ep),
                task,
                harness,
                model,
                _int_or_none(attempt),
                _int_or_none(n_calls),
                _float_or_none(reward),
                _float_or_none(adv),
                str(status),
                joined[rj],
                kind,
            )
        )
    return out


def listing_chunks(session: Session, settings_hash: str, chunk: int) -> Iterator[Sequence[Any]]:
    """`clawviz episodes` rows in `chunk`-row lists, read as they are consumed: a server-side
    cursor on PostgreSQL, the stepping sqlite3 cursor on SQLite. Each row is (episode_id,
    task_id, harness, model, attempt, n_calls, status, reasons_json, result id, reward,
    checks_json, rubric_json). The lookups of each chunk may run on the same connection while
    the cursor stays open (a psycopg named cursor lives in the transaction)."""
    from sqlmodel import col, select

    from clawviz.store.models import Episode, EpisodeStatus, Result

    e, st, r = Episode.__table__.c, EpisodeStatus.__table__.c, Result.__table__.c
    query = (
        select(
            e.episode_id,
            e.task_id,
            e.harness,
            e.model,
            e.attempt,
            e.n_calls,
            st.status,
            st.reasons_json,
            r.id,
            r.reward,
            r.checks_json,
            r.rubric_json,
        )  # fmt: skip
        .select_from(
            Episode.__table__.outerjoin(
                EpisodeStatus.__table__,
                (st.episode_id == e.episode_id) & (st.settings_hash == settings_hash),
            ).outerjoin(Result.__table__, r.episode_id == e.episode_id)
        )
        .order_by(col(e.task_id), col(e.harness), col(e.attempt), col(e.episode_id))
    )
    conn = session.connection().execution_options(stream_results=True, yield_per=chunk)
    yield from conn.execute(query).partitions(chunk)


def filter_rows(rows: Iterable[EpisodeRow], f: EpisodeFilter) -> list[EpisodeRow]:
    """`filter_episodes` on `episode_rows`: the rows that pass the filter, in order."""
    wanted = set(f.reasons)
    hit: dict[str, bool] = {}

    def keep(r: EpisodeRow) -> bool:
        if f.tasks and r.task_id not in f.tasks:
            return False
        if f.harnesses and r.harness not in f.harnesses:
            return False
        if f.models and r.model not in f.models:
            return False
        if f.statuses and r.status not in f.statuses:
            return False
        if wanted:
            if r.reasons not in hit:
                hit[r.reasons] = bool(wanted.intersection(split_reasons(r.reasons)))
            if not hit[r.reasons]:
                return False
        if r.reward is None:
            return f.include_missing_reward
        if f.reward_min is not None and not r.reward >= f.reward_min:
            return False
        return f.reward_max is None or r.reward <= f.reward_max

    return [r for r in rows if keep(r)]


def _episode_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Typed EPISODE_COLUMNS of a query that selected them (reasons still as JSON)."""
    import pandas as pd

    if df.empty:
        return pd.DataFrame(columns=EPISODE_COLUMNS)
    df["reasons"] = _joined_reasons(df["reasons"])
    df["attempt"] = df["attempt"].astype("Int64")
    df["n_calls"] = df["n_calls"].astype("Int64")
    df["reward"] = df["reward"].astype(float)
    df["advantage"] = df["advantage"].astype(float)
    return df[EPISODE_COLUMNS].reset_index(drop=True)


def filter_episodes(df: pd.DataFrame, f: EpisodeFilter) -> pd.DataFrame:
    """Rows of an `episodes_frame` that pass the filter."""
    import pandas as pd

    mask = pd.Series(True, index=df.index)
    if f.tasks:
        mask &= df["task_id"].isin(f.tasks)
    if f.harnesses:
        mask &= df["harness"].isin(f.harnesses)
    if f.models:
        mask &= df["model"].isin(f.models)
    if f.statuses:
        mask &= df["status"].isin(f.statuses)
    if f.reasons:
        wanted = set(f.reasons)
        # Few distinct reason strings even at 25,000 episodes: test each one once.
        hit = {v: bool(wanted.intersection(split_reasons(v))) for v in df["reasons"].unique()}
        mask &= df["reasons"].map(hit).astype(bool)
    reward = pd.to_numeric(df["reward"], errors="coerce")
    in_range = pd.Series(True, index=df.index)
    if f.reward_min is not None:
        in_range &= reward >= f.reward_min
    if f.reward_max is not None:
        in_range &= reward <= f.reward_max
    missing = reward.isna()
    mask &= (in_range & ~missing) | (missing & f.include_missing_reward)
    return df[mask]


def reason_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Number of episodes carrying each reason code (an episode counts once per code)."""
    import pandas as pd

    counts: dict[str, int] = defaultdict(int)
    for joined, n in df["reasons"].value_counts().items():
        for code in split_reasons(joined):
            counts[code] += int(n)
    out = pd.DataFrame(
        sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])), columns=["reason", "episodes"]
    )
    return out


def all_reasons(df: pd.DataFrame) -> list[str]:
    """Every reason code present in an `episodes_frame`, sorted."""
    return sorted({c for v in df["reasons"].unique() for c in split_reasons(v)})


def count_with_reason(df: pd.DataFrame, code: str) -> int:
    """Episodes of an `episodes_frame` that list reason `code` (e.g. `unexplained_root`)."""
    return int(sum(code in split_reasons(v) for v in df["reasons"]))


def group_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Episodes that have an advantage, labelled by their GRPO group (task / harness)."""
    have = df[df["advantage"].notna()].copy()
    have["group"] = have["task_id"].fillna("?") + " / " + have["harness"].fillna("?")
    return have


def sources_frame(session: Session) -> pd.DataFrame:
    """Ingested files, newest first."""
    sql = """
        SELECT id, path, format, size_bytes, n_lines, n_calls, n_episodes, n_rejected,
               ingested_at
        FROM source ORDER BY ingested_at DESC, id DESC
    """
    return _read(session, sql)


def rejected_frame(session: Session, *, limit: int = 5000) -> pd.DataFrame:
    """Rejected lines (file, line, reason, raw text), oldest first, at most `limit` rows."""
    sql = """
        SELECT source_file AS file, line, reason, raw
        FROM rejected_line ORDER BY id LIMIT :limit
    """
    df = _read(session, sql, limit=limit)
    df["raw"] = df["raw"].map(restore_nul)
    return df


def attempts_of_task(session: Session, task_id: str, settings_hash: str) -> pd.DataFrame:
    """Every attempt of one task (any harness), for the Compare picker; one query."""
    sql = (
        _EPISODE_ROWS_SQL
        + """
        WHERE e.task_id = :t AND e.primary_episode IS NULL
        ORDER BY e.harness, e.attempt, e.episode_id
    """
    )
    return _episode_rows(_read(session, sql, h=settings_hash, t=task_id))


def _tool_uses(response_json: str | None) -> list[str]:
    if not response_json:
        return []
    try:
        msg = orjson.loads(response_json)
    except orjson.JSONDecodeError:
        return []
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return []
    return [
        str(b.get("name", "?"))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


_KEPT_CALLS_SQL = """
    SELECT d.episode_id AS episode_id, d.segment AS segment, c.seq AS seq,
           c.t_request AS t_request, c.line AS line, c.response_json AS response_json,
           COALESCE(c.input_tokens, 0) + COALESCE(c.output_tokens, 0)
             + COALESCE(c.cache_read_input_tokens, 0)
             + COALESCE(c.cache_creation_input_tokens, 0) AS context
    FROM decision d
    JOIN episode_status s
      ON s.episode_id = d.episode_id AND s.settings_hash = d.settings_hash
    JOIN "call" c ON c.call_id = d.call_id
    WHERE d.settings_hash = :h AND d.state = 'kept' AND s.status = 'kept'
"""

# SQLite does the heavy part (JSON of every kept response) in C: a Python loop over 370K
# responses would take a minute at the benchmark's 25,000 episodes.
_SQLITE_STATS_SQL = f"""
    WITH kept AS ({_KEPT_CALLS_SQL}),
    ranked AS (
      SELECT episode_id, context, ROW_NUMBER() OVER (
        PARTITION BY episode_id, segment
        ORDER BY seq DESC, t_request DESC, line DESC) AS rn
      FROM kept
    ),
    turns AS (SELECT episode_id, COUNT(*) AS turns FROM kept GROUP BY episode_id),
    tokens AS (SELECT episode_id, SUM(context) AS tokens FROM ranked WHERE rn = 1
               GROUP BY episode_id),
    tools AS (
      SELECT k.episode_id, COUNT(*) AS tool_calls,
             COUNT(DISTINCT json_extract(j.value, '$.name')) AS tool_types
      FROM kept k, json_each(k.response_json, '$.content') j
      WHERE json_valid(k.response_json) AND json_extract(j.value, '$.type') = 'tool_use'
      GROUP BY k.episode_id
    )
    SELECT t.episode_id, t.turns, COALESCE(k.tokens, 0) AS tokens,
           COALESCE(u.tool_calls, 0) AS tool_calls, COALESCE(u.tool_types, 0) AS tool_types
    FROM turns t
    LEFT JOIN tokens k ON k.episode_id = t.episode_id
    LEFT JOIN tools u ON u.episode_id = t.episode_id
    ORDER BY t.episode_id
"""

_STAT_COLUMNS = ["episode_id", "turns", "tokens", "tool_calls", "tool_types"]


def dataset_stats(session: Session, settings_hash: str) -> DatasetStats:
    """Turns, tokens, tool calls and tool types per kept trajectory (kept episodes only).

    A trajectory is an episode's kept main calls. Turns = kept calls; tokens = for each segment,
    the full context of its last kept call (prompt incl. cache + output), summed over segments;
    tool calls = tool_use blocks in the kept responses; tool types = distinct tool names.
    """
    import pandas as pd

    if session.get_bind().dialect.name == "sqlite":
        per = _read(session, _SQLITE_STATS_SQL, h=settings_hash)
    else:
        per = _stats_in_python(_read(session, _KEPT_CALLS_SQL, h=settings_hash))
    if per.empty:
        return DatasetStats(0, pd.DataFrame(columns=_STAT_COLUMNS), {})
    per = per[_STAT_COLUMNS].astype({k: float for k in PAPER_STATS})
    means = {k: float(per[k].mean()) for k in PAPER_STATS}
    return DatasetStats(len(per), per.reset_index(drop=True), means)


def _stats_in_python(df: pd.DataFrame) -> pd.DataFrame:
    """The same per-trajectory figures as _SQLITE_STATS_SQL, for stores without SQLite JSON."""
    import pandas as pd

    if df.empty:
        return pd.DataFrame(columns=_STAT_COLUMNS)
    df = df.assign(tools=[_tool_uses(v) for v in df["response_json"]])
    df = df.sort_values(["episode_id", "segment", "seq", "t_request", "line"], na_position="first")
    tokens = df.groupby(["episode_id", "segment"], dropna=False)["context"].last()
    per = df.groupby("episode_id").agg(
        turns=("context", "size"),
        tool_calls=("tools", lambda s: sum(len(t) for t in s)),
        tool_types=("tools", lambda s: len({n for t in s for n in t})),
    )
    per["tokens"] = tokens.groupby(level=0).sum()
    return per.reset_index()


# --- the Runs page at O(page): filters, sort, page and aggregates in SQL -------------------------
RUNS_PAGE_SIZE = 25
"""Rows of one Runs page: a screenful (the table scrolls inside it)."""

RUNS_SORTS: dict[str, str] = {
    "episode_id": "e.episode_id",
    "task_id": "e.task_id",
    "harness": "e.harness",
    "model": "e.model",
    "attempt": "e.attempt",
    "n_calls": "e.n_calls",
    "reward": "COALESCE(s.reward, r.reward)",
    "advantage": "s.advantage",
    "status": "COALESCE(s.status, 'not analysed')",
}
"""Columns the Runs table sorts on -> their SQL (nothing else reaches the ORDER BY)."""

KNOWN_REASONS: tuple[str, ...] = (
    "too_many_branches",
    "ended_in_error",
    "unsupported_tool",
    "missing_reward",
    "below_reward_threshold",
    "unexplained_root",
    "unexplained_edit",
    "lost_kept_call",
    "analysis_error",
    "superseded_retry",
    "not_longest",
    "failed_http",
    "truncated_stream",
    "orphaned_request",
)
"""Reason codes an episode's verdict can carry (`types.ReasonCode`, the self-check's
`unexplained_root`, `unexplained_edit`, `lost_kept_call`, `jobs.analyse.ANALYSIS_ERROR`): what
the SQL counts and filters look for."""

_FROM_RUNS = """
        FROM episode e
        LEFT JOIN episode_status s
          ON s.episode_id = e.episode_id AND s.settings_hash = :h
        LEFT JOIN result r ON r.episode_id = e.episode_id
"""


def _reason_like(code: str) -> str:
    """The LIKE pattern of a reason code in `reasons_json` (orjson: `"code":"x"`, no spaces; a
    `"code":` inside an evidence string is escaped as `\\"code\\":`, so it never matches)."""
    escaped = code.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f'%"code":"{escaped}"%'


def _runs_where(f: EpisodeFilter, matching: Iterable[str] | None) -> tuple[str, dict[str, Any]]:
    """The WHERE clause (with its parameters) of a Runs filter plus a search's episodes (never
    a transcript linked to its wire episode: `_PRIMARY_SQL`)."""
    conds: list[str] = [_PRIMARY_SQL]
    params: dict[str, Any] = {}

    def one_of(sql: str, name: str, values: Iterable[str]) -> None:
        names = []
        for i, v in enumerate(values):
            params[f"{name}{i}"] = v
            names.append(f":{name}{i}")
        conds.append(f"{sql} IN ({', '.join(names)})" if names else "1 = 0")

    if f.tasks:
        one_of("e.task_id", "t", f.tasks)
    if f.harnesses:
        one_of("e.harness", "hn", f.harnesses)
    if f.models:
        one_of("e.model", "m", f.models)
    if f.statuses:
        one_of(RUNS_SORTS["status"], "st", f.statuses)
    if f.reasons:
        likes = []
        for i, code in enumerate(f.reasons):
            params[f"rc{i}"] = _reason_like(code)
            likes.append(f"s.reasons_json LIKE :rc{i} ESCAPE '\\'")
        conds.append("(" + " OR ".join(likes) + ")")
    reward = RUNS_SORTS["reward"]
    in_range = []
    if f.reward_min is not None:
        params["rmin"] = f.reward_min
        in_range.append(f"{reward} >= :rmin")
    if f.reward_max is not None:
        params["rmax"] = f.reward_max
        in_range.append(f"{reward} <= :rmax")
    present = " AND ".join([f"{reward} IS NOT NULL", *in_range])
    if not f.include_missing_reward:
        conds.append(present)
    elif in_range:  # with no range and missing rewards included, every episode passes
        conds.append(f"(({present}) OR {reward} IS NULL)")
    if matching is not None:
        one_of("e.episode_id", "q", sorted(matching))
    return "WHERE " + " AND ".join(conds), params


def _runs_order(sort: str | None, descending: bool) -> str:
    if sort not in RUNS_SORTS:
        return _EPISODE_ORDER_SQL
    col = RUNS_SORTS[sort]
    tail = _EPISODE_ORDER_SQL.replace("ORDER BY", ",", 1)
    return f" ORDER BY {col} IS NULL, {col} {'DESC' if descending else 'ASC'}{tail}"


@dataclass(frozen=True)
class RunsQuery:
    """One Runs view: the filter, a search's episodes (None: no search), the sort and page."""

    filter: EpisodeFilter = EpisodeFilter()
    matching: tuple[str, ...] | None = None
    sort: str | None = None
    descending: bool = False
    page: int = 0
    page_size: int = RUNS_PAGE_SIZE


def runs_page(session: Session, settings_hash: str, q: RunsQuery) -> pd.DataFrame:
    """One page of the Runs table (EPISODE_COLUMNS), filtered, sorted and cut in SQL."""
    where, params = _runs_where(q.filter, q.matching)
    params.update(h=settings_hash, lim=q.page_size, off=max(q.page, 0) * q.page_size)
    sql = _EPISODE_ROWS_SQL + where + _runs_order(q.sort, q.descending) + " LIMIT :lim OFFSET :off"
    return _episode_rows(_read(session, sql, **params))


@dataclass(frozen=True)
class RunsSummary:
    """SQL aggregates of a set of episodes (the Runs metrics)."""

    episodes: int
    kept: int
    dropped: int
    unexplained: int
    calls: int
    tasks: int
    with_reward: int


def runs_aggregates(
    session: Session, settings_hash: str, f: EpisodeFilter = EpisodeFilter(),
    matching: Iterable[str] | None = None,
) -> tuple[RunsSummary, pd.DataFrame]:  # fmt: skip
    """The counts and the episodes per reason code of the episodes a filter (and search)
    selects, in one aggregate query (one pass over them)."""
    import pandas as pd

    if _kept(session, settings_hash, f, matching):
        return _kept_aggregates(session, settings_hash)
    where, params = _runs_where(f, matching)
    params.update(h=settings_hash, ur=_reason_like("unexplained_root"))
    sums = []
    for i, code in enumerate(KNOWN_REASONS):
        params[f"k{i}"] = _reason_like(code)
        sums.append(
            f"COALESCE(SUM(CASE WHEN s.reasons_json LIKE :k{i} ESCAPE '\\' THEN 1 ELSE 0 END), 0)"
        )
    sql = f"""
        SELECT COUNT(*),
               COALESCE(SUM(CASE WHEN s.status = 'kept' THEN 1 ELSE 0 END), 0),
               COALESCE(SUM(CASE WHEN s.status = 'dropped' THEN 1 ELSE 0 END), 0),
               COALESCE(SUM(CASE WHEN s.reasons_json LIKE :ur ESCAPE '\\' THEN 1 ELSE 0 END), 0),
               COALESCE(SUM(e.n_calls), 0), COUNT(DISTINCT e.task_id),
               COUNT(COALESCE(s.reward, r.reward)), {", ".join(sums)}
        {_FROM_RUNS} {where}
    """  # noqa: S608 - every value is a bound parameter
    row = [int(v or 0) for v in session.connection().execute(text(sql), params).one()]
    summary = RunsSummary(*row[:7])
    counts = [(code, n) for code, n in zip(KNOWN_REASONS, row[7:], strict=True) if n]
    counts.sort(key=lambda kv: (-kv[1], kv[0]))
    return summary, pd.DataFrame(counts, columns=["reason", "episodes"])


def _kept(
    session: Session, settings_hash: str, f: EpisodeFilter, matching: Iterable[str] | None
) -> bool:
    """Whether a view is the unfiltered one and its counts are kept (`runstats.ensure`): then
    they are read, not recomputed over every episode."""
    from clawviz.store import runstats

    return f == EpisodeFilter() and matching is None and runstats.ensure(session, settings_hash)


def _kept_aggregates(session: Session, settings_hash: str) -> tuple[RunsSummary, pd.DataFrame]:
    import pandas as pd

    from clawviz.store import runstats

    c = runstats.counts(session, settings_hash)
    summary = RunsSummary(
        episodes=c.episodes,
        kept=c.statuses.get("kept", 0),
        dropped=c.statuses.get("dropped", 0),
        unexplained=c.reasons.get("unexplained_root", 0),
        calls=c.calls,
        tasks=c.tasks,
        with_reward=c.with_reward,
    )
    counts = [(code, c.reasons[code]) for code in KNOWN_REASONS if c.reasons.get(code)]
    counts.sort(key=lambda kv: (-kv[1], kv[0]))
    return summary, pd.DataFrame(counts, columns=["reason", "episodes"])


def runs_summary(
    session: Session, settings_hash: str, f: EpisodeFilter = EpisodeFilter(),
    matching: Iterable[str] | None = None,
) -> RunsSummary:  # fmt: skip
    """Counts over the episodes a filter (and search) selects (`runs_aggregates`)."""
    return runs_aggregates(session, settings_hash, f, matching)[0]


def runs_options(session: Session, settings_hash: str) -> dict[str, list[str]]:
    """What the Harness, Model and Status filters offer: their distinct values (keys harness,
    model, status). The tasks, which grow with the store, are `runs_task_options`'s: a page of
    them, never the whole list."""
    from clawviz.store import runstats

    if runstats.ensure(session, settings_hash):
        kinds = {"harness": "harness", "model": "model", "status": "status"}
        return {key: runstats.values(session, settings_hash, kind) for key, kind in kinds.items()}
    conn = session.connection()
    out: dict[str, list[str]] = {}
    for key in ("harness", "model"):
        sql = f"SELECT DISTINCT {key} FROM episode e WHERE {key} IS NOT NULL AND {_PRIMARY_SQL}"
        out[key] = sorted(str(v) for v in conn.execute(text(sql)).scalars())
    # Statuses from the status table alone (its key starts with the hash), plus 'not analysed'
    # when some episode has no status under it: no join over every episode.
    statuses = set(
        conn.execute(
            text("SELECT DISTINCT status FROM episode_status WHERE settings_hash = :h"),
            {"h": settings_hash},
        ).scalars()
    )
    n_status, n_episodes = conn.execute(
        text(
            "SELECT (SELECT COUNT(*) FROM episode_status WHERE settings_hash = :h), "
            f"(SELECT COUNT(*) FROM episode e WHERE {_PRIMARY_SQL})"
        ),
        {"h": settings_hash},
    ).one()
    if n_status < n_episodes:
        statuses.add("not analysed")
    out["status"] = sorted(str(v) for v in statuses)
    return out


TASK_OPTIONS = 50
"""Most tasks the Runs Task filter offers at once (a run has tens of thousands: the filter
offers the first ones matching what the user typed, plus the ones already chosen)."""


@dataclass(frozen=True)
class TaskOptions:
    """A page of the Task filter's values."""

    tasks: list[str]
    """The chosen tasks that the store has, then the first `TASK_OPTIONS` (by name) whose name
    contains the text typed, each once."""
    more: bool
    """Whether more tasks match the text than are offered."""


def _contains(find: str) -> str:
    escaped = find.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def runs_task_options(
    session: Session, settings_hash: str, find: str = "", chosen: Sequence[str] = (),
    limit: int = TASK_OPTIONS,
) -> TaskOptions:  # fmt: skip
    """The Task filter's page of values: at most `limit` tasks whose name contains `find`
    (case-insensitive), in name order, plus the `chosen` ones the store has. Reads `limit` + 1
    keys of the kept task counts (`runstats`) or of the episode table's task index, never
    every task."""
    from clawviz.store import runstats

    params: dict[str, Any] = {"h": settings_hash, "pat": _contains(find.strip()), "lim": limit + 1}
    if runstats.ensure(session, settings_hash):
        source = f"SELECT key AS t FROM {runstats.AGG} WHERE settings_hash = :h AND kind = 'task' AND n > 0"  # noqa: E501
    else:
        source = f"SELECT DISTINCT task_id AS t FROM episode e WHERE task_id IS NOT NULL AND {_PRIMARY_SQL}"  # noqa: E501
    conn = session.connection()  # after `ensure`, which may commit
    found = [
        str(v)
        for v in conn.execute(
            text(
                f"SELECT t FROM ({source}) x WHERE LOWER(t) LIKE :pat ESCAPE '\\' "  # noqa: S608
                "ORDER BY t LIMIT :lim"
            ),
            params,
        ).scalars()
    ]
    have: list[str] = []
    wanted = sorted({str(c) for c in chosen if c})
    for i in range(0, len(wanted), 500):
        chunk = {f"c{j}": v for j, v in enumerate(wanted[i : i + 500])}
        marks = ", ".join(f":{k}" for k in chunk)
        rows = conn.execute(
            text(f"SELECT t FROM ({source}) x WHERE t IN ({marks})"),  # noqa: S608
            {**params, **chunk},
        ).scalars()
        have += sorted(str(v) for v in rows)
    offered = found[:limit]
    listed = set(offered)
    extra = [t for t in have if t not in listed]
    return TaskOptions(tasks=extra + offered, more=len(found) > limit)


def reason_counts_sql(
    session: Session, settings_hash: str, f: EpisodeFilter = EpisodeFilter(),
    matching: Iterable[str] | None = None,
) -> pd.DataFrame:  # fmt: skip
    """`reason_counts` of the selected episodes, counted by SQL (columns reason, episodes)."""
    return runs_aggregates(session, settings_hash, f, matching)[1]


REWARD_BINS = 20
"""Bins of the reward distribution per harness (width 0.05 over [0, 1])."""


def reward_bins(
    session: Session, settings_hash: str, f: EpisodeFilter = EpisodeFilter(),
    matching: Iterable[str] | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Episodes per (harness, reward bin) of the selected episodes with a reward: columns
    harness ('?' for none), bin (0..REWARD_BINS-1, reward 1.0 in the last), lo, episodes."""
    import pandas as pd

    if _kept(session, settings_hash, f, matching):
        from clawviz.store import runstats

        kept = runstats.bins(session, settings_hash)
        df = pd.DataFrame(kept, columns=["harness", "bin", "episodes"])
        df["lo"] = df["bin"] / REWARD_BINS
        if df.empty:
            return pd.DataFrame(columns=["harness", "bin", "lo", "episodes"])
        return df[["harness", "bin", "lo", "episodes"]].reset_index(drop=True)
    where, params = _runs_where(f, matching)
    params.update(h=settings_hash, nb=REWARD_BINS)
    reward = RUNS_SORTS["reward"]
    b = (
        f"CAST(FLOOR({reward} * :nb) AS INTEGER)"
        if _dialect(session) != "sqlite"
        else (f"CAST({reward} * :nb AS INTEGER)")
    )
    cond = f"{reward} IS NOT NULL"
    where = f"{where} AND {cond}" if where else f"WHERE {cond}"
    sql = (
        f"SELECT COALESCE(e.harness, '?') AS harness, {b} AS bin, COUNT(*) AS episodes "  # noqa: S608
        f"{_FROM_RUNS} {where} GROUP BY COALESCE(e.harness, '?'), {b}"
    )
    df = _read(session, sql, **params)
    if df.empty:
        return pd.DataFrame(columns=["harness", "bin", "lo", "episodes"])
    df["bin"] = df["bin"].clip(0, REWARD_BINS - 1).astype(int)
    df = df.groupby(["harness", "bin"], as_index=False)["episodes"].sum()
    df["lo"] = df["bin"] / REWARD_BINS
    return (
        df[["harness", "bin", "lo", "episodes"]]
        .sort_values(["harness", "bin"])
        .reset_index(drop=True)
    )


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


def group_advantages(
    session: Session, settings_hash: str, f: EpisodeFilter = EpisodeFilter(),
    matching: Iterable[str] | None = None, max_groups: int = 40,
) -> tuple[pd.DataFrame, int]:  # fmt: skip
    """The advantages of the first `max_groups` GRPO groups (task / harness, by name) among the
    selected episodes, and how many groups have an advantage (`group_frame` in SQL)."""
    if _kept(session, settings_hash, f, matching):
        return _kept_groups(session, settings_hash, max_groups)
    where, params = _runs_where(f, matching)
    params.update(h=settings_hash, mg=max_groups)
    g = "COALESCE(e.task_id, '?') || ' / ' || COALESCE(e.harness, '?')"
    cond = "s.advantage IS NOT NULL"
    where = f"{where} AND {cond}" if where else f"WHERE {cond}"
    conn = session.connection()
    # The group names once (one pass), then the attempts of the first ones (one more).
    names = sorted(
        str(v)
        for v in conn.execute(text(f"SELECT DISTINCT {g} {_FROM_RUNS} {where}"), params).scalars()  # noqa: S608
    )
    n = len(names)
    first = names[:max_groups]
    for i, name in enumerate(first):
        params[f"g{i}"] = name
    wanted = ", ".join(f":g{i}" for i in range(len(first))) or "NULL"
    sql = f"""
        SELECT {g} AS "group", e.episode_id, e.task_id, e.harness, e.attempt, s.advantage
        {_FROM_RUNS} {where} AND {g} IN ({wanted})
        ORDER BY 1, e.attempt, e.episode_id
    """  # noqa: S608
    df = _read(session, sql, **params)
    df["advantage"] = df["advantage"].astype(float)
    return df, int(n or 0)


def _kept_groups(session: Session, settings_hash: str, max_groups: int) -> tuple[pd.DataFrame, int]:
    """`group_advantages` of the unfiltered view: the group names from the kept counts, then
    the attempts of the first ones by their (task, harness) index (not a pass over every
    episode)."""
    import pandas as pd

    from clawviz.store import runstats

    first, n = runstats.groups(session, settings_hash, max_groups)
    columns = ["group", "episode_id", "task_id", "harness", "attempt", "advantage"]
    wanted = {(task, harness) for _name, task, harness in first}
    tasks = sorted({t for t, _h in wanted if t is not None})
    # By task (its index), the harness matched here: a few attempts per group.
    conds = ["e.task_id IS NULL"] if any(t is None for t, _h in wanted) else []
    params: dict[str, str] = {"h": settings_hash}
    if tasks:
        params.update({f"t{i}": t for i, t in enumerate(tasks)})
        conds.append(f"e.task_id IN ({', '.join(f':t{i}' for i in range(len(tasks)))})")
    if not conds:
        return pd.DataFrame(columns=columns).astype({"advantage": float}), n
    # SQLite's CROSS JOIN keeps the episodes (by task) outside: unanalysed, it would scan
    # every status of the hash instead.
    join = "CROSS JOIN" if _dialect(session) == "sqlite" else "JOIN"
    sql = f"""
        SELECT e.episode_id, e.task_id, e.harness, e.attempt, s.advantage
        FROM episode e {join} episode_status s
          ON s.episode_id = e.episode_id AND s.settings_hash = :h
        WHERE {_PRIMARY_SQL} AND s.advantage IS NOT NULL AND ({" OR ".join(conds)})
    """  # noqa: S608 - every value is a bound parameter
    rows = [
        (runstats.group_name(task, harness), str(eid), task, harness, attempt, float(adv))
        for eid, task, harness, attempt, adv in session.connection().execute(text(sql), params)
        if (task, harness) in wanted
    ]
    rows.sort(key=lambda r: (r[0], r[4] is not None, r[4] if r[4] is not None else 0, r[1]))
    return pd.DataFrame(rows, columns=columns), n


def linked_transcripts(session: Session) -> int:
    """How many transcript episodes are linked to their session's wire episode (shown on Runs
    as cross-checks of it, not as episodes)."""
    sql = "SELECT COUNT(*) FROM episode WHERE primary_episode IS NOT NULL"
    return int(session.connection().execute(text(sql)).scalar() or 0)


def cross_checks(session: Session, episode_ids: Iterable[str]) -> dict[str, bool | None]:
    """The cross-check of each of `episode_ids` that has one (a wire episode with a linked
    transcript): its "agree" (None when the check could not say). One query per 500 ids."""
    import orjson

    ids = list(dict.fromkeys(episode_ids))
    out: dict[str, bool | None] = {}
    for i in range(0, len(ids), 500):
        part = ids[i : i + 500]
        names = ", ".join(f":i{j}" for j in range(len(part)))
        sql = (
            f"SELECT episode_id, cross_check FROM episode WHERE episode_id IN ({names}) "  # noqa: S608
            "AND cross_check IS NOT NULL"
        )
        params = {f"i{j}": v for j, v in enumerate(part)}
        for episode_id, raw in session.connection().execute(text(sql), params):
            try:
                agree = orjson.loads(raw).get("agree")
            except (orjson.JSONDecodeError, AttributeError):
                agree = None
            out[str(episode_id)] = agree if isinstance(agree, bool) else None
    return out
