"""Before/after of the issue-14 in-process ingest row: `ingest_paths([LOG])` timed inside a
long-lived child per checkout, interleaved with the bare orjson parse (orjson, A, B, ...).

    git worktree add --detach /tmp/clawviz-base main
    python bench/ingab.py --base /tmp/clawviz-base [--log bench/out/full/log-39MB.jsonl] [-n 7]

Each child imports its checkout once and warms up with one ingest, as `bench/run.py
--only fig_r2_ingest` does in-process; every run goes into a fresh SQLite store. CPU seconds
(process time of the child, decisions at ingest included), medians and spreads, and each
checkout's per-round ratio to the orjson parse measured in the same round. `--no-decisions`
times the parse and write path alone (the analysis at the end of ingest left out).
`--callgrind` counts instructions instead (valgrind; minutes per checkout): a figure the
other processes on a shared machine cannot disturb.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import round2  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import sys, time
from pathlib import Path
from sqlmodel import Session
from clawviz.store import db
from clawviz.jobs.ingest import ingest_paths
log, folder = sys.argv[1], Path(sys.argv[2])
if sys.argv[3:] == ["--no-decisions"]:
    import clawviz.jobs.ingest as load
    load.analyse.ensure_analysis = lambda *a, **k: None
i = 0
for cmd in sys.stdin:
    i += 1
    path = folder / f"ingab-{i % 2}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    engine = db.get_engine(url)
    c = time.process_time()
    with Session(engine) as s:
        ingest_paths([log], session=s)
    cpu = time.process_time() - c
    engine.dispose()
    db._ENGINES.pop(url, None)
    print(cpu, flush=True)
"""


def child(root: Path, log: Path, folder: Path, no_decisions: bool) -> subprocess.Popen[str]:
    folder.mkdir(parents=True, exist_ok=True)
    extra = ["--no-decisions"] if no_decisions else []
    env = {**os.environ, "CLAWVIZ_NO_SAMPLES": "1", "PYTHONPATH": str(root)}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(log), str(folder), *extra],
        cwd=root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


ONCE = r"""
import sys
from pathlib import Path
from sqlmodel import Session
from clawviz.store import db
import clawviz.jobs.ingest as load
log, path, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
load.analyse.ensure_analysis = lambda *a, **k: None
for suffix in ("", "-wal", "-shm"):
    Path(str(path) + suffix).unlink(missing_ok=True)
engine = db.get_engine(f"sqlite:///{path}")
if mode == "ingest":
    with Session(engine) as s:
        load.ingest_paths([log], session=s)
"""


def instructions(root: Path, log: Path, folder: Path, mode: str) -> int:
    """Instructions valgrind's callgrind counts for one child: imports and a fresh store, plus
    one ingest (decisions left out) when `mode` is "ingest". Deterministic: no other process
    on the machine changes it."""
    folder.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", ONCE, str(log), str(folder / "cg.db"), mode]
    if mode == "orjson":
        argv = [sys.executable, "-c", "import sys, orjson\n" + (
            "for line in open(sys.argv[1], 'rb'):\n    orjson.loads(line)\n"
        ), str(log)]  # fmt: skip
    elif mode == "orjson-import":
        argv = [sys.executable, "-c", "import orjson"]
    return round2.instructions(argv, root)


def callgrind(base: Path, log: Path, out: Path) -> int:
    """The ingest path's instructions for each checkout and the orjson parse's (each net of
    its imports), and their ratios."""
    parse = instructions(ROOT, log, out, "orjson") - instructions(ROOT, log, out, "orjson-import")
    print(f"  orjson parse: {parse / 1e6:.0f} M instructions")
    counts = {}
    for name, root in (("base", base), ("this", ROOT)):
        ingest = instructions(root, log, out / name, "ingest")
        counts[name] = ingest - instructions(root, log, out / name, "import")
        print(f"  {name}: {counts[name] / 1e6:.0f} M instructions, {counts[name] / parse:.2f}x")
    print(f"  this/base: {counts['this'] / counts['base']:.3f}")
    return 0


def run(p: subprocess.Popen[str]) -> float:
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write("run\n")
    p.stdin.flush()
    return float(p.stdout.readline())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, type=Path, help="the checkout to compare against")
    p.add_argument("--log", type=Path, default=ROOT / "bench" / "out" / "full" / "log-39MB.jsonl")
    p.add_argument("-n", "--repeats", type=int, default=7)
    p.add_argument(
        "--no-decisions",
        action="store_true",
        help="leave out the decisions at the end of ingest (the parse and write path alone)",
    )
    p.add_argument(
        "--callgrind",
        action="store_true",
        help="count instructions under valgrind instead (one cold ingest, no decisions; slow)",
    )
    args = p.parse_args(argv)
    out = ROOT / "bench" / "out" / "ingab"
    if args.callgrind:
        return callgrind(args.base.resolve(), args.log, out)
    parse = round2.orjson_parse(args.log)
    kids = {
        "base": child(args.base.resolve(), args.log, out / "base", args.no_decisions),
        "this": child(ROOT, args.log, out / "this", args.no_decisions),
    }
    for k in kids.values():
        run(k)  # warm-up
    res: dict[str, list[float]] = {"orjson": [], "base": [], "this": []}
    for i in range(args.repeats):
        res["orjson"].append(round2.measure(parse).cpu)
        for name, k in kids.items():
            res[name].append(run(k))
        print(i, {k: round(v[-1], 3) for k, v in res.items()}, flush=True)
    for k in kids.values():
        assert k.stdin is not None
        k.stdin.close()
        k.wait()
    t = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{args.log.name}, {args.repeats} rounds, {t}, load average {os.getloadavg()[0]:.1f}")
    for k, v in res.items():
        line = f"  {k}: {statistics.median(v) * 1000:.0f} ms cpu ({min(v) * 1000:.0f}-"
        line += f"{max(v) * 1000:.0f})"
        if k != "orjson":
            rs = [x / o for x, o in zip(v, res["orjson"], strict=True)]
            line += f", vs orjson {statistics.median(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})"
        print(line)
    rs = [t / b for t, b in zip(res["this"], res["base"], strict=True)]
    print(f"  this/base: {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
