"""What compiling the hot Python with mypyc would buy the issue-14 in-process ingest row.

    python bench/compiled.py [--log bench/out/full/log-39MB.jsonl] [--repeats 7] [--check]

Needs gcc, the Python headers of this interpreter (`python3-config --includes`) and mypy with
mypyc (`pip install mypy`). Nothing is compiled in the repository: the checkout's tracked files
are copied twice into `--work` (default: a `clawviz-mypyc` folder in the temp dir), `pure/`
and `compiled/`, and mypyc builds C extensions of the hot modules (`MODULES`) in `compiled/`
only (several minutes the first time; rebuilt only when a copied file changed). Python then
imports the `.so` beside each compiled `.py`.

Before building, both copies get one source rewrite, so the two differ only by compilation:
in the compiled modules, a SQLModel column read off its class inside a query (`Source.path`)
becomes `getattr(Source, "path")`. mypy types such an attribute as the row's value (`str`), and
compiled code checks that type where it reads it, so `Source.path.endswith(name)` (or
`col(Source.path)`) raises TypeError: it is an `InstrumentedAttribute`. `getattr` returns the
same object, typed Any.

`--check` runs the ingest and recon tests in the compiled copy, then `bench/storedump.py
compare` (every table of a fresh store, byte for byte) and `bench/decisions_dump.py` (every
decision) on the pure and the compiled copy.

The measurement: one long-lived child per copy, each warmed up with one ingest, then rounds of
the orjson parse of every line (the row's baseline, in this process), a pure ingest and a
compiled ingest (their order alternates by round), each into a fresh SQLite store, decisions at
the end included, as the row does. Each child splits its CPU time like `bench/floor.py`:
- the C primitives, by wrappers around `orjson.loads`/`dumps`, `hashlib.sha256`, the
  dialect's `do_execute`/`do_executemany`/`do_commit`, and zstd (a `ZstdCompressor` subclass
  put in `calls._local`: compiled code calls `calls.compress` directly, so a wrapper of that
  module attribute, as floor.py has, would see nothing),
- the decisions: from the commit that ends the parse and write to the end of the ingest
  (compiled `load` calls `decisions.ensure_analysis` directly too; the pure child finds which
  commit that is by wrapping `ensure_analysis`, and checks it gives the same time as the
  wrapper; the compiled child is told the commit's number and checks the total),
- the Python of parse and write: the rest.
Medians, spreads (min-max), each ratio per round against that round's parse; the load
average (`/proc/loadavg`) before and after.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import round2  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

MODULES = (
    "clawviz/ingest/exchange.py",
    "clawviz/ingest/sse.py",
    "clawviz/jobs/ingest.py",
    "clawviz/ingest/lines.py",
    "clawviz/ingest/bounded.py",
    "clawviz/ingest/results.py",
    *sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "clawviz" / "recon").glob("*.py")
        if p.name != "__init__.py"
    ),
)
"""The hot pure-Python modules mypyc compiles into working code (a cProfile of the 39 MB
ingest, self time: exchange 12.5%, sse 7.5%, calls 4.0%, recon/canonical 3.9%, markers 3.4%,
record 2.8%, load 2.6%, tree 2.6%, prune 1.4%, decisions 1.1%, matchview 1.1%, classify 1.0%),
and the rest of recon/ (the decisions). Left as Python, each tried:
- `clawviz/types.py`: compiled dataclasses have no `__dict__` (`record.py` calls `vars()` on
  them) and check field types in `__init__`, so a log value of the wrong type raises TypeError
  where the parse builds the Call, before `validate_call` can name it (test_ingest_fastpaths).
- `clawviz/store/calls.py`, `clawviz/store/decisions.py`: their code trusts the SQLModel
  annotations, which do not say what the rows hold at run time: packed columns declared `str`
  hold zstd bytes (`row.message_hashes`), `select(A, B)` yields `Row`s where a tuple is
  declared; compiled code checks each and raises TypeError (test_store, test_store_pack).
- `clawviz/ingest/record.py`: its pydantic models make mypyc emit C that does not compile
  (`CPyModule_pydantic___main` undeclared).
