"""`analyse --workers N` (clawviz.jobs.reanalyse): after a settings change, the decisions a single
process would store, computed in parallel; a poisoned episode costs only itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sqlalchemy import text
from sqlmodel import Session

from clawviz.cli.main import main as cli_main
from clawviz.jobs.analyse import ensure_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.jobs.reanalyse import reanalyse
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.store.db import get_engine
from tests.dburl import fresh_url, on_postgres
from tests.test_ingest_workers import digest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
CHANGED = Settings(reward_threshold=0.7, grpo_leave_one_out=True)


def _copy_store(tmp_path: Path, url: str, name: str) -> str:
    """A second store holding what `url` holds (a file copy on SQLite, an ingest on PG)."""
    if not on_postgres():
        path = url.removeprefix("sqlite:///")
        other = tmp_path / f"{name}.db"
        get_engine(url).dispose()
        shutil.copy(path, other)
        return f"sqlite:///{other}"
    other_url = fresh_url(tmp_path, name)
    with Session(get_engine(other_url)) as s:
        ingest_paths([SAMPLES], session=s)
    return other_url


def _decisions(url: str, settings: Settings) -> dict[str, tuple[str, list[str], float | None]]:
    with get_engine(url).connect() as con:
        rows = con.execute(
            text(
                "SELECT episode_id, status, reasons_json, advantage FROM episode_status "
                "WHERE settings_hash = :h"
            ),
            {"h": settings.settings_hash},
        ).all()
    return {e: (s, [r["code"] for r in json.loads(rj)], a) for e, s, rj, a in rows}


def test_workers_2_store_the_single_process_decisions_after_a_settings_change(tmp_path):
    one = fresh_url(tmp_path, "one")
    with Session(get_engine(one)) as s:
        ingest_paths([SAMPLES], session=s)
    two = _copy_store(tmp_path, one, "two")
    with Session(get_engine(one)) as s:
        ensure_analysis(s, CHANGED)
    with Session(get_engine(two)) as s:
        n = reanalyse(s, CHANGED, workers=2)
    assert n == 24
    assert digest(one) == digest(two)
    got = _decisions(two, CHANGED)
    # From the scenario: every episode whose reward is under the new threshold says so.
    expected = json.loads((SAMPLES / "expected.json").read_text())["episodes"]
    below = {e["episode_id"] for e in expected if e["reward"] is not None and e["reward"] < 0.7}
    assert below and len(below) < 24
    for eid in below:
        assert "below_reward_threshold" in got[eid][1], eid
    assert {e for e, (_, reasons, _) in got.items() if "below_reward_threshold" in reasons} == below
    # Nothing is left stale: a second run analyses none.
    with Session(get_engine(two)) as s:
        assert reanalyse(s, CHANGED, workers=2) == 0
    # The default settings' decisions were left as they were.
    assert _decisions(two, DEFAULT_SETTINGS) == _decisions(one, DEFAULT_SETTINGS)


def test_a_poisoned_episode_gets_analysis_error_alone(tmp_path, monkeypatch):
    from tests.hostile.test_hostile_lines import _poison_store

    url = _poison_store(tmp_path, monkeypatch)
    with Session(get_engine(url)) as s:
        assert reanalyse(s, CHANGED, workers=2) == 2
    got = _decisions(url, CHANGED)
    assert got["sess-poison"][:2] == ("analysis_error", ["analysis_error"])
    assert got["sess-good"][0] in ("kept", "dropped")
    assert "analysis_error" not in got["sess-good"][1]


def test_cli_analyse_workers_matches_the_single_process_command(tmp_path, capsys):
    one = fresh_url(tmp_path, "one")
    with Session(get_engine(one)) as s:
        ingest_paths([SAMPLES], session=s)
    two = _copy_store(tmp_path, one, "two")
    sets = ["--set", "reward_threshold=0.7", "--set", "grpo_leave_one_out=true"]
    assert cli_main(["--db", one, "analyse", *sets]) == 0
    out1 = capsys.readouterr().out
    assert cli_main(["--db", two, "analyse", "--workers", "2", *sets]) == 0
    out2 = capsys.readouterr().out
    assert out1.startswith("analysed 24 episode(s)") and "1 worker(s)" in out1
    assert out2.startswith("analysed 24 episode(s)") and "2 worker(s)" in out2
    assert out1.split("now:")[1] == out2.split("now:")[1]
    assert digest(one) == digest(two)
    assert cli_main(["--db", two, "analyse", "--workers", "0"]) == 1
    assert "at least 1" in capsys.readouterr().err
