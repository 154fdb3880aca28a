"""Before/after workspace diff: which files an attempt added, removed or changed, and how.

Pure data: the Workspace page renders what these functions return. Renames are not detected
(a renamed file is one removal plus one addition), and symlinks are compared by their target,
never followed.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from pygments.lexers import get_lexer_for_filename
from pygments.util import ClassNotFound

Status = Literal["added", "removed", "modified", "unchanged", "binary"]
STATUSES: tuple[Status, ...] = ("added", "removed", "modified", "binary", "unchanged")
STATUS_MARKER: dict[str, str] = {
    "added": "A",
    "removed": "D",
    "modified": "M",
    "binary": "B",
    "unchanged": "·",
}
DEFAULT_MAX_BYTES = 200_000
_SNIFF = 8192


@dataclass
class FileSide:
    """One side (before or after) of a file: where it is and what kind of content it holds."""

    path: Path
    size: int
    is_binary: bool
    is_link: bool = False
    link_target: str | None = None


@dataclass
class FileEntry:
    """One file path present in either workspace, with its diff status."""

    path: str
    """POSIX path relative to the workspace root."""
    status: Status
    before: FileSide | None = None
    after: FileSide | None = None
    lines_added: int = 0
    lines_removed: int = 0

    @property
    def marker(self) -> str:
        return STATUS_MARKER[self.status]

    @property
    def is_binary(self) -> bool:
        return any(s is not None and s.is_binary for s in (self.before, self.after))


@dataclass
class WorkspaceDiff:
    """All file entries of a before/after comparison, sorted by path, with status counts."""

    entries: list[FileEntry]
    counts: dict[str, int] = field(default_factory=dict)

    def entry(self, path: str) -> FileEntry | None:
        return next((e for e in self.entries if e.path == path), None)

    @property
    def changed(self) -> list[FileEntry]:
        return [e for e in self.entries if e.status != "unchanged"]


@dataclass
class SideBySideRow:
    """One aligned row of a side-by-side diff; kind is equal | replace | delete | insert."""

    kind: str
    left_no: int | None
    left: str
    right_no: int | None
    right: str


@dataclass
class FileDiff:
    """A rendered diff of one file, ready for display."""

    path: str
    status: Status
    mode: Literal["unified", "side_by_side"]
    language: str
    """Language name for highlighting each side (a Pygments alias)."""
    unified: str = ""
    rows: list[SideBySideRow] = field(default_factory=list)
    before_text: str | None = None
    after_text: str | None = None
    truncated: bool = False
    notice: str = ""
    binary: bool = False


def is_binary_bytes(data: bytes) -> bool:
    """A file is binary when its head has a NUL byte or is not valid UTF-8."""
    head = data[:_SNIFF]
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the sniff boundary is still text.
        return exc.start < len(head) - 4
    return False


def _side(path: Path) -> FileSide:
    if path.is_symlink():
        target = os.readlink(path)
        return FileSide(path, len(target), False, is_link=True, link_target=target)
    with path.open("rb") as fh:
        head = fh.read(_SNIFF)
    return FileSide(path, path.stat().st_size, is_binary_bytes(head))


def _walk(root: Path) -> dict[str, Path]:
    """Every file and symlink under root, keyed by POSIX relative path (links not followed)."""
    out: dict[str, Path] = {}
    if not root.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            full = base / name
            out[PurePosixPath(full.relative_to(root).as_posix()).as_posix()] = full
    return out


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 16):
            h.update(chunk)
    return h.hexdigest()


def _same(a: FileSide, b: FileSide) -> bool:
    if a.is_link or b.is_link:
        return a.is_link == b.is_link and a.link_target == b.link_target
    return a.size == b.size and _digest(a.path) == _digest(b.path)


def _read_text(side: FileSide, max_bytes: int) -> tuple[str, bool]:
    """Return the side's text (at most max_bytes) and whether it was cut."""
    if side.is_link:
        return f"symlink -> {side.link_target}\n", False
    with side.path.open("rb") as fh:
        data = fh.read(max_bytes + 1)
    cut = len(data) > max_bytes
    return data[:max_bytes].decode("utf-8", "replace"), cut


def _line_counts(before: FileSide, after: FileSide) -> tuple[int, int]:
    a, _ = _read_text(before, DEFAULT_MAX_BYTES)
    b, _ = _read_text(after, DEFAULT_MAX_BYTES)
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, a.splitlines(), b.splitlines(), autojunk=False
    ).get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def diff_workspaces(before: str | Path | None, after: str | Path | None) -> WorkspaceDiff:
    """Compare two workspace folders file by file (a missing side counts as empty)."""
    b_files = _walk(Path(before)) if before else {}
    a_files = _walk(Path(after)) if after else {}
    entries: list[FileEntry] = []
    for rel in sorted(set(b_files) | set(a_files)):
        bs = _side(b_files[rel]) if rel in b_files else None
        as_ = _side(a_files[rel]) if rel in a_files else None
        if bs is None:
            entry = FileEntry(rel, "added", None, as_)
        elif as_ is None:
            entry = FileEntry(rel, "removed", bs, None)
        elif _same(bs, as_):
            entry = FileEntry(rel, "unchanged", bs, as_)
        elif bs.is_binary or as_.is_binary:
            entry = FileEntry(rel, "binary", bs, as_)
        else:
            entry = FileEntry(rel, "modified", bs, as_)
            entry.lines_added, entry.lines_removed = _line_counts(bs, as_)
        entries.append(entry)
    counts = {s: 0 for s in STATUSES}
    for e in entries:
        counts[e.status] += 1
    return WorkspaceDiff(entries, counts)


