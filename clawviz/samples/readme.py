"""Render sample_logs/README.md from what the generator wrote (so the README never drifts)."""

from __future__ import annotations

from typing import Any

QUIRKS: dict[str, str] = {
    "models_list": "`GET /v1/models` non-model call (aux_non_model)",
    "warmup": "start-up `Warmup` calls for three sub-agent types (general-purpose, Explore on "
    "haiku, Plan), fired in parallel so their lines are in completion order (aux_utility)",
    "utility": "tool-less haiku calls after the first Bash run: bash prefix `<policy_spec>` and "
    "`Extract any file paths that this command reads or modifies` (aux_utility)",
    "utility_no_session": "the path-extraction utility call has no `x-claude-code-session-id` "
    "header: it belongs to the file's only episode",
    "subagent_sync": "Task tool sub-agent (`You are an agent for Claude Code`); its first user "
    "message is the Task `prompt`; its report is the Task tool_result",
    "subagent_async": "Claude Code 2.1 async sub-agent: tool result `Async agent launched "
    'successfully`, report later as a `role: "system"` message `[SYSTEM NOTIFICATION - NOT USER '
    "INPUT]`",
    "retry_529": "HTTP 529 overloaded, retried with an identical body (`x-stainless-retry-count` "
    "0 then 1): failed_http, then the kept retry",
    "compaction": "compaction: a summary request extending the main tip (last user message "
    "`CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.` ... `Your task is to create a "
    "detailed summary of the conversation so far`), then a continuation root (`This session is "
    "being continued from a previous conversation that ran out of context. ...`): 2 segments",
    "resend_branch": "a branch continued for one call, then abandoned when the harness re-sent "
    "the earlier request with an identical body: both abandoned calls are superseded_retry",
    "ends_in_error": "the last main call fails with HTTP 500 twice (SDK retry) and the harness "
    "gives up (ended_in_error)",
    "rewinds": "after the final answer the user rewinds 9 times, asking something else each "
    "time: 9 main leaves > max_leaves 8 (too_many_branches); one leaf kept, eight not_longest",
    "orphan_title": "a title-generation utility call with `response: null` (claude-trace's "
    "`ORPHANED_REQUEST` note), written last: failed(orphaned_request), not the episode's end",
    "count_tokens": "`POST /v1/messages/count_tokens` non-model call (aux_non_model)",
    "truncated_stream": "an SSE response cut before `message_stop` (truncated_stream), then "
    "retried with an identical body",
    "explore_subagent": "Explore sub-agent (`file search specialist for Claude Code`) on haiku",
    "gzip": "log stored as `.jsonl.gz`; before-workspace as `.tar.gz`",
    "bad_lines": "four deliberately bad lines among the good ones (see below)",
    "token_ids": "vLLM `return_token_ids`: `prompt_token_ids` and `choices[0].token_ids`; each "
    "prompt starts with the previous prompt + output ids (clean append)",
    "heartbeat": "heartbeat turn after the final answer (`Read HEARTBEAT.md if it exists ...` -> "
    "`HEARTBEAT_OK`) carrying the full main history (aux_heartbeat)",
    "heartbeat_2026_9": "2026.9 heartbeat prompt (`Follow the heartbeat monitor scratch context "
    "when provided. ...` + `Current time:` -> `NO_REPLY`) with `X-Turn-Type: side`",
    "memory_flush": "`Pre-compaction memory flush.` extending the main tip: writes memory/, then "
    "`NO_REPLY`; tools read/write only (aux_memory_flush, 2 calls)",
    "spawn": "sub-agent via `sessions_spawn` (first user message `[Subagent Context] You are "
    "running as a subagent (depth 1/2)` ... `[Subagent Task]`); its result comes back as "
    "`<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>`; it runs while the main agent continues",
    "spawn_tool_search": "sub-agent via Tool Search: `tool_search`, then `tool_call` with "
    '`{"id": "sessions_spawn", "args": {...}}`; the sub-agent calls carry no session header',
    "overflow_compaction": "HTTP 400 context overflow, then a summary call (`You are a context "
    "summarization assistant`, `<conversation>...</conversation>`), then a continuation root "
    "(`The conversation history before this point was compacted into the following summary:`)",
    "retry_500": "HTTP 500, then OpenClaw's own retry whose body differs (refreshed runtime "
    "context + `Continue the current task from the existing transcript, preserving completed "
    "work.`)",
    "cron": "cron run in its own session (`X-Session-Id: cron:job-7f3a`, first user "
    "`[cron:job-7f3a nightly-task-digest] ... This is an unattended scheduled run.`, system has a "
    "`## Subagent Context` heading) running alongside the main agent (aux_cron)",
    "canvas": "a `canvas` tool call by the main agent (unsupported_tool)",
    "stream": "streamed chat completions (`data:` chunks, tool-call fragments by index, usage "
    "chunk, `data: [DONE]`)",
}
IDENTITY = {
    "clawviz": "`clawviz.episode_id` on every line",
    "header": "no `clawviz` object: the session header is the episode id",
    "clawgym": "no `clawviz` object, no session header: request `model` is ClawGym's "
    "`main__<session_id>`",
}


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def render_readme(expected: dict[str, Any]) -> str:
    """The README text for one generated dataset."""
    eps = expected["episodes"]
    out = [
        "# sample_logs — the bundled sample dataset",
        "",
        "Generated by `python -m clawviz.samples sample_logs --seed "
        f"{expected['seed']}` (package `clawviz/samples/`); do not edit by hand. The same seed "
        "gives the same bytes, and `tests/test_samples.py` checks that this folder matches the "
        "generator. Everything here is synthetic but shaped like real traffic "
        "(`docs/FORMATS.md`): the simulated agent really works each task in a scratch copy of "
        "its input files, so tool results, the after-workspaces and the checker scores agree.",
        "",
        "## Layout",
        "",
        "- `tasks/task_0001..0003/` — ClawGym task folders: `data_entry.json`, `input_files/`, "
        "`reward/check.py` (`python3 check.py [WORKSPACE]`, workspace = argv[1], default the "
        "current directory; prints a JSON object of named 0/1 sub-scores), `reward/reward.sh` "
        "(prints their mean as the last line), `reward/rubric.json` (task_0001 only).",
        "  - `task_0001` volunteer remediation (after the seed's task): `data/tasks.csv`, "
        "`data/updates.jsonl`, announcement, summary tool and public tests; four outputs under "
        "`build/`; 15 checks.",
        "  - `task_0002` sales summary (easy: the small model also solves it).",
        "  - `task_0003` inventory bug fix (edits code, must not touch the tests).",
        "- `tasks/pinchbench/task_weekly_digest.md` (+ its workspace folder) — a PinchBench task.",
        "- `exchanges/claude-code/*.jsonl` — Claude Code style: Anthropic Messages, `stream: "
        "true`, SSE `body_raw`, billing-header system line whose `cch=` changes every request, "
        "`cache_control` on the newest block (it moves each turn), `<system-reminder>` blocks.",
        "- `exchanges/openclaw/*.jsonl` — OpenClaw style: OpenAI Chat Completions against vLLM "
        "(`logprobs` with `token_id:N` tokens; some with token ids; `clawviz.rollout` holds the "
        "output ids and logprobs).",
        "- Lines are written in response-completion order, not request order (order by "
        "`clawviz.seq` or request timestamp).",
        "- `results.jsonl` — one line per attempt (not for the missing-reward episode): reward = "
        "mean of `checks`, computed by running the task's `check.py` on the after-workspace at "
        "generation time; `rubric` on some; `model_role` strong/small.",
        "- `workspaces/<name>/before|after` — folders, plus archives: "
        "`t0001-claude-code-a1/after.tar.gz`, `t0003-claude-code-a2/before.tar.gz`, "
        "`t0002-openclaw-a1/after.zip`.",
        "- `expected.json` — what the generator intends for every call (file + line: role, "
        "state, reason, parent, retry_of, linked, segment) and every episode (status, reasons, "
        "reward) under the default settings, plus the bad lines and the difficulty filter.",
        "",
        "## Episodes",
        "",
        "Attempts 1-2 are the `strong` model role, 3-4 `small`.",
        "",
        "| file | episode id | identity | reward | status | what it shows |",
        "|---|---|---|---|---|---|",
    ]
    for e in eps:
        reasons = ", ".join(r["code"] for r in e["reasons"])
        status = e["status"] + (f" ({reasons})" if reasons else "")
        shows = "; ".join(QUIRKS[q] for q in e["quirks"]) or "a plain run"
        reward = "none (no results line)" if e["reward"] is None else f"{e['reward']:.3f}"
        out.append(
            f"| `{e['file']}` | `{e['episode_id']}` | {IDENTITY[e['identity']]} | {reward} | "
            f"{status} | {shows} |"
        )
    out += ["", "## Bad lines", ""]
    for b in expected["bad_lines"]:
        out.append(f"- `{b['file']}` line {b['line']}: {b['kind']} — {b['reason']}")
    out += ["", "## Difficulty filter (s_strong >= 0.2, s_small <= 0.6, s_strong > s_small)", ""]
    for task, d in expected["difficulty"].items():
        verdict = "passes" if d["passes"] else "fails"
        out.append(
            f"- `{task}`: s_strong {_num(d['s_strong'])}, s_small {_num(d['s_small'])} — {verdict}"
        )
    out += ["", "## Conventions in expected.json", ""]
    out += [f"- `{k}`: {v}" for k, v in expected["conventions"].items()]
    return "\n".join(out) + "\n"
