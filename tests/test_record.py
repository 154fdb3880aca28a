"""`clawviz record`: real SDK clients through the proxy to a scripted server, and the log."""

from __future__ import annotations

import concurrent.futures
import json

import anthropic
import openai
import orjson
import pytest
from record_support import LoopThread, Scripted, read_log

from tests.dburl import fresh_url

SECRET = "sk-test-SECRET-7f3a9c"


@pytest.fixture()
def rig(tmp_path):
    lt = LoopThread()
    scripted = Scripted()
    port = lt.start_scripted(scripted)
    out = tmp_path / "log"
    proxy = lt.start_proxy(f"http://127.0.0.1:{port}", str(out))
    yield lt, scripted, proxy, out
    if not proxy.fut.done():
        proxy.stop()
    lt.close()


def whole_lines(out):
    for p in out.glob("*.jsonl"):
        data = p.read_bytes()
        assert data.endswith(b"\n")
        for line in data.splitlines():
            orjson.loads(line)


def test_openai_sdk_streamed_and_not(rig):
    lt, scripted, proxy, out = rig
    client = openai.OpenAI(base_url=f"{proxy.url}/ep/ep-oa/t/task_1/h/sdk/a/2/v1", api_key=SECRET)
    msgs = [{"role": "user", "content": "hello there"}]
    plain = client.chat.completions.create(model="scripted-1", messages=msgs)
    assert plain.choices[0].message.content == "echo: hello there"
    stream = client.chat.completions.create(model="scripted-1", messages=msgs, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "echo: hello there "
    proxy.stop()

    log = read_log(out)
    assert list(log) == ["ep-oa.jsonl"]
    lines = log["ep-oa.jsonl"]
    assert [r["clawviz"]["seq"] for r in lines] == [0, 1]
    for rec, got in zip(lines, scripted.received, strict=True):
        # The server saw the path without the /ep/ prefix; the log names that URL and body.
        assert got["path"] == "/v1/chat/completions"
        assert rec["request"]["url"] == f"{proxy.upstream}/v1/chat/completions"
        assert rec["request"]["method"] == "POST"
        assert rec["request"]["body"] == json.loads(got["body"])
        assert got["headers"]["Authorization"] == f"Bearer {SECRET}"
        assert rec["request"]["headers"]["Authorization"] == "[redacted]"
        assert rec["request"]["headers"]["User-Agent"] == got["headers"]["User-Agent"]
        cz = rec["clawviz"]
        assert (cz["episode_id"], cz["task_id"], cz["harness"], cz["attempt"]) == (
            "ep-oa",
            "task_1",
            "sdk",
            2,
        )
        assert cz["delivered"] is True
        assert 0 <= cz["t_headers"] <= cz["t_first_byte"] <= cz["t_last_byte"]
        assert rec["request"]["timestamp"] <= rec["response"]["timestamp"]
        assert rec["response"]["status_code"] == 200
    assert lines[0]["response"]["body"] == scripted.direct[0]["response"]["body"]
    assert lines[1]["response"]["body_raw"] == b"".join(scripted.streams[0].events).decode()
    assert lines[1]["response"]["headers"]["Content-Type"] == "text/event-stream"
    whole_lines(out)


def test_anthropic_sdk_streamed_and_not(rig):
    lt, scripted, proxy, out = rig
    client = anthropic.Anthropic(base_url=f"{proxy.url}/ep/ep-an", api_key=SECRET)
    msgs = [{"role": "user", "content": "hi claude"}]
    plain = client.messages.create(model="scripted-claude", max_tokens=50, messages=msgs)
    assert plain.content[0].text == "echo: hi claude"
    with client.messages.stream(model="scripted-claude", max_tokens=50, messages=msgs) as s:
        streamed = "".join(s.text_stream)
        final = s.get_final_message()
    assert streamed == "echo: hi claude "
    assert final.stop_reason == "end_turn"
    proxy.stop()

    lines = read_log(out)["ep-an.jsonl"]
    assert len(lines) == 2 == len(scripted.received)
    for rec, got in zip(lines, scripted.received, strict=True):
        assert got["path"] == "/v1/messages"
        # This SDK version sends the key as x-api-key or as a bearer token.
        carrying = [k for k, v in got["headers"].items() if SECRET in v]
        assert carrying and {k.lower() for k in carrying} <= {"x-api-key", "authorization"}
        assert all(rec["request"]["headers"][k] == "[redacted]" for k in carrying)
        assert SECRET not in json.dumps(rec)
        assert rec["request"]["headers"]["anthropic-version"] == got["headers"]["anthropic-version"]
        assert rec["request"]["body"] == json.loads(got["body"])
    assert lines[0]["response"]["body"]["content"][0]["text"] == "echo: hi claude"
    assert lines[1]["response"]["body_raw"] == b"".join(scripted.streams[0].events).decode()


def test_headers_identity_and_run_file(rig):
    lt, scripted, proxy, out = rig
    import httpx

    with httpx.Client(base_url=proxy.url) as c:
        c.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "a"}]},
            headers={"X-Session-Id": "sess-9", "X-Turn-Type": "side"},
        )
        c.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "b"}]},
            headers={"X-Clawviz-Episode": "ep/with space", "X-Clawviz-Attempt": "4"},
        )
        r = c.get("/v1/models?x=1")
        assert r.json()["data"][0]["id"] == "scripted-1"
        c.post("/v1/chat/completions", json={"model": "m", "messages": []})
    proxy.stop()
    log = read_log(out)
    assert scripted.received[2]["path"] == "/v1/models?x=1"
    assert log["sess-9.jsonl"][0]["clawviz"]["episode_id"] == "sess-9"
    assert log["sess-9.jsonl"][0]["request"]["headers"]["X-Turn-Type"] == "side"
    (odd,) = [n for n in log if n.startswith("ep_with_space-")]
    assert log[odd][0]["clawviz"]["episode_id"] == "ep/with space"
    assert log[odd][0]["clawviz"]["attempt"] == 4
    (run,) = [n for n in log if n.startswith("run-")]
    assert [r["request"]["method"] for r in log[run]] == ["GET", "POST"]
    assert [r["clawviz"]["seq"] for r in log[run]] == [0, 1]
    assert all("episode_id" not in r["clawviz"] for r in log[run])


