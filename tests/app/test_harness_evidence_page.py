"""The Episode page says which evidence named the episode's harness (issue 29 §3).

Two cases: a sample episode whose log carries the recorder's metadata (`clawviz.harness`), and
a raw wire log with that metadata stripped (the shape claude-trace and home-made proxies
write), where only the traffic itself can say it is OpenClaw. The expected harness, evidence
and counts are read from the log files (what each line carries), never from clawviz.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from apphelpers import no_exception, open_page
from sqlmodel import Session

from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import get_engine
from tests.dburl import fresh_url, query

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_logs" / "exchanges" / "openclaw" / "t0001-openclaw-a1.jsonl"
RAW = ROOT / "tests" / "data" / "recorded" / "openclaw-2026.9.6" / "yield-heartbeat"
OPENCLAW_SYSTEM = "You are a personal assistant running inside OpenClaw."
"""The first line of OpenClaw's system prompt, as OpenClaw sends it."""


def _plain(md: str) -> str:
    """A caption's text without the backslashes that keep log text literal."""
    return re.sub(r"\\(.)", r"\1", md)


def _evidence_captions(at) -> list[str]:
    return [_plain(c.value) for c in at.caption if _plain(c.value).startswith("harness: ")]


def _system_text(body: dict) -> str:
    msgs = body.get("messages") or []
    first = msgs[0] if msgs else {}
    content = first.get("content") if first.get("role") == "system" else ""
    if isinstance(content, list):
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content or ""


def test_a_sample_episode_names_the_recorder_metadata(sample_db_url, on_store):
    records = [json.loads(x) for x in SAMPLE.read_text().splitlines() if x.strip()]
    episode = records[0]["clawviz"]["episode_id"]
    assert {r["clawviz"]["harness"] for r in records} == {"openclaw"}
    on_store(sample_db_url)
    at = open_page("pages/episode.py", episode=episode)
    no_exception(at)
    assert _evidence_captions(at) == [
        f"harness: openclaw — from: recorder metadata clawviz.harness "
        f"({len(records)} of {len(records)})"
    ]


@pytest.fixture(scope="module")
def raw_wire(tmp_path_factory) -> tuple[str, list[dict]]:
    folder = tmp_path_factory.mktemp("raw_wire")
    with gzip.open(RAW / "exchanges.jsonl.gz", "rt") as fh:
        records = [json.loads(x) for x in fh if x.strip()]
    for r in records:
        r.pop("clawviz", None)
    (folder / "capture.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    url = fresh_url(folder)
    with Session(get_engine(url)) as s:
        ingest_paths([folder], session=s)
        s.commit()
        ensure_analysis(s)
    return url, records


def test_a_raw_wire_log_names_what_the_traffic_sent(raw_wire, on_store):
    url, records = raw_wire
    ((episode,),) = query(url, "SELECT episode_id FROM episode")
    with_prompt = sum(OPENCLAW_SYSTEM in _system_text(r["request"]["body"]) for r in records)
    assert with_prompt == len(records)  # every request of this log is a model call
    on_store(url)
    at = open_page("pages/episode.py", episode=episode)
    no_exception(at)
    assert _evidence_captions(at) == [
        f'harness: openclaw — from: system prompt contains "{OPENCLAW_SYSTEM}" '
        f"({with_prompt} of {len(records)})"
    ]
    # The facts line names the same harness; no path of the capture names the episode.
    assert "capture" not in episode and "openclaw" in episode


ONE_SESSION = RAW.parents[1] / "openclaw-2026.8.2" / "heartbeat-after-compaction"


@pytest.fixture(scope="module")
def one_session(tmp_path_factory) -> tuple[str, str, str]:
    """The recording's wire log and OpenClaw's own transcript of the run, loaded together."""
    folder = tmp_path_factory.mktemp("one_session")
    shutil.copy(ONE_SESSION / "exchanges.jsonl.gz", folder / "exchanges.jsonl.gz")
    (transcript,) = sorted((ONE_SESSION / "sessions").glob("*.jsonl"))
    shutil.copy(transcript, folder / transcript.name)
    with gzip.open(ONE_SESSION / "exchanges.jsonl.gz", "rt") as fh:
        wire_ids = {json.loads(x)["clawviz"]["episode_id"] for x in fh if x.strip()}
    (wire_id,) = wire_ids
    header = json.loads(transcript.read_text().splitlines()[0])
    url = fresh_url(folder)
    with Session(get_engine(url)) as s:
        ingest_paths([folder], session=s)
        s.commit()
        ensure_analysis(s)
    return url, wire_id, header["id"]


def test_wire_and_transcript_of_one_session_name_each_other(one_session, on_store):
    url, wire_id, transcript_id = one_session
    (transcript,) = sorted((ONE_SESSION / "sessions").glob("*.jsonl"))
    entries = [json.loads(x) for x in transcript.read_text().splitlines()]
    assert any(e.get("customType") == "model-snapshot" for e in entries)
    n = sum(
        e["type"] == "compaction"
        or (e["type"] == "message" and e["message"]["role"] == "assistant")
        for e in entries
    )
    on_store(url)
    at = open_page("pages/episode.py", episode=wire_id)
    no_exception(at)
    captions = [_plain(c.value) for c in at.caption]
    assert (
        f"session: transcript {transcript_id} is this episode's cross-check and agrees "
        "(kept calls and main parents)"
    ) in captions
    at = open_page("pages/episode.py", episode=transcript_id)
    no_exception(at)
    captions = [_plain(c.value) for c in at.caption]
    assert any(
        c.startswith(f"session: this transcript is the cross-check of wire episode {wire_id},")
        for c in captions
    ), captions
    # The transcript is OpenClaw's, and says so from its own entries; every replayed call (one
    # per assistant message, one per compaction's summary request) carries that evidence.
    (line,) = _evidence_captions(at)
    assert line == f"harness: openclaw — from: session entry custom:model-snapshot ({n} of {n})"
