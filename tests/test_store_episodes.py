"""Episode rows refreshed from their calls: created, updated in place, never stale in a session."""

from __future__ import annotations

import copy

import pytest
from sqlmodel import Session
from test_formats_fixtures import claude_code_episode

from clawviz.ingest.exchange import parse_exchange
from clawviz.store import calls as store
from clawviz.store.db import get_engine
from clawviz.store.models import Episode, Result, Source
from tests.dburl import fresh_url


@pytest.fixture
def session(tmp_path):
    engine = get_engine(fresh_url(tmp_path, "episodes"))
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


def test_episode_grows_across_refreshes_and_loaded_objects_see_it(session):
    parsed = _parse(claude_code_episode())
    eid = parsed[0].call.episode_id
    src = Source(path="f.jsonl", sha256="f", format="exchange")
    session.add(src)
    session.flush()
    store.write_parsed(session, parsed[:1], src)
    store.refresh_episodes(session, {eid})
    ep = session.get(Episode, eid)
    assert (ep.n_calls, ep.first_ts, ep.last_ts) == (
        1,
        parsed[0].call.t_request,
        parsed[0].call.t_response,
    )
    assert ep.harness == "claude-code" and ep.model == parsed[0].call.model
    store.write_parsed(session, parsed[1:], src)
    store.refresh_episodes(session, {eid})
    # The object loaded before the second refresh shows the new values.
    assert ep.n_calls == 3
    assert ep.last_ts == max(p.call.t_response or p.call.t_request for p in parsed)


def test_refresh_keeps_known_facts_and_fills_missing_ones_from_results(session):
    parsed = _parse(claude_code_episode())
    eid = parsed[0].call.episode_id
    store.write_parsed(session, parsed, None)
    session.add(Episode(episode_id=eid, harness="kept-harness"))
    session.add(Result(episode_id=eid, task_id="t1", attempt=2, model_role="policy"))
    session.flush()
    store.refresh_episodes(session, {eid, "no-calls"})
    session.commit()
    ep = session.get(Episode, eid)
    assert (ep.harness, ep.task_id, ep.attempt, ep.model_role, ep.n_calls) == (
        "kept-harness",
        "t1",
        2,
        "policy",
        3,
    )
    assert session.get(Episode, "no-calls") is None