def test_concurrent_streams(rig):
    lt, scripted, proxy, out = rig
    n = 16

    def one(i):
        client = openai.OpenAI(base_url=f"{proxy.url}/ep/c{i}/v1", api_key=SECRET, max_retries=0)
        s = client.chat.completions.create(
            model="scripted-1",
            messages=[{"role": "user", "content": f"stream {i}"}],
            stream=True,
            extra_headers={"x-script": "slow:20:0.005"},
        )
        return "".join(c.choices[0].delta.content or "" for c in s if c.choices)

    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        texts = list(pool.map(one, range(n)))
    tail = "".join(f"e{k} " for k in range(20))
    assert texts == [f"echo: stream {i} {tail}" for i in range(n)]
    proxy.stop()
    log = read_log(out)
    assert sorted(log) == sorted(f"c{i}.jsonl" for i in range(n))
    by_request = {
        json.loads(st.request_body)["messages"][0]["content"]: st for st in scripted.streams
    }
    for i in range(n):
        (rec,) = log[f"c{i}.jsonl"]
        assert rec["request"]["body"]["messages"][0]["content"] == f"stream {i}"
        assert rec["clawviz"]["delivered"] is True, rec["clawviz"]
        assert rec["response"]["body_raw"] == b"".join(by_request[f"stream {i}"].events).decode()


