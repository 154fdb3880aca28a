"""Claude Code style episodes: Anthropic Messages over SSE, as claude-trace records them."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path
from typing import Any

from clawviz.samples.agent import Action, AgentTurn, run_action
from clawviz.samples.episode import Episode, Spawn, Spec, Thread
from clawviz.samples.wire import anthropic_sse, count_tokens, dumps

CC_VERSION = "2.1.12"
CWD = "/workspace"
SONNET = "claude-sonnet-4-5-20250929"
HAIKU = "claude-haiku-4-5-20251001"
CC_IDENT = "You are Claude Code, Anthropic's official CLI for Claude."
CC_MAIN = (
    "You are an interactive CLI tool that helps users with software engineering tasks. Use the "
    "instructions below and the tools available to you to assist the user.\n\n"
    "# Tone and style\nBe concise. Do what has been asked; nothing more, nothing less.\n\n"
    "# Doing tasks\n- Read files before editing them.\n- Verify your work by running the "
    "project's tests when they exist.\n- Use the Task tool to delegate self-contained research.\n\n"
    f"<env>\nWorking directory: {CWD}\nIs directory a git repo: No\nPlatform: linux\n"
    "Today's date: 2026-04-16\n</env>"
)
SUB_GENERAL = (
    "You are an agent for Claude Code, Anthropic's official CLI for Claude. Given the user's "
    "message, you should use the tools available to complete the task. Do what has been asked; "
    "nothing more, nothing less. When you complete the task simply respond with a detailed "
    "writeup.\n\n"
    f"<env>\nWorking directory: {CWD}\nToday's date: 2026-04-16\n</env>"
)
SUB_EXPLORE = (
    "You are a file search specialist for Claude Code, Anthropic's official CLI for Claude. You "
    "excel at thoroughly navigating and exploring codebases. Report findings with absolute paths."
)
SUB_PLAN = (
    "You are a software architect and planning specialist for Claude Code. Explore the codebase "
    "and design implementation plans. Do not modify files."
)
TOOL_DEFS: dict[str, dict[str, Any]] = {
    "Task": {
        "description": "Launch a new agent to handle a self-contained task.",
        "required": ["description", "prompt", "subagent_type"],
    },
    "Bash": {"description": "Executes a bash command.", "required": ["command"]},
    "Glob": {"description": "Fast file pattern matching.", "required": ["pattern"]},
    "Grep": {"description": "Search file contents with ripgrep.", "required": ["pattern"]},
    "Read": {"description": "Reads a file from the local filesystem.", "required": ["file_path"]},
    "Edit": {
        "description": "Performs exact string replacements in files.",
        "required": ["file_path", "old_string", "new_string"],
    },
    "Write": {
        "description": "Writes a file to the local filesystem.",
        "required": ["file_path", "content"],
    },
    "TodoWrite": {
        "description": "Create and manage a structured task list.",
        "required": ["todos"],
    },
}
MAIN_TOOLS = list(TOOL_DEFS)
SUB_TOOLS = ["Bash", "Glob", "Grep", "Read"]
REMINDER_FIRST = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n"
    "# important-instruction-reminders\nDo what has been asked; nothing more, nothing less.\n"
    "NEVER create files unless they're absolutely necessary for achieving your goal.\n"
    "</system-reminder>\n"
)
REMINDER_TODO = (
    "<system-reminder>\nThe TodoWrite tool hasn't been used recently. If you're working on tasks "
    "that would benefit from tracking progress, consider using the TodoWrite tool.\n"
    "</system-reminder>"
)
COMPACT_PROMPT = (
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n"
    "Your task is to create a detailed summary of the conversation so far, paying close attention "
    "to the user's explicit requests and your previous actions. This summary should be thorough "
    "in capturing technical details, code patterns, and architectural decisions that would be "
    "essential for continuing development work without losing context.\n\n"
    "IMPORTANT: Do NOT use any tools. You MUST respond with ONLY the <summary>...</summary> block "
    "as your text output."
)
CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of context. The "
    "summary below covers the earlier portion of the conversation.\n\n{summary}\n\nPlease "
    "continue the conversation from where we left off without asking the user any further "
    "questions. Continue with the last task that you were asked to work on."
)
POLICY_SPEC = (
    "<policy_spec>\n# Claude Code Code Bash command prefix detection\n\nThis document defines "
    "risk levels for actions that the Claude Code agent may take. Your task is to determine the "
    "command prefix of the command below. If the command seems to contain command injection, "
    'you must return "command_injection_detected".\n</policy_spec>\n\n'
    "Command: {command}\n\nONLY return the prefix. Do not return any other text."
)
EXTRACT_PATHS = (
    'Extract any file paths that this command reads or modifies. For commands like "git diff" '
    'and "cat", include the paths of files being shown. Use paths verbatim -- don\'t add any '
    "slashes or try to resolve them. Do not try to infer paths that were not explicitly listed "
    "in the command output.\n\nCommand: {command}\nOutput: {output}\n\nFormat your response as:\n"
    "<is_displaying_contents>\ntrue\n</is_displaying_contents>\n\n<filepaths>\npath/to/file1\n"
    "</filepaths>"
)


class ClaudeCode:
    """Builds the calls of one Claude Code episode into `ep`, working in workspace `ws`."""

    def __init__(self, ep: Episode, ws: Path, query: str) -> None:
        self.ep, self.ws, self.rng = ep, ws, ep.rng
        self.query = query
        self.session = ep.meta.session_id
        self.n_tool = 0
        self.did_utility = False
        self.main = Thread(
            "main",
            "main",
            _system(CC_MAIN),
            MAIN_TOOLS,
            ep.meta.model,
            ep.t0,
            wire={"session": self.session, "stream": True},
        )

    # -- ids and messages
    def _id(self, prefix: str, n: int = 24) -> str:
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789"
        return prefix + "".join(self.rng.choice(alphabet) for _ in range(n))

    def assistant(self, turn: AgentTurn, actions: list[tuple[Action, dict]]) -> dict[str, Any]:
        """The assistant message of one turn: thinking, text, then one tool_use per action."""
        blocks: list[dict[str, Any]] = []
        if turn.thinking:
            blocks.append(
                {"type": "thinking", "thinking": turn.thinking, "signature": self._id("Eq", 48)}
            )
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        for _action, use in actions:
            blocks.append({"type": "tool_use", "id": self._id("toolu_01"), **use})
        return {"role": "assistant", "content": blocks}

    def tool_use(self, a: Action) -> dict[str, Any]:
        """The Claude Code tool (name + input) for a harness-neutral action."""
        path = f"{CWD}/{a.path}"
        if a.kind == "read":
            return {"name": "Read", "input": {"file_path": path}}
        if a.kind == "list":
            return {"name": "Glob", "input": {"pattern": "**/*"}}
        if a.kind == "exec":
            return {
                "name": "Bash",
                "input": {"command": a.command, "description": "Run " + a.command.split()[1]},
            }
        if a.kind == "write":
            return {"name": "Write", "input": {"file_path": path, "content": a.content}}
        return {
            "name": "Edit",
            "input": {"file_path": path, "old_string": a.old, "new_string": a.new},
        }

    def result_text(self, a: Action) -> tuple[str, bool]:
        """Run the action; return the tool_result text the way Claude Code formats it."""
        r = run_action(self.ws, a)
        if r.is_error or a.kind not in ("read", "write", "edit", "list"):
            return r.output, r.is_error
        if a.kind == "read":
            lines = r.output.splitlines() or [""]
            return "\n".join(f"{i:6d}\t{ln}" for i, ln in enumerate(lines, 1)), False
        if a.kind == "list":
            return "\n".join(f"{CWD}/{p}" for p in r.output.splitlines()), False
        if a.kind == "write":
            return f"File created successfully at: {CWD}/{a.path}", False
        return f"The file {CWD}/{a.path} has been updated.", False

    def _tokens(self, msg: dict[str, Any]) -> int:
        n = 0
        for b in msg["content"]:
            n += count_tokens(b.get("text") or b.get("thinking") or dumps(b.get("input", "")))
        return n + 3

    def send(self, th: Thread, response: dict[str, Any], **kw: Any) -> Spec:
        """Record one call on thread `th` whose reply is `response`."""
        stop = kw.pop("stop_reason", None) or (
            "tool_use" if any(b["type"] == "tool_use" for b in response["content"]) else "end_turn"
        )
        return self.ep.call(
            th, response, output_tokens=self._tokens(response), stop_reason=stop, **kw
        )

    # -- one agent turn on a thread: send, then run the tools (sub-agents and utilities included)
    def turn(
        self, th: Thread, turn: AgentTurn, *, subagent: Spawn | None = None, **kw: Any
    ) -> Spec:
        uses = [(a, self.tool_use(a)) for a in turn.actions]
        if subagent is not None:
            uses.append((Action("task"), subagent.call))
        response = self.assistant(turn, uses)
        spec = self.send(th, response, **kw)
        if spec.failed:
            return spec
        results = []
        for (a, _use), block in zip(
            uses, [b for b in response["content"] if b["type"] == "tool_use"], strict=True
        ):
            if a.kind == "task":
                assert subagent is not None, "a task tool call needs its sub-agent"
                text, err = subagent.run(th), False
            else:
                text, err = self.result_text(a)
                if a.kind == "exec" and th.name == "main":
                    self.utilities(a.command, text, th)
            res = {"type": "tool_result", "tool_use_id": block["id"], "content": text}
            if err:
                res["is_error"] = True
            results.append(res)
        if results:
            self.n_tool += 1
            if self.n_tool == 3 and th.name == "main":
                results.append({"type": "text", "text": REMINDER_TODO})
            th.pending = [{"role": "user", "content": results}]
        return spec

    def utilities(self, command: str, output: str, th: Thread) -> None:
        """Haiku side calls Claude Code makes around a Bash run (once per episode here)."""
        if self.did_utility or "utility" not in self.ep.meta.quirks:
            return
        self.did_utility = True
        util = Thread(
            "util",
            "aux_utility",
            _system(None),
            [],
            HAIKU,
            th.clock,
            wire={"session": self.session, "stream": False},
        )
        prefix = command.split()[0]
        self.ep.call(
            util,
            _text(prefix),
            extra=[_user(POLICY_SPEC.format(command=command))],
            output_tokens=2,
            stop_reason="end_turn",
            parent=None,
            advance=False,
            note="bash prefix policy",
        )
        util.clock += 0.3
        paths = (
            "<is_displaying_contents>\nfalse\n</is_displaying_contents>\n\n"
            f"<filepaths>\n{command.split()[1]}\n</filepaths>"
        )
        no_session = "utility_no_session" in self.ep.meta.quirks
        self.ep.call(
            util,
            _text(paths),
            extra=[_user(EXTRACT_PATHS.format(command=command, output=output[:300]))],
            output_tokens=count_tokens(paths),
            stop_reason="end_turn",
            parent=None,
            advance=False,
            note="file path extraction",
            wire={"session": None if no_session else self.session},
        )
        th.clock = max(th.clock, util.clock)

    # -- quirks
    def orphaned_title(self) -> None:
        """A title-generation utility call whose response the recorder never saw."""
        th = Thread(
            "title",
            "aux_utility",
            _system(None),
            [],
            HAIKU,
            self.main.clock,
            wire={"session": self.session, "stream": False},
        )
        prompt = (
            "Generate a concise, sentence-case title (3-7 words) for this coding session. "
            'Return JSON with a single "title" field.'
        )
        # Still pending when the recorder exited: logged last, with no response.
        self.ep.call(
            th,
            _text('{"title": "Weekly sales summary"}'),
            extra=[_user(prompt)],
            parent=None,
            advance=False,
            failure="orphaned_request",
            duration=900.0,
            output_tokens=9,
            stop_reason="end_turn",
            note="orphaned title generation",
        )

    def warmups(self) -> None:
        """Claude Code start-up: one `Warmup` call per sub-agent type, in parallel."""
        t = self.main.clock
        for i, (system, model) in enumerate(
            [(SUB_GENERAL, SONNET), (SUB_EXPLORE, HAIKU), (SUB_PLAN, SONNET)]
        ):
            th = Thread(
                f"warmup{i}",
                "aux_utility",
                _system(system),
                SUB_TOOLS,
                model,
                t + 0.01 * i,
                wire={"session": self.session, "stream": True},
            )
            reply = "I'm ready to help. What would you like me to search for or analyse?"
            self.ep.call(
                th,
                _text(reply),
                extra=[_user("Warmup")],
                parent=None,
                output_tokens=count_tokens(reply),
                stop_reason="end_turn",
                duration=1.2 + 0.9 * (2 - i),
                note="Warmup",
            )
        self.main.clock = t + 0.2

    def non_model(self, kind: str) -> None:
        """A call that is no model call: `GET /v1/models` or `count_tokens`."""
        th = Thread("http", "aux_non_model", None, [], "", self.main.clock)
        if kind == "models":
            body = {
                "data": [
                    {
                        "type": "model",
                        "id": SONNET,
                        "display_name": "Claude Sonnet 4.5",
                        "created_at": "2025-09-29T00:00:00Z",
                    },
                    {
                        "type": "model",
                        "id": HAIKU,
                        "display_name": "Claude Haiku 4.5",
                        "created_at": "2025-10-01T00:00:00Z",
                    },
                ],
                "has_more": False,
                "first_id": SONNET,
                "last_id": HAIKU,
            }
            wire: dict[str, Any] = {
                "method": "GET",
                "path": "/v1/models?limit=1000",
                "json": body,
            }
        else:
            msgs = self.main.messages + self.main.pending
            body = {"input_tokens": 1800 + sum(len(dumps(m)) for m in msgs) // 4}
            wire = {
                "method": "POST",
                "path": "/v1/messages/count_tokens?beta=true",
                "json": body,
                "count_messages": msgs,
            }
        self.ep.call(
            th,
            None,
            parent=None,
            advance=False,
            non_model=True,
            duration=0.2,
            wire={"session": self.session, **wire},
            note=f"non-model {kind}",
        )
        self.main.clock = th.clock

    def subagent(
        self, kind: str, prompt: str, actions: list[Action], report: str, asynchronous: bool = False
    ) -> Spawn:
        """A Task sub-agent; it runs when the parent's tool results are computed."""
        system = {"general-purpose": SUB_GENERAL, "Explore": SUB_EXPLORE}[kind]
        description = {"general-purpose": "Key facts of the announcement", "Explore": "Map files"}
        model = SONNET if kind == "general-purpose" else HAIKU

        def run(parent: Thread) -> str:
            sub = Thread(
                f"sub-{kind}",
                "aux_subagent",
                _system(system),
                SUB_TOOLS,
                model,
                parent.clock,
                wire={"session": self.session, "stream": True},
            )
            sub.pending = [{"role": "user", "content": prompt}]
            first = self.turn(sub, AgentTurn("", actions), parent=None)
            first.linked = parent.tip
            self.turn(sub, AgentTurn(report))
            spawn.done_at = sub.clock
            if asynchronous:
                return (
                    f"Async agent launched successfully.\nagentId: {spawn.agent_id} (use "
                    "this to check on the agent later)\nThe agent is working in the "
                    "background. You will be notified automatically when it completes."
                )
            parent.clock = sub.clock
            return report

        task = {"description": description[kind], "prompt": prompt, "subagent_type": kind}
        spawn = Spawn({"name": "Task", "input": task}, run, report, self._id("", 8).lower())
        return spawn

    def notify(self, spawn: Spawn) -> None:
        """Claude Code 2.1: an async sub-agent's report arrives as a role:system message."""
        self.main.clock = max(self.main.clock, spawn.done_at + 0.5)
        text = (
            f"[SYSTEM NOTIFICATION - NOT USER INPUT] Background agent {spawn.agent_id} "
            f"completed.\n<agent-report>\n{spawn.report}\n</agent-report>"
        )
        self.main.pending = self.main.pending + [{"role": "system", "content": text}]

    def compact(self) -> None:
        """Summary request extending the tip, then a fresh root carrying the summary."""
        tip = self.main.tip
        summary = (
            "<analysis>\nThe user asked for four synchronized files under build/. I read the "
            "inputs and produced the statistics and the test log.\n</analysis>\n\n<summary>\n"
            "1. Primary Request and Intent: produce build/stats.json, build/test_log.txt, "
            "build/weekly_report.md and build/announcement_rewrite.txt from data/.\n"
            "2. Files: data/tasks.csv (7 tasks: todo 2, in_progress 2, done 2, blocked 1 - task 5 "
            "Nora); data/updates.jsonl (tasks 4, 3, 2; follow-up needed for 2 Marco and 4 Sam).\n"
            "3. Done so far: stats.json written with tools/summarize.py; tests pass.\n"
            "4. Pending Tasks: weekly report, announcement rewrite under 120 words.\n</summary>"
        )
        spec = self.send(
            self.main,
            _text(summary),
            extra=[_user(COMPACT_PROMPT)],
            role="aux_summary",
            advance=False,
            note="compaction summary request",
        )
        spec.linked = tip
        self.main.messages, self.main.tip = [], None
        self.main.pending = [_user(CONTINUATION.format(summary=summary))]
        self.continuation_of = spec


