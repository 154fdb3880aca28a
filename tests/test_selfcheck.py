"""The self-check (PIPELINE §2): trees the rules cannot explain get `unexplained_root`.

It must flag the wrong trees (strict prefix matching on the real OpenClaw 2026.9.6 recording,
i.e. what clawviz drew before the matching rules; hand-made cases of each shape) and none of
the correctly rebuilt episodes (the bundled samples, the real-traffic fixtures, the transcript
fixtures, the recordings).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.jobs.analyse import ensure_analysis, episode_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.recon.classify import classify_calls
from clawviz.recon.pipeline import analyse_episode
from clawviz.recon.prune import prune_episode
from clawviz.recon.tree import build_call_tree
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.calls import load_calls
from clawviz.store.db import init_db
from clawviz.store.models import CallRow
from tests.dburl import memory_engine
from tests.harness import recorded
from tests.recon_helpers import Ep, asst, tool_result, tool_use, user

ROOT = Path(__file__).resolve().parent
RECORDED = ROOT / "data" / "recorded" / "openclaw-2026.9.6"


def _codes(analysis) -> list[str]:
    return [r.code for r in analysis.reasons]


def _recorded_calls(name: str, tmp: Path):
    shutil.copy(RECORDED / name / "exchanges.jsonl.gz", tmp / "x.jsonl.gz")
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as s:
        ingest_paths([tmp / "x.jsonl.gz"], session=s)
        s.commit()
        (ep,) = {c.episode_id for c in s.exec(select(CallRow))}
        return load_calls(s, ep)


def test_strict_prefix_matching_on_the_openclaw_recording_is_flagged(tmp_path):
    calls = _recorded_calls("gateway-session", tmp_path)
    tree = build_call_tree(calls, match_rules=False)
    cls = classify_calls(tree)
    result = prune_episode(tree, cls, reward=1.0)
    (reason,) = [r for r in result.reasons if r.code == "unexplained_root"]
    # Every main request of that Gateway session ends with its own context block, so each
    # one is a new root: the check names them instead of drawing a forest.
    assert "has no parent" in reason.evidence
    assert int(reason.evidence.split(" ", 1)[0]) >= 8
    # With the rules, the same calls explain themselves.
    a = analyse_episode(calls, reward=1.0)
    assert "unexplained_root" not in _codes(a)
    assert a.status == "kept"


def test_second_main_root_without_boundary_is_flagged_and_dropped():
    e = Ep()
    first = e.chain(2)
    e.call([user("a different task, no compaction before it")])
    a = analyse_episode(e.calls, reward=1.0)
    (r,) = [r for r in a.reasons if r.code == "unexplained_root"]
    assert r.call_id == e.calls[-1].call_id
    assert f"first main root {first[0].seq}" in r.evidence
    assert a.status == "dropped"


def test_setting_off_lists_the_reason_but_keeps_the_episode():
    e = Ep()
    e.chain(2)
    e.call([user("another root")])
    a = analyse_episode(
        e.calls, reward=1.0, settings=DEFAULT_SETTINGS.with_(drop_unexplained_root=False)
    )
    assert _codes(a) == ["unexplained_root"]
    assert a.status == "kept"


def test_continuation_without_summary_link_is_flagged():
    e = Ep()
    e.chain(2)
    e.call(
        [
            user(
                "This session is being continued from a previous conversation that ran out of "
                "context. The summary below covers the earlier portion of the conversation."
            )
        ]
    )
    a = analyse_episode(e.calls, reward=1.0)
    (r,) = [r for r in a.reasons if r.code == "unexplained_root"]
    assert "has no summary link" in r.evidence


def test_retried_root_and_other_session_are_explained():
    e = Ep()
    e.call([user("do the task")], status=529)
    ok = e.call([user("do the task")], asst("step", tool_use("Bash", {"cmd": "ls"}, "t1")))
    e.turn(ok, tool_result("t1", "out"))
    e.call([user("a second session of the same sandbox")], session_id="s2")
    for c in e.calls[:-1]:
        c.session_id = "s1"
    a = analyse_episode(e.calls, reward=1.0)
    assert "unexplained_root" not in _codes(a)


def _all_flags(paths: list[Path]) -> tuple[dict[str, list[str]], int]:
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as s:
        ingest_paths(paths, session=s)
        s.commit()
        ensure_analysis(s)
        eps = sorted({c.episode_id for c in s.exec(select(CallRow)) if c.episode_id})
        out = {}
        for ep in eps:
            a = episode_analysis(s, ep)
            flagged = [r.evidence for r in a.reasons if r.code == "unexplained_root"]
            if flagged:
                out[ep] = flagged
        return out, len(eps)


def test_no_correctly_rebuilt_episode_is_flagged(tmp_path):
    paths = [ROOT.parent / "sample_logs" / "exchanges"]
    paths += sorted((ROOT / "data" / "real_traffic").glob("*.jsonl"))
    paths += [ROOT / "data" / "transcripts"]
    for rec in sorted(p for p in RECORDED.iterdir() if p.is_dir()):
        dst = tmp_path / rec.name
        dst.mkdir()
        shutil.copy(rec / "exchanges.jsonl.gz", dst / "exchanges.jsonl.gz")
        paths.append(dst)
    paths = [p for p in paths if p.exists()]
    flags, n = _all_flags(paths)
    assert n > 20
    # Malformed transcript fixtures are rejected line by line; every loaded episode is fine.
    assert flags == {}, json.dumps(flags, indent=1)


@pytest.mark.parametrize("n_roots", [2, 5])
def test_evidence_counts_every_unexplained_root(n_roots):
    e = Ep()
    e.chain(2)
    for i in range(n_roots - 1):
        e.call([user(f"unrelated request {i}")])
    a = analyse_episode(e.calls, reward=1.0)
    (r,) = [r for r in a.reasons if r.code == "unexplained_root"]
    assert r.evidence.startswith(f"{n_roots - 1} call(s)")


SELF_CHECK = {"unexplained_root", "unexplained_edit", "lost_kept_call"}


@pytest.mark.parametrize(
    "folder", recorded.folders(), ids=[recorded.folder_id(f) for f in recorded.folders()]
)
def test_the_self_check_flags_no_committed_recording(recorded_store, folder):
    """Every recording of a real harness rebuilds without any self-check flag (and no kept
    call's parent needs an edit no rule explains)."""
    loaded = recorded_store(folder)
    flagged = [(r.code, r.evidence) for r in loaded.analysis.reasons if r.code in SELF_CHECK]
    assert flagged == []
    tree = build_call_tree(loaded.calls)
    odd = {c: [e.summary for e in es if not e.explained] for c, es in tree.edits.items()}
    assert {c: s for c, s in odd.items() if s} == {}


def test_status_and_grpo_validity_come_from_one_verdict():
    """`drop_unexplained_root` is read in one place (`pipeline.verdict`): off, an unexplained
    root with a low reward is dropped for the reward alone and still counts in GRPO (the
    reward rule is not abnormal); on, it is dropped and does not count."""
    from clawviz.recon.pipeline import is_grpo_valid, verdict

    e = Ep()
    e.chain(2)
    e.call([user("another root")])
    low = DEFAULT_SETTINGS.reward_threshold / 2
    for on in (False, True):
        settings = DEFAULT_SETTINGS.with_(drop_unexplained_root=on)
        a = analyse_episode(e.calls, reward=low, settings=settings)
        assert _codes(a) == ["unexplained_root", "below_reward_threshold"]
        v = verdict(a.reasons, low, settings)
        assert (a.status, v.status) == ("dropped", "dropped")
        assert v.grpo_valid is (not on) is is_grpo_valid(a.reasons, low, settings)