`clawviz/store/models.py` (SQLModel tables, built by pydantic's metaclass) and
`clawviz/settings.py` (not hot) were not tried."""

TESTS = (
    "tests/test_ingest.py",
    "tests/test_ingest_append.py",
    "tests/test_ingest_fastpaths.py",
    "tests/test_formats_sse_join.py",
    "tests/test_decisions_at_ingest.py",
    "tests/test_tree.py",
    "tests/test_classify.py",
    "tests/test_prune.py",
    "tests/test_recon_claude_code_rules.py",
    "tests/test_recon_scaling.py",
    "tests/test_store.py",
    "tests/test_store_episodes.py",
    "tests/test_store_pack.py",
)
"""Tests of the compiled code: ingest, recon, the store's write and read paths."""

NOT_FOR_COMPILED = (
    "tests/test_recon_scaling.py::test_analysis_operations_grow_linearly_with_the_calls",
)
"""Counts Python function calls inside recon/ with `sys.setprofile`; compiled code makes none."""


# --- the copies and the build ----------------------------------------------------------------


def _tables() -> list[str]:
    text = (ROOT / "clawviz" / "store" / "models.py").read_text()
    return re.findall(r"^class (\w+)\(SQLModel, table=True\)", text, re.M)


def wrap_columns(text: str, tables: list[str]) -> tuple[str, int]:
    """`Table.column` -> `getattr(Table, "column")` (not `Table.__table__`, not a method call)."""
    pattern = re.compile(rf"(?<![\w.`\"])({'|'.join(tables)})\.([a-z]\w*)\b(?!\s*\()")
    return pattern.subn(r'getattr(\1, "\2")', text)


def make_copies(work: Path) -> dict[str, int]:
    """Copy the checkout's tracked files into work/pure and work/compiled, with the rewrite."""
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.split(b"\0")
    tables = _tables()
    rewrites: dict[str, int] = {}
    for side in ("pure", "compiled"):
        dest = work / side
        for name in (f.decode() for f in files if f):
            src = ROOT / name
            if not src.is_file():
                continue  # deleted in the working tree
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            data = src.read_bytes()
            if name in MODULES:
                text, n = wrap_columns(data.decode(), tables)
                data = text.encode()
                rewrites[name] = n
            if not target.exists() or target.read_bytes() != data:
                target.write_bytes(data)
    return rewrites


def _stamp(work: Path) -> str:
    h = hashlib.sha256(sys.version.encode())
    import mypy.version

    h.update(mypy.version.__version__.encode())
    for path in sorted((work / "compiled" / "clawviz").rglob("*.py")):
        h.update(str(path).encode() + path.read_bytes())
    return h.hexdigest()


def build(work: Path, rebuild: bool) -> None:
    """mypyc the MODULES in work/compiled (skipped when nothing changed since the last build)."""
    side = work / "compiled"
    stamp = side / ".mypyc-stamp"
    if not rebuild and stamp.exists() and stamp.read_text() == _stamp(work):
        print(f"compiled copy up to date: {side}")
        return
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        raise SystemExit("needs a C compiler (gcc)")
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").exists():
        raise SystemExit(f"needs the Python headers ({include}/Python.h)")
    for so in (side / "clawviz").rglob("*.so"):
        so.unlink()
    print(f"mypyc {len(MODULES)} modules in {side} (minutes) ...", flush=True)
    t = time.perf_counter()
    argv = [sys.executable, "-c", "import sys; from mypyc.__main__ import main; main()"]
    done = subprocess.run([*argv, *MODULES], cwd=side, capture_output=True, text=True)
    log = side / "mypyc-build.log"
    log.write_text(done.stdout + done.stderr)
    if done.returncode:
        raise SystemExit(f"mypyc failed ({log}):\n{(done.stdout + done.stderr)[-3000:]}")
    built = sorted(str(p.relative_to(side)) for p in (side / "clawviz").rglob("*.so"))
    print(f"  built {len(built)} extensions in {time.perf_counter() - t:.0f} s")
    stamp.write_text(_stamp(work))


# --- checks -------------------------------------------------------------------------------


def check(work: Path, log: Path) -> bool:
    pure, comp = work / "pure", work / "compiled"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    ok = True
    print("pytest in the compiled copy:", " ".join(TESTS), flush=True)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
        + list(TESTS)
        + [f"--deselect={t}" for t in NOT_FOR_COMPILED],
        cwd=comp,
        env=env,
        capture_output=True,
        text=True,
    )
    print("  " + (r.stdout.strip().splitlines() or ["(no output)"])[-1])
    ok &= r.returncode == 0
    for line in r.stdout.splitlines():
        if line.startswith(("FAILED", "ERROR")):
            print("  " + line[:160])
    logs = [str(log), "sample_logs", "tests/data/recorded"]
    print("storedump compare pure compiled:", " ".join(logs), flush=True)
    r = subprocess.run(
        [sys.executable, "bench/storedump.py", "compare", str(pure), *logs],
        cwd=comp,
        env=env,
        capture_output=True,
        text=True,
    )
    print("  " + "\n  ".join(r.stdout.strip().splitlines()[-4:]))
    ok &= r.returncode == 0
    digests = []
    for side in (pure, comp):
        r = subprocess.run(
            [sys.executable, "bench/decisions_dump.py", "--root", str(side), "--big"],
            cwd=side,
            env=env,
            capture_output=True,
            text=True,
        )
        if r.returncode:
            print(r.stderr[-2000:])
        digests.append(r.stdout)
    same = digests[0] == digests[1] and bool(digests[0])
    n = len(digests[0].splitlines())
    print(f"decisions_dump --big: {n} lines, pure and compiled {'identical' if same else 'DIFFER'}")
    ok &= same
    return ok


