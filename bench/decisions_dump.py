"""A digest of every decision clawviz makes on the bench logs, sample logs and recordings.

For checking that a speed-up of the analysis changes no decision: run it on two checkouts and
diff the outputs (they must be identical).

    python3 bench/decisions_dump.py [--root CHECKOUT] [--big] > digest.txt

Each source is ingested into a fresh SQLite store (ingest stores the decisions from the calls
it holds in memory); then, per episode, one line with a digest of what the store holds (every
decision row, the status, reasons with evidence and pinned calls, paths, advantage, segments)
and a digest of `analyse_episode` run again on the calls reloaded from the store. `--big` adds
the 39 MB and 100 MB bench logs (`bench/out/full/`, made by `bench/gen.py`) and the 100- and
1,000-call episodes of `bench/run.py --only fig_analysis` (written by `bench/gen.py`).
`--verbose` prints the decisions themselves instead of their digests (to see what differs).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BIG = ("log-39MB.jsonl", "log-100MB.jsonl")


def _big_logs() -> list[Path]:
    """The bench logs, here or in the main checkout's bench/out (they are not committed)."""
    out = []
    for name in BIG:
        for base in (HERE / "out" / "full", Path("/work/main/bench/out/full")):
            if (base / name).is_file():
                out.append(base / name)
                break
        else:
            raise SystemExit(f"{name}: not found (make it with bench/gen.py)")
    return out


PLACES: list[tuple[str, str]] = []
"""(path, placeholder): the checkout and the temporary folder, which name files (an episode
of a log with no session id is named by its path), so two checkouts digest alike."""


def _neutral(text: str) -> str:
    for path, placeholder in PLACES:
        text = text.replace(path, placeholder)
    return text


def _digest(obj: Any, verbose: bool) -> str:
    text = _neutral(json.dumps(obj, sort_keys=True, default=str))
    return text if verbose else hashlib.sha256(text.encode()).hexdigest()[:16]


def _stored(session: Any, h: str) -> dict[str, Any]:
    """Per episode: its decision rows and status exactly as stored."""
    from sqlmodel import select

    from clawviz.store.models import DecisionRow, EpisodeStatus

    out: dict[str, Any] = {}
    for d in session.exec(select(DecisionRow).where(DecisionRow.settings_hash == h)):
        row = d.model_dump()
        out.setdefault(d.episode_id, {"decisions": {}, "status": None})["decisions"][d.call_id] = (
            row
        )
    for st in session.exec(select(EpisodeStatus).where(EpisodeStatus.settings_hash == h)):
        row = st.model_dump()
        row.pop("computed_at")
        row["reasons"] = json.loads(row.pop("reasons_json"))
        row["paths"] = json.loads(row.pop("paths_json"))
        out.setdefault(st.episode_id, {"decisions": {}, "status": None})["status"] = row
    return out


def _reanalysed(session: Any, episode_id: str, reward: float | None) -> dict[str, Any]:
    """`analyse_episode` of the episode's calls reloaded from the store."""
    from clawviz.recon.pipeline import analyse_episode
    from clawviz.store.calls import load_calls

    a = analyse_episode(load_calls(session, episode_id), reward=reward)
    return {
        "status": a.status,
        "reasons": [dataclasses.asdict(r) for r in a.reasons],
        "decisions": {k: dataclasses.asdict(v) for k, v in sorted(a.decisions.items())},
        "paths": [dataclasses.asdict(p) for p in a.paths],
        "n_segments": a.n_segments,
        "reward": a.reward,
    }


def dump_session(name: str, session: Any, verbose: bool) -> None:
    from clawviz.settings import DEFAULT_SETTINGS

    stored = _stored(session, DEFAULT_SETTINGS.settings_hash)
    for eid in sorted(stored):
        item = stored[eid]
        reward = item["status"]["reward"] if item["status"] else None
        again = _reanalysed(session, eid, reward) if eid else "unattached"
        eid_text = _neutral(eid) or "-"
        print(name, eid_text, _digest(item, verbose), _digest(again, verbose), flush=True)


def dump_paths(name: str, paths: list[str | os.PathLike[str]], tmp: Path, verbose: bool) -> None:
    from sqlmodel import Session

    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store import db

    url = f"sqlite:///{tmp / (name.replace('/', '_') + '.db')}"
    engine = db.get_engine(url)
    try:
        with Session(engine) as session:
            ingest_paths(paths, session=session)
            session.commit()
            dump_session(name, session, verbose)
    finally:
        engine.dispose()
        db._ENGINES.pop(url, None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(HERE.parent), help="checkout to import clawviz from")
    ap.add_argument("--big", action="store_true", help="also the 39 MB and 100 MB bench logs")
    ap.add_argument("--verbose", action="store_true", help="decisions, not digests")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    sys.path.insert(0, str(root))

    from sqlmodel import Session

    from tests.harness import recorded

    with tempfile.TemporaryDirectory(prefix="decisions-dump-") as t:
        tmp = Path(t)
        PLACES[:] = [(str(root), "<root>"), (str(tmp), "<tmp>")]
        dump_paths("sample_logs", [root / "sample_logs"], tmp, args.verbose)
        for log in sorted((root / "tests" / "data" / "real_traffic").glob("*.jsonl")):
            dump_paths(f"real_traffic/{log.stem}", [log], tmp, args.verbose)
        for folder in recorded.folders():
            sub = tmp / recorded.folder_id(folder).replace("/", "_")
            sub.mkdir()
            loaded = recorded.load(folder, sub)
            with Session(loaded.engine) as session:
                dump_session(recorded.folder_id(folder), session, args.verbose)
            loaded.engine.dispose()
        if args.big:
            for log in _big_logs():
                dump_paths(log.name, [log], tmp, args.verbose)
            import gen  # bench/gen.py: the long episodes of `bench/run.py --only fig_analysis`

            for n in (100, 1000):
                log = tmp / f"episode-{n}.jsonl"
                gen.write_long_episode(log, n)
                dump_paths(log.name, [log], tmp, args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
