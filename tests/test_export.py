"""Export for training (issue 16): SFT and RL rows checked against the logs themselves.

Which calls are kept comes from each dataset's `expected.json` (what the generator or scenario
meant, per file and line); the reply text, tool calls, token ids and logprobs come from the raw
log lines (`tests/export_raw.py`). The rows must train every kept reply exactly once, never a
tool result, and, in RL rows, exactly the sampled tokens with their logprobs.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import jsonschema
import orjson
import pandas as pd
import pytest
from export_raw import raw_record, raw_reply
from recon_helpers import Ep, asst, tool_result, tool_use, user, with_rollout
from sqlmodel import Session, select

from clawviz.export import Selection, report_path, run_export
from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import calls as store
from clawviz.store.db import get_engine, init_db
from clawviz.store.models import CallRow, Result
from clawviz.store.queries import EpisodeFilter
from tests.dburl import fresh_url, memory_engine
from tests.harness import recorded

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_logs"
REAL = REPO / "tests" / "data" / "real_traffic"
SCHEMA = json.loads((REPO / "docs" / "export.schema.json").read_text())
ROW_SCHEMA = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
ROW_SCHEMA.check_schema(SCHEMA)
TOKEN_LISTS = {
    # RL's per-token lists, as the schema's item types say (jsonschema spends ~10 us a token).
    "input_ids": lambda x: isinstance(x, int) and not isinstance(x, bool) and x >= 0,
    "loss_mask": lambda x: x in (0, 1) and not isinstance(x, bool),
    "rollout_logprobs": lambda x: x is None or isinstance(x, float | int),
    "token_advantages": lambda x: x is None or isinstance(x, float | int),
}


def validate_row(row: dict) -> None:
    """The row against docs/export.schema.json; RL's token lists past their first 64 items
    are checked for the schema's item types in plain Python (the same constraints, faster)."""
    short = dict(row)
    for key, ok in TOKEN_LISTS.items():
        items = row.get(key)
        if isinstance(items, list) and len(items) > 64:
            bad = [i for i, x in enumerate(items) if not ok(x)]
            assert not bad, f"{row['row_id']}: {key}[{bad[0]}] = {items[bad[0]]!r}"
            short[key] = items[:64]
    ROW_SCHEMA.validate(short)


def read_jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line]


def export(url: str, fmt: str, out: Path, **kw) -> tuple[list[dict], dict]:
    with Session(get_engine(url)) as s:
        report = run_export(s, fmt, out, **kw)
    rows = read_jsonl(out) if out.suffix == ".jsonl" else []
    saved = json.loads(report_path(out).read_text())
    assert saved == json.loads(json.dumps(report.to_dict()))
    return rows, saved


class Dataset:
    """Calls of a store by (file name, line) with the expected decisions of each line."""

    def __init__(self, url: str, expected: dict[tuple[str, int], dict], episodes: dict[str, str]):
        self.url = url
        self.expected = expected
        self.episode_status = episodes
        with Session(get_engine(url)) as s:
            rows = s.exec(select(CallRow.call_id, CallRow.source_file, CallRow.line)).all()
        self.where = {cid: (src, line) for cid, src, line in rows}
        self.by_line = {(Path(src).name, line): cid for cid, src, line in rows}

    def state(self, call_id: str) -> str:
        src, line = self.where[call_id]
        return self.expected[(Path(src).name, line)]["state"]

    def episode(self, call_id: str) -> str:
        src, line = self.where[call_id]
        return self.expected[(Path(src).name, line)]["episode"]

    def reply(self, call_id: str):
        src, line = self.where[call_id]
        path = src if Path(src).is_absolute() else str(REPO / src)
        return raw_reply(raw_record(path, line))

    def kept_calls(self, statuses: tuple[str, ...] = ("kept",)) -> set[str]:
        """Calls the dataset's author meant to be kept, in episodes of these statuses."""
        out = set()
        for (name, line), e in self.expected.items():
            if e["state"] == "kept" and self.episode_status[e["episode"]] in statuses:
                out.add(self.by_line[(name, line)])
        return out


@pytest.fixture(scope="module")
def samples(sample_db_url) -> Dataset:
    exp = json.loads((SAMPLES / "expected.json").read_text())
    expected = {
        (Path(c["file"]).name, c["line"]): {**c, "episode": c["episode_id"]} for c in exp["calls"]
    }
    statuses = {e["episode_id"]: e["status"] for e in exp["episodes"]}
    return Dataset(sample_db_url, expected, statuses)


