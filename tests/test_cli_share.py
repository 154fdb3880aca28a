"""`python -m clawviz share`: one offline HTML file in which hostile log text stays text."""

from __future__ import annotations

import html.parser
import json

from sqlmodel import Session

from clawviz.cli.main import main
from clawviz.jobs.analyse import ensure_analysis
from clawviz.store import calls as store
from clawviz.store import models
from clawviz.store.db import get_engine
from tests import dburl
from tests.conftest import hostile_calls

HOSTILE = (
    "</script><script>alert(1)</script><img src=x onerror=alert(2)> <!-- "
    "\u202egnp.exe \u2066bidi\u2069 \x1b[31mANSI red\x1b[0m \u2028line\u2029para"
)


class _Scripts(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _store(tmp_path) -> str:
    url = dburl.fresh_url(tmp_path, "share")
    calls = hostile_calls()
    for c in calls:
        if c.call_id == "xss:2":
            c.messages = [
                *c.messages,
                {"role": "user", "content": [{"type": "text", "text": HOSTILE}]},
            ]
            c.system = c.system + " " + HOSTILE
    with Session(get_engine(url)) as s:
        source = models.Source(path="hostile.jsonl", sha256="hostile-share", format="exchange")
        s.add(source)
        s.commit()
        s.refresh(source)
        store.write_calls(s, calls, source)
        store.refresh_episodes(s, ["xss-ep", "solo-ep"])
        s.commit()
        ensure_analysis(s)
    return url


def test_share_writes_one_inert_file(tmp_path, capsys):
    url = _store(tmp_path)
    out = tmp_path / "xss.html"
    assert main(["--db", url, "share", "xss-ep", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    parser = _Scripts()
    parser.feed(page)
    tags = [t for t, _ in parser.tags]
    assert tags.count("script") == 2, "no script element came from the log text"
    assert set(tags) <= {"html", "head", "meta", "title", "style", "body", "div", "script"}
    before, rest = page.split('<script type="application/json" id="clawviz-payload">', 1)
    data, after = rest.split("</script>", 1)
    for raw in ("<", ">", "\u2028", "\u2029"):
        assert raw not in data, f"{raw!r} left raw in the embedded JSON"
    payload = json.loads(data)
    assert any(HOSTILE in t for t in payload["texts"]), "the hostile text is kept, as data"
    code = before + after
    assert "src=" not in code and "://" not in code.replace("http://www.w3.org/2000/svg", "")
    assert ".innerHTML" not in code and "insertAdjacentHTML" not in code, (
        "the explorer inserts log text with textContent only"
    )


def test_share_redact_and_unknown_episode(tmp_path, capsys):
    url = _store(tmp_path)
    out = tmp_path / "r.html"
    assert main(["--db", url, "share", "xss-ep", "--out", str(out), "--redact"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "You are a helpful agent" not in page
    assert "[tool result redacted]" in page
    assert main(["--db", url, "share", "nope", "--out", str(tmp_path / "n.html")]) == 1
    assert "no episode" in capsys.readouterr().err
