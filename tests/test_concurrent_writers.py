"""Two writers in open transactions that share content (the same system prompt, the same first
message) do not wait for each other on PostgreSQL: content-addressed rows are committed at
once, so a writer never blocks on another's uncommitted copy of a shared message or blob."""

from __future__ import annotations

import copy
import threading

import pytest
from sqlmodel import Session, select
from test_formats_fixtures import anthropic_record, user

from clawviz.ingest.exchange import parse_exchange
from clawviz.store import calls as store
from clawviz.store.db import get_engine
from clawviz.store.models import Blob, CallRow, MessageRow, Source
from tests.dburl import fresh_url, on_postgres

pytestmark = pytest.mark.skipif(
    not on_postgres(), reason="SQLite has one writer at a time by design"
)


def _parsed(prefix: str):
    record = anthropic_record([user("the same long task statement " * 20)])
    return [
        parse_exchange(
            copy.deepcopy(record),
            source_file=f"{prefix}.jsonl",
            line=1,
            call_id=f"{prefix}:1",
            file_episode=prefix,
        )
    ]


def test_a_writer_does_not_wait_for_another_writers_open_transaction(tmp_path):
    engine = get_engine(fresh_url(tmp_path, "writers"))
    a = Session(engine)
    src_a = Source(path="a.jsonl", sha256="a", format="exchange")
    a.add(src_a)
    a.flush()
    store.write_parsed(a, _parsed("a"), src_a)  # A's transaction stays open
    done = threading.Event()
    errors: list[BaseException] = []

    def writer_b() -> None:
        try:
            with Session(engine) as b:
                src_b = Source(path="b.jsonl", sha256="b", format="exchange")
                b.add(src_b)
                b.flush()
                store.write_parsed(b, _parsed("b"), src_b)
                b.commit()
            done.set()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    t = threading.Thread(target=writer_b, daemon=True)
    t.start()
    finished = done.wait(timeout=20)
    a.commit()  # frees B if it was waiting after all
    t.join(timeout=30)
    a.close()
    assert errors == []
    assert finished, "writer B waited for writer A's transaction"
    with Session(engine) as s:
        assert {c.call_id for c in s.exec(select(CallRow))} == {"a:1", "b:1"}
        assert len(s.exec(select(MessageRow)).all()) == 1  # shared, stored once
        assert len(s.exec(select(Blob)).all()) >= 1
        for cid in ("a:1", "b:1"):
            (call,) = [c for c in store.load_calls(s, cid.split(":")[0])]
            assert call.messages[0]["content"][0]["text"].startswith("the same long task")
