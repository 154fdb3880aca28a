"""Exchange logs shaped like real recordings of Claude Code 2.0.x / 2.1.x and OpenClaw (pi 0.73).

The logs in `tests/data/real_traffic/` are written by `build_fixtures.py` the way claude-trace
writes them (one line per exchange when its response completes, real SSE streams, headers and
marker strings; FORMATS §1-3). Beside each log, `<name>.expected.json` says, per line, what the
scenario's author meant that call to be: role, state, reason, segment, parent, link, retry and
thread, by call name. These tests ingest the logs through `clawviz.jobs.ingest` into a store and
compare `clawviz.cli.explain.explain_rows` with that intent, then check each episode's status,
reasons and kept paths.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.cli.explain import explain_rows
from clawviz.jobs.analyse import ensure_analysis, episode_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.calls import list_episodes
from clawviz.store.db import init_db
from clawviz.store.models import CallRow
from tests.dburl import memory_engine
from tests.harness.recorded import decision_mismatches

DATA = Path(__file__).parent / "data" / "real_traffic"
LOGS = sorted(DATA.glob("*.jsonl"))

# reward, status, reasons, kept path names per segment
EPISODES: dict[str, tuple[float, str, list[str], list[list[str]]]] = {
    "cc-2.0.31-startup": (1.0, "kept", [], [["m1", "m2", "m3", "m4", "m5", "m6"]]),
    "cc-2.0.31-overloaded-end": (
        0.0,
        "dropped",
        ["ended_in_error", "below_reward_threshold"],
        [["m1"]],
    ),
    "cc-2.1.9-async": (
        0.8,
        "kept",
        [],
        [["m1", "m2", "m3", "m4"], ["m5", "m6", "m7"], ["m8", "m9"]],
    ),
    "cc-2.1.9-interrupted": (1.0, "dropped", ["orphaned_request"], [["m1", "m3"]]),
    "openclaw-2026.9-pi-0.73": (
        1.0,
        "kept",
        [],
        [["m1", "m2", "m3", "m4", "m5", "m6", "m7"], ["m9", "m10"]],
    ),
    "openclaw-2026.3-pi-0.73-retries": (
        0.5,
        "dropped",
        ["ended_in_error"],
        [["m1", "m2", "m3"], ["m5"]],
    ),
}


def _engine():
    engine = memory_engine()
    init_db(engine)
    return engine


def _load(folder: Path, rewards: dict[str, float] | None = None) -> dict[str, dict]:
    """Ingest every log of `folder` (plus a results file), analyse, explain per file stem."""
    engine = _engine()
    out: dict[str, dict] = {}
    with Session(engine) as session:
        report = ingest_paths(sorted(folder.glob("*.jsonl")), session=session)
        session.commit()
        assert not report.rejected
        episodes = {e.episode_id for e in list_episodes(session)}
        calls = list(session.exec(select(CallRow)))
        by_file: dict[str, set[str]] = {}
        for c in calls:
            by_file.setdefault(Path(c.source_file).name.removesuffix(".jsonl"), set()).add(
                c.episode_id
            )
        if rewards:
            results = folder / "results.jsonl"
            lines = []
            for stem, eps in by_file.items():
                (ep,) = eps
                lines.append(json.dumps({"episode_id": ep, "reward": rewards[stem]}))
            results.write_text("\n".join(lines) + "\n")
            ingest_paths([results], session=session)
            session.commit()
        ensure_analysis(session)
        for stem, eps in by_file.items():
            (ep,) = eps
            out[stem] = {
                "episode_id": ep,
                "rows": explain_rows(session, ep),
                "analysis": episode_analysis(session, ep),
                "n_episodes": len(episodes),
            }
    return out


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("real_traffic")
    for log in LOGS:
        shutil.copy(log, folder / log.name)
    return _load(folder, {stem: v[0] for stem, v in EPISODES.items()})


def _expected(stem: str) -> list[dict]:
    return json.loads((DATA / f"{stem}.expected.json").read_text())


def _names(stem: str, rows: list[dict]) -> dict[str, str]:
    """call_id -> scenario name, matched by source line."""
    by_line = {e["line"]: e["name"] for e in _expected(stem)}
    return {r["call_id"]: by_line[r["source"]["line"]] for r in rows}


def _mismatches(stem: str, rows: list[dict], line_of: dict[int, int] | None = None) -> list:
    """Calls whose decision differs from the scenario's intent, with (got, wanted) values."""
    return decision_mismatches(rows, {e["line"]: e for e in _expected(stem)}, line_of)


