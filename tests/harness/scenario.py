"""A small declarative scenario language for the scripted model servers.

A scenario is a JSON object (or the same thing as a Python dict)::

    {"name": "retry-5xx",
     "summary": "Summary: the user asked for X; Y was done.",   # optional
     "summaries": ["first summary", "second summary"],          # optional, one per request
     "utility": [{"last_user_contains": "Generate a title"}],   # optional, extra utility rules
     "steps": [
       {"name": "m1", "fail": 529, "times": 2, "text": "hello"},
       {"name": "m2", "tools": [{"name": "bash", "arguments": {"command": "ls"}},
                                {"name": "read", "arguments": {"path": "a.txt"}}]},
       {"name": "m3", "overflow": true},
       {"name": "m4", "text": "done"},
       {"name": "sub1", "match": {"first_user_contains": "SUBTASK-1"}, "text": "sub done"},
       {"name": "hb", "match": {"last_user_contains": "heartbeat"}, "text": "NO_REPLY",
        "repeat": true}
     ]}

Each step answers one model request (or, with ``fail`` + ``times``, the first N requests fail
and request N+1 gets the step's reply). Keys of a step:

- ``name``: how the server log and the expected files refer to the call(s) it answered.
- ``text``: reply text. ``tools``: tool calls (``name``, ``arguments``, optional ``id``);
  several = parallel tool calls. Both may be given (text first).
- ``fail``: ``500`` | ``529`` | ``429`` | ``"overflow"`` (a 400 context-overflow in the shape of
  the API the request used); ``times`` (default 1) failures before the reply. A failing step
  without ``text``/``tools`` is used up by its failures. ``overflow: true`` = ``fail: "overflow"``.
- ``hang``: seconds to wait before answering nothing (the client times out or gives up).
- ``cut``: stream the start of the reply, then drop the connection (no final events);
  ``stream_error``: a streamed reply that ends in the API's in-stream error event. Both apply
  to the first ``times`` requests (default 1); the next request gets the whole reply.
- ``usage``: ``{"input_tokens": N, "output_tokens": M}`` reported instead of the toy counts
  (Codex compacts when reported usage passes ``model_auto_compact_token_limit``).
- ``match``: the step is only used by a request that matches (keys below, all must hold);
  steps without ``match`` are used in order by every other model request.
  ``last_user_contains``, ``first_user_contains``, ``any_user_contains``, ``system_contains``,
  ``body_contains`` (the raw request body), ``path_contains``, ``header`` ``{name: substring}``,
  ``has_tools`` (bool).
- Tool arguments may hold ``"{{last_output.KEY}}"``: KEY of the request's last tool result
  (JSON), for values only known at run time, e.g. the agent id a Codex ``spawn_agent`` returned;
  ``"{{output[k].KEY}}"`` takes it from the request's k-th tool result (Python index: ``-2`` is
  the one before the last), e.g. both agent ids of two parallel spawns.
- ``repeat``: the step is never used up (heartbeats, polling).

Requests that are summary/compaction requests (the harnesses' real prompt markers, FORMATS §3)
get ``summary`` text and use no step; utility calls (titles, warmups, path extraction,
count_tokens, /v1/models) get a short sensible answer and use no step. The server logs every
request it received and what it answered (`server.jsonl`): that log is the ground truth the
expected files of recordings are written from.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_SUMMARY = (
    "## Goal\nThe user asked the assistant to work on the scripted task.\n\n"
    "## Progress\nThe earlier steps of the task were completed.\n\n"
    "## Next Steps\nContinue with the remaining work."
)

# Summary / compaction request markers (FORMATS §3). (where, how, text)
SUMMARY_MARKERS: list[tuple[str, str, str]] = [
    # Claude Code
    ("last_user", "startswith", "Your task is to create a detailed summary of the conversation"),
    # 2.1 partial compaction appends it to the last kept user prompt, in the same message.
    ("last_user", "contains", "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools."),
    ("system", "contains", "You are a helpful AI assistant tasked with summarizing conversations"),
    # OpenClaw / pi
    ("system", "startswith", "You are a context summarization assistant"),
    ("last_user", "contains", "This is the PREFIX of a turn that was too large to keep"),
    ("last_user", "startswith", "Merge these partial summaries"),
    # Codex
    ("last_user", "startswith", "You are performing a CONTEXT CHECKPOINT COMPACTION"),
    ("header", "x-codex-turn-metadata", '"request_kind":"compaction"'),
]

# Utility (auxiliary, tool-less helper) request markers. (where, how, text)
UTILITY_MARKERS: list[tuple[str, str, str]] = [
    ("last_user", "equals", "Warmup"),
    ("last_user", "equals", "quota"),
    ("last_user", "contains", "Extract any file paths that this command reads or modifies"),
    ("last_user", "contains", "<policy_spec>"),
    ("system", "contains", "Summarize this coding conversation in under 50 characters"),
    ("system", "contains", "Analyze if this message indicates a new conversation topic"),
    ("system", "contains", "Generate a concise, sentence-case title"),
    ("last_user", "contains", "Generate a concise title"),
]

UTILITY_ANSWERS = {
    "Warmup": "Ready.",
    "quota": "ok",
    "Extract any file paths": "<filepaths>\n</filepaths>",
    "<policy_spec>": "none",
    "new conversation topic": '{"isNewTopic": false, "title": null}',
}


class ScenarioError(ValueError):
    """A scenario file that cannot be used (names the file and the step)."""


@dataclass
class Step:
    name: str
    text: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    fail: int | str | None = None
    times: int = 1
    hang: float | None = None
    cut: bool = False
    stream_error: bool = False
    usage: dict[str, int] | None = None
    match: dict[str, Any] | None = None
    repeat: bool = False
    stop_reason: str | None = None
    # run-time state
    seen: int = 0
    done: bool = False

    @property
    def has_reply(self) -> bool:
        return self.text is not None or bool(self.tools)


@dataclass
class View:
    """What the matcher needs from one request, whatever its protocol."""

    path: str
    method: str
    system: str
    user_texts: list[str]  # text of each user message that has text, in order
    last_user: str  # text of the last user message ("" when it only carries tool results)
    has_tools: bool
    headers: dict[str, str]
    raw: str
    stream: bool
    model: str
    last_tool_output: str = ""  # text of the request's last tool result (templating)
    tool_outputs: list[str] = field(default_factory=list)  # every tool result, in order


@dataclass
class Decision:
    """What the server does with one request."""

    action: str  # ok | tool | 500 | 529 | 429 | overflow | summary | utility | hang | cut | ...
    step: str | None = None
    attempt: int = 0
    text: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    hang: float | None = None
    cut: bool = False
    stream_error: bool = False
    usage: dict[str, int] | None = None
    stop_reason: str | None = None


STEP_KEYS = {
    "name",
    "text",
    "tools",
    "fail",
    "times",
    "hang",
    "cut",
    "stream_error",
    "usage",
    "match",
    "repeat",
    "overflow",
    "stop_reason",
    "note",
    "expect",  # read by expect.py only: overrides of the expected decision of this step
}
MATCH_KEYS = {
    "last_user_contains",
    "first_user_contains",
    "any_user_contains",
    "system_contains",
    "body_contains",
    "path_contains",
    "header",
    "has_tools",
}


def _step(raw: dict[str, Any], where: str) -> Step:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: a step must be an object, got {type(raw).__name__}")
    unknown = set(raw) - STEP_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown step keys {sorted(unknown)}")
    if "name" not in raw:
        raise ScenarioError(f"{where}: a step needs a name")
    fail = "overflow" if raw.get("overflow") else raw.get("fail")
    if fail not in (None, 500, 529, 429, "overflow"):
        raise ScenarioError(f"{where}: fail must be 500, 529, 429 or 'overflow', got {fail!r}")
    match = raw.get("match")
    if match is not None:
        if not isinstance(match, dict) or set(match) - MATCH_KEYS:
            raise ScenarioError(f"{where}: match keys must be among {sorted(MATCH_KEYS)}")
    tools = raw.get("tools") or []
    for t in tools:
        if not isinstance(t, dict) or "name" not in t:
            raise ScenarioError(f"{where}: each tool call needs a name")
    step = Step(
        name=str(raw["name"]),
        text=raw.get("text"),
        tools=list(tools),
        fail=fail,
        times=int(raw.get("times", 1)),
        hang=raw.get("hang"),
        cut=bool(raw.get("cut")),
        stream_error=bool(raw.get("stream_error")),
        usage=raw.get("usage"),
        match=match,
        repeat=bool(raw.get("repeat")),
        stop_reason=raw.get("stop_reason"),
    )
    if not (step.has_reply or step.fail or step.hang is not None or step.cut):
        raise ScenarioError(f"{where}: step {step.name!r} does nothing (text/tools/fail/hang/cut)")
    return step


def _hit(where: str, how: str, text: str, view: View) -> bool:
    if where == "header":
        return text in view.headers.get(how, "").replace(" ", "")
    value = view.system if where == "system" else view.last_user
    value = value.strip()
    if how == "equals":
        return value == text
    if how == "startswith":
        return value.startswith(text)
    return text in value


def matches(match: dict[str, Any], view: View) -> bool:
    for key, want in match.items():
        if key == "last_user_contains" and want not in view.last_user:
            return False
        if key == "first_user_contains" and (not view.user_texts or want not in view.user_texts[0]):
            return False
        if key == "any_user_contains" and not any(want in t for t in view.user_texts):
            return False
        if key == "system_contains" and want not in view.system:
            return False
        if key == "body_contains" and want not in view.raw:
            return False
        if key == "path_contains" and want not in view.path:
            return False
        if key == "has_tools" and bool(want) != view.has_tools:
            return False
        if key == "header":
            for name, sub in want.items():
                if sub not in view.headers.get(name.lower(), ""):
                    return False
    return True


class Scenario:
    """Steps plus run-time state. Not thread-safe: the aiohttp server decides on one loop."""

    def __init__(self, data: dict[str, Any], source: str = "<scenario>"):
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
            raise ScenarioError(f"{source}: a scenario is an object with a 'steps' list")
        self.name = str(data.get("name", Path(source).stem))
        self.summary = str(data.get("summary", DEFAULT_SUMMARY))
        # `summaries`: one text per summary request in arrival order (the last one repeats), so
        # parallel summary calls of one compaction (pi's split turn) answer differently.
        self.summaries = [str(x) for x in data.get("summaries") or []]
        self.n_summaries = 0
        self.source = source
        self.steps = [_step(s, f"{source}: steps[{i}]") for i, s in enumerate(data["steps"])]
        names = [s.name for s in self.steps]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ScenarioError(f"{source}: step names must be unique, repeated: {sorted(dup)}")
        self.extra_utility = [m for m in data.get("utility", [])]
        self.model_ids = list(data.get("models", ["scripted-model"]))

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        p = Path(path)
        try:
            data = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise ScenarioError(f"{p}: line {e.lineno}: not JSON: {e.msg}") from e
        return cls(data, str(p))

    # -- classification ---------------------------------------------------------------------
    def is_summary(self, view: View) -> bool:
        return any(_hit(w, h, t, view) for w, h, t in SUMMARY_MARKERS)

    def utility_answer(self, view: View) -> str | None:
        for w, h, t in UTILITY_MARKERS:
            if _hit(w, h, t, view):
                for key, ans in UTILITY_ANSWERS.items():
                    if key in view.last_user or key in view.system:
                        return ans
                return "Scripted session"
        for m in self.extra_utility:
            cond = {k: v for k, v in m.items() if k != "answer"}
            if matches(cond, view):
                return str(m.get("answer", "ok"))
        return None

    def decide(self, view: View) -> Decision:
        if view.method == "GET" or view.path.rstrip("/").endswith("/models"):
            return Decision("utility", text="models")
        if view.path.rstrip("/").endswith("count_tokens"):
            return Decision("utility", text="count_tokens")
        if self.is_summary(view):
            self.n_summaries += 1
            text = self.summary
            if self.summaries:
                text = self.summaries[min(self.n_summaries, len(self.summaries)) - 1]
            return Decision("summary", text=text, attempt=self.n_summaries)
        ans = self.utility_answer(view)
        if ans is not None:
            return Decision("utility", text=ans)
        step = self._pick(view)
        if step is None:
            return Decision("exhausted", text="(scenario has no step left)")
        step.seen += 1
        d = Decision("ok", step=step.name, attempt=step.seen, usage=step.usage)
        d.stop_reason = step.stop_reason
        if step.fail is not None and step.seen <= step.times:
            if step.seen == step.times and not step.has_reply and not step.repeat:
                step.done = True
            d.action = "overflow" if step.fail == "overflow" else str(step.fail)
            d.status = 400 if step.fail == "overflow" else int(step.fail)
            return d
        if step.hang is not None:
            step.done = not step.repeat
            d.action, d.hang = "hang", float(step.hang)
            return d
        broken = (step.cut or step.stream_error) and step.seen <= step.times
        if not broken or step.seen == step.times and not step.has_reply:
            step.done = not step.repeat
        d.text, d.tools = step.text, [dict(t) for t in step.tools]
        d.cut, d.stream_error = step.cut and broken, step.stream_error and broken
        for k, t in enumerate(d.tools):
            t.setdefault("id", f"{step.name}_{k}")
            if "arguments" in t:
                t["arguments"] = fill(t["arguments"], view)
        if d.cut:
            d.action = "cut"
        elif d.stream_error:
            d.action = "stream_error"
        else:
            d.action = "tool" if d.tools else "ok"
        return d

    def _pick(self, view: View) -> Step | None:
        for s in self.steps:
            if not s.done and s.match is not None and matches(s.match, view):
                return s
        for s in self.steps:
            if not s.done and s.match is None:
                return s
        return None


_PLACEHOLDER = re.compile(r"^\{\{last_output\.([\w.]+)\}\}$")
_INDEXED = re.compile(r"^\{\{output\[(-?\d+)\]\.([\w.]+)\}\}$")


def _key_of(text: str, key: str) -> Any:
    obj: Any = json.loads(text)
    for part in key.split("."):
        obj = obj[part]
    return obj


def fill(value: Any, view: View) -> Any:
    """Replace `"{{last_output.KEY}}"` strings by KEY of the request's last tool result (JSON),
    for arguments only known at run time (e.g. the agent id a spawn returned)."""
    if isinstance(value, dict):
        return {k: fill(v, view) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, view) for v in value]
    if isinstance(value, str):
        m = _PLACEHOLDER.match(value)
        k = _INDEXED.match(value)
        try:
            if m:
                return _key_of(view.last_tool_output, m.group(1))
            if k:
                return _key_of(view.tool_outputs[int(k.group(1))], k.group(2))
        except (ValueError, KeyError, TypeError, IndexError):
            return value
    return value


def user_text_of(content: Any) -> str:
    """Text of a message content (string or blocks), tool results left out."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for b in content or []:
        if isinstance(b, dict) and b.get("type") in ("text", "input_text") and "text" in b:
            parts.append(str(b["text"]))
    return "\n".join(parts)
