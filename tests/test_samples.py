"""The bundled sample dataset: regenerates byte for byte, is consistent, has every quirk."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from clawviz.samples import PLAN, generate

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
EXCHANGES = SAMPLES / "exchanges"


# ---------------------------------------------------------------- helpers


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    return gzip.decompress(data).decode() if path.suffix == ".gz" else data.decode()


def _archive_members(path: Path) -> dict[str, bytes]:
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            return {n: zf.read(n) for n in zf.namelist()}
    with tarfile.open(path, "r:gz") as tf:
        return {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}


def _tree(root: Path) -> dict[str, Any]:
    """Every file under root by relative path; compressed files by their content."""
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or "__pycache__" in p.parts:
            continue
        rel = str(p.relative_to(root))
        if p.name.endswith((".tar.gz", ".zip")):
            out[rel] = _archive_members(p)
        else:
            out[rel] = _read_text(p) if p.suffix == ".gz" else p.read_bytes()
    return out


def _lines(rel: str) -> list[str]:
    return _read_text(SAMPLES / rel).split("\n")


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    return json.loads((SAMPLES / "expected.json").read_text())


@pytest.fixture(scope="module")
def records(expected) -> dict[tuple[str, int], dict[str, Any]]:
    """Every good line of every exchange file, parsed, keyed by (file, line)."""
    out = {}
    for call in expected["calls"]:
        text = _lines(call["file"])[call["line"] - 1]
        out[(call["file"], call["line"])] = json.loads(text)
    return out


def _all_exchange_files() -> list[Path]:
    return sorted(p for p in EXCHANGES.rglob("*") if p.is_file())


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


@pytest.fixture(scope="module")
def corpus(records) -> str:
    """All request strings (system, messages, tools, headers) joined, for marker searches."""
    return "\n".join(s for r in records.values() for s in _strings(r["request"]))


def _strip_cc(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_cc(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_cc(v) for v in obj]
    return obj


def _sse_frames(raw: str) -> list[tuple[str | None, str]]:
    frames = []
    for chunk in raw.split("\n\n"):
        if not chunk.strip():
            continue
        event, data = None, []
        for line in chunk.split("\n"):
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        frames.append((event, "\n".join(data)))
    return frames


def _rebuild_anthropic(raw: str) -> dict[str, Any] | None:
    """Assistant message from an Anthropic SSE body; None when it has no message_stop."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = defaultdict(str)
    stopped = False
    for event, data in _sse_frames(raw):
        obj = json.loads(data)
        if event == "content_block_start":
            blocks[obj["index"]] = dict(obj["content_block"])
        elif event == "content_block_delta":
            b, d = blocks[obj["index"]], obj["delta"]
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                b["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                b["signature"] += d["signature"]
            elif d["type"] == "input_json_delta":
                partial[obj["index"]] += d["partial_json"]
        elif event == "content_block_stop" and blocks[obj["index"]]["type"] == "tool_use":
            blocks[obj["index"]]["input"] = json.loads(partial[obj["index"]])
        elif event == "message_stop":
            stopped = True
    if not stopped:
        return None
    return {"role": "assistant", "content": [blocks[i] for i in sorted(blocks)]}


def _rebuild_openai(raw: str) -> dict[str, Any]:
    content, calls = "", {}
    for _event, data in _sse_frames(raw):
        if data == "[DONE]":
            break
        for choice in json.loads(data)["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(tc["index"], {"id": None, "name": None, "arguments": ""})
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["name"] = fn.get("name") or slot["name"]
                slot["arguments"] += fn.get("arguments") or ""
    msg: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        msg["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for _, c in sorted(calls.items())
        ]
    return msg


def _response_message(rec: dict[str, Any]) -> dict[str, Any] | None:
    """The assistant message a successful response delivered (as the next request repeats it)."""
    resp = rec["response"]
    if not resp or resp["status_code"] != 200:
        return None
    if "/chat/completions" in rec["request"]["url"]:
        if "body_raw" in resp:
            return _rebuild_openai(resp["body_raw"])
        msg = dict(resp["body"]["choices"][0]["message"])
        msg.pop("reasoning_content", None)
        return msg
    if "body_raw" in resp:
        return _rebuild_anthropic(resp["body_raw"])
    return {"role": "assistant", "content": resp["body"]["content"]}


def _prompt_ids(rec: dict[str, Any]) -> list[int] | None:
    resp = rec["response"]
    if "body" in resp:
        return resp["body"].get("prompt_token_ids")
    for _e, data in _sse_frames(resp["body_raw"]):
        if data != "[DONE]" and "prompt_token_ids" in json.loads(data):
            return json.loads(data)["prompt_token_ids"]
    return None


def _output_ids(rec: dict[str, Any]) -> list[int] | None:
    resp = rec["response"]
    if "body" in resp:
        return resp["body"]["choices"][0].get("token_ids")
    ids: list[int] = []
    for _e, data in _sse_frames(resp["body_raw"]):
        if data != "[DONE]":
            for c in json.loads(data)["choices"]:
                ids += c.get("token_ids") or []
    return ids


# ---------------------------------------------------------------- generator


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("samples")
    generate(out, seed=0)
    return out


def test_committed_sample_logs_match_the_generator(regenerated):
    committed, fresh = _tree(SAMPLES), _tree(regenerated)
    assert sorted(committed) == sorted(fresh)
    changed = [rel for rel in committed if committed[rel] != fresh[rel]]
    assert not changed, f"regenerate with: python -m clawviz.samples sample_logs ({changed[:5]})"


def test_generation_is_deterministic_per_seed_and_episode(tmp_path):
    names = ["t0001-claude-code-a2", "t0001-openclaw-a2"]
    generate(tmp_path / "a", seed=0, only=names)
    generate(tmp_path / "b", seed=7, only=names)
    for rel in (
        "exchanges/claude-code/t0001-claude-code-a2.jsonl",
        "exchanges/openclaw/t0001-openclaw-a2.jsonl",
    ):
        assert (tmp_path / "a" / rel).read_bytes() == (SAMPLES / rel).read_bytes()
        assert (tmp_path / "b" / rel).read_bytes() != (SAMPLES / rel).read_bytes()
    # Another seed changes ids and timings (so the interleaving), never what the calls are.
    exp_a = json.loads((tmp_path / "a" / "expected.json").read_text())
    exp_b = json.loads((tmp_path / "b" / "expected.json").read_text())
    keys = ("role", "state", "reason", "segment")
    assert Counter(tuple(c[k] for k in keys) for c in exp_a["calls"]) == Counter(
        tuple(c[k] for k in keys) for c in exp_b["calls"]
    )
    assert [e["reasons"] for e in exp_a["episodes"]] == [e["reasons"] for e in exp_b["episodes"]]


def test_sample_logs_stay_small():
    total = sum(p.stat().st_size for p in SAMPLES.rglob("*") if p.is_file())
    assert total < 3_000_000


# ---------------------------------------------------------------- tasks, results, workspaces


def test_task_folders_have_the_clawgym_layout():
    for task in ("task_0001", "task_0002", "task_0003"):
        folder = SAMPLES / "tasks" / task
        entry = json.loads((folder / "data_entry.json").read_text())
        assert entry["task_id"] == task
        assert {"user_query", "input_mount_dir", "metadata"} <= set(entry)
        assert {"category", "grading_type"} <= set(entry["metadata"])
        assert (folder / "input_files").is_dir()
        assert (folder / "reward" / "check.py").is_file()
        assert (folder / "reward" / "reward.sh").is_file()
    rubric = json.loads((SAMPLES / "tasks/task_0001/reward/rubric.json").read_text())
    assert all({"name", "weight", "description"} <= set(r) for r in rubric)
    seed_task = SAMPLES / "tasks/task_0001/input_files/data"
    assert (seed_task / "tasks.csv").is_file() and (seed_task / "updates.jsonl").is_file()
    reference = SAMPLES / "tasks/task_0003/reward/run_tests.reference"
    assert (
        reference.read_bytes()
        == (SAMPLES / "tasks/task_0003/input_files/tests/run_tests.py").read_bytes()
    )


def test_pinchbench_task_has_front_matter_and_sections():
    text = (SAMPLES / "tasks/pinchbench/task_weekly_digest.md").read_text()
    front = text.split("---")[1]
    for key in ("id", "name", "category", "grading_type", "timeout_seconds", "workspace_files"):
        assert re.search(rf"^{key}: ", front, re.M), key
    for section in (
        "## Prompt",
        "## Expected Behavior",
        "## Grading Criteria",
        "## Automated Checks",
        "## LLM Judge Rubric",
    ):
        assert section in text
    assert "def grade(transcript: list, workspace_path: str) -> dict:" in text
    assert (SAMPLES / "tasks/pinchbench/task_weekly_digest/notes.txt").is_file()


def _run_check(task: str, workspace: Path, *, cwd: bool = False) -> dict[str, float]:
    check = SAMPLES / "tasks" / task / "reward" / "check.py"
    argv = [sys.executable, "-B", str(check)] + ([] if cwd else [str(workspace)])
    proc = subprocess.run(
        argv, cwd=workspace, capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(proc.stdout)


def _workspace(rel: str, tmp_path: Path) -> Path:
    path = SAMPLES / rel
    if path.is_dir():
        return path
    target = tmp_path / rel.replace("/", "_")
    for name, data in _archive_members(path).items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(data)
    return target


def _results() -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (SAMPLES / "results.jsonl").read_text().splitlines()]


def test_every_result_is_what_check_py_says_of_its_after_workspace(tmp_path):
    results = _results()
    assert len(results) == len(PLAN) - 1  # one attempt has no reward on purpose
    for row in results:
        ws = _workspace(row["workspace_after"], tmp_path)
        checks = _run_check(row["task_id"], ws)
        assert checks == row["checks"], row["episode_id"]
        assert row["reward"] == round(sum(checks.values()) / len(checks), 6)
        assert _workspace(row["workspace_before"], tmp_path).exists()
    assert len(next(r for r in results if r["task_id"] == "task_0001")["checks"]) == 15
    suffixes = {Path(r["workspace_after"]).name for r in results} | {
        Path(r["workspace_before"]).name for r in results
    }
    assert {"after.tar.gz", "after.zip", "before.tar.gz", "before", "after"} <= suffixes
    assert any("rubric" in r for r in results) and not all("rubric" in r for r in results)
    assert {r["model_role"] for r in results} == {"strong", "small"}


def test_reward_sh_averages_and_check_py_defaults_to_cwd(tmp_path):
    row = next(r for r in _results() if r["task_id"] == "task_0001" and r["reward"] < 1)
    ws = _workspace(row["workspace_after"], tmp_path)
    assert _run_check("task_0001", ws, cwd=True) == row["checks"]
    proc = subprocess.run(
        ["sh", str(SAMPLES / "tasks/task_0001/reward/reward.sh"), str(ws)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert float(proc.stdout.strip().splitlines()[-1]) == pytest.approx(row["reward"])


def test_each_task_is_solvable_and_not_solved_by_its_inputs(tmp_path):
    for task in ("task_0001", "task_0002", "task_0003"):
        before = _run_check(task, SAMPLES / "tasks" / task / "input_files")
        assert sum(before.values()) < len(before)
        best = max(r["reward"] for r in _results() if r["task_id"] == task)
        assert best == 1.0, task


# ---------------------------------------------------------------- expected.json


def test_expected_covers_every_good_line_and_names_the_bad_ones(expected):
    by_file = Counter(c["file"] for c in expected["calls"])
    bad = {(b["file"], b["line"]): b["kind"] for b in expected["bad_lines"]}
    files = {str(p.relative_to(SAMPLES)) for p in _all_exchange_files()}
    assert files == set(by_file)
    for rel in files:
        lines = _lines(rel)
        if lines[-1] == "":
            lines = lines[:-1]
        else:
            assert (rel, len(lines)) in bad, f"{rel} lacks a final newline"
        assert len(lines) == by_file[rel] + sum(1 for f, _ in bad if f == rel)
    kinds = {}
    for (rel, line), kind in bad.items():
        text = _lines(rel)[line - 1]
        kinds[kind] = text
        if kind in ("not_json", "truncated"):
            with pytest.raises(ValueError):
                json.loads(text)
        elif kind == "not_exchange":
            assert "request" not in json.loads(text)
        elif kind == "bad_sse":
            rec = json.loads(text)
            with pytest.raises(ValueError):
                _rebuild_anthropic(rec["response"]["body_raw"])
    assert set(kinds) == {"not_json", "not_exchange", "bad_sse", "truncated"}


def test_expected_calls_agree_with_the_lines(expected, records):
    ids = {e["episode_id"] for e in expected["episodes"]}
    for call in expected["calls"]:
        rec = records[(call["file"], call["line"])]
        assert call["episode_id"] in ids
        cv = rec.get("clawviz")
        if cv is not None:
            assert cv["episode_id"] == call["episode_id"] and cv["seq"] == call["seq"]
        status = rec["response"]["status_code"] if rec["response"] else None
        assert status == call["http_status"]
        if call["state"] == "failed":
            assert call["reason"] in ("failed_http", "truncated_stream", "orphaned_request")
            assert (status is None) == (call["reason"] == "orphaned_request")
            assert (status is not None and status >= 400) == (call["reason"] == "failed_http")
        elif call["state"] == "auxiliary":
            assert call["reason"] == call["role"] and call["segment"] is None
        elif call["state"] == "kept":
            assert call["reason"] is None and call["role"] == "main"
        else:
            assert call["state"] == "pruned"
            assert call["reason"] in ("superseded_retry", "not_longest")


def test_parents_are_the_calls_whose_reply_the_child_repeats(expected, records):
    """The intended tree is the one the bytes encode: child messages = parent's + its reply."""
    checked = 0
    for call in expected["calls"]:
        if call["parent"] is None:
            continue
        child = records[(call["file"], call["line"])]
        parent = records[(call["parent"]["file"], call["parent"]["line"])]
        p_msgs = _strip_cc(parent["request"]["body"]["messages"])
        c_msgs = _strip_cc(child["request"]["body"]["messages"])
        assert c_msgs[: len(p_msgs)] == p_msgs
        assert c_msgs[len(p_msgs)] == _strip_cc(_response_message(parent)), call
        checked += 1
    assert checked > 100


def test_token_ids_append_cleanly_along_each_path(expected, records):
    checked = 0
    for call in expected["calls"]:
        rec = records[(call["file"], call["line"])]
        if call["parent"] is None or "/chat/completions" not in rec["request"]["url"]:
            continue
        parent = records[(call["parent"]["file"], call["parent"]["line"])]
        pp, po, cp = _prompt_ids(parent), _output_ids(parent), _prompt_ids(rec)
        if pp is None or cp is None:
            continue
        assert cp[: len(pp) + len(po)] == pp + po
        rollout = (parent.get("clawviz") or {}).get("rollout")
        if rollout:
            assert rollout["output_token_ids"] == po
            assert len(rollout["output_logprobs"]) == len(po)
        checked += 1
    assert checked > 20


def test_episodes_cover_the_scenarios_the_tools_must_handle(expected):
    eps = expected["episodes"]
    assert 24 <= len(eps) <= 40
    groups = Counter((e["task_id"], e["harness"], e["model_role"]) for e in eps)
    assert set(groups.values()) == {2} and len(groups) == 3 * 2 * 2
    codes = Counter(r["code"] for e in eps for r in e["reasons"])
    for code in (
        "too_many_branches",
        "ended_in_error",
        "unsupported_tool",
        "missing_reward",
        "below_reward_threshold",
    ):
        assert codes[code] >= 1, code
    assert any(e["n_main_leaves"] == 9 for e in eps)
    assert any(e["n_segments"] == 2 and e["harness"] == "claude-code" for e in eps)
    assert any(e["n_segments"] == 2 and e["harness"] == "openclaw" for e in eps)
    assert {e["identity"] for e in eps} == {"clawviz", "header", "clawgym"}
    states = Counter((c["state"], c["reason"]) for c in expected["calls"])
    for pair in (
        ("pruned", "superseded_retry"),
        ("pruned", "not_longest"),
        ("failed", "failed_http"),
        ("failed", "truncated_stream"),
        ("failed", "orphaned_request"),
    ):
        assert states[pair] >= 1, pair
    roles = {c["role"] for c in expected["calls"]}
    assert roles == {
        "main",
        "aux_utility",
        "aux_summary",
        "aux_subagent",
        "aux_heartbeat",
        "aux_cron",
        "aux_memory_flush",
        "aux_non_model",
    }
    for e in eps:
        n_main = sum(
            1
            for c in expected["calls"]
            if c["episode_id"] == e["episode_id"] and c["role"] == "main"
        )
        assert 5 <= n_main <= 20, e["name"]
    d = expected["difficulty"]
    assert [d[t]["passes"] for t in sorted(d)] == [True, False, True]


# ---------------------------------------------------------------- markers (FORMATS §3)

MARKERS = [
    "You are Claude Code, Anthropic's official CLI for Claude.",
    "x-anthropic-billing-header: cc_version=",
    "<system-reminder>",
    "You are an agent for Claude Code",
    "file search specialist for Claude Code",
    "software architect",
    "Warmup",
    "Extract any file paths that this command reads or modifies",
    "<policy_spec>",
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.",
    "Your task is to create a detailed summary of the conversation so far",
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.",
    "[SYSTEM NOTIFICATION - NOT USER INPUT]",
    "Async agent launched successfully",
    "You are a personal assistant running inside OpenClaw.",
    "Read HEARTBEAT.md if it exists",
    "Follow the heartbeat monitor scratch context when provided.",
    "If nothing needs attention, reply NO_REPLY.",
    "Current time: ",
    "[cron:job-7f3a nightly-task-digest] ",
    "This is an unattended scheduled run.",
    "## Subagent Context",
    "# Subagent Context",
    "Pre-compaction memory flush.",
    "You are a context summarization assistant",
    "<conversation>",
    "</conversation>",
    "Produce a compact, factual summary with these exact section headings",
    "The conversation history before this point was compacted into the following summary:",
    "[Subagent Context] You are running as a subagent (depth 1/2)",
    "[Subagent Task]",
    "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>",
    "Continue the current task from the existing transcript, preserving completed work.",
    "OpenClaw runtime context for the immediately preceding user message.",
]


@pytest.mark.parametrize("marker", MARKERS)
def test_marker_is_present(corpus, marker):
    assert marker in corpus


def test_wire_quirks_are_present(expected, records):
    recs = list(records.values())
    statuses = Counter(r["response"]["status_code"] for r in recs if r["response"])
    assert any(r["response"] is None and r["note"].startswith("ORPHANED_REQUEST") for r in recs)
    assert statuses[529] and statuses[500] and statuses[400]
    assert any(
        r["request"]["method"] == "GET" and r["request"]["url"].endswith("/v1/models?limit=1000")
        for r in recs
    )
    assert any("count_tokens" in r["request"]["url"] for r in recs)
    headers = [r["request"]["headers"] for r in recs]
    assert {h.get("X-Turn-Type") for h in headers} >= {"main", "side"}
    assert any("x-claude-code-session-id" in h for h in headers)
    assert any(h.get("X-Session-Id", "").startswith("cron:") for h in headers)
    clawgym = [e["episode_id"] for e in expected["episodes"] if e["identity"] == "clawgym"]
    assert clawgym and all(
        any((r["request"].get("body") or {}).get("model") == f"main__{eid}" for r in recs)
        for eid in clawgym
    )
    anthropic = [r for r in recs if "/v1/messages?" in r["request"]["url"]]
    assert any(m["role"] == "system" for r in anthropic for m in r["request"]["body"]["messages"])
    raw = "".join((r["response"] or {}).get("body_raw", "") for r in anthropic)
    for event in (
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    ):
        assert f"event: {event}\n" in raw
    for delta in ("text_delta", "input_json_delta", "thinking_delta", "signature_delta"):
        assert f'"type":"{delta}"' in raw
    openai = [r for r in recs if "/chat/completions" in r["request"]["url"]]
    assert any("prompt_token_ids" in r["response"].get("body", {}) for r in openai)
    assert any(
        "token_ids" in (r["response"].get("body") or {"choices": [{}]})["choices"][0]
        for r in openai
        if r["response"]["status_code"] == 200
    )
    assert any("data: [DONE]" in r["response"].get("body_raw", "") for r in openai)
    assert any(r.get("clawviz", {}).get("rollout") for r in openai)
    calls = [
        tc["function"]
        for r in openai
        for m in r["request"]["body"]["messages"]
        if m["role"] == "assistant"
        for tc in m.get("tool_calls") or []
    ]
    assert any(f["name"] == "canvas" for f in calls)
    assert any(f["name"] == "sessions_spawn" for f in calls)
    assert any(
        f["name"] == "tool_call"
        and json.loads(f["arguments"])["id"] == "sessions_spawn"
        and "task" in json.loads(f["arguments"])["args"]
        for f in calls
    )


def test_claude_code_details_move_and_change(expected, records):
    main = [
        c
        for c in expected["calls"]
        if c["episode_id"] == "t0001-claude-code-a1" and c["role"] == "main"
    ]
    cch, cache_at = set(), set()
    for c in main:
        body = records[(c["file"], c["line"])]["request"]["body"]
        cch.add(body["system"][0]["text"])
        marked = [
            i
            for i, m in enumerate(body["messages"])
            if isinstance(m["content"], list) and "cache_control" in m["content"][-1]
        ]
        cache_at.add(tuple(marked))
    assert len(cache_at) > 3 and len(cch) > 3
    retry = next(c for c in main if c["retry_of"])
    failed = records[(retry["retry_of"]["file"], retry["retry_of"]["line"])]
    again = records[(retry["file"], retry["line"])]
    assert failed["response"]["status_code"] == 529
    assert failed["request"]["body"] == again["request"]["body"]
    assert failed["request"]["headers"]["x-stainless-retry-count"] == "0"
    assert again["request"]["headers"]["x-stainless-retry-count"] == "1"


def test_lines_are_in_completion_order_not_request_order(expected):
    out_of_order = 0
    for rel in {c["file"] for c in expected["calls"]}:
        seqs = [
            c["seq"]
            for c in sorted(
                (c for c in expected["calls"] if c["file"] == rel), key=lambda c: c["line"]
            )
        ]
        out_of_order += seqs != sorted(seqs)
    assert out_of_order >= 3


def test_subagent_first_message_is_the_spawn_prompt(expected, records):
    linked = [c for c in expected["calls"] if c["role"] == "aux_subagent" and c["linked"]]
    assert len(linked) >= 4
    for c in linked:
        first = records[(c["file"], c["line"])]["request"]["body"]["messages"]
        spawner = _response_message(records[(c["linked"]["file"], c["linked"]["line"])])
        if "tool_calls" in spawner:
            args = [json.loads(tc["function"]["arguments"]) for tc in spawner["tool_calls"]]
            tasks = [a.get("task") or a.get("args", {}).get("task") for a in args]
            assert any(t and t in first[1]["content"] for t in tasks)
        else:
            prompts = [
                b["input"]["prompt"]
                for b in spawner["content"]
                if b["type"] == "tool_use" and b["name"] == "Task"
            ]
            assert first[0]["content"] in prompts
