"""A very long episode (e.g. 200,000 calls) written straight into a store, for `episodes` timing.

A log of such an episode would be ~17 GB with `gen.py`'s text sizes, so its calls are built in
memory with short texts and written with `store.write_parsed`, the writer ingest uses. The
shape is Claude Code's: one main thread answering tool results, compacted every 24 calls (a
summary request, then a `This session is being continued ...` continuation), an SDK retry
(529, then the same body) every 500 calls and a three-call sub-agent thread every 1,000.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gen import CLAUDE_CONTINUATION, CLAUDE_SUBAGENT_SYSTEM, CLAUDE_SUMMARY_PROMPT, CLAUDE_SYSTEM

from clawviz.ingest.exchange import ParsedExchange
from clawviz.recon.canonical import message_hash
from clawviz.types import Call, Usage

TOOLS = ["Bash", "Read", "Edit", "Write", "Grep", "Glob", "Task"]


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _tool_turn(i: int, name: str = "Bash") -> tuple[dict[str, Any], dict[str, Any]]:
    tid = f"toolu_{i:08d}"
    answer = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": f"Step {i}: checking the next file."},
            {"type": "tool_use", "id": tid, "name": name, "input": {"command": f"ls d{i}"}},
        ],
    }
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": tid, "content": f"f{i}.txt"}],
    }
    return answer, result


class _Hashes:
    """Message hashes by object: every call re-sends the same message objects."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[dict[str, Any], str]] = {}

    def __call__(self, messages: list[dict[str, Any]]) -> list[str]:
        out = []
        for m in messages:
            hit = self._by_id.get(id(m))
            if hit is None:
                hit = self._by_id[id(m)] = (m, message_hash(m))
            out.append(hit[1])
        return out


def big_episode(n_calls: int, episode_id: str = "big") -> Iterator[ParsedExchange]:
    """About `n_calls` calls of one episode, in request order."""
    hashes = _Hashes()
    seq = 0

    def call(messages: list[dict[str, Any]], response: dict[str, Any] | None, **kw: Any) -> Any:
        nonlocal seq
        seq += 1
        status = kw.pop("status", 200)
        c = Call(
            call_id=f"{episode_id}:{seq}",
            source_file=f"{episode_id}.jsonl",
            line=seq,
            endpoint="anthropic_messages",
            seq=seq,
            t_request=1_000_000.0 + seq,
            t_response=1_000_000.5 + seq,
            http_status=status,
            episode_id=episode_id,
            task_id="task_big",
            harness="claude-code",
            attempt=0,
            model=kw.pop("model", "claude-sonnet-4-5"),
            system=kw.pop("system", CLAUDE_SYSTEM),
            tools=list(kw.pop("tools", TOOLS)),
            messages=list(messages),
            response=response,
            stop_reason=None if response is None else "tool_use",
            usage=Usage(input_tokens=100, output_tokens=None if response is None else 20),
            failure=None if response is not None else "failed_http",
        )
        return ParsedExchange(
            call=c,
            raw_messages=c.messages,
            message_hashes=hashes(c.messages),
            system_raw=c.system,
            tools_raw=[{"name": t} for t in c.tools],
            envelope={"model": c.model, "max_tokens": 32000, "stream": True},
            has_identity=True,
        )

    history = [_user("Fix the failing tests in the repository.")]
    i = 0
    while seq < n_calls:
        i += 1
        answer, result = _tool_turn(i)
        if i % 500 == 0:
            yield call(history, None, status=529)
        yield call(history, answer)
        history = [*history, answer, result]
        if i % 1000 == 0:
            sub = [_user(f"Investigate part {i} and report.")]
            for k in range(3):
                a, r = _tool_turn(i * 10 + k, "Read")
                yield call(sub, a, system=CLAUDE_SUBAGENT_SYSTEM, tools=TOOLS[:3])
                sub = [*sub, a, r]
        if i % 24 == 0:
            summary = {
                "role": "assistant",
                "content": [{"type": "text", "text": f"Summary of the work up to step {i}."}],
            }
            yield call([*history, _user(CLAUDE_SUMMARY_PROMPT)], summary)
            history = [_user(CLAUDE_CONTINUATION + summary["content"][0]["text"])]


def write_big_episode(session: Any, n_calls: int, episode_id: str = "big") -> int:
    """Write the episode into the store (no analysis); returns the number of calls."""
    from clawviz.store import calls as store
    from clawviz.store.models import Source

    src = Source(path=f"{episode_id}.jsonl", sha256=f"bench:{episode_id}", format="exchange")
    session.add(src)
    session.flush()
    seen = store.SeenHashes()
    batch: list[ParsedExchange] = []
    n = 0
    for p in big_episode(n_calls, episode_id):
        batch.append(p)
        if len(batch) >= 2000:
            store.write_parsed(session, batch, src, seen)
            n += len(batch)
            batch = []
    store.write_parsed(session, batch, src, seen)
    n += len(batch)
    store.refresh_episodes(session, [episode_id])
    session.commit()
    return n
