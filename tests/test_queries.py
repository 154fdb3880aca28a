"""Read-side queries on the sample store, the episode filter, and inspector helpers."""

from __future__ import annotations

import pandas as pd
import pytest
from sqlmodel import Session

from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import queries
from clawviz.store.db import get_engine
from clawviz.types import Call, CallDecision, EpisodeAnalysis, PathInfo
from clawviz.ui.inspector import call_label, escape_md, message_delta, path_rows

H = DEFAULT_SETTINGS.settings_hash


@pytest.fixture
def session(sample_db_url):
    with Session(get_engine(sample_db_url)) as s:
        yield s


def test_episodes_frame_joins_status_and_results(session):
    df = queries.episodes_frame(session, H)
    counts = queries.store_counts(session)
    assert len(df) == counts["episodes"] > 0
    assert list(df.columns) == queries.EPISODE_COLUMNS
    assert set(df["status"]) <= {"kept", "dropped"}
    assert df["reasons"].map(type).eq(str).all()
    missing = df[df["reasons"].map(lambda r: "missing_reward" in queries.split_reasons(r))]
    assert missing["reward"].isna().all()
    assert df["reward"].notna().sum() == counts["results"]
    # Under an unknown settings hash nothing is analysed, but the episodes are still listed.
    other = queries.episodes_frame(session, "not-a-hash")
    assert len(other) == len(df) and set(other["status"]) == {"not analysed"}


def test_reason_counts_and_groups(session):
    df = queries.episodes_frame(session, H)
    counts = queries.reason_counts(df)
    by_code = dict(zip(counts["reason"], counts["episodes"], strict=True))
    assert by_code["too_many_branches"] == 1
    assert by_code == {
        code: int(df["reasons"].map(lambda r, c=code: c in queries.split_reasons(r)).sum())
        for code in by_code
    }
    assert queries.all_reasons(df) == sorted(by_code)
    groups = queries.group_frame(df)
    assert groups["advantage"].notna().all() and groups["group"].str.contains(" / ").all()


def test_dataset_stats_cover_kept_episodes(session):
    stats = queries.dataset_stats(session, H)
    df = queries.episodes_frame(session, H)
    assert stats.n_trajectories == int((df["status"] == "kept").sum())
    assert (stats.per_trajectory["turns"] >= 1).all()
    assert (stats.per_trajectory["tool_types"] <= stats.per_trajectory["tool_calls"]).all()
    table = stats.comparison()
    assert list(table["paper (ClawGym SFT)"]) == [13.0, 18670.0, 15.82, 3.25]


def test_sources_rejected_and_attempts(session):
    src = queries.sources_frame(session)
    assert len(src) == queries.store_counts(session)["sources"]
    rej = queries.rejected_frame(session)
    assert {"file", "line", "reason", "raw"} <= set(rej.columns) and len(rej) >= 4
    att = queries.attempts_of_task(session, "task_0002", H)
    assert len(att) >= 2 and set(att["task_id"]) == {"task_0002"}


def test_filter_episodes_on_a_small_frame():
    df = pd.DataFrame(
        {
            "episode_id": ["a", "b", "c", "d"],
            "task_id": ["t1", "t1", "t2", "t2"],
            "harness": ["x", "y", "x", "y"],
            "model": ["m", "m", "n", "n"],
            "status": ["kept", "dropped", "dropped", "dropped"],
            "reasons": [
                "",
                "too_many_branches",
                "missing_reward",
                "ended_in_error, missing_reward",
            ],
            "reward": [0.9, 0.2, None, None],
        }
    )

    def ids(**kw):
        return list(queries.filter_episodes(df, queries.EpisodeFilter(**kw))["episode_id"])

    assert ids() == ["a", "b", "c", "d"]
    assert ids(tasks=("t1",)) == ["a", "b"]
    assert ids(reasons=("too_many_branches",)) == ["b"]
    assert ids(reasons=("missing_reward",)) == ["c", "d"]
    # A code is matched whole, never as a piece of a longer code.
    assert ids(reasons=("error",)) == []
    assert ids(reasons=("ended_in_error", "too_many_branches")) == ["b", "d"]
    assert ids(reward_min=0.5) == ["a", "c", "d"]
    assert ids(reward_min=0.5, include_missing_reward=False) == ["a"]
    assert ids(statuses=("dropped",), harnesses=("x",)) == ["c"]
    counts = queries.reason_counts(df)
    assert list(zip(counts["reason"], counts["episodes"], strict=True)) == [
        ("missing_reward", 2),
        ("ended_in_error", 1),
        ("too_many_branches", 1),
    ]


