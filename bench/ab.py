"""Before/after of the issue-14 command row: `clawviz ingest LOG` then `clawviz --json episodes`
run from two checkouts, interleaved with the orjson parse (orjson, A, B, orjson, A, B, ...).

    git worktree add --detach /tmp/clawviz-base main
    python bench/ab.py --base /tmp/clawviz-base [--log bench/out/full/log-39MB.jsonl] [--repeats 5]

CPU time of the child processes (interpreter start and imports included), medians and spreads,
and each checkout's ratio to the orjson parse measured in the same round.
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


def commands(root: Path, url: str, log: Path) -> float:
    """CPU seconds of `ingest LOG` then `--json episodes` run from checkout `root`."""
    env = {**os.environ, "CLAWVIZ_NO_SAMPLES": "1", "PYTHONPATH": str(root)}
    c = round2._children_cpu()
    for argv in (["--db", url, "ingest", str(log)], ["--db", url, "--json", "episodes"]):
        p = subprocess.run([sys.executable, "-m", "clawviz", *argv], cwd=root, env=env,
                           capture_output=True)  # fmt: skip
        if p.returncode not in (0, 2):
            raise RuntimeError(f"{root}: {argv[2]} exit {p.returncode}: {p.stderr[-500:]!r}")
    return round2._children_cpu() - c


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, type=Path, help="the checkout to compare against")
    p.add_argument("--log", type=Path, default=ROOT / "bench" / "out" / "full" / "log-39MB.jsonl")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    db = ROOT / "bench" / "out" / "ab"
    parse = round2.orjson_parse(args.log)
    sides = {"orjson": None, "base": args.base.resolve(), "this": ROOT}
    res: dict[str, list[float]] = {k: [] for k in sides}
    for i in range(args.repeats):
        for name, root in sides.items():
            if root is None:
                res[name].append(round2.measure(parse).cpu)
            else:
                url = round2.fresh_url(db, f"ab-{name}.db")
                res[name].append(commands(root, url, args.log))
        print(i, {k: round(v[-1], 3) for k, v in res.items()}, flush=True)
    t = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"{args.log.name}, {args.repeats} rounds, {t}, load average {os.getloadavg()[0]:.1f}")
    for k, v in res.items():
        print(f"  {k}: {statistics.median(v):.3f} s cpu ({min(v):.3f}-{max(v):.3f})")
    for k in ("base", "this"):
        r = [b / a for a, b in zip(res["orjson"], res[k], strict=True)]
        print(f"  {k} / orjson: {statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
