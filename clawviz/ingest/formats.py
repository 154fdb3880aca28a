"""One registry of input formats (docs/FORMATS-NOTES.md "Files, lines and the store").

Every format ingest recognises is one `Format`: a `name` (the `Source.format` it is stored
under), a `kind` (`record`: a log read line by line, each line one record; `transcript`: a
harness's own session file replayed whole), `detect(records)` judged from a file's first parsed
records, and `read`, the format's reader (`record`: one record; `transcript`: one file's
lines, see `clawviz.ingest.transcripts.common.Line`).

`FORMATS` is the one tuple, in the order detection tries them; both `jobs.ingest._sniff`
and `transcripts.detect_transcript` walk it. A harness transcript format is a module with
module-level `NAME`, `detect` and `read`; adding a harness means adding that module and its
line below. Modules are imported when first used, so sniffing an exchange log imports no
transcript reader.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, Protocol

Kind = Literal["record", "transcript"]


class Format(Protocol):
    """An input format: what it is called, how it is recognised, how it is read."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> Kind: ...

    def detect(self, records: list[Any]) -> bool:
        """True when a file whose first parsed records are `records` is in this format."""
        ...

    def read(self, *args: Any, **kwargs: Any) -> Any:
        """The format's reader (a record for `record` formats, a file for transcripts)."""
        ...


@dataclass(frozen=True)
class ModuleFormat:
    """A format implemented by a module's `detect` and `read` (imported on first use).

    `detect_name` / `read_name` name the module's functions when they are not `detect` /
    `read`. A transcript format never claims a file holding exchange records."""

    name: str
    kind: Kind
    module: str
    detect_name: str = "detect"
    read_name: str = "read"

    def _module(self) -> ModuleType:
        return importlib.import_module(self.module)

    def detect(self, records: list[Any]) -> bool:
        if self.kind == "transcript":
            dicts = [r for r in records if isinstance(r, dict)]
            if not dicts or any("request" in r and "response" in r for r in dicts):
                return False
            records = dicts
        fn: Callable[[list[Any]], bool] = getattr(self._module(), self.detect_name)
        return bool(fn(records))

    def read(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._module(), self.read_name)(*args, **kwargs)


def _any_record(test: Callable[[Any], bool]) -> Callable[[list[Any]], bool]:
    return lambda records: any(test(r) for r in records)


def is_exchange_record(record: Any) -> bool:
    """An exchange-log line (FORMATS §1): an object with a `request` object."""
    return isinstance(record, dict) and isinstance(record.get("request"), dict)


def detect_exchange(records: list[Any]) -> bool:
    return any(is_exchange_record(r) for r in records)


def is_findings_record(record: Any) -> bool:
    """A line of a findings JSONL (what `clawviz ingest` recognises); `review.findings` stores
    them."""
    if not isinstance(record, dict) or not isinstance(record.get("task_id"), str):
        return False
    if isinstance(record.get("findings"), list):
        return True
    return {"area", "severity", "problem"} <= set(record)


def detect_findings(records: list[Any]) -> bool:
    return any(is_findings_record(r) for r in records)


def detect_results(records: list[Any]) -> bool:
    from clawviz.ingest.results import is_result_record

    return any(is_result_record(r) for r in records)


EXCHANGE = ModuleFormat(
    "exchange", "record", "clawviz.ingest.formats", "detect_exchange", "read_exchange"
)
FINDINGS = ModuleFormat(
    "findings", "record", "clawviz.ingest.formats", "detect_findings", "read_findings"
)
RESULTS = ModuleFormat(
    "results", "record", "clawviz.ingest.formats", "detect_results", "read_result"
)
PI = ModuleFormat("transcript_pi", "transcript", "clawviz.ingest.transcripts.pi")
CLAUDE_CODE = ModuleFormat(
    "transcript_claude_code", "transcript", "clawviz.ingest.transcripts.claude_code"
)
CODEX = ModuleFormat("transcript_codex", "transcript", "clawviz.ingest.transcripts.codex")

FORMATS: tuple[Format, ...] = (EXCHANGE, FINDINGS, RESULTS, PI, CLAUDE_CODE, CODEX)
"""Every input format, in detection order: the first whose `detect` is true wins."""


def read_exchange(record: Any, **kwargs: Any) -> Any:
    from clawviz.ingest.exchange import parse_exchange

    return parse_exchange(record, **kwargs)


def read_findings(record: Any) -> dict[str, Any]:
    """One findings line as it is stored (`review.findings.import_records` validates and
    writes it: the store is the review stage's, above this one)."""
    if not is_findings_record(record):
        raise ValueError("not a findings record (task_id and findings expected)")
    return dict(record)


def read_result(record: Any, **kwargs: Any) -> Any:
    from clawviz.ingest.results import parse_result

    return parse_result(record, **kwargs)


def detect(records: list[Any], kind: Kind | None = None) -> Format | None:
    """The first format of `FORMATS` (of `kind`, when given) that claims `records`."""
    for fmt in FORMATS:
        if (kind is None or fmt.kind == kind) and fmt.detect(records):
            return fmt
    return None


def by_name(name: str) -> Format | None:
    """The registered format called `name`."""
    return next((f for f in FORMATS if f.name == name), None)
