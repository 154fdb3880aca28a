"""Workspace diff: statuses, counts, per-file diffs, truncation, pretty JSON, lexer choice."""

from __future__ import annotations

import json
import os

import pytest

from clawviz.review.workspace import (
    csv_rows,
    diff_workspaces,
    file_diff,
    highlight_lexer_name,
    is_binary_bytes,
    pretty_text,
    tree_rows,
)


@pytest.fixture
def pair(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    for root in (before, after):
        (root / "src").mkdir(parents=True)
    (before / "keep.txt").write_text("same\n")
    (after / "keep.txt").write_text("same\n")
    (before / "src" / "main.py").write_text("def f():\n    return 1\n\nprint(f())\n")
    (after / "src" / "main.py").write_text("def f():\n    return 2\n\nprint(f())\nprint('x')\n")
    (before / "gone.md").write_text("# old\n")
    (after / "build").mkdir()
    (after / "build" / "new.json").write_text('{"b":1,"a":[1,2]}')
    (before / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x01")
    (after / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x02")
    (before / "old_name.txt").write_text("moved\n")
    (after / "new_name.txt").write_text("moved\n")
    return before, after


def test_statuses_and_counts(pair):
    d = diff_workspaces(*pair)
    status = {e.path: e.status for e in d.entries}
    assert status == {
        "build/new.json": "added",
        "gone.md": "removed",
        "img.png": "binary",
        "keep.txt": "unchanged",
        "src/main.py": "modified",
        # No rename detection: a rename is one removal plus one addition.
        "old_name.txt": "removed",
        "new_name.txt": "added",
    }
    assert d.counts == {"added": 2, "removed": 2, "modified": 1, "binary": 1, "unchanged": 1}
    main = d.entry("src/main.py")
    assert (main.lines_added, main.lines_removed) == (2, 1)
    assert main.marker == "M" and d.entry("img.png").is_binary
    assert [e.path for e in d.entries] == sorted(status)


def test_same_size_different_content_is_modified(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "f.txt").write_text("abc\n")
    (tmp_path / "b" / "f.txt").write_text("abd\n")
    assert diff_workspaces(tmp_path / "a", tmp_path / "b").entries[0].status == "modified"


def test_missing_side_means_everything_added(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_text("1\n")
    d = diff_workspaces(None, tmp_path / "a")
    assert d.counts["added"] == 1


def test_symlinks_compared_by_target_not_followed(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    os.symlink("/etc/passwd", a / "l")
    os.symlink("/etc/hostname", b / "l")
    entry = diff_workspaces(a, b).entry("l")
    assert entry.status == "modified"
    assert "symlink -> /etc/hostname" in file_diff(entry).unified


def test_unified_diff(pair):
    d = diff_workspaces(*pair)
    fd = file_diff(d.entry("src/main.py"))
    assert fd.language == "python"
    assert "--- before/src/main.py" in fd.unified and "+++ after/src/main.py" in fd.unified
    assert "-    return 1" in fd.unified and "+    return 2" in fd.unified
    assert "+print('x')" in fd.unified
    added = file_diff(d.entry("build/new.json"))
    assert "--- /dev/null" in added.unified


def test_side_by_side_rows(pair):
    d = diff_workspaces(*pair)
    fd = file_diff(d.entry("src/main.py"), mode="side_by_side")
    kinds = [r.kind for r in fd.rows]
    assert kinds == ["equal", "replace", "equal", "equal", "insert"]
    rep = fd.rows[1]
    assert (rep.left_no, rep.left, rep.right_no, rep.right) == (
        2,
        "    return 1",
        2,
        "    return 2",
    )
    ins = fd.rows[-1]
    assert ins.left_no is None and ins.right == "print('x')"


def test_json_pretty_printed_for_reading(pair):
    d = diff_workspaces(*pair)
    fd = file_diff(d.entry("build/new.json"))
    assert '+  "b": 1,' in fd.unified
    assert fd.after_text == json.dumps({"b": 1, "a": [1, 2]}, indent=2) + "\n"
    assert pretty_text("x.jsonl", '{"a":1}\nnot json') == '{\n  "a": 1\n}\nnot json\n'
    assert pretty_text("x.json", "{broken") == "{broken"


def test_binary_not_diffed(pair):
    d = diff_workspaces(*pair)
    fd = file_diff(d.entry("img.png"))
    assert fd.binary and fd.unified == "" and "Binary file" in fd.notice
    assert is_binary_bytes(b"a\x00b") and is_binary_bytes(b"\xff\xfe\xfa junk latin")
    assert not is_binary_bytes("héllo wörld".encode())


def test_large_file_truncated_with_notice(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "big.log").write_text("".join(f"line {i}\n" for i in range(50_000)))
    (b / "big.log").write_text("".join(f"line {i}\n" for i in range(50_001)))
    fd = file_diff(diff_workspaces(a, b).entry("big.log"), max_bytes=1000)
    assert fd.truncated and "1000 bytes" in fd.notice
    assert len(fd.before_text) <= 1000


def test_lexer_names():
    assert highlight_lexer_name("a/b/run.py") == "python"
    assert highlight_lexer_name("data.json") == "json"
    assert highlight_lexer_name("data.jsonl") == "json"
    assert highlight_lexer_name("reward.sh") == "bash"
    assert highlight_lexer_name("notes.md") in ("markdown", "md")
    assert highlight_lexer_name("mystery.zzz") == "text"


def test_csv_rows_sniffs_delimiter():
    assert csv_rows("a,b\n1,2\n") == [["a", "b"], ["1", "2"]]
    assert csv_rows("a\tb\n1\t2\n") == [["a", "b"], ["1", "2"]]
    assert len(csv_rows("x\n" * 100, max_rows=10)) == 10


def test_tree_rows_folders_with_counts(pair):
    rows = tree_rows(diff_workspaces(*pair))
    by_path = {r.path: r for r in rows}
    assert by_path["build"].is_dir and by_path["build"].counts["added"] == 1
    assert by_path["build/new.json"].depth == 1 and by_path["build/new.json"].marker == "A"
    assert [r.path for r in rows].index("src") < [r.path for r in rows].index("src/main.py")
    changed_only = tree_rows(diff_workspaces(*pair), include_unchanged=False)
    assert "keep.txt" not in {r.path for r in changed_only}
