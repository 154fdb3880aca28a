"""A SQLite store in a folder that cannot be written can still be read (no lock file, no
-wal/-shm files are made), and a write says in one line that the store is read-only."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clawviz.store.db import get_engine, init_db

REPO = Path(__file__).resolve().parents[1]


def _read_only_run(folder: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """Run `python -m clawviz argv` with `folder` read-only: a read-only bind mount in a mount
    namespace of its own when root (root ignores permissions), else mode 0555."""
    cmd = [sys.executable, "-m", "clawviz", *argv]
    if os.geteuid() == 0:
        unshare = shutil.which("unshare")
        if unshare is None:
            pytest.fail("unshare (util-linux) is needed to make a read-only folder as root")
        inner = f'mount --bind -o ro "{folder}" "{folder}" && exec "$@"'
        cmd = [unshare, "--mount", "sh", "-c", inner, "sh", *cmd]
    else:
        folder.chmod(0o555)
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    finally:
        folder.chmod(0o755)


def test_read_only_store_reads_and_refuses_writes_in_one_line(tmp_path):
    folder = tmp_path / "store"
    folder.mkdir()
    url = f"sqlite:///{folder / 'clawviz.db'}"
    engine = get_engine(url, check_schema=False)
    init_db(engine)
    engine.dispose()
    for extra in folder.glob("clawviz.db?*"):
        extra.unlink()  # a clean copy: no lock file, no -wal / -shm left over
    assert [p.name for p in folder.iterdir()] == ["clawviz.db"]

    res = _read_only_run(folder, ["--db", url, "episodes"])
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "episode_id" in res.stdout

    res = _read_only_run(folder, ["--db", url, "ingest", str(REPO / "sample_logs/results.jsonl")])
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "read-only" in lines[0], res.stderr
    assert lines[0].startswith(f"error: store: the store {url} is read-only")
    assert [p.name for p in folder.iterdir()] == ["clawviz.db"]
