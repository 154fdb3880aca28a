"""Compressed texts in the SQLite store: stored as BLOBs, read back unchanged; old rows read."""

from __future__ import annotations

import copy
import zlib

import orjson
import pytest
import zstandard
from sqlmodel import Session, select
from test_formats_fixtures import anthropic_record, claude_code_episode, openai_record, user

from clawviz.ingest.exchange import parse_exchange
from clawviz.store import calls as store
from clawviz.store.db import get_engine
from clawviz.store.models import Blob, CallRow, MessageRow, Source
from tests.dburl import fresh_url


@pytest.fixture
def session(tmp_path):
    engine = get_engine(fresh_url(tmp_path, "pack"))
    with Session(engine) as s:
        yield s


def _parse(records, prefix="f"):
    return [
        parse_exchange(
            copy.deepcopy(r),
            source_file=f"{prefix}.jsonl",
            line=i + 1,
            call_id=f"{prefix}:{i + 1}",
            file_episode=prefix,
        )
        for i, r in enumerate(records)
    ]


def _source(session, name="f.jsonl"):
    src = Source(path=name, sha256=name, format="exchange")
    session.add(src)
    session.flush()
    return src


def _long_episode():
    """A Claude Code episode whose texts are long enough to be compressed."""
    long_text = "the quick brown fox jumps over the lazy dog\n" * 40
    records = claude_code_episode()
    records[0]["request"]["body"]["messages"][0]["content"] = long_text
    return records, long_text


@pytest.mark.sqlite_only
def test_large_raw_responses_are_compressed_small_ones_stay_plain(session):
    records, _ = _long_episode()
    records.append(openai_record([user("hi")]))
    parsed = _parse(records)
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    kinds = set()
    for p in parsed:
        row = session.get(CallRow, p.call.call_id)
        if len(p.raw_response) >= store.PACK_MIN:
            assert isinstance(row.raw_response, bytes)
            assert len(row.raw_response) < len(p.raw_response)
        else:
            assert row.raw_response == p.raw_response
        kinds.add(type(row.raw_response))
        assert store.unpack_text(row.raw_response) == p.raw_response
    assert kinds == {str, bytes}
    assert store.unpack_text(None) is None


@pytest.mark.sqlite_only
def test_message_rows_pack_both_forms_in_one_stream(session):
    records, long_text = _long_episode()
    parsed = _parse(records)
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    for p in parsed:
        for h, msg, raw in zip(p.message_hashes, p.call.messages, p.raw_messages, strict=True):
            row = session.get(MessageRow, h)
            assert isinstance(row.canonical_json, bytes) and row.raw_json == b""
            canonical_json, raw_json = store.message_texts(row)
            assert orjson.loads(canonical_json) == msg
            assert orjson.loads(raw_json) == raw
            assert row.size_bytes == len(raw_json.encode())
    first = session.get(MessageRow, parsed[0].message_hashes[0])
    assert len(first.canonical_json) < len(long_text)


def test_compressed_store_round_trips_calls_and_raw_requests(session):
    records, long_text = _long_episode()
    parsed = _parse(records)
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    loaded = store.load_calls(session, parsed[0].call.episode_id)
    assert [c.messages for c in loaded] == [p.call.messages for p in parsed]
    assert [c.system for c in loaded] == [p.call.system for p in parsed]
    assert loaded[0].messages[0]["content"][0]["text"] == long_text
    for p, rec in zip(parsed, records, strict=True):
        assert store.raw_request(session, p.call.call_id) == rec["request"]["body"]
    # The system prompt is a blob, read back unchanged whether compressed or not.
    row = session.get(CallRow, parsed[0].call.call_id)
    blob = session.get(Blob, row.system_hash)
    assert orjson.loads(store.unpack_text(blob.text)) == records[0]["request"]["body"]["system"]


