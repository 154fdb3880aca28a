"""Where clawviz, not the recording, is wrong today: strict xfails for recorded-traffic tests.

Several test files parametrize over every committed recording (`tests/test_export.py`,
`tests/test_recorded_claude_code.py`, `tests/test_recorded_pi_codex.py`, ...). When a new
recording shows a reconstruction bug, its expected file stays as the scenario and the server
log say, and the tests that meet the bug are marked here, once, with the exact call and how it
is wrong: `pytest.mark.xfail(strict=True, reason=...)`, so the mark must go the day the
reconstruction is fixed (an XPASS fails the run). Loaded as a plugin by `tests/conftest.py`.

KNOWN_WRONG: recording id (`<harness>-<version>/<scenario>`) -> {test function name: reason}.
A test is matched when its name is a key and its parametrize id contains the recording id.
"""

from __future__ import annotations

import pytest

_OC82_AFTER_COMPACTION = (
    "after the overflow compaction (summary1, line 9) OpenClaw 2026.8.2 re-renders b1's "
    "history: the transient retry prompt 'Continue from the current transcript ...' of line 10 "
    "is gone and '[assistant turn failed before producing content]' is joined to b1's reply; "
    "clawviz finds no parent for flush2 (line 11), hb (line 12) and c1 (line 13), takes each "
    "for a main root after summary1 and prunes them as not_longest (want: flush2 "
    "aux_memory_flush and hb aux_heartbeat under b1, c1 kept under hb); in segment 2 the memory "
    "flush flush3 (line 16) is taken for the main tip and kept after d1 (want aux_memory_flush)"
)

_OC82_HB = (
    "OpenClaw 2026.8.2 runs a pre-compaction memory flush (flush, line 3) on a2's history, "
    "then compacts (summary1, line 4); clawviz takes the flush for the main tip of segment 0 "
    "(kept after a2; want aux_memory_flush, and summary1 linked to a2, not to flush). The "
    "heartbeat hb (line 5) is the first request on the compacted history (summary + queued "
    "heartbeat): clawviz takes it for a main root after summary1 (pruned not_longest; want "
    "aux_heartbeat linked to summary1), and b1-a1 / b1 (lines 6-7), whose history is the "
    "summary, hb's poll line and reply, then TASK-TWO, for a second root after the same "
    "compaction (parent none, link summary1; want parent hb)"
)

KNOWN_WRONG: dict[str, dict[str, str]] = {
    "openclaw-2026.8.2/heartbeat-after-compaction": {
        "test_the_self_check_flags_no_committed_recording": (
            "the rebuild is wrong (below) and the stricter self-check says so: main call 6 (b1-a1) "
            "is a second root after compaction 4, whose one continuation is call 5 (hb): "
            + _OC82_HB
        ),
        "test_wire_and_transcripts_together_are_one_session": (
            "the wire's rebuild is wrong (below), so the transcript's cross-check disagrees: "
            "calls 7 and 8 kept on the wire, pruned by the transcript: " + _OC82_HB
        ),
        "test_every_call_gets_the_decision_the_server_made_happen": _OC82_HB,
        "test_threads_group_calls_as_the_server_saw_them": (
            "flush and hb are put in the main thread: " + _OC82_HB
        ),
        "test_episode_status_reasons_and_kept_path_per_segment": (
            "kept paths [[a1, a2, flush], [b1, c1]], want [[a1, a2], [b1, c1]]: " + _OC82_HB
        ),
        "test_transcripts_of_the_run_load_and_agree_with_the_wire": (
            "the wire's kept path per segment has 3, 2 calls (want 2, 2): " + _OC82_HB
        ),
        "test_recorded_traffic_exports": (
            "the SFT rows train [a1, a2, flush], [b1, c1] (want [a1, a2], [b1, c1]): " + _OC82_HB
        ),
    },
    "openclaw-2026.8.2/compaction-after-failure": {
        "test_the_self_check_flags_no_committed_recording": (
            "the rebuild is wrong (below) and the stricter self-check says so: main calls 11 and "
            "13 are second roots after compaction 9, whose one continuation is call 10: "
            + _OC82_AFTER_COMPACTION
        ),
        "test_wire_and_transcripts_together_are_one_session": (
            "the wire's rebuild is wrong (below), so the transcript's cross-check disagrees on "
            "the kept calls: " + _OC82_AFTER_COMPACTION
        ),
        "test_every_call_gets_the_decision_the_server_made_happen": (
            _OC82_AFTER_COMPACTION + "; besides, flush1 (line 3, the pre-compaction memory flush "
            "on a private copy of TASK-ONE + 'Turn yielded.' without a1/a2's tool calls) is "
            "taken for aux_subagent with no parent (want aux_memory_flush under a2), and b-500 / "
            "b-overflow (lines 7-8) get parent a2 instead of ann: their history joins the flush "
            "prompt and the announce message into one user message, then ann's reply"
        ),
        "test_threads_group_calls_as_the_server_saw_them": (
            "flush2, hb and flush3 are put in the main thread and flush1 in a sub-agent thread: "
            + _OC82_AFTER_COMPACTION
        ),
        "test_episode_status_reasons_and_kept_path_per_segment": (
            "kept paths [[a1, a2, ann], [b1], [d1, flush3]], want [[a1, a2, ann], [b1, c1], "
            "[d1]]: " + _OC82_AFTER_COMPACTION
        ),
        "test_transcripts_of_the_run_load_and_agree_with_the_wire": (
            "the wire's kept path per segment has 3, 1, 2 calls (want 3, 2, 1): "
            + _OC82_AFTER_COMPACTION
        ),
        "test_recorded_traffic_exports": (
            "the SFT rows train [a1, a2, ann], [b1], [d1, flush3] (want [a1, a2, ann], [b1, c1], "
            "[d1]): " + _OC82_AFTER_COMPACTION
        ),
    },
}


def reason_for(test_name: str, param_id: str) -> str | None:
    for rec, tests in KNOWN_WRONG.items():
        if rec in param_id and test_name in tests:
            return tests[test_name]
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            continue
        why = reason_for(getattr(item, "originalname", item.name), callspec.id)
        if why:
            item.add_marker(pytest.mark.xfail(strict=True, reason=why))
