"""Each bad archive the last hostile round found is a refusal with its reason, never a
traceback: an encrypted zip member, an unsupported compression method, a symlink target holding
NUL, and a .tar.gz whose gzip checksum is wrong. `clawviz diff` and `clawviz check` both walk
them and exit 1 with one error line."""

from __future__ import annotations

import io
import json
import struct
import tarfile
import zipfile
from pathlib import Path

import pytest
from sqlmodel import Session

from clawviz.cli.main import main as cli_main
from clawviz.jobs.ingest import ingest_paths
from clawviz.review import sandbox
from clawviz.review.archive import ArchiveError, extract_archive
from clawviz.store.db import get_engine
from tests.dburl import fresh_url


def _zip_patched(path: Path, name: str, data: bytes, *, flag: int = 0, method: int | None = None):
    """A stored zip whose member's flag bits and method are rewritten in both headers."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(name, data)
    raw = bytearray(buf.getvalue())
    local = raw.find(b"PK\x03\x04")
    central = raw.find(b"PK\x01\x02")
    for off, flag_at, method_at in ((local, 6, 8), (central, 8, 10)):
        old_flag = struct.unpack_from("<H", raw, off + flag_at)[0]
        struct.pack_into("<H", raw, off + flag_at, old_flag | flag)
        if method is not None:
            struct.pack_into("<H", raw, off + method_at, method)
    path.write_bytes(bytes(raw))
    return path


def _encrypted(path: Path) -> Path:
    return _zip_patched(path, "secret.txt", b"x" * 40, flag=0x1)


def _bad_method(path: Path) -> Path:
    return _zip_patched(path, "odd.txt", b"hello", method=99)


def _nul_link(path: Path) -> Path:
    info = zipfile.ZipInfo("lnk")
    info.external_attr = 0o120777 << 16
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.txt", b"a")
        zf.writestr(info, b"a.txt\x00/etc/passwd")
    return path


def _bad_crc_tgz(path: Path) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"hello world\n" * 10
        info = tarfile.TarInfo("f.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    raw = bytearray(buf.getvalue())
    raw[-8] ^= 0xFF  # the gzip trailer's CRC32
    path.write_bytes(bytes(raw))
    return path


BAD = {
    "encrypted.zip": (_encrypted, "encrypted"),
    "method.zip": (_bad_method, "compression method"),
    "nullink.zip": (_nul_link, "NUL"),
    "crc.tar.gz": (_bad_crc_tgz, "CRC"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_extract_refuses_with_reason(tmp_path, name):
    make, reason = BAD[name]
    arc = make(tmp_path / name)
    with pytest.raises(ArchiveError, match=reason):
        extract_archive(arc, tmp_path / "out")


@pytest.fixture
def bad_store(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "before").mkdir()
    (run / "before" / "a.txt").write_text("a\n")
    lines = []
    for name, (make, _reason) in BAD.items():
        make(run / name)
        lines.append(
            {
                "episode_id": f"ep-{name}",
                "task_id": "task_bad",
                "reward": 1.0,
                "workspace_before": "before",
                "workspace_after": name,
            }
        )
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    url = fresh_url(tmp_path)
    with Session(get_engine(url)) as s:
        ingest_paths([run / "results.jsonl"], session=s)
    return url, run


@pytest.mark.parametrize("name", sorted(BAD))
def test_cli_diff_and_check_refuse_each_bad_archive(
    bad_store, sample_db_url, name, capsys, monkeypatch
):
    url, run = bad_store
    _make, reason = BAD[name]
    assert cli_main(["--db", url, "diff", f"ep-{name}"]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert captured.err.startswith("error: ") and reason in captured.err

    monkeypatch.setattr(sandbox, "bwrap_problem", lambda python=None: None)
    argv = ["--db", sample_db_url, "check", "task_0001", "--workspace", str(run / name)]
    assert cli_main(argv) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert captured.err.startswith("error: ") and reason in captured.err


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-5", "soon"])
@pytest.mark.parametrize("command", ["check", "diagnose"])
def test_timeout_must_be_positive_and_finite(tmp_path, capsys, command, value):
    if command == "check":
        argv = ["check", "task_0001", "--workspace", str(tmp_path), "--timeout", value]
    else:
        argv = ["diagnose", "t1", "--base-url", "http://127.0.0.1:9", "--model", "m"]
        argv += ["--timeout", value]
    with pytest.raises(SystemExit) as exc:
        cli_main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --timeout: {value!r} is not a" in err and "Traceback" not in err


def test_run_checker_refuses_a_non_finite_timeout(tmp_path):
    from clawviz.review.checker import CheckerError, run_checker

    (tmp_path / "reward").mkdir()
    (tmp_path / "reward" / "check.py").write_text("print('{}')\n")
    for bad in (float("nan"), 0.0, -5.0):
        with pytest.raises(CheckerError, match="positive, finite"):
            run_checker(tmp_path, tmp_path, bad)
