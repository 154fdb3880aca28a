"""Hostile workspace archives and workspace paths: nothing outside the tree is ever read."""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from sqlmodel import Session, select

from clawviz.jobs.ingest import ingest_paths
from clawviz.review import archive as archive_mod
from clawviz.review.archive import ArchiveError, extract_archive, open_workspace
from clawviz.review.workspace import diff_workspaces
from clawviz.store.db import get_engine
from clawviz.store.models import Result
from tests.dburl import fresh_url

SECRET = b"root:$6$not-really-a-hash:19000:0:99999:7:::\n"


def _sym(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info


def _hard(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE
    info.linkname = target
    return info


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, io.BytesIO]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, io.BytesIO(data)


def _chain_archive(path: Path, depth: int = 12, prefix: str = "") -> Path:
    """The issue's archive: `l2 -> .`, `up1 -> l2/..`, `upN -> up(N-1)/..`, then a hard link
    `stolen -> up12/etc/shadow`. Every target is relative and looks inside as text."""
    with tarfile.open(path, "w:gz") as tf:
        tf.addfile(*_file(prefix + "README.md", b"hello\n"))
        tf.addfile(_sym(prefix + "l2", "."))
        tf.addfile(_sym(prefix + "up1", "l2/.."))
        for n in range(2, depth + 1):
            tf.addfile(_sym(f"{prefix}up{n}", f"up{n - 1}/.."))
        tf.addfile(_hard(prefix + "stolen", f"{prefix}up{depth}/etc/shadow"))
    return path


def test_symlink_chain_and_hardlink_to_shadow_is_refused(tmp_path):
    arc = _chain_archive(tmp_path / "after.tar.gz")
    out = tmp_path / "out"
    with pytest.raises(ArchiveError, match=r"after\.tar\.gz: symlink 'up1' -> 'l2/\.\.' points"):
        extract_archive(arc, out)
    # Checked before anything was written.
    assert list(out.iterdir()) == []


def test_chain_deep_inside_is_refused_where_it_leaves(tmp_path):
    # Starting four folders down, the first three hops stay inside; the fifth climbs out.
    arc = _chain_archive(tmp_path / "after.tar.gz", prefix="a/b/c/d/")
    with pytest.raises(ArchiveError, match=r"symlink 'a/b/c/d/up5' -> 'up4/\.\.' points outside"):
        extract_archive(arc, tmp_path / "out")


def test_chain_is_refused_in_zip_too(tmp_path):
    arc = tmp_path / "after.zip"
    with zipfile.ZipFile(arc, "w") as zf:
        for name, target in [("l2", "."), ("up1", "l2/..")]:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777) << 16
            zf.writestr(info, target)
    with pytest.raises(ArchiveError, match=r"symlink 'up1' -> 'l2/\.\.' points outside"):
        extract_archive(arc, tmp_path / "out")


def test_link_made_outside_by_a_later_link_is_refused(tmp_path):
    # `a -> b/..` is inside while b does not exist; `b -> .` later makes `a` the parent.
    arc = tmp_path / "x.tar"
    with tarfile.open(arc, "w") as tf:
        tf.addfile(_sym("a", "b/.."))
        tf.addfile(_sym("b", "."))
    with pytest.raises(ArchiveError, match=r"symlink 'a' -> 'b/\.\.' points outside"):
        extract_archive(arc, tmp_path / "out")


def test_looping_links_are_refused(tmp_path):
    arc = tmp_path / "x.tar"
    with tarfile.open(arc, "w") as tf:
        tf.addfile(_sym("a", "b"))
        tf.addfile(_sym("b", "a"))
    with pytest.raises(ArchiveError, match="loops"):
        extract_archive(arc, tmp_path / "out")


