"""The app's store reads under a given SQLite page cache, in one fresh process (issue 26).

    python3 bench/page_cache_views.py sqlite:////tmp/v/store-100000.db 2000 EPISODE_ID
    python3 bench/page_cache_views.py sqlite:////tmp/v/store-100000.db 32768 EPISODE_ID

Reads what a Runs first view, a status=dropped Runs view, one episode and the Tasks queue read,
each twice on one engine, with `store.db.SQLITE_CACHE_KB` (the views' cache; bulk work has
`BULK_CACHE_KB`) set to the second argument (KB).
Prints JSON: ms per view, first read (a fresh connection) and second (the pooled one). Run it
alternately with both sizes; bench/README.md has the rounds.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from clawviz.store import db  # noqa: E402

db.SQLITE_CACHE_KB = int(sys.argv[2])
from sqlmodel import Session  # noqa: E402

from clawviz import store  # noqa: E402
from clawviz.jobs import episode_analysis  # noqa: E402
from clawviz.review import task_queue  # noqa: E402
from clawviz.settings import DEFAULT_SETTINGS as S  # noqa: E402
from clawviz.store.queries import EpisodeFilter, RunsQuery, runs_aggregates, runs_page  # noqa: E402

engine = db.get_engine(sys.argv[1])
h = S.settings_hash
eid = sys.argv[3]


def runs():
    with Session(engine) as s:
        runs_aggregates(s, h)
        runs_page(s, h, RunsQuery())


def runs_dropped():
    with Session(engine) as s:
        f = EpisodeFilter(statuses=("dropped",))
        runs_aggregates(s, h, f)
        runs_page(s, h, RunsQuery(filter=f))


def episode():
    with Session(engine) as s:
        store.load_calls(s, eid)
        episode_analysis(s, eid, S)


def tasks():
    with Session(engine) as s:
        task_queue(s, S)


out = {}
views = (("runs", runs), ("runs_dropped", runs_dropped), ("episode", episode), ("tasks", tasks))
for name, fn in views:
    t = []
    for _ in range(2):
        t0 = time.perf_counter()
        fn()
        t.append(round((time.perf_counter() - t0) * 1000, 1))
    out[name] = t
print(json.dumps(out))
