"""Rewards and advantages (PIPELINE §5): exact GRPO numbers, PPO returns, importance ratios."""

from __future__ import annotations

import math

import pytest
from recon_helpers import Ep, user, with_rollout

from clawviz.recon.advantage import (
    grpo_advantages,
    importance_ratios,
    ppo_token_advantages,
    reward_from_result,
)
from clawviz.recon.pipeline import analyse_episode, apply_grpo
from clawviz.settings import DEFAULT_SETTINGS

EPS = 1e-6


def test_reward_from_result():
    assert reward_from_result(0.7, {"a": 0.0, "b": 1.0}) == 0.7
    assert reward_from_result(None, {"a": 0.0, "b": 1.0, "c": 1.0}) == pytest.approx(2 / 3)
    assert reward_from_result(None, {}) is None
    assert reward_from_result(None, None) is None
    w = {"checks": 3.0, "rubric": 1.0}
    got = reward_from_result(0.1, {"a": 1.0, "b": 0.0}, {"r": 1.0}, weights=w)
    assert got == pytest.approx((3 * 0.5 + 1 * 1.0) / 4)
    assert reward_from_result(0.1, {"a": 1.0}, {}, weights=w) == pytest.approx(1.0)


def test_grpo_population_std_and_eps():
    adv, stats = grpo_advantages({"a": 1.0, "b": 0.0, "c": 0.5}, {"a": True, "b": True, "c": True})
    mu = 0.5
    sigma = math.sqrt(((0.5) ** 2 + (0.5) ** 2 + 0) / 3)
    assert stats.mean == pytest.approx(mu) and stats.std == pytest.approx(sigma)
    assert adv["a"] == pytest.approx(0.5 / (sigma + EPS))
    assert adv["b"] == pytest.approx(-0.5 / (sigma + EPS))
    assert adv["c"] == pytest.approx(0.0)


def test_grpo_equal_rewards_zero_and_single_valid_zero():
    adv, _ = grpo_advantages({"a": 1.0, "b": 1.0}, {"a": True, "b": True})
    assert adv == {"a": 0.0, "b": 0.0}
    adv, _ = grpo_advantages({"a": 1.0, "b": 0.0}, {"a": True, "b": False})
    assert adv == {"a": 0.0, "b": None}
    adv, _ = grpo_advantages({"a": 1.0, "b": None}, {"a": True, "b": True})
    assert adv == {"a": 0.0, "b": None}


def test_grpo_leave_one_out_and_no_std():
    rewards = {"a": 1.0, "b": 0.0, "c": 0.0, "d": 1.0}
    valid = dict.fromkeys(rewards, True)
    sigma = 0.5
    loo = DEFAULT_SETTINGS.with_(grpo_leave_one_out=True)
    adv, _ = grpo_advantages(rewards, valid, loo)
    assert adv["a"] == pytest.approx((1.0 - 1 / 3) / (sigma + EPS))
    assert adv["b"] == pytest.approx((0.0 - 2 / 3) / (sigma + EPS))
    adv, _ = grpo_advantages(rewards, valid, DEFAULT_SETTINGS.with_(grpo_no_std=True))
    assert adv["a"] == pytest.approx(0.5) and adv["b"] == pytest.approx(-0.5)
    both = DEFAULT_SETTINGS.with_(grpo_no_std=True, grpo_leave_one_out=True)
    adv, _ = grpo_advantages(rewards, valid, both)
    assert adv["a"] == pytest.approx(2 / 3)


def attempt(eid, n_branches, harness="claude_code", task="t1", **kw):
    e = Ep(episode_id=eid, harness=harness)
    root = e.call([user("go")], task_id=task)
    for i in range(n_branches):
        e.turn(root, user(f"branch {i}"), task_id=task, **kw)
    return e.calls


