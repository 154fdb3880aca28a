"""`clawviz record` logs no credential: any header named for one, secret query parameters, and
userinfo are redacted in the log and the store, while the upstream gets the request as sent."""

from __future__ import annotations

import io
import time

import httpx
from record_support import LoopThread, Scripted, read_log

from tests.dburl import fresh_url

HEADERS = {
    "x-goog-api-key": "sec-goog-0001",
    "X-Auth-Token": "sec-xauth-0002",
    "X-Amz-Security-Token": "sec-amz-0003",
    "OpenAI-Api-Key": "sec-openai-0004",
    "X-Client-Secret": "sec-client-0005",
    "X-Password": "sec-pass-0006",
    "Authorization": "Bearer sec-bearer-0007",
    "x-api-key": "sec-xapi-0008",
    "X-Session-Cookie": "sec-cookie-0009",
    "Ocp-Apim-Subscription-Key": "sec-azure-0010",
}
QUERY = {
    "key": "sec-qkey-0101",
    "api_key": "sec-qapikey-0102",
    "apikey": "sec-qapikey-0103",
    "access_token": "sec-qat-0104",
    "token": "sec-qtok-0105",
    "X-Amz-Signature": "sec-qsig-0106",
    "client_secret": "sec-qcs-0107",
}


def test_credentials_redacted_in_log_and_store_forwarded_as_sent(tmp_path):
    from sqlmodel import Session, select

    from clawviz.store.calls import load_calls
    from clawviz.store.db import get_engine
    from clawviz.store.models import CallRow

    lt = LoopThread()
    scripted = Scripted()
    port = lt.start_scripted(scripted)
    out = tmp_path / "log"
    db = fresh_url(tmp_path, "store")
    proxy = lt.start_proxy(
        f"http://127.0.0.1:{port}", str(out), db_url=db, db_window=0.05, stderr=io.StringIO()
    )
    # Percent-encoded names and values, and a parameter that is no secret, kept as they are.
    raw_query = "&".join(f"{k}={v}" for k, v in QUERY.items()) + "&api%5Fkey=sec-enc-0108&model=m1"
    path = f"/ep/sec/v1/chat/completions?{raw_query}"
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    try:
        with httpx.Client(base_url=proxy.url) as c:
            r = c.post(path, json=body, headers={**HEADERS, "x-ratelimit-tokens": "17"})
            assert r.status_code == 200
        engine = get_engine(db)
        for _ in range(200):
            with Session(engine) as s:
                if s.exec(select(CallRow)).all():
                    break
            time.sleep(0.05)
    finally:
        writer = proxy.stop()
        lt.close()
    assert writer.lost == 0
    # Forwarded byte for byte: every header value and the raw query as the client sent them.
    got = scripted.received[0]
    assert got["path"] == "/v1/chat/completions?" + raw_query
    for k, v in HEADERS.items():
        assert got["headers"][k] == v
    secrets = [v.split()[-1] for v in HEADERS.values()] + [*QUERY.values(), "sec-enc-0108"]
    log = out.joinpath("sec.jsonl").read_bytes()
    store = b"".join(p.read_bytes() for p in tmp_path.glob("store.db*"))  # and its -wal
    with Session(get_engine(db)) as s:
        (call,) = load_calls(s, "sec")
        rows = repr(s.exec(select(CallRow)).all()).encode()
    loaded = repr(call).encode() + rows
    for secret in secrets:
        assert secret.encode() not in log, secret
        assert secret.encode() not in store, secret
        assert secret.encode() not in loaded, secret
    (rec,) = read_log(out)["sec.jsonl"]
    logged = rec["request"]["headers"]
    assert all(logged[k] == "[redacted]" for k in HEADERS)
    assert logged["x-ratelimit-tokens"] == "17"  # a counter, not a credential
    assert rec["request"]["url"].endswith("&api%5Fkey=[redacted]&model=m1")
    assert "key=[redacted]&api_key=[redacted]&apikey=[redacted]" in rec["request"]["url"]
    assert call.url == rec["request"]["url"]


def test_redact_url_units():
    from clawviz.ingest.exchange import redact_url

    assert redact_url("http://h/v1/x") == "http://h/v1/x"
    assert (
        redact_url("http://u:pw@h/v1?a=1&key=s#frag")
        == "http://[redacted]@h/v1?a=1&key=[redacted]#frag"
    )
    assert redact_url("http://h/?key&Token=x&k=v") == "http://h/?key&Token=[redacted]&k=v"
    assert redact_url("http://h/?code=abc&stream=true") == "http://h/?code=[redacted]&stream=true"


def test_ingest_redacts_a_log_not_written_by_the_proxy(tmp_path):
    """A log from elsewhere (a harness's own recorder) is redacted at ingest, so the store never
    holds these secrets either."""
    import orjson
    from sqlmodel import Session

    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.calls import load_calls
    from clawviz.store.db import get_engine

    rec = {
        "request": {
            "timestamp": 1.0,
            "method": "POST",
            "url": "http://h/v1/chat/completions?key=sec-direct-0201",
            "headers": {"X-Goog-Api-Key": "sec-direct-0202"},
            "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        },
        "response": {
            "timestamp": 2.0,
            "status_code": 200,
            "headers": {"X-Upstream-Token": "sec-direct-0203"},
            "body": {"choices": [{"message": {"role": "assistant", "content": "yo"}}]},
        },
        "clawviz": {"episode_id": "direct"},
    }
    f = tmp_path / "direct.jsonl"
    f.write_bytes(orjson.dumps(rec) + b"\n")
    url = fresh_url(tmp_path, "d")
    with Session(get_engine(url)) as s:
        ingest_paths([f], session=s)
        (call,) = load_calls(s, "direct")
    blob = repr(call).encode()
    blob += b"".join(p.read_bytes() for p in tmp_path.glob("d.db*"))
    for secret in ("sec-direct-0201", "sec-direct-0202", "sec-direct-0203"):
        assert secret.encode() not in blob, secret
