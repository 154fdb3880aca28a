"""LLM-assisted task review against a scripted local OpenAI-compatible server (no network):
the prompt's content, malformed answers, timeouts, a 429 with Retry-After, the concurrency
limit, storing and judging findings, the sign-off recording valid ones, and importing a
findings JSONL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session

from clawviz.jobs.ingest import ingest_paths
from clawviz.review import diagnosis, findings
from clawviz.review.signoff import add_review
from clawviz.review.tasks import task_detail, task_queue
from clawviz.store.db import get_engine
from tests.dburl import fresh_url
from tests.llm_server import ScriptedLLM

REPO = Path(__file__).resolve().parents[1]
TASKS = REPO / "sample_logs" / "tasks"
GOOD = {"findings": [
    {"area": "checker", "severity": "high", "problem": "check_stats accepts any total",
     "suggestion": "compare the total with the CSV row count"},
    {"area": "rubric", "severity": "low", "problem": "rubric item 2 is checkable in code",
     "suggestion": "move it to check.py"},
]}  # fmt: skip


@pytest.fixture
def session(tmp_path):
    with Session(get_engine(fresh_url(tmp_path, "diag"))) as s:
        ingest_paths([TASKS], session=s)
        s.commit()
        yield s


def _ep(server: ScriptedLLM, **kw) -> diagnosis.Endpoint:
    return diagnosis.Endpoint(base_url=server.base_url, model="reviewer-1", **kw)


def test_prompt_holds_instruction_files_checker_and_rubric(session):
    detail = task_detail(session, "task_0001")
    system, user = diagnosis.build_prompt(detail, file_budget=50)
    folder = TASKS / "task_0001"
    assert "clear and feasible" in system["content"]
    assert json.loads((folder / "data_entry.json").read_text())["user_query"] in user["content"]
    assert (folder / "reward" / "check.py").read_text() in user["content"]
    assert (folder / "reward" / "reward.sh").read_text() in user["content"]
    for rule in json.loads((folder / "reward" / "rubric.json").read_text()):
        assert json.dumps(rule, indent=2).splitlines()[1].strip() in user["content"]
    for rel in ("data/tasks.csv", "data/updates.jsonl"):
        assert f"- {rel}" in user["content"]  # the whole tree is listed
    assert "[truncated:" in user["content"] and "file budget of 50 characters" in user["content"]


def test_diagnosis_stores_findings_with_model_prompt_and_tokens(session):
    with ScriptedLLM([("json", GOOD)]) as server:
        (d,) = diagnosis.diagnose_tasks([task_detail(session, "task_0001")], _ep(server))
    assert d.error is None and d.attempts == 1
    assert [f["problem"] for f in d.findings] == [f["problem"] for f in GOOD["findings"]]
    assert (d.input_tokens, d.output_tokens) == (100, 20)
    assert server.requests[0]["response_format"] == {"type": "json_object"}
    run = findings.save_diagnosis(session, d)
    rows = findings.list_findings(session, "task_0001")
    assert [r.area for r in rows] == ["checker", "rubric"]
    assert {r.model for r in rows} == {"reviewer-1"} and rows[0].prompt_hash == d.prompt_hash
    assert run.input_tokens == 100
    assert findings.open_counts(session) == {"task_0001": 2}
    queue = {r.task_id: r for r in task_queue(session)}
    assert queue["task_0001"].open_findings == 2


def test_a_malformed_answer_is_retried_once_with_the_error(session):
    bad = {"findings": [{"area": "elsewhere", "severity": "high", "problem": "x"}]}
    with ScriptedLLM([("json", bad), ("json", GOOD)]) as server:
        (d,) = diagnosis.diagnose_tasks([task_detail(session, "task_0001")], _ep(server))
    assert d.error is None and d.attempts == 2 and len(d.findings) == 2
    retry = server.requests[1]["messages"]
    assert retry[-1]["role"] == "user" and "findings.0.area" in retry[-1]["content"]
    with ScriptedLLM([("text", "I think it is fine.")]) as server:
        (d,) = diagnosis.diagnose_tasks([task_detail(session, "task_0001")], _ep(server))
    assert d.attempts == 2 and d.findings == [] and "malformed answer twice" in d.error


def test_429_with_retry_after_is_waited_out_and_a_timeout_is_reported(session):
    with ScriptedLLM([("status", 429, 1), ("json", GOOD)]) as server:
        (d,) = diagnosis.diagnose_tasks([task_detail(session, "task_0001")], _ep(server))
    assert d.error is None and len(server.requests) == 2
    with ScriptedLLM([("hang", 5)]) as server:
        (d,) = diagnosis.diagnose_tasks(
            [task_detail(session, "task_0001")], _ep(server, timeout_s=0.5, max_retries=0)
        )
    assert d.error and "Timeout" in d.error


def test_concurrency_limit(session):
    details = [task_detail(session, t) for t in ("task_0001", "task_0002", "task_0003")] * 2
    with ScriptedLLM([("json", GOOD)], delay=0.3) as server:
        out = diagnosis.diagnose_tasks(details, _ep(server), concurrency=2)
    assert len(out) == 6 and all(d.error is None for d in out)
    assert server.max_in_flight == 2


def test_judged_findings_are_recorded_with_the_sign_off(session):
    d = diagnosis.Diagnosis("task_0002", "m", "h", findings=GOOD["findings"])
    findings.save_diagnosis(session, d)
    first, second = findings.list_findings(session, "task_0002")
    findings.judge(session, first.id, "valid", "ana", "true: total unchecked")
    findings.judge(session, second.id, "not_valid", "ana")
    with pytest.raises(findings.FindingError):
        findings.judge(session, second.id, "maybe", "ana")
    assert findings.open_counts(session) == {}
    review = add_review(session, "task_0002", "revise", "ana", "fix the checker")
    assert json.loads(review.valid_findings_json) == [first.id]


def test_findings_jsonl_is_ingested_and_bad_lines_cost_only_themselves(session, tmp_path):
    log = tmp_path / "findings.jsonl"
    log.write_text(
        json.dumps({"task_id": "task_0003", "model": "batch-llm", **GOOD}) + "\n"
        + json.dumps({"task_id": "task_0003", "area": "inputs", "severity": "medium",
                      "problem": "updates.jsonl has no dates"}) + "\n"
        + json.dumps({"task_id": "task_0003", "findings": [{"area": "x"}]}) + "\n"
    )  # fmt: skip
    report = ingest_paths([log], session=session)
    session.commit()
    rows = findings.list_findings(session, "task_0003")
    assert len(rows) == 3 and {r.model for r in rows} == {"batch-llm", "imported"}
    assert [(r.line, "area") for r in report.rejected] == [(3, "area")]
    assert "area" in report.rejected[0].reason


def test_cli_diagnose_and_findings(tmp_path):
    url = fresh_url(tmp_path, "cli")
    run = [sys.executable, "-m", "clawviz", "--db", url]
    subprocess.run([*run, "ingest", str(TASKS)], check=True, capture_output=True, cwd=REPO)
    with ScriptedLLM([("json", GOOD)]) as server:
        proc = subprocess.run(
            [*run, "--json", "diagnose", "task_0001", "--base-url", server.base_url,
             "--model", "reviewer-1", "--api-key-env", "CLAWVIZ_TEST_KEY"],
            capture_output=True, text=True, cwd=REPO, timeout=120,
            env={**__import__("os").environ, "CLAWVIZ_TEST_KEY": "sk-secret-123"},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["findings"] == 2
    assert "sk-secret-123" not in proc.stdout + proc.stderr
    listed = subprocess.run(
        [*run, "--json", "findings", "task_0001"], capture_output=True, text=True, cwd=REPO
    )
    assert [f["area"] for f in json.loads(listed.stdout)] == ["checker", "rubric"]
    unknown = subprocess.run(
        [*run, "diagnose", "nope", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert unknown.returncode == 2 and "no task 'nope'" in unknown.stderr


def test_diagnosis_runs_inside_a_running_event_loop(session):
    """A caller that already runs an event loop (Streamlit, a notebook) can diagnose too."""
    import asyncio

    async def inside() -> list[diagnosis.Diagnosis]:
        with ScriptedLLM([("json", GOOD)]) as server:
            return diagnosis.diagnose_tasks([task_detail(session, "task_0001")], _ep(server))

    # A thread of its own, so the loop that runs `inside` is the only one in that thread (the
    # browser tests leave Playwright's loop running in the main thread).
    import threading

    out: list = []
    worker = threading.Thread(target=lambda: out.extend(asyncio.run(inside())))
    worker.start()
    worker.join(120)
    (d,) = out
    assert d.error is None and len(d.findings) == 2


def test_a_trickling_server_meets_one_total_deadline(session):
    # One byte every 0.2 s: each read returns well within the timeout, the answer never does.
    with ScriptedLLM([("trickle", 0.2, GOOD)]) as server:
        (d,) = diagnosis.diagnose_tasks(
            [task_detail(session, "task_0001")], _ep(server, timeout_s=1.0, max_retries=0)
        )
    assert d.findings == []
    assert d.error is not None and "1 s" in d.error and "deadline" in d.error
    assert d.seconds < 3.0


def test_findings_per_answer_are_capped(session):
    many = {"findings": [GOOD["findings"][0]] * 500}
    with ScriptedLLM([("json", many)]) as server:
        (d,) = diagnosis.diagnose_tasks(
            [task_detail(session, "task_0001")], _ep(server, max_findings=10)
        )
    assert len(d.findings) == 10 and d.findings_dropped == 490
    assert diagnosis.Endpoint("u", "m").max_findings == 200


def test_max_findings_is_a_setting():
    from clawviz.settings import DEFAULT_SETTINGS, SETTINGS_BY_NAME, SettingsError, parse_value

    assert DEFAULT_SETTINGS.diagnose_max_findings == 200
    assert SETTINGS_BY_NAME["diagnose_max_findings"].minimum == 1
    with pytest.raises(SettingsError):
        DEFAULT_SETTINGS.with_(diagnose_max_findings=parse_value("diagnose_max_findings", "0"))