def _expected_of(log: Path) -> Path:
    return log.with_name(log.stem + ".expected.json")


def _real_dataset(folder: Path, tmp: Path) -> Dataset:
    """The real-traffic-shaped logs (no results: every episode is dropped as missing_reward)."""
    url = fresh_url(tmp, "real")
    logs = sorted(p for p in folder.rglob("*.jsonl") if _expected_of(p).exists())
    for log in logs:
        shutil.copy(log, tmp / log.name)
    with Session(get_engine(url)) as s:
        ingest_paths(sorted(tmp.glob("*.jsonl")), session=s)
        s.commit()
        ensure_analysis(s)
    expected = {}
    for log in logs:
        for e in json.loads(_expected_of(log).read_text()):
            expected[(log.name, e["line"])] = {**e, "episode": log.stem}
    return Dataset(url, expected, {log.stem: "dropped" for log in logs})


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Dataset:
    return _real_dataset(REAL, tmp_path_factory.mktemp("real_export"))


def trained_by_row(row: dict) -> list[tuple[str, dict]]:
    """(call id, message) of each trained message of an SFT row, past its shared prefix."""
    trained = [i for i, t in enumerate(row["train"]) if t]
    assert len(trained) == len(row["call_ids"])
    return [
        (cid, row["messages"][i])
        for cid, i in zip(row["call_ids"], trained, strict=True)
        if i >= row["prefix_messages"]
    ]


def check_sft(ds: Dataset, rows: list[dict], kept: set[str]) -> None:
    for row in rows:
        validate_row(row)
        assert len(row["train"]) == len(row["messages"])
        for msg, t in zip(row["messages"], row["train"], strict=True):
            if msg["role"] != "assistant":
                assert not t, f"{row['row_id']}: a {msg['role']} message is trained"
    seen = Counter(cid for row in rows for cid, _ in trained_by_row(row))
    assert set(seen) == kept
    assert all(n == 1 for n in seen.values()), [c for c, n in seen.items() if n > 1]
    for row in rows:
        for cid, msg in trained_by_row(row):
            raw = ds.reply(cid)
            assert (msg["content"] or "") == raw.text, cid
            got = [
                (tc["function"]["name"], json.loads(tc["function"]["arguments"]))
                for tc in msg.get("tool_calls") or []
            ]
            assert got == raw.tools, cid


def test_sft_trains_every_kept_reply_once_as_logged(samples, tmp_path):
    rows, report = export(samples.url, "sft", tmp_path / "sft.jsonl")
    check_sft(samples, rows, samples.kept_calls())
    assert report["rows"] == len(rows) and report["skipped_paths"] == {}
    assert report["trained_messages"] == len(samples.kept_calls())


def test_sft_tool_results_match_the_tool_calls_they_answer(samples, tmp_path):
    rows, _ = export(samples.url, "sft", tmp_path / "sft.jsonl")
    n_tool = 0
    for row in rows:
        open_ids: set[str] = set()
        for msg in row["messages"]:
            if msg["role"] == "assistant":
                open_ids = {tc["id"] for tc in msg.get("tool_calls") or []}
            elif msg["role"] == "tool":
                n_tool += 1
                assert msg["tool_call_id"] in open_ids, row["row_id"]
        assert row["messages"][-1]["role"] == "assistant" and row["train"][-1]
        assert row["tools"], row["row_id"]
    assert n_tool > 50


def test_sft_rows_carry_identity_reward_and_settings(samples, tmp_path):
    rows, _ = export(samples.url, "sft", tmp_path / "sft.jsonl")
    exp = {
        e["episode_id"]: e for e in json.loads((SAMPLES / "expected.json").read_text())["episodes"]
    }
    for row in rows:
        e = exp[row["episode_id"]]
        assert (row["task_id"], row["harness"], row["attempt"]) == (
            e["task_id"], e["harness"], e["attempt"]
        )  # fmt: skip
        assert row["reward"] == pytest.approx(e["reward"])
        assert row["settings_hash"] == DEFAULT_SETTINGS.settings_hash
        assert row["group"] == f"{e['task_id']}::{e['harness']}"
    # One row per segment with kept calls (compaction restarts the context).
    segs = Counter(r["episode_id"] for r in rows)
    assert segs["t0001-claude-code-a2"] == 2 and segs["t0001-openclaw-a2"] == 2


