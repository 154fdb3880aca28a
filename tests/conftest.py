"""Shared fixtures: the bundled sample store (ingested once per session) and a hostile store."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session

from tests import dburl

REPO = Path(__file__).resolve().parents[1]
SAMPLE_LOGS = REPO / "sample_logs"

# Strict xfails where clawviz is known wrong on a committed recording (one registry).
pytest_plugins = ("tests.harness.known_wrong",)


def pytest_addoption(parser):
    parser.addoption(
        "--db-url",
        default=None,
        help="PostgreSQL maintenance database to run the stores on (sets "
        f"{dburl.ENV}); each store is a fresh database on that server",
    )


def pytest_configure(config):
    import os

    url = config.getoption("--db-url")
    if url:
        os.environ[dburl.ENV] = url
    config.addinivalue_line("markers", "sqlite_only: checks a detail of the SQLite backend")


def pytest_collection_modifyitems(config, items):
    if not dburl.on_postgres():
        return
    skip = pytest.mark.skip(reason="SQLite-only detail (the suite runs on PostgreSQL)")
    for item in items:
        if "sqlite_only" in item.keywords:
            item.add_marker(skip)


SCRIPT_TEXT = "<script>alert('xss')</script> **not bold** [click](javascript:alert(1)) :red[x]"
"""Log text that would run, link or style if it were rendered as HTML or Markdown."""


@pytest.fixture(scope="session")
def sample_db_url(tmp_path_factory) -> str:
    """A SQLite file holding sample_logs/ ingested and analysed under the default settings."""
    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import get_engine

    if not SAMPLE_LOGS.is_dir():
        pytest.skip("sample_logs/ is missing")
    url = dburl.fresh_url(tmp_path_factory.mktemp("sample_store"), "clawviz")
    with Session(get_engine(url)) as s:
        ingest_paths([SAMPLE_LOGS], session=s)
        ensure_analysis(s)
    return url


def hostile_calls():
    """A three-call episode full of HTML/Markdown tricks and a one-call episode, no rewards."""
    from clawviz.types import Call, Usage

    sys_text = "You are a helpful agent. " + SCRIPT_TEXT
    user = {"role": "user", "content": [{"type": "text", "text": SCRIPT_TEXT}]}
    reply = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "# heading?\n" + SCRIPT_TEXT},
            {
                "type": "tool_use",
                "id": "tu_1",
                "name": "<img src=x onerror=alert(1)>",
                "input": {"cmd": SCRIPT_TEXT},
            },
        ],
    }
    result = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "tu_1",
                "content": SCRIPT_TEXT,
                "is_error": False,
            }
        ],
    }
    final = {"role": "assistant", "content": [{"type": "text", "text": "done " + SCRIPT_TEXT}]}
    common = {
        "source_file": "hostile.jsonl",
        "endpoint": "anthropic_messages",
        "url": "https://api.anthropic.com/v1/messages",
        "http_status": 200,
        "episode_id": "xss-ep",
        "task_id": "task_xss",
        "harness": "claude-code",
        "attempt": 1,
        "model": "<b>model</b>",
        "system": sys_text,
        "tools": ["Bash"],
    }
    calls = [
        Call(
            call_id="xss:1",
            line=1,
            seq=1,
            t_request=1.0,
            t_response=2.0,
            messages=[user],
            response=reply,
            usage=Usage(10, 20),
            **common,
        ),
        Call(
            call_id="xss:2",
            line=2,
            seq=2,
            t_request=3.0,
            t_response=4.0,
            messages=[user, reply, result],
            response=final,
            usage=Usage(30, 5),
            **common,
        ),
    ]
    solo = dict(common, episode_id="solo-ep", task_id="task_solo", model="m")
    calls.append(
        Call(call_id="solo:1", line=3, seq=1, t_request=5.0, t_response=6.0,
             messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
             response={"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
             usage=Usage(1, 1), **solo)
    )  # fmt: skip
    return calls


@pytest.fixture(scope="session")
def hostile_db_url(tmp_path_factory) -> str:
    """A store whose log text tries HTML and Markdown tricks, plus a one-call episode."""
    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.store import calls as store
    from clawviz.store import models
    from clawviz.store.db import get_engine

    url = dburl.fresh_url(tmp_path_factory.mktemp("hostile_store"), "clawviz")
    with Session(get_engine(url)) as s:
        source = models.Source(path="hostile.jsonl", sha256="hostile", format="exchange")
        s.add(source)
        s.commit()
        s.refresh(source)
        store.write_calls(s, hostile_calls(), source)
        store.refresh_episodes(s, ["xss-ep", "solo-ep"])
        s.add(
            models.RejectedLine(
                source_id=source.id, source_file="hostile.jsonl", line=9, reason="not_json",
                raw=SCRIPT_TEXT,
            )
        )  # fmt: skip
        s.commit()
        ensure_analysis(s)
    return url


@pytest.fixture
def script_text() -> str:
    return SCRIPT_TEXT


@pytest.fixture
def empty_db_url(tmp_path) -> str:
    return dburl.fresh_url(tmp_path, "empty")


@pytest.fixture(scope="session")
def recorded_store(tmp_path_factory):
    """folder -> `tests.harness.recorded.load(folder)`, each recording ingested once per run."""
    from tests.harness.recorded import load

    cache: dict = {}

    def get(folder):
        if folder not in cache:
            cache[folder] = load(folder, tmp_path_factory.mktemp(folder.name))
        return cache[folder]

    return get


@pytest.fixture(autouse=True, scope="module")
def _release_server_connections():
    """On PostgreSQL, close the pooled connections of every cached store engine after each
    module: each test's fresh database keeps an engine in `store.db._ENGINES`, and their idle
    connections would otherwise add up past the server's max_connections. The engines stay
    usable (they reconnect on demand)."""
    yield
    from tests.dburl import on_postgres

    if on_postgres():
        from clawviz.store import db

        for engine in list(db._ENGINES.values()):
            engine.dispose()


@pytest.fixture()
def upstream():
    """A scripted model server on loopback for the recorder tests: (loop, script, base URL)."""
    from record_support import LoopThread, Scripted

    lt = LoopThread()
    scripted = Scripted()
    port = lt.start_scripted(scripted)
    yield lt, scripted, f"http://127.0.0.1:{port}"
    lt.close()
