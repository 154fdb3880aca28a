"""Safe extraction of workspace archives (.tar.gz / .tgz / .tar / .zip) into a folder.

Archives come from untrusted runs, so every member is checked before anything is written: no
path may leave the target folder, every symlink is resolved against the archive's other links
and must end inside it (targets are never judged as text), hard links may name only regular files
already extracted, device files are refused, and size / file-count limits hold against both the
declared sizes and the bytes actually written. Python's `data` tar filter runs on each member as
it is written, as a second line of defence.
"""

from __future__ import annotations

import gzip
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from clawviz.settings import DEFAULT_SETTINGS, Settings

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
_CHUNK = 1 << 16
# Zip compression methods this Python can inflate; anything else is refused before writing.
_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
try:
    import bz2  # noqa: F401

    _ZIP_METHODS[zipfile.ZIP_BZIP2] = "bzip2"
except ImportError:  # pragma: no cover - Python built without bz2
    pass
_ZIP_METHODS[zipfile.ZIP_LZMA] = "lzma"


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


class _Tree:
    """The archive's final tree as declared by its members, for resolving links before writing.

    Link targets are never judged as text: each is resolved component by component against
    the other links of the archive (a chain like `l2 -> .`, `up1 -> l2/..` climbs one level per
    link although every target looks relative and inside), and must end inside the root.
    """

    MAX_HOPS = 40

    def __init__(self, archive: Path) -> None:
        self.archive = archive
        self.links: dict[str, str] = {}
        self.entries: dict[str, str] = {}

    def add(self, rel: PurePosixPath, kind: str, member: str) -> None:
        key = rel.as_posix()
        if key == ".":
            return
        if key in self.entries and not (kind == "dir" and self.entries[key] == "dir"):
            raise ArchiveError(f"{self.archive.name}: member {member!r} appears twice")
        self.entries[key] = kind

    def resolve(self, parts: tuple[str, ...], member: str) -> tuple[str, ...]:
        """Follow every link on the way; raise if the path leaves the root or loops."""
        stack: list[str] = []
        todo = list(parts)
        hops = 0
        while todo:
            part = todo.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not stack:
                    raise ArchiveError(
                        f"{self.archive.name}: link {member!r} resolves outside the archive"
                    )
                stack.pop()
                continue
            stack.append(part)
            target = self.links.get("/".join(stack))
            if target is None:
                continue
            hops += 1
            if hops > self.MAX_HOPS:
                raise ArchiveError(f"{self.archive.name}: link {member!r} loops")
            if target.startswith("/") or "\\" in target:
                raise ArchiveError(
                    f"{self.archive.name}: link {member!r} -> {target!r} is absolute"
                )
            stack.pop()
            todo = [*PurePosixPath(target).parts, *todo]
        return tuple(stack)

    def check_links(self) -> None:
        for key, target in self.links.items():
            rel = PurePosixPath(key)
            if "\x00" in target:
                raise ArchiveError(f"{self.archive.name}: symlink {key!r} has a target holding NUL")
            if target.startswith("/") or "\\" in target or not target:
                raise ArchiveError(
                    f"{self.archive.name}: symlink {key!r} -> {target!r} points outside"
                )
            try:
                self.resolve((*rel.parent.parts, *PurePosixPath(target).parts), key)
            except ArchiveError as exc:
                raise ArchiveError(
                    f"{self.archive.name}: symlink {key!r} -> {target!r} points outside "
                    f"({str(exc).split(': ', 1)[-1]})"
                ) from None

    def check_order(self, members: list[tuple[str, PurePosixPath, str, str]]) -> None:
        """Refuse, before anything is written, what the write phase would meet part way: a
        member under a folder that is a link, and a hard link naming no regular file declared
        before it. `members` are (name, path, kind 'dir'|'file'|'link'|'hard', link name)."""
        declared: set[str] = set()
        for name, rel, kind, linkname in members:
            for i in range(1, len(rel.parts)):
                if "/".join(rel.parts[:i]) in self.links:
                    raise ArchiveError(
                        f"{self.archive.name}: member {name!r} is written through a link"
                    )
            if kind == "hard":
                self.hardlink_source(name, linkname, declared)
            if kind in ("file", "hard"):
                declared.add(rel.as_posix())

    def hardlink_source(self, name: str, linkname: str, extracted: set[str]) -> str:
        """A hard link may name only a regular file extracted before it, by its plain path."""
        src = _safe_relpath(self.archive, linkname).as_posix()
        if self.resolve(PurePosixPath(src).parts, name) != PurePosixPath(src).parts:
            raise ArchiveError(
                f"{self.archive.name}: hard link {name!r} -> {linkname!r} goes through a link"
            )
        if src not in extracted:
            raise ArchiveError(
                f"{self.archive.name}: hard link {name!r} -> {linkname!r} names no regular "
                "file extracted before it"
            )
        return src


