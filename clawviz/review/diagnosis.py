"""LLM-assisted task review (ClawGym-Bench, PIPELINE §7): a model diagnoses a candidate task.

`build_prompt` renders the versioned template (`prompts/diagnose_v1.md`) with the task's
instruction, its input file tree and file contents within a character budget (text files,
truncated with a note), the checker (check.py, reward.sh) and the rubric. `diagnose_tasks`
sends one prompt per task to an OpenAI-compatible Chat Completions endpoint (vLLM, SGLang,
LiteLLM, hosted APIs) or to Anthropic Messages, at most `concurrency` at a time, asks for JSON
and validates it; a malformed answer is retried once with the validation error. The SDKs retry
429 / 5xx answers themselves (honouring Retry-After). API keys are read from the environment
variable named by the caller and are never stored, logged or shown.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clawviz.review.tasks import TaskDetail
from clawviz.review.workspace import is_binary_bytes

PROMPT_VERSION = "diagnose_v1"
PROMPT_FILE = Path(__file__).parent / "prompts" / f"{PROMPT_VERSION}.md"
AREAS = ("instruction", "inputs", "checker", "rubric")
SEVERITIES = ("high", "medium", "low")


class FindingModel(BaseModel):
    """One finding as the model must write it."""

    model_config = ConfigDict(extra="ignore")
    area: Literal["instruction", "inputs", "checker", "rubric"]
    severity: Literal["high", "medium", "low"]
    problem: str = Field(min_length=1, max_length=4000)
    suggestion: str = Field(default="", max_length=4000)


class AnswerModel(BaseModel):
    findings: list[FindingModel]


@dataclass(frozen=True)
class Endpoint:
    """Where the diagnosis is sent. `api_key_env` names an environment variable; the key itself
    is read when calling and kept nowhere."""

    base_url: str
    model: str
    api: Literal["openai", "anthropic"] = "openai"
    api_key_env: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 2
    max_tokens: int = 2000
    max_findings: int = 200
    """Findings kept from one answer (setting diagnose_max_findings); the rest are counted."""

    def api_key(self) -> str:
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise DiagnosisError(f"environment variable {self.api_key_env} is not set")
            return key
        return "not-needed"  # local servers (vLLM, SGLang) accept any key


class DiagnosisError(RuntimeError):
    pass


@dataclass
class Diagnosis:
    """The outcome for one task: findings, or an error, with what it cost."""

    task_id: str
    model: str
    prompt_hash: str
    prompt_version: str = PROMPT_VERSION
    findings: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    attempts: int = 0
    seconds: float = 0.0
    findings_dropped: int = 0
    """Findings past the cap (Endpoint.max_findings) that were not kept."""


# --- the prompt -----------------------------------------------------------------------------
def _file_section(detail: TaskDetail, budget: int) -> str:
    root = detail.files_root
    if root is None or not detail.input_files:
        return "(the task has no input files)"
    tree = "\n".join(f"- {rel}" for rel in detail.input_files)
    parts = [f"File tree:\n{tree}"]
    left = budget
    for rel in detail.input_files:
        path = root / rel
        try:
            data = path.read_bytes()[: max(left, 0) + 1]
        except OSError as exc:
            parts.append(f"--- {rel}: unreadable ({exc.__class__.__name__})")
            continue
        if is_binary_bytes(data):
            parts.append(f"--- {rel}: binary, {path.stat().st_size} bytes, not shown")
            continue
        if left <= 0:
            parts.append(f"--- {rel}: not shown (file budget of {budget} characters used up)")
            continue
        text = data.decode("utf-8", "replace")
        size = path.stat().st_size
        if len(text) > left or size > len(data):
            text = text[:left]
            note = f"\n[truncated: {size} bytes in all, {len(text)} characters shown]"
        else:
            note = ""
        left -= len(text)
        parts.append(f"--- {rel}\n{text}{note}")
    return "\n\n".join(parts)


def build_prompt(detail: TaskDetail, *, file_budget: int = 40_000) -> list[dict[str, str]]:
    """The chat messages of one task's diagnosis (system = the template, user = the task)."""
    rubric = detail.rubric
    rubric_text = rubric if isinstance(rubric, str) else json.dumps(rubric, indent=2)
    user = "\n\n".join(
        [
            f"# Task {detail.task.task_id}",
            f"## Instruction\n{detail.task.instruction or '(none given)'}",
            f"## Input files\n{_file_section(detail, file_budget)}",
            f"## Checker: check.py\n{detail.checker_code or '(no check.py)'}",
            f"## Checker: reward.sh\n{detail.reward_script or '(no reward.sh)'}",
            f"## Rubric\n{rubric_text if rubric else '(no rubric)'}",
        ]
    )
    return [
        {"role": "system", "content": PROMPT_FILE.read_text()},
        {"role": "user", "content": user},
    ]


