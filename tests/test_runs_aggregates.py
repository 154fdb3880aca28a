"""The Runs page's maintained aggregates (`clawviz.store.runstats`, issue 26 §3): after every
way a store changes (ingest, new settings, a changed result, a deleted and re-ingested episode,
a transcript linked to its wire episode) the counts kept by the analysis equal a recomputation
from scratch, and the Runs first view reads them: its counts, charts and options equal the
whole-frame path (`episodes_frame`, `reason_counts`, `group_frame`) on both backends."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import Session

from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import queries, runstats
from clawviz.store.db import get_engine, init_db
from clawviz.store.queries import EpisodeFilter
from tests.dburl import fresh_url

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_logs"
H = DEFAULT_SETTINGS.settings_hash
EVERYTHING = EpisodeFilter(reward_min=-1e18)
"""Selects every episode like the default filter, but is not it: the SQL path, recomputed."""


def _frame_counts(session: Session, h: str) -> Counter:
    """The first view's counts from `episodes_frame` (every episode in pandas): independent of
    the SQL aggregates and of the kept ones."""
    df = queries.episodes_frame(session, h)
    c: Counter = Counter()
    c["episodes"] = len(df)
    c["calls"] = int(df["n_calls"].fillna(0).sum())
    c["tasks"] = df["task_id"].nunique()
    c["with_reward"] = int(df["reward"].notna().sum())
    for status, n in df["status"].value_counts().items():
        c[("status", status)] = int(n)
    for row in queries.reason_counts(df).itertuples():
        c[("reason", row.reason)] = int(row.episodes)
    for r, harness in zip(df["reward"], df["harness"].fillna("?"), strict=True):
        if r == r:  # not NaN
            c[("bin", harness, min(max(int(r * 20), 0), 19))] += 1
    groups = queries.group_frame(df)
    for g in groups["group"].unique():
        c[("group", g)] = 1
    for key in ("task_id", "harness", "model"):
        for v in df[key].dropna().unique():
            c[(key, v)] = 1
    return c


def _view_counts(session: Session, h: str, f: EpisodeFilter) -> Counter:
    """The same counts as the Runs view reads them (`queries`, kept or in SQL)."""
    summary, reasons = queries.runs_aggregates(session, h, f)
    c: Counter = Counter()
    c["episodes"], c["calls"] = summary.episodes, summary.calls
    c["tasks"], c["with_reward"] = summary.tasks, summary.with_reward
    page = queries.runs_page(session, h, queries.RunsQuery(filter=f, page_size=1_000_000))
    for status, n in page["status"].value_counts().items():
        c[("status", status)] = int(n)
    assert summary.kept == c[("status", "kept")] and summary.dropped == c[("status", "dropped")]
    for row in reasons.itertuples():
        c[("reason", row.reason)] = int(row.episodes)
    for row in queries.reward_bins(session, h, f).itertuples():
        c[("bin", row.harness, int(row.bin))] = int(row.episodes)
    groups, n_groups = queries.group_advantages(session, h, f, max_groups=1_000_000)
    assert n_groups == groups["group"].nunique()
    for g in groups["group"].unique():
        c[("group", g)] = 1
    if f == EpisodeFilter():
        options = queries.runs_options(session, h)
        for key in ("harness", "model"):
            for v in options[key]:
                c[(key, v)] = 1
        for v in queries.runs_task_options(session, h, limit=1_000_000).tasks:
            c[("task_id", v)] = 1
        assert options["status"] == sorted(k[1] for k in c if k[0] == "status")
    else:
        for key in ("task_id", "harness", "model"):
            for v in page[key].dropna().unique():
                c[(key, v)] = 1
    return c


def _first_groups(session: Session, h: str) -> list[tuple[str, str]]:
    groups, _n = queries.group_advantages(session, h, max_groups=2)
    return sorted(zip(groups["group"], groups["episode_id"], strict=True))


def check(session: Session, h: str = H) -> None:
    """Kept counts == a recomputation from scratch, and the first view == the frame path."""
    assert runstats.usable(session, h), "the counts should be kept and current"
    assert runstats.stored(session, h) == runstats.recomputed(session, h)
    kept = _view_counts(session, h, EpisodeFilter())
    assert kept == _frame_counts(session, h)
    assert kept == _view_counts(session, h, EVERYTHING)
    # The first groups' attempts, read by their (task, harness), as the SQL path selects them.
    sql, _n = queries.group_advantages(session, h, EVERYTHING, max_groups=2)
    assert _first_groups(session, h) == sorted(zip(sql["group"], sql["episode_id"], strict=True))


def _copy_samples(dst: Path) -> tuple[list[Path], list[Path]]:
    """sample_logs/ split in two: the Claude Code logs with the results, then OpenClaw's."""
    shutil.copytree(SAMPLES / "exchanges", dst / "exchanges")
    shutil.copy(SAMPLES / "results.jsonl", dst / "results.jsonl")
    return [dst / "exchanges" / "claude-code", dst / "results.jsonl"], [
        dst / "exchanges" / "openclaw"
    ]