def test_rl_rows_train_exactly_the_sampled_tokens_with_logprobs(samples, tmp_path):
    rows, report = export(samples.url, "rl", tmp_path / "rl.jsonl")
    kept = samples.kept_calls()
    with_ids = {c for c in kept if samples.reply(c).prompt_ids and samples.reply(c).output_ids}
    episodes_with_ids = {samples.episode(c) for c in with_ids}
    # Every kept call of those episodes logged ids: the whole episode is exportable.
    expected = {c for c in kept if samples.episode(c) in episodes_with_ids}
    assert expected == with_ids and len(episodes_with_ids) == 3
    trained = Counter()
    for row in rows:
        validate_row(row)
        n = len(row["input_ids"])
        assert len(row["loss_mask"]) == n == len(row["rollout_logprobs"])
        sampled, lps = [], []
        for cid in row["call_ids"]:
            raw = samples.reply(cid)
            sampled += raw.output_ids
            lps += raw.logprobs
            trained[cid] += 1
        got = [t for t, m in zip(row["input_ids"], row["loss_mask"], strict=True) if m]
        assert got == sampled
        assert [
            p for p, m in zip(row["rollout_logprobs"], row["loss_mask"], strict=True) if m
        ] == lps
        assert all(
            p is None
            for p, m in zip(row["rollout_logprobs"], row["loss_mask"], strict=True)
            if not m
        )
        first = samples.reply(row["call_ids"][0])
        assert row["input_ids"][: len(first.prompt_ids)] == first.prompt_ids
    assert set(trained) == expected and set(trained.values()) == {1}
    assert report["trained_tokens"] == sum(len(samples.reply(c).output_ids) for c in expected)


def test_rl_skips_paths_without_token_ids_and_counts_them(samples, tmp_path):
    _, report = export(samples.url, "rl", tmp_path / "rl.jsonl")
    exp = json.loads((SAMPLES / "expected.json").read_text())
    paths: Counter[str] = Counter()
    by_episode: dict[str, list[str]] = {}
    for c in exp["calls"]:
        if c["state"] == "kept" and samples.episode_status[c["episode_id"]] == "kept":
            by_episode.setdefault(c["episode_id"], []).append(
                samples.by_line[(Path(c["file"]).name, c["line"])]
            )
    for calls in by_episode.values():
        replies = [samples.reply(c) for c in calls]
        segments = {samples.expected[(Path(samples.where[c][0]).name, samples.where[c][1])]
                    ["segment"] for c in calls}  # fmt: skip
        if all(r.prompt_ids is None and r.output_ids is None for r in replies):
            paths["no_token_ids"] += len(segments)
        elif all(r.prompt_ids is None for r in replies):
            paths["no_prompt_token_ids"] += len(segments)
    assert report["skipped_paths"] == dict(paths)
    assert report["episodes_selected"] == len(by_episode)


def test_parquet_round_trip_with_pandas(samples, tmp_path):
    for fmt in ("sft", "rl"):
        rows, _ = export(samples.url, fmt, tmp_path / f"{fmt}.jsonl")
        export(samples.url, fmt, tmp_path / f"{fmt}.parquet")
        df = pd.read_parquet(tmp_path / f"{fmt}.parquet")
        assert list(df["row_id"]) == [r["row_id"] for r in rows]
        for rec, row in zip(df.to_dict("records"), rows, strict=True):
            if fmt == "sft":
                assert json.loads(rec["tools"]) == row["tools"]
                assert list(rec["train"]) == row["train"]
                for m, want in zip(rec["messages"], row["messages"], strict=True):
                    calls = m["tool_calls"]
                    got = {k: v for k, v in m.items() if v is not None and k != "tool_calls"}
                    if calls is not None:
                        got["tool_calls"] = [
                            dict(tc, function=dict(tc["function"])) for tc in calls
                        ]
                    assert got == {k: v for k, v in want.items() if v is not None}
            else:
                assert list(rec["input_ids"]) == row["input_ids"]
                assert list(rec["loss_mask"]) == row["loss_mask"]
                lps = [None if pd.isna(x) else x for x in rec["rollout_logprobs"]]
                assert lps == row["rollout_logprobs"]
                assert rec["advantage"] == pytest.approx(row["advantage"])


def _codes(episode: dict) -> list[str]:
    return [r["code"] for r in episode["reasons"]]


def _episodes_of(rows: list[dict]) -> set[str]:
    return {r["episode_id"] for r in rows}


