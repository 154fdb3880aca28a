"""The floor under the issue-14 ingest rows: how much of an ingest is C work it cannot skip.

    python bench/floor.py [--log bench/out/full/log-39MB.jsonl] [--repeats 5]

A real `ingest_paths([log])` into a fresh SQLite store (decisions at its end included, as in the
`in-process ingest` row) runs with light wrappers around the C calls every ingest has to make,
and each wrapper adds up the time spent inside them:

- `orjson.loads` (the lines, the SSE event payloads) and `orjson.dumps` (canonical messages,
  row payloads),
- `hashlib.sha256` (content addresses) and the xxh3 fingerprint of the file (timed alone),
- zstd (`clawviz.store.calls.compress`),
- SQLite (the dialect's `do_execute` / `do_executemany` / `do_commit`: the driver's C code and
  the database engine).

The rest of the ingest's CPU is Python: reading records, converting messages, building rows,
and the decisions (reconstruction, classification, pruning), which are timed on their own.
Every sample is interleaved with the row's baseline, `orjson.loads` of every line
(A B A B ...). The wrappers time with `perf_counter` (the bench is single-threaded; on a busy
machine read the spreads) and cost about 0.3 us per call, ~5 ms per 39 MB ingest, which is
counted as Python.

It also times the interpreter starts that a pair of commands (`clawviz ingest` then
`clawviz episodes`) cannot avoid: `python3 -c pass` and `python3 -S -c pass` (no site
packages), as child processes, against the same parse; and the imports the issue's own design
puts in `clawviz ingest` ("SQLAlchemy Core serves the hot paths; SQLModel stays the schema"):
SQLAlchemy Core with its SQLite dialect, and `clawviz.store.models` (SQLModel, pydantic and the
tables), each as a child's CPU less `python3 -c pass`. Its last table adds the parts up: the
commands row (`ingest` then `episodes`) if every Python line of clawviz were free.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import round2  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class Meter:
    """Seconds spent inside wrapped callables, by name; nothing is counted while paused."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self.paused = False

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        spent = self.spent
        spent.setdefault(name, 0.0)
        clock = time.perf_counter

        def timed(*a: Any, **k: Any) -> Any:
            if self.paused:
                return fn(*a, **k)
            t = clock()
            try:
                return fn(*a, **k)
            finally:
                spent[name] += clock() - t

        return timed

    def section(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Time `fn` whole, and pause the primitive counters inside it."""
        spent = self.spent
        spent.setdefault(name, 0.0)

        def timed(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            self.paused = True
            try:
                return fn(*a, **k)
            finally:
                self.paused = False
                spent[name] += time.perf_counter() - t

        return timed


@contextmanager
def patched(meter: Meter) -> Iterator[None]:
    """Wrap the C entry points the ingest modules call (module attributes, looked up per call)."""
    import orjson
    from sqlalchemy.engine import default

    from clawviz.jobs import analyse as decisions
    from clawviz.jobs import ingest as load
    from clawviz.store import calls

    targets: list[tuple[Any, str, str, bool]] = [
        (orjson, "loads", "orjson", False),
        (orjson, "dumps", "orjson", False),
        (hashlib, "sha256", "sha256", False),
        (calls, "compress", "zstd", False),
        (default.DefaultDialect, "do_execute", "sqlite", False),
        (default.DefaultDialect, "do_executemany", "sqlite", False),
        (default.DefaultDialect, "do_commit", "sqlite", False),
        (decisions, "ensure_analysis", "decisions", True),
    ]
    saved = []
    for owner, attr, name, whole in targets:
        fn = getattr(owner, attr)
        saved.append((owner, attr, fn))
        setattr(owner, attr, meter.section(name, fn) if whole else meter.wrap(name, fn))
    if load.analyse is not decisions:  # pragma: no cover - the module aliases it
        raise RuntimeError("jobs.ingest no longer reaches analyse through the module")
    try:
        yield
    finally:
        for owner, attr, fn in saved:
            setattr(owner, attr, fn)


def xxh3_seconds(log: Path) -> float:
    import xxhash

    t = time.perf_counter()
    h = xxhash.xxh3_128()
    with open(log, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return time.perf_counter() - t


def instrumented_ingest(log: Path, folder: Path, i: int) -> dict[str, float]:
    from sqlmodel import Session

    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store import db

    url = round2.fresh_url(folder, f"floor-{i % 2}.db")
    engine = db.get_engine(url)
    meter = Meter()
    try:
        with Session(engine) as s, patched(meter):
            c0, t0 = time.process_time(), time.perf_counter()
            ingest_paths([log], session=s)
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    finally:
        engine.dispose()
        db._ENGINES.pop(url, None)
    out = {"cpu": cpu, "wall": wall, **meter.spent}
    out["xxh3"] = xxh3_seconds(log)
    return out


def child_cpu(argv: list[str]) -> float:
    c = round2._children_cpu()
    subprocess.run(argv, check=True, cwd=ROOT)
    return round2._children_cpu() - c


def _med(xs: list[float]) -> str:
    return f"{round2.fmt(statistics.median(xs))} ({round2.fmt(min(xs))}-{round2.fmt(max(xs))})"


def _ratio(xs: list[float], base: list[float]) -> str:
    rs = [x / b for x, b in zip(xs, base, strict=True) if b > 0]
    return f"{statistics.median(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})"


PRIMITIVES = ("orjson", "sha256", "zstd", "sqlite", "xxh3")
IMPORTS = {
    "SQLAlchemy Core + SQLite dialect": "import sqlalchemy.engine, sqlalchemy.dialects.sqlite",
    "clawviz.store.models (SQLModel schema)": "import clawviz.store.models",
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--log", type=Path, default=ROOT / "bench/out/full/log-39MB.jsonl")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=ROOT / "bench/out/floor")
    a = p.parse_args(argv)
    if not a.log.exists():
        print(f"{a.log}: no such log (make it with: python bench/gen.py log {a.log} --mb 39)")
        return 2
    parse = round2.orjson_parse(a.log)
    parse()
    instrumented_ingest(a.log, a.out, 0)
    base: list[float] = []
    runs: list[dict[str, float]] = []
    starts: dict[str, list[float]] = {"python3 -c pass": [], "python3 -S -c pass": []}
    imports: dict[str, list[float]] = {k: [] for k in IMPORTS}
    for i in range(a.repeats):
        base.append(round2.measure(parse).cpu)
        runs.append(instrumented_ingest(a.log, a.out, i + 1))
        starts["python3 -c pass"].append(child_cpu([sys.executable, "-c", "pass"]))
        starts["python3 -S -c pass"].append(child_cpu([sys.executable, "-S", "-c", "pass"]))
        for k, code in IMPORTS.items():
            imports[k].append(
                child_cpu([sys.executable, "-c", code]) - starts["python3 -c pass"][-1]
            )
    size = a.log.stat().st_size / round2.MB
    print(f"{a.log.name} ({size:.0f} MB), {a.repeats} pairs; baseline orjson.loads per line: "
          f"{_med(base)} cpu\n")  # fmt: skip
    print("| part of the in-process ingest | seconds (median, min-max) | vs the parse |")
    print("|---|---|---|")

    def row(label: str, xs: list[float]) -> None:
        print(f"| {label} | {_med(xs)} | {_ratio(xs, base)} |")

    row("whole ingest, CPU", [r["cpu"] for r in runs])
    for k in PRIMITIVES:
        row(f"inside {k}", [r.get(k, 0.0) for r in runs])
    prim = [sum(r.get(k, 0.0) for k in PRIMITIVES) for r in runs]
    row("**all C primitives** (the floor if every Python line were free)", prim)
    row("decisions at ingest (Python: tree, classify, prune, persist)",
        [r["decisions"] for r in runs])  # fmt: skip
    row("Python of parse and write (the rest)",
        [r["cpu"] - p_ - r["decisions"] for r, p_ in zip(runs, prim, strict=True)])  # fmt: skip
    print()
    print("| interpreter start (child CPU) | seconds | vs the parse |")
    print("|---|---|---|")
    for k, xs in starts.items():
        row(k, xs)
        row(f"two of `{k}` (ingest, then episodes)", [2 * x for x in xs])
    print()
    print(
        "| import in `clawviz ingest` (child CPU less `python3 -c pass`) | seconds | vs the parse |"
    )
    print("|---|---|---|")
    for k, xs in imports.items():
        row(k, xs)
    print()
    print("| the commands row if every line of clawviz Python were free | seconds | vs the parse |")
    print("|---|---|---|")
    two = [2 * x for x in starts["python3 -c pass"]]
    schema = imports["clawviz.store.models (SQLModel schema)"]
    row("two starts + the schema import", [t + m for t, m in zip(two, schema, strict=True)])
    row("... + the C primitives of the ingest",
        [t + m + p_ for t, m, p_ in zip(two, schema, prim, strict=True)])  # fmt: skip
    dec = [r["decisions"] for r in runs]
    row("... + the decisions at ingest (as they cost now)",
        [t + m + p_ + d for t, m, p_, d in zip(two, schema, prim, dec, strict=True)])  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
