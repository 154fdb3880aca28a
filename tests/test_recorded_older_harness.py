"""The rig pieces the older-release recordings added (tests/harness/): the scripted server's
indexed tool-output placeholder, as used by codex-0.169.1/parallel-subagents-one-wait."""

from __future__ import annotations

import json

from tests.harness import recorded
from tests.harness.scenario import fill
from tests.harness.server import make_view

_BODY = {
    "model": "scripted-model",
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "function_call", "call_id": "m1_0", "name": "spawn_agent", "arguments": "{}"},
        {"type": "function_call", "call_id": "m1_1", "name": "spawn_agent", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "m1_0", "output": '{"agent_id": "A-1"}'},
        {"type": "function_call_output", "call_id": "m1_1", "output": '{"agent_id": "B-2"}'},
        {"type": "function_call", "call_id": "m2_0", "name": "exec_command", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "m2_0", "output": "done"},
    ],
}


def _view():
    raw = json.dumps(_BODY)
    return make_view("/v1/responses", "POST", {}, _BODY, raw)


def test_indexed_placeholders_take_the_kth_tool_result():
    args = {"targets": ["{{output[-3].agent_id}}", "{{output[-2].agent_id}}"], "n": 1}
    assert fill(args, _view()) == {"targets": ["A-1", "B-2"], "n": 1}
    assert fill("{{output[0].agent_id}}", _view()) == "A-1"


def test_a_placeholder_that_does_not_resolve_stays_as_written():
    # the last tool result is not JSON, and there is no 9th one
    assert fill("{{last_output.agent_id}}", _view()) == "{{last_output.agent_id}}"
    assert fill("{{output[9].agent_id}}", _view()) == "{{output[9].agent_id}}"
    assert fill("{{output[-1].agent_id}}", _view()) == "{{output[-1].agent_id}}"


def test_every_new_recording_names_its_release_in_its_folder():
    """The older releases sit beside the newest, each in `<harness>-<version>/`."""
    names = {f.parent.name for f in recorded.folders()}
    assert {"openclaw-2026.8.2", "claude-code-2.1.20", "codex-0.169.1"} <= names
    for name in ("openclaw-2026.8.2", "claude-code-2.1.20", "codex-0.169.1"):
        version = name.rsplit("-", 1)[1]
        for f in recorded.folders(name):
            scenario = json.loads((f / "scenario.json").read_text())
            assert version in scenario.get("note", "") or version in json.dumps(
                scenario.get("versions", scenario.get("openclaw", {}))
            ), f
