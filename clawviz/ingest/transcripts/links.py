"""Link OpenClaw sub-agent session files to the parent session that spawned them.

OpenClaw keeps a `sessions_spawn` sub-agent in its own session file next to the parent's
(`~/.openclaw/agents/<agentId>/sessions/<sessionId>.jsonl`, or another agent's folder when the
spawn names an `agentId`); nothing in the child file names its parent. A scope's links are
computed once, as one assignment, so the parent file (which reads its children) and each child
file (which then loads nothing by itself) always agree.

A spawn finds its child, in order of trust:
1. the spawn's tool result names `childSessionKey`, and `sessions.json` in the folder maps that
   key to a `sessionId`, i.e. to `<sessionId>.jsonl`;
2. the key's last part equals a child file's header `id`;
3. the child's first user message carries `[Subagent Task]` with the spawn's `task` text; among
   several such files the earliest one starting at or after the spawn wins (each child is taken
   once, so parallel spawns of the same task get one child each, in time order).
"""

from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from clawviz.ingest.transcripts.common import is_session_name, parse_time, read_bytes, text_of

SPAWN_TOOL = "sessions_spawn"
WRAPPER_TOOL = "tool_call"
"""Tool Search's generic tool: `tool_call {"id": "sessions_spawn", "args": {...}}`."""
SUBAGENT_TASK_MARKERS = ("[Subagent Task]", "[Subagent Context] You are running as a subagent")
_HEAD_LINES = 40
_SLACK_SECONDS = 5.0
"""How far a child may appear to start before its spawn (clocks of separate writes)."""
_KEY_RX = re.compile(r'"childSessionKey"\s*:\s*"([^"]+)"')
_RUN_RX = re.compile(r'"runId"\s*:\s*"([^"]+)"')


@dataclass
class Spawn:
    """One `sessions_spawn` tool call in a parent session."""

    parent: str
    """File name of the parent session (within the folder)."""
    line: int
    """Line of the assistant entry that made the call (its call id is `<session>:L<line>`)."""
    tool_call_id: str
    task: str
    time: float | None
    child_key: str | None = None
    run_id: str | None = None


@dataclass
class Child:
    """A session file that starts as a sub-agent (first user message names its task)."""

    name: str
    session_id: str | None
    first_text: str
    time: float | None
    task: str = ""
    """The normalised text after `[Subagent Task]` (empty when the marker is absent)."""


@dataclass
class Link:
    """A child session file, the spawn that started it and how the two were matched."""

    child: str
    """File name of the child session (within the folder)."""
    spawn: Spawn
    matched_by: str
    """'session_key' (sessions.json), 'session_id' (key suffix = header id) or 'task_text'."""


class Links(dict[str, Link]):
    """Child file name -> its link, with the links also grouped by parent file."""

    def __init__(self, links: dict[str, Link] | None = None) -> None:
        super().__init__(links or {})
        self._by_parent: dict[str, list[Link]] | None = None

    def spawned_by(self, parent: str) -> list[Link]:
        """The links whose spawn is in `parent`, in spawn order."""
        if self._by_parent is None:
            self._by_parent = {}
            for link in self.values():
                self._by_parent.setdefault(link.spawn.parent, []).append(link)
            for group in self._by_parent.values():
                group.sort(key=lambda link: (link.spawn.line, link.child))
        return self._by_parent.get(parent, [])


@dataclass
class _Cached:
    """One scope's links and the state of the folders and files they were computed from."""

    dirs: tuple[tuple[str, int], ...]
    files: dict[str, tuple[int, int]]
    links: Links


_CACHE: dict[str, _Cached] = {}


def may_be_linked(raw_lines: list[str]) -> bool:
    """Whether a pi file could be a parent or a child (cheap test before a folder is scanned)."""
    for raw in raw_lines:
        if SPAWN_TOOL in raw or any(m in raw for m in SUBAGENT_TASK_MARKERS):
            return True
    return False


def scope_of(folder: str | Path) -> tuple[Path, list[Path]]:
    """The scope root and the folders whose sessions may spawn each other.

    In an OpenClaw state folder (`agents/<agentId>/sessions/`) a spawn with `agentId` puts the
    child in another agent's `sessions` folder, so the scope is every agent's; else the folder.
    """
    folder = Path(folder)
    if folder.name == "sessions" and folder.parent.parent.name == "agents":
        root = folder.parent.parent
        return root, sorted(d for d in root.glob("*/sessions") if d.is_dir())
    return folder, [folder]