def test_reason_codes_tolerates_bad_json():
    assert queries.reason_codes('[{"code": "a"}, {"code": "a"}, {"code": "b"}]') == ["a", "b"]
    assert queries.reason_codes("not json") == []
    assert queries.reason_codes(None) == []


def _msg(role, text):
    return {"role": role, "content": [{"type": "text", "text": text}]}


def test_message_delta_counts_the_shared_history():
    hi, hello = _msg("user", "hi"), _msg("assistant", "hello")
    parent = Call("p", "f", 1, "anthropic_messages", messages=[hi], response=hello)
    child = Call("c", "f", 2, "anthropic_messages", messages=[hi, hello, _msg("user", "more")])
    d = message_delta(child, parent)
    assert len(d.shared) == 2 and [m["content"][0]["text"] for m in d.new] == ["more"]
    assert message_delta(child, None).new == child.messages


def test_escape_md_neutralises_markup():
    out = escape_md("<script>**x** [a](b) :red[y]")
    assert "<" not in out.replace("\\<", "") and "**" not in out
    assert out.startswith("\\<script\\>")


def test_call_label_and_path_rows():
    c = Call("c1", "f", 1, "anthropic_messages", model="m", http_status=529)
    d = CallDecision("c1", "main", "failed", "failed_http")
    assert call_label(c, d) == "call 1 · main · failed (failed_http) · m · HTTP 529"
    path = PathInfo("p", 0, ["c1"], "kept", None, 5, 1.0, 0.5, 1.0)
    a = EpisodeAnalysis("e", "h", "kept", [], {"c1": d}, [path], 1.0)
    row = path_rows(a)[0]
    assert (row["calls"], row["GRPO advantage"], row["PPO return"]) == (1, 0.5, 1.0)


def test_sqlite_stats_match_the_python_fallback(session):
    fast = queries.dataset_stats(session, H).per_trajectory
    slow = queries._stats_in_python(queries._read(session, queries._KEPT_CALLS_SQL, h=H))
    slow = slow[fast.columns].astype({k: float for k in queries.PAPER_STATS})
    slow = slow.sort_values("episode_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(fast, slow, check_dtype=False)


def test_dataset_stats_count_tool_uses_in_a_reply_holding_nul(tmp_path):
    """A kept reply with a NUL in it (jsonb cannot hold the escape) still counts its tool uses
    (PostgreSQL counts those replies in Python, the rest in SQL)."""
    import copy
    import json

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from tests.dburl import fresh_url
    from tests.test_store_backends import RECORD

    record = copy.deepcopy(RECORD)
    record["clawviz"] = {"episode_id": "nul-tools", "seq": 1}
    record["response"]["body"]["content"] = [
        {"type": "text", "text": "reading\u0000"},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a\u0000b"}},
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}},
    ]
    log = tmp_path / "nul-tools.jsonl"
    log.write_text(json.dumps(record) + "\n")
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"episode_id": "nul-tools", "reward": 1.0}) + "\n")
    with Session(get_engine(fresh_url(tmp_path, "nultools"))) as s:
        ingest_paths([log, results], session=s)
        ensure_analysis(s)
        s.commit()
        per = queries.dataset_stats(s, H).per_trajectory
    row = per.set_index("episode_id").loc["nul-tools"]
    assert (row["turns"], row["tool_calls"], row["tool_types"]) == (1, 2, 2)
