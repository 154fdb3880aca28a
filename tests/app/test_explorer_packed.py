"""The Episode page sends the explorer its payload packed, the form of the `share` file
(`clawviz.figures.explorer.pack`): calls as columns, repeated strings once. The browser side,
that the page still shows every call, is tests/browser/test_explorer_app.py."""

from __future__ import annotations

import json

from apphelpers import no_exception, open_page

from clawviz.figures.explorer.pack import PACK_FORMAT
from tests.dburl import query

EPISODE = "t0001-claude-code-a1"


def _component_data(at) -> list:
    """The data the page mounted the explorer component with (its JSON, as sent)."""
    found = [
        e.proto
        for e in at.get("bidi_component")
        if e.proto.component_name.endswith("clawviz_episode_explorer")
    ]
    assert len(found) == 1, f"{len(found)} explorer components on the page"
    return json.loads(found[0].json)


def test_the_page_sends_the_packed_payload(sample_db_url, on_store):
    on_store(sample_db_url)
    at = open_page("pages/episode.py", episode=EPISODE)
    no_exception(at)
    payload, _initial, _extra = _component_data(at)
    assert payload["packed"] == PACK_FORMAT
    calls = payload["calls"]
    # Columns, each key once: not one dict per call.
    assert set(calls) == {"n", "k", "c"} and isinstance(payload["lines"], list)
    ids = calls["c"][calls["k"].index("id")]
    ids = ids["v"] if "v" in ids else [ids["d"][i] for i in ids["i"]]
    stored = [r[0] for r in query(
        sample_db_url, 'SELECT call_id FROM "call" WHERE episode_id = :e', e=EPISODE
    )]  # fmt: skip
    assert calls["n"] == len(stored) == 17
    assert sorted(ids) == sorted(stored)
