"""Codex rollout files (`~/.codex/sessions/.../rollout-*.jsonl`) load as transcripts."""

from __future__ import annotations

import json
from pathlib import Path

from clawviz.ingest.transcripts import CODEX_FORMAT, detect_transcript, read_transcript

RECORDED = Path(__file__).parent / "data" / "recorded" / "codex-0.171.0"


def test_recorded_rollout_is_detected_and_replayed():
    path = RECORDED / "tools-multi-prompt" / "rollout.jsonl"
    records = [json.loads(x) for x in path.read_text().splitlines()[:20]]
    assert detect_transcript(records) == CODEX_FORMAT
    read = read_transcript(path)
    assert read.format == CODEX_FORMAT and read.harness == "codex" and not read.rejects
    # two prompts, four model responses (see the scenario): text + 2 parallel commands, text,
    # a failing command, text
    got = [[(b["type"], b.get("name")) for b in c.response["content"]] for c in read.calls]
    assert got == [
        [("text", None), ("tool_use", "exec_command"), ("tool_use", "exec_command")],
        [("text", None)],
        [("tool_use", "exec_command")],
        [("text", None)],
    ]
    assert all(c.source_kind == "transcript" and c.usage.input_tokens for c in read.calls)
    # each request is the previous one plus its reply and what came back
    for prev, nxt in zip(read.calls, read.calls[1:], strict=False):
        assert nxt.messages[: len(prev.messages)] == prev.messages


def test_compaction_and_subagent_thread():
    comp = read_transcript(RECORDED / "auto-compaction" / "rollout.jsonl")
    roles = [c.extra["transcript_role"] for c in comp.calls]
    assert roles == ["main", "compaction_summary", "main", "main"]
    summary = comp.calls[1]
    assert summary.extra["synthetic_request"] is True
    assert "CONTEXT CHECKPOINT COMPACTION" in json.dumps(summary.messages[-1])
    # after the compaction the request starts over from the replacement history
    assert "Another language model started" in json.dumps(comp.calls[2].messages)
    assert len(comp.calls[2].messages) < len(summary.messages)
    main = read_transcript(RECORDED / "subagent" / "rollout.jsonl")
    sub = read_transcript(RECORDED / "subagent" / "rollout-sub1.jsonl")
    assert sub.episode_id == main.episode_id
    assert [c.extra["transcript_role"] for c in sub.calls] == ["subagent"]


def test_bad_lines_cost_only_themselves(tmp_path):
    good = (RECORDED / "retry-5xx" / "rollout.jsonl").read_text().splitlines()
    lines = good[:3] + ["{not json", json.dumps({"no": "type"})] + good[3:]
    path = tmp_path / "rollout-x.jsonl"
    path.write_text("\n".join(lines) + "\n")
    read = read_transcript(path)
    assert [(n, reason.split(":")[0]) for n, reason, _ in read.rejects] == [
        (4, "invalid JSON"),
        (5, "rollout line without type and payload"),
    ]
    assert len(read.calls) == 2


def test_gzipped_session_files_load_like_plain_ones(tmp_path):
    """A .jsonl.gz transcript (pi session, Codex rollout) replays to the same calls as the plain
    file; a gzip cut short keeps its whole lines and names where it broke."""
    import gzip

    pi = RECORDED.parent / "pi-0.73.1" / "retry-5xx" / "session.jsonl"
    codex = RECORDED / "retry-5xx" / "rollout.jsonl"
    for src in (pi, codex):
        gz = tmp_path / (src.stem + ".jsonl.gz")
        gz.write_bytes(gzip.compress(src.read_bytes()))
        plain, zipped = read_transcript(src), read_transcript(gz)
        assert not zipped.rejects and zipped.format == plain.format
        assert [c.response for c in zipped.calls] == [c.response for c in plain.calls]
        assert [c.messages for c in zipped.calls] == [c.messages for c in plain.calls]
    # through ingest too (it detects the format from the decompressed lines)
    from sqlmodel import Session

    from clawviz.jobs.ingest import ingest_paths
    from clawviz.store.db import init_db
    from tests.dburl import memory_engine

    engine = memory_engine()
    init_db(engine)
    with Session(engine) as session:
        report = ingest_paths([tmp_path], session=session)
    assert not report.rejected
    assert sorted((f.format, f.n_calls) for f in report.files) == [
        ("transcript_codex", 2),
        ("transcript_pi", 3),
    ]
    data = gzip.compress(codex.read_bytes())
    cut = tmp_path / "rollout-cut.jsonl.gz"
    cut.write_bytes(data[:-40])
    read = read_transcript(cut)
    assert any("gzip stream ends early" in reason for _, reason, _ in read.rejects)
    assert read.format == CODEX_FORMAT