# --- the measurement -----------------------------------------------------------------------

CHILD = r"""
import hashlib, json, sys, time
from pathlib import Path
import orjson, zstandard
from sqlalchemy.engine import default
from sqlmodel import Session
sys.path.insert(0, "bench")
from floor import Meter, xxh3_seconds
import round2
from clawviz.jobs import analyse as decisions
from clawviz.store import calls, db
from clawviz.jobs import ingest as load
log, folder, k_given = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
meter = Meter()
for owner, attr, name in [
    (orjson, "loads", "orjson"), (orjson, "dumps", "orjson"), (hashlib, "sha256", "sha256"),
    (default.DefaultDialect, "do_execute", "sqlite"),
    (default.DefaultDialect, "do_executemany", "sqlite"),
    (default.DefaultDialect, "do_commit", "sqlite"),
]:
    setattr(owner, attr, meter.wrap(name, getattr(owner, attr)))
class TimedCompressor(zstandard.ZstdCompressor):
    compress = meter.wrap("zstd", zstandard.ZstdCompressor.compress)
calls._local.zstd = (TimedCompressor(level=calls.PACK_LEVEL), zstandard.ZstdDecompressor())
state = {}
class CountingSession(Session):
    def commit(self):
        super().commit()
        state["commits"] += 1
        if state["commits"] == state["k"]:
            meter.paused = True
            state["t_dec"] = time.process_time()
real_ensure = decisions.ensure_analysis
def ensure(*a, **k):
    state["k_seen"] = state["commits"]
    t = time.process_time()
    try:
        return real_ensure(*a, **k)
    finally:
        state["dec_wrap"] = time.process_time() - t
decisions.ensure_analysis = ensure
compiled = load.__file__.endswith(".so")
print(json.dumps({"compiled": compiled, "load": load.__file__}), flush=True)
i = 0
for cmd in sys.stdin:
    i += 1
    url = round2.fresh_url(folder, f"compiled-{i % 2}.db")
    engine = db.get_engine(url)
    for key in meter.spent:
        meter.spent[key] = 0.0
    meter.paused = False
    state.clear()
    state.update(commits=0, k=k_given, k_seen=-1, dec_wrap=-1.0, t_dec=None)
    with CountingSession(engine) as s:
        c = time.process_time()
        load.ingest_paths([log], session=s)
        end = time.process_time()
    meter.paused = False
    engine.dispose()
    db._ENGINES.pop(url, None)
    out = dict(meter.spent, cpu=end - c, commits=state["commits"], k_seen=state["k_seen"],
               dec_wrap=state["dec_wrap"], xxh3=xxh3_seconds(Path(log)))
    out["decisions"] = end - state["t_dec"] if state["t_dec"] is not None else -1.0
    print(json.dumps(out), flush=True)
"""


