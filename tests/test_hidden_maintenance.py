"""Rule `hidden_maintenance_turn` (PIPELINE §3): a transcript turn the harness itself recorded
as hidden maintenance is a side turn, not the task's main path.

OpenClaw 2026.8.2 keeps its memory flush in the main session's transcript: the user line
`Continue the OpenClaw runtime event.` (the transcript prompt of a runtime-only run) and the
reply `NO_REPLY`, both `display: false`. Upstream writes `display: false` on every message of a
run with `trigger: "memory"` (`projectAgentHarnessTranscriptMessageForDisplay`, "keep internal
memory-maintenance turns in the audit/model transcript without projecting them into
user-facing chat history"), and on no other assistant message. A hidden *user* message alone is
no evidence: OpenClaw also hides its sub-agents-settled prompt and internal chat sends, and
answers them with a visible reply (recorded `openclaw-2026.9.6/gateway-session`, line 36).

The transcripts here are written by hand in that shape (entries as the recordings
`openclaw-2026.8.2/*/sessions/*.jsonl` have them); the expected roles come from which turn is
which in the script, not from clawviz.
"""

from __future__ import annotations

import json
from pathlib import Path

from clawviz.ingest.transcripts import read_transcript
from clawviz.jobs import analyse as analysis
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.types import HIDDEN_MAINTENANCE

FLUSH_LINE = "Continue the OpenClaw runtime event."


class _Script:
    """Entries of one OpenClaw (pi v3) main session, each the child of the previous one."""

    def __init__(self) -> None:
        self.records: list[dict] = [
            {
                "type": "session",
                "version": 3,
                "id": "hidden-flush-session",
                "timestamp": "2026-12-02T14:00:00.000Z",
                "cwd": "/tmp/ws",
            }
        ]
        self.last: str | None = None
        self.t = 0

    def _add(self, record: dict) -> str:
        self.t += 1
        rid = f"e{len(self.records)}"
        record.update(id=rid, parentId=self.last, timestamp=f"2026-12-02T14:00:{self.t:02d}.000Z")
        self.records.append(record)
        self.last = rid
        return rid

    def user(self, text: str, *, hidden: bool = False, blocks: bool = False) -> str:
        msg: dict = {
            "role": "user",
            "content": [{"type": "text", "text": text}] if blocks else text,
            "timestamp": 1796222640000 + self.t,
        }
        if hidden:
            msg["display"] = False
        return self._add({"type": "message", "message": msg})

    def reply(self, text: str, *, hidden: bool = False) -> str:
        msg: dict = {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "openai-completions",
            "provider": "scripted",
            "model": "scripted-model",
            "usage": {"input": 100, "output": 2, "cacheRead": 0, "cacheWrite": 0},
            "stopReason": "stop",
            "timestamp": 1796222640000 + self.t,
        }
        if hidden:
            msg["display"] = False
        return self._add({"type": "message", "message": msg})

    def flush(self) -> str:
        """OpenClaw 2026.8's memory flush as its transcript keeps it."""
        self.user(FLUSH_LINE, hidden=True, blocks=True)
        return self.reply("NO_REPLY", hidden=True)

    def compaction(self, first_kept: str) -> str:
        return self._add(
            {
                "type": "compaction",
                "summary": "## Decisions\n- ONE was answered; TWO was answered.",
                "firstKeptEntryId": first_kept,
                "tokensBefore": 9000,
            }
        )

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        return path


def _session(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """TASK-ONE; a flush; the settled-helpers prompt (hidden) answered visibly; TASK-TWO; a
    compaction; a flush as the first request on the compacted history; TASK-THREE."""
    s = _Script()
    names: dict[str, str] = {}
    s.user("TASK-ONE: read notes.txt")
    names["one"] = s.reply("notes.txt says hello.")
    names["flush1"] = s.flush()
    s.user(
        "[Subagent Context] Every subagent spawned from this session has now settled.", hidden=True
    )
    names["settle"] = s.reply("Both helpers are done.")
    s.user("TASK-TWO: anything else?")
    names["two"] = s.reply("Nothing else.")
    s.compaction(first_kept=names["two"])
    names["flush2"] = s.flush()
    s.user("TASK-THREE: thank you")
    names["three"] = s.reply("You are welcome.")
    path = s.write(tmp_path / "hidden-flush-session.jsonl")
    lines = {rid: i for i, rid in enumerate((r.get("id") for r in s.records), start=1)}
    return path, {name: f":L{lines[rid]}" for name, rid in names.items()}


def _by_name(calls, names):
    out = {}
    for name, suffix in names.items():
        (call,) = [c for c in calls if c.call_id.endswith(suffix)]
        out[name] = call
    return out


def test_the_reader_names_the_evidence_of_a_hidden_turn_and_only_of_one(tmp_path):
    path, names = _session(tmp_path)
    calls = _by_name(read_transcript(path).calls, names)
    for flush in ("flush1", "flush2"):
        evidence = calls[flush].extra.get(HIDDEN_MAINTENANCE)
        assert evidence and "display: false" in evidence, calls[flush].extra
    # A hidden prompt answered visibly (the settled-helpers notice) is no maintenance turn.
    for name in ("one", "settle", "two", "three"):
        assert HIDDEN_MAINTENANCE not in calls[name].extra, name


def test_a_hidden_flush_is_a_side_turn_and_the_main_path_skips_it(tmp_path):
    path, names = _session(tmp_path)
    read = read_transcript(path)
    calls = _by_name(read.calls, names)
    a = analysis.analyse_episode(read.calls, reward=1.0, settings=DEFAULT_SETTINGS)
    d = {name: a.decisions[c.call_id] for name, c in calls.items()}
    assert {n: x.role for n, x in d.items()} == {
        "one": "main",
        "flush1": "aux_memory_flush",
        "settle": "main",
        "two": "main",
        "flush2": "aux_memory_flush",
        "three": "main",
    }
    assert d["flush1"].role_reason.startswith("hidden maintenance turn: ")
    kept = [n for n, x in d.items() if x.state == "kept"]
    assert kept == ["one", "settle", "two", "three"]
    # The flush right after the compaction is linked to the summary it continues, and the
    # first main call below it starts the compaction's segment.
    summary = d["flush2"].linked_call
    assert summary is not None and a.decisions[summary].role == "aux_summary"
    assert (d["one"].segment, d["two"].segment, d["three"].segment) == (0, 0, 1)
    assert a.n_segments == 2
    assert not [r.code for r in a.reasons if r.code.startswith("unexplained")]


def test_both_halves_of_the_turn_must_be_hidden(tmp_path):
    """A hidden reply to a visible prompt is not the memory-run shape (upstream hides the
    run's prompt too): no evidence, the call stays main."""
    s = _Script()
    s.user("TASK-ONE: read notes.txt")
    s.reply("notes.txt says hello.")
    s.user("TASK-TWO: and now?")
    rid = s.reply("NO_REPLY", hidden=True)
    path = s.write(tmp_path / "half-hidden.jsonl")
    line = next(i for i, r in enumerate(s.records, start=1) if r.get("id") == rid)
    (call,) = [c for c in read_transcript(path).calls if c.call_id.endswith(f":L{line}")]
    assert HIDDEN_MAINTENANCE not in call.extra
    a = analysis.analyse_episode(read_transcript(path).calls, reward=1.0, settings=DEFAULT_SETTINGS)
    assert a.decisions[call.call_id].role == "main"