def test_filters_select_episodes_as_the_runs_page_does(samples, tmp_path):
    exp = json.loads((SAMPLES / "expected.json").read_text())["episodes"]
    kept = [e for e in exp if e["status"] == "kept"]
    out = tmp_path / "f.jsonl"

    def ids(**kw) -> set[str]:
        rows, _ = export(samples.url, "sft", out, selection=Selection(**kw))
        return _episodes_of(rows)

    assert ids(filter=EpisodeFilter(tasks=("task_0002",))) == {
        e["episode_id"] for e in kept if e["task_id"] == "task_0002"
    }
    assert ids(filter=EpisodeFilter(harnesses=("openclaw",))) == {
        e["episode_id"] for e in kept if e["harness"] == "openclaw"
    }
    assert ids(filter=EpisodeFilter(models=(kept[0]["model"],))) == {
        e["episode_id"] for e in kept if e["model"] == kept[0]["model"]
    }
    assert ids(filter=EpisodeFilter(reward_min=0.9, reward_max=1.0)) == {
        e["episode_id"] for e in kept if e["reward"] is not None and e["reward"] >= 0.9
    }
    every = {e["episode_id"] for e in exp}
    assert ids(include_dropped=True) == every
    assert ids(include_dropped=True, filter=EpisodeFilter(statuses=("dropped",))) == {
        e["episode_id"] for e in exp if e["status"] == "dropped"
    }
    assert ids(include_dropped=True, filter=EpisodeFilter(reasons=("below_reward_threshold",))) == {
        e["episode_id"] for e in exp if "below_reward_threshold" in _codes(e)
    }
    assert ids(episode_ids=("t0001-openclaw-a1",)) == {"t0001-openclaw-a1"}
    assert ids(episode_ids=()) == set()  # a search that matched nothing exports nothing


def test_dropped_episodes_carry_their_reasons(samples, tmp_path):
    rows, _ = export(
        samples.url, "sft", tmp_path / "d.jsonl", selection=Selection(include_dropped=True)
    )
    exp = {
        e["episode_id"]: e for e in json.loads((SAMPLES / "expected.json").read_text())["episodes"]
    }
    for row in rows:
        assert row["status"] == exp[row["episode_id"]]["status"]
        assert sorted(row["reasons"]) == sorted(_codes(exp[row["episode_id"]]))
    check_sft(samples, rows, samples.kept_calls(("kept", "dropped")))


def test_all_valid_rows_share_prefixes_and_train_each_reply_once(samples, tmp_path):
    settings = DEFAULT_SETTINGS.with_(branch_policy="all_valid")
    sel = Selection(include_dropped=True, episode_ids=("e31cf886-54eb-430f-8bb4-89af4c2f1420",))
    rows, report = export(
        samples.url, "sft", tmp_path / "av.jsonl", selection=sel, settings=settings
    )
    # The user rewound 9 times after the final answer: 9 leaves, each kept under all_valid.
    assert len(rows) == 9
    main = {
        samples.by_line[k]
        for k, e in samples.expected.items()
        if e["episode"] == sel.episode_ids[0] and e["role"] == "main" and e["state"] != "failed"
        and e["reason"] != "superseded_retry"
    }  # fmt: skip
    seen = Counter(cid for row in rows for cid, _ in trained_by_row(row))
    assert set(seen) == main and set(seen.values()) == {1}
    assert report["trained_messages"] == len(main)
    assert rows[0]["prefix_id"] is None
    assert len({r["prefix_id"] for r in rows[1:]}) == 1 and rows[1]["prefix_messages"] > 0
    for row in rows[1:]:
        # Claude Code's system line carries a per-request billing hash; the rest is shared.
        shared = row["messages"][1 : row["prefix_messages"]]
        assert shared == rows[0]["messages"][1 : row["prefix_messages"]]
        assert (
            row["messages"][row["prefix_messages"]] != rows[0]["messages"][row["prefix_messages"]]
        )