def test_slime_fanout_example_counts_each_attempt_once():
    # Attempt a has three branches (three rows) with reward 1; attempt b has one with reward 0.
    settings = DEFAULT_SETTINGS.with_(branch_policy="all_valid")
    a = analyse_episode(attempt("a", 3), reward=1.0, settings=settings)
    b = analyse_episode(attempt("b", 1), reward=0.0, settings=settings)
    apply_grpo([a, b], {"a": ("t1", "cc"), "b": ("t1", "cc")}, settings)
    # mu = 0.5 (not 0.75), sigma = 0.5.
    assert a.advantage == pytest.approx(0.5 / (0.5 + EPS))
    assert b.advantage == pytest.approx(-0.5 / (0.5 + EPS))
    kept = [p for p in a.paths if p.state == "kept"]
    assert len(kept) == 3 and {p.advantage for p in kept} == {a.advantage}
    assert b.status == "dropped"  # below the SFT threshold, yet still counted by GRPO


def test_abnormal_attempts_excluded_and_harnesses_grouped_apart():
    good1 = analyse_episode(attempt("g1", 1), reward=1.0)
    good2 = analyse_episode(attempt("g2", 1), reward=0.0)
    bad = analyse_episode(attempt("x", 9), reward=1.0)  # too_many_branches
    none = analyse_episode(attempt("n", 1), reward=None)
    other = analyse_episode(attempt("o", 1, harness="openclaw"), reward=1.0)
    group = {k: ("t1", "cc") for k in ("g1", "g2", "x", "n")} | {"o": ("t1", "openclaw")}
    apply_grpo([good1, good2, bad, none, other], group)
    assert good1.advantage == pytest.approx(0.5 / (0.5 + EPS))
    assert good2.advantage == pytest.approx(-0.5 / (0.5 + EPS))
    assert bad.advantage is None and none.advantage is None
    assert other.advantage == 0.0  # alone in its (task, harness) group
    assert all(p.advantage is None for p in bad.paths)


def test_not_longest_paths_get_no_advantage():
    a = analyse_episode(attempt("a", 2), reward=1.0)
    b = analyse_episode(attempt("b", 1), reward=0.0)
    apply_grpo([a, b], {"a": ("t", "h"), "b": ("t", "h")})
    assert [p.advantage is None for p in a.paths] == [p.state == "pruned" for p in a.paths]


def test_ppo_returns_and_values():
    e = Ep()
    cs = e.chain(2)
    with_rollout(cs[0], output_token_ids=[1, 2], values=[0.25, 0.5])
    with_rollout(cs[1], output_token_ids=[3], values=[0.75])
    a = analyse_episode(e.calls, reward=1.0)
    assert a.paths[0].ppo_return == 1.0 and a.paths[0].has_values
    assert a.paths[0].generated_tokens == 3
    assert ppo_token_advantages(cs, 1.0) == [[0.75, 0.5], [0.25]]
    cs[1].rollout.values = None
    assert ppo_token_advantages(cs, 1.0) is None


def test_truncated_importance_ratio_and_clip_fraction():
    e = Ep()
    (c,) = e.chain(1)
    assert importance_ratios(c.rollout) is None
    with_rollout(
        c, output_logprobs=[-1.0, -1.0, -2.0, -0.5], trainer_logprobs=[-1.0, 0.0, -2.5, 0.5]
    )
    stats = importance_ratios(c.rollout, cap=2.0)
    assert stats.ratios == pytest.approx([1.0, 2.0, math.exp(-0.5), 2.0])
    assert stats.clipped_fraction == 0.5


def test_reward_on_every_kept_path_of_every_segment():
    from test_classify import claude_code_compactions

    e, _, _ = claude_code_compactions(2)
    a = analyse_episode(e.calls, reward=0.75, settings=DEFAULT_SETTINGS)
    kept = [p for p in a.paths if p.state == "kept"]
    assert [p.segment for p in kept] == [0, 1, 2]
    assert all(p.ppo_return == 0.75 and p.reward == 0.75 for p in kept)
    b = analyse_episode(attempt("z", 1), reward=0.25)
    apply_grpo([a, b], {"ep1": ("t1", "cc"), "z": ("t1", "cc")})
    assert {p.advantage for p in kept} == {a.advantage} and a.advantage > 0
