"""One episode per session: a recording's wire log and the harness's own transcripts of the
same run, loaded together in either order or in separate ingests, are one session: the same
number of episodes and the same SFT export rows as the wire log alone, the transcript linked to
the wire's episode as a cross-check that agrees with it (issue 29 §4).

The recordings are `tests/data/recorded/*/*/` (each run's proxy log beside the transcripts the
harness wrote); what must come out is the wire log alone's result, not a stored expectation.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from sqlmodel import Session, select

from clawviz.export.run import run_export
from clawviz.export.source import Selection
from clawviz.jobs.ingest import ingest_paths
from clawviz.jobs.sessions import primary_episodes
from clawviz.store.db import init_db
from clawviz.store.models import Episode
from tests.dburl import memory_engine
from tests.harness import recorded


def _transcripts(folder: Path) -> list[Path]:
    """The harness's own session files of the run (Claude Code's project folder, OpenClaw's
    sessions/, pi's session.jsonl, Codex's rollouts)."""
    if (folder / "transcripts").is_dir():
        return sorted(p for p in (folder / "transcripts").rglob("*.jsonl"))
    if (folder / "sessions").is_dir():
        return sorted((folder / "sessions").glob("*.jsonl"))
    return sorted([*folder.glob("session.jsonl"), *folder.glob("rollout*.jsonl")])


WITH_TRANSCRIPTS = [f for f in recorded.folders() if _transcripts(f)]
IDS = [recorded.folder_id(f) for f in WITH_TRANSCRIPTS]
ONE_PER_HARNESS = {recorded.harness_of(f): f for f in WITH_TRANSCRIPTS}


@pytest.fixture
def files(tmp_path):
    """Copies of a recording's files in one place (the same paths for every ingest order)."""

    def copy(folder: Path) -> tuple[Path, list[Path]]:
        wire = tmp_path / "wire" / recorded.exchanges_file(folder).name
        wire.parent.mkdir(parents=True)
        shutil.copy(recorded.exchanges_file(folder), wire)
        out = []
        for f in _transcripts(folder):
            dst = tmp_path / "transcripts" / f.relative_to(folder)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dst)
            out.append(dst)
        return wire, out

    return copy


def _run(groups: list[list[Path]], reward: float, out: Path) -> dict:
    """Ingest each group in its own ingest, give the wire's episode its reward, export SFT
    (kept episodes, then with the dropped ones too)."""
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as s:
        for g in groups:
            report = ingest_paths(g, session=s)
            s.commit()
            assert not report.rejected, report.rejected
        wire = [e for e in s.exec(select(Episode)) if e.source_kind == "exchange"]
        assert len(wire) == 1
        results = out.parent / f"{out.name}-results.jsonl"
        results.write_text(json.dumps({"episode_id": wire[0].episode_id, "reward": reward}) + "\n")
        ingest_paths([results], session=s)
        s.commit()
        rows = {}
        for dropped in (False, True):
            dst = out.parent / f"{out.name}-{dropped}.jsonl"
            run_export(s, "sft", dst, selection=Selection(include_dropped=dropped))
            rows[dropped] = [orjson.loads(x) for x in dst.read_bytes().splitlines()]
        linked = {e.episode_id: e.primary_episode for e in s.exec(select(Episode))}
        checks = {e.episode_id: e.cross_check for e in wire}
        s.refresh(wire[0])
        return {
            "episodes": primary_episodes(s),
            "rows": rows,
            "linked": {k: v for k, v in linked.items() if v},
            "check": wire[0].cross_check,
            "wire": wire[0].episode_id,
            "all": checks,
        }


def _same_as_the_wire_alone(got: dict, alone: dict) -> None:
    assert got["episodes"] == alone["episodes"]
    assert got["rows"] == alone["rows"]
    # Every transcript episode is linked to the wire's, and the cross-check agrees.
    assert got["linked"] and set(got["linked"].values()) == {alone["wire"]}
    check = json.loads(got["check"])
    assert check["agree"] is True, check["disagreements"]


@pytest.mark.parametrize("folder", WITH_TRANSCRIPTS, ids=IDS)
def test_wire_and_transcripts_together_are_one_session(folder, files, tmp_path):
    wire, transcripts = files(folder)
    reward = recorded.read_expected(folder).reward
    alone = _run([[wire]], reward, tmp_path / "alone")
    assert alone["rows"][True], "the wire log alone exports its kept path (dropped or not)"
    assert alone["linked"] == {} and alone["check"] is None
    _same_as_the_wire_alone(_run([[wire, *transcripts]], reward, tmp_path / "both"), alone)


