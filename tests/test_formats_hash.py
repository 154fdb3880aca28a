"""Store keys computed on the fast path equal `canonical.message_hash` on every bundled log."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from clawviz.ingest.exchange import FormatError, MessageCache, parse_exchange
from clawviz.recon.canonical import message_hash

ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted((ROOT / "sample_logs").rglob("*.jsonl")) + sorted(
    (ROOT / "tests" / "data").rglob("*.jsonl")
)


def _exchanges(path: Path):
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict) and isinstance(record.get("request"), dict):
            yield n, record


@pytest.mark.skipif(not LOGS, reason="no bundled logs")
def test_converted_message_keys_equal_message_hash_on_bundled_logs():
    checked = 0
    for path in LOGS:
        cache = MessageCache()
        for n, record in _exchanges(path):
            try:
                p = parse_exchange(
                    record,
                    source_file=path.name,
                    line=n,
                    call_id=str(n),
                    file_episode="x",
                    cache=cache,
                )
            except FormatError:
                continue
            assert p.message_hashes == [message_hash(m) for m in p.call.messages], (path, n)
            checked += len(p.message_hashes)
    assert checked > 100