def _system(body: str | None) -> list[dict[str, Any]]:
    blocks = [{"type": "text", "text": CC_IDENT, "cache_control": {"type": "ephemeral"}}]
    if body:
        blocks.append({"type": "text", "text": body, "cache_control": {"type": "ephemeral"}})
    return blocks


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _text(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def first_user(query: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": REMINDER_FIRST}, {"type": "text", "text": query}],
    }


def run_episode(ep: Episode, ws: Path, query: str, plan: list[AgentTurn]) -> None:
    """Play `plan` through Claude Code, adding the quirks named in ep.meta.quirks."""
    q = set(ep.meta.quirks)
    cc = ClaudeCode(ep, ws, query)
    main = cc.main
    if "models_list" in q:
        cc.non_model("models")
    if "warmup" in q:
        cc.warmups()
    if "orphan_title" in q:
        cc.orphaned_title()
    main.pending = [first_user(query)]
    spawn: Spawn | None = None
    for i, turn in enumerate(plan):
        sub: Spawn | None = None
        if i == 1 and q & {"subagent_sync", "subagent_async", "explore_subagent"}:
            spawn = sub = _spawn_subagent(cc, q)
        if spawn is not None and "subagent_async" in q and i == 4:
            cc.notify(spawn)
        outcome = _quirk_turn(cc, q, plan, i)
        if outcome == "end":
            return
        if outcome == "done":
            continue
        if i == 3 and "count_tokens" in q:
            cc.non_model("count_tokens")
        cc.turn(main, turn, subagent=sub)
    if "rewinds" in q:
        _rewinds(cc)


def _spawn_subagent(cc: ClaudeCode, q: set[str]) -> Spawn:
    """The sub-agent of the second turn: Explore, or general-purpose (sync or async)."""
    if "explore_subagent" in q:
        return cc.subagent(
            "Explore",
            "List every file under /workspace with its purpose.",
            [Action("list")],
            "The workspace holds data/, src/ and tests/; "
            "src/inventory.py is the restock script, tests/run_tests.py its tests.",
        )
    return cc.subagent(
        "general-purpose",
        "Read /workspace/data/announcement.txt and list the facts a short rewrite must "
        "keep (date, time, meeting point, what to bring, contact). Reply with a bullet "
        "list.",
        [Action("read", "data/announcement.txt")],
        "- Saturday, April 18, 9:00\n- Willow Creek boat ramp\n- gloves, grabbers, "
        "bags and vests provided\n- closed shoes, water, sun protection\n"
        "- contact: Sam",
        asynchronous="subagent_async" in q,
    )


def _quirk_turn(cc: ClaudeCode, q: set[str], plan: list[AgentTurn], i: int) -> str | None:
    """Play turn `i` with its quirk if it has one: "done", "end" (the harness gave up) or None
    (an ordinary turn, played by the caller)."""
    main, turn = cc.main, plan[i]
    if i == 2 and "retry_529" in q:
        failed = cc.turn(
            main,
            turn,
            status=529,
            failure="failed_http",
            wire={"retry_count": 0},
            note="HTTP 529 overloaded",
        )
        cc.turn(
            main, turn, retry_of=failed, wire={"retry_count": 1}, note="SDK retry, identical body"
        )
        return "done"
    if i == 2 and "truncated_stream" in q:
        failed = cc.turn(
            main, turn, failure="truncated_stream", note="stream cut before message_stop"
        )
        cc.turn(
            main,
            turn,
            retry_of=failed,
            wire={"retry_count": 1},
            note="retry after truncated stream",
        )
        return "done"
    if i == 2 and "resend_branch" in q:
        snap = (list(main.messages), list(main.pending), main.tip)
        a = cc.turn(main, turn, note="branch later abandoned")
        b = cc.turn(main, plan[i + 1], note="continued, then abandoned")
        main.messages, main.pending, main.tip = list(snap[0]), list(snap[1]), snap[2]
        cc.turn(main, turn, retry_of=a, note="re-sent request (same body as the abandoned one)")
        for s in (a, b):
            s.state, s.reason = "pruned", "superseded_retry"
        return "done"
    if i == len(plan) - 1 and "ends_in_error" in q:
        f1 = cc.turn(
            main,
            turn,
            status=500,
            failure="failed_http",
            wire={"retry_count": 0},
            note="HTTP 500",
        )
        cc.turn(
            main,
            turn,
            status=500,
            failure="failed_http",
            retry_of=f1,
            wire={"retry_count": 1},
            note="HTTP 500 again; harness gives up",
        )
        return "end"
    if i == 5 and "compaction" in q:
        cc.compact()
        spec = cc.turn(main, turn, note="continuation after compaction")
        spec.linked = cc.continuation_of
        return "done"
    return None


def _rewinds(cc: ClaudeCode) -> None:
    """Nine user rewinds to the same point (the too_many_branches episode)."""
    main = cc.main
    snap = (list(main.messages), list(main.pending), main.tip)
    asks = [
        "Can you also add a short total line at the end of the report?",
        "Please double-check the north region figure.",
        "Make the report title mention the week.",
        "Could you sort the table by revenue instead?",
        "Add the number of orders per region too.",
        "Please round everything to whole dollars.",
        "Write the summary in one sentence for Slack.",
        "List the products that sold fewer than 5 units.",
        "What would next week look like with 10% more units?",
    ]
    for k, ask in enumerate(asks):
        main.messages, main.pending, main.tip = list(snap[0]), list(snap[1]), snap[2]
        reply = f"Sure - here is a quick answer to that ({k + 1}): " + " ".join(
            ["the figures in output/summary.json stay as computed."] * (1 + k % 3)
        )
        cc.send(main, _text(reply), extra=[_user(ask)], note=f"user rewind #{k + 1}")


def _iso(t: float) -> str:
    d = dt.datetime.fromtimestamp(t, tz=dt.UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def record(ep: Episode, spec: Spec) -> dict[str, Any]:
    """The claude-trace line of one call (plus the clawviz object when the episode uses it)."""
    rng = ep.rng
    session = spec.wire.get("session")
    headers = {
        "accept": "application/json",
        "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
        "user-agent": f"claude-cli/{CC_VERSION} (external, cli)",
        "x-api-key": "sk-ant-api…Xq9w",
        "x-app": "cli",
        "x-stainless-retry-count": str(spec.wire.get("retry_count", 0)),
    }
    if session:
        headers["x-claude-code-session-id"] = session
    req_id = "req_011C" + "".join(
        rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789") for _ in range(20)
    )
    resp_headers = {"request-id": req_id}
    if spec.non_model:
        request = {
            "timestamp": spec.t_request,
            "method": spec.wire["method"],
            "url": "https://api.anthropic.com" + spec.wire["path"],
            "headers": headers,
        }
        if spec.wire["method"] == "POST":
            request["body"] = {
                "model": ep.meta.model,
                "messages": spec.wire["count_messages"],
                "system": [{"type": "text", "text": CC_IDENT}],
                "tools": _tool_defs(MAIN_TOOLS),
            }
        response = {
            "timestamp": spec.t_response,
            "status_code": 200,
            "headers": {**resp_headers, "content-type": "application/json"},
            "body": spec.wire["json"],
        }
    else:
        messages = [dict(m) for m in spec.messages]
        last = messages[-1]
        if isinstance(last["content"], list):
            blocks = [dict(b) for b in last["content"]]
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
            messages[-1] = {**last, "content": blocks}
        # cch hashes the request, so it changes every turn but not on an SDK re-send.
        cch = hashlib.sha256(dumps(spec.messages).encode()).hexdigest()[:5]
        billing = {
            "type": "text",
            "text": f"x-anthropic-billing-header: cc_version={CC_VERSION}."
            f"b4e; cc_entrypoint=cli; cch={cch};",
        }
        body: dict[str, Any] = {
            "model": spec.model,
            "messages": messages,
            "system": [billing, *spec.system],
            "max_tokens": 32000 if spec.tools else 512,
        }
        if spec.tools:
            body["tools"] = _tool_defs(spec.tools)
        if session:
            body["metadata"] = {"user_id": f"user_5f2c9a_account__session_{session}"}
        if spec.model == SONNET and spec.tools:
            body["thinking"] = {"type": "enabled", "budget_tokens": 8000}
        stream = bool(spec.wire.get("stream"))
        body["stream"] = stream
        request = {
            "timestamp": spec.t_request,
            "method": "POST",
            "url": "https://api.anthropic.com/v1/messages?beta=true",
            "headers": headers,
            "body": body,
        }
        size = len(dumps(messages)) // 4 + 900
        usage = {
            "input_tokens": rng.randint(3, 12),
            "cache_creation_input_tokens": size // 7,
            "cache_read_input_tokens": size - size // 7,
            "output_tokens": spec.output_tokens,
        }
        msg_id = "msg_01" + "".join(
            rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789")
            for _ in range(22)
        )
        if spec.failure == "failed_http":
            kind = "overloaded_error" if spec.status == 529 else "api_error"
            text = "Overloaded" if spec.status == 529 else "Internal server error"
            response = {
                "timestamp": spec.t_response,
                "status_code": spec.status,
                "headers": {
                    **resp_headers,
                    "content-type": "application/json",
                    "x-should-retry": "true",
                },
                "body": {
                    "type": "error",
                    "error": {"type": kind, "message": text},
                    "request_id": req_id,
                },
            }
        elif stream:
            raw = anthropic_sse(
                rng,
                msg_id=msg_id,
                model=spec.model,
                content=spec.reply["content"],
                stop_reason=spec.stop,
                usage=usage,
                truncate_after=5 if spec.failure == "truncated_stream" else None,
            )
            response = {
                "timestamp": spec.t_response,
                "status_code": 200,
                "headers": {**resp_headers, "content-type": "text/event-stream; charset=utf-8"},
                "body_raw": raw,
            }
        else:
            response = {
                "timestamp": spec.t_response,
                "status_code": 200,
                "headers": {**resp_headers, "content-type": "application/json"},
                "body": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": spec.model,
                    "content": spec.reply["content"],
                    "stop_reason": spec.stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                },
            }
    rec: dict[str, Any] = {
        "request": request,
        "response": response,
        "logged_at": _iso(spec.t_response),
    }
    if spec.failure == "orphaned_request":
        # claude-trace writes requests still unanswered at exit like this.
        rec["response"] = None
        rec["note"] = "ORPHANED_REQUEST - No matching response received"
    if ep.meta.identity == "clawviz":
        rec["clawviz"] = _clawviz(ep, spec)
    return rec


def _clawviz(ep: Episode, spec: Spec) -> dict[str, Any]:
    m = ep.meta
    return {
        "episode_id": m.episode_id,
        "task_id": m.task_id,
        "harness": m.harness,
        "attempt": m.attempt,
        "seq": spec.seq,
        "model_role": m.model_role,
        "delivered": not spec.failed,
    }


def _tool_defs(names: list[str]) -> list[dict[str, Any]]:
    out = []
    for n in names:
        d = TOOL_DEFS[n]
        schema = {
            "type": "object",
            "properties": {k: {"type": "string"} for k in d["required"]},
            "required": d["required"],
        }
        out.append({"name": n, "description": d["description"], "input_schema": schema})
    return out