def test_report_statistics_of_the_exported_set(samples, tmp_path):
    from clawviz.store.queries import dataset_stats

    _, report = export(samples.url, "sft", tmp_path / "s.jsonl")
    kept = samples.kept_calls()
    by_episode: dict[str, list[str]] = {}
    for cid in kept:
        by_episode.setdefault(samples.episode(cid), []).append(cid)
    n = len(by_episode)
    turns = sum(len(v) for v in by_episode.values()) / n
    tools = [[name for name, _ in samples.reply(c).tools] for c in kept]
    tool_calls = sum(len(t) for t in tools) / n
    types = (
        sum(
            len({name for c in calls for name, _ in samples.reply(c).tools})
            for calls in by_episode.values()
        )
        / n
    )
    stats = report["stats_per_trajectory"]
    assert report["trajectories"] == n
    assert stats["turns"] == {"export": pytest.approx(turns), "paper": 13.0}
    assert stats["tool_calls"]["export"] == pytest.approx(tool_calls)
    assert stats["tool_types"]["export"] == pytest.approx(types)
    assert (stats["tokens"]["paper"], stats["tool_types"]["paper"]) == (18670.0, 3.25)
    # Tokens follow the Runs page's definition: the same figure for the same (whole) kept set.
    with Session(get_engine(samples.url)) as s:
        runs = dataset_stats(s, DEFAULT_SETTINGS.settings_hash)
    assert stats["tokens"]["export"] == pytest.approx(runs.means["tokens"])


# --- hand-made episodes with token ids: drift splits, shared prefixes, PPO values ---------


@pytest.fixture
def session():
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as s:
        yield s


def _add(session, e: Ep, reward: float) -> None:
    store.write_calls(session, e.calls, None)
    store.refresh_episodes(session, [e.episode_id])
    session.add(Result(episode_id=e.episode_id, task_id="task_1", harness=e.harness, reward=reward))
    session.commit()


def _tokened(e: Ep, prompts: list[list[int]], outputs: list[list[int]], values=False) -> None:
    for c, p, o in zip(e.calls, prompts, outputs, strict=True):
        with_rollout(
            c,
            prompt_token_ids=p,
            output_token_ids=o,
            output_logprobs=[-0.1 * (i + 1) for i in range(len(o))],
            values=[0.25] * len(o) if values else None,
        )


def test_rl_splits_where_token_alignment_breaks(session, tmp_path):
    e = Ep("drift")
    e.chain(3)
    # call 2 extends call 1 cleanly; call 3's prompt re-renders call 2's output (retoken).
    _tokened(
        e, [[1, 2], [1, 2, 10, 11, 3], [1, 2, 10, 11, 3, 20, 99, 4]], [[10, 11], [20, 21], [30]]
    )
    _add(session, e, 1.0)
    out = tmp_path / "rl.jsonl"
    report = run_export(session, "rl", out)
    rows = read_jsonl(out)
    assert [r["drift_reason"] for r in rows] == [None, "retoken"]
    assert [r["call_ids"] for r in rows] == [["drift-c1", "drift-c2"], ["drift-c3"]]
    assert rows[0]["input_ids"] == [1, 2, 10, 11, 3, 20, 21]
    assert rows[0]["loss_mask"] == [0, 0, 1, 1, 0, 1, 1]
    assert rows[1]["input_ids"] == [1, 2, 10, 11, 3, 20, 99, 4, 30]
    assert rows[1]["loss_mask"] == [0] * 8 + [1]
    assert report.splits == {"retoken": 1} and report.trained_tokens == 5


def test_rl_partial_token_ids_skip_the_path(session, tmp_path):
    e = Ep("partial")
    e.chain(2)
    _tokened(e, [[1], [1, 5, 2]], [[5], [6]])
    e.calls[1].rollout.prompt_token_ids = None
    _add(session, e, 1.0)
    report = run_export(session, "rl", tmp_path / "rl.jsonl")
    assert report.rows == 0 and report.skipped == {"partial_token_ids": 1}
    assert "partial" in report.text() and "partial_token_ids: 1" in report.text()


def test_rl_tokens_without_logprobs_are_trained_with_null_and_counted(session, tmp_path):
    e = Ep("nolp")
    e.chain(2)
    _tokened(e, [[1], [1, 5, 2]], [[5], [6, 7]])
    e.calls[1].rollout.output_logprobs = None
    _add(session, e, 1.0)
    out = tmp_path / "rl.jsonl"
    report = run_export(session, "rl", out)
    (row,) = read_jsonl(out)
    assert row["loss_mask"] == [0, 1, 0, 1, 1]
    assert row["rollout_logprobs"] == [None, -0.1, None, None, None]
    assert report.calls_without_logprobs == 1
    assert "calls without rollout logprobs: 1" in report.text()


