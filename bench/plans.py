"""Issue 26 §3: every read a view makes, its plan and its time, on a small and a big store.

`python3 bench/plans.py --small URL --big URL [--repeats 3]` opens each view as
`bench/views.py` does (AppTest of app.py, every data cache cleared: a fresh session's first
view), records every SELECT the view sends to the store (SQLAlchemy's `before_cursor_execute`,
on every engine of the process), then runs each recorded statement again on its own store, with
its own parameters: `--repeats` times for its time, and once under the backend's planner
(SQLite: `EXPLAIN QUERY PLAN`; PostgreSQL: `EXPLAIN (ANALYZE, BUFFERS)`, whose buffer count is
the pages the statement touched).

What it answers, for a store too big to build here (1,000,000 episodes: about 56 GB of SQLite at
the bench generator's 5.6 GB per 100,000): a statement whose time stays flat from the small
store to the big one (100x the episodes) costs the same at any size; one whose time grows about
as the store does reads the store whole, and its plan says where (a `SCAN`, a `Seq Scan`). Those
are listed by name with their plan: they are what still grows.

The views: Runs first view, Runs filtered (status=dropped, by deep link), Episode first view of
a 15-call template episode (in both stores), Tasks first view.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import views  # noqa: E402

GROWING = {
    "episode", "call", "episode_status", "result", "source", "message", "search_doc",
    "runs_member", "runs_agg", "episode_dirty", "search_pending", "blob", "decision", "task",
}  # fmt: skip
"""Tables whose rows grow with the store (a `SCAN` of one is O(store))."""
ALIASES = {"e": "episode", "s": "episode_status", "r": "result", "c": "call"}
"""The aliases the project's hand-written SQL uses for them (SQLite's plan names the alias)."""
GROWTH = 3.0
"""A statement whose time grows more than this from the small store to the big one (and takes
over a millisecond there) grows with the store; the plans say why."""


@dataclass
class Seen:
    sql: str
    params: Any
    views: set[str] = field(default_factory=set)


def capture(url: str, page: str, query: dict[str, str]) -> list[tuple[str, Any]]:
    """The SELECTs a fresh first view of `page` sends to the store at `url`, in order."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    got: list[tuple[str, Any]] = []

    def listen(_conn: Any, _cur: Any, statement: str, parameters: Any, _ctx: Any, many: bool):
        head = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else ""
        if not many and head in ("SELECT", "WITH"):
            got.append((statement, parameters))

    event.listen(Engine, "before_cursor_execute", listen)
    try:
        views.page_once(url, page, query)
    finally:
        event.remove(Engine, "before_cursor_execute", listen)
    return got


def _norm(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()


def _raw(url: str) -> Any:
    from sqlalchemy import create_engine

    return create_engine(url).raw_connection()


def measure(url: str, sql: str, params: Any, repeats: int) -> tuple[float, list[str], int | None]:
    """(median seconds, plan lines, PostgreSQL buffers touched or None) of one statement."""
    raw = _raw(url)
    try:
        cur = raw.cursor()
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            cur.execute(sql, params) if params else cur.execute(sql)
            cur.fetchall()
            times.append(time.perf_counter() - t)
        buffers = None
        if url.startswith("sqlite"):
            cur.execute("EXPLAIN QUERY PLAN " + sql, params) if params else cur.execute(
                "EXPLAIN QUERY PLAN " + sql
            )
            plan = [str(r[-1]) for r in cur.fetchall()]
        else:
            explain = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) " + sql
            cur.execute(explain, params) if params else cur.execute(explain)
            plan = [str(r[0]) for r in cur.fetchall()]
            hits = [int(n) for line in plan for n in re.findall(r"(?:hit|read)=(\d+)", line)[:2]]
            top = [line for line in plan if "Buffers:" in line]
            buffers = sum(int(n) for n in re.findall(r"=(\d+)", top[0])) if top else sum(hits)
        raw.rollback()
        return statistics.median(times), plan, buffers
    finally:
        raw.close()


def scans(plan: list[str]) -> list[str]:
    """The plan lines that read a growing table whole."""
    out = []
    for line in plan:
        m = re.search(r"\bSCAN (\w+)", line) or re.search(r"Seq Scan on (\w+)", line)
        name = m.group(1).strip('"') if m else ""
        if ALIASES.get(name, name) in GROWING:
            out.append(line.strip())
    return out


VIEWS: dict[str, tuple[str, dict[str, str]]] = {
    "Runs": ("pages/runs.py", {}),
    "Runs, status=dropped": ("pages/runs.py", {"status": "dropped"}),
    "Episode": ("pages/episode.py", {}),  # episode filled in per store
    "Tasks": ("pages/tasks.py", {}),
}


def run(small: str, big: str, repeats: int) -> None:
    episode = views.typical_episode(small)
    per_store: dict[str, dict[str, Seen]] = {}
    for url in (small, big):
        seen: dict[str, Seen] = {}
        for name, (page, query) in VIEWS.items():
            q = {"episode": episode} if name == "Episode" else query
            views.page_once(url, page, q)  # warm imports and engine, as views.py does
            for sql, params in capture(url, page, q):
                s = seen.setdefault(_norm(sql), Seen(sql, params))
                s.views.add(name)
        per_store[url] = seen
    texts = [t for t in per_store[small] if t in per_store[big]]
    only = {u: [t for t in per_store[u] if t not in per_store[other]]
            for u, other in ((small, big), (big, small))}  # fmt: skip
    print(
        f"{len(texts)} distinct statements in both stores' views; {len(only[small])} only on "
        f"the small one, {len(only[big])} only on the big one"
    )
    rows = []
    for t in texts:
        a, b = per_store[small][t], per_store[big][t]
        ta, pa, ba = measure(small, a.sql, a.params, repeats)
        tb, pb, bb = measure(big, b.sql, b.params, repeats)
        rows.append((t, a.views | b.views, ta, tb, pa, pb, ba, bb))
    rows.sort(key=lambda r: r[3] / max(r[2], 1e-6), reverse=True)
    flat = grow = 0
    for t, vs, ta, tb, pa, pb, ba, bb in rows:
        same = [re.sub(r"\d+", "N", x) for x in pa] == [re.sub(r"\d+", "N", x) for x in pb]
        scanned = scans(pb)
        ratio = tb / max(ta, 1e-6)
        # The time decides: an ordered index scan under a LIMIT is a SCAN in SQLite's words
        # and O(page) in fact; a whole-table read shows as ~the stores' size ratio.
        bad = ratio > GROWTH and tb > 1e-3
        grow += bad
        flat += not bad
        mark = "GROWS" if bad else "flat "
        buf = f", buffers {ba} -> {bb}" if ba is not None else ""
        print(f"{mark} {ratio:7.2f}x  {ta * 1e3:8.2f} -> {tb * 1e3:8.2f} ms{buf}  "
              f"[{', '.join(sorted(vs))}]  {t[:150]}")  # fmt: skip
        if bad or scanned:
            for line in scanned or pb:
                print(f"        plan: {line}")
        if not same:
            print("        plan differs between the stores")
    print(
        f"{flat} statements flat (time within {GROWTH}x or under 1 ms on the big store), {grow} "
        "that grow with the store"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", required=True)
    p.add_argument("--big", required=True)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    run(a.small, a.big, a.repeats)


if __name__ == "__main__":
    main()
