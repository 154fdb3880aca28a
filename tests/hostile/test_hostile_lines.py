"""One bad line costs one line: values of the wrong type or range are rejected with file, line and
a readable reason, the good lines around them load, and a poison record that slips into a store
costs only its own episode's analysis."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
import streamlit as st
from sqlmodel import Session, select

from clawviz.cli.main import main as cli_main
from clawviz.ingest import exchange
from clawviz.jobs.analyse import ensure_analysis, episode_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.store.db import get_engine
from clawviz.store.models import CallRow, EpisodeStatus, RejectedLine
from tests.dburl import fresh_url

URL = "https://api.anthropic.com/v1/messages"


def _record(i: int, session: str, *, name="Bash", usage=None, clawviz=None, history=None):
    """A non-streamed Anthropic call: the reply is a tool_use of tool `name`."""
    messages = history if history is not None else [{"role": "user", "content": f"task {i}"}]
    rec = {
        "request": {
            "timestamp": 1000.0 + i,
            "method": "POST",
            "url": URL,
            "headers": {"x-session-id": session},
            "body": {"model": "claude-x", "max_tokens": 100, "messages": messages},
        },
        "response": {
            "timestamp": 1000.5 + i,
            "status_code": 200,
            "headers": {"content-type": "application/json"},
            "body": {
                "content": [{"type": "tool_use", "id": f"tu{i}", "name": name, "input": {}}],
                "usage": usage if usage is not None else {"input_tokens": 5, "output_tokens": 7},
                "stop_reason": "tool_use",
                "model": "claude-x",
            },
        },
    }
    if clawviz is not None:
        rec["clawviz"] = clawviz
    return rec


BAD = {
    # line number in the file -> (record, reason the line must be rejected with)
    3: (
        dict(name={"evil": True}),
        "tool_use block 'name' is a dict, not a string (response.content[0])",
    ),
    5: (
        dict(usage={"input_tokens": [1, 2], "output_tokens": 7}),
        "invalid field 'usage.input_tokens': Input should be a valid integer (got list)",
    ),
    7: (
        dict(usage={"input_tokens": 5, "output_tokens": {"n": 7}}),
        "invalid field 'usage.output_tokens': Input should be a valid integer (got dict)",
    ),
    9: (
        dict(usage={"input_tokens": 2**63, "output_tokens": 7}),
        "invalid field 'usage.input_tokens': Input should be less than 9223372036854775808 "
        "(got int)",
    ),
    11: (
        dict(clawviz={"seq": 2**63}),
        "invalid field 'seq': Input should be less than 9223372036854775808 (got int)",
    ),
    13: (
        dict(clawviz={"task_id": {"id": "task_0001"}}),
        "invalid field 'task_id': Input should be a valid string (got dict)",
    ),
    15: (
        dict(history=[{"role": "assistant", "content": [{"type": "tool_use", "name": ["x"]}]}]),
        "tool_use block 'name' is a list, not a string (request message 0.content[0])",
    ),
}
N_LINES = 20


def _write(tmp_path, bad=BAD):
    lines = []
    for n in range(1, N_LINES + 1):
        kwargs = copy.deepcopy(bad[n][0]) if n in bad else {}
        lines.append(json.dumps(_record(n, "sess-A", **kwargs)))
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def session(tmp_path):
    with Session(get_engine(fresh_url(tmp_path))) as s:
        yield s


def test_each_bad_value_costs_its_own_line(session, tmp_path):
    path = _write(tmp_path)
    report = ingest_paths([path], session=session)
    assert report.errors == []
    assert {(r.file, r.line, r.reason) for r in report.rejected} == {
        (str(path), n, reason) for n, (_, reason) in BAD.items()
    }
    kept = sorted(session.exec(select(CallRow.line)).all())
    assert kept == [n for n in range(1, N_LINES + 1) if n not in BAD]
    stored = {(r.line, r.reason) for r in session.exec(select(RejectedLine))}
    assert stored == {(n, reason) for n, (_, reason) in BAD.items()}
    # The store stays usable: analysis and the CLI run.
    ensure_analysis(session)
    assert session.exec(select(EpisodeStatus.status)).all()


def test_int_beyond_64_bits_is_rejected(session, tmp_path):
    # orjson reads an integer beyond 64 bits as a float; a count must be an integer.
    path = tmp_path / "big.jsonl"
    good = json.dumps(_record(1, "s"))
    huge = good.replace('"input_tokens": 5', f'"input_tokens": {2**64}')
    path.write_text(good + "\n" + huge + "\n")
    report = ingest_paths([path], session=session)
    assert [(r.line, r.reason) for r in report.rejected] == [
        (2, "invalid field 'usage.input_tokens': Input should be a valid integer (got float)")
    ]
    assert session.exec(select(CallRow.line)).all() == [1]


def test_savepoint_fallback_keeps_the_batch_when_validation_is_bypassed(
    session, tmp_path, monkeypatch
):
    """Second line: with parse-time checks off, values SQL cannot bind still cost one line."""
    monkeypatch.setattr(exchange, "validate_call", lambda call, messages=False: None)
    bad = {n: BAD[n] for n in (5, 7, 9, 11, 13)}
    path = _write(tmp_path, bad)
    report = ingest_paths([path], session=session)
    assert report.errors == []
    assert sorted(r.line for r in report.rejected) == sorted(bad)
    assert all(r.reason.startswith("cannot store this line (") for r in report.rejected)
    assert not any("INSERT" in r.reason for r in report.rejected)
    kept = sorted(session.exec(select(CallRow.line)).all())
    assert kept == [n for n in range(1, N_LINES + 1) if n not in bad]


def _poison_store(tmp_path, monkeypatch) -> str:
    """A store written before the parse-time checks: one episode holds tool_use names that are
    objects (the checks are switched off to write it, then restored)."""
    url = fresh_url(tmp_path)
    monkeypatch.setattr(exchange, "validate_call", lambda call, messages=False: None)
    monkeypatch.setattr(exchange, "check_message", lambda msg, where: None)
    good = [_record(i, "sess-good") for i in range(1, 4)]
    poison = [_record(10, "sess-poison", name={"evil": {"nested": 1}})]
    poison.append(
        _record(
            11,
            "sess-poison",
            history=[
                {"role": "user", "content": "task"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "tu10", "name": {"evil": 1}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "tu10", "content": "ok"}],
                },
            ],
        )
    )
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in good + poison))
    with Session(get_engine(url)) as s:
        report = ingest_paths([path], session=s)
        assert report.rejected == [] and report.n_calls == 5
    monkeypatch.undo()
    return url


def test_poison_record_costs_only_its_episode(tmp_path, monkeypatch, capsys):
    """A store written before these checks may hold a tool_use whose name is an object."""
    url = _poison_store(tmp_path, monkeypatch)
    with Session(get_engine(url)) as s:
        ensure_analysis(s)
        statuses = dict(s.exec(select(EpisodeStatus.episode_id, EpisodeStatus.status)).all())
        assert statuses["sess-good"] in ("kept", "dropped")
        assert statuses["sess-poison"] == "analysis_error"
        a = episode_analysis(s, "sess-poison")
        assert [r.code for r in a.reasons] == ["analysis_error"]
        assert a.reasons[0].evidence.split(":")[0].endswith("Error")
    assert cli_main(["--db", url, "episodes"]) == 0
    out = capsys.readouterr().out
    assert "sess-poison" in out and "analysis_error" in out and "sess-good" in out


def test_poison_episode_page_shows_the_error(tmp_path, monkeypatch):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
    from apphelpers import no_exception, open_page

    url = _poison_store(tmp_path, monkeypatch)
    monkeypatch.setenv("CLAWVIZ_DATABASE_URL", url)
    monkeypatch.setenv("CLAWVIZ_NO_SAMPLES", "1")
    st.cache_data.clear()
    at = open_page("pages/episode.py", episode="sess-poison")
    no_exception(at)
    errors = [e.value for e in at.error]
    assert any("analysis of this episode failed (analysis_error)" in e for e in errors), errors
    codes = [c.value for c in at.code]
    with Session(get_engine(url)) as s:
        evidence = episode_analysis(s, "sess-poison").reasons[0].evidence
    assert evidence in codes
    at = open_page("pages/episode.py", episode="sess-good")
    no_exception(at)
    assert not any("analysis_error" in e.value for e in at.error)
    st.cache_data.clear()
