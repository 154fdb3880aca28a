"""Benchmark tasks: load ClawGym folders and PinchBench markdown, build the review queue.

The queue shows, per task, the difficulty filter of ClawGym-Bench (PIPELINE.md §7) over the
attempts recorded in the Result table: s_strong >= difficulty_strong_min (0.2), s_small <=
difficulty_small_max (0.6), s_strong > s_small, where s_<role> is the mean reward (the one reward
rule, `clawviz.store.rewards`) of the attempts whose model_role is that role.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col, func, select

from clawviz.review.signoff import latest_reviews, review_history
from clawviz.review.solvability import Solvability, solvable_status
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.store import (
    Episode,
    Finding,
    Result,
    Review,
    Task,
    result_reward,
    reward_from_columns,
)

# Means of a few float rewards are compared with a tolerance so that 0.2 means 0.2.
_EPS = 1e-9
_MAX_DEPTH = 4


class TaskFormatError(ValueError):
    """A task file or folder that cannot be read; the message names the file."""


# ---------------------------------------------------------------- loading


def load_task_folder(path: str | Path) -> list[Task]:
    """Read one task or a folder of many (ClawGym folders and PinchBench `task_*.md` files)."""
    root = Path(path)
    if root.is_file():
        return [_load_pinchbench(root)] if _is_pinchbench_md(root) else []
    if (root / "data_entry.json").is_file():
        return [_load_clawgym(root)]
    tasks: list[Task] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        depth = len(here.relative_to(root).parts)
        dirnames.sort()
        if "data_entry.json" in filenames and here != root:
            tasks.append(_load_clawgym(here))
            dirnames[:] = []
            continue
        for name in sorted(filenames):
            if name.endswith(".md") and _is_pinchbench_md(here / name):
                tasks.append(_load_pinchbench(here / name))
        # Task folders hold input files of their own; never descend into them as task roots.
        dirnames[:] = [d for d in dirnames if depth + 1 < _MAX_DEPTH and not d.startswith(".")]
    return tasks


def is_task_folder(path: str | Path) -> bool:
    """True when `path` is a ClawGym task folder or a PinchBench task file."""
    p = Path(path)
    return (p / "data_entry.json").is_file() or (p.is_file() and _is_pinchbench_md(p))


def _load_clawgym(folder: Path) -> Task:
    entry_path = folder / "data_entry.json"
    try:
        data = json.loads(entry_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TaskFormatError(f"{entry_path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise TaskFormatError(f"{entry_path}: expected a JSON object")
    meta = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    return Task(
        task_id=str(data.get("task_id") or folder.name),
        name=str(data.get("name") or folder.name),
        category=(meta.get("category") or None),
        grading_type=meta.get("grading_type") or None,
        kind="clawgym",
        folder=str(folder.resolve()),
        instruction=str(data.get("user_query") or ""),
        data_json=json.dumps(data, ensure_ascii=False),
    )


def _is_pinchbench_md(path: Path) -> bool:
    if path.suffix != ".md" or not path.name.startswith("task_"):
        return False
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:2000]
    except OSError:
        return False
    return bool(re.search(r"^id:\s*\S", head, re.M)) and "## " in head + "## "


def parse_pinchbench(text: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Split a PinchBench task file into its front matter and its `## ` sections."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), len(lines))
        front_lines, body = lines[1:end], lines[end + 1 :]
    else:
        end = next((i for i, ln in enumerate(lines) if ln.startswith("## ")), len(lines))
        front_lines, body = lines[:end], lines[end:]
    sections: dict[str, str] = {}
    current: str | None = None
    buf: list[str] = []
    for ln in body:
        if ln.startswith("## "):
            if current is not None:
                sections[current] = _clean_section("\n".join(buf))
            current, buf = ln[3:].strip(), []
        elif current is not None:
            buf.append(ln)
    if current is not None:
        sections[current] = _clean_section("\n".join(buf))
    return _parse_front_matter(front_lines), sections


def _clean_section(text: str) -> str:
    """Strip blank edges and the `---` rule PinchBench puts between sections."""
    text = text.strip()
    if text.endswith("\n---") or text == "---":
        text = text[:-3].rstrip()
    return text


def _scalar(v: str) -> Any:
    v = v.strip().strip("'\"")
    if re.fullmatch(r"-?\d+", v):
        return int(v)
    if re.fullmatch(r"-?\d+\.\d*", v):
        return float(v)
    return v


def _parse_front_matter(lines: list[str]) -> dict[str, Any]:
    """The simple YAML subset PinchBench uses: `key: value`, and lists of scalars or maps."""
    out: dict[str, Any] = {}
    key: str | None = None
    for ln in lines:
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        m = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", ln)
        if m and not ln.startswith((" ", "\t")):
            key, value = m.group(1), m.group(2).strip()
            if value.startswith("[") and value.endswith("]"):
                out[key] = [_scalar(x) for x in value[1:-1].split(",") if x.strip()]
            else:
                out[key] = _scalar(value) if value else []
            continue
        if key is None:
            continue
        item = re.match(r"^\s+-\s*(.*)$", ln)
        if item:
            if not isinstance(out.get(key), list):
                out[key] = []
            sub = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", item.group(1))
            out[key].append(
                {sub.group(1): _scalar(sub.group(2))} if sub else _scalar(item.group(1))
            )
            continue
        sub = re.match(r"^\s+([A-Za-z_][\w-]*):\s*(.*)$", ln)
        if sub and isinstance(out.get(key), list) and out[key] and isinstance(out[key][-1], dict):
            out[key][-1][sub.group(1)] = _scalar(sub.group(2))
    return out


def _load_pinchbench(md: Path) -> Task:
    try:
        text = md.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFormatError(f"{md}: cannot read ({exc})") from exc
    front, sections = parse_pinchbench(text)
    task_id = str(front.get("id") or md.stem)
    data = {"front_matter": front, "sections": sections, "md_path": str(md.resolve())}
    return Task(
        task_id=task_id,
        name=str(front.get("name") or task_id),
        category=front.get("category") or None,
        grading_type=front.get("grading_type") or None,
        kind="pinchbench",
        folder=str(md.resolve()),
        instruction=sections.get("Prompt", ""),
        data_json=json.dumps(data, ensure_ascii=False),
    )


def upsert_tasks(session: Session, tasks: list[Task]) -> int:
    """Insert or replace tasks by task_id; returns how many were written."""
    for t in tasks:
        session.merge(t)
    session.commit()
    return len(tasks)


def ingest_task_folder(session: Session, path: str | Path) -> list[Task]:
    """Load every task under `path` and upsert them into the store."""
    tasks = load_task_folder(path)
    upsert_tasks(session, tasks)
    return tasks


# ---------------------------------------------------------------- difficulty filter


@dataclass
class FilterTerm:
    """One term of the difficulty filter, its value and whether it holds (None: no data)."""

    name: str
    value: str
    passed: bool | None


@dataclass
class DifficultyFilter:
    """The three terms and the overall verdict (None when a role has no scored attempt)."""

    s_strong: float | None
    s_small: float | None
    terms: list[FilterTerm]
    passed: bool | None


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def difficulty_filter(
    s_strong: float | None, s_small: float | None, settings: Settings = DEFAULT_SETTINGS
) -> DifficultyFilter:
    """Evaluate s_strong >= strong_min, s_small <= small_max and s_strong > s_small."""
    strong_min, small_max = settings.difficulty_strong_min, settings.difficulty_small_max
    t1 = None if s_strong is None else s_strong >= strong_min - _EPS
    t2 = None if s_small is None else s_small <= small_max + _EPS
    t3 = None if s_strong is None or s_small is None else s_strong > s_small + _EPS
    terms = [
        FilterTerm(f"s_strong >= {strong_min}", _fmt(s_strong), t1),
        FilterTerm(f"s_small <= {small_max}", _fmt(s_small), t2),
        FilterTerm("s_strong > s_small", f"{_fmt(s_strong)} vs {_fmt(s_small)}", t3),
    ]
    values = [t.passed for t in terms]
    overall = False if False in values else (None if None in values else True)
    return DifficultyFilter(s_strong, s_small, terms, overall)


def verdict_label(passed: bool | None) -> str:
    return {True: "pass", False: "fail", None: "n/a"}[passed]


# ---------------------------------------------------------------- attempts and queue


@dataclass
class AttemptRow:
    """One attempt of a task: who ran it, its reward and per-check scores, its workspaces."""

    episode_id: str
    harness: str | None
    model: str | None
    model_role: str | None
    attempt: int | None
    reward: float | None
    checks: dict[str, float]
    workspace_before: str | None
    workspace_after: str | None
    has_calls: bool
    task_id: str | None = None

    @property
    def failed_checks(self) -> list[str]:
        return [k for k, v in self.checks.items() if v < 1.0]


def _loads(text: str | None) -> dict[str, Any]:
    try:
        obj = json.loads(text or "{}")
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}


def _num_checks(text: str | None) -> dict[str, float]:
    out = {}
    for k, v in _loads(text).items():
        if isinstance(v, (int, float)):
            out[str(k)] = float(v)
    return out


def _attempt_row(
    episode_id: str,
    result: Result | None,
    ep: Episode | None,
    settings: Settings = DEFAULT_SETTINGS,
) -> AttemptRow:
    """One attempt from its result line and/or its episode (the result wins where both say)."""

    def pick(field: str) -> Any:
        value = getattr(result, field, None) if result is not None else None
        return value if value is not None else getattr(ep, field, None)

    return AttemptRow(
        episode_id=episode_id,
        harness=pick("harness"),
        model=pick("model"),
        model_role=pick("model_role"),
        attempt=pick("attempt"),
        reward=result_reward(result, settings),
        checks=_num_checks(result.checks_json) if result is not None else {},
        workspace_before=result.workspace_before if result is not None else None,
        workspace_after=result.workspace_after if result is not None else None,
        has_calls=bool(ep is not None and ep.n_calls),
        task_id=pick("task_id"),
    )


def _sort_key(a: AttemptRow) -> tuple:
    return (a.model_role or "", a.harness or "", a.attempt or 0, a.episode_id)


def task_attempts(
    session: Session, task_id: str, settings: Settings = DEFAULT_SETTINGS
) -> list[AttemptRow]:
    """Every attempt of a task: its result lines and its episodes (with or without a result)."""
    episodes = {
        e.episode_id: e for e in session.exec(select(Episode).where(Episode.task_id == task_id))
    }
    results = {
        r.episode_id: r for r in session.exec(select(Result).where(Result.task_id == task_id))
    }
    # A result line without a task id still belongs to its episode's task.
    missing = [eid for eid in episodes if eid not in results]
    if missing:
        stmt = select(Result).where(col(Result.episode_id).in_(missing))
        results.update({r.episode_id: r for r in session.exec(stmt)})
    rows = [
        _attempt_row(eid, results.get(eid), episodes.get(eid), settings)
        for eid in set(results) | set(episodes)
    ]
    for row in rows:
        row.task_id = task_id
    return sorted(rows, key=_sort_key)


def role_means(attempts: list[AttemptRow]) -> dict[str, tuple[float | None, int]]:
    """Mean reward and number of scored attempts per model role."""
    return _role_means([(a.model_role, a.reward) for a in attempts])


RoleMeans = dict[str, tuple[float | None, int]]
"""Per model role: the mean score of the scored attempts, and their number (`_role_means`)."""
AttemptSummary = dict[str, tuple[int, RoleMeans]]
"""Per task named by a result or an episode: its number of attempts and its role means."""


def _role_means(attempts: list[tuple[str | None, float | None]]) -> RoleMeans:
    by_role: dict[str, list[float]] = {}
    for role, reward in attempts:
        if role and reward is not None:
            by_role.setdefault(role, []).append(reward)
    return {role: (sum(v) / len(v), len(v)) for role, v in by_role.items()}


@dataclass
class TaskRow:
    """One line of the review queue."""

    task_id: str
    name: str
    category: str | None
    kind: str
    status: str
    """Latest review decision, or 'pending'."""
    reviewer: str | None
    n_attempts: int
    s_strong: float | None
    s_small: float | None
    n_strong: int
    n_small: int
    filter: DifficultyFilter
    open_findings: int = 0
    """Diagnosis findings no reviewer has judged yet."""
    solvable: Solvability | None = None
    """The latest checker run on a reference solution (None: never checked)."""

    def as_dict(self) -> dict[str, Any]:
        """Flat JSON-able form (CLI `tasks --json`, tables)."""
        return {
            "task_id": self.task_id,
            "name": self.name,
            "category": self.category,
            "kind": self.kind,
            "status": self.status,
            "reviewer": self.reviewer,
            "n_attempts": self.n_attempts,
            "s_strong": self.s_strong,
            "s_small": self.s_small,
            "n_strong": self.n_strong,
            "n_small": self.n_small,
            "filter_terms": [
                {"term": t.name, "value": t.value, "passed": t.passed} for t in self.filter.terms
            ],
            "filter_passed": self.filter.passed,
            "open_findings": self.open_findings,
            "solvable": self.solvable.label if self.solvable else None,
        }


def attempt_summary(session: Session, settings: Settings = DEFAULT_SETTINGS) -> AttemptSummary:
    """Every task's attempts and role means: one pass over every result and episode.

    This is the review queue's costly part (a training run's store has 100,000 attempts and
    more), and it depends only on the results' and episodes' attempt columns and the reward
    settings: the app caches it under `store.attempts_revision`.
    """
    # Only the columns an attempt's task, role and reward come from, as tuples: the queue
    # reads every result and episode of the store (the ORM objects of 100,000 of each cost
    # most of the page's first view).
    results = session.execute(
        sa.select(
            col(Result.episode_id), col(Result.task_id), col(Result.model_role),
            col(Result.reward), col(Result.checks_json), col(Result.rubric_json),
        )  # fmt: skip
    ).all()
    episodes = session.execute(
        sa.select(col(Episode.episode_id), col(Episode.task_id), col(Episode.model_role))
    ).all()
    task_ids = {r[1] for r in results if r[1]} | {e[1] for e in episodes if e[1]}
    ep_by_id = {e[0]: e for e in episodes}
    # (model role, reward) of each attempt, by task; the result wins where both say
    # (`_attempt_row`).
    attempts_by_task: dict[str, list[tuple[str | None, float | None]]] = {}
    seen: set[str] = set()
    for eid, task, role, reward, checks, rubric in results:
        ep = ep_by_id.get(eid)
        task = task if task is not None else (ep[1] if ep is not None else None)
        if task:
            role = role if role is not None else (ep[2] if ep is not None else None)
            score = reward_from_columns(reward, checks, rubric, settings)
            attempts_by_task.setdefault(task, []).append((role, score))
            seen.add(eid)
    for eid, task, role in episodes:
        if task and eid not in seen:
            attempts_by_task.setdefault(task, []).append((role, None))
    summary: AttemptSummary = {}
    for tid in task_ids:
        attempts = attempts_by_task.get(tid, [])
        summary[tid] = (len(attempts), _role_means(attempts))
    return summary


def task_queue(
    session: Session,
    settings: Settings = DEFAULT_SETTINGS,
    attempts: AttemptSummary | None = None,
) -> list[TaskRow]:
    """Every known task (from the Task table and from results) with status and filter terms.

    `attempts`: `attempt_summary(session, settings)` when the caller has it (the app's cache);
    reviews, findings and checker runs are always read.
    """
    if attempts is None:
        attempts = attempt_summary(session, settings)
    tasks = {t.task_id: t for t in session.exec(select(Task))}
    latest = latest_reviews(session)
    open_findings = open_findings_per_task(session)
    solvable = solvable_status(session)
    rows = []
    for tid in sorted(set(tasks) | set(attempts)):
        t = tasks.get(tid)
        n_attempts, means = attempts.get(tid, (0, {}))
        s_strong, n_strong = means.get("strong", (None, 0))
        s_small, n_small = means.get("small", (None, 0))
        review = latest.get(tid)
        rows.append(
            TaskRow(
                tid,
                t.name if t else tid,
                t.category if t else None,
                t.kind if t else "unknown",
                review.decision if review else "pending",
                review.reviewer if review else None,
                n_attempts,
                s_strong,
                s_small,
                n_strong,
                n_small,
                difficulty_filter(s_strong, s_small, settings),
                open_findings.get(tid, 0),
                solvable.get(tid),
            )
        )
    return rows


def open_findings_per_task(session: Session) -> dict[str, int]:
    """Diagnosis findings not yet judged, per task (the queue's 'open findings' column)."""
    stmt = (
        select(Finding.task_id, func.count())
        .where(col(Finding.verdict).is_(None))
        .group_by(Finding.task_id)
    )
    return {task: n for task, n in session.exec(stmt)}


# ---------------------------------------------------------------- detail


@dataclass
class CheckMatrix:
    """Per-check scores of every attempt: values[i][j] is check i in attempt j (None: absent)."""

    checks: list[str]
    attempts: list[str]
    values: list[list[float | None]]


def check_matrix(attempts: list[AttemptRow]) -> CheckMatrix:
    """Checks x attempts score matrix, checks in first-seen order."""
    checks: list[str] = []
    for a in attempts:
        for name in a.checks:
            if name not in checks:
                checks.append(name)
    scored = [a for a in attempts if a.checks]
    values = [[a.checks.get(c) for a in scored] for c in checks]
    return CheckMatrix(checks, [a.episode_id for a in scored], values)


@dataclass
class TaskDetail:
    """Everything the Tasks page shows about one task."""

    task: Task
    data: dict[str, Any]
    files_root: Path | None
    """Folder holding the task's input files (ClawGym input_files/, PinchBench tasks/<id>/)."""
    input_files: list[str]
    checker_path: Path | None
    checker_code: str | None
    reward_script: str | None
    rubric: Any
    sections: dict[str, str]
    attempts: list[AttemptRow]
    matrix: CheckMatrix
    filter: DifficultyFilter
    reviews: list[Review] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.reviews[-1].decision if self.reviews else "pending"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def list_files(root: Path | None, limit: int = 2000) -> list[str]:
    """Relative POSIX paths of the files under root (sorted, at most `limit`)."""
    if root is None or not root.is_dir():
        return []
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            out.append((Path(dirpath) / name).relative_to(root).as_posix())
            if len(out) >= limit:
                return out
    return out


def read_task_file(root: Path, rel: str, max_bytes: int = 200_000) -> tuple[bytes, bool]:
    """Bytes of one input file (cut at max_bytes); refuses paths that leave root."""
    full = (root / rel).resolve()
    if not full.is_relative_to(root.resolve()):
        raise ValueError(f"{rel!r} is outside the task folder")
    with full.open("rb") as fh:
        data = fh.read(max_bytes + 1)
    return data[:max_bytes], len(data) > max_bytes


def task_detail(
    session: Session, task_id: str, settings: Settings = DEFAULT_SETTINGS
) -> TaskDetail | None:
    """Instruction, files, checker, rubric, attempts, matrix, filter and reviews of one task."""
    task = session.get(Task, task_id)
    attempts = task_attempts(session, task_id, settings)
    if task is None:
        if not attempts:
            return None
        task = Task(task_id=task_id, name=task_id, kind="unknown")
    data = _loads(task.data_json)
    files_root = checker_path = None
    checker_code = reward_script = rubric = None
    sections: dict[str, str] = {}
    if task.kind == "clawgym" and task.folder:
        folder = Path(task.folder)
        files_root = folder / "input_files"
        checker_path = folder / "reward" / "check.py"
        checker_code = _read(checker_path)
        if checker_code is None:
            checker_path = None
        reward_script = _read(folder / "reward" / "reward.sh")
        rubric_text = _read(folder / "reward" / "rubric.json")
        if rubric_text:
            try:
                rubric = json.loads(rubric_text)
            except ValueError:
                rubric = rubric_text
    elif task.kind == "pinchbench":
        sections = data.get("sections", {}) if isinstance(data.get("sections"), dict) else {}
        md = Path(task.folder)
        files_root = md.parent / task.task_id
        checker_code = _strip_fence(sections.get("Automated Checks")) or None
        rubric = sections.get("LLM Judge Rubric") or None
    means = role_means(attempts)
    return TaskDetail(
        task=task,
        data=data,
        files_root=files_root if files_root and files_root.is_dir() else None,
        input_files=list_files(files_root),
        checker_path=checker_path,
        checker_code=checker_code,
        reward_script=reward_script,
        rubric=rubric,
        sections=sections,
        attempts=attempts,
        matrix=check_matrix(attempts),
        filter=difficulty_filter(
            means.get("strong", (None, 0))[0], means.get("small", (None, 0))[0], settings
        ),
        reviews=review_history(session, task_id),
    )


def _strip_fence(text: str | None) -> str | None:
    if not text:
        return text
    m = re.search(r"```[\w-]*\n(.*?)```", text, re.S)
    return m.group(1).rstrip() if m else text


# ---------------------------------------------------------------- one attempt's workspaces


@dataclass
class AttemptWorkspaces:
    """Where an attempt's before/after workspaces are (folders or archives), and its task."""

    attempt: AttemptRow
    before: str | None
    before_label: str
    after: str | None
    task: Task | None


def attempt_for_episode(
    session: Session, episode_id: str, settings: Settings = DEFAULT_SETTINGS
) -> AttemptRow | None:
    """The attempt (result line and/or episode) with this episode id."""
    result = session.exec(select(Result).where(Result.episode_id == episode_id)).first()
    ep = session.get(Episode, episode_id)
    if result is None and ep is None:
        return None
    return _attempt_row(episode_id, result, ep, settings)


def attempt_workspaces(
    session: Session, episode_id: str, settings: Settings = DEFAULT_SETTINGS
) -> AttemptWorkspaces | None:
    """Before/after of an attempt; a missing before falls back to the task's input files."""
    attempt = attempt_for_episode(session, episode_id, settings)
    if attempt is None:
        return None
    task = session.get(Task, attempt.task_id) if attempt.task_id else None
    before, label = attempt.workspace_before, "recorded before-workspace"
    if before is None and task is not None and task.kind == "clawgym" and task.folder:
        inputs = Path(task.folder) / "input_files"
        if inputs.is_dir():
            before, label = str(inputs), "task input_files/ (no before-workspace recorded)"
    return AttemptWorkspaces(attempt, before, label, attempt.workspace_after, task)


def attempt_has_workspace(session: Session, episode_id: str) -> bool:
    """Whether this attempt's result names an after-workspace: one row by the unique episode
    index (the Episode page asks it of the one episode it shows)."""
    stmt = (
        select(Result.id)
        .where(Result.episode_id == episode_id, col(Result.workspace_after).is_not(None))
        .limit(1)
    )
    return session.exec(stmt).first() is not None


def attempts_with_workspaces(session: Session) -> list[str]:
    """Episode ids of every attempt whose result names an after-workspace."""
    stmt = select(Result.episode_id).where(col(Result.workspace_after).is_not(None))
    return sorted(session.exec(stmt))
