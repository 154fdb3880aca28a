"""Property-based fuzzing of the exchange parser (Hypothesis, bounded so it stays fast).

Starting from real wire shapes (Anthropic Messages, Chat Completions, Responses, streamed and
not), any one value anywhere in the record is replaced by an arbitrary JSON value. Whatever
comes out, the parser either refuses the record with a FormatError (a one-line reason) or
returns a call the store can bind and the analysis can run on.
"""

from __future__ import annotations

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_formats_fixtures import (
    anthropic_record,
    assistant_tool_use,
    openai_record,
    responses_record,
    tool_result,
    user,
)

from clawviz.ingest.exchange import FormatError, MessageCache, parse_exchange
from clawviz.ingest.record import validate_call
from clawviz.recon.pipeline import analyse_episode

SKELETONS = [
    anthropic_record([user("hi"), assistant_tool_use(), tool_result()]),
    anthropic_record(
        [user("hi")],
        body={
            "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}],
            "usage": {"input_tokens": 3, "output_tokens": 4},
            "stop_reason": "tool_use",
            "model": "m",
        },
        clawviz={"episode_id": "e", "task_id": "t1", "seq": 1, "attempt": 2},
    ),
    openai_record([user("x")], headers={"X-Session-Id": "oc"}),
    responses_record(),
    responses_record(stream=True),
]

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(obj, prefix=()):
    """Every path to a value inside obj."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _replace(obj, path, value):
    if not path:
        return value
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


@st.composite
def mutated_records(draw):
    rec = copy.deepcopy(draw(st.sampled_from(SKELETONS)))
    # A streamed body is one string: decode-able SSE is fuzzed through its own events elsewhere.
    paths = [p for p in _paths(rec) if p]
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(paths))
        rec = _replace(rec, path, draw(JSON))
        paths = [p for p in _paths(rec) if p]
        if not paths:
            break
    # The record goes through JSON as it would from a file.
    return json.loads(json.dumps(rec))


def _check(record):
    try:
        parsed = parse_exchange(
            record,
            source_file="fuzz.jsonl",
            line=1,
            call_id="fuzz:1",
            file_episode="fuzz",
            cache=MessageCache(),
        )
    except FormatError as exc:
        reason = str(exc)
        assert reason and "\n" not in reason
        return None
    validate_call(parsed.call, messages=True)
    return parsed


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated_records())
def test_parser_refuses_with_a_reason_or_returns_a_usable_call(record):
    parsed = _check(record)
    if parsed is not None:
        analyse_episode([parsed.call], reward=None)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(JSON)
def test_any_json_value_is_refused_cleanly(value):
    _check(value)


@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(mutated_records(), min_size=5, max_size=12))
def test_fuzzed_file_costs_only_its_bad_lines(records):
    """End to end: each fuzzed line is stored or rejected (never the file), analysis runs."""
    import tempfile
    from pathlib import Path

    from sqlmodel import Session, create_engine

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import init_db

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.jsonl"
        # The first line is intact, so the file is recognised as an exchange log.
        records = [SKELETONS[0], *records]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        engine = create_engine(f"sqlite:///{tmp}/s.db")
        init_db(engine)
        with Session(engine) as s:
            report = ingest_paths([path], session=s)
            assert report.errors == []
            assert report.n_calls + len(report.rejected) == len(records)
            assert all(r.file == str(path) and 1 <= r.line <= len(records) for r in report.rejected)
            ensure_analysis(s)
        engine.dispose()
