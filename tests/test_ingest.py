"""Ingest of files and folders: bad input, idempotence, identity, results, dispatch."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import xxhash
from sqlalchemy import func
from sqlmodel import Session, select
from test_formats_fixtures import (
    SESSION,
    anthropic_record,
    anthropic_tool_use_sse,
    claude_code_episode,
    jsonl,
    openai_json_body_with_token_ids,
    openai_record,
    user,
)

from clawviz.ingest import lines as lines_mod
from clawviz.jobs import ingest as ingest_mod
from clawviz.jobs.ingest import ingest_paths
from clawviz.store import calls as store
from clawviz.store.db import get_engine
from clawviz.store.models import (
    Blob,
    CallRow,
    Episode,
    MessageRow,
    RejectedLine,
    Result,
    Source,
    Task,
)
from tests.dburl import fresh_url

TABLES = (Source, CallRow, MessageRow, Blob, Episode, RejectedLine, Result, Task)
TRANSCRIPTS = Path(__file__).parent / "data" / "transcripts"


@pytest.fixture
def session(tmp_path):
    engine = get_engine(fresh_url(tmp_path, "ingest"))
    with Session(engine) as s:
        yield s


def counts(session):
    return {m.__name__: session.exec(select(func.count()).select_from(m)).one() for m in TABLES}


def bad_sse_record():
    frames = anthropic_tool_use_sse().split("\n\n")
    frames[2] = "event: content_block_delta\ndata: {broken"
    return anthropic_record([user("x")], body_raw="\n\n".join(frames), ts=150.0)


def unknown_endpoint_record():
    return {
        "request": {
            "timestamp": 99.0,
            "method": "POST",
            "url": "https://api.anthropic.com/api/event_logging/batch",
            "headers": {},
            "body": {"events": []},
        },
        "response": {"timestamp": 99.1, "status_code": 200, "body": {}},
    }


def write_mixed_log(path: Path) -> list[str]:
    """A log with one of every bad-line kind among valid lines; returns the lines written."""
    c1, c2, c3 = claude_code_episode()
    lines = [
        json.dumps(c1),
        "this is not json {",
        json.dumps({"hello": "world"}),
        json.dumps(c2),
        json.dumps(bad_sse_record()),
        json.dumps(unknown_endpoint_record()),
        "",
        json.dumps(c3),
        '{"request": {"timestamp": 1, "url": "https://api.anthropic.com/v1/mess',
    ]
    path.write_text("\n".join(lines))  # no newline after the truncated last line
    return lines


def test_every_bad_line_is_rejected_with_file_line_reason_and_the_rest_loads(session, tmp_path):
    log = tmp_path / "mixed.jsonl"
    lines = write_mixed_log(log)
    report = ingest_paths([log], session=session)

    got = {(r.line, r.reason.split(" (")[0]) for r in report.rejected}
    assert {ln for ln, _ in got} == {2, 3, 5, 9}
    reasons = {r.line: r.reason for r in report.rejected}
    assert reasons[2].startswith("not valid JSON")
    assert reasons[3] == "not an exchange record (no 'request' object)"
    assert reasons[5].startswith("response SSE does not parse: SSE frame 3")
    assert reasons[9].startswith("truncated last line")
    assert all(r.file == str(log) for r in report.rejected)
    assert all("\n" not in r.reason for r in report.rejected)

    rows = session.exec(select(RejectedLine).order_by(RejectedLine.line)).all()
    assert [(r.line, r.raw) for r in rows] == [(n, lines[n - 1]) for n in (2, 3, 5, 9)]
    assert all(r.source_file == str(log) for r in rows)

    # 3 Claude Code calls + the unknown endpoint (kept as non_model, noted in the report).
    assert report.n_calls == 4
    assert [(w.line, "unknown endpoint" in w.reason) for w in report.warnings] == [(6, True)]
    endpoints = session.exec(select(CallRow.endpoint, CallRow.line).order_by(CallRow.line)).all()
    assert endpoints == [
        ("anthropic_messages", 1),
        ("anthropic_messages", 4),
        ("non_model", 6),
        ("anthropic_messages", 8),
    ]
    # The identity-less non_model call joins the file's one named episode (FORMATS §1).
    assert {e.episode_id for e in session.exec(select(Episode))} == {SESSION}
    assert session.get(Episode, SESSION).n_calls == 4
    src = session.exec(select(Source)).one()
    assert (src.format, src.n_calls, src.n_rejected, src.n_lines) == ("exchange", 4, 4, 9)
    assert src.sha256 == "xxh3-128:" + xxhash.xxh3_128_hexdigest(log.read_bytes())


def test_fingerprint_of_a_grown_files_old_length_is_its_old_fingerprint(tmp_path):
    log = tmp_path / "grows.jsonl"
    first = jsonl(claude_code_episode())
    log.write_text(first)
    before = lines_mod.fingerprint(log)
    with log.open("a") as f:
        f.write(jsonl([openai_record([user("appended")])]))
    assert lines_mod.fingerprint(log) != before
    assert lines_mod.fingerprint(log, limit=len(first.encode())) == before
    assert lines_mod.fingerprint(log, limit=0) == "xxh3-128:" + xxhash.xxh3_128_hexdigest(b"")


def test_a_file_loaded_by_a_store_that_named_files_by_sha256_is_not_loaded_again(session, tmp_path):
    log = tmp_path / "mixed.jsonl"
    write_mixed_log(log)
    ingest_paths([log], session=session)
    src = session.exec(select(Source)).one()
    src.sha256 = hashlib.sha256(log.read_bytes()).hexdigest()  # as the older store wrote it
    session.add(src)
    session.commit()
    before = counts(session)
    report = ingest_paths([log], session=session)
    assert [f.status for f in report.files] == ["already_loaded"]
    assert counts(session) == before


def test_reingesting_the_same_file_adds_nothing(session, tmp_path):
    log = tmp_path / "mixed.jsonl"
    write_mixed_log(log)
    ingest_paths([log], session=session)
    before = counts(session)
    report = ingest_paths([log], session=session)
    assert counts(session) == before
    assert [f.status for f in report.files] == ["already_loaded"]
    assert report.n_calls == 0 and report.rejected == []
    # Same bytes under another name: still the same source.
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(log.read_bytes())
    ingest_paths([copy], session=session)
    assert counts(session) == before


def _snapshot(session):
    return {
        "calls": [
            r.model_dump(warnings=False)
            for r in session.exec(select(CallRow).order_by(CallRow.call_id))
        ],
        "messages": [
            r.model_dump(warnings=False)
            for r in session.exec(select(MessageRow).order_by(MessageRow.hash))
        ],
    }


def test_nothing_loaded_before_changes(session, tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text(jsonl(claude_code_episode()))
    ingest_paths([a], session=session)
    before = _snapshot(session)
    b = tmp_path / "b.jsonl"
    other = [openai_record([user("x")], headers={"X-Session-Id": "oc"})]
    b.write_text(jsonl(other) + "garbage\n" + jsonl(claude_code_episode()[:1]))
    ingest_paths([b], session=session)
    after = _snapshot(session)
    old_ids = {c["call_id"] for c in before["calls"]}
    assert [c for c in after["calls"] if c["call_id"] in old_ids] == before["calls"]
    old_hashes = {m["hash"] for m in before["messages"]}
    assert [m for m in after["messages"] if m["hash"] in old_hashes] == before["messages"]


def test_a_file_that_fails_as_a_whole_is_rolled_back_and_others_load(
    session, tmp_path, monkeypatch
):
    good = tmp_path / "a_good.jsonl"
    good.write_text(jsonl(claude_code_episode()))
    bad = tmp_path / "b_bad.jsonl"
    bad.write_text(jsonl([openai_record([user("x")], headers={"X-Session-Id": "oc"})]))
    real = store.write_parsed

    def failing(session_, items, source, seen=None):
        if source is not None and source.path.endswith("b_bad.jsonl"):
            raise RuntimeError("disk full")
        return real(session_, items, source, seen)

    monkeypatch.setattr(store, "write_parsed", failing)
    report = ingest_paths([good, bad], session=session)
    assert [(e.path, e.reason) for e in report.errors] == [(str(bad), "RuntimeError: disk full")]
    assert report.n_calls == 3
    assert session.exec(select(Source.path)).all() == [str(good)]
    # Fixed: the failed file loads on the next run (no Source row was left behind).
    monkeypatch.setattr(store, "write_parsed", real)
    assert ingest_paths([bad], session=session).n_calls == 1


def test_gzip_log_loads(session, tmp_path):
    log = tmp_path / "cc.jsonl.gz"
    log.write_bytes(gzip.compress(jsonl(claude_code_episode()).encode()))
    report = ingest_paths([log], session=session)
    assert report.n_calls == 3 and report.rejected == []
    assert session.get(Episode, SESSION).n_calls == 3


def test_gzip_that_ends_early_keeps_what_loaded_and_names_the_line(session, tmp_path):
    recs = []
    for i in range(300):
        r = openai_record([user(f"question {i} " + "pad " * (i % 50))], ts=float(i))
        r["clawviz"] = {"episode_id": "gz", "seq": i}
        recs.append(r)
    data = gzip.compress(jsonl(recs).encode())
    log = tmp_path / "cut.jsonl.gz"
    log.write_bytes(data[: len(data) // 2])
    report = ingest_paths([log], session=session)
    assert 0 < report.n_calls < 300
    (rej,) = report.rejected
    assert rej.file == str(log) and rej.reason.startswith("gzip stream ends early")
    assert rej.line > report.n_calls  # the first line that could not be read
    assert session.exec(select(func.count()).select_from(CallRow)).one() == report.n_calls


def test_identity_less_file_is_one_episode_named_by_its_first_request(session, tmp_path):
    """No session in the traffic: one episode per file, named by the first request's time (and
    the harness, when a marker names it), never by the file path, which stays the source."""
    sub = tmp_path / "run7"
    sub.mkdir()
    log = sub / "sandbox.jsonl"
    log.write_text(
        jsonl([anthropic_record([user("a")], ts=1.0), anthropic_record([user("b")], ts=2.0)])
    )
    ingest_paths([tmp_path], session=session)
    (ep,) = session.exec(select(Episode)).all()
    assert ep.episode_id == "claude-code-1970-01-01T00:00:01.000Z" and ep.n_calls == 2
    files = set(session.exec(select(CallRow.source_file)).all())
    assert files == {str(log)}


def test_identity_less_calls_stay_apart_when_the_file_names_two_episodes(session, tmp_path):
    log = tmp_path / "two.jsonl"
    log.write_text(
        jsonl(
            [
                openai_record([user("a")], headers={"X-Session-Id": "s1"}),
                openai_record([user("b")], headers={"X-Session-Id": "s2"}),
                openai_record([user("c")]),
            ]
        )
    )
    ingest_paths([log], session=session)
    got = {e.episode_id: e.n_calls for e in session.exec(select(Episode))}
    (fallback,) = set(got) - {"s1", "s2"}
    assert got[fallback] == 1 and str(tmp_path) not in fallback
    assert fallback.startswith("openclaw-")  # X-Session-Id: the OpenClaw-RL plugin


def test_folder_is_walked_recursively_and_task_folders_are_not_logs(session, tmp_path):
    root = tmp_path / "logs"
    (root / "a").mkdir(parents=True)
    (root / "b" / "c").mkdir(parents=True)
    (root / "a" / "cc.jsonl").write_text(jsonl(claude_code_episode()))
    oc = [
        openai_record(
            [user("x")], body=openai_json_body_with_token_ids(), headers={"X-Session-Id": "oc"}
        )
    ]
    (root / "b" / "c" / "oc.jsonl.gz").write_bytes(gzip.compress(jsonl(oc).encode()))
    (root / "notes.txt").write_text("not a log")
    (root / "ws").mkdir()
    (root / "ws" / "updates.jsonl").write_text('{"volunteer": "ann", "hours": 3}\n')
    task = root / "tasks" / "task_0001"
    (task / "input_files").mkdir(parents=True)
    (task / "data_entry.json").write_text(
        json.dumps(
            {
                "task_id": "task_0001",
                "user_query": "Fix the roster",
                "input_mount_dir": "/workspace",
                "metadata": {"category": "data", "grading_type": "automated"},
            }
        )
    )
    # Workspace data inside a task folder must never be read as a log.
    (task / "input_files" / "trap.jsonl").write_text(jsonl(claude_code_episode("trap")))

    report = ingest_paths([root], session=session)
    assert report.n_calls == 4
    assert {e.episode_id for e in session.exec(select(Episode))} == {SESSION, "oc"}
    assert [s.path for s in report.skipped_files] == [str(root / "ws" / "updates.jsonl")]
    from clawviz.review import tasks

    assert hasattr(tasks, "load_task_folder")
    assert session.get(Task, "task_0001") is not None and report.n_tasks == 1


def test_missing_path_raises(session, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        ingest_paths([tmp_path / "nope"], session=session)


def test_progress_reports_bytes(session, tmp_path):
    log = tmp_path / "cc.jsonl"
    log.write_text(jsonl(claude_code_episode() * 1))
    seen = []
    ingest_paths([log], session=session, progress=lambda d, t, m: seen.append((d, t, m)))
    total = log.stat().st_size
    assert seen[-1] == (total, total, str(log))
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)


def test_batches_across_many_lines_store_history_once(session, tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_mod, "BATCH_LINES", 7)
    history = [user("start")]
    recs = []
    for i in range(40):
        recs.append(
            anthropic_record(
                list(history), ts=float(i), headers={"x-claude-code-session-id": "long"}
            )
        )
        history += [{"role": "assistant", "content": f"step {i}"}, user(f"go on {i}")]
    log = tmp_path / "long.jsonl"
    log.write_text(jsonl(recs))
    ingest_paths([log], session=session)
    # 1 + 2 per later call: each distinct message stored once although calls re-send history.
    assert session.exec(select(func.count()).select_from(MessageRow)).one() == 1 + 2 * 39
    calls = store.load_calls(session, "long")
    assert len(calls) == 40 and len(calls[-1].messages) == 79


# ---------------------------------------------------------------- results.jsonl


def test_results_link_to_episodes_and_resolve_workspaces(session, tmp_path):
    log = tmp_path / "oc.jsonl"
    log.write_text(jsonl([openai_record([user("x")], clawviz={"episode_id": "t1-oc-a1"})]))
    runs = tmp_path / "runs"
    runs.mkdir()
    res = runs / "results.jsonl"
    lines = [
        {
            "episode_id": "t1-oc-a1",
            "task_id": "task_0001",
            "harness": "openclaw",
            "model": "qwen3-4b",
            "model_role": "small",
            "attempt": 1,
            "reward": 0.75,
            "checks": {"csv_exists": 1.0, "totals_match": 0.5},
            "rubric": {"clarity": 0.8},
            "workspace_before": "ws/t1-a1/before",
            "workspace_after": "ws/t1-a1/after.tar.gz",
        },
        {"episode_id": "t1-oc-a2", "task_id": "task_0001", "checks": {"csv_exists": 0.0}},
        {"episode_id": "t1-oc-a3", "reward": "high"},
        {"episode_id": "t1-oc-a1", "reward": 0.1},
    ]
    res.write_text(jsonl(lines) + "{oops\n")
    ingest_paths([log], session=session)
    report = ingest_paths([res], session=session)
    assert report.n_results == 2
    assert {(r.line, r.reason) for r in report.rejected} >= {
        (3, "'reward' is not a number"),
        (4, "duplicate result for episode t1-oc-a1 (first one kept)"),
    }
    assert sorted(r.line for r in report.rejected) == [3, 4, 5]
    r1 = store.load_result(session, "t1-oc-a1")
    assert r1.reward == 0.75 and json.loads(r1.checks_json) == {
        "csv_exists": 1.0,
        "totals_match": 0.5,
    }
    assert r1.workspace_before == str((runs / "ws/t1-a1/before").resolve())
    assert r1.workspace_after == str((runs / "ws/t1-a1/after.tar.gz").resolve())
    assert r1.model_role == "small"
    # A missing reward stays missing; it is never read as 0.
    assert store.load_result(session, "t1-oc-a2").reward is None
    ep = session.get(Episode, "t1-oc-a1")
    assert (ep.task_id, ep.harness, ep.attempt, ep.model_role) == (
        "task_0001",
        "openclaw",
        1,
        "small",
    )


def test_results_settled_in_batches_keep_the_first_of_each_episode(session, tmp_path, monkeypatch):
    """Results lines are looked up and inserted a batch at a time (`RESULT_BATCH`): a duplicate
    in the same batch, in an earlier batch or in the store is rejected on its own line, bad
    lines keep their place, and every other line is loaded once."""
    monkeypatch.setattr(ingest_mod, "RESULT_BATCH", 3)
    first = tmp_path / "first.jsonl"
    first.write_text(jsonl([{"episode_id": "stored", "reward": 1.0}]))
    ingest_paths([first], session=session)
    res = tmp_path / "results.jsonl"
    lines = [
        {"episode_id": "a", "reward": 0.1},  # 1
        {"episode_id": "a", "reward": 0.2},  # 2: same batch
        {"episode_id": "stored", "reward": 0.3},  # 3: in the store
        {"episode_id": "b", "reward": 0.4},  # 4
        {"episode_id": "c", "reward": "x"},  # 5: not a number
        {"episode_id": "a", "reward": 0.6},  # 6: an earlier batch
        {"episode_id": "c", "reward": 0.7},  # 7: the bad line's episode, loaded
    ]
    res.write_text(jsonl(lines) + "\n{oops\n" + jsonl([{"episode_id": "d", "reward": 0.9}]))
    report = ingest_paths([res], session=session)
    assert report.n_results == 4
    assert [(r.line, r.reason) for r in report.rejected] == [
        (2, "duplicate result for episode a (first one kept)"),
        (3, "duplicate result for episode stored (first one kept)"),
        (5, "'reward' is not a number"),
        (6, "duplicate result for episode a (first one kept)"),
        (9, report.rejected[4].reason),
    ]
    assert report.rejected[4].reason.startswith("not valid JSON")
    rewards = {r.episode_id: r.reward for r in session.exec(select(Result))}
    assert rewards == {"stored": 1.0, "a": 0.1, "b": 0.4, "c": 0.7, "d": 0.9}
    kept = session.exec(select(RejectedLine).where(RejectedLine.source_file == str(res))).all()
    assert sorted((r.line, r.raw) for r in kept) == [
        *((n, json.dumps(lines[n - 1])) for n in (2, 3, 5, 6)),
        (9, "{oops"),  # line 8 is blank
    ]


def test_results_before_logs_still_fill_the_episode(session, tmp_path):
    res = tmp_path / "results.jsonl"
    res.write_text(jsonl([{"episode_id": "e9", "task_id": "task_9", "attempt": 2, "reward": 1.0}]))
    log = tmp_path / "e9.jsonl"
    log.write_text(jsonl([openai_record([user("x")], clawviz={"episode_id": "e9"})]))
    ingest_paths([res, log], session=session)
    ep = session.get(Episode, "e9")
    assert (ep.task_id, ep.attempt) == ("task_9", 2)


# ---------------------------------------------------------------- transcripts


def test_transcript_files_are_dispatched(session):
    import clawviz.ingest.transcripts  # noqa: F401 (a broken import fails, never skips)

    path = TRANSCRIPTS / "pi-v3-branches.jsonl"
    if not path.exists():
        pytest.skip("transcript fixture not present")
    report = ingest_paths([path], session=session)
    (f,) = report.files
    assert f.format == "transcript_pi" and f.n_calls > 0
    eps = session.exec(select(Episode)).all()
    assert eps and all(e.source_kind == "transcript" for e in eps)
    assert sum(e.n_calls for e in eps) == f.n_calls


def test_a_utf8_byte_order_mark_costs_no_line_and_is_noted(session, tmp_path):
    """Issue 28: an editor's byte-order mark before the first record used to reject line 1."""
    src = (
        Path(__file__).resolve().parent.parent
        / "sample_logs"
        / "exchanges"
        / "claude-code"
        / "t0001-claude-code-a1.jsonl"
    )
    plain = src.read_bytes()
    n_lines = plain.count(b"\n")
    with_bom = tmp_path / "bom.jsonl"
    with_bom.write_bytes(b"\xef\xbb\xbf" + plain)
    report = ingest_paths([with_bom], session=session)
    assert report.rejected == []
    assert report.n_calls == n_lines
    assert [(w.file, w.line, w.reason) for w in report.warnings] == [
        (str(with_bom), 1, "UTF-8 byte-order mark ignored")
    ]
    assert session.exec(select(CallRow.line).order_by(CallRow.line)).first() == 1