class Child:
    def __init__(self, root: Path, log: Path, folder: Path, k: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "CLAWVIZ_NO_SAMPLES": "1", "PYTHONPATH": str(root)}
        self.p = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(log), str(folder), str(k)],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.info = self._read()

    def _read(self) -> dict[str, object]:
        assert self.p.stdout is not None
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("the child ended (see its error above)")
        return json.loads(line)

    def run(self) -> dict[str, float]:
        assert self.p.stdin is not None
        self.p.stdin.write("run\n")
        self.p.stdin.flush()
        return self._read()  # type: ignore[return-value]

    def close(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.close()
        self.p.wait(timeout=60)


PRIMITIVES = ("orjson", "zstd", "sqlite", "sha256", "xxh3")


def _med(xs: list[float]) -> str:
    return f"{round2.fmt(statistics.median(xs))} ({round2.fmt(min(xs))}-{round2.fmt(max(xs))})"


def _ratio(xs: list[float], base: list[float]) -> str:
    rs = [x / b for x, b in zip(xs, base, strict=True)]
    return f"{statistics.median(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})"


def _parts(r: dict[str, float]) -> dict[str, float]:
    prim = sum(r.get(k, 0.0) for k in PRIMITIVES)
    return {
        "whole ingest, CPU": r["cpu"],
        **{f"inside {k}": r.get(k, 0.0) for k in PRIMITIVES},
        "**all C primitives**": prim,
        "decisions at ingest": r["decisions"],
        "Python of parse and write (the rest)": r["cpu"] - prim - r["decisions"],
    }


def measure(work: Path, log: Path, repeats: int) -> None:
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    folder = Path(tempfile.mkdtemp(prefix="clawviz-mypyc-stores-"))
    pure = Child(work / "pure", log, folder / "pure", -1)
    first = pure.run()  # warm-up; finds the commit before the decisions
    k = int(first["k_seen"])
    if k < 1:
        raise RuntimeError("the pure child never entered decisions.ensure_analysis")
    pure.close()
    pure = Child(work / "pure", log, folder / "pure", k)
    comp = Child(work / "compiled", log, folder / "compiled", k)
    if pure.info["compiled"] or not comp.info["compiled"]:
        raise RuntimeError(f"copies mixed up: {pure.info} {comp.info}")
    pure.run()
    comp.run()
    parse = round2.orjson_parse(log)
    parse()
    base: list[float] = []
    runs: dict[str, list[dict[str, float]]] = {"pure": [], "compiled": []}
    for i in range(repeats):
        base.append(round2.measure(parse).cpu)
        order = [("pure", pure), ("compiled", comp)]
        for name, child in order if i % 2 == 0 else order[::-1]:
            runs[name].append(child.run())
    pure.close()
    comp.close()
    shutil.rmtree(folder, ignore_errors=True)
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    for name, rs in runs.items():
        for r in rs:
            if r["commits"] != first["commits"] or r["decisions"] < 0:
                raise RuntimeError(f"{name}: {r['commits']} commits, the pure warm-up {first}")
    gap = [abs(r["decisions"] - r["dec_wrap"]) for r in runs["pure"]]
    size = log.stat().st_size / round2.MB
    print(f"\n{log.name} ({size:.0f} MB), {repeats} rounds (parse, pure, compiled; the last two")
    print(f"alternate); load average {' '.join(load_before)} before, {' '.join(load_after)} after")
    print(f"baseline orjson.loads per line: {_med(base)} cpu; pure child's decisions by commit vs")
    print(f"by wrapping ensure_analysis: at most {max(gap) * 1e3:.1f} ms apart\n")
    print("| part of the in-process ingest | pure | vs the parse | compiled | vs the parse "
          "| compiled / pure |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    pure_parts = [_parts(r) for r in runs["pure"]]
    comp_parts = [_parts(r) for r in runs["compiled"]]
    for label in pure_parts[0]:
        p = [x[label] for x in pure_parts]
        c = [x[label] for x in comp_parts]
        rel = [a / b for a, b in zip(c, p, strict=True) if b > 0]
        rel_s = f"{statistics.median(rel):.2f} ({min(rel):.2f}-{max(rel):.2f})" if rel else ""
        print(f"| {label} | {_med(p)} | {_ratio(p, base)} | {_med(c)} | {_ratio(c, base)} "
              f"| {rel_s} |")  # fmt: skip


ONCE = r"""
import sys
from pathlib import Path
from sqlmodel import Session
from clawviz.store import db
import clawviz.jobs.ingest as load
log, path, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
for suffix in ("", "-wal", "-shm"):
    Path(str(path) + suffix).unlink(missing_ok=True)
engine = db.get_engine(f"sqlite:///{path}")
if mode == "ingest":
    with Session(engine) as s:
        load.ingest_paths([log], session=s)
"""


def callgrind(work: Path, log: Path) -> None:
    """One cold ingest of `log` (decisions included) per copy, net of its imports, and the
    orjson parse of every line net of `import orjson`: instructions and ratios."""
    folder = Path(tempfile.mkdtemp(prefix="clawviz-mypyc-cg-"))
    py = sys.executable
    loop = "import sys, orjson\nfor line in open(sys.argv[1], 'rb'):\n    orjson.loads(line)\n"
    parse = round2.instructions([py, "-c", loop, str(log)], work / "pure")
    parse -= round2.instructions([py, "-c", "import orjson"], work / "pure")
    print(f"\ncallgrind, one cold ingest of {log.name}, decisions included, net of imports:")
    print(f"| | instructions | vs the orjson parse ({parse / 1e6:,.0f} M) |\n|---|---|---|")
    counts = {}
    for side in ("pure", "compiled"):
        db = str(folder / f"{side}.db")
        once = [py, "-c", ONCE, str(log), db]
        full = round2.instructions([*once, "ingest"], work / side)
        counts[side] = full - round2.instructions([*once, "import"], work / side)
        print(f"| {side} | {counts[side] / 1e6:,.0f} M | {counts[side] / parse:.2f}x |", flush=True)
    print(f"| compiled / pure | {counts['compiled'] / counts['pure']:.3f} | |")
    shutil.rmtree(folder, ignore_errors=True)


STAGES = r"""
import sys, time
from pathlib import Path
import orjson
from clawviz.jobs import ingest as load
from clawviz.ingest.exchange import MessageCache, parse_exchange
from clawviz.recon.pipeline import analyse_episode
from clawviz.types import call_order_key
lines = Path(sys.argv[1]).read_bytes().splitlines()
print(load.__file__.endswith(".so"), flush=True)
for cmd in sys.stdin:
    c = time.process_time()
    cache, calls = MessageCache(), {}
    for n, data in enumerate(lines, 1):
        p = parse_exchange(orjson.loads(data), source_file="log", line=n, call_id=f"log:{n}",
                           file_episode="log", cache=cache)
        calls.setdefault(p.call.episode_id, []).append(p.call)
    parse = time.process_time() - c
    c = time.process_time()
    for ep in calls.values():
        analyse_episode(sorted(ep, key=call_order_key), reward=None)
    print(parse, time.process_time() - c, flush=True)
"""


def stages(work: Path, log: Path, repeats: int) -> None:
    """The compiled code alone: `parse_exchange` of every line (exchange, sse, recon/canonical)
    and `analyse_episode` of every episode (recon/), no store, pure vs compiled, interleaved."""
    kids = {}
    for side in ("pure", "compiled"):
        env = {**os.environ, "CLAWVIZ_NO_SAMPLES": "1", "PYTHONPATH": str(work / side)}
        kids[side] = subprocess.Popen(
            [sys.executable, "-c", STAGES, str(log)],
            cwd=work / side,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert kids[side].stdout is not None
        if kids[side].stdout.readline().strip() != str(side == "compiled"):
            raise RuntimeError(f"{side}: wrong copy imported")
    got: dict[str, list[list[float]]] = {"pure": [], "compiled": []}
    for i in range(repeats + 1):
        order = ["pure", "compiled"] if i % 2 == 0 else ["compiled", "pure"]
        for side in order:
            p = kids[side]
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write("run\n")
            p.stdin.flush()
            nums = [float(x) for x in p.stdout.readline().split()]
            if i:  # the first round warms up
                got[side].append(nums)
    for p in kids.values():
        assert p.stdin is not None
        p.stdin.close()
        p.wait(timeout=60)
    print(f"\nthe compiled code alone, {repeats} rounds, pure vs compiled interleaved:")
    print("| stage | pure | compiled | compiled / pure |\n|---|---|---|---|")
    for j, name in enumerate(("parse_exchange of every line", "analyse_episode of every episode")):
        a = [x[j] for x in got["pure"]]
        b = [x[j] for x in got["compiled"]]
        rel = [y / x for x, y in zip(a, b, strict=True)]
        print(f"| {name} | {_med(a)} | {_med(b)} | "
              f"{statistics.median(rel):.2f} ({min(rel):.2f}-{max(rel):.2f}) |")  # fmt: skip


def run_py(work: Path, log_dir: Path, rounds: int) -> None:
    """`bench/run.py --only fig_r2_ingest` from each copy, alternating (pure, compiled, ...).

    Each run is itself interleaved with its orjson baseline; the bench logs are linked from
    `log_dir` (run.py would otherwise generate them in the copy)."""
    for side in ("pure", "compiled"):
        full = work / f"out-{side}" / "full"
        full.mkdir(parents=True, exist_ok=True)
        for src in log_dir.glob("log-*MB.jsonl*"):
            if not (full / src.name).exists():
                (full / src.name).symlink_to(src)
    for i in range(rounds):
        for side in ("pure", "compiled"):
            r = subprocess.run(
                [sys.executable, "bench/run.py", "--only", "fig_r2_ingest", "--no-readme"]
                + ["--out", str(work / f"out-{side}")],
                cwd=work / side,
                capture_output=True,
                text=True,
            )
            rows = [ln for ln in r.stdout.splitlines() if ln.startswith("| in-process ingest")]
            print(f"run.py round {i + 1}, {side}:", *(rows or [r.stdout[-800:], r.stderr[-800:]]),
                  sep="\n  ", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Needs: gcc (or cc), this Python's headers (Python.h), mypy with mypyc.",
    )
    p.add_argument("--log", type=Path, default=ROOT / "bench/out/full/log-39MB.jsonl")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "clawviz-mypyc")
    p.add_argument("--rebuild", action="store_true", help="run mypyc even if nothing changed")
    p.add_argument("--check", action="store_true", help="tests, store and decisions digests")
    p.add_argument("--no-measure", action="store_true", help="build (and --check) only")
    p.add_argument("--stages", action="store_true", help="also time the compiled stages alone")
    p.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind)")
    p.add_argument(
        "--run-py", type=int, default=0, metavar="N",
        help="also N alternating rounds of `bench/run.py --only fig_r2_ingest` from each copy",
    )  # fmt: skip
    a = p.parse_args(argv)
    if not a.log.exists():
        print(f"{a.log}: no such log (make it with: python bench/gen.py log {a.log} --mb 39)")
        return 2
    a.log = a.log.resolve()
    rewrites = make_copies(a.work)
    print(
        "column reads rewritten to getattr, per module:",
        ", ".join(f"{Path(k).name} {v}" for k, v in rewrites.items() if v),
    )
    build(a.work, a.rebuild)
    if a.check and not check(a.work, a.log):
        print("CHECK FAILED")
        return 1
    if not a.no_measure:
        measure(a.work, a.log, a.repeats)
    if a.stages:
        stages(a.work, a.log, a.repeats)
    if a.callgrind:
        callgrind(a.work, a.log)
    if a.run_py:
        run_py(a.work, a.log.parent, a.run_py)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
