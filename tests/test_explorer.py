"""The Episode explorer's payload (clawviz/figures/explorer.py) and its safe embedding."""

from __future__ import annotations

import json

from sqlmodel import Session

from clawviz.figures.explorer import REDACTED_SYSTEM, REDACTED_TOOL_RESULT, build_payload
from clawviz.figures.explorer.assets import safe_json, share_html
from clawviz.jobs.share import load_payload
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine
from tests.conftest import SCRIPT_TEXT, hostile_calls

HOSTILE = "</script><script>alert(1)</script><!-- \u202egnp.exe \x1b[31mred\x1b[0m \u2028\u2029"


def _xss_episode():
    calls = [c for c in hostile_calls() if c.episode_id == "xss-ep"]
    calls[1].messages[0] = {"role": "user", "content": [{"type": "text", "text": HOSTILE}]}
    calls[1].system = HOSTILE  # not split into lines: U+2028/9 stay in the text
    return calls


def test_messages_are_sent_once_and_referenced(sample_db_url):
    with Session(get_engine(sample_db_url)) as s:
        p = load_payload(s, "t0001-claude-code-a1", DEFAULT_SETTINGS)
    texts = p["texts"]
    assert len(texts) == len(set(texts)), "a text is stored twice"
    refs = [i for c in p["calls"] for i in c["messages"]]
    assert len(refs) > len(texts), "calls share their history, so refs outnumber texts"
    assert all(0 <= i < len(texts) for i in refs)
    # A call repeats its parent's history: its first message is the parent's first, by index.
    child = next(c for c in p["calls"] if c["parent"])
    parent = next(c for c in p["calls"] if c["id"] == child["parent"])
    assert child["messages"][0] == parent["messages"][0]
    assert child["diff"]["parent"] == parent["id"]
    for c in p["calls"]:
        assert {"id", "label", "x", "y", "state", "role", "pins", "children"} <= set(c)
    json.dumps(p, allow_nan=False)


def test_hostile_text_stays_data():
    p = build_payload("xss-ep", _xss_episode(), None)
    texts = "\n".join(p["texts"])
    assert HOSTILE in p["texts"], "log text is kept verbatim, as data"
    assert SCRIPT_TEXT in texts and HOSTILE.split("\u2028")[0] in texts
    embedded = safe_json(p)
    for bad in ("</", "<script", "<!--", "\u2028", "\u2029"):
        assert bad not in embedded
    assert json.loads(embedded) == json.loads(json.dumps(p))
    page = share_html(p)
    assert page.lower().count("<script") == 2, "only the payload element and the explorer code"
    assert page.lower().count("</script") == 2


def test_redact_drops_system_prompts_and_tool_results():
    p = build_payload("xss-ep", _xss_episode(), None, redact=True)
    texts = "\n".join(p["texts"])
    assert "You are a helpful agent" not in texts
    assert REDACTED_SYSTEM in texts and REDACTED_TOOL_RESULT in texts
    assert "[tool result" not in texts.replace(REDACTED_TOOL_RESULT, "")
    assert p["episode"]["redacted"] is True
