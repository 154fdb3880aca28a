"""Hostile and ordinary archives: extraction stays inside the target and within the limits."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from clawviz.review.archive import (
    ArchiveError,
    _Budget,
    extract_archive,
    is_archive,
    open_workspace,
)
from clawviz.settings import DEFAULT_SETTINGS


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w:gz"):
    with tarfile.open(path, mode) as tf:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
            else:
                tf.addfile(info)
    return path


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def test_tar_gz_extracts_files_dirs_and_inner_links(tmp_path):
    arc = _tar(
        tmp_path / "ws.tar.gz",
        [_file("a/b.txt", b"hello"), _file("c.json", b"{}"), _link("a/l", "b.txt")],
    )
    out = tmp_path / "out"
    report = extract_archive(arc, out)
    assert (out / "a" / "b.txt").read_bytes() == b"hello"
    assert (out / "a" / "l").is_symlink()
    assert report.n_files == 2 and report.n_links == 1 and report.total_bytes == 7


def test_zip_extracts(tmp_path):
    arc = tmp_path / "ws.zip"
    with zipfile.ZipFile(arc, "w") as zf:
        zf.writestr("d/e.txt", "zip!")
        zf.writestr("d/", "")
    extract_archive(arc, tmp_path / "out")
    assert (tmp_path / "out" / "d" / "e.txt").read_text() == "zip!"


@pytest.mark.parametrize("name", ["../evil.txt", "a/../../evil.txt", "./../evil.txt"])
def test_tar_path_traversal_rejected(tmp_path, name):
    arc = _tar(tmp_path / "bad.tar.gz", [_file("ok.txt"), _file(name)])
    with pytest.raises(ArchiveError, match=r"bad\.tar\.gz.*escapes"):
        extract_archive(arc, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()
    # Checked before writing: not even the good member was written.
    assert not (tmp_path / "out" / "ok.txt").exists()


def test_zip_path_traversal_rejected(tmp_path):
    arc = tmp_path / "bad.zip"
    with zipfile.ZipFile(arc, "w") as zf:
        zf.writestr("../../evil.txt", "pwned")
    with pytest.raises(ArchiveError, match=r"bad\.zip.*'\.\./\.\./evil\.txt'"):
        extract_archive(arc, tmp_path / "out" / "x")
    assert not (tmp_path / "evil.txt").exists()


def test_absolute_paths_rejected(tmp_path):
    arc = _tar(tmp_path / "abs.tar", [_file("/tmp/clawviz-evil.txt")], mode="w")
    with pytest.raises(ArchiveError, match="absolute"):
        extract_archive(arc, tmp_path / "out")
    zarc = tmp_path / "abs.zip"
    with zipfile.ZipFile(zarc, "w") as zf:
        info = zipfile.ZipInfo("x")
        info.filename = "/etc/clawviz-evil"
        zf.writestr(info, "pwned")
    with pytest.raises(ArchiveError, match="absolute"):
        extract_archive(zarc, tmp_path / "out2")


@pytest.mark.parametrize("target", ["../../etc/passwd", "/etc/passwd", "a/../../x"])
def test_tar_symlink_escape_rejected(tmp_path, target):
    arc = _tar(tmp_path / "sym.tgz", [_link("link", target)])
    with pytest.raises(ArchiveError, match="points outside"):
        extract_archive(arc, tmp_path / "out")
    assert not (tmp_path / "out" / "link").exists()


def test_symlink_then_write_through_it_rejected(tmp_path):
    # A link to an inside folder is fine, but writing a later member through it is not.
    arc = _tar(tmp_path / "through.tar.gz", [_link("d", "."), _file("d/f.txt")])
    with pytest.raises(ArchiveError, match="through a link"):
        extract_archive(arc, tmp_path / "out")


def test_tar_hardlink_escape_rejected(tmp_path):
    arc = _tar(tmp_path / "hard.tar.gz", [_link("h", "../../etc/passwd", tarfile.LNKTYPE)])
    with pytest.raises(ArchiveError, match="escapes"):
        extract_archive(arc, tmp_path / "out")


def test_zip_symlink_escape_rejected(tmp_path):
    arc = tmp_path / "sym.zip"
    with zipfile.ZipFile(arc, "w") as zf:
        info = zipfile.ZipInfo("link")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "../../../etc/passwd")
    with pytest.raises(ArchiveError, match="points outside"):
        extract_archive(arc, tmp_path / "out")


def test_device_file_rejected(tmp_path):
    info = tarfile.TarInfo("dev")
    info.type = tarfile.CHRTYPE
    arc = _tar(tmp_path / "dev.tar.gz", [(info, None)])
    with pytest.raises(ArchiveError, match="device"):
        extract_archive(arc, tmp_path / "out")


def test_declared_size_limit(tmp_path):
    arc = _tar(tmp_path / "big.tar.gz", [_file("a", b"0" * 600), _file("b", b"0" * 600)])
    settings = DEFAULT_SETTINGS.with_(archive_max_bytes=1000)
    with pytest.raises(ArchiveError, match="archive_max_bytes"):
        extract_archive(arc, tmp_path / "out", settings=settings)


def test_zip_bomb_lying_about_size_stopped_while_writing(tmp_path):
    arc = tmp_path / "bomb.zip"
    with zipfile.ZipFile(arc, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bomb.txt", b"\0" * 2_000_000)
    # Forge the declared sizes in both headers so the pre-check sees a tiny file.
    raw = bytearray(arc.read_bytes())
    with zipfile.ZipFile(arc) as zf:
        info = zf.infolist()[0]
    local = info.header_offset
    raw[local + 22 : local + 26] = (10).to_bytes(4, "little")
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 24 : central + 28] = (10).to_bytes(4, "little")
    arc.write_bytes(bytes(raw))
    settings = DEFAULT_SETTINGS.with_(archive_max_bytes=100_000)
    with pytest.raises(ArchiveError, match="bomb.zip"):
        extract_archive(arc, tmp_path / "out", settings=settings)
    out = tmp_path / "out" / "bomb.txt"
    assert not out.exists() or out.stat().st_size <= 100_000


def test_budget_counts_real_bytes_not_declared(tmp_path):
    # A member stream longer than its header says is cut off at the limit while writing.
    budget = _Budget(Path("liar.tar"), max_bytes=1000, max_files=10)
    budget.declared("m", 10)
    with pytest.raises(ArchiveError, match="liar.tar.*'m' expands past 1000"):
        budget.write("m", io.BytesIO(b"0" * 200_000), tmp_path / "m")
    assert (tmp_path / "m").stat().st_size <= 1000


def test_highly_compressed_zip_within_declared_limit(tmp_path):
    arc = tmp_path / "bomb2.zip"
    with zipfile.ZipFile(arc, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("z.txt", b"\0" * 5_000_000)
    assert arc.stat().st_size < 20_000
    with pytest.raises(ArchiveError, match="bomb2.zip.*z.txt.*archive_max_bytes"):
        extract_archive(
            arc, tmp_path / "out", settings=DEFAULT_SETTINGS.with_(archive_max_bytes=10**6)
        )


def test_file_count_limit(tmp_path):
    arc = _tar(tmp_path / "many.tar.gz", [_file(f"f{i}") for i in range(30)])
    with pytest.raises(ArchiveError, match="archive_max_files"):
        extract_archive(
            arc, tmp_path / "out", settings=DEFAULT_SETTINGS.with_(archive_max_files=20)
        )


def test_corrupt_archive_clear_error(tmp_path):
    arc = tmp_path / "broken.tar.gz"
    arc.write_bytes(b"not a tarball at all")
    with pytest.raises(ArchiveError, match="broken.tar.gz: unreadable"):
        extract_archive(arc, tmp_path / "out")


def test_open_workspace_folder_and_archive(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    with open_workspace(folder) as p:
        assert p == folder
    arc = _tar(tmp_path / "ws.tgz", [_file("x.txt", b"1")])
    with open_workspace(arc) as p:
        extracted = p
        assert (p / "x.txt").read_text() == "1"
    assert not extracted.exists()
    assert is_archive("a.TAR.GZ") and is_archive("b.zip") and not is_archive("c.txt")
    with pytest.raises(FileNotFoundError):
        with open_workspace(tmp_path / "missing.zip"):
            pass


def test_folder_workspace_obeys_the_archive_limits(tmp_path):
    from clawviz.review.archive import copy_workspace

    settings = DEFAULT_SETTINGS.with_(archive_max_bytes=10_000_000, archive_max_files=50)
    big = tmp_path / "sparse"
    big.mkdir()
    with (big / "huge.bin").open("wb") as fh:
        fh.truncate(1 << 30)  # 1 GB apparent, nothing on disk
    with pytest.raises(ArchiveError, match="archive_max_bytes"):
        copy_workspace(big, tmp_path / "out1", settings=settings)
    assert not (tmp_path / "out1" / "huge.bin").exists()

    many = tmp_path / "many"
    many.mkdir()
    for i in range(60):
        (many / f"f{i}").write_text("x")
    with pytest.raises(ArchiveError, match="archive_max_files"):
        copy_workspace(many, tmp_path / "out2", settings=settings)

    ok = tmp_path / "ok"
    (ok / "d").mkdir(parents=True)
    (ok / "d" / "a.sh").write_text("echo\n")
    (ok / "d" / "a.sh").chmod(0o755)
    (ok / "link").symlink_to("d/a.sh")
    report = copy_workspace(ok, tmp_path / "out3", settings=settings)
    assert (report.n_files, report.n_dirs, report.n_links) == (1, 1, 1)
    assert (tmp_path / "out3" / "link").readlink().as_posix() == "d/a.sh"
    assert (tmp_path / "out3" / "d" / "a.sh").stat().st_mode & 0o111


def test_checker_copies_a_folder_workspace_under_the_limits(tmp_path, monkeypatch):
    from clawviz.review import checker, sandbox

    (tmp_path / "task" / "reward").mkdir(parents=True)
    (tmp_path / "task" / "reward" / "check.py").write_text("print('{\"a\": 1}')\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    with (ws / "huge.bin").open("wb") as fh:
        fh.truncate(1 << 30)
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda python=None: None)
    settings = DEFAULT_SETTINGS.with_(archive_max_bytes=10_000_000)
    with pytest.raises(ArchiveError, match="archive_max_bytes"):
        checker.run_checker(tmp_path / "task", ws, 5, settings=settings)