def _second_line(tf_member: tarfile.TarInfo, target: Path, archive: Path) -> None:
    """Python's own `data` extraction filter, checked against the files written so far."""
    data_filter = getattr(tarfile, "data_filter", None)
    if data_filter is None:
        return
    try:
        data_filter(tf_member, str(target.resolve()))
    except tarfile.FilterError as exc:
        raise ArchiveError(f"{archive.name}: member {tf_member.name!r} refused ({exc})") from exc


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

    def write(self, member: str, src: IO[bytes], dest: Path) -> int:
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
    except ArchiveError:
        raise
    except (
        tarfile.TarError,
        zipfile.BadZipFile,
        EOFError,
        OSError,
        zlib.error,
        lzma.LZMAError,
        RuntimeError,
        NotImplementedError,
        ValueError,
    ) as exc:
        # Second line: whatever the zip/tar/gzip modules raise on corrupt data is a refusal.
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


def _check_gzip(archive: Path, budget: _Budget) -> None:
    """Inflate a gzip stream to its end so its CRC and length trailer are checked.

    tarfile stops at the tar end marker and never reads the trailer, so a corrupt .tar.gz would
    extract silently. The inflated size is bounded: member data within archive_max_bytes plus
    two 512-byte headers per allowed entry and the end blocks.
    """
    with archive.open("rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            return
    bound = budget.max_bytes + 1024 * (budget.max_files + 1) + 20 * 512
    inflated = 0
    try:
        with gzip.open(archive, "rb") as gz:
            while chunk := gz.read(_CHUNK):
                inflated += len(chunk)
                if inflated > bound:
                    raise ArchiveError(
                        f"{archive.name}: inflates past {bound} bytes (archive_max_bytes)"
                    )
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise ArchiveError(
            f"{archive.name}: corrupt gzip data, CRC or length check ({exc})"
        ) from exc


def _extract_tar(archive: Path, target: Path, budget: _Budget) -> ExtractReport:
    n_files = n_dirs = n_links = 0
    _check_gzip(archive, budget)
    with tarfile.open(archive, "r:*") as tf:
        members = []
        tree = _Tree(archive)
        # Check every member first so a bad one late in the archive writes nothing.
        for m in tf:
            budget.entry(m.name)
            rel = _safe_relpath(archive, m.name)
            if m.ischr() or m.isblk() or m.isfifo() or m.isdev():
                raise ArchiveError(f"{archive.name}: member {m.name!r} is a device, fifo or socket")
            if not (m.isdir() or m.isfile() or m.issym() or m.islnk()):
                raise ArchiveError(f"{archive.name}: member {m.name!r} has an unsupported type")
            kind = "dir" if m.isdir() else "link" if m.issym() else "file"
            tree.add(rel, kind, m.name)
            if m.issym():
                tree.links[rel.as_posix()] = m.linkname
            if m.isfile():
                budget.declared(m.name, m.size)
            members.append((m, rel))
        tree.check_links()
        tree.check_order(
            [
                (
                    m.name,
                    rel,
                    "hard" if m.islnk() else "file" if m.isfile() else "other",
                    m.linkname,
                )
                for m, rel in members
            ]
        )
        extracted: set[str] = set()
        for m, rel in members:
            if rel == PurePosixPath("."):
                continue
            if m.islnk():
                src_rel = tree.hardlink_source(m.name, m.linkname, extracted)
            _second_line(m, target, archive)
            dest = _prepare(target, rel, archive, m.name)
            if m.isdir():
                dest.mkdir(parents=True, exist_ok=True)
                n_dirs += 1
            elif m.issym():
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.symlink_to(m.linkname)
                n_links += 1
            elif m.islnk():
                src = target.joinpath(*PurePosixPath(src_rel).parts)
                if src.is_symlink() or not src.is_file():
                    raise ArchiveError(
                        f"{archive.name}: hard link {m.name!r} -> {m.linkname!r} has no file"
                    )
                dest.parent.mkdir(parents=True, exist_ok=True)
                with src.open("rb") as fh:
                    budget.write(m.name, fh, dest)
                extracted.add(rel.as_posix())
                n_files += 1
            elif m.isfile():
                dest.parent.mkdir(parents=True, exist_ok=True)
                data = tf.extractfile(m)
                if data is None:
                    raise ArchiveError(f"{archive.name}: member {m.name!r} has no data")
                with data:
                    budget.write(m.name, data, dest)
                dest.chmod(0o644 | (m.mode & 0o111))
                extracted.add(rel.as_posix())
                n_files += 1
    return ExtractReport(n_files, n_dirs, n_links, budget.n_bytes)


def _extract_zip(archive: Path, target: Path, budget: _Budget) -> ExtractReport:
    n_files = n_dirs = n_links = 0
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        checked: list[tuple[zipfile.ZipInfo, PurePosixPath, str | None]] = []
        tree = _Tree(archive)
        for info in infos:
            budget.entry(info.filename)
            rel = _safe_relpath(archive, info.filename)
            if info.flag_bits & 0x1:
                raise ArchiveError(
                    f"{archive.name}: member {info.filename!r} is encrypted (no password is used)"
                )
            if info.compress_type not in _ZIP_METHODS:
                raise ArchiveError(
                    f"{archive.name}: member {info.filename!r} uses unsupported compression "
                    f"method {info.compress_type} (supported: {', '.join(_ZIP_METHODS.values())})"
                )
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                if info.file_size > 4096:
                    raise ArchiveError(f"{archive.name}: symlink {info.filename!r} is too long")
                link_target = zf.read(info).decode("utf-8", "replace")
                tree.add(rel, "link", info.filename)
                tree.links[rel.as_posix()] = link_target
                checked.append((info, rel, link_target))
                continue
            tree.add(rel, "dir" if info.is_dir() else "file", info.filename)
            if mode and (
                stat.S_ISCHR(mode)
                or stat.S_ISBLK(mode)
                or stat.S_ISFIFO(mode)
                or stat.S_ISSOCK(mode)
            ):
                raise ArchiveError(
                    f"{archive.name}: member {info.filename!r} is a device, fifo or socket"
                )
            if not info.is_dir():
                budget.declared(info.filename, info.file_size)
            checked.append((info, rel, None))
        tree.check_links()
        tree.check_order([(i.filename, rel, "other", "") for i, rel, _ in checked])
        for info, rel, link_to in checked:
            if rel == PurePosixPath("."):
                continue
            dest = _prepare(target, rel, archive, info.filename)
            if link_to is not None:
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.symlink_to(link_to)
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


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a checked folder tree: its path, its POSIX path relative to the root, its
    kind ('dir', 'file' or 'link'), its apparent size (files) and its permission bits."""

    path: Path
    rel: str
    kind: str
    size: int
    mode: int


def plan_tree(src: str | Path, *, settings: Settings = DEFAULT_SETTINGS) -> list[TreeEntry]:
    """The entries of a workspace folder, parents before children, under the archive limits.

    A folder obeys the same archive_max_bytes / archive_max_files as an archive: entries and
    apparent sizes are counted before anything is copied (a sparse 1 GB file counts 1 GB).
    Devices, fifos and sockets are refused."""
    src = Path(src)
    budget = _Budget(src, int(settings.archive_max_bytes), int(settings.archive_max_files))
    plan: list[TreeEntry] = []
    for dirpath, dirnames, filenames in os.walk(src):
        base = Path(dirpath)
        dirnames.sort()
        for name in [*sorted(dirnames), *sorted(filenames)]:
            path = base / name
            rel = path.relative_to(src).as_posix()
            budget.entry(rel)
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                kind = "link"
            elif stat.S_ISDIR(st.st_mode):
                kind = "dir"
            elif stat.S_ISREG(st.st_mode):
                kind = "file"
                budget.declared(rel, st.st_size)
            else:
                raise ArchiveError(f"{src.name}: {rel!r} is a device, fifo or socket")
            size = st.st_size if kind == "file" else 0
            plan.append(TreeEntry(path, rel, kind, size, stat.S_IMODE(st.st_mode)))
    return plan


def copy_workspace(
    src: str | Path, dest: str | Path, *, settings: Settings = DEFAULT_SETTINGS
) -> ExtractReport:
    """Copy a workspace folder (links kept as links) under the archive limits (`plan_tree`),
    counting the bytes actually copied again while copying."""
    src, dest = Path(src), Path(dest)
    plan = plan_tree(src, settings=settings)
    budget = _Budget(src, int(settings.archive_max_bytes), int(settings.archive_max_files))
    dest.mkdir(parents=True, exist_ok=True)
    n_files = n_dirs = n_links = 0
    for e in plan:
        out = dest / e.rel
        if e.kind == "dir":
            out.mkdir(exist_ok=True)
            n_dirs += 1
        elif e.kind == "link":
            out.symlink_to(os.readlink(e.path))
            n_links += 1
        else:
            with e.path.open("rb") as fh:
                budget.write(e.rel, fh, out)
            shutil.copymode(e.path, out)
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
