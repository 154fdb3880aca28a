"""The specification the code cites is in the repository, and it says what the code decides.

Comments cite `PIPELINE §N` / `FORMATS §N` (docs/PIPELINE.md, docs/FORMATS.md). Every cited
section must be a heading of that document (`## N. Title`), every reason code the code defines
must be named in docs/PIPELINE.md, and every marker string of `recon/markers.py` quoted in
docs/FORMATS.md, so neither can change without its specification.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = {"PIPELINE": ROOT / "docs" / "PIPELINE.md", "FORMATS": ROOT / "docs" / "FORMATS.md"}

CITATION = re.compile(r"\b(PIPELINE|FORMATS)(?:\.md)? §(\d+)([a-z]?)(?:-(\d+)([a-z]?))?")
HEADING = re.compile(r"^## (\d+[a-z]?)\. \S", re.MULTILINE)


def cited_files() -> list[Path]:
    files = sorted((ROOT / "clawviz").rglob("*.py")) + sorted((ROOT / "pages").glob("*.py"))
    files += [ROOT / "app.py", ROOT / "README.md"]
    files += sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "tests").rglob("*.py"))
    return [f for f in files if f.is_file()]


def sections(doc: str) -> set[str]:
    return set(HEADING.findall(DOCS[doc].read_text(encoding="utf-8")))


def citations() -> list[tuple[str, int, str, list[str]]]:
    """(file, line, document, the sections a citation names) for every citation."""
    out = []
    for f in cited_files():
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for m in CITATION.finditer(line):
                doc, a, a_sub, b, b_sub = m.groups()
                if b is None:
                    names = [a + a_sub]
                else:  # a range such as §2-5: every section from a to b
                    names = [a + a_sub, *(str(k) for k in range(int(a) + 1, int(b))), b + b_sub]
                out.append((str(f.relative_to(ROOT)), n, doc, names))
    return out


def test_the_code_cites_the_specification() -> None:
    # The number of citations found: a broken pattern would find none and pass vacuously.
    found = citations()
    in_code = [c for c in found if c[0].startswith(("clawviz/", "pages/", "app.py"))]
    assert len(in_code) >= 50, len(in_code)
    assert {c[2] for c in in_code} == {"PIPELINE", "FORMATS"}


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_every_cited_section_exists(doc: str) -> None:
    have = sections(doc)
    missing = [
        f"{file}:{line}: {doc} §{name}"
        for file, line, cited_doc, names in citations()
        if cited_doc == doc
        for name in names
        if name not in have
    ]
    assert not missing, f"sections cited but not in docs/{doc}.md (has {sorted(have)}): {missing}"


def _source_codes(path: str, pattern: str) -> set[str]:
    return set(re.findall(pattern, (ROOT / path).read_text(encoding="utf-8")))


def defined_reason_codes() -> set[str]:
    """Every reason code the code defines: the enums and tuples, plus the literal codes the
    pruning, the analysis job and the export write."""
    from clawviz.jobs.analyse import ANALYSIS_ERROR
    from clawviz.recon.matchview import RULE_CODES
    from clawviz.recon.prune import ABNORMAL_CODES
    from clawviz.recon.tokens import DRIFT_KINDS
    from clawviz.types import Failure, ReasonCode, Role

    codes = {*ReasonCode, *Role, *typing.get_args(Failure), *ABNORMAL_CODES, *RULE_CODES}
    codes |= {*DRIFT_KINDS, ANALYSIS_ERROR}
    codes |= _source_codes("clawviz/recon/prune.py", r'Reason\(\s*"([a-z_]+)"')
    codes |= _source_codes("clawviz/recon/prune.py", r'return State\.[A-Z]+, "([a-z_]+)"')
    codes |= _source_codes("clawviz/recon/tree.py", r'return "([a-z_]+)"')
    codes |= _source_codes("clawviz/recon/tree.py", r"rule `([a-z_]+)`")
    codes |= _source_codes("clawviz/recon/tree.py", r'f"([a-z_]+): ')
    codes |= _source_codes("clawviz/recon/classify.py", r"rule `([a-z_]+)`")
    for path in ("clawviz/export/rl.py", "clawviz/export/sft.py"):
        codes |= _source_codes(path, r'Skip\([^()]*?"([a-z_]+)"')
        codes |= _source_codes(path, r'return "([a-z_]+)", f"')
    return {str(c) for c in codes}


def test_every_reason_code_is_in_the_pipeline_spec() -> None:
    codes = defined_reason_codes()
    # The collection itself: codes of every kind are found (a broken pattern finds fewer).
    kinds = ("not_longest", "unattached", "analysis_error", "resume_dropped_tool_calls")
    kinds += ("history_mismatch", "partial_token_ids", "retoken", "aux_memory_flush")
    for known in kinds:
        assert known in codes, known
    text = DOCS["PIPELINE"].read_text(encoding="utf-8")
    missing = sorted(c for c in codes if f"`{c}`" not in text)
    assert not missing, f"reason codes not named in docs/PIPELINE.md: {missing}"


def _literal_runs(pattern: str) -> list[str]:
    """The literal stretches (8 characters or more) of a regular expression."""
    text = re.sub(r"\(\?[:=!]|\(\?[a-z]+\)", "(", pattern)  # group prefixes and inline flags
    # An escaped character (`\.`, `\(`) is literal: hide it from the split, then restore it.
    text = re.sub(r"\\([^A-Za-z0-9])", lambda m: chr(0xE000 + ord(m.group(1))), text)
    runs = re.split(r"\\[A-Za-z]|[\[\]().|*+?{}^$]", text)
    plain = [re.sub("[\ue000-\ue0ff]", lambda m: chr(ord(m.group()) - 0xE000), r) for r in runs]
    return [r.strip() for r in plain if len(r.strip()) >= 8]


def test_every_marker_string_is_quoted_in_the_formats_spec() -> None:
    """docs/FORMATS.md §3 quotes the real marker strings: each literal stretch of every marker
    pattern in `recon/markers.py` (whitespace aside) is in it."""
    from dataclasses import fields

    from clawviz.recon.markers import HARNESS_MARKERS

    doc = re.sub(r"\s+", " ", DOCS["FORMATS"].read_text(encoding="utf-8"))
    checked, missing = 0, []
    for row in HARNESS_MARKERS:
        for f in fields(row):
            if f.name in ("harness", "spawn_tools", "ignore_patterns"):
                continue
            for p in getattr(row, f.name):
                pattern = p[1] if isinstance(p, tuple) else p
                for run in _literal_runs(pattern.pattern):
                    checked += 1
                    if re.sub(r"\s+", " ", run) not in doc:
                        missing.append(f"{row.harness}.{f.name}: {run!r}")
    assert checked > 40, checked
    assert not missing, missing
