"""Identity from the traffic (issue 29 §3): the harness from what it sends, with the evidence,
and episodes named by the session the traffic carries, never by a file path.

Expected harnesses come from which harness made each recording (its folder,
tests/data/recorded/README.md), and expected session ids from the harness's own files (Claude
Code's transcript name, Codex's rollout `session_meta`, pi's session header), never from clawviz.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.ingest import identity
from clawviz.ingest.transcripts import read_transcript
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import init_db
from clawviz.store.models import CallRow, Episode
from tests.dburl import memory_engine

DATA = Path(__file__).parent / "data"
RECORDED = DATA / "recorded"
HARNESS_OF = {"claude-code": "claude-code", "codex": "codex", "openclaw": "openclaw", "pi": "pi"}


def _made_by(folder: Path) -> str:
    """The harness that made a recording: its `<harness>-<version>` folder."""
    return HARNESS_OF[folder.parent.name.rsplit("-", 1)[0]]


def _wire_logs() -> list[Path]:
    return sorted(RECORDED.glob("*/*/exchanges.jsonl*"))


def _lines(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _sessions_in_harness_files(folder: Path) -> set[str]:
    """The session ids the harness itself wrote down for this run (empty: it wrote none)."""
    harness = _made_by(folder)
    if harness == "claude-code":
        # Every transcript record names its session: the main one, and the separate sessions
        # of the Warmup runs Claude Code 2.0 starts in other processes.
        ids = set()
        for f in folder.glob("transcripts/**/*.jsonl"):
            for line in f.read_text().splitlines():
                sid = json.loads(line).get("sessionId")
                if sid:
                    ids.add(sid)
        return ids
    if harness == "codex":
        meta = json.loads((folder / "rollout.jsonl").read_text().splitlines()[0])
        return {meta["payload"]["id"]}
    if harness == "pi":
        header = json.loads((folder / "session.jsonl").read_text().splitlines()[0])
        # pi sends its session id only on the Responses API (`session_id` header).
        return {header["id"]} if folder.name == "responses-api" else set()
    return set()  # OpenClaw sends no session id on the wire


def _ingest(paths: list[Path]) -> tuple[list[Episode], list[CallRow]]:
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as session:
        ingest_paths(paths, session=session)
        session.commit()
        return list(session.exec(select(Episode))), list(session.exec(select(CallRow)))


@pytest.mark.parametrize(
    "log", _wire_logs(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}"
)
def test_raw_wire_log_names_its_harness_and_session(tmp_path, log):
    """A recording with its recorder metadata stripped (the shape claude-trace writes): the
    episodes of the sessions the harness wrote down (one, with no session: named by harness and
    first request time), all of the harness that made it, with the evidence."""
    raw = tmp_path / "capture" / "exchanges.jsonl"
    raw.parent.mkdir()
    records = _lines(log)
    for r in records:
        r.pop("clawviz", None)
    raw.write_text("".join(json.dumps(r) + "\n" for r in records))

    episodes, calls = _ingest([raw])
    harness = _made_by(log.parent)
    assert {ep.harness for ep in episodes} == {harness}
    for ep in episodes:
        assert str(tmp_path) not in ep.episode_id and "exchanges" not in ep.episode_id
    sessions = _sessions_in_harness_files(log.parent)
    if sessions:
        # Calls with no session of their own (count_tokens) join the file's one named session;
        # in a file naming several they stay in a fallback episode of non-model calls only.
        with_model = {c.episode_id for c in calls if c.endpoint != "non_model"}
        assert with_model == sessions
    else:
        t0 = records[0]["request"]["timestamp"]
        assert [ep.episode_id for ep in episodes] == [f"{harness}-{identity._iso(t0)}"]
    # No call is given another harness; model calls say why they got theirs.
    assert {c.harness for c in calls} <= {harness, None}
    model = [c for c in calls if c.endpoint != "non_model" and c.harness is not None]
    assert model
    for c in model:
        assert json.loads(c.extra_json)["harness_evidence"]
    # The file and line stay visible as the source.
    assert {c.source_file for c in calls} == {str(raw)}
    assert sorted(c.line for c in calls) == list(range(1, len(records) + 1))


def test_recorder_metadata_wins_and_says_so():
    log = RECORDED / "openclaw-2026.9.6" / "yield-heartbeat" / "exchanges.jsonl.gz"
    episodes, calls = _ingest([log])
    (ep,) = episodes
    assert ep.episode_id == "openclaw-yield-heartbeat" and ep.harness == "openclaw"
    evidence = {json.loads(c.extra_json).get("harness_evidence") for c in calls}
    assert evidence == {"recorder metadata clawviz.harness"}


@pytest.mark.parametrize(
    ("headers", "body", "harness", "evidence"),
    [
        (
            {"User-Agent": "OpenAI/JS 7.15.0"},
            {
                "messages": [
                    {
                        "role": "system",
                        "content": "You are a personal assistant running "
                        "inside OpenClaw.\n## Tooling",
                    }
                ]
            },
            "openclaw",
            'system prompt contains "You are a personal assistant running inside OpenClaw."',
        ),
        (
            {"User-Agent": "OpenAI/JS 6.26.0", "session_id": "s"},
            {
                "input": [
                    {
                        "role": "system",
                        "content": "You are an expert coding assistant "
                        "operating inside pi, a coding agent harness.",
                    }
                ]
            },
            "pi",
            'system prompt contains "operating inside pi, a coding agent harness"',
        ),
        (
            {"user-agent": "claude-cli/2.0.31 (external, cli)"},
            {"messages": [{"role": "user", "content": "quota"}]},
            "claude-code",
            'user-agent "claude-cli/2.0.31 (external, cli)" contains "claude-cli/"',
        ),
        (
            {"originator": "codex_exec"},
            {"input": []},
            "codex",
            "header originator: codex_exec",
        ),
        (
            {"User-Agent": "OpenAI/JS 6.7.0"},
            {"tools": [{"type": "function", "function": {"name": "sessions_spawn"}}]},
            "openclaw",
            "tool sessions_spawn defined",
        ),
        ({"User-Agent": "OpenAI/JS 6.7.0"}, {"messages": []}, None, None),
    ],
)
def test_wire_markers(headers, body, harness, evidence):
    assert identity.wire_harness(headers, body) == (harness, evidence)


def _session_files() -> list[Path]:
    return sorted(
        [*RECORDED.glob("openclaw-*/*/sessions/*.jsonl"), *RECORDED.glob("pi-*/*/session.jsonl")]
    )


@pytest.mark.parametrize("path", _session_files(), ids=lambda p: "/".join(p.parts[-4:]))
def test_session_transcripts_name_the_harness_that_wrote_them(path):
    """OpenClaw writes pi's session format; its files are OpenClaw's (cron runs included)."""
    read = read_transcript(path)
    folder = path.parent.parent if path.parent.name == "sessions" else path.parent
    assert read.harness == _made_by(folder)
    if read.calls:
        assert read.harness_evidence
        assert {c.extra["harness_evidence"] for c in read.calls} == {read.harness_evidence}
        assert {c.harness for c in read.calls} == {read.harness}


def test_openclaw_cron_session_is_openclaw():
    """The isolated cron run of gateway-session carries no sub-agent or runtime marker: its
    `model-snapshot` entry and `[cron:` prompt say OpenClaw (it was labelled pi)."""
    path = next(
        p
        for p in RECORDED.glob("openclaw-2026.9.6/gateway-session/sessions/*.jsonl")
        if "[cron:" in p.read_text()
    )
    read = read_transcript(path)
    assert read.harness == "openclaw"
    assert read.harness_evidence == "session entry custom:model-snapshot"
    episodes, _ = _ingest([path])
    assert {e.harness for e in episodes} == {"openclaw"}


@pytest.mark.parametrize(
    ("user_text", "evidence"),
    [
        ("[cron:job-1 daily] run it", 'user message contains "[cron:"'),
        (
            "[Thu 2026-03-05 10:00 GMT+8] hello",
            'user message starts with OpenClaw\'s date "[Thu 2026-03-05 10:00 GMT+8]"',
        ),
        ("hello", None),
    ],
)
def test_pi_session_markers(user_text, evidence):
    entries = [{"type": "message", "message": {"role": "user", "content": user_text}}]
    got = identity.pi_session_harness("/home/u/s.jsonl", {"cwd": "/home/u"}, entries)
    if evidence is None:
        assert got == ("pi", "pi session format with no OpenClaw marker")
    else:
        assert got == ("openclaw", evidence)


def test_real_pi_fixture_stays_pi():
    """badlogic/pi-mono's own session file (tests/data/transcripts, MIT) is pi's."""
    read = read_transcript(DATA / "transcripts" / "pi-before-compaction.jsonl")
    assert read.harness == "pi"


@pytest.mark.parametrize(
    ("path", "harness"),
    [
        (
            RECORDED
            / "claude-code-2.1.332/session/transcripts/-tmp-rig-claude-code-work"
            / "c1a0de00-0000-4000-8000-00000000c0de.jsonl",
            "claude-code",
        ),
        (RECORDED / "codex-0.171.0/subagent/rollout.jsonl", "codex"),
    ],
)
def test_claude_code_and_codex_transcripts_say_why(path, harness):
    read = read_transcript(path)
    assert read.harness == harness and read.calls and read.harness_evidence
    assert {c.extra["harness_evidence"] for c in read.calls} == {read.harness_evidence}


@pytest.mark.parametrize(
    "log", sorted((DATA / "real_traffic").glob("*.jsonl")), ids=lambda p: p.stem
)
def test_real_traffic_logs_name_their_harness(log):
    """The claude-trace-shaped logs (no recorder metadata) of tests/data/real_traffic: the
    harness of the README's table (`cc-*`: Claude Code, `openclaw-*`: OpenClaw)."""
    harness = {"cc": "claude-code", "openclaw": "openclaw"}[log.stem.split("-")[0]]
    episodes, calls = _ingest([log])
    assert {ep.harness for ep in episodes} == {harness}
    assert {c.harness for c in calls} <= {harness, None}