def link_name(path: str | Path) -> tuple[Path, str]:
    """A session file's scope root and its name in `folder_links` (path relative to the root)."""
    path = Path(path)
    root, _ = scope_of(path.parent)
    return root, path.relative_to(root).as_posix()


def folder_links(folder: str | Path, file: str | Path | None = None) -> Links:
    """Child file name -> its link, for every linked sub-agent session file in the scope of
    `folder` (names are paths relative to the scope root, see `scope_of`).

    Kept per scope while its folders (files added or removed) and `file` (the one being read)
    are unchanged: ingesting a folder of many sessions then lists it once, not once per file.
    """
    root, folders = scope_of(folder)
    dirs = tuple((str(d), _mtime(d)) for d in folders)
    cache_key = str(root.resolve())
    cached = _CACHE.get(cache_key)
    if cached is not None and cached.dirs == dirs:
        name = Path(file).relative_to(root).as_posix() if file is not None else None
        if name is None or cached.files.get(name) == _size_mtime(Path(file or "")):
            return cached.links
    files: dict[str, tuple[int, int]] = {}
    for d in folders:
        try:
            for e in os.scandir(d):
                if e.is_file() and (is_session_name(e.name) or e.name == "sessions.json"):
                    st = e.stat()
                    files[(d / e.name).relative_to(root).as_posix()] = (
                        st.st_size,
                        st.st_mtime_ns,
                    )
        except OSError:
            continue
    names = sorted(n for n in files if is_session_name(n))
    index: dict[str, str] = {}
    for d in folders:
        index.update(_session_index(d / "sessions.json"))
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[cache_key] = _Cached(dirs, files, _compute(root, names, index))
    return _CACHE[cache_key].links


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


def _size_mtime(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _compute(root: Path, names: list[str], key_to_session: dict[str, str]) -> Links:
    spawns, children = _read_sessions(root, names)
    links, rest = _link_by_session(spawns, children, key_to_session)
    _link_by_task(rest, children, links)
    _drop_cycles(links)
    return Links(links)


def _read_sessions(root: Path, names: list[str]) -> tuple[list[Spawn], dict[str, Child]]:
    """Every spawn call and every child session (by file name) of the session files."""
    spawns: list[Spawn] = []
    children: dict[str, Child] = {}
    for name in names:
        path = root / name
        if not _is_session_file(path):
            continue
        try:
            data = read_bytes(path)
        except OSError:
            continue
        child = _child_of(name, data)
        if child is not None:
            children[child.name] = child
        if SPAWN_TOOL.encode() in data:
            spawns.extend(_spawns_in(name, data))
    return spawns, children


def _link_by_session(
    spawns: list[Spawn], children: dict[str, Child], key_to_session: dict[str, str]
) -> tuple[dict[str, Link], list[Spawn]]:
    """Links a spawn's child key names (through sessions.json, else its session id); the
    spawns left over, in time order."""
    by_session = {c.session_id: c for c in children.values() if c.session_id}
    links: dict[str, Link] = {}
    rest: list[Spawn] = []
    for spawn in spawns:
        child, how = None, ""
        session_id = key_to_session.get(spawn.child_key or "")
        if session_id and session_id in by_session:
            child, how = by_session[session_id], "session_key"
        elif spawn.child_key and spawn.child_key.rsplit(":", 1)[-1] in by_session:
            child, how = by_session[spawn.child_key.rsplit(":", 1)[-1]], "session_id"
        if child is None or child.name in links or child.name == spawn.parent:
            rest.append(spawn)
            continue
        links[child.name] = Link(child.name, spawn, how)
    rest.sort(key=lambda s: (s.time is None, s.time or 0.0, s.parent, s.line))
    return links, rest


def _link_by_task(rest: list[Spawn], children: dict[str, Child], links: dict[str, Link]) -> None:
    """The remaining spawns find the earliest unlinked child whose first message is the task."""
    by_task: dict[str, list[Child]] = {}
    for c in children.values():
        by_task.setdefault(c.task, []).append(c)

    def fits(c: Child, spawn: Spawn, task: str, exact: bool) -> bool:
        return (
            c.name not in links
            and c.name != spawn.parent
            and (exact or task in _norm(c.first_text))
            and (c.time is None or spawn.time is None or c.time >= spawn.time - _SLACK_SECONDS)
        )

    for spawn in rest:
        task = _norm(spawn.task)
        if not task:
            continue
        # The child whose task is exactly the spawn's first; a scan only when there is none.
        candidates = [c for c in by_task.get(task, []) if fits(c, spawn, task, True)]
        if not candidates:
            candidates = [c for c in children.values() if fits(c, spawn, task, False)]
        if not candidates:
            continue
        best = min(candidates, key=lambda c: (c.time is None, c.time or 0.0, c.name))
        links[best.name] = Link(best.name, spawn, "task_text")


def _is_session_file(path: Path) -> bool:
    """Whether a file opens like a pi session (so a proxy log beside it is never read whole)."""
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as fh:
            head = b"".join(line for _, line in zip(range(_HEAD_LINES), fh, strict=False))
    except OSError:
        return False
    for _, r in _records(head):
        if "request" in r or "response" in r:
            return False
        if r.get("type") in ("session", "message"):
            return True
    return False


def _drop_cycles(links: dict[str, Link]) -> None:
    """Remove links that would make a file its own ancestor (each file then reads alone)."""
    for start in list(links):
        seen = {start}
        current = links.get(start)
        while current is not None:
            parent = current.spawn.parent
            if parent in seen:
                links.pop(start, None)
                break
            seen.add(parent)
            current = links.get(parent)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _records(data: bytes, limit: int | None = None) -> list[tuple[int, dict[str, Any]]]:
    out: list[tuple[int, dict[str, Any]]] = []
    for i, raw in enumerate(data.split(b"\n"), start=1):
        if limit is not None and i > limit:
            break
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict):
            out.append((i, record))
    return out


