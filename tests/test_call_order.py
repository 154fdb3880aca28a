"""One call order: the Python key and the SQL ORDER BY give the same sequence."""

from __future__ import annotations

import random
from dataclasses import dataclass

from sqlalchemy import Column, Float, Integer, MetaData, String, Table, select

from clawviz.store.models import call_order_by
from clawviz.types import CALL_ORDER, call_order_key
from tests import dburl


@dataclass
class Row:
    call_id: str
    source_file: str
    line: int
    seq: int | None
    t_request: float | None


def test_python_key_and_sql_order_agree_with_missing_seq_and_times():
    rng = random.Random(7)
    rows = [
        Row(
            f"c{i:03d}",
            rng.choice(["a.jsonl", "b.jsonl"]),
            rng.randint(1, 5),
            rng.choice([None, 1, 2, 3]),
            rng.choice([None, 10.0, 10.5, 11.0]),
        )
        for i in range(200)
    ]
    table = Table(
        "call",
        MetaData(),
        Column("call_id", String, primary_key=True),
        Column("source_file", String),
        Column("line", Integer),
        Column("seq", Integer, nullable=True),
        Column("t_request", Float, nullable=True),
    )
    engine = dburl.memory_engine("order")
    table.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [r.__dict__ for r in rows])
        in_sql = [
            r.call_id
            for r in conn.execute(select(table.c.call_id).order_by(*call_order_by(table.c)))
        ]
    in_python = [r.call_id for r in sorted(rows, key=call_order_key)]
    assert in_sql == in_python
    # Known seq first, by seq; then missing seq by time; missing time last.
    first = sorted(rows, key=call_order_key)[0]
    assert first.seq == 1
    assert CALL_ORDER[:2] == ("seq", "t_request")