def _wire_bodies(folder: Path) -> list[dict]:
    """The request bodies the proxy logged for a recording (the wire, not clawviz's replay)."""
    out = []
    for line in (folder / "exchanges.jsonl").read_text().splitlines():
        body = json.loads(line)["request"]["body"]
        out.append(json.loads(body) if isinstance(body, str) else body)
    return out


def _text(item: dict) -> str:
    """The text of a wire input item or a replayed message (its parts, joined)."""
    return "".join(part["text"] for part in item["content"])


def test_base_instructions_go_where_the_release_that_wrote_the_rollout_put_them(tmp_path):
    """0.160.0 sends the base instructions in the request's `instructions` field, 0.169.1 and
    0.171.0 as the first developer message of `input` (the logged requests say so); the replay
    follows the rollout's own session_meta.cli_version, not where the file lies."""
    from clawviz.ingest.transcripts.codex import instructions_layout

    layouts = {
        v: instructions_layout({"cli_version": v})
        for v in ("0.160.0", "0.168.9", "0.169.1", "0.171.0", "0.0.0", "dev", None)
    }
    assert layouts == {
        "0.160.0": "field",
        "0.168.9": "field",
        "0.169.1": "message",
        "0.171.0": "message",
        "0.0.0": "message",
        "dev": "message",
        None: "message",
    }

    old = RECORDED.parent / "codex-0.160.0" / "failed-call-compaction"
    new = RECORDED.parent / "codex-0.169.1" / "failed-call-compaction"
    for folder in (old, new):
        meta = json.loads((folder / "rollout.jsonl").read_text().splitlines()[0])["payload"]
        base = meta["base_instructions"]["text"]
        wire = _wire_bodies(folder)
        calls = read_transcript(folder / "rollout.jsonl").calls
        first = calls[0]
        opening = base.split("\n")[0]
        if folder is old:
            # the wire: the `instructions` field (trimmed, same opening), then the items
            assert all(b["instructions"].split("\n")[0] == opening for b in wire)
            assert all(c.system == base for c in calls)
            n = 0
        else:
            # the wire: no `instructions`; the first input item is the (trimmed) base
            assert all("instructions" not in b for b in wire)
            assert all(_text(b["input"][0]).split("\n")[0] == opening for b in wire)
            assert all(c.system == "" and _text(c.messages[0]) == base for c in calls)
            n = 1
        assert len(first.messages) == len(wire[0]["input"])
        assert {_text(c.messages[n]) for c in calls} == {_text(b["input"][n]) for b in wire}
        assert {c.messages[n]["role"] for c in calls} == {"system"}

    # the same 0.160.0 rollout, told it was written by 0.171.0, replays to the later layout
    lines = (old / "rollout.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    base = head["payload"]["base_instructions"]["text"]
    head["payload"]["cli_version"] = "0.171.0"
    moved = tmp_path / "codex-0.160.0" / "rollout.jsonl"
    moved.parent.mkdir()
    moved.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    relabelled = read_transcript(moved).calls
    assert relabelled[0].system == ""
    assert _text(relabelled[0].messages[0]) == base
    assert len(relabelled[0].messages) == len(_wire_bodies(old)[0]["input"]) + 1
