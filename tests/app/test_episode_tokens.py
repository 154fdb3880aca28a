"""AppTest of the Episode page's token view: per-token PPO advantage with and without values."""

from __future__ import annotations

import json

import pytest
from apphelpers import no_exception, open_page

from clawviz.types import Call, Rollout, Usage
from tests.dburl import fresh_url

EPISODE = "pages/episode.py"
REWARD = 0.75
VALUES = [0.5, 1.0, 0.25, 0.75]
"""V(s_t) of the first call's four generated tokens: A_t = 0.25, -0.25, 0.5, 0.0."""


def _episode(episode_id: str, values: bool) -> list[Call]:
    """Two main calls (tool use, then the answer) with token ids, logprobs and maybe values."""
    user = {"role": "user", "content": [{"type": "text", "text": "list the files"}]}
    reply = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "tu_1", "name": "Bash", "input": {"cmd": "ls"}}],
    }
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "a.txt"}],
    }
    final = {"role": "assistant", "content": [{"type": "text", "text": "a.txt"}]}
    common = {
        "source_file": "ppo.jsonl",
        "endpoint": "anthropic_messages",
        "http_status": 200,
        "episode_id": episode_id,
        "task_id": f"task_{episode_id}",
        "harness": "claude-code",
        "attempt": 1,
        "model": "m",
        "system": "You are an agent.",
        "tools": ["Bash"],
    }
    first = Rollout(
        prompt_token_ids=[1, 2, 3, 4, 5],
        output_token_ids=[10, 11, 12, 13],
        output_logprobs=[-0.1, -0.2, -0.3, -0.4],
        trainer_logprobs=[-0.1, -0.2, -0.3, -0.4],
        values=VALUES if values else None,
        policy_version=3,
    )
    second = Rollout(
        prompt_token_ids=[1, 2, 3, 4, 5, 10, 11, 12, 13, 20],
        output_token_ids=[30, 31],
        output_logprobs=[-0.5, -0.6],
        values=[0.7, 0.8] if values else None,
    )
    return [
        Call(call_id=f"{episode_id}:1", line=1, seq=1, t_request=1.0, t_response=2.0,
             messages=[user], response=reply, usage=Usage(5, 4), rollout=first, **common),
        Call(call_id=f"{episode_id}:2", line=2, seq=2, t_request=3.0, t_response=4.0,
             messages=[user, reply, result], response=final, usage=Usage(10, 2),
             rollout=second, **common),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def ppo_db_url(tmp_path_factory) -> str:
    """Episode `ppo-ep` logs values and has a reward; `plain-ep` logs no values."""
    from sqlmodel import Session

    from clawviz.jobs.analyse import ensure_analysis
    from clawviz.store import calls as store
    from clawviz.store import models
    from clawviz.store.db import get_engine

    url = fresh_url(tmp_path_factory.mktemp("ppo_store"), "clawviz")
    with Session(get_engine(url)) as s:
        source = models.Source(path="ppo.jsonl", sha256="ppo", format="exchange")
        s.add(source)
        s.commit()
        s.refresh(source)
        store.write_calls(s, _episode("ppo-ep", True) + _episode("plain-ep", False), source)
        store.refresh_episodes(s, ["ppo-ep", "plain-ep"])
        for eid in ("ppo-ep", "plain-ep"):
            s.add(models.Result(episode_id=eid, task_id=f"task_{eid}", reward=REWARD))
        s.commit()
        ensure_analysis(s)
    return url


def _chart(at, key: str) -> dict | None:
    for chart in at.get("plotly_chart"):
        if getattr(chart, "key", None) == key:
            return json.loads(chart.proto.spec)
    return None


def test_logged_values_show_r_minus_v_per_generated_token(ppo_db_url, on_store):
    on_store(ppo_db_url)
    at = open_page(EPISODE, episode="ppo-ep", call="ppo-ep:1", panel="tokens")
    no_exception(at)
    spec = _chart(at, "episode_advantage_view")
    assert spec is not None, [i.value for i in at.info]
    heat = spec["data"][0]
    assert heat["z"][0][:4] == [REWARD - v for v in VALUES]
    assert heat["z"][0][4:] == [None] * 28
    assert (heat["zmin"], heat["zmax"]) == (-0.5, 0.5)
    assert "out 11 · V 1.000 · A_t -0.250" in heat["text"][0]
    captions = " ".join(c.value for c in at.caption)
    assert "R = 0.750" in captions and "over 4 tokens" in captions
    # Trainer and rollout logprobs agree: every ratio is 1, none clipped.
    assert "mean 1.000, clipped 0.0%" in captions
    assert not any("No value estimates" in i.value for i in at.info)


def test_no_values_says_so_and_draws_no_advantage(ppo_db_url, on_store):
    on_store(ppo_db_url)
    at = open_page(EPISODE, episode="plain-ep", call="plain-ep:2", panel="tokens")
    no_exception(at)
    assert _chart(at, "episode_token_view") is not None
    assert _chart(at, "episode_advantage_view") is None
    assert any("No value estimates were logged for this call" in i.value for i in at.info)