@pytest.mark.sqlite_only  # on PostgreSQL every packed value is a zstd frame (bytea, 0007)
def test_rows_written_as_plain_text_still_read(session):
    """A store written before compression reads the same."""
    records, _ = _long_episode()
    parsed = _parse(records)
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    packed_calls = store.load_calls(session, parsed[0].call.episode_id)
    packed_raw = store.raw_request(session, "f:3")
    for row in session.exec(select(MessageRow)).all():
        canonical_json, raw_json = store.message_texts(row)
        row.canonical_json, row.raw_json = canonical_json, raw_json
        session.add(row)
    for row in session.exec(select(CallRow)).all():
        row.raw_response = store.unpack_text(row.raw_response)
        row.message_hashes = store.unpack_text(row.message_hashes)
        session.add(row)
    for row in session.exec(select(Blob)).all():
        row.text = store.unpack_text(row.text)
        session.add(row)
    session.commit()
    session.expire_all()
    assert all(isinstance(r.canonical_json, str) for r in session.exec(select(MessageRow)))
    assert store.load_calls(session, parsed[0].call.episode_id) == packed_calls
    assert store.raw_request(session, "f:3") == packed_raw


@pytest.mark.sqlite_only
def test_new_texts_are_zstd_frames_and_zlib_rows_of_older_stores_still_read(session):
    """Rows compressed with zlib (stores written before zstd) read exactly like zstd rows."""
    records, long_text = _long_episode()
    parsed = _parse(records)
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    zstd_calls = store.load_calls(session, parsed[0].call.episode_id)
    zstd_raw = [store.raw_request(session, p.call.call_id) for p in parsed]
    first = session.get(MessageRow, parsed[0].message_hashes[0])
    assert first.canonical_json[:4] == b"\x28\xb5\x2f\xfd"  # the zstd frame magic

    def to_zlib(value):
        if not isinstance(value, bytes) or not value:
            return value
        # Decompressed with the zstandard package itself, not the code under test.
        plain = zstandard.ZstdDecompressor().decompress(value)
        return zlib.compress(plain, 1)

    n = 0
    for row in session.exec(select(MessageRow)).all():
        row.canonical_json = to_zlib(row.canonical_json)
        n += isinstance(row.canonical_json, bytes)
        session.add(row)
    for row in session.exec(select(CallRow)).all():
        row.raw_response = to_zlib(row.raw_response)
        row.message_hashes = to_zlib(row.message_hashes)
        session.add(row)
    for row in session.exec(select(Blob)).all():
        row.text = to_zlib(row.text)
        session.add(row)
    session.commit()
    session.expire_all()
    assert n > 0
    assert session.get(MessageRow, parsed[0].message_hashes[0]).canonical_json[:1] == b"\x78"
    assert store.load_calls(session, parsed[0].call.episode_id) == zstd_calls
    assert [store.raw_request(session, p.call.call_id) for p in parsed] == zstd_raw
    assert zstd_calls[0].messages[0]["content"][0]["text"] == long_text


@pytest.mark.sqlite_only
def test_packer_writes_plain_text_when_the_database_is_not_sqlite(session):
    pack = store._Packer(session)
    assert pack.on
    data = b"x" * (store.PACK_MIN * 4)
    assert store.decompress(pack.text(data)) == data
    pack.on = False
    assert pack.text(data) == data.decode()
    assert pack.message(b'{"a":1}', b'{"b":2}') == ('{"a":1}', '{"b":2}')


@pytest.mark.sqlite_only
def test_same_raw_and_canonical_form_is_stored_once(session):
    records = [anthropic_record([user("plain text " * 40)])]
    parsed = _parse(records)
    # Internal-shape messages as wire messages: the raw form equals the canonical one.
    parsed[0].raw_messages = list(parsed[0].call.messages)
    store.write_parsed(session, parsed, _source(session))
    session.commit()
    row = session.get(MessageRow, parsed[0].message_hashes[0])
    canonical, _, rest = store.decompress(row.canonical_json).partition(b"\n")
    assert rest == b""
    assert store.message_texts(row) == (canonical.decode(), canonical.decode())


def test_seen_hashes_known_is_the_live_set_across_clear():
    seen = store.SeenHashes(limit=2)
    known = seen.known
    assert seen.add_new("a") and "a" in known
    assert not seen.add_new("a")
    seen.add_new("b")
    seen.add_new("c")  # over the limit: the set is emptied, then "c" recorded
    assert known is seen.known and known == {"c"}


def test_recent_blobs_hash_is_the_sha256_of_the_bytes_however_often_they_repeat():
    import hashlib

    recent = store._RecentBlobs(n=2)
    values = [b'{"t":1}', b'{"t":1.0}', b'{"t":true}', b'{"t":1}', b'{"t":1.0}', b'{"t":1}']
    for v in values:
        assert recent.hash(v) == hashlib.sha256(v).hexdigest()
    assert len(recent.items) == 2