@pytest.mark.parametrize(
    "order", ["transcripts-first", "wire-then-transcripts", "transcripts-then-wire"]
)
@pytest.mark.parametrize("folder", list(ONE_PER_HARNESS.values()), ids=list(ONE_PER_HARNESS))
def test_in_any_order_and_in_separate_ingests(folder, order, files, tmp_path):
    wire, transcripts = files(folder)
    reward = recorded.read_expected(folder).reward
    alone = _run([[wire]], reward, tmp_path / "alone")
    groups = {
        "transcripts-first": [[*transcripts, wire]],
        "wire-then-transcripts": [[wire], transcripts],
        "transcripts-then-wire": [transcripts, [wire]],
    }[order]
    _same_as_the_wire_alone(_run(groups, reward, tmp_path / order), alone)


# -- the rules, on hand-made records ------------------------------------------------------------


def _records():
    from clawviz.jobs.sessions import Record
    from tests.recon_helpers import Ep, asst, tool_result, tool_use, user

    def episode(eid: str, tid: str, pruned_branch: bool) -> tuple:
        e = Ep(episode_id=eid)
        a1 = asst("", tool_use("Bash", {"cmd": "ls"}, tid))
        m1 = e.call([user("go")], a1)
        m2 = e.turn(m1, tool_result(tid, "a"), response=asst("Short answer."), tokens=5)
        if pruned_branch:  # a longer second answer: m2 becomes the shorter branch
            e.turn(m1, tool_result(tid, "a"), user("more"), response=asst("Long."), tokens=50)
        return Record.of_calls(eid, e.calls), e.calls, m2

    return episode


def test_same_session_by_ids_tool_calls_or_replies_and_never_across_times():
    from clawviz.jobs.sessions import same_session

    episode = _records()
    wire, _, _ = episode("wire", "toolu_X1", False)
    same, _, _ = episode("t-same", "toolu_X1", False)
    other, _, _ = episode("t-other", "toolu_Y9", False)
    assert same_session(same, wire) == "1 of 1 tool-call ids"
    assert same_session(other, wire) is None  # the same words, another session's tool calls
    same.session_ids.add("wire")
    assert same_session(same, wire) == "session id wire"
    same.first_ts, same.last_ts, wire.first_ts, wire.last_ts = 0.0, 10.0, 10_000.0, 10_010.0
    assert same_session(same, wire) is None


def test_cross_check_flags_a_reply_kept_on_one_side_and_pruned_on_the_other():
    from clawviz.jobs.sessions import compare_kept
    from clawviz.recon.pipeline import analyse_episode

    episode = _records()
    wire, w_calls, w_m2 = episode("wire", "toolu_X1", True)
    agree, a_calls, _ = episode("t-agree", "toolu_X1", True)
    other, o_calls, _ = episode("t-other", "toolu_X1", False)
    w_a = analyse_episode(w_calls, reward=1.0)
    assert w_a.decisions[w_m2.call_id].state == "pruned"
    check = compare_kept(agree, analyse_episode(a_calls, reward=1.0), wire, w_a)
    assert check == {"transcript": "t-agree", "agree": True, "disagreements": []}
    check = compare_kept(other, analyse_episode(o_calls, reward=1.0), wire, w_a)
    assert check["agree"] is False
    assert check["disagreements"] == [
        f"call {w_m2.line}: kept by the transcript, pruned on the wire"
    ]


def test_cross_check_flags_another_parent():
    from clawviz.jobs.sessions import Record, compare_kept
    from clawviz.recon.pipeline import analyse_episode
    from tests.recon_helpers import Ep, asst, tool_result, tool_use, user

    episode = _records()
    wire, w_calls, w_m2 = episode("wire", "toolu_X1", False)
    # The transcript has a turn between m1 and the same answer: the answer's parent differs.
    e = Ep(episode_id="t")
    a1 = asst("", tool_use("Bash", {"cmd": "ls"}, "toolu_X1"))
    m1 = e.call([user("go")], a1)
    z = e.turn(m1, tool_result("toolu_X1", "a"), response=asst("Looking closer."))
    e.turn(z, user("and?"), response=asst("Short answer."))
    t = Record.of_calls("t", e.calls)
    check = compare_kept(
        t, analyse_episode(e.calls, reward=1.0), wire, analyse_episode(w_calls, reward=1.0)
    )
    assert check["disagreements"] == [f"call {w_m2.line}: another parent in the transcript"]