def test_secrets_never_logged(rig):
    lt, scripted, proxy, out = rig
    import httpx

    tokens = {
        "Authorization": "Bearer tok-auth-11111",
        "x-api-key": "tok-xapi-22222",
        "api-key": "tok-azure-33333",
        "Cookie": "sid=tok-cookie-44444",
        "Proxy-Authorization": "Basic tok-proxy-55555",
    }
    with httpx.Client(base_url=proxy.url) as c:
        c.post("/ep/s/v1/chat/completions", json={"model": "m", "messages": []}, headers=tokens)
        r = c.post(
            "/ep/s/v1/chat/completions",
            json={"model": "m", "messages": []},
            headers={"x-script": "set-cookie"},
        )
        assert "tok-setcookie-66666" in r.headers["set-cookie"]
    proxy.stop()
    got = scripted.received[0]["headers"]
    assert got["Authorization"] == tokens["Authorization"]  # forwarded to the server
    assert got["x-api-key"] == tokens["x-api-key"]
    assert "Proxy-Authorization" not in got  # hop-by-hop: for the proxy only
    blob = b"".join(p.read_bytes() for p in out.rglob("*"))
    for secret in [*(v.split()[-1].split("=")[-1] for v in tokens.values()), "tok-setcookie"]:
        assert secret.encode() not in blob, secret
    rec = read_log(out)["s.jsonl"]
    assert rec[0]["request"]["headers"]["api-key"] == "[redacted]"
    assert rec[0]["request"]["headers"]["Cookie"] == "[redacted]"
    assert rec[1]["response"]["headers"]["Set-Cookie"] == "[redacted]"


def _store_calls(tmp_path, name, log_path):
    from sqlmodel import Session

    from clawviz.jobs.ingest import ingest_paths
    from clawviz.recon.pipeline import analyse_episode
    from clawviz.store.calls import load_calls
    from clawviz.store.db import get_engine

    with Session(get_engine(fresh_url(tmp_path, name))) as s:
        report = ingest_paths([log_path], session=s)
        assert not report.rejected and not report.errors
        calls = sorted(load_calls(s, "rc"), key=lambda c: c.t_request)
    return calls, analyse_episode(calls, reward=1.0)


def test_log_reconstructs_like_a_direct_record(rig, tmp_path):
    """The proxy's log and the server's own record of the same exchanges ingest to the same
    calls and the same tree, roles and kept path."""
    lt, scripted, proxy, out = rig
    client = openai.OpenAI(
        base_url=f"{proxy.url}/v1",
        api_key=SECRET,
        max_retries=0,
        default_headers={"X-Clawviz-Episode": "rc"},
    )
    sys_msg = {"role": "system", "content": "You are a scripted test agent."}
    history = [sys_msg, {"role": "user", "content": "first"}]
    r = client.chat.completions.create(model="scripted-1", messages=history)
    history += [{"role": "assistant", "content": r.choices[0].message.content}]
    history += [{"role": "user", "content": "second"}]
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(
            model="scripted-1", messages=history, extra_headers={"x-script": "status:500"}
        )
    s = client.chat.completions.create(model="scripted-1", messages=history, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in s if c.choices)
    history += [{"role": "assistant", "content": text}, {"role": "user", "content": "third"}]
    client.chat.completions.create(model="scripted-1", messages=history)
    client.chat.completions.create(
        model="scripted-1",
        messages=[{"role": "user", "content": "Generate a title for: first"}],
    )
    proxy.stop()
    direct = tmp_path / "direct.jsonl"
    direct.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in scripted.direct))
    assert len(scripted.direct) == 5

    via_proxy, a_proxy = _store_calls(tmp_path, "p.db", out)
    baseline, a_direct = _store_calls(tmp_path, "d.db", direct)
    assert len(via_proxy) == len(baseline) == 5
    fields = ("endpoint", "model", "http_status", "failure", "stop_reason", "turn_type")
    for p, d in zip(via_proxy, baseline, strict=True):
        for f in fields:
            assert getattr(p, f) == getattr(d, f), f
        assert p.system == d.system
        assert p.messages == d.messages
        assert p.response == d.response
        assert p.usage == d.usage
    assert [c.failure for c in baseline] == [None, "failed_http", None, None, None]

    def shape(calls, analysis):
        index = {c.call_id: i for i, c in enumerate(calls)}
        out = []
        for c in calls:
            d = analysis.decisions[c.call_id]
            out.append(
                (
                    d.role,
                    d.state,
                    d.reason,
                    index.get(d.parent_call),
                    index.get(d.retry_of),
                    d.depth,
                )
            )
        return out

    assert shape(via_proxy, a_proxy) == shape(baseline, a_direct)
    # What the script made happen: call 2 failed, call 3 re-sent its body, call 4 extends 3.
    assert [(x[3], x[4]) for x in shape(via_proxy, a_proxy)[1:4]] == [(0, None), (0, 1), (2, None)]
    # Same verdict; the evidence texts name calls by their own ids and labels (the proxy's log
    # has seq numbers, the server's record file lines), so the codes are compared.
    assert a_proxy.status == a_direct.status
    assert [r.code for r in a_proxy.reasons] == [r.code for r in a_direct.reasons]


