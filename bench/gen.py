"""Benchmark data generator: exchange logs shaped like the paper's SFT set, written streaming.

An episode has ~13 main calls whose history grows to ~75 KB (~18.7K tokens), ~16 tool calls over
~3 tool types, and every request re-sends the whole history (FORMATS §1 claude-trace lines with a
`clawviz` object). Half the episodes are Claude Code (Anthropic Messages, SSE responses), half
OpenClaw (OpenAI Chat Completions, SSE or JSON responses). Some episodes carry an SDK or harness
retry, a compaction (summary call + continuation) or a sub-agent thread; Claude Code episodes
start with a `Warmup` utility call.

`python bench/gen.py log OUT.jsonl --mb 100` writes a log of about that size;
`python bench/gen.py episode OUT.jsonl --calls 1000` writes one long episode (compacting every
~24 calls so the history stays bounded, as a real harness would).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

CLAUDE_SYSTEM = (
    "You are Claude Code, Anthropic's official CLI for Claude.\n"
    "You are an interactive CLI tool that helps users with software engineering tasks. "
)
CLAUDE_SUBAGENT_SYSTEM = (
    "You are an agent for Claude Code, Anthropic's official CLI for Claude. Given the user's "
    "message, you should use the tools available to complete the task. "
)
OPENCLAW_SYSTEM = "You are a personal assistant running inside OpenClaw.\n## Tooling\n"
OPENCLAW_SUBAGENT_SYSTEM = OPENCLAW_SYSTEM + "# Subagent Context\nYou are a subagent. "
OPENCLAW_SUMMARY_SYSTEM = "You are a context summarization assistant. "
CLAUDE_SUMMARY_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close "
    "attention to the user's explicit requests and your previous actions."
)
CLAUDE_CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
OPENCLAW_CONTINUATION = (
    "The conversation history before this point was compacted into the following summary:\n\n"
)
OPENCLAW_SUMMARY_PROMPT = (
    "Produce a compact, factual summary with these exact section headings: Goal, Progress, "
    "Next steps. This is the conversation to summarize."
)
OPENCLAW_RETRY = (
    "Continue the current task from the existing transcript, preserving completed work. "
    "Do not repeat tool calls that already succeeded."
)

CLAUDE_TOOLS = ("Bash", "Read", "Edit", "Write", "Grep", "Glob", "Task")
OPENCLAW_TOOLS = ("exec", "read", "write", "edit", "web_search", "sessions_spawn")
# The ~3 tool types an episode actually uses (paper: 3.25 per trajectory).
CLAUDE_USED = ("Bash", "Read", "Edit")
OPENCLAW_USED = ("exec", "read", "write")

_SYLLABLES = (
    "ka ri to mo na el an or is ut re pa lo de ve si qu ex im ar on te la fi co mu "
    "ba sto ren dal pri cor vin tas mel gra pho tri sen ul ost cha dri fer lun"
).split()


def _make_vocab(rng: random.Random, n: int = 3000) -> list[str]:
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words)


@dataclass
class TextPool:
    """A long pseudo-text; slices at random offsets give cheap, distinct, word-like text."""

    rng: random.Random
    text: str = ""

    def __post_init__(self) -> None:
        vocab = _make_vocab(random.Random(7))
        words = self.rng.choices(vocab, k=400_000)
        lines, i = [], 0
        while i < len(words):
            n = self.rng.randint(6, 16)
            lines.append(" ".join(words[i : i + n]))
            i += n
        self.text = "\n".join(lines)

    def take(self, n: int) -> str:
        n = max(1, min(n, len(self.text) - 1))
        off = self.rng.randrange(0, len(self.text) - n)
        return self.text[off : off + n]


@dataclass
class GenStats:
    """What the generator wrote: the baselines the store-size figure compares against."""

    n_lines: int = 0
    n_calls: int = 0
    n_episodes: int = 0
    bytes_written: int = 0
    distinct_bytes: int = 0
    """Bytes of every distinct message, system prompt and tool list, each counted once."""
    seen: set[bytes] = field(default_factory=set, repr=False)

    def note(self, obj: Any) -> None:
        """Count `obj` (a message, system text or tool list) once, by its content."""
        raw = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
        key = hashlib.blake2b(raw, digest_size=16).digest()
        if key not in self.seen:
            self.seen.add(key)
            self.distinct_bytes += len(raw)

    def as_dict(self) -> dict[str, int]:
        return {
            "n_lines": self.n_lines,
            "n_calls": self.n_calls,
            "n_episodes": self.n_episodes,
            "bytes_written": self.bytes_written,
            "distinct_bytes": self.distinct_bytes,
        }


@dataclass
class EpisodeSpec:
    """Shape of one generated episode."""

    episode_id: str
    task_id: str
    harness: str  # "claude-code" | "openclaw"
    attempt: int
    main_calls: int = 13
    retry: bool = False
    compact_at: tuple[int, ...] = ()
    subagent_at: int | None = None
    t0: float = 1767225600.0


def _tokens(nbytes: int) -> int:
    return max(1, nbytes // 4)


class EpisodeGen:
    """Builds the exchange-log records of one episode, in request order."""

    def __init__(self, spec: EpisodeSpec, pool: TextPool, stats: GenStats) -> None:
        self.s = spec
        self.pool = pool
        self.rng = pool.rng
        self.stats = stats
        self.anthropic = spec.harness == "claude-code"
        self.t = spec.t0
        self.seq = 0
        self.n_tool = 0
        self.session = hashlib.md5(spec.episode_id.encode()).hexdigest()
        self.system = self._system_text(CLAUDE_SYSTEM if self.anthropic else OPENCLAW_SYSTEM)
        self.tools = self._tool_defs(CLAUDE_TOOLS if self.anthropic else OPENCLAW_TOOLS)
        stats.note(self.system)
        stats.note(self.tools)

    # ----- content -----------------------------------------------------------------------
    def _system_text(self, head: str) -> str:
        # Harness prompts are fixed per harness version plus a per-sandbox environment block.
        return head + self.pool.take(5200) + f"\n<env>cwd=/work/{self.s.episode_id}</env>"

    def _tool_defs(self, names: tuple[str, ...]) -> list[dict[str, Any]]:
        defs = []
        for name in names:
            params = {
                "type": "object",
                "properties": {"arg": {"type": "string", "description": self.pool.take(200)}},
                "required": ["arg"],
            }
            desc = self.pool.take(420)
            if self.anthropic:
                defs.append({"name": name, "description": desc, "input_schema": params})
            else:
                defs.append(
                    {
                        "type": "function",
                        "function": {"name": name, "description": desc, "parameters": params},
                    }
                )
        return defs

    def _tool_input(self, name: str) -> dict[str, Any]:
        if name in ("Bash", "exec"):
            return {"command": f"cd /work && {self.pool.take(60)} | head -n 40"}
        if name in ("Read", "read"):
            return {"file_path": f"/work/src/{self.pool.take(14).replace(' ', '_')}.py"}
        return {
            "file_path": f"/work/src/{self.pool.take(12).replace(' ', '_')}.py",
            "old_string": self.pool.take(self.rng.randint(80, 300)),
            "new_string": self.pool.take(self.rng.randint(80, 400)),
        }

    def _tool_output(self) -> str:
        # Tool outputs dominate history growth; long-tailed like real command output.
        return self.pool.take(int(min(14000, self.rng.lognormvariate(7.9, 0.55))))

    def _new_id(self, prefix: str) -> str:
        self.n_tool += 1
        return f"{prefix}{self.session[:10]}{self.n_tool:04d}"

    # ----- wire messages -------------------------------------------------------------------
    def user_msg(self, text: str) -> dict[str, Any]:
        m = (
            {"role": "user", "content": [{"type": "text", "text": text}]}
            if self.anthropic
            else {"role": "user", "content": text}
        )
        self.stats.note(m)
        return m

    def assistant_turn(
        self, text: str, calls: list[tuple[str, dict[str, Any]]]
    ) -> tuple[dict[str, Any], list[str]]:
        """The assistant message (as it reappears in later requests) and its tool-call ids."""
        ids = [self._new_id("toolu_" if self.anthropic else "call_") for _ in calls]
        if self.anthropic:
            content: list[dict[str, Any]] = [{"type": "text", "text": text}]
            for cid, (name, args) in zip(ids, calls, strict=True):
                content.append({"type": "tool_use", "id": cid, "name": name, "input": args})
            m: dict[str, Any] = {"role": "assistant", "content": content}
        else:
            m = {"role": "assistant", "content": text}
            if calls:
                m["tool_calls"] = [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": orjson.dumps(args).decode()},
                    }
                    for cid, (name, args) in zip(ids, calls, strict=True)
                ]
        self.stats.note(m)
        return m, ids

    def tool_results(self, ids: list[str], outputs: list[str]) -> list[dict[str, Any]]:
        if self.anthropic:
            blocks = [
                {"type": "tool_result", "tool_use_id": i, "content": o}
                for i, o in zip(ids, outputs, strict=True)
            ]
            msgs = [{"role": "user", "content": blocks}]
        else:
            msgs = [
                {"role": "tool", "tool_call_id": i, "content": o}
                for i, o in zip(ids, outputs, strict=True)
            ]
        for m in msgs:
            self.stats.note(m)
        return msgs

    # ----- records -----------------------------------------------------------------------
    def _request(
        self,
        system: str,
        tools: list[dict[str, Any]] | None,
        messages: list[dict[str, Any]],
        model: str,
        stream: bool,
    ) -> dict[str, Any]:
        if self.anthropic:
            if messages:
                # Claude Code moves its cache breakpoint to the newest block on every call.
                last = messages[-1]
                blocks = list(last["content"])
                blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
                messages = [*messages[:-1], {**last, "content": blocks}]
            body: dict[str, Any] = {
                "model": model,
                "max_tokens": 32000,
                "system": [
                    {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.3"},
                    {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}},
                ],
                "messages": messages,
                "stream": stream,
                "metadata": {"user_id": f"user_abc_account__session_{self.session}"},
            }
            if tools:
                body["tools"] = tools
            return body
        body = {
            "model": model,
            "messages": [{"role": "system", "content": system}, *messages],
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = tools
        return body

    def _headers(self, retry_count: int = 0) -> dict[str, str]:
        if self.anthropic:
            return {
                "anthropic-version": "2023-06-01",
                "x-api-key": "sk-ant-api…Ab12",
                "x-claude-code-session-id": self.session,
                "x-stainless-retry-count": str(retry_count),
            }
        return {"authorization": "Bearer sk-…9f3e", "x-session-id": self.session}

    def record(
        self,
        body: dict[str, Any],
        answer: dict[str, Any] | None,
        *,
        status: int = 200,
        retry_count: int = 0,
        url: str | None = None,
    ) -> dict[str, Any]:
        """One exchange-log line; `answer` is the assistant message, None for a failed call."""
        self.seq += 1
        t_req = self.t
        self.t += self.rng.uniform(2.0, 18.0)
        url = url or (
            "https://api.anthropic.com/v1/messages?beta=true"
            if self.anthropic
            else "http://vllm:8000/v1/chat/completions"
        )
        nbytes = 0
        for m in body.get("messages", ()):
            c = m.get("content")
            nbytes += len(c) if isinstance(c, str) else sum(len(str(b)) for b in c or ())
        usage_in = _tokens(nbytes + 6000)
        if answer is None:
            err = (
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
                if self.anthropic
                else {"error": {"message": "upstream timed out", "type": "server_error"}}
            )
            response = {
                "timestamp": self.t,
                "status_code": status,
                "headers": {"content-type": "application/json"},
                "body": err,
            }
        else:
            response = self._response(body, answer, usage_in)
        self.stats.n_calls += 1
        return {
            "request": {
                "timestamp": t_req,
                "method": "POST",
                "url": url,
                "headers": self._headers(retry_count),
                "body": body,
            },
            "response": response,
            "logged_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(self.t)),
            "clawviz": {
                "episode_id": self.s.episode_id,
                "task_id": self.s.task_id,
                "harness": self.s.harness,
                "attempt": self.s.attempt,
                "seq": self.seq,
                "delivered": answer is not None,
            },
        }

    def _response(
        self, body: dict[str, Any], answer: dict[str, Any], usage_in: int
    ) -> dict[str, Any]:
        out_tokens = _tokens(len(orjson.dumps(answer)))
        if self.anthropic:
            raw = _anthropic_sse(self.rng, answer, body["model"], usage_in, out_tokens)
            return {
                "timestamp": self.t,
                "status_code": 200,
                "headers": {"content-type": "text/event-stream"},
                "body_raw": raw,
            }
        finish = "tool_calls" if answer.get("tool_calls") else "stop"
        usage = {
            "prompt_tokens": usage_in,
            "completion_tokens": out_tokens,
            "total_tokens": usage_in + out_tokens,
        }
        if body.get("stream"):
            raw = _openai_sse(self.rng, answer, body["model"], finish, usage)
            return {
                "timestamp": self.t,
                "status_code": 200,
                "headers": {"content-type": "text/event-stream"},
                "body_raw": raw,
            }
        return {
            "timestamp": self.t,
            "status_code": 200,
            "headers": {"content-type": "application/json"},
            "body": {
                "id": f"chatcmpl-{self.seq}",
                "object": "chat.completion",
                "created": int(self.t),
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": finish, "message": answer}],
                "usage": usage,
            },
        }

    # ----- episode script ----------------------------------------------------------------
    def lines(self) -> Iterator[dict[str, Any]]:
        s = self.s
        self.stats.n_episodes += 1
        model = "claude-sonnet-4-5" if self.anthropic else "qwen3-8b"
        if self.anthropic:
            warm = self.user_msg("Warmup")
            yield self.record(
                self._request(self.system, self.tools, [warm], "claude-haiku-4-5", True),
                self._plain_answer("Ready."),
            )
        history = [self.user_msg(f"[task {s.task_id}] " + self.pool.take(900))]
        used = CLAUDE_USED if self.anthropic else OPENCLAW_USED
        retry_at = self.rng.randrange(2, max(3, s.main_calls - 1)) if s.retry else -1
        for k in range(s.main_calls):
            if k in s.compact_at:
                yield from self._compaction(history, model)
                history = self._continuation_history()
            last = k == s.main_calls - 1
            stream = self.anthropic or self.rng.random() < 0.5
            body = self._request(self.system, self.tools, history, model, stream)
            if k == retry_at:
                yield from self._failed_then_retry(body, history, model, stream)
                body = self._request(self.system, self.tools, history, model, stream)
                if not self.anthropic:
                    history = [*history, self.user_msg(OPENCLAW_RETRY)]
                    body = self._request(self.system, self.tools, history, model, stream)
            if last:
                answer, ids = self.assistant_turn(self.pool.take(1400), [])
                yield self.record(body, answer)
                break
            if k == s.subagent_at:
                spawn = "Task" if self.anthropic else "sessions_spawn"
                prompt = "Investigate and report: " + self.pool.take(500)
                answer, ids = self.assistant_turn(
                    self.pool.take(300), [(spawn, {"prompt": prompt})]
                )
                yield self.record(body, answer)
                report = yield from self._subagent(prompt)
                history = [*history, answer, *self.tool_results(ids, [report])]
                continue
            # ~16 tool calls over 12 tool-using turns: a third of the turns call two tools.
            n = 2 if self.rng.random() < 0.34 else 1
            calls = [(self.rng.choice(used), {}) for _ in range(n)]
            calls = [(name, self._tool_input(name)) for name, _ in calls]
            answer, ids = self.assistant_turn(self.pool.take(self.rng.randint(150, 700)), calls)
            yield self.record(body, answer)
            history = [
                *history,
                answer,
                *self.tool_results(ids, [self._tool_output() for _ in ids]),
            ]

    def _plain_answer(self, text: str) -> dict[str, Any]:
        if self.anthropic:
            return {"role": "assistant", "content": [{"type": "text", "text": text}]}
        return {"role": "assistant", "content": text}

    def _failed_then_retry(
        self, body: dict[str, Any], history: list[dict[str, Any]], model: str, stream: bool
    ) -> Iterator[dict[str, Any]]:
        # SDK retry (Claude Code): same body after a 529; OpenClaw: a 500, then its own
        # retry with an appended "Continue the current task ..." message (done by the caller).
        yield self.record(body, None, status=529 if self.anthropic else 500)

    def _compaction(self, history: list[dict[str, Any]], model: str) -> Iterator[dict[str, Any]]:
        summary_text = "Summary of the work so far:\n" + self.pool.take(2200)
        if self.anthropic:
            body = self._request(
                self.system,
                self.tools,
                [*history, self.user_msg(CLAUDE_SUMMARY_PROMPT)],
                model,
                True,
            )
        else:
            # pi / OpenClaw hit a context-overflow 400 first, then summarise without tools.
            yield self.record(
                self._request(self.system, self.tools, history, model, False), None, status=400
            )
            convo = "<conversation>\n" + self.pool.take(3000) + "\n</conversation>\n\n"
            body = self._request(
                OPENCLAW_SUMMARY_SYSTEM,
                None,
                [self.user_msg(convo + OPENCLAW_SUMMARY_PROMPT)],
                model,
                False,
            )
        answer = self._plain_answer(summary_text)
        self.stats.note(answer)
        self._summary = summary_text
        yield self.record(body, answer)

    def _continuation_history(self) -> list[dict[str, Any]]:
        head = CLAUDE_CONTINUATION if self.anthropic else OPENCLAW_CONTINUATION
        return [self.user_msg(head + self._summary + "\nPlease continue with the last task.")]

    def _subagent(self, prompt: str) -> Iterator[dict[str, Any]]:
        if self.anthropic:
            system = self._system_text(CLAUDE_SUBAGENT_SYSTEM)
            first = self.user_msg(prompt)
            model = "claude-haiku-4-5"
        else:
            system = self._system_text(OPENCLAW_SUBAGENT_SYSTEM)
            first = self.user_msg(
                "[Subagent Context] You are running as a subagent (depth 1/1).\n"
                f"[Subagent Task] {prompt}"
            )
            model = "qwen3-8b"
        self.stats.note(system)
        tools = self.tools[:3]
        history = [first]
        used = CLAUDE_USED[:2] if self.anthropic else OPENCLAW_USED[:2]
        for _ in range(2):
            name = self.rng.choice(used)
            answer, ids = self.assistant_turn(self.pool.take(200), [(name, self._tool_input(name))])
            yield self.record(self._request(system, tools, history, model, True), answer)
            history = [*history, answer, *self.tool_results(ids, [self._tool_output()])]
        report = self.pool.take(1200)
        answer, _ = self.assistant_turn(report, [])
        yield self.record(self._request(system, tools, history, model, True), answer)
        if not self.anthropic:
            report = (
                "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\n"
                f"{report}\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
            )
        return report


def _chunks(rng: random.Random, text: str) -> Iterator[str]:
    i = 0
    while i < len(text):
        n = rng.randint(12, 60)
        yield text[i : i + n]
        i += n


def _sse(event: str | None, data: Any) -> str:
    payload = data if isinstance(data, str) else orjson.dumps(data).decode()
    return (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"


def _anthropic_sse(
    rng: random.Random, answer: dict[str, Any], model: str, usage_in: int, out_tokens: int
) -> str:
    msg_id = f"msg_{rng.getrandbits(64):016x}"
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": usage_in // 10,
        "cache_read_input_tokens": usage_in - usage_in // 10,
        "output_tokens": 1,
    }
    start = {
        "type": "message_start",
        "message": {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "usage": usage,
        },
    }
    parts = [_sse("message_start", start)]
    stop = "end_turn"
    for i, block in enumerate(answer["content"]):
        if block["type"] == "text":
            parts.append(
                _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            for piece in _chunks(rng, block["text"]):
                parts.append(
                    _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
                )
        else:
            stop = "tool_use"
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            parts.append(
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": head},
                )
            )
            for piece in _chunks(rng, orjson.dumps(block["input"]).decode()):
                delta = {"type": "input_json_delta", "partial_json": piece}
                parts.append(
                    _sse(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": i, "delta": delta},
                    )
                )
        parts.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    parts.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": out_tokens},
            },
        )
    )
    parts.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(parts)


def _openai_sse(
    rng: random.Random, answer: dict[str, Any], model: str, finish: str, usage: dict[str, int]
) -> str:
    cid = f"chatcmpl-{rng.getrandbits(48):012x}"

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        return _sse(
            None,
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            },
        )

    parts = [chunk({"role": "assistant", "content": ""})]
    for piece in _chunks(rng, answer.get("content") or ""):
        parts.append(chunk({"content": piece}))
    for idx, tc in enumerate(answer.get("tool_calls", ())):
        first = {"index": idx, "id": tc["id"], "type": "function"}
        first["function"] = {"name": tc["function"]["name"], "arguments": ""}
        parts.append(chunk({"tool_calls": [first]}))
        for piece in _chunks(rng, tc["function"]["arguments"]):
            parts.append(chunk({"tool_calls": [{"index": idx, "function": {"arguments": piece}}]}))
    parts.append(chunk({}, finish))
    parts.append(
        _sse(None, {"id": cid, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    )
    parts.append(_sse(None, "[DONE]"))
    return "".join(parts)


def episode_specs(rng: random.Random, start: int = 0) -> Iterator[EpisodeSpec]:
    """An endless stream of SFT-shaped episode specs: 4 attempts per task, two harnesses."""
    i = start
    while True:
        task = i // 8
        harness = "claude-code" if (i // 4) % 2 == 0 else "openclaw"
        main_calls = max(6, min(22, round(rng.gauss(13, 3))))
        compact = rng.random() < 0.12
        yield EpisodeSpec(
            episode_id=f"t{task:05d}-{harness}-a{i % 4}",
            task_id=f"task_{task:05d}",
            harness=harness,
            attempt=i % 4,
            main_calls=main_calls,
            retry=rng.random() < 0.15,
            compact_at=(main_calls // 2 + 1,) if compact else (),
            subagent_at=rng.randrange(1, main_calls - 2) if rng.random() < 0.2 else None,
            t0=1767225600.0 + i * 900.0,
        )
        i += 1


def _write_lines(out, records: Iterator[dict[str, Any]], stats: GenStats) -> None:
    for rec in records:
        line = orjson.dumps(rec) + b"\n"
        out.write(line)
        stats.n_lines += 1
        stats.bytes_written += len(line)


def write_log(
    path: Path, target_bytes: int, *, seed: int = 1, results: Path | None = None
) -> GenStats:
    """Write whole SFT-shaped episodes to `path` until it holds about `target_bytes`.

    With `results`, also write a results.jsonl line (reward, checks) for every episode.
    """
    rng = random.Random(seed)
    pool = TextPool(rng)
    stats = GenStats()
    specs: list[EpisodeSpec] = []
    with open(path, "wb", buffering=1 << 20) as out:
        for spec in episode_specs(rng):
            if stats.bytes_written >= target_bytes:
                break
            specs.append(spec)
            _write_lines(out, EpisodeGen(spec, pool, stats).lines(), stats)
    _write_meta(path, stats)
    if results is not None:
        write_results(results, specs, seed=seed)
    return stats


def write_results(path: Path, specs: list[EpisodeSpec], *, seed: int = 1) -> None:
    """One results.jsonl line per episode: three named checks and their mean as the reward."""
    rng = random.Random(seed + 1000)
    with open(path, "wb") as out:
        for s in specs:
            checks = {f"check_{i}": float(rng.random() < 0.6) for i in range(3)}
            row = {
                "episode_id": s.episode_id,
                "task_id": s.task_id,
                "harness": s.harness,
                "model": "claude-sonnet-4-5" if s.harness == "claude-code" else "qwen3-8b",
                "attempt": s.attempt,
                "reward": sum(checks.values()) / len(checks),
                "checks": checks,
            }
            out.write(orjson.dumps(row) + b"\n")


def write_long_episode(path: Path, n_calls: int, *, seed: int = 2) -> GenStats:
    """Write one episode of about `n_calls` main calls, compacting every ~24 calls."""
    rng = random.Random(seed)
    pool = TextPool(rng)
    stats = GenStats()
    spec = EpisodeSpec(
        episode_id=f"long-{n_calls}",
        task_id="task_long",
        harness="claude-code",
        attempt=0,
        main_calls=n_calls,
        retry=True,
        compact_at=tuple(range(24, n_calls, 24)),
        subagent_at=5 if n_calls > 10 else None,
    )
    with open(path, "wb", buffering=1 << 20) as out:
        _write_lines(out, EpisodeGen(spec, pool, stats).lines(), stats)
    _write_meta(path, stats)
    return stats


def replicate_episodes(engine: Any, n_episodes: int) -> int:
    """Grow a store to `n_episodes` by copying its analysed episodes under new ids.

    Ingesting 25,000 SFT-sized episodes would mean generating an ~18 GB log, so the Runs-page
    store is made from a few template episodes that went through the real ingest and analysis,
    copied row for row (episode, call, decision, episode_status, result) with suffixed episode,
    call and task ids; copies drop `raw_response` (verbatim SSE, read only by the raw view of one
    call). Messages are content-addressed, so copies share them. Returns the episode count.
    Works on SQLite and PostgreSQL (temporary tables are named without a schema).
    """
    from sqlalchemy import func, select, text

    from clawviz.store import models

    status = models.EpisodeStatus.__table__
    with engine.connect() as conn:
        episodes = [r[0] for r in conn.execute(text("SELECT episode_id FROM episode"))]
        call_ids = [r[0] for r in conn.execute(text('SELECT call_id FROM "call"'))]
        statuses = [dict(r) for r in conn.execute(select(status)).mappings()]
    if not episodes:
        raise ValueError("no template episodes to replicate")
    n_t = len(episodes)
    copies = -(-(n_episodes - n_t) // n_t)
    if copies <= 0:
        return n_t
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS bench_ep"))
        conn.execute(text("CREATE TEMP TABLE bench_ep (episode_id TEXT PRIMARY KEY, idx INT)"))
        conn.execute(
            text("INSERT INTO bench_ep VALUES (:e, :i)"),
            [{"e": e, "i": i} for i, e in enumerate(episodes)],
        )
        conn.execute(text("DROP TABLE IF EXISTS bench_calls"))
        conn.execute(text('CREATE TEMP TABLE bench_calls AS SELECT call_id FROM "call"'))
        conn.execute(text("DROP TABLE IF EXISTS bench_k"))
        conn.execute(text("CREATE TEMP TABLE bench_k (c INT PRIMARY KEY)"))
        conn.execute(
            text("INSERT INTO bench_k VALUES (:c)"), [{"c": c} for c in range(1, copies + 1)]
        )
        # Copy c of template episode idx is episode number c * n_t + idx; stop at n_episodes.
        for t in (
            models.Episode.__table__,
            models.CallRow.__table__,
            models.DecisionRow.__table__,
            models.Result.__table__,
        ):
            conn.execute(text(f"DROP TABLE IF EXISTS bench_src_{t.name}"))
            conn.execute(text(f'CREATE TEMP TABLE bench_src_{t.name} AS SELECT * FROM "{t.name}"'))
            # result.id: a new autoincrement key (left out: PostgreSQL refuses NULL for it).
            cols = [c.name for c in t.columns if not (t.name == "result" and c.name == "id")]
            exprs = [_copy_expr(t.name, c) for c in cols]
            col_list = ", ".join(f'"{c}"' for c in cols)
            conn.execute(
                text(
                    f'INSERT INTO "{t.name}" ({col_list}) '
                    f"SELECT {', '.join(exprs)} FROM bench_src_{t.name} AS s "
                    "JOIN bench_ep AS e ON e.episode_id = s.episode_id "
                    "CROSS JOIN bench_k AS k "
                    "WHERE k.c * :n_t + e.idx < :n"
                ),
                {"n_t": n_t, "n": n_episodes},
            )
            conn.execute(text(f"DROP TABLE bench_src_{t.name}"))
        # Status rows name call ids inside JSON (paths, reasons): few rows, rewritten in Python.
        id_re = re.compile("|".join(re.escape(c) for c in sorted(call_ids, key=len, reverse=True)))
        idx = {e: i for i, e in enumerate(episodes)}
        batch = []
        for c in range(1, copies + 1):
            for row in statuses:
                if c * n_t + idx.get(row["episode_id"], 0) < n_episodes:
                    batch.append(_suffixed(row, f"~{c}", id_re))
            if len(batch) >= 5000 or c == copies:
                conn.execute(status.insert(), batch)
                batch = []
        total = conn.execute(select(func.count()).select_from(models.Episode.__table__))
        return int(total.scalar_one())


_SUFFIXED = ("episode_id", "call_id", "task_id", "parent_call", "retry_of", "linked_call")


def _copy_expr(table: str, col: str) -> str:
    """SQL for one column of a copied row (`s` the template row, `k.c` the copy number)."""
    if col in _SUFFIXED:
        return f"s.\"{col}\" || '~' || k.c"
    if col == "thread":
        return (
            # The template call ids (a temporary table): against the growing call table this
            # test outgrows PostgreSQL's work_mem and turns quadratic.
            "CASE WHEN s.thread IN (SELECT call_id FROM bench_calls) "
            "THEN s.thread || '~' || k.c ELSE s.thread END"
        )
    if col == "raw_response":
        # Verbatim SSE, read only by one call's raw view (keeps the store small).
        return "NULL"
    return f's."{col}"'


def _suffixed(row: dict[str, Any], suffix: str, id_re: re.Pattern) -> dict:
    out = dict(row)
    for key in _SUFFIXED:
        if out.get(key) is not None:
            out[key] = out[key] + suffix
    for key in ("paths_json", "reasons_json"):
        if out.get(key):
            out[key] = id_re.sub(lambda m: m.group(0) + suffix, out[key])
    return out


def _write_meta(path: Path, stats: GenStats) -> None:
    Path(str(path) + ".meta.json").write_bytes(orjson.dumps(stats.as_dict()))


def read_meta(path: Path) -> dict[str, int] | None:
    """Stats written beside a generated log, or None if it was not generated by this module."""
    meta = Path(str(path) + ".meta.json")
    return orjson.loads(meta.read_bytes()) if meta.exists() else None


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("log", help="an SFT-shaped log of about --mb megabytes")
    lg.add_argument("out", type=Path)
    lg.add_argument("--mb", type=float, default=100)
    ep = sub.add_parser("episode", help="one episode with --calls main calls")
    ep.add_argument("out", type=Path)
    ep.add_argument("--calls", type=int, default=1000)
    a = p.parse_args(argv)
    t = time.perf_counter()
    if a.cmd == "log":
        stats = write_log(a.out, int(a.mb * 1e6))
    else:
        stats = write_long_episode(a.out, a.calls)
    print(f"{a.out}: {stats.as_dict()} in {time.perf_counter() - t:.1f}s")


if __name__ == "__main__":
    main()


def token_episodes(n_episodes: int, *, n_calls: int = 13, seed: int = 7) -> Iterator[list[Any]]:
    """Episodes with vLLM-style token ids on every call, for the RL export figure.

    Each has `n_calls` main calls (OpenAI chat shape) whose prompts are clean appends (the next
    prompt = previous prompt + previous output + ~1,425 tool-result tokens), so the last prompt
    is ~18.7K tokens as in the paper; outputs are ~100 sampled tokens with logprobs. Yields the
    `clawviz.types.Call` list of one episode at a time.
    """
    from clawviz.types import Call, Rollout, Usage

    rng = random.Random(seed)
    for e in range(n_episodes):
        eid = f"tok-{e:05d}"
        prompt = [rng.randrange(150_000) for _ in range(400)]
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": _words(rng, 60)}]}
        ]
        calls = []
        for k in range(n_calls):
            out = [rng.randrange(150_000) for _ in range(rng.randint(60, 140))]
            last = k == n_calls - 1
            blocks: list[dict[str, Any]] = [{"type": "text", "text": _words(rng, 20)}]
            if not last:
                blocks.append(
                    {"type": "tool_use", "id": f"call_{e}_{k}", "name": rng.choice(TOOLS3),
                     "input": {"command": _words(rng, 6)}}
                )  # fmt: skip
            response = {"role": "assistant", "content": blocks}
            calls.append(
                Call(
                    call_id=f"{eid}:{k + 1}",
                    source_file=f"{eid}.jsonl",
                    line=k + 1,
                    endpoint="openai_chat",
                    seq=k + 1,
                    t_request=1000.0 + k,
                    http_status=200,
                    episode_id=eid,
                    task_id=f"task_{e // 4:04d}",
                    harness="openclaw",
                    attempt=e % 4 + 1,
                    model="qwen3-4b",
                    system=OPENCLAW_SYSTEM,
                    tools=list(TOOLS3),
                    messages=list(messages),
                    response=response,
                    usage=Usage(input_tokens=len(prompt), output_tokens=len(out)),
                    rollout=Rollout(
                        prompt_token_ids=list(prompt),
                        output_token_ids=out,
                        output_logprobs=[-rng.random() * 2 for _ in out],
                        policy_version=1,
                    ),
                )  # fmt: skip
            )
            result = {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"call_{e}_{k}",
                     "content": _words(rng, 900), "is_error": False}
                ],
            }  # fmt: skip
            messages = [*messages, response, result]
            prompt = prompt + out + [rng.randrange(150_000) for _ in range(1_425)]
        yield calls


TOOLS3 = ("exec", "read", "write")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(f"w{rng.randrange(3000)}" for _ in range(n))
