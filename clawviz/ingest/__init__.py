"""Ingest: pure parsers of files into `Call`s (no store; the job that writes the store is
`clawviz.jobs.ingest`). Input formats: docs/FORMATS.md.

`formats` is the one registry of input formats, `exchange` parses one exchange record
(claude-trace shape; Anthropic / Chat Completions / Responses bodies), `sse` reads (and writes)
streamed bodies, `identity` names a call's harness and session, `lines` reads bounded lines,
`results` reads verifier results, `transcripts` replays the harnesses' own session files.

The public names below (`__all__`) are imported from their module on first use
(`clawviz._lazy`); callers outside the stage import them from `clawviz.ingest`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clawviz._lazy import lazy_api

if TYPE_CHECKING:
    from clawviz.ingest.bounded import regular_file_problem
    from clawviz.ingest.exchange import (
        REDACTED,
        FormatError,
        MessageCache,
        is_secret_header,
        parse_exchange,
        redact_url,
    )
    from clawviz.ingest.formats import FORMATS, Format, is_findings_record
    from clawviz.ingest.formats import detect as detect_format
    from clawviz.ingest.identity import traffic_episode_name
    from clawviz.ingest.lines import FINGERPRINT, LineReader, Rejection, file_hashes, file_sha256
    from clawviz.ingest.record import validate_call
    from clawviz.ingest.results import parse_result
    from clawviz.ingest.sse import compact_json, encode_frame, encode_stream
    from clawviz.ingest.transcripts import (
        TRANSCRIPT_LIMITS,
        TranscriptRead,
        detect_transcript,
        read_transcript,
    )

__all__ = [
    "FINGERPRINT",
    "FORMATS",
    "Format",
    "FormatError",
    "LineReader",
    "MessageCache",
    "REDACTED",
    "Rejection",
    "TRANSCRIPT_LIMITS",
    "TranscriptRead",
    "compact_json",
    "detect_format",
    "detect_transcript",
    "encode_frame",
    "encode_stream",
    "file_hashes",
    "file_sha256",
    "is_findings_record",
    "is_secret_header",
    "parse_exchange",
    "parse_result",
    "read_transcript",
    "redact_url",
    "regular_file_problem",
    "traffic_episode_name",
    "validate_call",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "bounded": ("regular_file_problem",),
    "exchange": (
        "FormatError",
        "MessageCache",
        "REDACTED",
        "is_secret_header",
        "parse_exchange",
        "redact_url",
    ),
    "formats": ("FORMATS", "Format", "is_findings_record"),
    "identity": ("traffic_episode_name",),
    "lines": ("FINGERPRINT", "LineReader", "Rejection", "file_hashes", "file_sha256"),
    "record": ("validate_call",),
    "results": ("parse_result",),
    "sse": ("compact_json", "encode_frame", "encode_stream"),
    "transcripts": ("TRANSCRIPT_LIMITS", "TranscriptRead", "detect_transcript", "read_transcript"),
}
"""Which module holds each public name."""

_RENAMED: dict[str, tuple[str, str]] = {
    "detect_format": ("formats", "detect"),
}
"""Public names published under another name than their module's (clashes, clarity)."""

__getattr__, __dir__ = lazy_api(__name__, _HOMES, _RENAMED)
