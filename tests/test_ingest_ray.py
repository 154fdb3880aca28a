"""`ingest --engine ray` (clawviz.jobs.pool on Ray tasks): the single process's store, from
local paths and file:// URLs, on a local Ray with 2 CPUs and no dashboard; without Ray, one
line naming the extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sqlmodel import Session

from clawviz.cli.main import main as cli_main
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import get_engine
from tests.dburl import fresh_url
from tests.test_ingest_workers import RECORDED, SAMPLES, digest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    # The tasks import clawviz from this checkout, as the driver does.
    ray.init(
        address="local",  # our own, even if `ray start` left a cluster on the machine
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "CLAWVIZ_NO_SAMPLES": "1"}},
    )
    yield ray
    ray.shutdown()


def _single(tmp_path: Path, paths: list) -> str:
    url = fresh_url(tmp_path, "single")
    with Session(get_engine(url)) as s:
        ingest_paths(paths, session=s)
    return url


def test_ray_ingest_of_file_urls_makes_the_single_process_store(tmp_path, local_ray):
    folders = [SAMPLES, RECORDED[0]]
    single = _single(tmp_path, [str(f) for f in folders])
    url = fresh_url(tmp_path, "ray")
    with Session(get_engine(url)) as s:
        report = ingest_paths([f.as_uri() for f in folders], session=s, workers=2, engine="ray")
    assert report.errors == []
    assert report.n_calls > 220
    assert digest(url) == digest(single)


def test_cli_ingest_engine_ray_reports_as_the_single_process(tmp_path, local_ray, capsys):
    one, two = fresh_url(tmp_path, "one"), fresh_url(tmp_path, "two")
    assert cli_main(["--db", one, "ingest", str(SAMPLES)]) == 2
    out1 = capsys.readouterr().out
    assert cli_main(["--db", two, "ingest", "--engine", "ray", str(SAMPLES)]) == 2
    out2 = capsys.readouterr().out
    assert out1 == out2
    assert digest(one) == digest(two)
    # analyse --engine ray after a settings change: the single process's decisions.
    sets = ["--set", "reward_threshold=0.7"]
    assert cli_main(["--db", one, "analyse", *sets]) == 0
    assert cli_main(["--db", two, "analyse", "--engine", "ray", *sets]) == 0
    capsys.readouterr()
    assert digest(one) == digest(two)


def test_without_ray_engine_ray_names_the_extra_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    url = fresh_url(tmp_path, "noray")
    assert cli_main(["--db", url, "ingest", "--engine", "ray", str(SAMPLES)]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "error: --engine ray needs Ray: pip install -r requirements-ray.txt"
    ]
    assert cli_main(["--db", url, "analyse", "--engine", "ray"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "error: --engine ray needs Ray: pip install -r requirements-ray.txt"
    with get_engine(url).connect() as con:
        from sqlalchemy import text

        assert con.execute(text("SELECT count(*) FROM source")).scalar() == 0
