"""Safe extraction of workspace archives (.tar.gz / .tgz / .tar / .zip) into a folder.

Archives come from untrusted runs, so every member is checked before anything is written: no
path may leave the target folder, links may only point inside it, device files are refused, and
size / file-count limits hold against both the declared sizes and the bytes actually written.
"""

from __future__ import annotations

import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from clawviz.settings import DEFAULT_SETTINGS, Settings

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
_CHUNK = 1 << 16


class ArchiveError(ValueError):
    """An archive that cannot be extracted safely; the message names archive and member."""


@dataclass
class ExtractReport:
    """What an extraction wrote."""

    n_files: int
    n_dirs: int
    n_links: int
    total_bytes: int


def is_archive(path: str | Path) -> bool:
    """True when the file name has one of the supported archive suffixes."""
    name = str(path).lower()
    return any(name.endswith(s) for s in ARCHIVE_SUFFIXES)


def _safe_relpath(archive: Path, member: str) -> PurePosixPath:
    """Return the member's normalised relative path, or raise if it could escape the target."""
    name = member.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"{archive.name}: member {member!r} has an absolute path")
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(f"{archive.name}: member {member!r} escapes the target folder (..)")
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _link_inside(rel: PurePosixPath, link_target: str) -> bool:
    """True when a link at `rel` pointing to `link_target` stays inside the extraction root."""
    if link_target.startswith("/") or "\\" in link_target:
        return False
    depth = len(rel.parent.parts)
    for part in PurePosixPath(link_target).parts:
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part != ".":
            depth += 1
    return True


class _Budget:
    """Counts entries and bytes against the limits while extracting."""

    def __init__(self, archive: Path, max_bytes: int, max_files: int) -> None:
        self.archive, self.max_bytes, self.max_files = archive, max_bytes, max_files
        self.n_entries = 0
        self.n_declared = 0
        self.n_bytes = 0

    def entry(self, member: str) -> None:
        self.n_entries += 1
        if self.n_entries > self.max_files:
            raise ArchiveError(
                f"{self.archive.name}: more than {self.max_files} entries "
                f"(archive_max_files) at member {member!r}"
            )

    def declared(self, member: str, size: int) -> None:
        self.n_declared += size
        if self.n_declared > self.max_bytes:
            raise ArchiveError(
                f"{self.archive.name}: member {member!r} would bring the total past "
                f"{self.max_bytes} bytes (archive_max_bytes)"
            )

    def write(self, member: str, src: BinaryIO, dest: Path) -> int:
        """Copy src to dest, counting real bytes (declared sizes can lie)."""
        written = 0
        with dest.open("wb") as out:
            while chunk := src.read(_CHUNK):
                written += len(chunk)
                self.n_bytes += len(chunk)
                if self.n_bytes > self.max_bytes:
                    raise ArchiveError(
                        f"{self.archive.name}: member {member!r} expands past "
                        f"{self.max_bytes} bytes (archive_max_bytes)"
                    )
                out.write(chunk)
        return written


def extract_archive(
    archive: str | Path, target: str | Path, *, settings: Settings = DEFAULT_SETTINGS
) -> ExtractReport:
    """Extract `archive` into the existing folder `target`, refusing anything unsafe."""
    archive, target = Path(archive), Path(target)
    target.mkdir(parents=True, exist_ok=True)
    budget = _Budget(archive, int(settings.archive_max_bytes), int(settings.archive_max_files))
    name = archive.name.lower()
    try:
        if name.endswith(".zip"):
            return _extract_zip(archive, target, budget)
        if name.endswith((".tar.gz", ".tgz", ".tar")):
            return _extract_tar(archive, target, budget)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise ArchiveError(f"{archive.name}: unreadable archive ({exc})") from exc
    raise ArchiveError(f"{archive.name}: not a supported archive ({', '.join(ARCHIVE_SUFFIXES)})")


def _prepare(target: Path, rel: PurePosixPath, archive: Path, member: str) -> Path:
    """Return the destination path, refusing to write through an existing link."""
    dest = target.joinpath(*rel.parts)
    probe = target
    for part in rel.parts[:-1]:
        probe = probe / part
        if probe.is_symlink():
            raise ArchiveError(f"{archive.name}: member {member!r} is written through a link")
    if dest.is_symlink():
        raise ArchiveError(f"{archive.name}: member {member!r} overwrites a link")
    return dest