def test_rl_all_valid_trains_a_shared_prefix_once_and_ppo_values(session, tmp_path):
    e = Ep("fork")
    a = e.call([user("task")], asst("look", tool_use("Bash", {"cmd": "ls"}, "t1")))
    b1 = e.turn(a, tool_result("t1", "x"), response=asst("done A"))
    e.call(a.messages + [a.response, user("no, try again")], asst("done B"))
    _tokened(e, [[1], [1, 7, 2], [1, 7, 3]], [[7], [8, 8], [9]], values=True)
    _add(session, e, 1.0)
    settings = DEFAULT_SETTINGS.with_(branch_policy="all_valid")
    out = tmp_path / "rl.jsonl"
    run_export(session, "rl", out, settings=settings, advantage="ppo")
    rows = read_jsonl(out)
    assert len(rows) == 2
    assert rows[0]["call_ids"] == ["fork-c1", b1.call_id] and rows[0]["prefix_id"] is None
    # The second path trains only its own reply; the shared first call is context there.
    assert rows[1]["call_ids"] == ["fork-c3"] and rows[1]["prefix_id"] == "fork:0:fork-c1"
    assert rows[1]["input_ids"] == [1, 7, 3, 9] and rows[1]["loss_mask"] == [0, 0, 0, 1]
    for row in rows:
        assert row["advantage_kind"] == "ppo_values" and row["advantage"] == 1.0
        want = [0.75 if m else None for m in row["loss_mask"]]
        assert row["token_advantages"] == want
    for row in rows:
        validate_row(row)


def test_sft_harness_injected_assistant_text_is_not_trained(session, tmp_path):
    e = Ep("inject")
    c1 = e.call([user("task")], asst("step", tool_use("Bash", {"cmd": "ls"}, "t1")))
    # The harness appends a canned assistant message the model never produced.
    canned = asst("[harness] resuming")
    e.call(c1.messages + [c1.response, tool_result("t1", "out"), canned, user("go on")],
           asst("final"))  # fmt: skip
    _add(session, e, 1.0)
    out = tmp_path / "sft.jsonl"
    run_export(session, "sft", out)
    (row,) = read_jsonl(out)
    trained = [m["content"] for m, t in zip(row["messages"], row["train"], strict=True) if t]
    assert trained == ["step", "final"]
    assert any(m["content"] == "[harness] resuming" for m in row["messages"])


def test_an_interrupted_export_leaves_no_file(session, tmp_path):
    e = Ep("x")
    e.chain(2)
    _add(session, e, 1.0)
    out = tmp_path / "x.parquet"

    def boom(done, total, msg):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_export(session, "sft", out, progress=boom)
    assert not out.exists() and not list(tmp_path.iterdir())


# --- the real-traffic-shaped logs and the recordings of real harnesses -------------------


def test_real_traffic_sft_trains_each_kept_reply_once(real, tmp_path):
    rows, report = export(
        real.url, "sft", tmp_path / "s.jsonl", selection=Selection(include_dropped=True)
    )
    check_sft(real, rows, real.kept_calls(("dropped",)))
    assert report["skipped_paths"] == {}


def test_real_traffic_rl_has_no_token_ids_and_says_so(real, tmp_path):
    rows, report = export(
        real.url, "rl", tmp_path / "r.jsonl", selection=Selection(include_dropped=True)
    )
    assert rows == [] and report["rows"] == 0
    assert set(report["skipped_paths"]) == {"no_token_ids"}
    n_paths = len(
        {(e["episode"], e["segment"]) for e in real.expected.values() if e["state"] == "kept"}
    )
    assert report["skipped_paths"]["no_token_ids"] == n_paths


def _recorded_export(rec, fmt: str, out: Path) -> tuple[list[dict], dict]:
    with Session(rec.engine) as s:
        report = run_export(s, fmt, out, selection=Selection(include_dropped=True))
    return read_jsonl(out), json.loads(json.dumps(report.to_dict()))


