"""`python -m clawviz share`: one offline HTML file in which hostile log text stays text."""

from __future__ import annotations

import base64
import gzip
import html.parser
import json
import string

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
    assert main(["--db", url, "share", "xss-ep", "--out", str(out), "--plain"]) == 0
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
    assert main(["--db", url, "share", "xss-ep", "--out", str(out), "--redact", "--plain"]) == 0
    page = out.read_text(encoding="utf-8")
    assert "You are a helpful agent" not in page
    assert "[tool result redacted]" in page
    assert main(["--db", url, "share", "nope", "--out", str(tmp_path / "n.html")]) == 1
    assert "no episode" in capsys.readouterr().err


def test_share_gzips_the_same_data_by_default(tmp_path, capsys):
    # The default file carries the --plain file's JSON, gzipped and base64-encoded (no `<`
    # anywhere in it), with the same code around it, and the same bytes on every run.
    url = _store(tmp_path)
    plain, packed, again = tmp_path / "p.html", tmp_path / "z.html", tmp_path / "z2.html"
    assert main(["--db", url, "share", "xss-ep", "--out", str(plain), "--plain"]) == 0
    assert main(["--db", url, "share", "xss-ep", "--out", str(packed)]) == 0
    assert main(["--db", url, "share", "xss-ep", "--out", str(again)]) == 0
    assert packed.read_bytes() == again.read_bytes()
    head = '<script type="application/json" id="clawviz-payload">'
    before, rest = plain.read_text(encoding="utf-8").split(head, 1)
    data, after = rest.split("</script>", 1)
    zhead = '<script type="application/gzip;base64" id="clawviz-payload">'
    zbefore, zrest = packed.read_text(encoding="utf-8").split(zhead, 1)
    zdata, zafter = zrest.split("</script>", 1)
    assert (zbefore, zafter) == (before, after)
    assert set(zdata) <= set(string.ascii_letters + string.digits + "+/=")
    assert json.loads(gzip.decompress(base64.b64decode(zdata))) == json.loads(data)
    assert len(zdata) < len(data) / 2
