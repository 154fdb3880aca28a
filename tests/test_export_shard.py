"""Sharded export (`export --workers N`, `--engine ray`): the rows of the single-file export.

The sample store's episodes are cut into several parts (a few episodes each), so every test
here crosses shard boundaries. The Ray test runs on a local Ray (2 CPUs, no dashboard) and is
skipped only when `ray` cannot be imported.
"""

from __future__ import annotations

import builtins
import importlib.util
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlmodel import Session

from clawviz.export import Selection, run_export
from clawviz.export.shard import MANIFEST, RayMissing, run_sharded_export, shard_rows
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store.db import get_engine

HAS_RAY = importlib.util.find_spec("ray") is not None
ALL = Selection(include_dropped=True)


def single(url: str, fmt: str, out: Path, selection: Selection = ALL) -> tuple[list[dict], dict]:
    with Session(get_engine(url)) as s:
        report = run_export(s, fmt, out, selection=selection)
    return pq.read_table(out).to_pylist(), report.to_dict()


def parts_of(out: Path) -> tuple[list[dict], dict, list]:
    manifest = json.loads((out / MANIFEST).read_text())
    tables = [pq.read_table(out / p["file"]) for p in manifest["parts"]]
    rows = [r for t in tables for r in t.to_pylist()]
    return rows, manifest, [t.schema for t in tables]


def comparable(report: dict) -> dict:
    """A report without what differs between one file and parts (where, and bytes)."""
    return {k: v for k, v in report.items() if k not in ("path", "bytes", "skipped_examples")}


def check_same(url: str, fmt: str, tmp_path: Path, **kw) -> dict:
    want, report = single(url, fmt, tmp_path / f"one-{fmt}.parquet")
    out = tmp_path / f"parts-{fmt}-{kw.get('engine', 'process')}"
    got_report = run_sharded_export(url, fmt, out, selection=ALL, **kw)
    got, manifest, schemas = parts_of(out)
    assert len(manifest["parts"]) > 1  # the test crosses shard boundaries
    assert got == want  # the same rows in the same order once the parts are read in order
    by_id = sorted(want, key=lambda r: r["row_id"])
    assert sorted(got, key=lambda r: r["row_id"]) == by_id
    one_schema = pq.read_schema(tmp_path / f"one-{fmt}.parquet")
    assert all(s.equals(one_schema) for s in schemas)
    assert manifest["rows"] == len(want) == got_report.rows
    assert manifest["episodes"] == report["episodes_exported"]
    assert sum(p["rows"] for p in manifest["parts"]) == len(want)
    assert comparable(manifest["report"]) == comparable(report)
    return manifest


@pytest.mark.parametrize("fmt", ["sft", "rl"])
def test_process_pool_parts_hold_the_single_export_rows(sample_db_url, tmp_path, fmt):
    manifest = check_same(sample_db_url, fmt, tmp_path, workers=2)
    assert manifest["engine"] == "process" and manifest["workers"] == 2


def test_one_worker_and_rerun_replace_old_parts(sample_db_url, tmp_path):
    out = tmp_path / "parts"
    run_sharded_export(sample_db_url, "sft", out, selection=ALL, workers=2)
    (out / "part-09999.parquet").write_bytes(b"stale")
    run_sharded_export(sample_db_url, "sft", out, selection=ALL, workers=1)
    manifest = json.loads((out / MANIFEST).read_text())
    assert sorted(p.name for p in out.glob("part-*")) == [p["file"] for p in manifest["parts"]]


def test_shard_rows_are_consecutive_batches():
    rows = [{"episode_id": str(i)} for i in range(17)]
    got = shard_rows(rows, 2)
    assert [r for b in got for r in b] == rows
    assert len(got) == 6 and {len(b) for b in got} <= {3, 2}
    assert shard_rows([], 2) == []


def test_cli_workers(sample_db_url, tmp_path, capsys):
    from clawviz.cli.main import main

    out = tmp_path / "cli"
    args = ["--db", sample_db_url, "export", "--format", "sft", "--include-dropped"]
    assert main([*args, "--out", str(out), "--workers", "2"]) == 0
    assert "manifest" in capsys.readouterr().out
    want, _ = single(sample_db_url, "sft", tmp_path / "one.parquet")
    assert parts_of(out)[0] == want
    assert main([*args, "--out", str(tmp_path / "x.parquet"), "--workers", "2"]) == 1
    assert main([*args, "--out", str(out), "--workers", "0"]) == 1
    assert main([*args, "--out", str(out), "--ray-address", "auto"]) == 1


def test_engine_ray_without_ray_names_the_extra(sample_db_url, tmp_path, monkeypatch, capsys):
    real_import = builtins.__import__

    def no_ray(name, *a, **kw):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(RayMissing, match="requirements-ray.txt"):
        run_sharded_export(sample_db_url, "sft", tmp_path / "r", engine="ray")
    from clawviz.cli.main import main

    args = ["--db", sample_db_url, "export", "--format", "sft", "--out", str(tmp_path / "r")]
    assert main([*args, "--engine", "ray"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install -r requirements-ray.txt" in err[0]


@pytest.mark.skipif(
    not HAS_RAY, reason="ray is not installed (pip install -r requirements-ray.txt)"
)
def test_engine_ray_local_parts_hold_the_single_export_rows(sample_db_url, tmp_path):
    manifest = check_same(sample_db_url, "sft", tmp_path, workers=2, engine="ray")
    assert manifest["engine"] == "ray"


def test_settings_reach_the_workers(sample_db_url, tmp_path):
    settings = DEFAULT_SETTINGS.with_(branch_policy="all_valid")
    with Session(get_engine(sample_db_url)) as s:
        report = run_export(s, "sft", tmp_path / "one.parquet", selection=ALL, settings=settings)
    run_sharded_export(
        sample_db_url, "sft", tmp_path / "p", selection=ALL, settings=settings, workers=2
    )
    got, manifest, _ = parts_of(tmp_path / "p")
    assert got == pq.read_table(tmp_path / "one.parquet").to_pylist()
    assert manifest["report"]["settings_hash"] == report.settings_hash


def test_docs_pyarrow_reader_reads_the_parts(sample_db_url, tmp_path, monkeypatch, capsys):
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / "EXPORT.md").read_text()
    section = text.split("A plain pyarrow reader", 1)[1]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    run_sharded_export(sample_db_url, "rl", tmp_path / "rl", selection=ALL, workers=2)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "EXPORT.md", "exec"), scope)
    want, _ = single(sample_db_url, "rl", tmp_path / "one.parquet")
    assert scope["whole"].num_rows == len(want) > 0
    assert f"{len(want)} rows from" in capsys.readouterr().out