@pytest.fixture
def store(tmp_path):
    url = fresh_url(tmp_path, "runsagg")
    engine = get_engine(url)
    init_db(engine)
    with Session(engine) as s:
        yield s, tmp_path


def test_kept_counts_follow_ingest_settings_results_and_deletes(store):
    s, tmp = store
    first, second = _copy_samples(tmp)
    ingest_paths(first, session=s)
    ensure_analysis(s)
    s.commit()
    # Not kept yet: the first view builds them (the hash's queue is empty).
    assert not runstats.usable(s, H)
    assert queries.runs_summary(s, H).episodes == 12
    check(s)

    # Ingest more: the analysis at ingest keeps the counts (no rebuild).
    ingest_paths(second, session=s)
    s.commit()
    assert runstats.maintained(s) == [H]
    check(s)
    assert queries.runs_summary(s, H).episodes == 24

    # A second settings hash: built on its first view, then both are kept.
    other = DEFAULT_SETTINGS.with_(reward_threshold=0.9)
    assert other.settings_hash != H
    ensure_analysis(s, other)
    s.commit()
    assert queries.runs_summary(s, other.settings_hash).episodes == 24
    check(s, other.settings_hash)
    assert sorted(runstats.maintained(s)) == sorted([H, other.settings_hash])

    # A changed result (a re-scored attempt): queued, so not used until re-analysed.
    s.connection().execute(
        text("UPDATE result SET reward = 0.0 WHERE episode_id = 't0001-claude-code-a2'")
    )
    s.commit()
    assert not runstats.usable(s, H)
    for settings in (DEFAULT_SETTINGS, other):
        ensure_analysis(s, settings)
        s.commit()
        check(s, settings.settings_hash)

    # A deleted episode (its calls, status and decisions too): its counts go at the next check.
    gone = "t0001-openclaw-a2"
    before = queries.runs_summary(s, H)
    for sql in (
        'DELETE FROM "call" WHERE episode_id = :e',
        "DELETE FROM decision WHERE episode_id = :e",
        "DELETE FROM episode_status WHERE episode_id = :e",
        "DELETE FROM episode WHERE episode_id = :e",
    ):
        s.connection().execute(text(sql), {"e": gone})
    s.commit()
    assert not runstats.usable(s, H)
    for settings in (DEFAULT_SETTINGS, other):
        ensure_analysis(s, settings)
        s.commit()
        check(s, settings.settings_hash)
    assert queries.runs_summary(s, H).episodes == before.episodes - 1

    # Re-ingested (its file loaded again once its source row is gone): counted once again.
    log = second[0] / f"{gone}.jsonl"
    s.connection().execute(text("DELETE FROM source WHERE path LIKE :p"), {"p": f"%{gone}%"})
    s.commit()
    ingest_paths([log], session=s)
    s.commit()
    ensure_analysis(s, other)
    s.commit()
    for h in (H, other.settings_hash):
        check(s, h)
    assert queries.runs_summary(s, H) == before


