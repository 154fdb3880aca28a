"""Cost per call and per episode from the reported usage and the `prices` setting, and the
recorder's timings in the explorer payload. Expected dollars are worked out by hand below."""

from __future__ import annotations

import pytest

from clawviz.figures.explorer import build_payload
from clawviz.figures.explorer.cost import call_cost, call_timing, episode_cost, usage_cost
from clawviz.settings import DEFAULT_SETTINGS, Price, Prices, SettingsError, parse_value
from clawviz.types import Call, Usage

TABLE = "claude-opus*=15/75/1.5/18.75; claude-*=3/15/0.3/3.75; gpt-4o*=2.5/10/1.25/0"


def _prices() -> Prices:
    return DEFAULT_SETTINGS.with_(prices=parse_value("prices", TABLE)).prices


def _call(cid: str, model: str | None, endpoint: str = "anthropic_messages", **usage) -> Call:
    return Call(call_id=cid, source_file="f.jsonl", line=1, endpoint=endpoint, model=model,
                usage=Usage(**usage))  # fmt: skip


def test_anthropic_call_cost_by_hand():
    c = _call("a", "claude-sonnet-4-5", input_tokens=1000, output_tokens=500,
              cache_read_input_tokens=20_000, cache_creation_input_tokens=3000)  # fmt: skip
    cost = call_cost(c, _prices())
    assert cost is not None and cost.pattern == "claude-*"
    # 1000 * 3 / 1e6 = 0.003; 500 * 15 / 1e6 = 0.0075; 20000 * 0.3 / 1e6 = 0.006;
    # 3000 * 3.75 / 1e6 = 0.01125; total 0.02775
    assert cost.input == pytest.approx(0.003)
    assert cost.output == pytest.approx(0.0075)
    assert cost.cache_read == pytest.approx(0.006)
    assert cost.cache_write == pytest.approx(0.01125)
    assert cost.total == pytest.approx(0.02775)


def test_openai_prompt_tokens_include_the_cached_ones():
    c = _call("o", "gpt-4o-2024-08-06", "openai_chat", input_tokens=10_000, output_tokens=1000,
              cache_read_input_tokens=4000)  # fmt: skip
    cost = call_cost(c, _prices())
    # uncached 6000 * 2.5 / 1e6 = 0.015; 1000 * 10 / 1e6 = 0.01; 4000 * 1.25 / 1e6 = 0.005
    assert cost is not None
    assert (cost.input, cost.output, cost.cache_read, cost.cache_write) == pytest.approx(
        (0.015, 0.01, 0.005, 0.0)
    )
    assert cost.total == pytest.approx(0.03)


def test_first_matching_row_wins_case_insensitively():
    c = _call("p", "Claude-Opus-4-1", input_tokens=2000, output_tokens=100)
    cost = call_cost(c, _prices())
    # 2000 * 15 / 1e6 = 0.03; 100 * 75 / 1e6 = 0.0075
    assert cost is not None and cost.pattern == "claude-opus*"
    assert cost.total == pytest.approx(0.0375)


def test_no_price_or_no_usage_is_no_cost():
    prices = _prices()
    assert call_cost(_call("x", "llama-3-70b", input_tokens=10, output_tokens=10), prices) is None
    assert call_cost(_call("y", None, input_tokens=10, output_tokens=10), prices) is None
    assert call_cost(_call("z", "claude-x", input_tokens=10), prices) is None, "output unknown"
    assert call_cost(_call("w", "claude-x", output_tokens=10), prices) is None, "input unknown"
    assert call_cost(_call("v", "claude-x", input_tokens=1, output_tokens=1), Prices()) is None
    # Unreported cache counts are no cache use: 100 * 3 / 1e6 + 10 * 15 / 1e6 = 0.00045
    cost = call_cost(_call("u", "claude-x", input_tokens=100, output_tokens=10), prices)
    assert cost is not None and cost.total == pytest.approx(0.00045)


