"""The Tasks queue's cost per view, with and without its cached pass over attempts (issue 26 §3).

    python3 bench/views.py build /tmp/v --episodes 100000
    python3 bench/tasks_queue.py --db sqlite:////tmp/v/store-100000.db --rounds 7

Each round times, in one process and alternating, CPU and wall of:
- `full`: `task_queue(session, settings)`, the pass over every result and episode that every
  rerun of the Tasks page made before the attempts revision;
- `cached`: what a rerun does now when no attempt changed: read `store.attempts_revision`,
  copy the summary as `st.cache_data` returns it (a pickle round trip), and
  `task_queue(session, settings, summary)` (tasks, reviews, findings, checker runs);
- `miss`: the first view, or the view after an attempt changed: the revision, the summary
  itself, its pickling into the cache, and the queue.
Both queues are checked to be the same rows (`as_dict` of each) before anything is timed.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine
from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from clawviz.review import attempt_summary, task_queue  # noqa: E402
from clawviz.settings import DEFAULT_SETTINGS  # noqa: E402
from clawviz.store import attempts_revision  # noqa: E402


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    settings = DEFAULT_SETTINGS
    engine = create_engine(args.db)
    with Session(engine) as s:
        cache = pickle.dumps(attempt_summary(s, settings))
        full = [r.as_dict() for r in task_queue(s, settings)]
        cached = [r.as_dict() for r in task_queue(s, settings, pickle.loads(cache))]
        assert full == cached, "the cached summary gives another queue"
    print(f"{len(full):,} tasks, summary {len(cache):,} bytes pickled")

    def run_full() -> None:
        with Session(engine) as s:
            task_queue(s, settings)

    def run_cached() -> None:
        with Session(engine) as s:
            attempts_revision(s)
            task_queue(s, settings, pickle.loads(cache))

    def run_miss() -> None:
        with Session(engine) as s:
            attempts_revision(s)
            summary = attempt_summary(s, settings)
            copy = pickle.loads(pickle.dumps(summary))
            task_queue(s, settings, copy)

    runs = {"full": run_full, "cached": run_cached, "miss": run_miss}
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
    for _ in range(args.rounds):
        for name, fn in runs.items():
            samples[name].append(_timed(fn))
    ratios = [f[1] / c[1] for f, c in zip(samples["full"], samples["cached"], strict=True)]
    for name, got in samples.items():
        wall = [w for w, _ in got]
        cpu = [c for _, c in got]
        print(
            f"{name:7s} wall {statistics.median(wall) * 1000:7.0f} ms "
            f"({min(wall) * 1000:.0f}-{max(wall) * 1000:.0f}), CPU "
            f"{statistics.median(cpu) * 1000:7.0f} ms ({min(cpu) * 1000:.0f}-{max(cpu) * 1000:.0f})"
        )
    print(
        f"full / cached, CPU per round: median {statistics.median(ratios):.1f}x "
        f"({min(ratios):.1f}-{max(ratios):.1f}), {args.rounds} rounds"
    )


if __name__ == "__main__":
    main()
