"""The decisions made at the end of ingest, timed on two checkouts interleaved (A B A B ...).

    python3 bench/decisions_ab.py --base /tmp/base-checkout [--head .] [--pairs 7] [--log LOG]

Each checkout runs in a child process of its own that ingests the log once into a fresh SQLite
store, keeping the calls ingest holds in memory when it hands them to
`jobs.analyse.ensure_analysis`. Then, on each turn, the child times (CPU of its process):

- `analyse`: `recon.pipeline.analyse_episode` of every episode from those calls (pure);
- `ensure`: `ensure_analysis` as ingest runs it (stale query, analysis, decision rows,
  statuses, GRPO groups, commits), after its stored decisions were deleted (not timed).

Each turn reports the fastest of `--inner` runs of each (a load spike on the shared machine then
costs a turn less often). Both run with the cyclic garbage collector off and with
clawviz.recon's memo caches emptied, as at the end of an ingest (which turns the collector off
and runs in a fresh process).

With `--ingest N`, N more pairs time a whole `ingest_paths` of the log into a fresh store
(`ingest`), and the `ensure_analysis` inside it (`at ingest`).

The parent alternates the children turn by turn (base, each `--also`, head; then again) and
prints medians, spreads (min-max) and the median of the per-round ratios to the base.
Default log: the 39 MB bench log.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LOG = "log-39MB.jsonl"


def _default_log() -> Path:
    for base in (HERE / "out" / "full", Path("/work/main/bench/out/full")):
        if (base / LOG).is_file():
            return base / LOG
    raise SystemExit(f"{LOG}: not found (make it with bench/gen.py)")


def child(root: Path, log: Path, inner: int) -> None:
    sys.path.insert(0, str(root))
    from sqlmodel import Session

    from clawviz.jobs import analyse as decisions
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.settings import DEFAULT_SETTINGS
    from clawviz.store import db

    captured: dict[str, Any] = {}
    original = decisions.ensure_analysis

    def capture(session: Any, settings: Any = DEFAULT_SETTINGS, **kw: Any) -> None:
        captured["held"] = {k: list(v) for k, v in (kw.get("held") or {}).items()}
        captured["only"] = set(kw.get("only") or ())
        original(session, settings, **kw)

    decisions.ensure_analysis = capture  # type: ignore[assignment]
    tmp = Path(tempfile.mkdtemp(prefix="decisions-ab-"))
    engine = db.get_engine(f"sqlite:///{tmp / 'store.db'}")
    with Session(engine) as s:
        ingest_paths([log], session=s)
        s.commit()
    decisions.ensure_analysis = original
    held, only = captured["held"], captured["only"]
    episodes = [sorted(calls, key=decisions.load_order) for calls in held.values()]
    print(json.dumps({"ready": True, "episodes": len(held)}), flush=True)
    n_ingest = 0
    for line in sys.stdin:
        if line.strip() == "ingest":
            n_ingest += 1
            url = f"sqlite:///{tmp / f'ingest-{n_ingest}.db'}"
            inside: list[float] = []

            def timed(*a: Any, _inside: list[float] = inside, **kw: Any) -> None:
                c = time.process_time()
                original(*a, **kw)
                _inside.append(time.process_time() - c)

            decisions.ensure_analysis = timed
            with Session(db.get_engine(url)) as s:
                _cold()
                gc.collect()
                c0 = time.process_time()
                ingest_paths([log], session=s)
                s.commit()
                took = time.process_time() - c0
            decisions.ensure_analysis = original
            db.get_engine(url).dispose()
            db._ENGINES.pop(url, None)
            print(json.dumps({"ingest": took, "at ingest": sum(inside)}), flush=True)
            continue
        if line.strip() != "run":
            break
        analyse = min(_analyse(episodes) for _ in range(inner))
        ensure = min(_ensure(engine, held, only) for _ in range(inner))
        print(json.dumps({"analyse": analyse, "ensure": ensure}), flush=True)
    engine.dispose()
    for p in tmp.iterdir():
        p.unlink()
    tmp.rmdir()


def _cold() -> None:
    """Empty the memo caches of clawviz.recon (`lru_cache`): ingest analyses in a fresh process."""
    for name, mod in list(sys.modules.items()):
        if name.startswith("clawviz.recon.") and mod is not None:
            for obj in list(vars(mod).values()):
                if callable(getattr(obj, "cache_clear", None)):
                    obj.cache_clear()
    # Memos that are plain dicts (by object id).
    for name in ("_PREFIXES", "_PAIRS"):
        getattr(sys.modules.get("clawviz.recon.canonical"), name, {}).clear()


def _analyse(episodes: list[list[Any]]) -> float:
    """CPU seconds of `analyse_episode` over every episode, caches empty, collector off."""
    from clawviz.recon.pipeline import analyse_episode

    _cold()
    gc.collect()
    gc.disable()  # as during ingest (`ingest_paths` turns the cyclic collector off)
    c0 = time.process_time()
    for calls in episodes:
        analyse_episode(calls, reward=None)
    took = time.process_time() - c0
    gc.enable()
    return took


def _ensure(engine: Any, held: dict[str, list[Any]], only: set[str]) -> float:
    """CPU seconds of `ensure_analysis` as ingest calls it, its stored decisions deleted first."""
    from sqlalchemy import delete
    from sqlmodel import Session

    from clawviz.jobs import analyse as decisions
    from clawviz.settings import DEFAULT_SETTINGS
    from clawviz.store.models import DecisionRow, EpisodeStatus

    h = DEFAULT_SETTINGS.settings_hash
    with Session(engine) as s:
        for model in (DecisionRow, EpisodeStatus):
            table: Any = getattr(model, "__table__")  # noqa: B009 (SQLModel types it loosely)
            s.execute(delete(table).where(table.c.settings_hash == h))
        s.commit()
        _cold()
        gc.collect()
        gc.disable()
        c0 = time.process_time()
        decisions.ensure_analysis(s, held={k: list(v) for k, v in held.items()}, only=only)
        took = time.process_time() - c0
        gc.enable()
    return took


class Child:
    def __init__(self, root: Path, log: Path, inner: int) -> None:
        self.root = root
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--child", str(root), "--log", str(log)]
            + ["--inner", str(inner)],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.ready = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.root}: child ended")
        return json.loads(line)

    def run(self, what: str = "run") -> dict[str, float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{what}\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def _stats(vals: list[float]) -> str:
    return (
        f"{statistics.median(vals) * 1000:.0f} ms ({min(vals) * 1000:.0f}-{max(vals) * 1000:.0f})"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--base", help="the baseline checkout")
    ap.add_argument("--head", default=str(HERE.parent), help="the measured checkout")
    ap.add_argument(
        "--also", action="append", default=[], help="more checkouts, measured in the rotation"
    )
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument(
        "--inner", type=int, default=3, help="runs per turn, the fastest reported (default 3)"
    )
    ap.add_argument("--log", default=None)
    ap.add_argument(
        "--ingest", type=int, default=0, help="also N pairs of whole in-process ingests"
    )
    args = ap.parse_args()
    log = Path(args.log) if args.log else _default_log()
    if args.child:
        child(Path(args.child), log, args.inner)
        return 0
    if not args.base:
        ap.error("--base is required")
    roots = [args.base, *args.also, args.head]
    kids = [Child(Path(r), log, args.inner) for r in roots]
    print(f"log {log.name}: {kids[0].ready['episodes']} episodes; base {args.base}")
    for k in kids:
        k.run()  # warm-up
    samples: list[list[dict[str, float]]] = [[] for _ in kids]
    for _ in range(args.pairs):
        for k, out in zip(kids, samples, strict=True):
            out.append(k.run())
    kinds = ["analyse", "ensure"]
    if args.ingest:
        kinds += ["ingest", "at ingest"]
        for _ in range(args.ingest):
            for k, out in zip(kids, samples, strict=True):
                out.append(k.run("ingest"))
    for k in kids:
        k.close()
    for kind in kinds:
        va = [s[kind] for s in samples[0] if kind in s]
        print(f"{kind:9} base {_stats(va)}  ({args.base})")
        for root, ss in zip(roots[1:], samples[1:], strict=True):
            vb = [s[kind] for s in ss if kind in s]
            rs = [y / x for x, y in zip(va, vb, strict=True) if x > 0]
            print(
                f"{'':9} {_stats(vb)}  /base {statistics.median(rs):.2f}x "
                f"({min(rs):.2f}-{max(rs):.2f})  ({root})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
