"""The Runs page's SQL (issue 26 §3): filters, sort, pages and the aggregates behind the metrics
and charts give what the whole-frame path gives (`episodes_frame` + `filter_episodes` +
`reason_counts` / `group_frame`, tested on the scenario in tests/test_queries*.py)."""

from __future__ import annotations

import math

import pytest
from sqlmodel import Session

from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import queries
from clawviz.store.db import get_engine
from clawviz.store.queries import EpisodeFilter, RunsQuery

H = DEFAULT_SETTINGS.settings_hash
TOO_MANY = "e31cf886-54eb-430f-8bb4-89af4c2f1420"


@pytest.fixture
def session(sample_db_url):
    with Session(get_engine(sample_db_url)) as s:
        yield s


def _filters(df) -> list[EpisodeFilter]:
    tasks = sorted(df["task_id"].dropna().unique())
    reasons = queries.all_reasons(df)
    return [
        EpisodeFilter(),
        EpisodeFilter(tasks=tuple(tasks[:2])),
        EpisodeFilter(statuses=("dropped",)),
        EpisodeFilter(statuses=("kept",), include_missing_reward=False),
        EpisodeFilter(reasons=tuple(reasons[:1])),
        EpisodeFilter(reasons=tuple(reasons[-2:]), statuses=("dropped",)),
        EpisodeFilter(reasons=("too_many_branches",)),
        EpisodeFilter(reward_min=0.5),
        EpisodeFilter(reward_min=0.2, reward_max=0.8, include_missing_reward=False),
        EpisodeFilter(harnesses=("openclaw",), models=("no-such-model",)),
    ]


def _same(a, b) -> bool:
    return (a is None and b is None) or (
        a is not None and b is not None and (a == b or (math.isnan(a) and math.isnan(b)))
    )


