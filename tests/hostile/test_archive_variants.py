"""Hostile round 3, archives: variations of the earlier rounds' cases that were not in this repo
(names normalising to one path, UNC and drive paths, link chains through later links, sockets,
zip64 records, lying sizes, pax overrides, hard links of every wrong kind, setuid bits, trailing
garbage after a gzip). Each archive is built here; the expected outcome is the scenario's: a
refusal naming the reason, or (for the harmless ones) exactly the files listed."""

from __future__ import annotations

import gzip
import io
import stat
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest

from clawviz.review.archive import ArchiveError, extract_archive

LNK = stat.S_IFLNK | 0o777


def _zip(path: Path, entries: list[tuple]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, *mode in entries:
            info = zipfile.ZipInfo(name)
            if mode:
                info.create_system, info.external_attr = 3, mode[0] << 16
            zf.writestr(info, data)
    return path


def _tar(path: Path, members: list[tuple]) -> Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name, kind, extra in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            data = extra.pop("data", None)
            for k, v in extra.items():
                setattr(info, k, v)
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


REG, SYM, HARD, DIR = tarfile.REGTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE
ZIPS = {
    "same_path_twice": ([("a/./b", "1"), ("a//b", "2")], "appears twice"),
    "dir_then_file": ([("x/", ""), ("x", "2")], "appears twice"),
    "backslash_dotdot": ([("..\\evil.txt", "1")], "escapes the target folder"),
    "unc_path": ([("//server/share/x", "1")], "absolute path"),
    "drive_path": ([("C:/evil", "1")], "absolute path"),
    "chain_a_b_c_out": (
        [("a", "b", LNK), ("b", "c", LNK), ("c", "../../etc", LNK)],
        "resolves outside",
    ),
    "link_climbs_through_a_later_link": (
        [("l", "sub/..", LNK), ("sub", "..", LNK)],
        "resolves outside",
    ),
    "write_through_a_link": ([("d", ".", LNK), ("d/x", "1")], "written through a link"),
    "socket": ([("s", "", stat.S_IFSOCK | 0o644)], "device, fifo or socket"),
    "fifo": ([("f", "", stat.S_IFIFO | 0o644)], "device, fifo or socket"),
}
TARS = {
    "char_device": ([("null", tarfile.CHRTYPE, {"devmajor": 1, "devminor": 3})], "device"),
    "block_device": ([("sda", tarfile.BLKTYPE, {"devmajor": 8, "devminor": 0})], "device"),
    "hardlink_absolute": ([("h", HARD, {"linkname": "/etc/passwd"})], "absolute path"),
    "hardlink_up": ([("h", HARD, {"linkname": "../../etc/passwd"})], "escapes"),
    "hardlink_through_symlink": (
        [
            ("s", SYM, {"linkname": "."}),
            ("f", REG, {"data": b"x"}),
            ("h", HARD, {"linkname": "s/f"}),
        ],
        "goes through a link",
    ),
    "hardlink_to_symlink": (
        [("s", SYM, {"linkname": "f"}), ("f", REG, {"data": b"x"}), ("h", HARD, {"linkname": "s"})],
        "goes through a link",
    ),
    "hardlink_forward": (
        [("h", HARD, {"linkname": "f"}), ("f", REG, {"data": b"x"})],
        "names no regular file extracted before it",
    ),
    "hardlink_to_dir": (
        [("d", DIR, {"mode": 0o755}), ("h", HARD, {"linkname": "d"})],
        "names no regular file",
    ),
    "hardlink_to_itself": ([("h", HARD, {"linkname": "h"})], "names no regular file"),
    "symlink_loop": (
        [
            ("a", SYM, {"linkname": "b"}),
            ("b", SYM, {"linkname": "a"}),
            ("x", SYM, {"linkname": "a/y"}),
        ],
        "loops",
    ),
    "pax_path_override": (
        [("ok", REG, {"data": b"x", "pax_headers": {"path": "../../e"}})],
        "escapes",
    ),
    "pax_linkpath_override": (
        [("l", SYM, {"linkname": "ok", "pax_headers": {"linkpath": "/etc/shadow"}})],
        "points outside",
    ),
    "dir_and_file_same_name": ([("x", DIR, {"mode": 0o755}), ("x", REG, {"data": b"x"})], "twice"),
}


@pytest.mark.parametrize("name", sorted(ZIPS))
def test_bad_zip_is_refused_with_its_reason(tmp_path, name):
    entries, reason = ZIPS[name]
    arc = _zip(tmp_path / f"{name}.zip", entries)
    target = tmp_path / "out"
    with pytest.raises(ArchiveError, match=reason):
        extract_archive(arc, target)
    assert list(target.iterdir()) == []


@pytest.mark.parametrize("name", sorted(TARS))
def test_bad_tar_is_refused_with_its_reason(tmp_path, name):
    members, reason = TARS[name]
    arc = _tar(tmp_path / f"{name}.tar", members)
    target = tmp_path / "out"
    with pytest.raises(ArchiveError, match=reason):
        extract_archive(arc, target)
    assert list(target.iterdir()) == []


def test_a_size_the_central_directory_lies_about_is_caught(tmp_path):
    arc = _zip(tmp_path / "lie.zip", [("a.bin", b"A" * 100_000)])
    data = bytearray(arc.read_bytes())
    cd = data.rfind(b"PK\x01\x02")
    data[cd + 24 : cd + 28] = struct.pack("<I", 1)  # says 1 byte uncompressed
    arc.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match="unreadable archive"):
        extract_archive(arc, tmp_path / "out")


def test_zip64_records_and_setuid_bits_extract_plainly(tmp_path):
    arc = tmp_path / "z64.zip"
    with zipfile.ZipFile(arc, "w") as zf:
        with zf.open("big.txt", "w", force_zip64=True) as fh:
            fh.write(b"0123456789")
        info = zipfile.ZipInfo("tool")
        info.create_system, info.external_attr = 3, (stat.S_IFREG | 0o4755) << 16
        zf.writestr(info, "#!/bin/sh\n")
    out = tmp_path / "out"
    rep = extract_archive(arc, out)
    assert rep.n_files == 2
    assert (out / "big.txt").read_bytes() == b"0123456789"
    assert not (out / "tool").stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    tar = _tar(tmp_path / "suid.tar", [("tool", REG, {"data": b"#!", "mode": 0o6755})])
    extract_archive(tar, tmp_path / "out2")
    mode = (tmp_path / "out2" / "tool").stat().st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID) and mode & 0o111


def test_garbage_after_a_gzip_stream_is_refused(tmp_path):
    inner = _tar(tmp_path / "in.tar", [("a.txt", REG, {"data": b"hello"})])
    arc = tmp_path / "trailing.tar.gz"
    arc.write_bytes(gzip.compress(inner.read_bytes()) + b"garbage!")
    with pytest.raises(ArchiveError, match="corrupt gzip"):
        extract_archive(arc, tmp_path / "out")
