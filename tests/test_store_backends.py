"""What each backend must hold: NUL bytes in text, integers past 2^31 (PostgreSQL's int4)."""

from __future__ import annotations

import json

from sqlmodel import Session, select

from clawviz.ingest.load import ingest_paths
from clawviz.store.db import get_engine
from clawviz.store.models import NUL_PREFIX, CallRow, RejectedLine
from clawviz.store.queries import rejected_frame
from tests.dburl import fresh_url

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