def _child_of(name: str, data: bytes) -> Child | None:
    """The file as a sub-agent session, when its first user message names a sub-agent task."""
    head = _records(data, _HEAD_LINES)
    header = next((r for _, r in head if r.get("type") == "session"), {})
    for _, r in head:
        m = r.get("message")
        if r.get("type") != "message" or not isinstance(m, dict) or m.get("role") != "user":
            continue
        text = text_of(m.get("content"))
        if not any(marker in text for marker in SUBAGENT_TASK_MARKERS):
            return None
        session_id = header.get("id")
        _, marker, task = text.rpartition("[Subagent Task]")
        return Child(
            name=name,
            session_id=session_id if isinstance(session_id, str) else None,
            first_text=text,
            time=parse_time(header.get("timestamp")) or parse_time(r.get("timestamp")),
            task=_norm(task.lstrip(":")) if marker else "",
        )
    return None


def spawn_args(name: Any, args: Any) -> dict[str, Any] | None:
    """The arguments of a `sessions_spawn` call, direct or through Tool Search's `tool_call`."""
    if not isinstance(args, dict):
        return None
    if name == SPAWN_TOOL:
        return args
    if name == WRAPPER_TOOL and args.get("id") == SPAWN_TOOL:
        inner = args.get("args") or args.get("arguments")
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                return None
        return inner if isinstance(inner, dict) else None
    return None


def _spawns_in(name: str, data: bytes) -> list[Spawn]:
    """Every `sessions_spawn` call of a session, with the child key its tool result returned."""
    spawns: dict[str, Spawn] = {}
    for line, r in _records(data):
        m = r.get("message")
        if r.get("type") != "message" or not isinstance(m, dict):
            continue
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if not isinstance(b, dict) or b.get("type") != "toolCall":
                    continue
                args = spawn_args(b.get("name"), b.get("arguments"))
                task = args.get("task") if args else None
                if isinstance(task, str) and isinstance(b.get("id"), str):
                    spawns[b["id"]] = Spawn(
                        name,
                        line,
                        b["id"],
                        task,
                        parse_time(m.get("timestamp")) or parse_time(r.get("timestamp")),
                    )
        elif m.get("role") == "toolResult" and m.get("toolCallId") in spawns:
            spawn = spawns[m["toolCallId"]]
            spawn.child_key, spawn.run_id = _result_ids(m)
    return list(spawns.values())


def _result_ids(m: dict[str, Any]) -> tuple[str | None, str | None]:
    """`childSessionKey` and `runId` from a spawn's tool result (details or JSON text)."""
    details = m.get("details")
    if isinstance(details, dict) and isinstance(details.get("childSessionKey"), str):
        run = details.get("runId")
        return details["childSessionKey"], run if isinstance(run, str) else None
    text = text_of(m.get("content")) if isinstance(m.get("content"), list) else m.get("content")
    text = text if isinstance(text, str) else ""
    key, run = _KEY_RX.search(text), _RUN_RX.search(text)
    return (key.group(1) if key else None), (run.group(1) if run else None)


def _session_index(path: Path) -> dict[str, str]:
    """`sessions.json`: session key -> sessionId (empty when absent or unreadable)."""
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {
        k: v["sessionId"]
        for k, v in loaded.items()
        if isinstance(v, dict) and isinstance(v.get("sessionId"), str)
    }
