"""`ingest --workers 2` vs 1 and `analyse --workers 2` vs 1, measured in the same run, interleaved.

    python3 bench/ingest_workers.py [--rounds 3] [--mb 200] [--pg postgresql+psycopg://.../postgres]
        [--only ingest|analyse] [--ray] [--ray-cluster] [--no-sqlite]

Input: two generated exchange logs of `--mb` MB each (`bench/gen.py`, seeds 1 and 2; the second
one's episode ids get a `~b` suffix so the two files hold different episodes), written to
`bench/out/workers/` once. Each round runs, in alternating order, `python -m clawviz ingest
--workers 1` and `--workers 2` of both files into a fresh store (SQLite file; with `--pg`, also
a fresh PostgreSQL database on that server; `--ray`: also `--engine ray`, a local Ray with 2
CPUs, on PostgreSQL; `--ray-cluster`: also `--engine ray --ray-address` of a Ray head this
script started once beforehand with 2 CPUs, as a team's cluster is already running), then
`analyse --workers 1` and `--workers 2` with `--set reward_threshold=0.7` on two copies of one
ingested SQLite store. Reported: wall-clock medians and spreads, the 1/2 ratio per round, CPU
seconds of all processes (wait4's rusage: the command and every worker it waited for), peak RSS
of the driver and of the largest worker (VmHWM sampled from /proc every 0.1 s), and the store
digests (identical or not). Prints JSON lines; the last one is the summary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "workers"
sys.path.insert(0, str(ROOT))


def make_logs(mb: float) -> list[Path]:
    import orjson

    sys.path.insert(0, str(HERE))
    import gen

    OUT.mkdir(parents=True, exist_ok=True)
    paths = [OUT / f"log1-{int(mb)}MB.jsonl", OUT / f"log2-{int(mb)}MB.jsonl"]
    if not paths[0].exists():
        gen.write_log(paths[0], int(mb * 1e6), seed=1)
    if not paths[1].exists():
        tmp = OUT / "log2.tmp"
        gen.write_log(tmp, int(mb * 1e6), seed=2)
        with tmp.open("rb") as src, (OUT / "log2.partial").open("wb") as dst:
            for line in src:
                rec = orjson.loads(line)
                cz = rec.get("clawviz") or {}
                if cz.get("episode_id"):
                    cz["episode_id"] += "~b"
                dst.write(orjson.dumps(rec) + b"\n")
        tmp.unlink()
        Path(str(tmp) + ".meta.json").unlink(missing_ok=True)
        os.replace(OUT / "log2.partial", paths[1])
    return paths


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def _hwm(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run(cmd: list[str]) -> dict:
    """Run a clawviz command; wall time, CPU seconds, peak RSS of the driver and of workers."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CLAWVIZ_NO_SAMPLES": "1"}
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "clawviz", *cmd],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    peaks: dict[int, int] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for p in _tree(proc.pid):
                peaks[p] = max(peaks.get(p, 0), _hwm(p))
            stop.wait(0.1)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    stop.set()
    th.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 2):
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {err[-2000:]}")
    workers = [v for p, v in peaks.items() if p != proc.pid]
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(ru.ru_utime + ru.ru_stime, 2),
        "driver_rss_mb": round(peaks.get(proc.pid, 0) / 2**20, 1),
        "worker_rss_mb": round(max(workers, default=0) / 2**20, 1),
        "load": round(os.getloadavg()[0], 1),
    }