def _extract_tar(archive: Path, target: Path, budget: _Budget) -> ExtractReport:
    n_files = n_dirs = n_links = 0
    with tarfile.open(archive, "r:*") as tf:
        members = []
        # Check every member first so a bad one late in the archive writes nothing.
        for m in tf:
            budget.entry(m.name)
            rel = _safe_relpath(archive, m.name)
            if m.ischr() or m.isblk() or m.isfifo() or m.isdev():
                raise ArchiveError(f"{archive.name}: member {m.name!r} is a device or fifo")
            if m.issym() and not _link_inside(rel, m.linkname):
                raise ArchiveError(
                    f"{archive.name}: symlink {m.name!r} -> {m.linkname!r} points outside"
                )
            if m.islnk():
                _safe_relpath(archive, m.linkname)
            if m.isfile():
                budget.declared(m.name, m.size)
            members.append((m, rel))
        for m, rel in members:
            if rel == PurePosixPath("."):
                continue
            dest = _prepare(target, rel, archive, m.name)
            if m.isdir():
                dest.mkdir(parents=True, exist_ok=True)
                n_dirs += 1
            elif m.issym():
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.symlink_to(m.linkname)
                n_links += 1
            elif m.islnk():
                src = target.joinpath(*_safe_relpath(archive, m.linkname).parts)
                if src.is_symlink() or not src.is_file():
                    raise ArchiveError(
                        f"{archive.name}: hard link {m.name!r} -> {m.linkname!r} has no file"
                    )
                dest.parent.mkdir(parents=True, exist_ok=True)
                with src.open("rb") as fh:
                    budget.write(m.name, fh, dest)
                n_files += 1
            elif m.isfile():
                dest.parent.mkdir(parents=True, exist_ok=True)
                fh = tf.extractfile(m)
                if fh is None:
                    raise ArchiveError(f"{archive.name}: member {m.name!r} has no data")
                with fh:
                    budget.write(m.name, fh, dest)
                dest.chmod(0o644 | (m.mode & 0o111))
                n_files += 1
    return ExtractReport(n_files, n_dirs, n_links, budget.n_bytes)


def _extract_zip(archive: Path, target: Path, budget: _Budget) -> ExtractReport:
    n_files = n_dirs = n_links = 0
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        checked = []
        for info in infos:
            budget.entry(info.filename)
            rel = _safe_relpath(archive, info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                link_target = zf.read(info).decode("utf-8", "replace")
                if not _link_inside(rel, link_target):
                    raise ArchiveError(
                        f"{archive.name}: symlink {info.filename!r} -> {link_target!r} "
                        "points outside"
                    )
                checked.append((info, rel, link_target))
                continue
            if mode and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode)):
                raise ArchiveError(f"{archive.name}: member {info.filename!r} is a device or fifo")
            if not info.is_dir():
                budget.declared(info.filename, info.file_size)
            checked.append((info, rel, None))
        for info, rel, link_target in checked:
            if rel == PurePosixPath("."):
                continue
            dest = _prepare(target, rel, archive, info.filename)
            if link_target is not None:
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.symlink_to(link_target)
                n_links += 1
            elif info.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
                n_dirs += 1
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as fh:
                    budget.write(info.filename, fh, dest)
                n_files += 1
    return ExtractReport(n_files, n_dirs, n_links, budget.n_bytes)


@contextmanager
def open_workspace(path: str | Path, *, settings: Settings = DEFAULT_SETTINGS) -> Iterator[Path]:
    """Yield a folder for a workspace: the folder itself, or an archive extracted to a temp dir."""
    path = Path(path)
    if path.is_dir():
        yield path
        return
    if not path.exists():
        raise FileNotFoundError(f"workspace not found: {path}")
    if not is_archive(path):
        raise ArchiveError(f"{path.name}: neither a folder nor a supported archive")
    tmp = Path(tempfile.mkdtemp(prefix="clawviz-ws-"))
    try:
        extract_archive(path, tmp, settings=settings)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