@pytest.mark.parametrize("folder", recorded.folders(), ids=recorded.folder_id)
def test_recorded_traffic_exports(recorded_store, folder, tmp_path):
    """Every recording of a real harness (tests/data/recorded/): which calls are kept comes
    from its expected.json, what each of them answered (text, tool calls, sampled token ids,
    logprobs) from the scripted server's scenario replayed against its own log."""
    rec = recorded_store(folder)
    exp = recorded.read_expected(folder)
    replies = recorded.scripted_replies(folder)
    line = {r["call_id"]: r["source"]["line"] for r in rec.rows}
    name = rec.names(exp)
    kept = {c for c, n in line.items() if exp.by_line[n]["state"] == "kept"}
    segment = {c: exp.by_line[line[c]]["segment"] for c in kept}
    assert kept and {c["name"] for c in exp.kept_main()} == {n for p in exp.kept_paths for n in p}

    # SFT: one row per segment, training exactly its kept replies as the server sent them.
    rows, report = _recorded_export(rec, "sft", tmp_path / "sft.jsonl")
    for row in rows:
        validate_row(row)
        for msg, t in zip(row["messages"], row["train"], strict=True):
            assert not (t and msg["role"] != "assistant"), f"{row['row_id']}: {msg['role']} trained"
        tool_flags = [
            t for m, t in zip(row["messages"], row["train"], strict=True) if m["role"] == "tool"
        ]
        assert not any(tool_flags), f"{row['row_id']}: a tool result is trained"
    by_path: dict[str, list[str]] = {}
    splits: dict[str, list[tuple[int, int]]] = {}
    for r in rows:  # a path is split where the harness rewrote its history: rows in order
        by_path.setdefault(r["path_id"], []).extend(name[c] for c in r["call_ids"])
        splits.setdefault(r["path_id"], []).append((r["split"], r["n_splits"]))
    for got in splits.values():
        assert got == [(k, len(got)) for k in range(len(got))]
    assert list(by_path.values()) == exp.kept_paths
    seen = Counter(cid for row in rows for cid, _ in trained_by_row(row))
    assert set(seen) == kept and set(seen.values()) == {1}
    for row in rows:
        for cid, msg in trained_by_row(row):
            want = replies[line[cid]]
            assert (msg["content"] or "") == want.text, name[cid]
            got = [
                (tc["function"]["name"], json.loads(tc["function"]["arguments"]))
                for tc in msg.get("tool_calls") or []
            ]
            assert got == want.tools, name[cid]
    assert report["trained_messages"] == len(kept) and report["skipped_paths"] == {}

    # RL: a segment is exported when the server sent token ids on every kept call of it
    # (it does on every Chat Completions answer); its rows train exactly the sampled tokens.
    tokened = {c for c in kept if replies[line[c]].output_ids is not None}
    full = {s for s in set(segment.values()) if all(c in tokened for c in kept if segment[c] == s)}
    want_trained = {c for c in kept if segment[c] in full}
    rl, rl_report = _recorded_export(rec, "rl", tmp_path / "rl.jsonl")
    trained: Counter[str] = Counter()
    for row in rl:
        validate_row(row)
        assert len(row["input_ids"]) == len(row["loss_mask"]) == len(row["rollout_logprobs"])
        mask = row["loss_mask"]
        sampled, lps = [], []
        for cid in row["call_ids"]:
            want = replies[line[cid]]
            sampled += want.output_ids
            lps += want.logprobs or [None] * len(want.output_ids)
            trained[cid] += 1
        assert [t for t, m in zip(row["input_ids"], mask, strict=True) if m] == sampled
        assert [p for p, m in zip(row["rollout_logprobs"], mask, strict=True) if m] == lps
        assert all(p is None for p, m in zip(row["rollout_logprobs"], mask, strict=True) if not m)
        first = raw_reply(
            raw_record(str(recorded.exchanges_file(folder)), line[row["call_ids"][0]])
        )
        assert row["input_ids"][: len(first.prompt_ids)] == first.prompt_ids
    assert set(trained) == want_trained and set(trained.values()) <= {1}
    assert rl_report["trained_tokens"] == sum(len(replies[line[c]].output_ids) for c in trained)
    n_skipped = len(set(segment.values()) - full)
    assert sum(rl_report["skipped_paths"].values()) == n_skipped
    if not tokened:
        assert set(rl_report["skipped_paths"]) == {"no_token_ids"}
    no_lp = sum(replies[line[c]].logprobs is None for c in trained)
    assert rl_report["calls_without_logprobs"] == no_lp


def test_recorded_traffic_with_token_ids_is_exported_for_rl(recorded_store, tmp_path):
    """The pi (Chat Completions) and OpenClaw recordings carry the toy tokenizer's ids: the
    RL export over them is not empty (so the per-recording checks above check something), and
    both formats read back from Parquet with pandas as written (split SFT rows included)."""
    n = 0
    for folder in recorded.folders("pi-", "openclaw-"):
        rec = recorded_store(folder)
        for fmt in ("sft", "rl"):
            rows, _ = _recorded_export(rec, fmt, tmp_path / f"{fmt}.jsonl")
            with Session(rec.engine) as s:
                run_export(
                    s, fmt, tmp_path / f"{fmt}.parquet", selection=Selection(include_dropped=True)
                )
            df = pd.read_parquet(tmp_path / f"{fmt}.parquet")
            assert list(df["row_id"]) == [r["row_id"] for r in rows]
            for rec_row, row in zip(df.to_dict("records"), rows, strict=True):
                assert list(rec_row["call_ids"]) == row["call_ids"]
                assert (rec_row["split"], rec_row["n_splits"]) == (row["split"], row["n_splits"])
                if fmt == "sft":
                    assert list(rec_row["train"]) == row["train"]
                    assert [m["content"] for m in rec_row["messages"]] == [
                        m["content"] for m in row["messages"]
                    ]
                else:
                    assert list(rec_row["input_ids"]) == row["input_ids"]
                    assert list(rec_row["loss_mask"]) == row["loss_mask"]
                    n += sum(row["loss_mask"])
    assert n > 500


