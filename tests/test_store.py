"""The content-addressed store: distinct messages once, calls rebuilt, raw requests rebuilt."""

from __future__ import annotations

import copy

import pytest
from sqlalchemy import func
from sqlmodel import Session, select
from test_formats_fixtures import (
    claude_code_episode,
    openai_json_body_with_token_ids,
    openai_record,
    responses_record,
    user,
)

from clawviz.ingest.exchange import parse_exchange
from clawviz.store import calls as store
from clawviz.store.db import get_engine
from clawviz.store.models import Blob, CallRow, Episode, MessageRow, Result, Source
from clawviz.types import Call
from tests.dburl import fresh_url


@pytest.fixture
def session(tmp_path):
    engine = get_engine(fresh_url(tmp_path, "store"))
    with Session(engine) as s:
        yield s


def _parse(records, prefix="f"):
    return [
        parse_exchange(
            copy.deepcopy(r),
            source_file=f"{prefix}.jsonl",
            line=i + 1,
            call_id=f"{prefix}:{i + 1}",
            file_episode=prefix,
        )
        for i, r in enumerate(records)
    ]


def _count(session, model):
    return session.exec(select(func.count()).select_from(model)).one()


def _source(session, name="f.jsonl"):
    src = Source(path=name, sha256=name, format="exchange")
    session.add(src)
    session.flush()
    return src


def test_calls_sharing_history_store_each_distinct_message_once(session):
    parsed = _parse(claude_code_episode())
    # call 1: [u1]; call 2: [u1, a1, t1]; call 3: [u1, a1, t1, a2, u2] -> 5 distinct messages
    assert sum(len(p.call.messages) for p in parsed) == 9
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    assert _count(session, CallRow) == 3
    assert _count(session, MessageRow) == 5
    # Same system prompt, tool list and envelope for all three calls: one blob each.
    assert _count(session, Blob) == 3


def test_rewriting_the_same_calls_adds_nothing(session):
    parsed = _parse(claude_code_episode())
    src = _source(session)
    store.write_parsed(session, parsed, src)
    store.write_parsed(session, parsed, src, store.SeenHashes())
    session.commit()
    assert (_count(session, CallRow), _count(session, MessageRow), _count(session, Blob)) == (
        3,
        5,
        3,
    )


def test_load_calls_round_trip(session):
    parsed = _parse(claude_code_episode())
    store.write_parsed(session, parsed, _source(session))
    store.refresh_episodes(session, {parsed[0].call.episode_id})
    session.commit()
    loaded = store.load_calls(session, parsed[0].call.episode_id)
    assert [c.call_id for c in loaded] == ["f:1", "f:2", "f:3"]
    for got, want in zip(loaded, (p.call for p in parsed), strict=True):
        assert got.messages == want.messages
        assert got.response == want.response
        assert got.system == want.system
        assert got.tools == want.tools
        assert got.usage == want.usage
        assert got.headers == want.headers
        assert (got.failure, got.stop_reason, got.model) == (
            want.failure,
            want.stop_reason,
            want.model,
        )
        assert (got.t_request, got.line, got.source_file) == (
            want.t_request,
            want.line,
            want.source_file,
        )


def test_load_calls_orders_by_seq_then_request_time_not_line(session):
    recs = claude_code_episode()
    recs = [recs[2], recs[0], recs[1]]  # written when responses completed, out of order
    parsed = _parse(recs)
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    loaded = store.load_calls(session, parsed[0].call.episode_id)
    assert [c.t_request for c in loaded] == [100.0, 101.0, 102.0]
    # An explicit seq wins over timestamps.
    for p, seq in zip(parsed, (1, 3, 2), strict=True):
        p.call.seq = seq
        p.call.call_id += "-seq"
        p.call.episode_id = "with-seq"
    store.write_parsed(session, parsed, None)
    assert [c.seq for c in store.load_calls(session, "with-seq")] == [1, 2, 3]