def test_fixtures_are_what_the_builder_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("build_fixtures", DATA / "build_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    module.main(tmp_path)
    for log in LOGS:
        assert (tmp_path / log.name).read_bytes() == log.read_bytes(), log.name
        exp = log.with_suffix(".expected.json")
        assert (tmp_path / exp.name).read_bytes() == exp.read_bytes(), exp.name
    assert {p.stem for p in LOGS} == set(EPISODES)


def test_one_file_is_one_episode(loaded):
    assert set(loaded) == set(EPISODES)
    assert {v["n_episodes"] for v in loaded.values()} == {len(EPISODES)}
    ids = {v["episode_id"] for v in loaded.values()}
    assert len(ids) == len(EPISODES)
    # Claude Code names its session; OpenClaw sends no session id, so its episode is named by
    # the harness its system prompt names and the first line's request time, never the file.
    assert loaded["cc-2.0.31-startup"]["episode_id"] == "0b7e9a55-1d2c-4f0a-8c3e-5a6b7c8d9e01"
    assert loaded["cc-2.1.9-async"]["episode_id"] == "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b10"
    assert loaded["openclaw-2026.9-pi-0.73"]["episode_id"] == "openclaw-2025-11-30T10:53:20.000Z"
    assert loaded["openclaw-2026.3-pi-0.73-retries"]["episode_id"] == (
        "openclaw-2025-12-02T18:25:40.000Z"
    )


@pytest.mark.parametrize("stem", sorted(EPISODES))
def test_every_call_gets_the_intended_decision(loaded, stem):
    assert not _mismatches(stem, loaded[stem]["rows"])


@pytest.mark.parametrize("stem", sorted(EPISODES))
def test_threads_group_calls_as_intended(loaded, stem):
    rows = loaded[stem]["rows"]
    expected = {e["line"]: e for e in _expected(stem)}
    got: dict[str, set[str]] = {}
    want: dict[str, set[str]] = {}
    for r in rows:
        e = expected[r["source"]["line"]]
        got.setdefault(r["thread"], set()).add(e["name"])
        want.setdefault(e["thread"], set()).add(e["name"])
    assert sorted(map(sorted, got.values())) == sorted(map(sorted, want.values()))
    main = {e["name"] for e in expected.values() if e["role"] == "main"}
    assert got.get("main", set()) == main


@pytest.mark.parametrize("stem", sorted(EPISODES))
def test_every_call_exactly_one_state_and_failed_never_parent(loaded, stem):
    rows = loaded[stem]["rows"]
    states = {r["call_id"]: r["state"] for r in rows}
    for r in rows:
        assert r["state"] in {"kept", "pruned", "auxiliary", "failed"}
        assert (r["reason"] is None) == (r["state"] == "kept"), r
        if r["state"] == "auxiliary":
            assert r["reason"] == r["role"] or r["reason"] == "aux_non_model"
        if r["parent_call"] is not None:
            assert states[r["parent_call"]] != "failed", r
    assert len({r["call_id"] for r in rows}) == len(rows)


@pytest.mark.parametrize("stem", sorted(EPISODES))
def test_episode_status_reasons_and_kept_path(loaded, stem):
    reward, status, reasons, kept_paths = EPISODES[stem]
    a = loaded[stem]["analysis"]
    name = _names(stem, loaded[stem]["rows"])
    assert a.reward == reward
    assert [r.code for r in a.reasons] == reasons
    assert a.status == status
    assert a.n_segments == len(kept_paths)
    # No extra leaf: every path of every segment is the kept one (retries, failures and side
    # requests leave no branch behind).
    assert all(p.state == "kept" for p in a.paths), [(p.path_id, p.reason) for p in a.paths]
    kept = sorted((p for p in a.paths if p.state == "kept"), key=lambda p: p.segment)
    assert [[name[c] for c in p.call_ids] for p in kept] == kept_paths


def test_decisions_do_not_depend_on_line_order(tmp_path):
    """The same logs written in request order (or reversed) give the same decisions."""
    line_maps: dict[str, dict[int, int]] = {}
    for log in LOGS:
        lines = log.read_text().splitlines()
        ordered = sorted(lines, key=lambda s: json.loads(s)["request"]["timestamp"])
        if ordered == lines:
            ordered = lines[::-1]
        assert ordered != lines
        (tmp_path / log.name).write_text("\n".join(ordered) + "\n")
        line_maps[log.stem] = {n: lines.index(t) + 1 for n, t in enumerate(ordered, 1)}
    again = _load(tmp_path)
    for stem in EPISODES:
        assert not _mismatches(stem, again[stem]["rows"], line_maps[stem]), stem


def test_side_requests_are_recognised_by_their_markers(loaded):
    """Utility, summary, heartbeat, cron, flush and sub-agent calls come from the marker table
    (or, for a user-defined sub-agent, from its spawn prompt), not from the structural
    fallback by system prompt (which would hide a marker a new release broke)."""
    spawned = "first user message is the spawn prompt of call "
    for stem, v in loaded.items():
        for r in v["rows"]:
            if r["role"].startswith("aux_") and r["role"] != "aux_non_model":
                why = r["role_reason"]
                assert " marker " in why or why.startswith(spawned), (stem, r["role"], why)
