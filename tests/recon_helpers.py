"""Builders of hand-made episodes for the reconstruction tests."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from clawviz.types import Call, Message, Rollout, Usage

CC_MAIN = "You are Claude Code, Anthropic's official CLI for Claude.\nHelp the user with code."
CC_SUB = "You are an agent for Claude Code, Anthropic's official CLI for Claude. Use the tools."
OC_MAIN = "You are a personal assistant running inside OpenClaw.\n## Tooling\nread, write, exec"
PI_SUMMARY = "You are a context summarization assistant. Your task is to read a conversation."
CC_TOOLS = ["Read", "Bash", "Edit", "Task"]
OC_TOOLS = ["read", "write", "exec", "sessions_spawn", "canvas"]

_ids = itertools.count(1)


def user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def asst(text: str = "", *tools: dict[str, Any], thinking: str | None = None) -> Message:
    blocks: list[dict[str, Any]] = []
    if thinking:
        blocks.append({"type": "thinking", "thinking": thinking})
    if text:
        blocks.append({"type": "text", "text": text})
    blocks.extend(tools)
    return {"role": "assistant", "content": blocks}


def tool_use(name: str, args: dict[str, Any], tid: str | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid or f"toolu_{next(_ids)}", "name": name, "input": args}


def tool_result(tid: str, text: str, is_error: bool = False) -> Message:
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": is_error}
        ],
    }


@dataclass
class Ep:
    """Builds the calls of one episode with increasing seq."""

    episode_id: str = "ep1"
    harness: str = "claude_code"
    system: str = CC_MAIN
    tools: list[str] = field(default_factory=lambda: list(CC_TOOLS))
    calls: list[Call] = field(default_factory=list)

    def call(
        self,
        messages: list[Message],
        response: Message | None = None,
        *,
        tokens: int | None = 10,
        status: int = 200,
        failure: str | None = None,
        system: str | None = None,
        tools: list[str] | None = None,
        **kw: Any,
    ) -> Call:
        seq = len(self.calls) + 1
        failed = failure is not None or not 200 <= status < 300
        if failed and failure is None:
            failure = "failed_http"
        c = Call(
            call_id=kw.pop("call_id", f"{self.episode_id}-c{seq}"),
            source_file=kw.pop("source_file", f"{self.episode_id}.jsonl"),
            line=kw.pop("line", seq),
            endpoint=kw.pop("endpoint", "anthropic_messages"),
            seq=kw.pop("seq", seq),
            t_request=kw.pop("t_request", 1000.0 + seq),
            http_status=None if failure == "orphaned_request" else status,
            episode_id=self.episode_id,
            task_id=kw.pop("task_id", "task_1"),
            harness=self.harness,
            system=self.system if system is None else system,
            tools=list(self.tools if tools is None else tools),
            messages=list(messages),
            response=None if failed else (response or asst(f"reply {seq}")),
            usage=Usage(output_tokens=None if failed else tokens),
            failure=failure,  # type: ignore[arg-type]
            **kw,
        )
        self.calls.append(c)
        return c

    def turn(self, prev: Call, *new: Message, **kw: Any) -> Call:
        """A call continuing `prev`: its messages + its response + the new messages."""
        assert prev.response is not None
        return self.call(prev.messages + [prev.response, *new], **kw)

    def chain(self, n: int, first: str = "do the task", **kw: Any) -> list[Call]:
        """A linear chain of n calls, each answering a tool result."""
        out = [
            self.call([user(first)], asst("step 1", tool_use("Bash", {"cmd": "ls"}, "t1")), **kw)
        ]
        for i in range(2, n + 1):
            out.append(
                self.turn(
                    out[-1],
                    tool_result(f"t{i - 1}", f"out {i - 1}"),
                    response=asst(f"step {i}", tool_use("Bash", {"cmd": f"ls {i}"}, f"t{i}")),
                    **kw,
                )
            )
        return out


def with_rollout(call: Call, **kw: Any) -> Call:
    call.rollout = Rollout(**kw)
    return call