def new_pg(server: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(server)
    name = f"bench_{uuid.uuid4().hex[:10]}"
    eng = create_engine(base, isolation_level="AUTOCOMMIT")
    with eng.connect() as con:
        con.execute(text(f'CREATE DATABASE "{name}"'))
    eng.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


def drop_pg(server: str, url: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from clawviz.store import db

    for u, e in list(db._ENGINES.items()):
        if u == url:
            e.dispose()
            del db._ENGINES[u]
    eng = create_engine(make_url(server), isolation_level="AUTOCOMMIT")
    with eng.connect() as con:
        con.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    eng.dispose()


def digest(url: str) -> str:
    from tests.test_ingest_workers import digest as store_digest

    d = store_digest(url)
    from clawviz.store import db

    for e in db._ENGINES.values():
        e.dispose()
    db._ENGINES.clear()
    return json.dumps(d, sort_keys=True)


def summary(rows: list[dict], key: str) -> dict:
    by: dict = {}
    for r in rows:
        by.setdefault(r["workers"], []).append(r)
    out: dict = {}
    for w, rs in sorted(by.items(), key=lambda kv: str(kv[0])):
        walls = [r["wall_s"] for r in rs]
        out[f"w{w}"] = {
            "wall_median_s": round(statistics.median(walls), 2),
            "wall_min_s": min(walls),
            "wall_max_s": max(walls),
            "cpu_median_s": round(statistics.median(r["cpu_s"] for r in rs), 2),
            "worker_rss_max_mb": max(r["worker_rss_mb"] for r in rs),
            "driver_rss_max_mb": max(r["driver_rss_mb"] for r in rs),
        }
    ratios = [a["wall_s"] / b["wall_s"] for a, b in zip(by.get(1, []), by.get(2, []), strict=False)]
    if ratios:
        out["ratio_1_over_2_median"] = round(statistics.median(ratios), 2)
        out["ratio_spread"] = [round(min(ratios), 2), round(max(ratios), 2)]
    cluster = [
        a["wall_s"] / b["wall_s"]
        for a, b in zip(by.get(1, []), by.get("ray-cluster", []), strict=False)
    ]
    if cluster:
        out["ratio_1_over_ray_cluster_median"] = round(statistics.median(cluster), 2)
        out["ratio_ray_cluster_spread"] = [round(min(cluster), 2), round(max(cluster), 2)]
    ray_ratios = [
        a["wall_s"] / b["wall_s"] for a, b in zip(by.get(1, []), by.get("ray", []), strict=False)
    ]
    if ray_ratios:
        # Ray's workers are the raylet's children, not the command's: their CPU is not counted.
        out["ratio_1_over_ray_median"] = round(statistics.median(ray_ratios), 2)
        out["ratio_ray_spread"] = [round(min(ray_ratios), 2), round(max(ray_ratios), 2)]
    out["what"] = key
    return out


def start_ray_head() -> tuple[subprocess.Popen, str]:
    """A Ray head with 2 CPUs and no dashboard (`ray start --block`, its own process group so it
    is stopped by its id, not by name), and its address."""
    port = 26380 + os.getpid() % 500
    # A private head on loopback for this run: Ray's token authentication is off for it (and
    # for the commands this script starts, which inherit the setting).
    os.environ["RAY_AUTH_MODE"] = "disabled"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CLAWVIZ_NO_SAMPLES": "1"}
    ray_bin = Path(sys.executable).with_name("ray")
    cmd = [str(ray_bin) if ray_bin.exists() else "ray", "start", "--head", "--block"]
    cmd += [f"--port={port}", "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"]
    cmd += ["--node-ip-address=127.0.0.1"]
    head = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    address = f"127.0.0.1:{port}"
    import ray

    for _ in range(120):  # wait until it answers
        try:
            ray.init(address=address, log_to_driver=False)
            ray.shutdown()
            return head, address
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.5)
    stop_ray_head(head, address)
    raise SystemExit("the Ray head did not start")


def stop_ray_head(head: subprocess.Popen, address: str) -> None:
    import signal

    os.killpg(head.pid, signal.SIGTERM)
    try:
        head.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=20)
    # `ray start` noted the head in /tmp/ray/ray_current_cluster, where a later ray.init()
    # without an address (any test on this machine) would try to join it: remove our note.
    note = Path("/tmp/ray/ray_current_cluster")
    port = address.rsplit(":", 1)[-1]
    try:
        if note.read_text().strip().endswith(f":{port}"):
            note.unlink()
    except OSError:
        pass


