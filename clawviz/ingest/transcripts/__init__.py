"""Harness transcripts (FORMATS §4) replayed into calls: OpenClaw / pi and Claude Code sessions,
Codex rollouts.

Each assistant message becomes one call whose request is the context the harness had at that
point; compactions become a summary call plus a new segment. Ingest detects the format by
content with `detect_transcript` and reads a file with `read_transcript`. A parent session file
also reads its sub-agent files (Claude Code `agent-*.jsonl`, OpenClaw sub-agent sessions, see
`links`), whose calls join its episode; such a sub-agent file read by itself loads nothing and
names its parent in `covered_by`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clawviz.ingest.transcripts.claude_code import FORMAT as CLAUDE_CODE_FORMAT
from clawviz.ingest.transcripts.claude_code import (
    MAIN_SYSTEM_MARKER,
    SUBAGENT_SYSTEM_MARKER,
)
from clawviz.ingest.transcripts.codex import FORMAT as CODEX_FORMAT
from clawviz.ingest.transcripts.common import (
    Reject,
    TranscriptRead,
    lines_from_records,
    read_lines,
)
from clawviz.ingest.transcripts.pi import FORMAT as PI_FORMAT

__all__ = [
    "CLAUDE_CODE_FORMAT",
    "CODEX_FORMAT",
    "MAIN_SYSTEM_MARKER",
    "PI_FORMAT",
    "SUBAGENT_SYSTEM_MARKER",
    "TRANSCRIPT_FORMATS",
    "TRANSCRIPT_LIMITS",
    "Reject",
    "TranscriptRead",
    "detect_transcript",
    "read_transcript",
]

TRANSCRIPT_FORMATS = (PI_FORMAT, CLAUDE_CODE_FORMAT, CODEX_FORMAT)
"""Names of the transcript formats of `clawviz.ingest.formats.FORMATS`, in detection order."""

TRANSCRIPT_LIMITS = (
    "This episode was replayed from the harness's own transcript, not recorded by a proxy. "
    "A transcript cannot show: failed calls and retries that never reached it (only the errors "
    "and aborted turns the harness chose to write down appear, as failed calls); calls made "
    "outside the conversation (title and warm-up calls, quota probes, heartbeats, memory "
    "flushes); token ids, logprobs and value estimates; the system prompt, tool definitions "
    "and sampling parameters (Claude Code calls carry a one-line marker system prompt so the "
    "main agent and sub-agents can be told apart); and the exact summary request of a "
    "compaction, which is rebuilt from the summary the harness kept. Request times are "
    "approximate (when the turn started, or the preceding entry's time)."
)
"""What a transcript-sourced episode cannot show; the app displays it beside such episodes."""


def detect_transcript(records: list[dict[str, Any]]) -> str | None:
    """'transcript_pi', 'transcript_claude_code', 'transcript_codex' or None, judged from a
    file's first records: the first transcript format of `formats.FORMATS` that claims them."""
    from clawviz.ingest import formats

    fmt = formats.detect(list(records), kind="transcript")
    return fmt.name if fmt is not None else None


def read_transcript(path: str | Path, *, records: list[Any] | None = None) -> TranscriptRead:
    """Replay one transcript file into calls; bad lines are rejected, the rest load.

    `records`, when given, are the file's parsed lines in order (record i is line i+1; None for
    a line the caller already rejected); otherwise the file is read here.
    """
    if records is None:
        lines, rejects = read_lines(path)
    else:
        lines, rejects = lines_from_records(records)
    from clawviz.ingest import formats

    name = detect_transcript([ln.record for ln in lines[:50]])
    if name is None:
        name = detect_transcript([ln.record for ln in lines])
    fmt = formats.by_name(name) if name is not None else None
    if fmt is not None:
        read: TranscriptRead = fmt.read(path, lines, rejects)
        return read
    reason = "not a transcript: no pi session entries, Claude Code or Codex records found"
    return TranscriptRead(
        calls=[],
        rejects=[(ln.number, reason, ln.raw) for ln in lines] + rejects,
        format="unknown",
    )
