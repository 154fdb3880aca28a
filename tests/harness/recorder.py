"""What the npm harness recorders share (`record_pi.py`, `record_codex.py`).

A recorder installs its harness at a pinned version, then, per scenario, records one run in a
temporary folder (`run_folder`: HOME and the work folder with the scenario's `files`,
everything started stopped by PID, the folder removed unless `--keep`). `record_main` is the
command line: the scenarios named (or all of a folder), `--npm-dir`, `--keep`,
`--clawviz-src`, and, unless `--no-netns`, an `npm install` with the network followed by the
recording itself re-run in a network namespace with only loopback (`rig.run_offline`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .rig import Procs, npm_install, run_offline

Record = Callable[[Path, "Path | None", bool, "Path | None"], Path]
"""record(scenario_file, npm_dir, keep, clawviz_src) -> the recording's folder."""


@dataclass
class RunFolder:
    """One recording run: its temporary folder, processes, install and scenario."""

    tmp: Path
    procs: Procs
    bin_dir: Path
    home: Path
    work: Path
    scenario: dict[str, Any]


@contextmanager
def run_folder(
    harness: str, scenario_file: Path, spec: str, npm_dir: Path | None, keep: bool
) -> Iterator[RunFolder]:
    """A fresh temporary folder with HOME, the work folder (the scenario's `files` in it) and
    the harness installed (into `npm_dir` when given); on exit every process started through
    `procs` is stopped and the folder removed (kept with `keep`)."""
    scn = json.loads(scenario_file.read_text())
    procs = Procs()
    tmp = Path(tempfile.mkdtemp(prefix=f"rig-{harness}-{scn['name']}-"))
    try:
        bin_dir = npm_install(spec, npm_dir or tmp / "npm")
        home, work = tmp / "home", tmp / "work"
        for d in (home, work):
            d.mkdir(parents=True, exist_ok=True)
        for fname, text in scn.get("files", {}).items():
            (work / fname).write_text(text)
        yield RunFolder(tmp, procs, bin_dir, home, work, scn)
    finally:
        procs.stop_all()
        if keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def record_main(
    harness: str, spec: str, scenarios: Path, record: Record, argv: list[str] | None
) -> int:
    """`python3 -m tests.harness.record_<harness> [SCENARIO ...] [options]`."""
    module = f"tests.harness.record_{harness}"
    ap = argparse.ArgumentParser(prog=f"python3 -m {module}")
    ap.add_argument("scenarios", nargs="*")
    ap.add_argument("--npm-dir", type=Path, help="reuse this install folder")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--clawviz-src", type=Path, help="run `clawviz record` from this checkout")
    ap.add_argument("--no-netns", action="store_true", help="do not isolate the network")
    a = ap.parse_args(argv)
    files = [scenarios / f"{s}.json" for s in a.scenarios] or sorted(scenarios.glob("*.json"))
    if not a.no_netns and not os.environ.get("RIG_IN_NETNS"):
        # install with the network, then record in a namespace that has only loopback
        npm_dir = a.npm_dir or Path(tempfile.mkdtemp(prefix=f"rig-{harness}-npm-"))
        npm_install(spec, npm_dir)
        rest = [f.stem for f in files] + ["--npm-dir", str(npm_dir)]
        rest += ["--keep"] if a.keep else []
        rest += ["--clawviz-src", str(a.clawviz_src)] if a.clawviz_src else []
        try:
            return run_offline(module, rest)
        finally:
            if a.npm_dir is None:
                shutil.rmtree(npm_dir, ignore_errors=True)
    for f in files:
        print(f"recorded {record(f, a.npm_dir, a.keep, a.clawviz_src)}")
    return 0