def test_episode_cost_counts_what_it_covers():
    a = usage_cost(Usage(1000, 500, 20_000, 3000), Price("m", 3, 15, 0.3, 3.75),
                   input_includes_cache_read=False)  # fmt: skip
    b = usage_cost(Usage(10_000, 1000, 4000, None), Price("g", 2.5, 10, 1.25, 0),
                   input_includes_cache_read=True)  # fmt: skip
    total = episode_cost([a, None, b])
    assert total == {"total": pytest.approx(0.05775), "priced": 2, "unpriced": 1}
    assert episode_cost([None, None]) is None
    assert episode_cost([]) is None


def test_payload_costs_only_with_a_price_table():
    calls = [
        _call("c1", "claude-sonnet-4", input_tokens=1000, output_tokens=500),
        _call("c2", "mystery-model", input_tokens=1000, output_tokens=500),
    ]
    calls[1].line = 2
    plain = build_payload("e", calls, None)
    assert plain["episode"]["cost"] is None
    assert all(c["cost"] is None for c in plain["calls"])
    priced = build_payload("e", calls, None, prices=_prices())
    by_id = {c["id"]: c for c in priced["calls"]}
    # 1000 * 3 / 1e6 + 500 * 15 / 1e6 = 0.0105
    assert by_id["c1"]["cost"]["total"] == pytest.approx(0.0105)
    assert by_id["c2"]["cost"] is None
    assert priced["episode"]["cost"] == {"total": pytest.approx(0.0105), "priced": 1,
                                         "unpriced": 1}  # fmt: skip


def test_price_table_is_validated_and_round_trips_as_text():
    prices = _prices()
    assert str(prices) == TABLE
    assert DEFAULT_SETTINGS.with_(prices=parse_value("prices", str(prices))).prices == prices
    assert DEFAULT_SETTINGS.prices == Prices(), "empty by default"
    assert DEFAULT_SETTINGS.with_(prices=prices).settings_hash == DEFAULT_SETTINGS.settings_hash
    bad = {
        "m=1/2/3": "takes 4 prices",
        "m=1/2/3/-1": "below the minimum",
        "m=1/2/3/inf": "not a finite number",
        "m=1/1/1/1; M=2/2/2/2": "given twice",
        "=1/1/1/1": "not a model pattern",
        "m": "cannot read",
    }
    for text, words in bad.items():
        with pytest.raises(SettingsError, match=words) as e:
            DEFAULT_SETTINGS.with_(prices=parse_value("prices", text))
        assert "prices" in str(e.value)
    with pytest.raises(SettingsError, match="unknown keys"):
        DEFAULT_SETTINGS.with_(prices={"m*": {"input": 1, "cached": 2}})


def test_timing_from_the_recorder_and_missing_as_none():
    a = _call("a", "m")
    a.t_request, a.t_response = 100.0, 103.5
    a.extra = {"clawviz": {"t_headers": 0.5, "t_first_byte": 1.25, "t_last_byte": 3.4}}
    b = _call("b", "m")
    b.t_request, b.t_response = 101.0, 102.0
    c = _call("c", "m")
    assert call_timing(a, 100.0) == {"start": 0.0, "headers": 0.5, "first_byte": 1.25,
                                     "last_byte": 3.4}  # fmt: skip
    assert call_timing(b, 100.0) == {"start": 1.0, "headers": None, "first_byte": None,
                                     "last_byte": 1.0}  # fmt: skip
    assert call_timing(c, 100.0) == dict.fromkeys(("start", "headers", "first_byte",
                                                   "last_byte"))  # fmt: skip
    b.line, c.line = 2, 3
    p = build_payload("e", [a, b, c], None)
    timing = {x["id"]: x["timing"] for x in p["calls"]}
    assert timing["b"]["start"] == 1.0 and timing["c"]["start"] is None
