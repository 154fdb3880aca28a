"""`clawviz --json episodes` streams: the same bytes as the whole list printed at once, and the
rows are read chunk by chunk as they are printed (issue 26: constant memory at 100,000 episodes).
"""

from __future__ import annotations

import io
import json

import pytest
from sqlmodel import Session

from clawviz.cli import main as cli
from clawviz.settings import DEFAULT_SETTINGS
from clawviz.store import fastread
from clawviz.store.db import get_engine
from tests.dburl import on_postgres, query


def _expected_ids(url: str) -> list[str]:
    """Every episode of the store, in the listing's order, by its own SQL (NULLs as SQLite
    and PostgreSQL each order them by default, as the command always did)."""
    sql = "SELECT episode_id FROM episode ORDER BY task_id, harness, attempt, episode_id"
    rows = query(url, sql)
    return [r[0] for r in rows]


def test_json_output_is_the_whole_list_printed_at_once(sample_db_url, capsys):
    """On the sample store (fast path on SQLite, full path with other settings and on
    PostgreSQL) the streamed text is exactly `json.dumps(list, indent=2)` of the rows."""
    for argv in (["--json", "episodes"], ["--json", "--set", "reward_threshold=0.3", "episodes"]):
        assert cli.main(["--db", sample_db_url, *argv]) == 0
        out = capsys.readouterr().out
        rows = json.loads(out)
        assert [r["episode_id"] for r in rows] == _expected_ids(sample_db_url)
        assert out == json.dumps(rows, indent=2, default=str) + "\n"
        assert any(r["reasons"] for r in rows) and any(r["reward"] is not None for r in rows)


def test_json_of_an_empty_store_is_an_empty_list(empty_db_url, capsys):
    assert cli.main(["--db", empty_db_url, "--json", "episodes"]) == 0
    assert capsys.readouterr().out == "[]\n"


def test_printer_writes_each_row_before_the_next_is_read(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(cli.sys, "stdout", out)
    seen: list[str] = []

    def rows():
        yield {"episode_id": "a", "reasons": ["x"], "reward": None}
        seen.append(out.getvalue())
        yield {"episode_id": "b", "reasons": [], "reward": 0.5}

    cli._print_json_rows(rows())
    assert '"episode_id": "a"' in seen[0] and '"b"' not in seen[0]
    full = [{"episode_id": "a", "reasons": ["x"], "reward": None},
            {"episode_id": "b", "reasons": [], "reward": 0.5}]  # fmt: skip
    assert out.getvalue() == json.dumps(full, indent=2) + "\n"


def test_full_path_reads_one_chunk_per_chunk_handed_out(sample_db_url, monkeypatch):
    """The generator reads the store chunk by chunk: after the first row only the first chunk
    has been built, and the whole list takes one chunk per ROWS_CHUNK episodes."""
    built: list[int] = []
    real = cli._row_chunk

    def spy(session, settings, chunk):
        built.append(len(chunk))
        return real(session, settings, chunk)

    monkeypatch.setattr(cli, "ROWS_CHUNK", 3)
    monkeypatch.setattr(cli, "_row_chunk", spy)
    n = len(_expected_ids(sample_db_url))
    with Session(get_engine(sample_db_url)) as s:
        rows = cli.iter_episode_rows(s, DEFAULT_SETTINGS)
        first = next(rows)
        assert built == [3]
        rest = list(rows)
    assert first["episode_id"] == _expected_ids(sample_db_url)[0]
    assert len(rest) + 1 == n and len(built) == -(-n // 3) and max(built) == 3


@pytest.mark.skipif(on_postgres(), reason="the direct read is for SQLite files")
def test_fast_path_reads_one_chunk_per_chunk_handed_out(sample_db_url, monkeypatch):
    built: list[int] = []
    real = fastread._chunk_rows

    def spy(con, chunk):
        built.append(len(chunk))
        return real(con, chunk)

    monkeypatch.setattr(fastread, "CHUNK", 4)
    monkeypatch.setattr(fastread, "_chunk_rows", spy)
    rows = fastread.iter_episode_rows(sample_db_url, DEFAULT_SETTINGS)
    assert rows is not None
    next(rows)
    assert built == [4]
    rest = list(rows)
    n = len(_expected_ids(sample_db_url))
    assert len(rest) + 1 == n and len(built) == -(-n // 4)
