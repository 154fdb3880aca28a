"""`ingest --workers N` (clawviz.jobs.pool): the store a single process makes, in parallel.

Each test ingests the same input into two fresh stores, one with one process and one with
`--workers 2`, and compares a digest of what the stores hold: every call, message, blob,
episode, decision, status (with reasons, paths and advantages), result, source and rejected
line, leaving out only wall-clock columns and autoincrement ids. Runs on SQLite and, with
`--db-url`, on PostgreSQL (where the workers write their files themselves).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
from pathlib import Path

import orjson
import pytest
from sqlalchemy import inspect, text
from sqlmodel import Session

from clawviz.cli.main import main as cli_main
from clawviz.jobs import ingest as ingest_mod
from clawviz.jobs import pool as pool_mod
from clawviz.jobs.ingest import ingest_paths
from clawviz.store import calls as calls_store
from clawviz.store.db import get_engine
from tests.dburl import fresh_url

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
RECORDED = sorted(p for p in (ROOT / "tests" / "data" / "recorded").iterdir() if p.is_dir())

VOLATILE = {"ingested_at", "created_at", "computed_at", "verdict_at", "updated_at"}
IDS = {("source", "id"), ("rejected_line", "id"), ("result", "id"), ("search_doc", "id")}
# The search index (search_doc and SQLite's FTS5 shadow tables) is derived from the calls and
# kept as they arrive (clawviz.store.search): which of several calls that sent the same message
# it names follows the order files were indexed in, and PostgreSQL's workers commit in any
# order. It is left out; the digest is of what ingest stores and decides (issue 27: calls,
# decisions, reasons). (Known limit, in the closing note: the index's attribution of a shared
# message, and whether a reply re-sent in another file is also a message document, follow that
# order.)
# The attempts revision (`store.changes.ATTEMPTS`) counts writes, not what they stored: on
# PostgreSQL its rows are the writing transactions' ids. Left out too.
DERIVED = ("search_doc", "search_fts", "search_pending", "attempts_change")
# A message is stored once, with the raw form of the first request that carried it. On
# PostgreSQL the workers write their files at the same time, so when two files carry the same
# canonical message in different raw forms (codex-0.169.1's two sessions), "first" is the first
# to commit. Its canonical form, role and hash are compared; its raw form only on SQLite, where
# the one writer keeps the single-process order. (Known limit, in the closing note.)
FIRST_COMMIT_WINS = {("message", "raw_json"), ("message", "size_bytes")}


def digest(url: str) -> dict[str, str]:
    """Per table: row count and a hash of its sorted rows (ids of bookkeeping rows replaced
    by the source's path, wall-clock columns left out)."""
    engine = get_engine(url)
    skip = IDS | (FIRST_COMMIT_WINS if engine.dialect.name == "postgresql" else set())
    out: dict[str, str] = {}
    with engine.connect() as con:
        paths = dict(con.execute(text("SELECT id, path FROM source")).all())
        for table in sorted(inspect(engine).get_table_names()):
            if table == "alembic_version" or table.startswith(DERIVED):
                continue
            cols = [
                c["name"]
                for c in inspect(engine).get_columns(table)
                if c["name"] not in VOLATILE and (table, c["name"]) not in skip
            ]
            rows = []
            for row in con.execute(text(f"SELECT {', '.join(cols)} FROM {table}")):  # noqa: S608
                values = dict(zip(cols, row, strict=True))
                if "source_id" in values:
                    values["source_id"] = paths.get(values["source_id"])
                if table == "message" and ("message", "raw_json") in skip:
                    # the packed column holds the canonical form and the first-committed raw
                    packed = values["canonical_json"]
                    packed = bytes(packed) if isinstance(packed, memoryview) else packed
                    values["canonical_json"] = calls_store._message_json(packed, packed)[0]
                rows.append(
                    repr(
                        sorted(
                            (k, bytes(v) if isinstance(v, memoryview) else v)
                            for k, v in values.items()
                        )
                    ).encode()
                )
            rows.sort()
            out[table] = f"{len(rows)} {hashlib.sha256(b'|'.join(rows)).hexdigest()[:16]}"
    return out


def _ingest(url: str, paths: list, workers: int):
    with Session(get_engine(url)) as session:
        return ingest_paths(paths, session=session, workers=workers)


def _both(tmp_path: Path, paths: list) -> tuple[dict, dict, object, object]:
    one, two = fresh_url(tmp_path, "one"), fresh_url(tmp_path, "two")
    r1 = _ingest(one, paths, 1)
    r2 = _ingest(two, paths, 2)
    return digest(one), digest(two), r1, r2


def _same_report(r1, r2) -> None:
    assert [(f.path, f.status, f.n_calls, f.n_rejected) for f in r2.files] == [
        (f.path, f.status, f.n_calls, f.n_rejected) for f in r1.files
    ]
    assert (r2.n_calls, r2.n_episodes, r2.episode_ids) == (
        r1.n_calls,
        r1.n_episodes,
        r1.episode_ids,
    )
    assert sorted((r.file, r.line, r.reason) for r in r2.rejected) == sorted(
        (r.file, r.line, r.reason) for r in r1.rejected
    )
    assert r2.errors == r1.errors == []


def test_workers_2_make_the_single_process_store_from_the_sample_logs(tmp_path):
    d1, d2, r1, r2 = _both(tmp_path, [SAMPLES])
    assert d1 == d2
    _same_report(r1, r2)
    # What the scenario intends (sample_logs/expected.json), not only "the same as before".
    assert r2.n_episodes == 24 and int(d2["episode_status"].split()[0]) == 24


@pytest.mark.parametrize("folder", RECORDED, ids=[p.name for p in RECORDED])
def test_workers_2_make_the_single_process_store_from_the_recordings(tmp_path, folder):
    d1, d2, r1, r2 = _both(tmp_path, [folder])
    assert d1 == d2
    _same_report(r1, r2)
    assert r2.n_calls > 0


def _split_like_recorder_workers(tmp_path: Path) -> Path:
    """sample_logs with each named episode's log split into two recorder workers' files
    (`<episode>.w0.jsonl`, `.w1.jsonl`), lines dealt alternately, `seq` the workers' order key
    (request order * 64 + worker, `clawviz.record.logfile.order_seq`)."""
    root = tmp_path / "split"
    shutil.copytree(SAMPLES, root)
    for log in sorted((root / "exchanges").rglob("*.jsonl")):
        lines = log.read_bytes().splitlines()
        try:
            records = [orjson.loads(x) for x in lines if x.strip()]
        except orjson.JSONDecodeError:
            continue  # a file with a bad line (rejected by file and line) stays whole
        if not all(
            isinstance(r.get("clawviz"), dict) and r["clawviz"].get("episode_id") for r in records
        ):
            continue  # identity from headers or the file: one file stays one file
        outs: list[list[bytes]] = [[], []]
        for i, r in enumerate(records):
            worker = i % 2
            r["clawviz"]["seq"] = int(r["clawviz"].get("seq") or i + 1) * 64 + worker
            outs[worker].append(orjson.dumps(r))
        log.unlink()
        for worker, rows in enumerate(outs):
            (log.parent / f"{log.stem}.w{worker}.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    return root


def test_an_episode_split_over_recorder_workers_files_is_analysed_whole(tmp_path):
    split = _split_like_recorder_workers(tmp_path)
    assert len(list(split.rglob("*.w1.jsonl"))) >= 10
    d1, d2, r1, r2 = _both(tmp_path, [split])
    assert d1 == d2
    url = fresh_url(tmp_path, "three")
    _ingest(url, [split], 2)
    expected = json.loads((SAMPLES / "expected.json").read_text())["episodes"]
    with get_engine(url).connect() as con:
        got = {
            eid: (status, [r["code"] for r in json.loads(reasons)])
            for eid, status, reasons in con.execute(
                text("SELECT episode_id, status, reasons_json FROM episode_status")
            )
        }
    for ep in expected:
        if ep["identity"] == "clawviz":
            want = (ep["status"], [r["code"] for r in ep["reasons"]])
            assert got[ep["episode_id"]] == want, ep["episode_id"]


def test_a_file_listed_twice_or_copied_is_loaded_once(tmp_path):
    log = SAMPLES / "exchanges" / "claude-code" / "t0001-claude-code-a1.jsonl"
    copy = tmp_path / "copy" / "same-bytes.jsonl"
    copy.parent.mkdir()
    shutil.copy(log, copy)
    url = fresh_url(tmp_path, "dup")
    report = _ingest(url, [log, log, copy], 2)
    assert [f.status for f in report.files] == ["loaded", "already_loaded", "already_loaded"]
    n_lines = sum(1 for x in log.read_bytes().splitlines() if x.strip())
    with get_engine(url).connect() as con:
        assert con.execute(text("SELECT count(*) FROM source")).scalar() == 1
        assert con.execute(text("SELECT count(*) FROM call")).scalar() == n_lines
    single = fresh_url(tmp_path, "single")
    _ingest(single, [log], 1)
    assert digest(single) == digest(url)


def _kill_on(monkeypatch, victim: str, marker: Path) -> None:
    """The worker that reads `victim` is SIGKILLed at its 5th line, once (`marker`)."""
    real = ingest_mod.ExchangeParse._parse

    def parse(self, n, data):
        if self.display.endswith(victim) and n == 5 and not marker.exists():
            marker.write_text("killed")
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, n, data)

    monkeypatch.setattr(ingest_mod.ExchangeParse, "_parse", parse)


def test_a_worker_killed_mid_file_loses_nothing_and_doubles_nothing(tmp_path, monkeypatch):
    """Workers are forked, so the patched parser runs in them: a real SIGKILL mid-file."""
    single = fresh_url(tmp_path, "single")
    _ingest(single, [SAMPLES], 1)
    marker = tmp_path / "killed"
    _kill_on(monkeypatch, "t0002-openclaw-a2.jsonl", marker)
    url = fresh_url(tmp_path, "killed")
    report = _ingest(url, [SAMPLES], 2)
    assert marker.exists()  # the worker did die mid-file
    assert report.errors == []  # its files were read again by a new pool
    assert digest(url) == digest(single)


def test_after_a_worker_died_for_good_a_rerun_completes_the_store(tmp_path, monkeypatch):
    single = fresh_url(tmp_path, "single")
    _ingest(single, [SAMPLES], 1)
    monkeypatch.setattr(pool_mod, "RESTARTS", 0)
    marker = tmp_path / "killed"
    _kill_on(monkeypatch, "t0002-openclaw-a2.jsonl", marker)
    url = fresh_url(tmp_path, "killed")
    first = _ingest(url, [SAMPLES], 2)
    assert marker.exists()
    failed = {e.path for e in first.errors}
    assert any(p.endswith("t0002-openclaw-a2.jsonl") for p in failed)
    assert all("worker failed" in e.reason for e in first.errors)
    second = _ingest(url, [SAMPLES], 2)
    loaded = {f.path for f in second.files if f.status == "loaded" and f.format == "exchange"}
    assert loaded == failed  # only what the first run lost
    assert second.errors == []
    assert digest(url) == digest(single)
    third = _ingest(url, [SAMPLES], 2)
    assert {f.status for f in third.files if f.format == "exchange"} == {"already_loaded"}
    assert digest(url) == digest(single)


def _die_after_finishing(
    monkeypatch, victim: str, marker: Path, reads: Path, answered: bool = True
) -> None:
    """The worker that finished `victim` (committed or spooled it, and left its answer, or
    not: `answered`) is SIGKILLed before the pool hands that answer back, once; `reads` counts
    reads of it."""
    real_done = pool_mod.record_done
    real_parse = ingest_mod.ExchangeParse._parse

    def record_done(job, done):
        if job.display.endswith(victim) and not marker.exists():
            if answered:
                real_done(job, done)
            marker.write_text("killed")
            os.kill(os.getpid(), signal.SIGKILL)
        return real_done(job, done)

    def parse(self, n, data):
        if self.display.endswith(victim) and n == 1:
            with open(reads, "a") as f:
                f.write("read\n")
        return real_parse(self, n, data)

    monkeypatch.setattr(pool_mod, "record_done", record_done)
    monkeypatch.setattr(ingest_mod.ExchangeParse, "_parse", parse)


@pytest.mark.parametrize("restarts", [2, 0])
def test_a_file_finished_before_its_worker_died_keeps_its_answer(tmp_path, monkeypatch, restarts):
    """A broken pool fails every answer not yet handed back, finished or not. A file finished
    before the pool broke is loaded once and reported loaded, neither read again nor called
    failed. (Before: SQLite read it again; on PostgreSQL, where it was already committed, the
    run reported it already_loaded, or, with no restarts left, failed although it was in the
    store: the CI failure of stop 35.)"""
    victim = "t0002-openclaw-a3.jsonl"
    single = fresh_url(tmp_path, "single")
    _ingest(single, [SAMPLES], 1)
    monkeypatch.setattr(pool_mod, "RESTARTS", restarts)
    marker, reads = tmp_path / "killed", tmp_path / "reads"
    _die_after_finishing(monkeypatch, victim, marker, reads)
    url = fresh_url(tmp_path, "killed")
    first = _ingest(url, [SAMPLES], 2)
    assert marker.exists()  # the worker did die after finishing the file
    assert reads.read_text().count("read") == 1
    mine = [f for f in first.files if f.path.endswith(victim)]
    assert [f.status for f in mine] == ["loaded"]
    assert mine[0].n_calls > 0
    assert not any(e.path.endswith(victim) for e in first.errors)
    if restarts:
        assert first.errors == []
        assert digest(url) == digest(single)
    else:  # the files still unread when the pool broke fail; a rerun loads exactly those
        failed = {e.path for e in first.errors}
        second = _ingest(url, [SAMPLES], 2)
        loaded = {f.path for f in second.files if f.status == "loaded" and f.format == "exchange"}
        assert loaded == failed
        assert digest(url) == digest(single)


@pytest.mark.parametrize("restarts", [2, 0])
def test_a_file_committed_by_a_worker_that_died_before_answering_is_not_called_failed(
    tmp_path, monkeypatch, restarts
):
    """The worker died between its commit and its answer. On PostgreSQL the file is in the
    store: reported already_loaded (never failed), read once, its episodes analysed. On SQLite
    nothing was written (the driver writes the spools): it is read again, or fails and a rerun
    loads it."""
    victim = "t0002-openclaw-a3.jsonl"
    single = fresh_url(tmp_path, "single")
    _ingest(single, [SAMPLES], 1)
    monkeypatch.setattr(pool_mod, "RESTARTS", restarts)
    marker, reads = tmp_path / "killed", tmp_path / "reads"
    _die_after_finishing(monkeypatch, victim, marker, reads, answered=False)
    url = fresh_url(tmp_path, "killed")
    first = _ingest(url, [SAMPLES], 2)
    assert marker.exists()
    status = [f.status for f in first.files if f.path.endswith(victim)]
    postgres = get_engine(url).dialect.name == "postgresql"
    if postgres:
        assert status == ["already_loaded"]
        assert reads.read_text().count("read") == 1
    elif restarts:
        assert status == ["loaded"]
        assert reads.read_text().count("read") == 2
    else:
        assert status == ["error"]
    if restarts:
        assert first.errors == []
    else:
        _ingest(url, [SAMPLES], 2)
    assert digest(url) == digest(single)


def test_cli_ingest_workers_prints_the_single_process_report(tmp_path, capsys):
    one, two = fresh_url(tmp_path, "one"), fresh_url(tmp_path, "two")
    assert cli_main(["--db", one, "ingest", str(SAMPLES)]) == 2  # samples hold rejected lines
    out1 = capsys.readouterr().out
    assert cli_main(["--db", two, "ingest", "--workers", "2", str(SAMPLES)]) == 2
    out2 = capsys.readouterr().out
    assert out1 == out2
    assert digest(one) == digest(two)