def test_a_linked_transcript_leaves_the_kept_counts(tmp_path):
    """A transcript ingested after its wire log is linked to it (an UPDATE of the episode, no
    new calls): the kept counts drop it as the SQL does."""
    from tests.harness import recorded
    from tests.test_sessions import WITH_TRANSCRIPTS, _transcripts

    folder = WITH_TRANSCRIPTS[0]
    wire = tmp_path / "wire" / recorded.exchanges_file(folder).name
    wire.parent.mkdir()
    shutil.copy(recorded.exchanges_file(folder), wire)
    transcripts = []
    for f in _transcripts(folder):
        dst = tmp_path / "transcripts" / f.relative_to(folder)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dst)
        transcripts.append(dst)
    url = fresh_url(tmp_path, "linked")
    engine = get_engine(url)
    init_db(engine)
    with Session(engine) as s:
        # The transcripts first: analysed and counted as episodes until the wire links them.
        ingest_paths(transcripts, session=s)
        s.commit()
        assert queries.runs_summary(s, H).episodes == len(
            s.connection().execute(text("SELECT episode_id FROM episode")).all()
        )
        check(s)
        ingest_paths([wire], session=s)
        s.commit()
        ensure_analysis(s)
        s.commit()
        linked = queries.linked_transcripts(s)
        assert linked >= 1
        check(s)
        n_all = s.connection().execute(text("SELECT COUNT(*) FROM episode")).scalar_one()
        assert queries.runs_summary(s, H).episodes == n_all - linked


def test_a_store_upgraded_to_the_kept_counts_is_built_by_the_migration(tmp_path):
    """A store made before revision 0011 (statuses, no counts): `migrate` builds the counts of
    each hash whose queue is empty, and they equal the recomputation."""
    from clawviz.store import db, migrations

    url = fresh_url(tmp_path, "upgrade")
    engine = get_engine(url)
    init_db(engine)
    dst = tmp_path / "in"
    first, second = _copy_samples(dst)
    with Session(engine) as s:
        ingest_paths(first + second, session=s)
        ensure_analysis(s)
        s.commit()
    with engine.begin() as conn:
        migrations._run(conn, lambda script, rev: script._downgrade_revs("0010", rev))
    with engine.connect() as conn:
        assert migrations.current(conn) == "0010"
    assert db.migrate(engine)[-1] == migrations.HEAD
    with Session(engine) as s:
        assert runstats.maintained(s) == [H]
        check(s)


def test_two_ingests_at_once_keep_the_counts_exact(store):
    """Two writers ingesting (and analysing) different files at the same time, the counts kept:
    each adds only its episodes' contributions, none is lost or doubled (both backends; on
    SQLite the second waits its turn, on PostgreSQL the count rows are taken in turn)."""
    import threading

    s, tmp = store
    first, second = _copy_samples(tmp)
    ingest_paths([first[0] / "t0001-claude-code-a1.jsonl", first[1]], session=s)
    s.commit()
    assert queries.runs_summary(s, H).episodes == 1  # kept from here on
    engine = s.get_bind()
    errors: list[BaseException] = []

    def ingest(paths: list[Path]) -> None:
        try:
            with Session(engine) as mine:
                ingest_paths(paths, session=mine)
                mine.commit()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    rest = sorted(p for p in first[0].iterdir() if p.name != "t0001-claude-code-a1.jsonl")
    threads = [threading.Thread(target=ingest, args=(paths,)) for paths in (rest, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    s.rollback()
    ensure_analysis(s)
    s.commit()
    check(s)
    assert queries.runs_summary(s, H).episodes == 24
