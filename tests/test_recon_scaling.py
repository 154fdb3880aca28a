"""Tree, classify and prune are linear in calls and messages: 10x the calls (same history
length) costs ~10x the Python-level operations, counted, not timed."""

from __future__ import annotations

import sys
from pathlib import Path

from recon_helpers import Ep, asst, tool_result, tool_use, user

from clawviz.recon.pipeline import analyse_episode

RECON = str(Path(__file__).resolve().parents[1] / "clawviz" / "recon")


def _episode(n_calls: int) -> list:
    """A main thread whose history restarts every 20 calls, with a failed call and its retry
    every 100 calls: the history a call carries stays bounded as the episode grows."""
    ep = Ep(episode_id=f"scale-{n_calls}")
    history = [user("do the task")]
    for i in range(1, n_calls + 1):
        answer = asst(f"step {i}", tool_use("Bash", {"cmd": f"ls {i}"}, f"t{i}"))
        if i % 100 == 0:
            ep.call(history, status=500)
        ep.call(history, answer)
        history = [*history, answer, tool_result(f"t{i}", f"out {i}")]
        if i % 20 == 0:
            history = [user(f"continue from step {i}")]
    return ep.calls


def _operations(calls: list) -> int:
    """Python function calls made inside clawviz/recon while analysing `calls`."""
    count = 0

    def prof(frame, event, arg):
        nonlocal count
        if event == "call" and frame.f_code.co_filename.startswith(RECON):
            count += 1

    sys.setprofile(prof)
    try:
        result = analyse_episode(calls, reward=1.0)
    finally:
        sys.setprofile(None)
    assert len(result.decisions) == len(calls)
    return count


def test_analysis_operations_grow_linearly_with_the_calls():
    small, large = _operations(_episode(200)), _operations(_episode(2000))
    assert small > 1000
    # Linear: 10x the calls, about 10x the work (a quadratic step would give ~100x).
    assert large / small <= 11.5, (small, large)
