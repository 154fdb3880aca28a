"""One reward rule: every surface that shows an attempt's reward agrees under reward_weights.

Expected rewards are computed here from sample_logs/results.jsonl by the PIPELINE §5 formula
(weighted mean of the check mean and the rubric mean), not by clawviz.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session

from clawviz.cli.main import episode_rows
from clawviz.jobs.analyse import ensure_analysis, episode_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.review.tasks import attempt_workspaces, task_detail, task_queue
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import queries
from clawviz.store.db import get_engine
from tests import dburl

SAMPLE_LOGS = Path(__file__).resolve().parents[1] / "sample_logs"
WEIGHTS = {"checks": 1.0, "rubric": 3.0}


def _expected() -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for line in (SAMPLE_LOGS / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        checks, rubric = list(r.get("checks", {}).values()), list(r.get("rubric", {}).values())
        parts = []
        if checks:
            parts.append((WEIGHTS["checks"], sum(checks) / len(checks)))
        if rubric:
            parts.append((WEIGHTS["rubric"], sum(rubric) / len(rubric)))
        if parts:
            out[r["episode_id"]] = sum(w * v for w, v in parts) / sum(w for w, _ in parts)
        else:
            out[r["episode_id"]] = r.get("reward")
    return out


@pytest.fixture
def weighted_store(tmp_path):
    """The sample logs in a fresh store, analysed under reward_weights."""
    url = dburl.fresh_url(tmp_path, "weighted")
    settings = DEFAULT_SETTINGS.with_(reward_weights=WEIGHTS)
    with Session(get_engine(url)) as s:
        ingest_paths([SAMPLE_LOGS], session=s)
        ensure_analysis(s, settings)
    return url, settings


def test_weights_change_most_sample_rewards():
    # Otherwise the agreement test below could pass with a surface that ignores the weights.
    raw = {
        (r := json.loads(line))["episode_id"]: r.get("reward")
        for line in (SAMPLE_LOGS / "results.jsonl").read_text().splitlines()
    }
    exp = _expected()
    # 3 attempts change substantively (rubric below the checks); most others differ from the
    # logged 6-digit reward in the last digits, which the exact comparison below also catches.
    assert sum(1 for e in exp if abs(exp[e] - raw[e]) > 1e-3) >= 3
    assert sum(1 for e in exp if abs(exp[e] - raw[e]) > 1e-12) >= 10


def test_every_surface_shows_the_same_reward_under_reward_weights(weighted_store):
    url, settings = weighted_store
    expected = _expected()
    h = settings.settings_hash
    with Session(get_engine(url)) as s:
        runs = queries.episodes_frame(s, h).set_index("episode_id")["reward"].to_dict()
        cli = {r["episode_id"]: r["reward"] for r in episode_rows(s, settings)}
        # Attempts with calls have an episode (Runs, Episode, Compare, CLI); the others only a
        # result line (Tasks, Workspace).
        with_calls = set(runs) & set(expected)
        episode = {e: episode_analysis(s, e, settings).reward for e in with_calls}
        tasks = {
            a.episode_id: a.reward
            for row in task_queue(s, settings)
            for a in (task_detail(s, row.task_id, settings).attempts)
        }
        compare = {}
        for task_id in {row.task_id for row in task_queue(s, settings)}:
            df = queries.attempts_of_task(s, task_id, h)
            compare.update(df.set_index("episode_id")["reward"].to_dict())
        workspace = {}
        for e in expected:
            ws = attempt_workspaces(s, e, settings)
            workspace[e] = ws.attempt.reward if ws else None
    surfaces = {
        "Runs": runs,
        "Episode": episode,
        "Compare": compare,
        "Tasks": tasks,
        "Workspace": workspace,
        "clawviz episodes": cli,
    }
    assert len(with_calls) >= 10
    for name, shown in surfaces.items():
        ids = expected if name in ("Tasks", "Workspace") else with_calls
        for eid in ids:
            want = expected[eid]
            assert eid in shown, (name, eid)
            got = shown[eid]
            if want is None:
                assert got is None or got != got, (name, eid)
            else:
                assert got == pytest.approx(want, rel=0, abs=1e-12), (name, eid, got, want)
