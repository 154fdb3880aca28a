"""Bad input for the explorer (issue 25): an episode of 10,000 calls and a 5 MB message still
make a payload; the long text is cut with a visible note (the browser side, windowing and
"show all", is tests/browser/test_explorer_big_browser.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from clawviz.figures.explorer import MAX_TEXT, build_payload
from clawviz.recon.pipeline import analyse_episode
from clawviz.types import Call, EpisodeAnalysis

BENCH = Path(__file__).resolve().parents[1] / "bench"
N_CALLS = 10_000
BIG = 5_000_000
"""Characters of the one huge tool result (5 MB of ASCII)."""
HEAD = "HUGE-TOOL-RESULT-START "


def big_calls() -> tuple[list[Call], EpisodeAnalysis, str]:
    """10,000 calls of one Claude Code episode (bench/bigep.py's shape), one of which carries a
    5 MB tool result; returns the calls, their analysis and the id of the huge call."""
    sys.path.insert(0, str(BENCH))
    try:
        from bigep import big_episode
    finally:
        sys.path.remove(str(BENCH))
    calls = [p.call for p in big_episode(N_CALLS)]
    huge = calls[40]
    text = HEAD + "x" * (BIG - len(HEAD))
    huge.messages = [*huge.messages, {"role": "user", "content": [{"type": "text", "text": text}]}]
    return calls, analyse_episode(calls, reward=None), huge.call_id


def test_ten_thousand_calls_and_a_5_mb_message_make_a_payload():
    calls, analysis, huge_id = big_calls()
    assert len(calls) >= N_CALLS
    p = build_payload("big", calls, analysis)
    assert len(p["calls"]) == len(calls)
    assert {c["id"] for c in p["calls"]} == {c.call_id for c in calls}
    huge = next(c for c in p["calls"] if c["id"] == huge_id)
    last = p["texts"][huge["messages"][-1]]
    assert last[:MAX_TEXT].count("x") == MAX_TEXT - last.index("x"), "cut at MAX_TEXT characters"
    assert len(last) < MAX_TEXT + 200
    assert HEAD in last
    cut = BIG - MAX_TEXT  # the message's own header line comes on top of the 5,000,000
    note = last[MAX_TEXT:]
    assert "more characters not included in the explorer" in note
    left_out = int(note.split("more characters")[0].strip(" \n…").replace(",", ""))
    assert cut < left_out < cut + 100
    assert max(len(t) for t in p["texts"]) == len(last), "no other text is longer"
    added = [ln[1] for ln in huge["diff"]["messages"]["lines"] if ln[0] == "add"]
    assert any(HEAD in t for t in added), "the diff shows the message's start"
    assert max(len(t) for t in added) < 20_100, "and no 5 MB line"