def highlight_lexer_name(filename: str) -> str:
    """The Pygments alias for a file name (e.g. 'python', 'json'); 'text' when unknown."""
    name = PurePosixPath(filename).name
    if name.lower().endswith((".jsonl", ".ndjson")):
        return "json"
    try:
        lexer = get_lexer_for_filename(name)
    except ClassNotFound:
        return "text"
    return lexer.aliases[0] if lexer.aliases else "text"


def pretty_text(filename: str, text: str) -> str:
    """JSON re-indented for reading (JSONL line by line); anything else unchanged."""
    lower = filename.lower()
    if lower.endswith(".json"):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
        except ValueError:
            return text
    if lower.endswith((".jsonl", ".ndjson")):
        out = []
        for line in text.splitlines():
            try:
                out.append(json.dumps(json.loads(line), indent=2, ensure_ascii=False))
            except ValueError:
                out.append(line)
        return "\n".join(out) + "\n"
    return text


def csv_rows(text: str, max_rows: int = 5000) -> list[list[str]]:
    """Parse CSV/TSV text into rows (delimiter sniffed; at most max_rows)."""
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = []
    for i, row in enumerate(csv.reader(io.StringIO(text), dialect)):
        if i >= max_rows:
            break
        rows.append(row)
    return rows


def is_csv(filename: str) -> bool:
    return filename.lower().endswith((".csv", ".tsv"))


def file_diff(
    entry: FileEntry,
    mode: Literal["unified", "side_by_side"] = "unified",
    max_bytes: int = DEFAULT_MAX_BYTES,
    *,
    pretty: bool = True,
    context: int = 3,
) -> FileDiff:
    """Diff one entry as unified text or aligned rows; large sides are cut with a notice."""
    result = FileDiff(entry.path, entry.status, mode, highlight_lexer_name(entry.path))
    if entry.is_binary:
        sizes = " → ".join(
            f"{s.size} bytes" if s else "absent" for s in (entry.before, entry.after)
        )
        result.binary = True
        result.notice = f"Binary file, not shown ({sizes})."
        return result
    texts, cut = [], False
    for side in (entry.before, entry.after):
        if side is None:
            texts.append("")
            continue
        text, was_cut = _read_text(side, max_bytes)
        cut = cut or was_cut
        texts.append(pretty_text(entry.path, text) if pretty and not was_cut else text)
    before_text, after_text = texts
    result.before_text = before_text if entry.before else None
    result.after_text = after_text if entry.after else None
    if cut:
        result.truncated = True
        result.notice = f"File larger than {max_bytes} bytes: only the first {max_bytes} shown."
    a, b = before_text.splitlines(), after_text.splitlines()
    if mode == "unified":
        result.unified = "\n".join(
            difflib.unified_diff(
                a,
                b,
                fromfile=f"before/{entry.path}" if entry.before else "/dev/null",
                tofile=f"after/{entry.path}" if entry.after else "/dev/null",
                n=context,
                lineterm="",
            )
        )
    else:
        result.rows = side_by_side_rows(a, b)
    return result


def side_by_side_rows(a: list[str], b: list[str]) -> list[SideBySideRow]:
    """Align two line lists into rows (replace blocks paired line by line)."""
    rows: list[SideBySideRow] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            li, rj = i1 + k, j1 + k
            left = a[li] if li < i2 else None
            right = b[rj] if rj < j2 else None
            rows.append(
                SideBySideRow(
                    tag,
                    li + 1 if left is not None else None,
                    left or "",
                    rj + 1 if right is not None else None,
                    right or "",
                )
            )
    return rows


@dataclass
class TreeRow:
    """One line of the file tree: a folder (with counts of changes below it) or a file."""

    path: str
    name: str
    depth: int
    is_dir: bool
    status: str
    marker: str
    counts: dict[str, int] = field(default_factory=dict)


def tree_rows(diff: WorkspaceDiff, *, include_unchanged: bool = True) -> list[TreeRow]:
    """Flatten the diff into an indented tree: folders first appear before their files."""
    rows: list[TreeRow] = []
    seen_dirs: set[str] = set()
    dir_counts: dict[str, dict[str, int]] = {}
    for e in diff.entries:
        parts = PurePosixPath(e.path).parts
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            c = dir_counts.setdefault(d, {s: 0 for s in STATUSES})
            c[e.status] += 1
    for e in diff.entries:
        if e.status == "unchanged" and not include_unchanged:
            continue
        parts = PurePosixPath(e.path).parts
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in seen_dirs:
                seen_dirs.add(d)
                c = dir_counts[d]
                changed = sum(v for k, v in c.items() if k != "unchanged")
                rows.append(
                    TreeRow(d, parts[i - 1] + "/", i - 1, True, "changed" if changed else "", "", c)
                )
        rows.append(TreeRow(e.path, parts[-1], len(parts) - 1, False, e.status, e.marker))
    return rows