# --- the command line ------------------------------------------------------------------


def test_cli_export_writes_the_rows_and_the_report(samples, tmp_path, capsys):
    from clawviz.cli.main import main

    out = tmp_path / "cli.parquet"
    args = ["--db", samples.url, "export", "--format", "sft", "--out", str(out)]
    assert main([*args, "--harness", "openclaw", "--set", "branch_policy=all_valid"]) == 0
    printed = capsys.readouterr().out
    assert "skipped paths: 0" in printed and str(report_path(out)) in printed
    df = pd.read_parquet(out)
    assert set(df["harness"]) == {"openclaw"}
    assert set(df["settings_hash"]) == {
        DEFAULT_SETTINGS.with_(branch_policy="all_valid").settings_hash
    }
    saved = json.loads(report_path(out).read_text())
    assert saved["rows"] == len(df) and saved["filters"]["harnesses"] == ["openclaw"]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--out", "x.txt"], "must end in .jsonl or .parquet"),
        (["--out", "x.jsonl", "--status", "dropped"], "needs --include-dropped"),
        (["--out", "x.jsonl", "--set", "nope=1"], "unknown setting"),
        (["--out", "x.jsonl", "--set", "branch_policy"], "takes name=value"),
    ],
)
def test_cli_export_refuses_bad_arguments(samples, tmp_path, capsys, extra, message):
    from clawviz.cli.main import main

    extra = [str(tmp_path / e) if e.startswith("x.") else e for e in extra]
    assert main(["--db", samples.url, "export", "--format", "rl", *extra]) == 1
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_batches_respect_the_episode_and_call_limits():
    from clawviz.export.source import batches

    rows = [{"episode_id": str(i), "n_calls": n} for i, n in enumerate([30, 30, 5, 100, 1, 1])]
    got = [(start, [r["episode_id"] for r in b]) for start, b in batches(rows, 2, 64)]
    # An episode larger than the call limit is loaded alone, never dropped.
    assert got == [(0, ["0", "1"]), (2, ["2"]), (3, ["3"]), (4, ["4", "5"])]
    assert [r for _, b in batches(rows, 50, 10_000) for r in b] == rows


def test_an_episode_that_fails_to_export_costs_only_itself(samples, tmp_path, monkeypatch):
    from clawviz.export import run as export_run

    real = export_run.episode_rows

    def flaky(ep, *a, **kw):
        if ep.episode_id == "t0001-openclaw-a1":
            raise ValueError("unexpected block")
        return real(ep, *a, **kw)

    monkeypatch.setattr(export_run, "episode_rows", flaky)
    rows, report = export(samples.url, "sft", tmp_path / "s.jsonl")
    assert "t0001-openclaw-a1" not in _episodes_of(rows)
    assert len(_episodes_of(rows)) == report["episodes_selected"] - 1
    assert report["skipped_paths"] == {"export_error": 1}
    assert "t0001-openclaw-a1" in report["skipped_examples"]["export_error"][0]
    assert "unexpected block" in report["skipped_examples"]["export_error"][0]


def test_export_docs_loaders_are_python_and_name_real_columns():
    import ast
    import re

    text = (REPO / "docs" / "EXPORT.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 6  # sharded parts (datasets, pyarrow), TRL, slime, verl SFT, verl RL
    columns = set(SCHEMA["$defs"]["common"]["properties"]) | {"format"}
    for kind in ("sft_row", "rl_row"):
        columns |= set(SCHEMA["$defs"][kind]["properties"])
    for code in blocks:
        ast.parse(code)
        for used in re.findall(r'r(?:ow)?\["(\w+)"\]|row\.(\w+)', code):
            name = used[0] or used[1]
            assert name in columns, name
