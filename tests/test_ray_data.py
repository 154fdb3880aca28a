"""`ingest --engine ray` as a Ray Data job (clawviz.jobs.raydata): every exchange log read by its
task through the pyarrow filesystems, the store a single process makes.

One local Ray for the module (2 CPUs, no dashboard). Each test compares the store digest
(tests.test_ingest_workers.digest: calls, messages, blobs, episodes, decisions, statuses with
reasons and advantages, results, sources, rejected lines) against a single-process ingest of the
same files from their local paths. Runs on SQLite and, with `--db-url`, on PostgreSQL (where the
tasks write their own files and their own decisions).

The remote path (`s3://`, `gs://`, `hdfs://`: listed, fingerprinted and sniffed through pyarrow,
never by the driver) is exercised with `file://` URLs by treating them as remote in the driver:
the tasks then run exactly the code an `s3://` file gets.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import Session

from clawviz.jobs import ingest as ingest_mod
from clawviz.jobs import raydata
from clawviz.jobs.ingest import ExchangeParse, ingest_paths
from clawviz.store.db import get_engine
from tests.dburl import fresh_url
from tests.test_ingest_workers import RECORDED, SAMPLES, digest

ROOT = Path(__file__).resolve().parent.parent
KILL_MARKER = "CLAWVIZ_TEST_KILL_MARKER"


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    ray = pytest.importorskip("ray")
    marker = tmp_path_factory.mktemp("kill") / "killed"
    ray.init(
        address="local",  # our own, even if `ray start` left a cluster on the machine
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        # The tasks import clawviz (and this module's parser below) from this checkout.
        runtime_env={
            "env_vars": {
                # pytest imports this file as a top-level module: its folder too.
                "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
                "CLAWVIZ_NO_SAMPLES": "1",
                KILL_MARKER: str(marker),
            }
        },
    )
    yield ray, marker
    ray.shutdown()


def _ingest(url: str, paths: list, **kw):
    with Session(get_engine(url)) as session:
        return ingest_paths(paths, session=session, **kw)


def _statuses(report) -> list[tuple[str, str, int]]:
    return [(f.path, f.status, f.n_calls) for f in report.files]


def test_file_urls_of_samples_and_recordings_make_the_single_process_store(tmp_path, local_ray):
    folders = [SAMPLES, *RECORDED]
    single = fresh_url(tmp_path, "single")
    r1 = _ingest(single, [str(f) for f in folders])
    url = fresh_url(tmp_path, "ray")
    r2 = _ingest(url, [f.as_uri() for f in folders], workers=2, engine="ray")
    assert r2.errors == []
    assert _statuses(r2) == _statuses(r1)
    assert sorted((r.file, r.line, r.reason) for r in r2.rejected) == sorted(
        (r.file, r.line, r.reason) for r in r1.rejected
    )
    # What the scenario intends (sample_logs/expected.json: 24 episodes), not only "the same".
    assert int(digest(url)["episode_status"].split()[0]) >= 24
    assert digest(url) == digest(single)


HASHED: list[str] = []
"""Files `recording_hashes` fingerprinted in this process (the driver; a task has its own)."""


def recording_hashes(path, prefixes):
    """The ingest's fingerprint, noting the file (module-level: the tasks get it by name)."""
    from clawviz.ingest import file_hashes

    HASHED.append(str(path))
    return file_hashes(path, prefixes)


def _as_remote(monkeypatch) -> None:
    """file:// URLs take the remote path in the driver (listed through pyarrow, read,
    fingerprinted and sniffed in the tasks, other files staged on the driver)."""
    monkeypatch.setattr(raydata, "is_remote", raydata.is_url)