def bench_ingest(
    logs: list[Path],
    rounds: int,
    pg: str | None,
    ray: bool = False,
    sqlite: bool = True,
    ray_address: str | None = None,
) -> list[dict]:
    results: list[dict] = []
    backends = (["sqlite"] if sqlite else []) + (["postgresql"] if pg else [])
    digests: dict[str, set[str]] = {b: set() for b in backends}
    for r in range(rounds):
        order: tuple = (1, 2) if r % 2 == 0 else (2, 1)
        for backend in backends:
            variants = order + (("ray",) if ray and backend == "postgresql" else ())
            if ray_address and backend == "postgresql":
                variants += ("ray-cluster",)
            for w in variants:
                if backend == "sqlite":
                    path = OUT / f"ingest-w{w}.db"
                    for s in ("", "-wal", "-shm"):
                        Path(str(path) + s).unlink(missing_ok=True)
                    url = f"sqlite:///{path}"
                else:
                    assert pg is not None
                    url = new_pg(pg)
                flags = (
                    ["--engine", "ray", "--workers", "2"]
                    if w in ("ray", "ray-cluster")
                    else ["--workers", str(w)]
                )
                if w == "ray-cluster":
                    flags += ["--ray-address", str(ray_address)]
                row = run(["--db", url, "ingest", *flags, *map(str, logs)])
                row.update(round=r, workers=w, backend=backend, what="ingest")
                digests[backend].add(digest(url))
                if backend == "postgresql":
                    assert pg is not None
                    drop_pg(pg, url)
                print(json.dumps(row), flush=True)
                results.append(row)
    for b in backends:
        print(json.dumps({"backend": b, "digests_identical": len(digests[b]) == 1}), flush=True)
    return results


def bench_analyse(logs: list[Path], rounds: int) -> list[dict]:
    base = OUT / "analyse-base.db"
    for s in ("", "-wal", "-shm"):
        Path(str(base) + s).unlink(missing_ok=True)
    run(["--db", f"sqlite:///{base}", "ingest", *map(str, logs)])
    results: list[dict] = []
    digests: set[str] = set()
    for r in range(rounds):
        order = (1, 2) if r % 2 == 0 else (2, 1)
        for w in order:
            copy = OUT / f"analyse-w{w}.db"
            for s in ("-wal", "-shm"):
                Path(str(copy) + s).unlink(missing_ok=True)
            shutil.copy(base, copy)
            url = f"sqlite:///{copy}"
            row = run(
                ["--db", url, "analyse", "--workers", str(w), "--set", "reward_threshold=0.7"]
            )
            row.update(round=r, workers=w, backend="sqlite", what="analyse")
            digests.add(digest(url))
            print(json.dumps(row), flush=True)
            results.append(row)
    print(json.dumps({"analyse_digests_identical": len(digests) == 1}), flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=float, default=200)
    ap.add_argument("--pg", default=None, help="PostgreSQL server URL (a maintenance database)")
    ap.add_argument("--only", choices=("ingest", "analyse"), default=None)
    ap.add_argument(
        "--ray", action="store_true", help="also `ingest --engine ray` (local, 2 CPUs) on --pg"
    )
    ap.add_argument(
        "--ray-cluster",
        action="store_true",
        help="also `ingest --engine ray --ray-address` of a 2-CPU Ray head started once, on --pg",
    )
    ap.add_argument("--no-sqlite", action="store_true", help="only the PostgreSQL ingest rows")
    a = ap.parse_args()
    logs = make_logs(a.mb)
    print(json.dumps({"logs": [str(p) for p in logs], "cpus": os.cpu_count()}), flush=True)
    out = []
    head, address = start_ray_head() if a.ray_cluster and a.pg else (None, None)
    if a.only in (None, "ingest"):
        try:
            rows = bench_ingest(logs, a.rounds, a.pg, a.ray, not a.no_sqlite, address)
        finally:
            if head is not None and address is not None:
                stop_ray_head(head, address)
        for b in {r["backend"] for r in rows}:
            out.append(summary([r for r in rows if r["backend"] == b], f"ingest {b}"))
    if a.only in (None, "analyse"):
        out.append(summary(bench_analyse(logs, a.rounds), "analyse sqlite"))
    print(json.dumps({"summary": out}), flush=True)


if __name__ == "__main__":
    main()
