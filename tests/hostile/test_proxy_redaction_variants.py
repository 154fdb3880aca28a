"""Hostile round 3, the recording proxy's redaction: variations not in tests/test_record_redact.py.

Mixed-case and repeated credential headers, and URLs carrying secrets in headers that are not
named for a credential (Referer from the client; Location and Content-Location from the upstream,
as an OAuth redirect sends them). The test greps the raw log for every secret sent and checks
that the upstream and the client got every byte as sent.
"""

from __future__ import annotations

import io

import httpx
from aiohttp import web
from record_support import LoopThread, Scripted, chat_json, read_log

SECRETS = [f"sec-var-{i:04d}" for i in range(1, 11)]


class Redirecting(Scripted):
    """Answers a chat call with URL-bearing headers that carry secrets."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.received.append(
            {"path": request.path_qs, "headers": request.headers.copy(), "body": raw}
        )
        resp = web.json_response(chat_json("redirected"))
        resp.headers["Location"] = f"https://app.example/cb?state=s1&access_token={SECRETS[6]}"
        resp.headers["Content-Location"] = f"/v1/result?Signature={SECRETS[7]}&x=1"
        resp.headers.add("Set-Cookie", f"a={SECRETS[8]}")
        resp.headers.add("set-cookie", f"b={SECRETS[9]}")
        return resp


def test_mixed_case_repeated_and_url_bearing_headers_are_redacted(tmp_path):
    lt = LoopThread()
    upstream = Redirecting()
    port = lt.start_scripted(upstream)
    out = tmp_path / "log"
    proxy = lt.start_proxy(f"http://127.0.0.1:{port}", str(out), stderr=io.StringIO())
    sent = [
        ("AuThOrIzAtIoN", f"Bearer {SECRETS[0]}"),
        ("X-API-KEY", SECRETS[1]),
        ("x-api-key", SECRETS[2]),  # the same header name repeated
        ("Referer", f"https://ide.example/page?api_key={SECRETS[3]}&tab=2"),
        ("X-Forwarded-Auth", SECRETS[4]),
        ("PROXY-AUTHORIZATION", f"Basic {SECRETS[5]}"),
    ]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    try:
        with httpx.Client(base_url=proxy.url) as c:
            r = c.post("/ep/var/v1/chat/completions", json=body, headers=sent)
        assert r.status_code == 200
    finally:
        writer = proxy.stop()
        lt.close()
    assert writer.lost == 0
    # Byte for byte both ways: the upstream got every header, the client every answer header.
    got = upstream.received[0]["headers"]
    assert got.getall("X-Api-Key") == [SECRETS[1], SECRETS[2]]
    assert got["Referer"] == sent[3][1]
    assert r.headers["Location"].endswith(SECRETS[6])
    assert r.headers.get_list("set-cookie") == [f"a={SECRETS[8]}", f"b={SECRETS[9]}"]
    log = out.joinpath("var.jsonl").read_bytes()
    for secret in SECRETS:
        assert secret.encode() not in log, secret
    (rec,) = read_log(out)["var.jsonl"]
    req, resp = rec["request"]["headers"], rec["response"]["headers"]
    assert req["Referer"] == "https://ide.example/page?api_key=[redacted]&tab=2"
    assert resp["Location"] == "https://app.example/cb?state=s1&access_token=[redacted]"
    assert resp["Content-Location"] == "/v1/result?Signature=[redacted]&x=1"
