"""What streaming the workspace into the sandbox's tmpfs costs (issue 28, no host folder bound).

Interleaved in one run, medians and spreads of N rounds, ratios against baselines of the same
run (nothing asserts a timing):
- `start`: run_checker with a trivial checker on a one-file workspace (the sandbox's fixed cost);
- `stream`: the same checker on a workspace of FILES files, TOTAL bytes (streamed as a tar into
  the tmpfs quota, the path since issue 28);
- `host_copy`: archive.copy_workspace of the same tree to a host temp folder (what the bind-mount
  path paid before the checker started, before issue 28), measured alone.

Run: python3 bench/sandbox_copy.py [--rounds 5] [--files 2000] [--mb 40]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clawviz.review.archive import copy_workspace  # noqa: E402
from clawviz.review.checker import run_checker  # noqa: E402


def _tree(root: Path, files: int, total: int) -> None:
    size = max(1, total // files)
    for i in range(files):
        d = root / f"d{i % 50}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_bytes(bytes([65 + i % 26]) * size)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--mb", type=int, default=40)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="clawviz-bench-"))
    try:
        task = work / "task"
        (task / "reward").mkdir(parents=True)
        (task / "reward" / "check.py").write_text(
            "import json, os\n"
            "n = sum(len(f) for _, _, f in os.walk('/workspace'))\n"
            "print(json.dumps({'files': float(n)}))\n"
        )
        small, big = work / "small", work / "big"
        small.mkdir()
        (small / "a.txt").write_text("a")
        _tree(big, a.files, a.mb << 20)
        times: dict[str, list[float]] = {"start": [], "stream": [], "host_copy": []}
        for _ in range(a.rounds):
            for name in times:
                t0 = time.perf_counter()
                if name == "host_copy":
                    dest = work / "copy"
                    copy_workspace(big, dest)
                    shutil.rmtree(dest)
                else:
                    res = run_checker(task, small if name == "start" else big, timeout_s=120)
                    want = 1.0 if name == "start" else float(a.files)
                    assert res.scores == {"files": want}, res.message
                times[name].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"workspace: {a.files} files, {a.mb} MB; {a.rounds} rounds, interleaved")
        for k, v in times.items():
            print(f"  {k:10s} median {med[k]:.3f} s  (min {min(v):.3f}, max {max(v):.3f})")
        print(f"  stream / start     = {med['stream'] / med['start']:.2f}x")
        extra = (med["stream"] - med["start"]) / med["host_copy"]
        print(f"  (stream - start) / host_copy = {extra:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
