"""The share file's packed payload (clawviz/figures/explorer/pack.py): each diff line is sent
once, in `lines`, and calls refer to it (the browser side, that the inspector shows the same
lines, is tests/browser/test_explorer_pack_browser.py)."""

from __future__ import annotations

import json

from clawviz.figures.explorer import build_payload
from clawviz.figures.explorer.assets import share_html
from clawviz.figures.explorer.pack import pack_payload
from clawviz.recon.pipeline import analyse_episode
from tests.browser.test_explorer_pack_browser import _calls
from tests.conftest import SCRIPT_TEXT


def test_each_diff_line_is_sent_once():
    calls = _calls()
    payload = build_payload("pack", calls, analyse_episode(calls, reward=None))
    diff_lines = [
        ln[1]
        for c in payload["calls"]
        if c["diff"]
        for name in ("messages", "system prompt", "tools")
        for ln in c["diff"][name]["lines"]
        if ln[0] != "fold"
    ]
    assert len(diff_lines) > 1.5 * len(set(diff_lines)), "the calls' diffs repeat their lines"
    packed = pack_payload(payload)
    assert sorted(packed["lines"]) == sorted(set(diff_lines))
    calls_json = json.dumps(packed["calls"])
    assert SCRIPT_TEXT not in calls_json, "no diff text inside the calls: references only"
    assert "role_reason" in calls_json and calls_json.count('"role_reason"') == 1, "keys once"
    page = share_html(payload, compress=False)
    escaped = json.dumps(SCRIPT_TEXT)[1:-1].replace("<", "\\u003c").replace(">", "\\u003e")
    assert page.count(escaped) == 2, "the hostile message: once as a text, once as a diff line"
