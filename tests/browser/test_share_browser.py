"""Real browser: a `clawviz share` file opened from disk (no server): click a node, press j,
find, go Back; hostile log text stays text there."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from sqlmodel import Session

from clawviz.figures.explorer.assets import share_html
from clawviz.jobs.share import load_payload
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine

pytestmark = pytest.mark.browser

EPISODE = "t0001-claude-code-a1"
INSPECTOR = '[data-testid="call-inspector"]'


def _write(url: str, episode: str, path) -> dict:
    with Session(get_engine(url)) as s:
        payload = load_payload(s, episode, DEFAULT_SETTINGS)
    path.write_text(share_html(payload), encoding="utf-8")
    return payload


def _shown(page) -> str | None:
    return page.get_attribute(INSPECTOR, "data-call-id")


def _url_call(page) -> str | None:
    values = parse_qs(urlparse(page.url).query).get("call")
    return values[0] if values else None


def test_shared_file_click_keys_find_back(sample_db_url, page, tmp_path):
    out = tmp_path / "share.html"
    payload = _write(sample_db_url, EPISODE, out)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
    first = _shown(page)
    assert first == payload["kept_path"][0], "opens on the first call of the kept path"

    # Click: the inspector shows that call and the URL names it (one history entry).
    kept = payload["kept_path"]
    target = kept[2]
    page.locator(f'g.cvx-node[data-call-id="{target}"]').click()
    page.wait_for_function(
        "([sel, c]) => document.querySelector(sel).getAttribute('data-call-id') === c",
        arg=[INSPECTOR, target],
    )
    assert _url_call(page) == target

    # j: the next call on the path.
    page.locator("body").press("j")
    assert _shown(page) == kept[3]
    assert _url_call(page) == kept[3]
    page.keyboard.press("k")
    assert _shown(page) == kept[2]

    # Help popover lists the keys.
    page.keyboard.press("?")
    help_box = page.locator('[data-testid="explorer-help-popover"]')
    assert help_box.is_visible() and "next failed call" in help_box.inner_text()
    page.keyboard.press("Escape")

    # Find: matches counted and highlighted.
    find = page.locator('[data-testid="explorer-find"]')
    find.fill("tool")
    count = page.locator('[data-testid="explorer-find-count"]').inner_text()
    n = int(count.split()[0])
    assert n > 0
    assert page.locator(f"{INSPECTOR} mark.cvx-hit").count() == n
    find.fill("")
    assert page.locator(f"{INSPECTOR} mark.cvx-hit").count() == 0

    # Back: the call before (j was one entry, k another).
    page.go_back()
    page.wait_for_function(
        "([sel, c]) => document.querySelector(sel).getAttribute('data-call-id') === c",
        arg=[INSPECTOR, kept[3]],
    )
    page.go_back()
    page.wait_for_function(
        "([sel, c]) => document.querySelector(sel).getAttribute('data-call-id') === c",
        arg=[INSPECTOR, target],
    )
    page.go_forward()
    page.wait_for_function(
        "([sel, c]) => document.querySelector(sel).getAttribute('data-call-id') === c",
        arg=[INSPECTOR, kept[3]],
    )
    for _ in range(2):  # back past every pick: the call the file opened on
        page.go_back()
    page.wait_for_function(
        "([sel, c]) => document.querySelector(sel).getAttribute('data-call-id') === c",
        arg=[INSPECTOR, first],
    )
    assert errors == []
    assert all(u.startswith("file:") for u in requests), requests


def test_shared_file_shows_hostile_text_as_text(hostile_db_url, page, tmp_path):
    out = tmp_path / "xss.html"
    _write(hostile_db_url, "xss-ep", out)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(out.as_uri())
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
    page.locator('g.cvx-node[data-call-id="xss:2"]').click()
    assert _shown(page) == "xss:2"
    text = page.locator(INSPECTOR).inner_text()
    assert "<script>alert('xss')</script>" in text
    assert page.locator(f"{INSPECTOR} script, {INSPECTOR} img").count() == 0
    assert dialogs == []


def test_shared_file_jump_keys(sample_db_url, page, tmp_path):
    out = tmp_path / "a4.html"
    payload = _write(sample_db_url, "t0001-claude-code-a4", out)
    by_id = {c["id"]: c for c in payload["calls"]}
    page.goto(out.as_uri())
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
    page.keyboard.press("f")
    assert by_id[_shown(page)]["failed"], "f: the next failed call"
    page.keyboard.press("p")
    assert by_id[_shown(page)]["pins"], "p: the next call with a pinned reason"
    shown = by_id[_shown(page)]
    if shown["parent"]:
        page.keyboard.press("u")
        assert _shown(page) == shown["parent"], "u: the parent"
        page.keyboard.press("d")
        assert by_id[_shown(page)]["parent"] == shown["parent"], "d: a child of that parent"


def test_shared_file_says_why_when_the_browser_cannot_unpack_it(sample_db_url, page, tmp_path):
    # A browser without DecompressionStream gets a sentence naming the fix (--plain), as text,
    # not a blank page; the --plain file opens there.
    page.add_init_script("delete window.DecompressionStream;")
    out = tmp_path / "share.html"
    _write(sample_db_url, EPISODE, out)
    page.goto(out.as_uri())
    page.wait_for_function(
        "() => document.getElementById('clawviz-explorer').textContent.includes('--plain')"
    )
    assert page.locator(INSPECTOR).count() == 0
    with Session(get_engine(sample_db_url)) as s:
        payload = load_payload(s, EPISODE, DEFAULT_SETTINGS)
    plain = tmp_path / "plain.html"
    plain.write_text(share_html(payload, compress=False), encoding="utf-8")
    page.goto(plain.as_uri())
    page.wait_for_selector(f"{INSPECTOR}[data-call-id]")
