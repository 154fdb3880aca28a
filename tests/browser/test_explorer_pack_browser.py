"""Real browser: the `clawviz share` file carries its payload packed (calls as columns, diff
lines and message lists as references, clawviz/figures/explorer/pack.py); the inspector opened
from that file shows, for each call, exactly the diff lines and request messages of the plain
payload, hostile text included, as text."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clawviz.figures.explorer import build_payload
from clawviz.figures.explorer.assets import share_html
from clawviz.recon.pipeline import analyse_episode
from tests.conftest import SCRIPT_TEXT

pytestmark = pytest.mark.browser

BENCH = Path(__file__).resolve().parents[2] / "bench"
INSPECTOR = '[data-testid="call-inspector"]'
ROWS_JS = """() => Array.from(document.querySelectorAll('.cvx-diff')).map(
  b => Array.from(b.children).map(r => r.textContent))"""
MESSAGES_JS = """() => {
  const sec = Array.from(document.querySelectorAll('details.cvx-sec')).find(
    d => d.querySelector(':scope > summary').textContent.startsWith('Request messages'));
  return Array.from(sec.querySelectorAll(':scope > details pre')).map(p => p.textContent);
}"""


def _calls():
    sys.path.insert(0, str(BENCH))
    try:
        from bigep import big_episode
    finally:
        sys.path.remove(str(BENCH))
    calls = [p.call for p in big_episode(60)]
    calls[7].messages = [*calls[7].messages, {"role": "user", "content": SCRIPT_TEXT}]
    return calls


def _expected_rows(diff: dict) -> list[list[str]]:
    out = []
    for name in ("messages", "system prompt", "tools"):
        if name not in diff:
            continue
        rows = []
        for kind, text, _ignored in diff[name]["lines"]:
            if kind == "fold":
                rows.append(f"\u2026 {text} unchanged lines \u2026")
            else:
                rows.append({"add": "+ ", "del": "- "}.get(kind, "  ") + text)
        out.append(rows)
    return out


def test_packed_share_file_shows_each_calls_diff_and_messages(page, tmp_path):
    calls = _calls()
    payload = build_payload("pack", calls, analyse_episode(calls, reward=None))
    out = tmp_path / "share.html"
    page_text = share_html(payload, compress=False)
    assert '"packed":1' in page_text, "the share file carries the packed form"
    out.write_text(page_text, encoding="utf-8")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
    hostile_seen = False
    checked = 0
    for c in payload["calls"]:
        page.locator(f'g.cvx-node[data-call-id="{c["id"]}"]').dispatch_event("click")
        page.wait_for_selector(f'{INSPECTOR}[data-call-id="{c["id"]}"]')
        if c["diff"] is not None:
            assert page.evaluate(ROWS_JS) == _expected_rows(c["diff"]), c["id"]
            hostile_seen |= any(
                SCRIPT_TEXT in ln[1] for ln in c["diff"]["messages"]["lines"] if ln[0] == "add"
            )
        assert page.evaluate(MESSAGES_JS) == [payload["texts"][i] for i in c["messages"]], c["id"]
        checked += 1
    assert checked >= 40
    assert hostile_seen, "the hostile message went through the lines table"
    assert page.locator(f"{INSPECTOR} script").count() == 0, "hostile text stays text"
    assert errors == []