def test_remote_urls_are_listed_fingerprinted_and_read_in_the_tasks(
    tmp_path, local_ray, monkeypatch
):
    recorded = sorted(p for f in RECORDED for p in f.rglob("exchanges.jsonl*"))
    assert len(recorded) >= 10
    inputs = [SAMPLES / "exchanges", *recorded]
    single = fresh_url(tmp_path, "single")
    r1 = _ingest(single, [str(p) for p in inputs])
    _as_remote(monkeypatch)
    HASHED.clear()
    monkeypatch.setattr(ingest_mod, "file_hashes", recording_hashes)
    url = fresh_url(tmp_path, "remote")
    r2 = _ingest(url, [p.as_uri() for p in inputs], workers=2, engine="ray")
    assert r2.errors == []
    assert _statuses(r2) == _statuses(r1)
    assert digest(url) == digest(single)
    # The driver fingerprinted none of the exchange logs: the tasks did.
    exchange = {Path(f.path).name for f in r2.files if f.format == "exchange"}
    assert len(exchange) >= 20
    assert HASHED == []
    # Again, and with one file given twice: each task's fingerprint finds its file loaded.
    again = [*(p.as_uri() for p in inputs), (SAMPLES / "exchanges").as_uri()]
    r3 = _ingest(url, again, workers=2, engine="ray")
    assert r3.errors == []
    assert {f.status for f in r3.files if f.format == "exchange"} == {"already_loaded"}
    assert digest(url) == digest(single)
    # A transcript or results file at a URL is named and skipped (each refers to files beside
    # it), not loaded apart from its folder.
    rollout = next(RECORDED[0].parent.rglob("rollout.jsonl"))
    results = SAMPLES / "results.jsonl"
    r4 = _ingest(url, [rollout.as_uri(), results.as_uri()], workers=2, engine="ray")
    assert [(s.path, s.reason.split(" (")[0]) for s in r4.skipped_files] == [
        (str(rollout), "only exchange logs are read from a URL, this is transcript_codex"),
        (str(results), "only exchange logs are read from a URL, this is results"),
    ]
    assert r4.files == []
    assert digest(url) == digest(single)


def test_a_missing_url_names_itself(tmp_path, local_ray):
    url = fresh_url(tmp_path, "missing")
    missing = (tmp_path / "nope").as_uri()
    with pytest.raises(FileNotFoundError, match="nope: no such file or folder"):
        raydata.list_logs(missing)
    with get_engine(url).connect() as con:
        assert con.execute(text("SELECT count(*) FROM source")).scalar() == 0


def test_folder_listing_follows_the_local_walk_order(tmp_path):
    for rel in ["b.jsonl", "a/z.jsonl", "a/b/c.jsonl.gz", "a/y.jsonl", ".hidden/x.jsonl", "n.txt"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"{}\n")
    got = [raydata.display_of(u) for u, _ in raydata.list_logs(tmp_path.as_uri())]
    # os.walk top-down, names sorted: a folder's files, then its sub-folders.
    assert got == [
        str(tmp_path / r) for r in ["b.jsonl", "a/y.jsonl", "a/z.jsonl", "a/b/c.jsonl.gz"]
    ]


class KillOnce(ExchangeParse):
    """The parser of the retry test: its Ray worker SIGKILLs itself at line 5 of
    t0002-openclaw-a2.jsonl, once (a marker file on the shared disk)."""

    def _parse(self, n, data):
        marker = Path(os.environ.get(KILL_MARKER, "/nonexistent/marker"))
        if self.display.endswith("t0002-openclaw-a2.jsonl") and n == 5 and not marker.exists():
            marker.write_text("killed")
            os.kill(os.getpid(), signal.SIGKILL)
        return super()._parse(n, data)


def test_a_task_killed_mid_file_is_retried_and_doubles_nothing(tmp_path, local_ray, monkeypatch):
    _, marker = local_ray
    single = fresh_url(tmp_path, "single")
    _ingest(single, [SAMPLES])
    monkeypatch.setattr(ingest_mod, "ExchangeParse", KillOnce)  # handed to the tasks by name
    url = fresh_url(tmp_path, "killed")
    report = _ingest(url, [SAMPLES.as_uri()], workers=2, engine="ray")
    assert report.errors == [], report.errors
    assert marker.exists()  # a task's worker did die mid-file
    assert report.errors == []  # Ray ran the task again
    assert digest(url) == digest(single)


def test_a_local_ray_is_our_own_even_beside_a_running_cluster(monkeypatch):
    """Without --ray-address, ray.init() would join a cluster `ray start` left on the machine
    (and refuse num_cpus): the local start asks for a new Ray of its own."""
    from clawviz.jobs import rayrt

    calls: list[dict] = []

    class FakeRay:
        def is_initialized(self):
            return False

        def init(self, **kw):
            calls.append(kw)

        def shutdown(self):
            calls.append({"shutdown": True})

    monkeypatch.setattr(rayrt, "import_ray", FakeRay)
    with rayrt.ray_session(None, 2):
        pass
    assert calls[0]["address"] == "local" and calls[0]["num_cpus"] == 2
    assert calls[0]["include_dashboard"] is False
    assert calls[1] == {"shutdown": True}
    calls.clear()
    with rayrt.ray_session("10.0.0.5:6379", 2):
        pass
    assert calls[0]["address"] == "10.0.0.5:6379" and "num_cpus" not in calls[0]
