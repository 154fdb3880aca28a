"""What the transcript readers share: the read result, line reading with rejects, timestamps,
and the one builder of a replayed call (`transcript_call`, `summary_call`)."""

from __future__ import annotations

import gzip
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from clawviz.types import Call, Endpoint, Failure, Message, Usage

Reject = tuple[int, str, str]
"""(1-based line, reason, raw line) of an entry that could not be loaded."""


@dataclass
class TranscriptRead:
    """The calls replayed from one transcript file, the lines it rejected and its format."""

    calls: list[Call]
    rejects: list[Reject]
    format: str
    harness: str | None = None
    harness_evidence: str | None = None
    """What in the file named the harness (e.g. an OpenClaw marker in a pi-format session)."""
    episode_id: str | None = None
    extra_files: list[str] = field(default_factory=list)
    """Other files read with this one: sub-agent files (Claude Code `agent-*.jsonl`, OpenClaw
    sub-agent sessions) whose calls join this file's episode."""
    rejects_by_file: dict[str, list[Reject]] = field(default_factory=dict)
    """Rejected lines of the `extra_files`, keyed by path (`rejects` is this file's only)."""
    notes: list[str] = field(default_factory=list)
    """Facts worth showing that are not rejects (dangling parent ids, missing kept entries)."""
    covered_by: str | None = None
    """Set when this file is a sub-agent file read with its parent session file (no calls)."""


@dataclass
class Line:
    """One parsed JSON object of a JSONL file with its 1-based line number and raw text."""

    number: int
    record: dict[str, Any]
    raw: str


GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: str | Path) -> bytes:
    """A transcript file's bytes, decompressed when it is gzip (`<session>.jsonl.gz`)."""
    data = Path(path).read_bytes()
    return gzip.decompress(data) if data.startswith(GZIP_MAGIC) else data


def is_session_name(name: str) -> bool:
    """A session file name: `<id>.jsonl` or its gzip form `<id>.jsonl.gz`."""
    return name.endswith((".jsonl", ".jsonl.gz"))


def read_lines(path: str | Path) -> tuple[list[Line], list[Reject]]:
    """Parse every non-blank line of a JSONL file (plain or gzip); bad lines become rejects,
    the rest load. A gzip stream that ends early keeps the whole lines before the break, and
    the reject names the line where it broke."""
    lines: list[Line] = []
    rejects: list[Reject] = []
    try:
        data = read_bytes(path)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        part = _partial_gunzip(Path(path).read_bytes())
        data = part[: part.rfind(b"\n") + 1]
        rejects.append((data.count(b"\n") + 1, f"gzip stream ends early ({exc})", ""))
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for i, raw_bytes in enumerate(data.split(b"\n"), start=1):
        raw_bytes = raw_bytes.rstrip(b"\r")
        if not raw_bytes.strip():
            continue
        raw = raw_bytes.decode("utf-8", errors="replace")
        try:
            record = orjson.loads(raw_bytes)
        except orjson.JSONDecodeError as exc:
            rejects.append((i, f"invalid JSON: {exc}", raw))
            continue
        if not isinstance(record, dict):
            rejects.append((i, f"not a JSON object but {type(record).__name__}", raw))
            continue
        lines.append(Line(i, record, raw))
    return lines, rejects


def _partial_gunzip(data: bytes) -> bytes:
    """What a truncated gzip stream decompresses to before it breaks."""
    d = zlib.decompressobj(wbits=31)
    try:
        return d.decompress(data)
    except zlib.error:
        return b""


def lines_from_records(records: list[Any]) -> tuple[list[Line], list[Reject]]:
    """Lines from already-parsed records, one per file line in order (record i is line i+1)."""
    lines: list[Line] = []
    rejects: list[Reject] = []
    for i, record in enumerate(records, start=1):
        if record is None:
            continue
        if not isinstance(record, dict):
            rejects.append((i, f"not a JSON object but {type(record).__name__}", str(record)))
            continue
        lines.append(Line(i, record, orjson.dumps(record).decode()))
    return lines, rejects


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from an ISO-8601 string or a number (milliseconds if huge)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def text_of(content: Any) -> str:
    """The text of a string or of the text blocks of a block list, joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, dict) and b.get("type") == "text":
                parts.append(str(b.get("text", "")))
        return "".join(parts)
    return ""


USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
"""Where a transcript keeps the four `Usage` counts (Anthropic's names; pi and Codex differ)."""


def usage_of(raw: Any, keys: tuple[str, ...] = USAGE_KEYS) -> Usage:
    """`Usage` from a transcript's usage object, reading the counts under `keys` (in `Usage`
    field order; a key of None is not logged by that format)."""
    u = raw if isinstance(raw, dict) else {}
    counts = [u.get(k) if k else None for k in keys]
    return Usage(*counts)


def transcript_call(
    *,
    call_id: str,
    source_file: str,
    line: int,
    endpoint: Endpoint,
    episode_id: str | None,
    harness: str | None,
    messages: list[Message],
    response: Message | None,
    t_request: float | None,
    t_response: float | None,
    extra: dict[str, Any],
    seq: int | None = None,
    model: str | None = None,
    system: str = "",
    stop_reason: str | None = None,
    usage: Usage | None = None,
    http_status: int | None = 200,
    failure: Failure | None = None,
    error: str | None = None,
) -> Call:
    """One replayed turn as a `Call`: marked `transcript`, its session the episode, delivered
    unless it failed (a transcript holds what the harness received)."""
    return Call(
        call_id=call_id,
        source_file=source_file,
        line=line,
        endpoint=endpoint,
        seq=seq,
        t_request=t_request,
        t_response=t_response,
        http_status=http_status,
        episode_id=episode_id,
        harness=harness,
        model=model,
        session_id=episode_id,
        system=system,
        messages=messages,
        response=response,
        stop_reason=stop_reason,
        usage=usage if usage is not None else Usage(),
        failure=failure,
        error=error,
        delivered=failure is None,
        source_kind="transcript",
        extra=extra,
    )


def summary_call(*, summary: str, **fields: Any) -> Call:
    """A compaction's summary call rebuilt from its transcript: a synthetic request answered
    by the summary text (HTTP 200, `end_turn`)."""
    return transcript_call(
        response={"role": "assistant", "content": [{"type": "text", "text": summary}]},
        stop_reason="end_turn",
        **fields,
    )