def prompt_hash(messages: list[dict[str, str]], model: str) -> str:
    blob = json.dumps({"model": model, "messages": messages}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# --- the answer -----------------------------------------------------------------------------
def parse_answer(text: str, max_findings: int | None = None) -> list[dict[str, str]]:
    """The validated findings of an answer (a JSON object, possibly fenced); raises ValueError
    with a message the model can act on. With `max_findings`, only the first that many are
    validated and kept (see `count_findings` for how many the answer held)."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body.split("\n", 1)[1] if "\n" in body else body
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the answer holds no JSON object")
    try:
        if max_findings is None:
            answer = AnswerModel.model_validate_json(body[start : end + 1])
        else:
            answer = AnswerModel.model_validate(_capped(body[start : end + 1], max_findings))
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ValueError(f"the JSON does not match the schema ({errors})") from None
    return [f.model_dump() for f in answer.findings]


def _capped(body: str, max_findings: int) -> Any:
    try:
        obj = json.loads(body)
    except ValueError as exc:
        raise ValueError(f"the answer is not valid JSON ({exc})") from None
    if isinstance(obj, dict) and isinstance(obj.get("findings"), list):
        obj = {**obj, "findings": obj["findings"][:max_findings]}
    return obj


def count_findings(text: str) -> int:
    """How many findings an answer's JSON object lists (0 when it lists none)."""
    body = text.strip().strip("`")
    start, end = body.find("{"), body.rfind("}")
    try:
        obj = json.loads(body[start : end + 1])
    except ValueError:
        return 0
    found = obj.get("findings") if isinstance(obj, dict) else None
    return len(found) if isinstance(found, list) else 0


# --- calling the model ----------------------------------------------------------------------
async def _complete(client: Any, ep: Endpoint, messages: list[dict[str, str]]) -> tuple:
    """(text, input_tokens, output_tokens) of one request."""
    if ep.api == "anthropic":
        r = await client.messages.create(
            model=ep.model, max_tokens=ep.max_tokens, system=messages[0]["content"],
            messages=messages[1:],
        )  # fmt: skip
        text = "".join(getattr(b, "text", "") for b in r.content)
        return text, r.usage.input_tokens, r.usage.output_tokens
    r = await client.chat.completions.create(
        model=ep.model, messages=messages, max_tokens=ep.max_tokens,
        response_format={"type": "json_object"},
    )  # fmt: skip
    usage = r.usage
    return (
        r.choices[0].message.content or "",
        getattr(usage, "prompt_tokens", None),
        getattr(usage, "completion_tokens", None),
    )


class TotalTimeout(DiagnosisError):
    pass


async def _within_deadline(client: Any, ep: Endpoint, messages: list[dict[str, str]]) -> tuple:
    """One request, SDK retries included, within `ep.timeout_s` in total: the SDK's own timeout
    applies per read, so a server trickling a byte at a time would otherwise never time out."""
    try:
        return await asyncio.wait_for(_complete(client, ep, messages), ep.timeout_s)
    except TimeoutError:
        raise TotalTimeout(
            f"no complete answer within the deadline of {ep.timeout_s:g} s "
            "(setting diagnose_timeout_s)"
        ) from None


def _client(ep: Endpoint) -> Any:
    kw: dict[str, Any] = {"api_key": ep.api_key(), "base_url": ep.base_url, "timeout": ep.timeout_s,
          "max_retries": ep.max_retries}  # fmt: skip
    if ep.api == "anthropic":
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(**kw)
    from openai import AsyncOpenAI

    return AsyncOpenAI(**kw)


def _add(a: int | None, b: int | None) -> int | None:
    return b if a is None else a + (b or 0)


async def _diagnose_one(client: Any, ep: Endpoint, detail: TaskDetail, budget: int) -> Diagnosis:
    messages = build_prompt(detail, file_budget=budget)
    out = Diagnosis(task_id=detail.task.task_id, model=ep.model,
                    prompt_hash=prompt_hash(messages, ep.model))  # fmt: skip
    started = time.monotonic()
    try:
        for attempt in (1, 2):
            out.attempts = attempt
            text, n_in, n_out = await _within_deadline(client, ep, messages)
            out.input_tokens = _add(out.input_tokens, n_in)
            out.output_tokens = _add(out.output_tokens, n_out)
            try:
                out.findings = parse_answer(text, ep.max_findings)
                out.findings_dropped = max(0, count_findings(text) - len(out.findings))
                break
            except ValueError as exc:
                if attempt == 2:
                    out.error = f"malformed answer twice: {exc}"
                    break
                messages = [
                    *messages,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": f"Your answer was not valid: {exc}. Reply again "
                     "with only the JSON object of the schema above."},
                ]  # fmt: skip
    except Exception as exc:  # noqa: BLE001 (one task's failure is reported, the rest go on)
        out.error = _describe(exc)
    out.seconds = time.monotonic() - started
    return out


def _describe(exc: Exception) -> str:
    """A readable error that never carries a key (SDK errors name status and message only)."""
    name = exc.__class__.__name__
    status = getattr(exc, "status_code", None)
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"{name}{f' (HTTP {status})' if status else ''}: {text}"


def diagnose_tasks(
    details: list[TaskDetail],
    ep: Endpoint,
    *,
    concurrency: int = 4,
    file_budget: int = 40_000,
    progress: Callable[[int, int, Diagnosis], None] | None = None,
) -> list[Diagnosis]:
    """Diagnose every task, at most `concurrency` requests in flight; results in input order."""

    async def run() -> list[Diagnosis]:
        client = _client(ep)
        gate = asyncio.Semaphore(max(1, concurrency))
        done = 0

        async def one(d: TaskDetail) -> Diagnosis:
            nonlocal done
            async with gate:
                result = await _diagnose_one(client, ep, d, file_budget)
            done += 1
            if progress:
                progress(done, len(details), result)
            return result

        try:
            return list(await asyncio.gather(*(one(d) for d in details)))
        finally:
            await client.close()

    return _run_sync(run)


def _run_sync(make: Callable[[], Any]) -> Any:
    """asyncio.run of `make()`, also when this thread already runs an event loop (a server,
    a notebook, a test harness): then in a worker thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()