def test_rollout_and_clawviz_fields_round_trip(session):
    cv = {"episode_id": "e1", "task_id": "t1", "harness": "openclaw", "attempt": 2, "seq": 4}
    cv |= {"delivered": False, "model_role": "small", "rollout": {"policy_version": 7}}
    parsed = _parse(
        [openai_record([user("x")], body=openai_json_body_with_token_ids(), clawviz=cv)]
    )
    store.write_parsed(session, parsed, _source(session))
    store.refresh_episodes(session, {"e1"})
    session.commit()
    (c,) = store.load_calls(session, "e1")
    assert c.rollout.output_token_ids == [9906, 13] and c.rollout.policy_version == 7
    assert (c.task_id, c.harness, c.attempt, c.seq, c.delivered, c.model_role) == (
        "t1",
        "openclaw",
        2,
        4,
        False,
        "small",
    )
    ep = session.get(Episode, "e1")
    assert (ep.task_id, ep.harness, ep.attempt, ep.model_role, ep.n_calls) == (
        "t1",
        "openclaw",
        2,
        "small",
        1,
    )
    assert ep.model == "qwen3-4b"


@pytest.mark.parametrize(
    "record",
    [
        claude_code_episode()[2],
        openai_record(
            [
                user("x"),
                {"role": "assistant", "content": "ok"},
                {"role": "tool", "tool_call_id": "c", "content": "r"},
            ]
        ),
        responses_record(),
    ],
    ids=["anthropic", "openai_chat", "openai_responses"],
)
def test_raw_request_rebuilds_the_body_as_sent(session, record):
    parsed = _parse([record])
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    assert store.raw_request(session, "f:1") == record["request"]["body"]


def test_raw_request_unknown_call_raises(session):
    with pytest.raises(KeyError):
        store.raw_request(session, "nope")


def test_message_row_keeps_first_raw_form_and_internal_form(session):
    parsed = _parse(claude_code_episode())
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    h = parsed[1].message_hashes[2]  # the tool_result message with cache_control
    row = session.get(MessageRow, h)
    canonical_json, raw_json = store.message_texts(row)
    assert "cache_control" in raw_json and "cache_control" not in canonical_json
    assert row.role == "user" and row.size_bytes == len(raw_json)


def test_write_calls_accepts_plain_calls(session):
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]
    calls = [
        Call(
            call_id=f"t:{i}",
            source_file="s.jsonl",
            line=i,
            endpoint="anthropic_messages",
            episode_id="tr",
            system="sys",
            messages=msgs[: 2 * i + 1],
            response={"role": "assistant", "content": [{"type": "text", "text": "r"}]},
            source_kind="transcript",
        )
        for i in range(2)
    ]
    store.write_calls(session, calls, None)
    store.refresh_episodes(session, {"tr"})
    session.commit()
    loaded = store.load_calls(session, "tr")
    assert [c.messages for c in loaded] == [c.messages for c in calls]
    assert loaded[0].system == "sys" and loaded[0].source_kind == "transcript"
    assert _count(session, MessageRow) == 3
    assert session.get(Episode, "tr").source_kind == "transcript"


def test_list_episodes_and_load_result(session):
    parsed = _parse(claude_code_episode()) + _parse(
        [openai_record([user("x")], headers={"X-Session-Id": "oc-1"})], prefix="g"
    )
    store.write_parsed(session, parsed, None)
    store.refresh_episodes(session, {p.call.episode_id for p in parsed})
    session.add(Result(episode_id="oc-1", reward=0.5, task_id="task_1"))
    session.commit()
    assert {e.episode_id for e in store.list_episodes(session)} == {
        parsed[0].call.episode_id,
        "oc-1",
    }
    assert store.load_result(session, "oc-1").reward == 0.5
    assert store.load_result(session, parsed[0].call.episode_id) is None
    store.fill_episodes_from_results(session)
    assert session.get(Episode, "oc-1").task_id == "task_1"


def test_reassign_episode(session):
    parsed = _parse(claude_code_episode())
    for p in parsed:
        p.call.episode_id = "fallback"
    src = _source(session)
    store.write_parsed(session, parsed, src)
    store.reassign_episode(session, src.id, "fallback", "named")
    session.commit()
    assert len(store.load_calls(session, "named")) == 3
    assert store.load_calls(session, "fallback") == []


def test_raw_request_of_a_call_without_wire_form(session):
    msgs = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    call = Call(
        call_id="t:1",
        source_file="s.jsonl",
        line=1,
        endpoint="openai_chat",
        episode_id="tr",
        system="You are a personal assistant running inside OpenClaw.",
        messages=msgs,
        source_kind="transcript",
    )
    store.write_calls(session, [call], None)
    assert store.raw_request(session, "t:1") == {
        "messages": [{"role": "system", "content": call.system}] + msgs
    }
