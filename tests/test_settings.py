"""Typed settings: validated on construction, frozen and hashable, read by the CLI's --set."""

from __future__ import annotations

import dataclasses
import json

import pytest

from clawviz.cli.main import main
from clawviz.settings import (
    DEFAULT_SETTINGS,
    SETTINGS,
    Settings,
    SettingsError,
    parse_assignment,
)


def test_a_string_for_an_integer_is_refused_with_the_setting_named():
    with pytest.raises(SettingsError, match=r"max_leaves takes an integer, not str '9'"):
        DEFAULT_SETTINGS.with_(max_leaves="9")


@pytest.mark.parametrize(
    "changes, match",
    [
        ({"max_leaves": 0}, "max_leaves: 0 is below the minimum 1"),
        ({"max_leaves": True}, "max_leaves takes an integer"),
        ({"reward_threshold": 1.5}, "reward_threshold: 1.5 is above the maximum 1.0"),
        ({"reward_threshold": float("nan")}, "not a finite number"),
        ({"branch_policy": "widest"}, "widest' is not one of longest, all_valid"),
        ({"unsupported_tools": "canvas"}, "list of names"),
        ({"grpo_no_std": "yes"}, "true or false"),
        ({"reward_weights": {"checks": -1}}, "below the minimum"),
        ({"reward_weights": {"judge": 1}}, "unknown keys"),
        ({"nonsense": 1}, "unknown settings"),
    ],
)
def test_bad_values_are_refused(changes, match):
    with pytest.raises(SettingsError, match=match):
        DEFAULT_SETTINGS.with_(**changes)


def test_settings_are_frozen_hashable_and_equal_by_value():
    a = DEFAULT_SETTINGS.with_(reward_weights={"checks": 1, "rubric": 3}, unsupported_tools=["x"])
    b = Settings(reward_weights={"checks": 1.0, "rubric": 3.0}, unsupported_tools=("x",))
    assert a == b and hash(a) == hash(b) and len({a, b, DEFAULT_SETTINGS}) == 2
    assert a.settings_hash == b.settings_hash != DEFAULT_SETTINGS.settings_hash
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.max_leaves = 3  # type: ignore[misc]


def test_settings_hash_ignores_settings_that_do_not_change_decisions():
    assert (
        DEFAULT_SETTINGS.with_(checker_timeout_s=5).settings_hash == DEFAULT_SETTINGS.settings_hash
    )
    for s in SETTINGS:
        if not s.affects_decisions and s.kind == "float":
            other = DEFAULT_SETTINGS.with_(**{s.name: s.default / 2})
            assert other.settings_hash == DEFAULT_SETTINGS.settings_hash, s.name


def test_every_setting_has_help_and_a_valid_default():
    for s in SETTINGS:
        assert s.help, s.name
        assert getattr(DEFAULT_SETTINGS, s.name) == s.default


@pytest.mark.parametrize(
    "text, name, value",
    [
        ("max_leaves=12", "max_leaves", 12),
        ("grpo_no_std=true", "grpo_no_std", True),
        ("unsupported_tools=canvas, browser", "unsupported_tools", ("canvas", "browser")),
        ("reward_weights=checks=1,rubric=3", "reward_weights", {"checks": 1.0, "rubric": 3.0}),
        ("reward_weights=none", "reward_weights", None),
    ],
)
def test_command_line_assignments_are_typed(text, name, value):
    assert parse_assignment(text) == (name, value)
    assert getattr(DEFAULT_SETTINGS.with_(**dict([parse_assignment(text)])), name) == value


@pytest.mark.parametrize(
    "argv",
    [
        ["settings"],
        ["episodes"],
        ["explain", "x"],
        ["tasks"],
        ["ingest", "nowhere"],
        ["review", "t", "--decision", "accept", "--reviewer", "a"],
    ],
)
def test_every_command_takes_set_and_refuses_a_bad_value(capsys, tmp_path, argv):
    db = f"sqlite:///{tmp_path / 'c.db'}"
    code = main(["--db", db, *argv[:1], "--set", "max_leaves=abc", *argv[1:]])
    err = capsys.readouterr().err
    assert code == 1 and "max_leaves" in err and "'abc'" in err


def test_set_changes_what_a_command_uses(capsys):
    assert main(["settings", "--json", "--set", "difficulty_small_max=0.4"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["difficulty_small_max"]["value"] == 0.4
    assert rows["difficulty_small_max"]["default"] == 0.6
