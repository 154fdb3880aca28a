"""Real browser, on `clawviz share` files opened from disk: the minimap of a big tree (the whole
tree in miniature, the part in view boxed; a click there moves the view), and find reaching the
text a long message does not show yet (counted; going to such a match shows all of it).

The episodes are bench/bigep.py's (a Claude Code main thread); the find scenario adds its own
messages, so where the needle is, and how often, is known from the test, not from clawviz."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clawviz.figures.explorer import build_payload
from clawviz.figures.explorer.assets import share_html
from clawviz.recon.pipeline import analyse_episode

pytestmark = pytest.mark.browser

BENCH = Path(__file__).resolve().parents[2] / "bench"
INSPECTOR = '[data-testid="call-inspector"]'
MINIMAP = '[data-testid="explorer-minimap"]'
VIEW = '[data-testid="explorer-minimap-view"]'
NEEDLE = "zebra-needle"


def _calls(n: int) -> list:
    sys.path.insert(0, str(BENCH))
    try:
        from bigep import big_episode
    finally:
        sys.path.remove(str(BENCH))
    return [p.call for p in big_episode(n)]


def _share(calls: list, path: Path) -> dict:
    payload = build_payload("ov", calls, analyse_episode(calls, reward=None))
    path.write_text(share_html(payload), encoding="utf-8")
    return payload


def _open(page, path: Path, call: str | None = None) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(path.as_uri() + (f"?call={call}" if call else ""))
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
    page.wait_for_timeout(300)


def _inside(inner: dict, outer: dict) -> bool:
    return (
        inner["x"] >= outer["x"]
        and inner["y"] >= outer["y"]
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"]
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"]
    )


def test_the_minimap_shows_where_the_view_is_and_moves_it(page, tmp_path):
    payload = _share(_calls(300), tmp_path / "big.html")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    _open(page, tmp_path / "big.html", payload["calls"][0]["id"])
    mini, view, pane = page.locator(MINIMAP), page.locator(VIEW), page.locator(".cvx-tree")
    assert mini.is_visible(), "a 300-call tree does not fit the pane: the minimap is shown"
    m = mini.bounding_box()
    assert _inside(mini.bounding_box(), pane.bounding_box()), "over the tree pane's corner"
    v0 = view.bounding_box()
    assert v0["x"] - m["x"] < 0.1 * m["width"], "the view starts at the first call"
    assert v0["width"] < 0.5 * m["width"], "and is a small part of the whole tree"
    last = payload["calls"][-1]["id"]
    last_node = page.locator(f'g.cvx-node[data-call-id="{last}"]')
    assert not _inside(last_node.bounding_box(), pane.bounding_box()), "the last call: out of view"

    # A click near the minimap's right end brings the tree's end into view.
    page.mouse.click(m["x"] + m["width"] - 3, m["y"] + m["height"] / 2)
    page.wait_for_timeout(300)
    assert _inside(last_node.bounding_box(), pane.bounding_box()), "the click moved the view"
    v1 = view.bounding_box()
    assert v1["x"] + v1["width"] > m["x"] + 0.9 * m["width"], "and the box followed it"

    # Scrolling the tree some other way moves the box back.
    pane.evaluate("e => { e.scrollLeft = 0; }")
    page.wait_for_timeout(300)
    assert view.bounding_box()["x"] - m["x"] < 0.1 * m["width"]

    # Dragging on the minimap pans the view along.
    page.mouse.move(m["x"] + 5, m["y"] + m["height"] / 2)
    page.mouse.down()
    page.mouse.move(m["x"] + m["width"] / 2, m["y"] + m["height"] / 2, steps=5)
    page.mouse.up()
    page.wait_for_timeout(300)
    middle = pane.evaluate("e => e.scrollLeft + e.clientWidth / 2") / pane.evaluate(
        "e => e.scrollWidth"
    )
    assert 0.4 < middle < 0.6, f"dragged to the middle: the view's centre is at {middle:.2f}"
    assert not errors, errors


def test_no_minimap_when_the_tree_fits(page, tmp_path):
    _share(_calls(4), tmp_path / "small.html")
    _open(page, tmp_path / "small.html")
    assert page.locator(MINIMAP).count() == 1
    assert not page.locator(MINIMAP).is_visible(), "four calls fit the pane: no minimap"


def _message(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_find_counts_and_reaches_text_not_shown_yet(page, tmp_path):
    [call] = _calls(1)
    # One match in a message folded by default (over 1,500 characters, drawn whole), one at
    # 30,000 characters into a 40,000-character message (only its first 20,000 are drawn).
    folded = "a" * 900 + f" {NEEDLE} " + "b" * 1_200
    long = "c" * 30_000 + f" {NEEDLE} " + "d" * 10_000
    call.messages = [*call.messages, _message(folded), _message(long)]
    _share([call], tmp_path / "find.html")
    _open(page, tmp_path / "find.html")
    long_pre = page.locator(f"{INSPECTOR} .cvx-long pre")
    assert long_pre.count() == 1
    assert NEEDLE not in long_pre.evaluate("e => e.textContent"), "not drawn yet"

    find = page.locator('[data-testid="explorer-find"]')
    find.fill(NEEDLE)
    count = page.locator('[data-testid="explorer-find-count"]')
    assert count.inner_text() == "2 matches", "the match in the part not shown is counted"
    now = page.locator(f"{INSPECTOR} mark.cvx-hit-now")
    assert now.count() == 1 and now.is_visible(), "the folded message was opened at its match"
    hidden = page.locator('[data-testid="explorer-hidden-hits"]')
    assert hidden.is_visible() and hidden.inner_text().startswith("1 more match")

    find.press("Enter")  # the next match: in the part not shown, so all of it is shown
    assert len(long_pre.evaluate("e => e.textContent")) > 40_000
    assert page.locator('[data-testid="explorer-show-all"]').count() == 0
    assert hidden.count() == 0
    marks = page.locator(f"{INSPECTOR} mark.cvx-hit")
    assert marks.count() == 2 and count.inner_text() == "2 matches"
    assert long_pre.locator("mark.cvx-hit-now").count() == 1, "the current match is in it"
    box = long_pre.locator("mark.cvx-hit-now").bounding_box()
    content = page.locator(f"{INSPECTOR} .cvx-content").bounding_box()
    assert box is not None and _inside(box, content), "and scrolled into view"
    find.press("Enter")  # round again: the first match
    assert long_pre.locator("mark.cvx-hit-now").count() == 0
