"""What each backend must hold: NUL bytes in text, integers past 2^31 (PostgreSQL's int4)."""

from __future__ import annotations

import json
from pathlib import Path

from sqlmodel import Session, select

from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import get_engine
from clawviz.store.models import NUL_PREFIX, CallRow, RejectedLine
from clawviz.store.queries import rejected_frame
from tests.dburl import fresh_url, query

RECORD = {
    "request": {
        "timestamp": 1.0,
        "method": "POST",
        "url": "http://x/v1/messages",
        "headers": {},
        "body": {
            "model": "claude-x",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "nul\u0000inside"}],
        },
    },
    "response": {
        "timestamp": 2.0,
        "status_code": 200,
        "headers": {},
        "body": {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3_000_000_000, "output_tokens": 1},
        },
    },
    "clawviz": {"episode_id": "nul-ep", "seq": 2_200_000_000},
}


def test_nul_bytes_and_big_integers_round_trip(tmp_path):
    log = tmp_path / "nul.jsonl"
    bad = b'{"bad\x00line": \n'
    log.write_bytes(json.dumps(RECORD).encode() + b"\n" + bad)
    url = fresh_url(tmp_path, "nul")
    with Session(get_engine(url)) as s:
        report = ingest_paths([log], session=s)
        s.commit()
        assert report.n_calls == 1
        (call,) = s.exec(select(CallRow)).all()
        assert call.seq == 2_200_000_000
        assert call.input_tokens == 3_000_000_000
        (rej,) = s.exec(select(RejectedLine)).all()
        assert rej.line == 2 and rej.raw == bad.decode().rstrip("\n")
        # raw SQL reads (the Runs page's Rejected lines table) restore it too
        assert rejected_frame(s)["raw"].tolist() == [rej.raw]


def test_text_that_looks_escaped_is_not_mangled(tmp_path):
    url = fresh_url(tmp_path, "prefix")
    with Session(get_engine(url)) as s:
        text = NUL_PREFIX + '"not json'
        s.add(RejectedLine(source_file="f", line=1, reason="r", raw=text))
        s.commit()
        assert s.exec(select(RejectedLine)).one().raw == text


def test_four_ingest_processes_into_a_new_store_keep_everything(tmp_path):
    """Four `clawviz ingest` processes start at once on a brand-new store (the schema is created
    under a lock): nothing is lost and nothing is doubled, as against one process doing it all."""
    import os
    import shutil
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    logs = sorted((repo / "sample_logs" / "exchanges").rglob("*.jsonl"))
    parts = [tmp_path / f"part{i}" for i in range(4)]
    for i, log in enumerate(logs):
        parts[i % 4].mkdir(exist_ok=True)
        shutil.copy(log, parts[i % 4] / f"{log.parent.name}-{log.name}")
    url = fresh_url(tmp_path, "shared")
    env = {**os.environ, "PYTHONPATH": str(repo)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "clawviz", "--db", url, "ingest", str(p)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for p in parts
    ]  # fmt: skip
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode in (0, 2), out + err  # 2: the samples' deliberately bad lines
        assert "Traceback" not in err
    one = fresh_url(tmp_path, "alone")
    with Session(get_engine(one)) as s:
        ingest_paths(parts, session=s)
        s.commit()
    counts = 'SELECT (SELECT COUNT(*) FROM "call"), (SELECT COUNT(*) FROM source), ' + (
        "(SELECT COUNT(*) FROM episode), (SELECT COUNT(*) FROM rejected_line)"
    )
    assert query(url, counts) == query(one, counts)
    n_calls, _, _, n_rejected = query(url, counts)[0]
    assert n_calls + n_rejected == sum(len(p.read_bytes().splitlines()) for p in logs)


def test_a_store_made_meanwhile_is_left_alone_by_the_next_starter(tmp_path, monkeypatch):
    """A process that found no store, then waited on the schema lock while another created it,
    must not touch the finished schema: re-running the change triggers' DDL (a DROP/CREATE
    TRIGGER on PostgreSQL) locks `call` and `episode` whole, and deadlocked with the creator,
    already ingesting (four `ingest` processes on a new store: "deadlock detected", exit 1)."""
    from sqlalchemy import create_engine, event

    from clawviz.store import db

    url = fresh_url(tmp_path, "made")
    db.init_db(create_engine(url))  # the first starter made it
    late = create_engine(url)
    ddl: list[str] = []
    event.listen(late, "before_cursor_execute", lambda *a, **_k: ddl.append(a[2]))
    monkeypatch.setattr(db, "_ready", lambda _engine: False)  # it looked before the commit
    db.init_db(late)
    assert [s for s in ddl if "TRIGGER" in s.upper() or "CREATE " in s.upper()] == []
    late.dispose()


def test_member_of_and_the_export_loader_find_ids_with_nul_and_the_marker(tmp_path):
    """`store.member_of` (an IN list on SQLite, `= ANY(array)` on PostgreSQL) binds each id
    through the column's type, and `load_path_calls` (untyped columns) gives the ids back as
    they were: a NUL byte (escaped on PostgreSQL), a text starting with the escape marker
    (escaped on both), and plain ones, among more ids than one chunk holds."""
    from clawviz.store import load_path_calls, member_of

    url = fresh_url(tmp_path, "member")
    odd = ["nul\x00id", NUL_PREFIX + "looks-escaped", "plain"]
    ids = odd + [f"c{i:04d}" for i in range(620)]
    with Session(get_engine(url)) as s:
        for i, cid in enumerate(ids):
            s.add(
                CallRow(
                    call_id=cid,
                    source_file="f",
                    line=i + 1,
                    endpoint="anthropic_messages",
                    response_json=f'{{"role": "assistant", "content": "r{i}"}}',
                    output_tokens=i,
                )
            )
        s.commit()
        wanted = odd + ["c0007", "no-such-call"]
        got = s.exec(select(CallRow.call_id).where(member_of(s, CallRow.call_id, wanted))).all()
        assert sorted(got) == sorted(odd + ["c0007"])
        calls = load_path_calls(s, ids + ["no-such-call"])
        assert sorted(calls) == sorted(ids)
        assert calls["nul\x00id"].response == {"role": "assistant", "content": "r0"}
        assert calls[NUL_PREFIX + "looks-escaped"].usage.output_tokens == 1
        assert calls["c0619"].messages == [] and calls["c0619"].usage.output_tokens == 622