def test_compressed_bodies_pass_as_sent_and_log_decoded(rig):
    import base64
    import gzip

    import httpx

    lt, scripted, proxy, out = rig
    req = {"model": "m", "messages": [{"role": "user", "content": "zipped request"}]}
    packed = gzip.compress(json.dumps(req).encode())
    with httpx.Client(base_url=proxy.url) as c:
        r = c.post(
            "/ep/z/v1/chat/completions",
            content=packed,
            headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
        )
        assert r.json()["choices"][0]["message"]["content"] == "echo: zipped request"
        for enc in ("gzip", "zstd", "x-opaque"):
            with c.stream(
                "POST", "/ep/z/v1/chat/completions", json=req, headers={"x-script": f"encode:{enc}"}
            ) as r:
                assert r.headers["content-encoding"] == enc
                assert b"".join(r.iter_raw()) == scripted.sent_bodies[-1]  # undecoded
    proxy.stop()
    assert scripted.received[0]["body"] == packed  # forwarded compressed, as it came
    recs = read_log(out)["z.jsonl"]
    assert recs[0]["request"]["body"] == req
    assert recs[0]["clawviz"]["decoded"] == {"request": "gzip"}
    for rec, enc in zip(recs[1:3], ("gzip", "zstd"), strict=True):
        assert rec["response"]["body"]["choices"][0]["message"]["content"] == "compressed"
        assert rec["clawviz"]["decoded"] == {"response": enc}
    assert base64.b64decode(recs[3]["response"]["body_base64"]) == scripted.sent_bodies[-1]
    assert recs[3]["clawviz"]["body_encoding"] == {"response": "x-opaque"}


def test_upstream_base_path_and_query_are_kept(rig, tmp_path):
    import httpx

    lt, scripted, proxy, out = rig
    other = lt.start_proxy(proxy.upstream + "/openai/", str(tmp_path / "log2"))
    r = httpx.post(
        f"{other.url}/ep/b/v1/chat/completions?api-version=2024-10-21&x=%2F",
        json={"model": "m", "messages": [{"role": "user", "content": "q"}]},
    )
    other.stop()
    assert r.status_code == 200
    assert (
        scripted.received[-1]["path"] == "/openai/v1/chat/completions?api-version=2024-10-21&x=%2F"
    )
    (rec,) = read_log(tmp_path / "log2")["b.jsonl"]
    assert rec["request"]["url"] == (
        f"{proxy.upstream}/openai/v1/chat/completions?api-version=2024-10-21&x=%2F"
    )


def test_expect_100_continue_is_answered_by_the_proxy(rig):
    import http.client

    lt, scripted, proxy, out = rig
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 5000}]})
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request(
        "POST",
        "/ep/e/v1/chat/completions",
        body=body,
        headers={"Content-Type": "application/json", "Expect": "100-continue"},
    )
    r = conn.getresponse()
    assert r.status == 200 and json.loads(r.read())["choices"][0]["message"]["content"].startswith(
        "echo: xxx"
    )
    conn.close()
    proxy.stop()
    assert "Expect" not in scripted.received[0]["headers"]
    assert read_log(out)["e.jsonl"][0]["request"]["body"] == json.loads(body)
