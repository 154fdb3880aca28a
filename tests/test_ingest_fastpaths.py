"""The ingest's shortcuts give what the long way gives (issue 14, in-process ingest).

- `validate_call` skips the compiled pydantic check for plainly valid calls: for every odd value
  its verdict is still pydantic's own (`CallFields.model_validate`, the reference).
- A Claude Code conversation whose cache breakpoint moves each turn reuses the previous
  request's conversion of the message that lost it: the messages and hashes are those a
  parse without any cache makes (`canonical.message_hash`).
- The store writes a new message's raw form from the parser's bytes: the same bytes orjson
  makes of the wire message.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import orjson
import pytest
from pydantic import ValidationError
from sqlmodel import Session, select
from test_formats_fixtures import anthropic_record, assistant_tool_use, tool_result, user

from clawviz.ingest.exchange import MessageCache, parse_exchange
from clawviz.ingest.record import CallFields, FormatError, validate_call
from clawviz.recon.canonical import message_hash
from clawviz.store import calls as store
from clawviz.store.db import get_engine
from clawviz.store.models import MessageRow
from clawviz.types import Call, Rollout, Usage
from tests.dburl import fresh_url


@pytest.fixture
def session(tmp_path):
    engine = get_engine(fresh_url(tmp_path))
    with Session(engine) as s:
        yield s


class _Str(str):
    pass


def _base() -> Call:
    return Call(
        call_id="c1",
        source_file="f.jsonl",
        line=3,
        endpoint="anthropic_messages",
        url="https://x/v1/messages",
        episode_id="ep",
        seq=1,
        t_request=1.5,
        http_status=200,
        headers={"a": "b"},
        tools=["Bash"],
        usage=Usage(input_tokens=3, output_tokens=4),
    )


ODD = [
    ("line", -1),
    ("line", 2**63),
    ("line", True),
    ("line", 3.0),
    ("seq", 2**63),
    ("seq", -(2**63) - 1),
    ("seq", False),
    ("http_status", "200"),
    ("t_request", math.nan),
    ("t_request", math.inf),
    ("t_request", 7),
    ("t_response", "1.0"),
    ("episode_id", None),
    ("episode_id", 5),
    ("call_id", _Str("c1")),
    ("model", ["m"]),
    ("delivered", 1),
    ("tools", ["Bash", 3]),
    ("tools", ("Bash",)),
    ("headers", {"a": 1}),
    ("headers", {1: "a"}),
    ("usage", Usage(input_tokens=-1)),
    ("usage", Usage(output_tokens=True)),
    ("usage", Usage(cache_read_input_tokens=2**63)),
    ("rollout", Rollout(output_token_ids=[1, 2])),
    ("rollout", Rollout(output_logprobs=[math.nan])),
]


def _pydantic_verdict(call: Call) -> str | None:
    data = {n: getattr(call, n) for n in CallFields.model_fields if n not in ("usage", "rollout")}
    data["usage"] = vars(call.usage)
    data["rollout"] = vars(call.rollout) if call.rollout is not None else None
    try:
        CallFields.model_validate(data)
    except ValidationError as exc:
        return str(exc.errors(include_url=False)[0]["msg"])
    return None


@pytest.mark.parametrize(("name", "value"), ODD, ids=[f"{n}={v!r}" for n, v in ODD])
def test_validate_call_verdict_is_pydantics(name, value):
    call = dataclasses.replace(_base(), **{name: value})
    expected = _pydantic_verdict(call)
    try:
        validate_call(call)
        got = None
    except FormatError as exc:
        got = str(exc)
    if expected is None:
        assert got is None
    else:
        assert got is not None and expected in got


def test_plain_call_is_valid():
    assert _pydantic_verdict(_base()) is None
    validate_call(_base())


def _cc(msg: dict) -> dict:
    """`msg` with a cache breakpoint on its last block (what Claude Code sends)."""
    out = copy.deepcopy(msg)
    out["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return out


def _bare(msg: dict) -> dict:
    """`msg` without any cache breakpoint."""
    out = copy.deepcopy(msg)
    for block in out["content"]:
        block.pop("cache_control", None)
    return out


def _conversation() -> list[list[dict]]:
    """Three requests of one thread; the breakpoint sits on the newest message each time."""
    history = [user("list the files"), assistant_tool_use(), _bare(tool_result("a.txt\nb.txt"))]
    turns = [
        [assistant_tool_use("Now the other one."), _bare(tool_result("c.txt"))],
        [assistant_tool_use("And the last."), _bare(tool_result("d.txt"))],
    ]
    requests = [[*history[:-1], _cc(history[-1])]]
    for new in turns:
        history += new
        requests.append([*history[:-1], _cc(history[-1])])
    return requests


def _parse(messages, cache, line):
    return parse_exchange(
        anthropic_record(messages),
        source_file="f.jsonl",
        line=line,
        call_id=f"c{line}",
        file_episode="f",
        cache=cache,
    )


def test_moving_cache_breakpoint_reuses_the_previous_conversion():
    cache = MessageCache()
    cached = [_parse(r, cache, i) for i, r in enumerate(_conversation())]
    plain = [_parse(r, None, i) for i, r in enumerate(_conversation())]
    for a, b in zip(cached, plain, strict=True):
        assert a.call.messages == b.call.messages
        assert a.message_hashes == b.message_hashes
        assert a.message_hashes == [message_hash(m) for m in b.call.messages]
        assert a.raw_messages == b.raw_messages  # this request's own wire form is kept
    # The message that lost its breakpoint is the previous request's conversion, not a new one.
    first, second = cached[0], cached[1]
    assert second.call.messages[2] is first.call.messages[2]
    assert second.raw_messages[2] != first.raw_messages[2]  # it did lose the breakpoint


def test_a_changed_block_is_converted_again():
    requests = _conversation()
    edited = copy.deepcopy(requests[1])
    edited[2]["content"][0]["content"] = "a.txt"  # the tool result itself changed
    cache = MessageCache()
    a = _parse(requests[0], cache, 0)
    b = _parse(edited, cache, 1)
    assert b.call.messages[2] is not a.call.messages[2]
    assert b.call.messages[2] != a.call.messages[2]
    assert b.message_hashes == _parse(edited, None, 9).message_hashes


def test_stored_raw_message_is_orjsons_bytes_of_the_wire_message(session: Session):
    cache = MessageCache()
    parsed = [_parse(r, cache, i) for i, r in enumerate(_conversation())]
    store.write_parsed(session, parsed, None)
    rows = {r.hash: r for r in session.exec(select(MessageRow))}
    for p in parsed:
        for h, raw in zip(p.message_hashes, p.raw_messages, strict=True):
            _, stored_raw = store.message_texts(rows[h])
            if orjson.loads(stored_raw) == raw:
                assert stored_raw.encode() == orjson.dumps(raw)
    # Every message of the last request is stored, its raw form as that request sent it.
    last = parsed[-1]
    assert (
        orjson.loads(store.message_texts(rows[last.message_hashes[-1]])[1])
        == (last.raw_messages[-1])
    )


def test_a_digest_collision_in_the_message_cache_costs_a_conversion_not_a_wrong_message(
    monkeypatch,
):
    import clawviz.ingest.exchange as exchange

    monkeypatch.setattr(exchange, "xxh3_64_intdigest", lambda data: 0)  # every key collides
    cache = MessageCache()
    requests = _conversation()
    # Out of order and each twice: found through the cache, not as a prefix of the last one.
    order = [2, 0, 1, 2, 0]
    cached = [_parse(requests[i], cache, n) for n, i in enumerate(order)]
    for p, i in zip(cached, order, strict=True):
        plain = _parse(requests[i], None, 0)
        assert p.call.messages == plain.call.messages
        assert p.message_hashes == plain.message_hashes


def test_the_message_cache_finds_a_message_sent_again_out_of_order():
    cache = MessageCache()
    cache.n_recent = 0  # no prefix reuse: only the wire-bytes cache can help
    requests = _conversation()
    a = _parse(requests[2], cache, 0)
    b = _parse(requests[2], cache, 1)
    assert all(x is y for x, y in zip(a.call.messages, b.call.messages, strict=True))
