"""Compare two episodes (`clawviz.recon.align`): kept paths turn by turn, final answers, order.

What each sample episode's kept path is comes from sample_logs/expected.json (the generator's
intent: main calls in state kept, by seq); the tools each of those calls used and the final
answer's text are read here straight from the raw log lines (OpenAI `tool_calls`, Anthropic SSE
`content_block_start` / `input_json_delta`), not through clawviz's parser.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlmodel import Session

from clawviz.jobs.analyse import ensure_analysis, episode_analysis
from clawviz.jobs.ingest import ingest_paths
from clawviz.recon.align import (
    GROUPS,
    ToolCall,
    Turn,
    TurnPair,
    args_summary,
    compare,
    compare_order,
    final_answer,
)
from clawviz.store import calls as store
from clawviz.store.db import init_db
from clawviz.types import Call
from tests.dburl import memory_engine

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
EXPECTED = json.loads((SAMPLES / "expected.json").read_text())
EPISODES = {
    "t0001-openclaw-a1": "exchanges/openclaw/t0001-openclaw-a1.jsonl",
    "t0001-openclaw-a3": "exchanges/openclaw/t0001-openclaw-a3.jsonl",
    "t0001-claude-code-a1": "exchanges/claude-code/t0001-claude-code-a1.jsonl",
}


def _raw_reply(record: dict) -> tuple[list[tuple[str, dict]], str]:
    """(tool name, arguments) of a raw response and its text, read without clawviz."""
    resp = record["response"] or {}
    body = resp.get("body")
    if isinstance(body, dict) and body.get("choices"):
        msg = body["choices"][0]["message"]
        tools = [
            (t["function"]["name"], json.loads(t["function"]["arguments"]))
            for t in msg.get("tool_calls") or []
        ]
        return tools, msg.get("content") or ""
    blocks: dict[int, dict] = {}
    for line in (resp.get("body_raw") or "").splitlines():
        if not line.startswith("data: "):
            continue
        ev = json.loads(line[6:])
        if ev["type"] == "content_block_start":
            blocks[ev["index"]] = dict(ev["content_block"], partial="")
        elif ev["type"] == "content_block_delta":
            d = ev["delta"]
            b = blocks[ev["index"]]
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                b["partial"] += d["partial_json"]
    ordered = [blocks[i] for i in sorted(blocks)]
    tools = [
        (b["name"], json.loads(b["partial"] or "{}")) for b in ordered if b["type"] == "tool_use"
    ]
    text = "\n".join(b["text"] for b in ordered if b["type"] == "text")
    return tools, text


def _expected_path(episode: str) -> list[tuple[list[tuple[str, dict]], str]]:
    rows = sorted(
        (c for c in EXPECTED["calls"] if c["episode_id"] == episode and c["role"] == "main"
         and c["state"] == "kept"),
        key=lambda c: c["seq"],
    )  # fmt: skip
    lines = (SAMPLES / rows[0]["file"]).read_text().splitlines()
    return [_raw_reply(json.loads(lines[c["line"] - 1])) for c in rows]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory) -> dict[str, tuple[list[Call], object]]:
    tmp = tmp_path_factory.mktemp("align")
    for rel in EPISODES.values():
        shutil.copy(SAMPLES / rel, tmp / Path(rel).name)
    engine = memory_engine()
    init_db(engine)
    with Session(engine) as s:
        ingest_paths([tmp], session=s)
        s.commit()
        ensure_analysis(s)
        return {e: (store.load_calls(s, e), episode_analysis(s, e)) for e in EPISODES}


def _cmp(loaded, left: str, right: str):
    return compare(*loaded[left], *loaded[right])


def test_kept_paths_align_turn_by_turn_with_their_tool_calls(loaded):
    cmp = _cmp(loaded, "t0001-openclaw-a1", "t0001-openclaw-a3")
    left, right = _expected_path("t0001-openclaw-a1"), _expected_path("t0001-openclaw-a3")
    assert [t.tool_names for t in cmp.left] == [tuple(n for n, _ in tools) for tools, _ in left]
    assert [t.tool_names for t in cmp.right] == [tuple(n for n, _ in tools) for tools, _ in right]
    assert len(cmp.pairs) == max(len(left), len(right))
    for pair, (lt, _), (rt, _) in zip(cmp.pairs, left, right, strict=False):
        assert pair.same_tools == (lt == rt), pair.number
        if lt == rt:
            assert pair.verdict == "same"
        elif [n for n, _ in lt] == [n for n, _ in rt]:
            assert pair.verdict == "other arguments"
        else:
            assert pair.verdict == "different"
    first = next(i + 1 for i, (a, b) in enumerate(zip(left, right, strict=False)) if a[0] != b[0])
    assert cmp.first_difference == first


def test_cross_harness_compare_and_final_answers(loaded):
    cmp = _cmp(loaded, "t0001-claude-code-a1", "t0001-openclaw-a1")
    left, right = _expected_path("t0001-claude-code-a1"), _expected_path("t0001-openclaw-a1")
    assert left and right
    assert [t.tool_names for t in cmp.left] == [tuple(n for n, _ in tools) for tools, _ in left]
    last_text = next(text for _, text in reversed(left) if text.strip())
    assert cmp.left_answer == last_text.strip()
    assert cmp.right_answer == next(t for _, t in reversed(right) if t.strip()).strip()
    assert cmp.answer_diff.changed == (cmp.left_answer != cmp.right_answer)
    if len(cmp.left) != len(cmp.right):
        tail = cmp.pairs[min(len(cmp.left), len(cmp.right))]
        assert tail.verdict in ("only left", "only right")


def test_arguments_of_a_tool_call_in_one_line():
    assert args_summary({"path": "a.txt", "n": 3}) == "path=a.txt, n=3"
    assert args_summary('{"command": "ls\\n  -la"}') == "command=ls -la"
    long = args_summary({"content": "x" * 500}, limit=20)
    assert len(long) == 20 and long.endswith("…")
    assert args_summary("not json") == "not json"


def test_same_summary_but_other_arguments_is_not_the_same():
    a = Turn(1, "a", "1", 0, "", (ToolCall("write", "content=xx…", '{"content": "xx1"}'),), 1)
    b = Turn(1, "b", "1", 0, "", (ToolCall("write", "content=xx…", '{"content": "xx2"}'),), 1)
    assert TurnPair(1, a, b).verdict == "other arguments"
    assert TurnPair(2, a, None).verdict == "only left"
    assert TurnPair(2, None, b).verdict == "only right"


def test_final_answer_walks_back_past_tool_only_replies():
    def call(i: int, content) -> Call:
        return Call(
            call_id=str(i),
            source_file="f",
            line=i,
            endpoint="anthropic_messages",
            response={"role": "assistant", "content": content},
        )

    path = [
        call(1, [{"type": "text", "text": "the answer is 4"}]),
        call(2, [{"type": "tool_use", "id": "t", "name": "write", "input": {}}]),
    ]
    assert final_answer(path) == "the answer is 4"
    assert final_answer([]) == ""


def test_compare_order_nearest_first():
    me = {"episode_id": "me", "task_id": "t1", "harness": "claude-code", "attempt": 1}
    others = [
        {"episode_id": "x", "task_id": "t2", "harness": "claude-code", "attempt": 1},
        {"episode_id": "oc2", "task_id": "t1", "harness": "openclaw", "attempt": 2},
        {"episode_id": "cc3", "task_id": "t1", "harness": "claude-code", "attempt": 3},
        {"episode_id": "me", "task_id": "t1", "harness": "claude-code", "attempt": 1},
        {"episode_id": "cc2", "task_id": "t1", "harness": "claude-code", "attempt": 2},
        {"episode_id": "oc1", "task_id": "t1", "harness": "openclaw", "attempt": None},
        {"episode_id": "y", "task_id": None, "harness": None, "attempt": None},
    ]
    order = compare_order(me, others)
    assert [c.episode_id for c in order] == ["cc2", "cc3", "oc2", "oc1", "y", "x"]
    assert [c.group for c in order] == [GROUPS[0]] * 2 + [GROUPS[1]] * 2 + [GROUPS[2]] * 2
    # An episode without a task has no "same task": everything else is "other task".
    lone = compare_order({"episode_id": "y", "task_id": None}, others)
    assert {c.group for c in lone} == {GROUPS[2]}
