"""The figures of issue 14 (performance round 2), each timed interleaved with its baseline.

Every figure runs its baseline and the measured command alternately (A B A B ...), so a load
spike on the shared machine hits both about equally; it reports the median and the spread
(min-max) of each, and the ratio as the median of the per-pair ratios with their spread.
Ratios are judged on CPU time (this process's, or its children's for commands), wall time is
shown beside them.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000


@dataclass
class Sample:
    wall: float
    cpu: float


@dataclass
class Series:
    """The samples of one side of an interleaved comparison."""

    samples: list[Sample]

    def med(self, kind: str = "cpu") -> float:
        return statistics.median(getattr(s, kind) for s in self.samples)

    def spread(self, kind: str = "cpu") -> tuple[float, float]:
        vals = [getattr(s, kind) for s in self.samples]
        return min(vals), max(vals)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(fn: Callable[[], Any], children: bool = False) -> Sample:
    """One run of `fn`: wall time and CPU time (of this process, or of its children)."""
    gc.collect()
    c0 = _children_cpu() if children else time.process_time()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    cpu = (_children_cpu() if children else time.process_time()) - c0
    return Sample(wall, cpu)


def interleave(
    a: Callable[[], Any],
    b: Callable[[], Any],
    repeats: int,
    *,
    a_children: bool = False,
    b_children: bool = False,
    b_setup: Callable[[], Any] | None = None,
    warm: bool = True,
) -> tuple[Series, Series]:
    """A B A B ...: `repeats` samples of each, alternating (after one warm-up of each).

    `b_setup` runs untimed before each run of `b` (e.g. a fresh store for an ingest).
    """
    if warm:
        a()
        if b_setup:
            b_setup()
        b()
    sa, sb = [], []
    for _ in range(repeats):
        sa.append(measure(a, a_children))
        if b_setup:
            b_setup()
        sb.append(measure(b, b_children))
    return Series(sa), Series(sb)


def ratio(a: Series, b: Series, kind: str = "cpu") -> tuple[float, float, float]:
    """Median and spread of the per-pair ratios b_i / a_i."""
    rs = [
        getattr(y, kind) / getattr(x, kind)
        for x, y in zip(a.samples, b.samples, strict=True)
        if getattr(x, kind) > 0
    ]
    return statistics.median(rs), min(rs), max(rs)


def fmt(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def fmt_series(s: Series, kind: str = "cpu") -> str:
    lo, hi = s.spread(kind)
    return f"{fmt(s.med(kind))} {kind} ({fmt(lo)}-{fmt(hi)})"


def fmt_ratio(a: Series, b: Series) -> tuple[str, float]:
    m, lo, hi = ratio(a, b, "cpu")
    w, _, _ = ratio(a, b, "wall")
    return f"{m:.2f}x ({lo:.2f}-{hi:.2f}; wall {w:.2f}x)", m


def orjson_parse(log: Path) -> Callable[[], None]:
    import orjson

    def run() -> None:
        with open(log, "rb") as f:
            for line in f:
                orjson.loads(line)

    return run


def instructions(argv: list[str], root: Path) -> int:
    """Instructions valgrind's callgrind counts for one child run from checkout `root` (on its
    PYTHONPATH, no sample logs). Deterministic: no other process on the machine changes it."""
    env = {**os.environ, "CLAWVIZ_NO_SAMPLES": "1", "PYTHONPATH": str(root)}
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    found = [ln for ln in out.stderr.splitlines() if "Collected :" in ln]
    if not found:
        raise RuntimeError(f"callgrind gave no count: {out.stderr[-500:]}")
    return int(found[-1].split(":")[-1])


def fresh_url(folder: Path, name: str) -> str:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return f"sqlite:///{path}"


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "clawviz", *args]


def run_cli(argv: list[str]) -> str:
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=_env())
    if proc.returncode not in (0, 2):
        raise RuntimeError(f"{' '.join(argv[2:])}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["CLAWVIZ_NO_SAMPLES"] = "1"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


class InProcessIngest:
    """`ingest_paths([log])` into a fresh store; `setup` makes the store (engine outside)."""

    def __init__(self, log: Path, folder: Path) -> None:
        self.log, self.folder = log, folder
        self.i = 0
        self.engine: Any = None
        self.url = ""

    def close(self) -> None:
        """Dispose of the last store's engine and forget it (its file is reused later)."""
        from clawviz.store import db

        if self.engine is not None:
            self.engine.dispose()
            db._ENGINES.pop(self.url, None)
            self.engine = None

    def setup(self) -> None:
        from clawviz.store import db

        self.close()
        self.i += 1
        self.url = fresh_url(self.folder, f"r2-ingest-{self.i % 2}.db")
        self.engine = db.get_engine(self.url)

    def __call__(self) -> Any:
        from sqlmodel import Session

        from clawviz.jobs.ingest import ingest_paths

        with Session(self.engine) as s:
            return ingest_paths([self.log], session=s)


def child_import_seconds() -> Sample:
    """Wall and CPU time of `import clawviz.cli.main` measured inside a fresh interpreter."""
    code = (
        "import time\nc = time.process_time(); t = time.perf_counter()\n"
        "import clawviz.cli.main\n"
        "print(time.perf_counter() - t, time.process_time() - c)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=_env()
    )
    wall, cpu = (float(x) for x in out.stdout.split())
    return Sample(wall, cpu)


def child_episodes_rss(url: str) -> tuple[Sample, float, int]:
    """`clawviz episodes` in a child: its wall/CPU time, peak RSS (MB) and rows printed."""
    code = (
        "import sys, time, json, io, contextlib\n"
        "c = time.process_time(); t = time.perf_counter()\n"
        "from clawviz.cli.main import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        f"    rc = main(['--db', {url!r}, '--json', 'episodes'])\n"
        "wall, cpu = time.perf_counter() - t, time.process_time() - c\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
        "kb = int(hwm[0].split()[1]) if hwm else 0\n"
        "print(json.dumps([wall, cpu, kb, rc, len(json.loads(buf.getvalue()))]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=_env()
    )
    if out.returncode != 0:
        raise RuntimeError(f"episodes child failed: {out.stderr[-2000:]}")
    wall, cpu, kb, rc, n = json.loads(out.stdout.strip().splitlines()[-1])
    if rc != 0:
        raise RuntimeError(f"episodes exit {rc}")
    return Sample(wall, cpu), kb / 1000, n
