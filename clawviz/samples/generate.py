"""Write the bundled sample dataset: tasks, logs, workspaces, results, expected decisions."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawviz.samples import claude_code, openclaw
from clawviz.samples.agent import PLANS
from clawviz.samples.episode import Episode, EpisodeMeta, check_structure, label_episode
from clawviz.samples.wire import dumps

TEMPLATES = Path(__file__).parent / "templates"
T0 = dt.datetime(2026, 4, 16, 2, 0, tzinfo=dt.UTC).timestamp()
MODELS = {
    ("claude-code", "strong"): claude_code.SONNET,
    ("claude-code", "small"): claude_code.HAIKU,
    ("openclaw", "strong"): "qwen3-235b-a22b-instruct-2507",
    ("openclaw", "small"): "qwen3-4b-instruct-2507",
}
BAD_LINES_EPISODE = "t0003-claude-code-a4"
GZIP_EPISODE = "t0003-claude-code-a2"
ARCHIVES = {
    "t0001-claude-code-a1": {"after": "tar.gz"},
    "t0003-claude-code-a2": {"before": "tar.gz"},
    "t0002-openclaw-a1": {"after": "zip"},
}


@dataclass(frozen=True)
class Plan:
    """One attempt to generate: task, harness, attempt number, identity style, quirks, mistakes."""

    task: str
    harness: str
    attempt: int
    identity: str = "clawviz"
    quirks: tuple[str, ...] = ()
    mistakes: frozenset[str] = field(default_factory=frozenset)
    has_result: bool = True

    @property
    def key(self) -> str:
        return f"t{self.task[-4:]}-{self.harness}-a{self.attempt}"

    @property
    def model_role(self) -> str:
        return "strong" if self.attempt <= 2 else "small"


def _p(
    task: str,
    harness: str,
    attempt: int,
    *quirks: str,
    m: tuple[str, ...] = (),
    identity: str = "clawviz",
    has_result: bool = True,
) -> Plan:
    return Plan(task, harness, attempt, identity, quirks, frozenset(m), has_result)


CC, OC = "claude-code", "openclaw"
PLAN: tuple[Plan, ...] = (
    _p("task_0001", CC, 1, "models_list", "warmup", "utility", "subagent_sync", "retry_529"),
    _p("task_0001", CC, 2, "subagent_async", "compaction"),
    _p(
        "task_0001",
        CC,
        3,
        "resend_branch",
        m=(
            "hand_stats",
            "no_test_log",
            "updates_unordered",
            "no_next_steps",
            "no_blocked",
            "no_announcement",
        ),
    ),
    _p("task_0001", CC, 4, "ends_in_error", m=("stop_after_tests",)),
    _p("task_0002", CC, 1, "rewinds", "utility", "utility_no_session", identity="header"),
    _p("task_0002", CC, 2, "count_tokens", identity="header"),
    _p("task_0002", CC, 3, "orphan_title", m=("skip_last_row",), identity="header"),
    _p("task_0002", CC, 4, "truncated_stream", m=("wrong_top",), identity="header"),
    _p("task_0003", CC, 1, "warmup", "explore_subagent"),
    _p("task_0003", CC, 2, "gzip", m=("no_changelog",)),
    _p("task_0003", CC, 3, m=("no_parse_fix", "edit_tests"), has_result=False),
    _p("task_0003", CC, 4, "bad_lines", m=("no_parse_fix",)),
    _p("task_0001", OC, 1, "token_ids", "heartbeat", "memory_flush"),
    _p("task_0001", OC, 2, "token_ids", "spawn", "overflow_compaction", m=("long_announcement",)),
    _p(
        "task_0001",
        OC,
        3,
        "retry_500",
        "cron",
        m=("hand_stats", "updates_unordered", "no_next_steps", "long_announcement"),
    ),
    _p("task_0001", OC, 4, "canvas", m=("no_test_log", "no_blocked", "no_announcement")),
    _p("task_0002", OC, 1, "heartbeat_2026_9", identity="header"),
    _p("task_0002", OC, 2, "spawn_tool_search", identity="header"),
    _p("task_0002", OC, 3, "stream", "token_ids", identity="header"),
    _p("task_0002", OC, 4, m=("no_report",), identity="header"),
    _p("task_0003", OC, 1, "stream", "heartbeat"),
    _p("task_0003", OC, 2, "spawn", m=("no_changelog",)),
    _p(
        "task_0003",
        OC,
        3,
        m=("no_inclusive_fix", "no_parse_fix", "no_changelog"),
        identity="clawgym",
    ),
    _p("task_0003", OC, 4, m=("no_parse_fix", "no_report"), identity="clawgym"),
)


@dataclass
class GenerationReport:
    """What `generate` wrote."""

    out_dir: Path
    n_episodes: int
    n_calls: int
    n_bad_lines: int
    total_bytes: int


def _uuid(rng: random.Random) -> str:
    h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:]}"


def _run_checker(task_dir: Path, ws: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-B", "-E", "-s", "-S", str(task_dir / "reward" / "check.py"), str(ws)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(proc.stdout)


def _rubric(task: str, ws: Path) -> dict[str, float] | None:
    if task != "task_0001":
        return None
    ann = ws / "build" / "announcement_rewrite.txt"
    report = ws / "build" / "weekly_report.md"
    tone = 0.0 if not ann.exists() else (1.0 if len(ann.read_text().split()) < 120 else 0.5)
    steps = 1.0 if report.exists() and "## Next steps" in report.read_text() else 0.0
    return {"tone_friendly": tone, "actionable_next_steps": steps}


def _copytree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _archive(folder: Path, target: Path, kind: str) -> None:
    """Deterministic archive of `folder` (sorted entries, fixed times and owners)."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    if kind == "zip":
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
            for p in files:
                info = zipfile.ZipInfo(str(p.relative_to(folder)), date_time=(2026, 4, 16, 0, 0, 0))
                info.external_attr = 0o644 << 16
                zf.writestr(info, p.read_bytes(), zipfile.ZIP_DEFLATED)
        return
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for p in files:
            data = p.read_bytes()
            member = tarfile.TarInfo(str(p.relative_to(folder)))
            member.size, member.mtime, member.mode = len(data), 1776297600, 0o644
            member.uid = member.gid = 0
            member.uname = member.gname = "root"
            tf.addfile(member, io.BytesIO(data))
    target.write_bytes(_gzip(buf.getvalue()))


