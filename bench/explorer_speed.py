"""The Episode explorer's rows of issue 25, in headless Chromium, each interleaved with a floor
measured in the same run (A B A B ...).

    python bench/explorer_speed.py [--calls 254] [--repeats 7] [--clicks 40]
                                    [--size-only | --first-paint]

- **click**: a click on a tree node until the inspector's `data-call-id` names that call (the
  DOM is updated synchronously; the time includes two animation frames, i.e. until it is
  painted), warm, on a `clawviz share` file of a `bench/bigep.py` episode of 254 calls. Floor:
  the same click-to-painted on a one-button page whose handler sets one attribute.
- **key**: the same for the keyboard's "j" (next call on the path). Floor: a keydown on the
  one-button page.
- **open**: opening the share file from disk until the inspector shows a call and two frames
  have passed. Floor: a trivial HTML file from disk.
- **size**: the share file's bytes / the bytes of the distinct content in its payload
  (`pack.distinct_content`: every distinct text, i.e. message, system prompt and response, and
  every distinct diff line, each once, UTF-8; the JS and CSS are not content). Given twice: with
  the file's inline JS and CSS counted (`size_ratio`), and with them taken out as a fixed
  overhead (`size_ratio_no_code`). `--size-only` gives this row alone for the 254-call episode,
  the sample store's t0001-claude-code-a1 and the recorded OpenClaw gateway session, each
  also as `clawviz share --plain` writes it (`plain_json_bytes`: the packed JSON, not gzipped)
  and as the unpacked payload would be (`unpacked_bytes`: the plain file before pack.py).

- **first paint** (`--first-paint`, run alone): the app's Episode page of the 254-call
  episode written into a temporary SQLite store (bench/bigep.py's `write_big_episode`, then
  analysed), opened in a new tab until the explorer's inspector shows a call, the script run has
  ended and two frames passed; against bench/trivial_page.py painted in a new tab until its
  Plotly markers are there and its run ended (bench/browser.py's `paint_streamlit`). Both
  servers warm (each painted once first), the two pages alternated, wall time.
Times are milliseconds; each row gives the median and the min-max over repeats, and the
ratio to its floor as the median (min-max) of the per-pair ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bigep import big_episode  # noqa: E402

from clawviz.figures.explorer import build_payload  # noqa: E402
from clawviz.figures.explorer.assets import (  # noqa: E402
    explorer_css,
    explorer_js,
    safe_json,
    share_html,
)
from clawviz.figures.explorer.pack import distinct_content, pack_payload  # noqa: E402
from clawviz.recon.pipeline import analyse_episode  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]  # fmt: skip

FLOOR_HTML = """<!DOCTYPE html><html><body>
<button id="b" data-v="0">x</button><div data-testid="call-inspector" data-call-id=""></div>
<script>
var i = document.querySelector('[data-testid=call-inspector]');
document.getElementById('b').addEventListener('click', function (e) {
  i.setAttribute('data-call-id', e.detail && e.detail.id || String(Math.random())); });
document.addEventListener('keydown', function () {
  i.setAttribute('data-call-id', String(Math.random())); });
