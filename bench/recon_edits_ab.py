"""Before/after of the reconstruction (issue 29: the edit-rule alignment in the parent search,
the stricter self-check): `analyse_episode` on every committed recording, the bundled samples
and a long synthetic episode, from two checkouts, interleaved (A, B, A, B, ...).

    git archive main clawviz | tar -x -C /tmp/clawviz-base
    python bench/recon_edits_ab.py --base /tmp/clawviz-base [--repeats 5]

Each round runs a child per checkout: it ingests the inputs into an in-memory store (not
timed), then times `analyse_episode` over all their episodes (process CPU time, 3 passes).
Medians, spreads and the ratio of this checkout to the base measured in the same rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import glob, json, shutil, sys, tempfile, time
from pathlib import Path
from sqlmodel import Session, select
from clawviz.jobs.ingest import ingest_paths
from clawviz.recon.pipeline import analyse_episode
from clawviz.store.calls import load_calls
from clawviz.store.db import init_db
from clawviz.store.models import CallRow
from sqlalchemy import create_engine
root = Path(sys.argv[1])
tmp = Path(tempfile.mkdtemp())
paths = [root / "sample_logs" / "exchanges"]
for f in sorted(glob.glob(str(root / "tests/data/recorded/*/*/exchanges.jsonl*"))):
    d = tmp / str(abs(hash(f)))
    d.mkdir()
    shutil.copy(f, d / Path(f).name)
    paths.append(d)
engine = create_engine("sqlite://")
init_db(engine)
with Session(engine) as s:
    ingest_paths(paths, session=s)
    s.commit()
    eps = sorted({c.episode_id for c in s.exec(select(CallRow)) if c.episode_id})
    calls = [load_calls(s, e) for e in eps]
t0 = time.process_time()
for _ in range(3):
    for cs in calls:
        analyse_episode(cs, reward=1.0)
print(json.dumps({"cpu": time.process_time() - t0, "episodes": len(calls),
                  "calls": sum(map(len, calls))}))
"""


def run(code_root: Path) -> dict:
    env = {**os.environ, "CLAWVIZ_NO_SAMPLES": "1", "PYTHONPATH": str(code_root)}
    p = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT)], env=env, capture_output=True, text=True,
        cwd=code_root, check=True,
    )  # fmt: skip
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", type=Path, required=True)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    base, this, ratios = [], [], []
    for _ in range(a.repeats):
        b, t = run(a.base)["cpu"], run(ROOT)
        base.append(b)
        this.append(t["cpu"])
        ratios.append(t["cpu"] / b)
    print(f"{t['episodes']} episodes, {t['calls']} calls, 3 passes per round")
    for name, xs in (("base", base), ("this", this), ("this/base", ratios)):
        med = statistics.median(xs)
        print(f"{name:>10}: median {med:.3f}  min {min(xs):.3f}  max {max(xs):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
