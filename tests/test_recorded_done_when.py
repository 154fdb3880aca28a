"""Issue 29's "Done when", as checks on the repository itself: every committed recording has its
reconstruction test, every recording with the harness's own transcripts is in the one-session
test, and docs/DECISIONS.md's table of edit rules is `recon.edits.EDIT_RULES`, row for row.

The folders and files are found by walking `tests/data/recorded/` here, not through the lists
the tests under check build, so a recording those lists miss (a new release's prefix, a new
transcript layout) fails here instead of going untested.
"""

from __future__ import annotations

import re
from pathlib import Path

from clawviz.recon.edits import EDIT_RULES
from tests import (
    test_recorded_claude_code,
    test_recorded_older_openclaw,
    test_recorded_openclaw,
    test_recorded_pi_codex,
    test_sessions,
)
from tests.harness import recorded

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "data" / "recorded"
NOT_TRANSCRIPTS = ("exchanges.jsonl", "server.jsonl", "stream.jsonl")
"""The proxy log, the scripted server's log and Claude Code's `-p` stream output."""


def _recording_folders() -> set[Path]:
    return {p for p in RECORDED.glob("*/*") if p.is_dir()}


def test_every_recording_has_an_expected_file_and_a_reconstruction_test():
    folders = _recording_folders()
    assert len(folders) >= 30
    assert {f for f in folders if not (f / "expected.json").is_file()} == set()
    tested = {
        *test_recorded_claude_code.FOLDERS,
        *test_recorded_pi_codex.FOLDERS,
        *test_recorded_older_openclaw.FOLDERS,
        *(RECORDED / "openclaw-2026.9.6" / n for n in test_recorded_openclaw.RECORDINGS),
    }
    assert folders - tested == set(), "recordings no test_recorded_* module checks"
    assert set(recorded.folders()) == folders  # the self-check and export tests walk these


def _harness_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and re.search(r"\.jsonl(\.gz)?$", p.name)
        and not p.name.startswith(NOT_TRANSCRIPTS)
    )


def test_every_recording_with_transcripts_is_in_the_one_session_test():
    """Wire + transcripts give the wire alone's episodes and SFT rows: checked for every
    recording whose folder holds files the harness wrote (its transcripts, rollouts)."""
    with_files = {f for f in _recording_folders() if _harness_files(f)}
    assert with_files, "no recording holds transcripts"
    assert set(test_sessions.WITH_TRANSCRIPTS) == with_files
    for folder in with_files:
        assert test_sessions._transcripts(folder) == _harness_files(folder), folder


def _decisions_table() -> list[list[str]]:
    text = (ROOT / "docs" / "DECISIONS.md").read_text(encoding="utf-8")
    section = text[text.index("## Edit rules: one list") :]
    section = section[: section.index("\n## ", 1)]
    rows = []
    for line in section.splitlines():
        if line.startswith("| `"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_the_decisions_table_is_the_list_of_edit_rules():
    """One row per rule, in the list's order, no other row: code, name, kind and the recording
    that shows it (the recording's folder or test file, then the calls)."""
    rows = _decisions_table()
    assert [r[0] for r in rows] == [f"`{r.code}`" for r in EDIT_RULES]
    for row, rule in zip(rows, EDIT_RULES, strict=True):
        assert row[1:3] == [rule.name, rule.kind], rule.code
        where, _, calls = rule.recording.partition(" ")
        assert row[3].startswith(f"`{where}`"), rule.code
        assert calls in row[3], rule.code
        # The recording named exists.
        assert (RECORDED / where).is_dir() or (ROOT / where).is_file(), rule.code
