"""Cost of a call and of an episode from the usage the server reported, priced by the `prices`
setting (per million tokens; `clawviz.settings.Prices`), and the recorder's timings of a call.

Never a made-up number: a call whose model no price row matches, or whose input or output count
the server did not report, has no cost (None), and the episode's total says how many calls it
covers. A cache count the server did not report is no cache use (0 tokens). OpenAI endpoints
count cached prompt tokens inside the prompt tokens, so their uncached input is the prompt
tokens less the cached ones; Anthropic reports the three apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clawviz.settings import Price, Prices
from clawviz.types import Call, Usage

INPUT_INCLUDES_CACHE_READ = frozenset({"openai_chat", "openai_responses"})
"""Endpoints whose reported input count includes the cache-read tokens."""


@dataclass(frozen=True)
class CallCost:
    """Dollars of one call, by part, and the price row that priced it."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    pattern: str

    @property
    def total(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "pattern": self.pattern,
        }


def usage_cost(usage: Usage, price: Price, *, input_includes_cache_read: bool) -> CallCost | None:
    """The cost of one response's usage at `price` (None when input or output is unknown)."""
    if usage.input_tokens is None or usage.output_tokens is None:
        return None
    cache_read = usage.cache_read_input_tokens or 0
    cache_write = usage.cache_creation_input_tokens or 0
    uncached = usage.input_tokens - cache_read if input_includes_cache_read else usage.input_tokens
    per = 1_000_000
    return CallCost(
        input=max(uncached, 0) * price.input / per,
        output=usage.output_tokens * price.output / per,
        cache_read=cache_read * price.cache_read / per,
        cache_write=cache_write * price.cache_write / per,
        pattern=price.pattern,
    )


def call_cost(call: Call, prices: Prices) -> CallCost | None:
    """The cost of one call: its model's first matching price row and its reported usage."""
    price = prices.price_for(call.model)
    if price is None:
        return None
    return usage_cost(
        call.usage, price, input_includes_cache_read=call.endpoint in INPUT_INCLUDES_CACHE_READ
    )


def episode_cost(costs: list[CallCost | None]) -> dict[str, Any] | None:
    """The episode's total over the calls that have a cost, and how many do not (None: none do)."""
    known = [c for c in costs if c is not None]
    if not known:
        return None
    return {
        "total": sum(c.total for c in known),
        "priced": len(known),
        "unpriced": len(costs) - len(known),
    }


def _seconds(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v < 0:
        return None
    return float(v)


def call_timing(call: Call, t0: float | None) -> dict[str, float | None]:
    """Where a call sits on the episode's wall clock: `start` (seconds after the episode's first
    request), and from its own start `headers` (the upstream answered: the time queued and
    thinking), `first_byte` and `last_byte` from the recorder (`clawviz.t_*`), `end` from the
    logged response time when the recorder has no last byte. Missing values are None."""
    found = call.extra.get("clawviz")
    cz: dict[str, Any] = found if isinstance(found, dict) else {}
    start = call.t_request - t0 if call.t_request is not None and t0 is not None else None
    last = _seconds(cz.get("t_last_byte"))
    if last is None and call.t_response is not None and call.t_request is not None:
        last = _seconds(call.t_response - call.t_request)
    return {
        "start": start,
        "headers": _seconds(cz.get("t_headers")),
        "first_byte": _seconds(cz.get("t_first_byte")),
        "last_byte": last,
    }