</script></body></html>"""

# In-page: act, then wait two animation frames (the change painted); returns milliseconds.
CLICK_JS = """(sel) => new Promise((done) => {
  const el = document.querySelector(sel);
  const t0 = performance.now();
  el.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}));
  requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
})"""
KEY_JS = """(key) => new Promise((done) => {
  const t0 = performance.now();
  document.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true}));
  requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
})"""
SHOWN_JS = (
    "() => document.querySelector('[data-testid=call-inspector]').getAttribute('data-call-id')"
)
FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f} ({min(xs):.1f}-{max(xs):.1f})"


def size_row(payload: dict) -> dict:
    """The size row of one payload (see the module docstring)."""
    size = len(share_html(payload).encode("utf-8"))
    json_size = len(share_html(payload, compress=False).encode("utf-8"))
    packed = len(safe_json(pack_payload(payload)).encode())
    plain = json_size - packed + len(safe_json(payload).encode())
    code = len(explorer_js().encode("utf-8")) + len(explorer_css().encode("utf-8"))
    distinct = distinct_content(payload)
    return {"calls": len(payload["calls"]), "share_bytes": size, "plain_json_bytes": json_size,
            "unpacked_bytes": plain, "code_bytes": code, "distinct_bytes": distinct,
            "distinct_texts_bytes": sum(len(t.encode()) for t in set(payload["texts"])),
            "size_ratio": round(size / distinct, 2),
            "size_ratio_no_code": round((size - code) / distinct, 2),
            "plain_json_ratio": round(json_size / distinct, 2)}  # fmt: skip


def _sample_payload(episode: str) -> dict:
    """The sample store (sample_logs/ ingested and analysed in a temporary SQLite file)."""
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.jobs.share import load_payload
    from clawviz.settings import DEFAULT_SETTINGS
    from clawviz.store.db import get_engine

    url = "sqlite:///" + str(Path(tempfile.mkdtemp(prefix="cvx-bench-")) / "s.db")
    with Session(get_engine(url)) as s:
        ingest_paths([HERE.parent / "sample_logs"], session=s)
        ensure_analysis(s)
        s.commit()
        return load_payload(s, episode, DEFAULT_SETTINGS)


def _recorded_payload(folder: str) -> dict:
    """A recorded session of tests/data/recorded (tests.harness.recorded.load)."""
    from tests.harness.recorded import load

    loaded = load(HERE.parent / folder, Path(tempfile.mkdtemp(prefix="cvx-bench-")))
    return build_payload(loaded.episode, loaded.calls, loaded.analysis)


def size_rows(n_calls: int) -> dict:
    calls = [p.call for p in big_episode(n_calls)][:n_calls]
    return {
        f"bigep {n_calls} calls": size_row(
            build_payload("bench", calls, analyse_episode(calls, reward=None))
        ),
        "sample t0001-claude-code-a1": size_row(_sample_payload("t0001-claude-code-a1")),
        "openclaw-2026.9.6/gateway-session": size_row(
            _recorded_payload("tests/data/recorded/openclaw-2026.9.6/gateway-session")
        ),
    }


def first_paint_rows(n_calls: int, repeats: int) -> dict:
    """The Episode page (app.py) of a stored `n_calls`-call bigep episode painted in a new tab
    (the explorer's inspector shows a call, the script run ended, two frames), interleaved with
    bench/trivial_page.py painted the same way (its Plotly markers); both servers warm."""
    from bigep import write_big_episode
    from browser import paint_streamlit, streamlit
    from playwright.sync_api import sync_playwright
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.store.db import get_engine, init_db

    tmp = Path(tempfile.mkdtemp(prefix="cvx-bench-"))
    url = "sqlite:///" + str(tmp / "s.db")
    engine = get_engine(url)
    init_db(engine)
    with Session(engine) as s:
        write_big_episode(s, n_calls)
        ensure_analysis(s)
        s.commit()
    log = tmp / "servers.log"

    def paint_episode(browser: Any, ep_url: str) -> None:
        ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
        try:
            pg = ctx.new_page()
            pg.set_default_timeout(180_000)
            pg.goto(ep_url)
            pg.wait_for_selector("[data-testid=call-inspector][data-call-id]", state="attached")
            pg.wait_for_selector(
                "[data-testid='stApp'][data-test-script-state='notRunning']", state="attached"
            )
            pg.evaluate(FRAMES_JS)
        finally:
            ctx.close()

    a: list[float] = []
    b: list[float] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        with (
            streamlit(HERE / "trivial_page.py", url, log) as t_url,
            streamlit(HERE.parent / "app.py", url, log) as a_url,
        ):
            ep_url = f"{a_url}/episode?episode=big"
            paint_streamlit(browser, t_url)  # warm both servers once
            paint_episode(browser, ep_url)
            for _ in range(repeats):
                t0 = time.perf_counter()
                paint_streamlit(browser, t_url)
                a.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                paint_episode(browser, ep_url)
                b.append((time.perf_counter() - t0) * 1000)
        browser.close()
    ratios = [y / x for x, y in zip(a, b, strict=True)]
    med = statistics.median(ratios)
    return {"calls": n_calls, "episode_page": _spread(b), "trivial_page": _spread(a),
            "ratio": f"{med:.2f} ({min(ratios):.2f}-{max(ratios):.2f})"}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=254)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--clicks", type=int, default=40)
    ap.add_argument("--first-paint", action="store_true", help="the app's first-paint row alone")
    ap.add_argument("--size-only", action="store_true", help="the size row alone, 3 episodes")
    a = ap.parse_args()
    if a.first_paint:
        print(json.dumps(first_paint_rows(a.calls, a.repeats), indent=1))
        return 0
    if a.size_only:
        print(json.dumps(size_rows(a.calls), indent=1))
        return 0
    from playwright.sync_api import sync_playwright

    calls = [p.call for p in big_episode(a.calls)][: a.calls]
    payload = build_payload("bench", calls, analyse_episode(calls, reward=None))
    tmp = Path(tempfile.mkdtemp(prefix="cvx-bench-"))
    share, floor = tmp / "share.html", tmp / "floor.html"
    text = share_html(payload)
    share.write_text(text, encoding="utf-8")
    floor.write_text(FLOOR_HTML, encoding="utf-8")
    ids = [c["id"] for c in payload["calls"]]
    rows: dict[str, list[float]] = {k: [] for k in
        ("click", "click_floor", "key", "key_floor", "open", "open_floor")}  # fmt: skip
    p95s: list[float] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        for rep in range(a.repeats):
            for kind in ("open", "open_floor"):
                pg = browser.new_page(viewport={"width": 1280, "height": 720})
                target = share if kind == "open" else floor

                t0 = time.perf_counter()
                pg.goto(target.as_uri())
                pg.wait_for_selector("[data-testid=call-inspector]", state="attached")
                if kind == "open":
                    pg.wait_for_selector("[data-testid=call-inspector][data-call-id]")
                pg.evaluate(FRAMES_JS)
                rows[kind].append((time.perf_counter() - t0) * 1000)
                pg.close()
            app = browser.new_page(viewport={"width": 1280, "height": 720})
            app.goto(share.as_uri())
            app.wait_for_selector("[data-testid=call-inspector][data-call-id]")
            fl = browser.new_page(viewport={"width": 1280, "height": 720})
            fl.goto(floor.as_uri())
            clicks, clicks_f, keys, keys_f = [], [], [], []
            for i in range(a.clicks):  # warm: interleaved app click, floor click
                cid = ids[(i * 37 + rep) % len(ids)]
                ms = app.evaluate(CLICK_JS, f'g.cvx-node[data-call-id="{cid}"]')
                if app.evaluate(SHOWN_JS) == cid:
                    clicks.append(ms)
                clicks_f.append(fl.evaluate(CLICK_JS, "#b"))
                keys.append(app.evaluate(KEY_JS, "j"))
                keys_f.append(fl.evaluate(KEY_JS, "j"))
            assert len(clicks) == a.clicks, "a click did not show its call"
            rows["click"].append(statistics.median(clicks))
            p95s.append(_pct(clicks, 0.95))
            rows["click_floor"].append(statistics.median(clicks_f))
            rows["key"].append(statistics.median(keys))
            rows["key_floor"].append(statistics.median(keys_f))
            app.close()
            fl.close()
        browser.close()
    out: dict = size_row(payload)
    for name in ("click", "key", "open"):
        ratios = [x / y for x, y in zip(rows[name], rows[name + "_floor"], strict=True)]
        out[name] = _spread(rows[name])
        out[name + "_floor"] = _spread(rows[name + "_floor"])
        med = statistics.median(ratios)
        out[name + "_ratio"] = f"{med:.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
    out["click_p95"] = _spread(p95s)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