def _gzip(data: bytes) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(data)
    return out.getvalue()


def _copy_tasks(out: Path) -> None:
    tasks = out / "tasks"
    for name in ("task_0001", "task_0002", "task_0003"):
        _copytree(TEMPLATES / name, tasks / name)
    _copytree(TEMPLATES / "pinchbench", tasks / "pinchbench")


def _build_episode(plan: Plan, index: int, seed: int, out: Path, tmp: Path) -> Episode:
    rng = random.Random(seed * 1_000_003 + zlib.crc32(plan.key.encode()))
    session = _uuid(rng)
    meta = EpisodeMeta(
        episode_id=plan.key if plan.identity == "clawviz" else session,
        task_id=plan.task,
        harness=plan.harness,
        attempt=plan.attempt,
        model_role=plan.model_role,
        model=MODELS[(plan.harness, plan.model_role)],
        identity=plan.identity,
        session_id=session,
        mistakes=plan.mistakes,
        quirks=plan.quirks,
        has_result=plan.has_result,
    )
    ep = Episode(meta, rng, round(T0 + index * 1800 + rng.random() * 60, 3))
    task_dir = out / "tasks" / plan.task
    ws = tmp / plan.key
    _copytree(task_dir / "input_files", ws)
    query = json.loads((task_dir / "data_entry.json").read_text())["user_query"]
    turns = PLANS[plan.task](plan.mistakes)
    module = claude_code if plan.harness == CC else openclaw
    module.run_episode(ep, ws, query, turns)
    check_structure(ep)
    ep.checks = _run_checker(task_dir, ws)
    score = round(sum(ep.checks.values()) / len(ep.checks), 6)
    ep.reward = score if plan.has_result else None
    ep.rubric = _rubric(plan.task, ws) if plan.attempt % 2 == 1 or plan.harness == CC else None
    ep.workspace = ws
    return ep


