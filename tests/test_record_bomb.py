"""`clawviz record` and compressed bodies: inflated for the log only within a budget. A small
gzip (or zstd, deflate) bomb is logged as it came, in base64, with its encoding and the budget
noted, never inflated whole into the log line and the proxy's memory."""

from __future__ import annotations

import base64
import gzip
import io
import zlib

import httpx
import orjson
import pytest
import zstandard
from aiohttp import web
from record_support import LoopThread, Scripted, read_log

BUDGET = 1 << 20
PAD = 8 << 20  # 8 MiB of one byte: about 8 KB compressed


def _json_bomb() -> bytes:
    return b'{"model":"m","messages":[],"pad":"' + b"a" * PAD + b'"}'


def _pack(data: bytes, enc: str) -> bytes:
    if enc == "gzip":
        return gzip.compress(data)
    if enc == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    return zlib.compress(data)  # deflate


class Bomber(Scripted):
    """The scripted server, plus `x-bomb: ENC`: a JSON answer that inflates to 8 MiB."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        enc = request.headers.get("x-bomb")
        if not enc:
            return await super().handle(request)
        await request.read()
        data = _pack(_json_bomb(), enc)
        self.sent_bodies.append(data)
        return web.Response(
            body=data, headers={"Content-Type": "application/json", "Content-Encoding": enc}
        )


@pytest.fixture()
def rig(tmp_path):
    lt = LoopThread()
    scripted = Bomber()
    port = lt.start_scripted(scripted)
    out = tmp_path / "log"
    proxy = lt.start_proxy(
        f"http://127.0.0.1:{port}", str(out), inflate_budget=BUDGET, stderr=io.StringIO()
    )
    yield scripted, proxy, out
    if not proxy.fut.done():
        proxy.stop()
    lt.close()


def test_request_gzip_bomb_is_logged_as_sent_within_budget(rig):
    scripted, proxy, out = rig
    packed = gzip.compress(_json_bomb())
    assert len(packed) < 64 << 10
    r = httpx.post(
        f"{proxy.url}/ep/b/v1/chat/completions",
        content=packed,
        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    assert r.status_code == 200
    writer = proxy.stop()
    assert writer.lost == 0
    assert scripted.received[0]["body"] == packed  # forwarded as it came
    line = (out / "b.jsonl").read_bytes()
    assert len(line) < 4 * len(packed)  # not the 8 MiB it inflates to
    (rec,) = read_log(out)["b.jsonl"]
    assert base64.b64decode(rec["request"]["body_base64"]) == packed
    assert rec["clawviz"]["body_encoding"] == {"request": "gzip"}
    assert rec["clawviz"]["inflate_budget_exceeded"] == {"request": BUDGET}
    assert rec["response"]["body"]["choices"][0]["message"]["content"] == "echo: "


@pytest.mark.parametrize("enc", ["gzip", "zstd", "deflate"])
def test_response_bomb_is_logged_as_sent_within_budget(rig, enc):
    scripted, proxy, out = rig
    body = {"model": "m", "messages": [{"role": "user", "content": "boom"}]}
    with (
        httpx.Client() as c,
        c.stream(
            "POST", f"{proxy.url}/ep/r/v1/chat/completions", json=body, headers={"x-bomb": enc}
        ) as r,
    ):
        assert b"".join(r.iter_raw()) == scripted.sent_bodies[-1]  # the client gets it as sent
    writer = proxy.stop()
    assert writer.lost == 0
    line = (out / "r.jsonl").read_bytes()
    assert len(line) < 4 * len(scripted.sent_bodies[-1]) + 4096
    (rec,) = read_log(out)["r.jsonl"]
    assert base64.b64decode(rec["response"]["body_base64"]) == scripted.sent_bodies[-1]
    assert rec["clawviz"]["body_encoding"] == {"response": enc}
    assert rec["clawviz"]["inflate_budget_exceeded"] == {"response": BUDGET}
    assert rec["request"]["body"] == body


def test_inflate_units():
    from clawviz.record.proxy import OverBudget, _inflate

    small = orjson.dumps({"a": "b" * 100})
    for enc in ("gzip", "zstd", "deflate"):
        assert _inflate(_pack(small, enc), enc, 1000) == small
        with pytest.raises(OverBudget):
            _inflate(_pack(small, enc), enc, 50)
    assert _inflate(zlib.compress(small)[2:-4], "deflate", 1000) == small  # raw deflate
    two = gzip.compress(b"one ") + gzip.compress(b"two")
    assert _inflate(two, "gzip", 1000) == b"one two"  # every member, not the first alone
    assert _inflate(gzip.compress(small)[:-12], "gzip", 1000) is None  # cut off: base64
    assert _inflate(b"not gzip", "gzip", 1000) is None