def test_hardlink_only_to_a_regular_file_extracted_before(tmp_path):
    ok = tmp_path / "ok.tar"
    with tarfile.open(ok, "w") as tf:
        tf.addfile(*_file("a.txt", b"data"))
        tf.addfile(_hard("b.txt", "a.txt"))
    out = tmp_path / "ok"
    extract_archive(ok, out)
    assert (out / "b.txt").read_bytes() == b"data" and not (out / "b.txt").is_symlink()

    later = tmp_path / "later.tar"
    with tarfile.open(later, "w") as tf:
        tf.addfile(_hard("b.txt", "a.txt"))
        tf.addfile(*_file("a.txt", b"data"))
    with pytest.raises(ArchiveError, match="names no regular file extracted before it"):
        extract_archive(later, tmp_path / "later")

    via_link = tmp_path / "via.tar"
    with tarfile.open(via_link, "w") as tf:
        d = tarfile.TarInfo("d")
        d.type = tarfile.DIRTYPE
        tf.addfile(d)
        tf.addfile(*_file("d/a.txt", b"data"))
        tf.addfile(_sym("l", "d"))
        tf.addfile(_hard("b.txt", "l/a.txt"))
    with pytest.raises(ArchiveError, match="goes through a link"):
        extract_archive(via_link, tmp_path / "via")


def test_tar_data_filter_is_a_second_line(tmp_path, monkeypatch):
    """With the first line switched off, Python's data filter still stops the chain."""
    monkeypatch.setattr(archive_mod._Tree, "check_links", lambda self: None)
    monkeypatch.setattr(archive_mod._Tree, "hardlink_source", lambda self, n, ln, ex: ln)
    arc = _chain_archive(tmp_path / "after.tar.gz")
    out = tmp_path / "out"
    with pytest.raises(ArchiveError, match="refused"):
        extract_archive(arc, out)
    assert not (out / "stolen").exists()


def test_workspace_diff_never_shows_shadow(tmp_path):
    arc = _chain_archive(tmp_path / "after.tar.gz")
    with pytest.raises(ArchiveError):
        with open_workspace(arc) as folder:
            diff_workspaces(None, folder)


def _results_store(tmp_path: Path, lines: list[dict]) -> tuple[Session, object]:
    folder = tmp_path / "run"
    (folder / "ws_ok").mkdir(parents=True)
    (folder / "ws_ok" / "f.txt").write_text("ok\n")
    path = folder / "results.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    engine = get_engine(fresh_url(tmp_path))
    session = Session(engine)
    report = ingest_paths([path], session=session)
    return session, report


def test_workspace_paths_outside_the_results_folder_are_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink("/etc", tmp_path / "run_link_target")
    lines = [
        {"episode_id": "ep-ok", "reward": 1.0, "workspace_after": "ws_ok"},
        {"episode_id": "ep-etc", "reward": 1.0, "workspace_after": "/etc"},
        {"episode_id": "ep-up", "reward": 1.0, "workspace_before": "../elsewhere"},
        {"episode_id": "ep-obj", "reward": 1.0, "task_id": {"x": 1}},
    ]
    session, report = _results_store(tmp_path, lines)
    with session:
        kept = session.exec(select(Result.episode_id, Result.workspace_after)).all()
    assert kept == [("ep-ok", str((tmp_path / "run" / "ws_ok").resolve()))]
    reasons = {r.line: r.reason for r in report.rejected}
    assert set(reasons) == {2, 3, 4}
    assert reasons[2].startswith("'workspace_after' '/etc' lies outside the results file's folder")
    assert "workspace_roots" in reasons[2]
    assert reasons[3].startswith("'workspace_before' '../elsewhere' lies outside")
    assert reasons[4] == "'task_id' is a dict, not a string"
    assert all(r.file.endswith("results.jsonl") for r in report.rejected)


def test_link_to_etc_inside_the_results_folder_is_refused(tmp_path):
    (tmp_path / "run").mkdir()
    os.symlink("/etc", tmp_path / "run" / "ws_link")
    session, report = _results_store(
        tmp_path, [{"episode_id": "ep", "reward": 1.0, "workspace_after": "ws_link"}]
    )
    session.close()
    assert [r.reason.split(" lies")[0] for r in report.rejected] == ["'workspace_after' 'ws_link'"]


def test_configured_root_allows_a_workspace_elsewhere(tmp_path, monkeypatch):
    other = tmp_path / "shared_ws" / "a1"
    other.mkdir(parents=True)
    monkeypatch.setenv("CLAWVIZ_WORKSPACE_ROOTS", str(tmp_path / "shared_ws"))
    session, report = _results_store(
        tmp_path, [{"episode_id": "ep", "reward": 1.0, "workspace_after": str(other)}]
    )
    with session:
        assert session.exec(select(Result.workspace_after)).all() == [str(other.resolve())]
    assert report.rejected == []