def test_pages_are_the_filtered_frame_cut_in_order(session):
    df = queries.episodes_frame(session, H)
    sizes = set()
    for f in _filters(df):
        want = queries.filter_episodes(df, f).reset_index(drop=True)
        sizes.add(len(want))
        got = queries.runs_page(session, H, RunsQuery(filter=f, page_size=10_000))
        assert list(got["episode_id"]) == list(want["episode_id"]), f
        assert list(got["reasons"]) == list(want["reasons"]), f
        # Pages of 3 cover the same rows, in the same order, without overlap.
        pages = [
            queries.runs_page(session, H, RunsQuery(filter=f, page=p, page_size=3))
            for p in range(-(-len(want) // 3) + 1)
        ]
        assert [e for p in pages for e in p["episode_id"]] == list(want["episode_id"]), f
        assert pages[-1].empty
        summary = queries.runs_summary(session, H, f)
        assert summary.episodes == len(want)
        assert summary.kept == int((want["status"] == "kept").sum())
        assert summary.dropped == int((want["status"] == "dropped").sum())
        assert summary.calls == int(want["n_calls"].fillna(0).sum())
        assert summary.tasks == want["task_id"].nunique()
        assert summary.unexplained == queries.count_with_reason(want, "unexplained_root")
        counts = queries.reason_counts_sql(session, H, f)
        assert counts.to_dict("records") == queries.reason_counts(want).to_dict("records"), f
    assert len(sizes) >= 4
    assert list(queries.runs_page(session, H, RunsQuery(filter=_filters(df)[6]))["episode_id"]) == [
        TOO_MANY
    ]


def test_search_matches_narrow_the_page_and_an_empty_match_selects_none(session):
    df = queries.episodes_frame(session, H)
    some = tuple(df["episode_id"].iloc[[1, 4, 6]])
    got = queries.runs_page(session, H, RunsQuery(matching=some))
    assert list(got["episode_id"]) == [e for e in df["episode_id"] if e in some]
    assert queries.runs_page(session, H, RunsQuery(matching=())).empty
    assert queries.runs_summary(session, H, matching=()).episodes == 0


@pytest.mark.parametrize("column", ["reward", "n_calls", "task_id", "advantage", "status"])
def test_sorts_put_missing_values_last_and_keep_the_runs_order_for_ties(session, column):
    df = queries.episodes_frame(session, H)
    for descending in (False, True):
        got = queries.runs_page(
            session, H, RunsQuery(sort=column, descending=descending, page_size=10_000)
        )
        want = df.assign(_pos=range(len(df)))
        want = want.sort_values(
            [column, "_pos"], ascending=[not descending, True], na_position="last", kind="stable"
        )
        # Ties keep the default order: compare the sorted column, then the ids within ties.
        values = list(got[column])
        assert all(_same(a, b) for a, b in zip(values, want[column], strict=True)), column
        assert list(got["episode_id"]) == list(want["episode_id"]), (column, descending)


def test_unknown_sort_is_the_runs_order(session):
    df = queries.episodes_frame(session, H)
    got = queries.runs_page(session, H, RunsQuery(sort="1; DROP TABLE episode", page_size=10_000))
    assert list(got["episode_id"]) == list(df["episode_id"])


def test_chart_inputs_from_sql(session):
    df = queries.episodes_frame(session, H)
    bins = queries.reward_bins(session, H)
    have = df[df["reward"].notna()]
    assert int(bins["episodes"].sum()) == len(have)
    for harness, part in have.groupby(have["harness"].fillna("?")):
        mine = bins[bins["harness"] == harness]
        expect = part["reward"].map(lambda r: min(int(r * queries.REWARD_BINS), 19))
        assert (
            dict(zip(mine["bin"], mine["episodes"], strict=True)) == expect.value_counts().to_dict()
        )
    groups, n = queries.group_advantages(session, H, max_groups=3)
    frame = queries.group_frame(df)
    names = sorted(frame["group"].unique())
    assert n == len(names) and sorted(groups["group"].unique()) == names[:3]
    want = frame[frame["group"].isin(names[:3])]
    assert sorted(groups["episode_id"]) == sorted(want["episode_id"])
    options = queries.runs_options(session, H)
    assert sorted(queries.reason_counts_sql(session, H)["reason"]) == queries.all_reasons(df)
    assert options["harness"] == sorted(df["harness"].dropna().unique())
    assert options["status"] == sorted(df["status"].unique())


def test_the_runs_counts_know_every_episode_reason():
    # Every reason an episode's verdict can carry (the enum, and the self-check's and the
    # analysis job's codes that exclude an attempt from GRPO) is counted and filterable on Runs:
    # a code missing from KNOWN_REASONS would silently vanish from the reason counts.
    from clawviz.recon.prune import ABNORMAL_CODES
    from clawviz.store.queries import KNOWN_REASONS
    from clawviz.types import ReasonCode

    assert {str(c) for c in ReasonCode} | set(ABNORMAL_CODES) <= set(KNOWN_REASONS)


@pytest.fixture
def wire_and_transcripts(tmp_path):
    """A committed recording with the harness's own transcripts, ingested with its wire log
    (each in its own ingest, as tests/test_sessions.py loads them) and analysed."""
    import shutil

    from sqlmodel import select

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import init_db
    from clawviz.store.models import Episode
    from tests.dburl import memory_engine
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
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as s:
        for group in ([wire], transcripts):
            assert not ingest_paths(group, session=s).rejected
            s.commit()
        ensure_analysis(s)
        s.commit()
        episodes = list(s.exec(select(Episode)))
        yield s, episodes, len(transcripts)


def test_a_linked_transcript_is_a_cross_check_not_a_second_episode(wire_and_transcripts):
    s, episodes, n_files = wire_and_transcripts
    # The recording is one run: one wire episode; the rest came from the transcript files.
    wire = [e.episode_id for e in episodes if e.source_kind == "exchange"]
    others = [e.episode_id for e in episodes if e.source_kind != "exchange"]
    assert len(wire) == 1 and others, (wire, others)
    # SQL path: the page, the counts, the options and the charts know only the wire episode.
    page = queries.runs_page(s, H, RunsQuery())
    assert list(page["episode_id"]) == wire
    summary, _ = queries.runs_aggregates(s, H)
    assert summary.episodes == 1
    assert queries.runs_summary(s, H, EpisodeFilter(statuses=("kept", "dropped"))).episodes <= 1
    groups, _ = queries.group_advantages(s, H)
    assert set(groups["episode_id"]) <= set(wire)
    # The pandas path (export, switcher) agrees.
    frame = queries.episodes_frame(s, H)
    assert list(queries.filter_episodes(frame, EpisodeFilter())["episode_id"]) == wire
    assert [r.episode_id for r in queries.episode_rows(s, H)] == wire
    # Every transcript episode is counted as a cross-check, and the wire's check agrees (the
    # recording's transcripts are of the same run: tests/test_sessions.py).
    assert queries.linked_transcripts(s) == len(others)
    assert queries.cross_checks(s, [*wire, *others]) == {wire[0]: True}


@pytest.mark.parametrize("kept_counts", [True, False])
def test_the_task_filter_offers_a_page_of_tasks(session, monkeypatch, kept_counts):
    # A run has tens of thousands of tasks: the Task filter offers the first few whose id holds
    # what was typed (any case, `%` and `_` literal), plus the chosen ones the store has, from
    # the kept counts or, while something is queued, from the episode table.
    from clawviz.store import runstats

    if not kept_counts:
        monkeypatch.setattr(runstats, "ensure", lambda *_a: False)
    df = queries.episodes_frame(session, H)
    tasks = sorted(str(t) for t in df["task_id"].dropna().unique())
    assert len(tasks) >= 3
    every = queries.runs_task_options(session, H, limit=10_000)
    assert every.tasks == tasks and not every.more
    first = queries.runs_task_options(session, H, limit=2)
    assert first.tasks == tasks[:2] and first.more
    exact = queries.runs_task_options(session, H, limit=len(tasks))
    assert exact.tasks == tasks and not exact.more
    needle = tasks[-1][-3:]
    found = queries.runs_task_options(session, H, find=f" {needle.upper()} ", limit=10_000)
    assert found.tasks == [t for t in tasks if needle.lower() in t.lower()]
    assert queries.runs_task_options(session, H, find="%").tasks == [t for t in tasks if "%" in t]
    # `_` is a LIKE wildcard: unescaped, this would find tasks[0] (one letter made `_`).
    wild = "_" + tasks[0][1:]
    assert queries.runs_task_options(session, H, find=wild).tasks == [t for t in tasks if wild in t]
    chosen = queries.runs_task_options(session, H, chosen=[tasks[-1], "no-such-task"], limit=1)
    assert chosen.tasks == [tasks[-1], tasks[0]] and chosen.more