def _with_bad_lines(ep: Episode, entries: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Insert the deliberately bad lines among the good ones (a dict describes each bad line)."""
    meta = ep.meta
    util = {
        "request": {
            "timestamp": ep.t0 + 5,
            "method": "POST",
            "url": "https://api.anthropic.com/v1/messages?beta=true",
            "headers": {"anthropic-version": "2023-06-01"},
            "body": {
                "model": claude_code.HAIKU,
                "max_tokens": 512,
                "stream": True,
                "messages": [
                    {
                        "role": "user",
                        "content": "Generate a concise, sentence-case title for this conversation.",
                    }
                ],
            },
        },
        "response": {
            "timestamp": ep.t0 + 6,
            "status_code": 200,
            "headers": {"content-type": "text/event-stream"},
            "body_raw": 'event: message_start\ndata: {"type":"message_start","mess\n\n'
            "event: content_block_delta\ndata: <html>502 Bad Gateway</html>\n\n",
        },
        "logged_at": "2026-04-16T07:30:06.000Z",
        "clawviz": {
            "episode_id": meta.episode_id,
            "task_id": meta.task_id,
            "harness": meta.harness,
            "attempt": meta.attempt,
        },
    }
    title = {
        **util,
        "response": {
            "timestamp": ep.t0 + 7,
            "status_code": 200,
            "headers": {"content-type": "application/json"},
            "body": {"content": [{"type": "text", "text": "Fix restock"}]},
        },
    }
    cut = dumps(title)
    out = list(entries)
    out.insert(
        8,
        (dumps(util), {"kind": "bad_sse", "reason": "SSE body_raw whose data lines do not parse"}),
    )
    out.insert(
        5,
        (
            dumps({"type": "proxy_stats", "exchanges": 12, "uptime_s": 3600}),
            {"kind": "not_exchange", "reason": "valid JSON but no request/response"},
        ),
    )
    out.insert(
        2,
        (
            "proxy restarted: flushing 3 buffered exchanges",
            {"kind": "not_json", "reason": "not valid JSON"},
        ),
    )
    out.append(
        (
            cut[: len(cut) * 3 // 5],
            {"kind": "truncated", "reason": "last line cut off mid-record, no newline"},
        )
    )
    return out


def _write_log(ep: Episode, plan: Plan, out: Path) -> tuple[str, list[dict[str, Any]]]:
    """Write the episode's exchange log in completion order; return its path and bad lines."""
    rel = f"exchanges/{plan.harness}/{plan.key}.jsonl" + (".gz" if "gzip" in plan.quirks else "")
    module = claude_code if plan.harness == CC else openclaw
    by_response = sorted(ep.specs, key=lambda s: (s.t_response, s.seq))
    entries: list[tuple[str, Any]] = [(dumps(module.record(ep, s)), s) for s in by_response]
    if "bad_lines" in plan.quirks:
        entries = _with_bad_lines(ep, entries)
    bad = []
    for n, (_text, what) in enumerate(entries, 1):
        if isinstance(what, dict):
            bad.append({"file": rel, "line": n, **what})
        else:
            what.file, what.line = rel, n
    # The bad-lines file ends in a truncated record, so it has no final newline.
    text = "\n".join(t for t, _ in entries) + ("" if bad else "\n")
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if rel.endswith(".gz"):
        path.write_bytes(_gzip(text.encode()))
    else:
        path.write_text(text)
    return rel, bad


def _write_workspaces(ep: Episode, plan: Plan, out: Path) -> dict[str, str]:
    """Before/after workspaces as folders or archives; paths relative to `out`."""
    folder = out / "workspaces" / plan.key
    folder.mkdir(parents=True, exist_ok=True)
    assert ep.workspace is not None, f"{plan.key}: the agent wrote no workspace"
    paths = {}
    for side, src in (
        ("before", out / "tasks" / plan.task / "input_files"),
        ("after", ep.workspace),
    ):
        kind = ARCHIVES.get(plan.key, {}).get(side)
        if kind:
            target = folder / f"{side}.{kind}"
            _archive(src, target, kind)
        else:
            target = folder / side
            _copytree(src, target)
        paths[side] = str(target.relative_to(out))
    return paths


def _episode_row(ep: Episode, plan: Plan, rel: str, verdict: dict[str, Any]) -> dict[str, Any]:
    return {
        "episode_id": ep.meta.episode_id,
        "name": plan.key,
        "file": rel,
        "task_id": plan.task,
        "harness": plan.harness,
        "attempt": plan.attempt,
        "model_role": plan.model_role,
        "model": ep.meta.model,
        "identity": plan.identity,
        "quirks": list(plan.quirks),
        "reward": ep.reward,
        "n_calls": len(ep.specs),
        **verdict,
    }


def _result_row(ep: Episode, plan: Plan, paths: dict[str, str]) -> dict[str, Any]:
    """One results.jsonl line (FORMATS §5) plus model_role for the difficulty filter."""
    row: dict[str, Any] = {
        "episode_id": ep.meta.episode_id,
        "task_id": plan.task,
        "harness": plan.harness,
        "model": ep.meta.model,
        "model_role": plan.model_role,
        "attempt": plan.attempt,
        "reward": ep.reward,
        "checks": ep.checks,
    }
    if ep.rubric is not None:
        row["rubric"] = ep.rubric
    row["workspace_before"] = paths["before"]
    row["workspace_after"] = paths["after"]
    return row


def generate(
    out_dir: str | Path, seed: int = 0, only: Collection[str] | None = None
) -> GenerationReport:
    """Regenerate the sample dataset in `out_dir` (deterministic for a seed).

    `only` limits it to some episode names (e.g. `t0001-openclaw-a2`); each episode's bytes do
    not depend on which others are generated.
    """
    out = Path(out_dir)
    for sub in ("tasks", "exchanges", "workspaces"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
    for name in ("results.jsonl", "expected.json", "README.md"):
        (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    _copy_tasks(out)
    episodes: list[Episode] = []
    expected_calls: list[dict[str, Any]] = []
    expected_eps: list[dict[str, Any]] = []
    bad_out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="clawviz-samples-") as tmp:
        for index, plan in enumerate(PLAN):
            if only is not None and plan.key not in only:
                continue
            ep = _build_episode(plan, index, seed, out, Path(tmp))
            episodes.append(ep)
            verdict = label_episode(ep)
            rel, bad = _write_log(ep, plan, out)
            bad_out += bad
            expected_calls += [_call_row(ep, s) for s in sorted(ep.specs, key=lambda s: s.seq)]
            expected_eps.append(_episode_row(ep, plan, rel, verdict))
            paths = _write_workspaces(ep, plan, out)
            if plan.has_result:
                results.append(_result_row(ep, plan, paths))
    (out / "results.jsonl").write_text("".join(dumps(r) + "\n" for r in results))
    expected = {
        "version": 1,
        "seed": seed,
        "settings": "clawviz.settings.DEFAULT_SETTINGS",
        "conventions": CONVENTIONS,
        "episodes": expected_eps,
        "calls": expected_calls,
        "bad_lines": bad_out,
        "difficulty": _difficulty(expected_eps),
    }
    (out / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    from clawviz.samples.readme import render_readme

    (out / "README.md").write_text(render_readme(expected))
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return GenerationReport(out, len(episodes), len(expected_calls), len(bad_out), total)


def _ref(s: Any) -> dict[str, Any] | None:
    return None if s is None else {"file": s.file, "line": s.line}


def _call_row(ep: Episode, s: Any) -> dict[str, Any]:
    return {
        "file": s.file,
        "line": s.line,
        "episode_id": ep.meta.episode_id,
        "seq": s.seq,
        "role": s.role,
        "state": s.state,
        "reason": s.reason,
        "parent": _ref(s.parent),
        "retry_of": _ref(s.retry_of),
        "linked": _ref(s.linked),
        "segment": s.segment,
        "http_status": None if s.failure == "orphaned_request" else s.status,
        "failure": s.failure,
        "note": s.note,
    }


def _difficulty(eps: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for task in sorted({e["task_id"] for e in eps}):
        means = {}
        for role in ("strong", "small"):
            rs = [
                e["reward"]
                for e in eps
                if e["task_id"] == task and e["model_role"] == role and e["reward"] is not None
            ]
            means[role] = round(sum(rs) / len(rs), 6) if rs else None
        s, m = means["strong"], means["small"]
        out[task] = {
            "s_strong": s,
            "s_small": m,
            "passes": bool(s is not None and m is not None and s >= 0.2 and m <= 0.6 and s > m),
        }
    return out


CONVENTIONS = {
    "line": "1-based physical line in the (decompressed) file",
    "seq": "1-based order of the call's request time within its episode",
    "segment": "0-based index of the main segment (compaction starts the next); null for "
    "auxiliary calls",
    "parent": "the earlier call whose messages + response is the longest prefix of this call's "
    "messages (PIPELINE §2); failed calls are never parents",
    "retry_of": "on the call that took the place of a failed or abandoned sibling: that sibling",
    "linked": "sub-agent first call -> the spawning call; summary call -> the tip it summarised; "
    "continuation root -> the summary call",
    "dropped_episodes": "call states inside a dropped episode are the tree-level decisions "
    "(kept / not_longest / superseded_retry / failed / auxiliary); the "
    "episode-level reasons are listed on the episode only",
    "auxiliary_reason": "an auxiliary call's reason is its role code (aux_summary, ...)",
}
