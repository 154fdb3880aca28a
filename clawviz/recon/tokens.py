"""Token alignment of a kept path (PIPELINE §6): clean appends merge, any drift splits a row.

Sampled output is never re-tokenised: rows are built only from the logged prompt and output
token ids. New prompt tokens are context (mask 0); outputs are trained (mask 1) with their
rollout logprobs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from clawviz.types import Call

DRIFT_KINDS = ("template", "retoken", "other")


@dataclass
class TrainingRow:
    """One training sequence: tokens, loss mask, rollout logprobs (None on context tokens)."""

    call_ids: list[str]
    tokens: list[int]
    mask: list[int]
    logprobs: list[float | None]
    output_spans: list[tuple[int, int]] = field(default_factory=list)
    """[start, end) of each call's output in `tokens`."""
    split_reason: str | None = None
    """Why the NEXT row could not continue this one (template | retoken | other)."""
    split_at: int | None = None
    """Token position of the first mismatch that caused the split."""

    @property
    def n_trained(self) -> int:
        return sum(self.mask)

    @property
    def n_context(self) -> int:
        return len(self.mask) - sum(self.mask)


@dataclass
class PathAlignment:
    """The rows of one path, split counters, and the calls that had no token ids."""

    rows: list[TrainingRow]
    splits: Counter[str]
    missing: list[str]
    """Calls of the path without prompt/output token ids (not aligned)."""


def _lcp(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def classify_drift(row: TrainingRow, at: int) -> str:
    """`retoken` inside the last output, `other` inside an earlier output, else `template`."""
    for k, (start, end) in enumerate(row.output_spans):
        if start <= at < end or (k == len(row.output_spans) - 1 and at == end):
            return "retoken" if k == len(row.output_spans) - 1 else "other"
    return "template"


def _new_row(call: Call, prompt: list[int]) -> TrainingRow:
    return TrainingRow([], list(prompt), [0] * len(prompt), [None] * len(prompt))


def _append_output(row: TrainingRow, call: Call) -> None:
    r = call.rollout
    assert r is not None and r.output_token_ids is not None
    out = r.output_token_ids
    lps: list[float | None] = list(r.output_logprobs or [])
    if len(lps) != len(out):
        lps = [None] * len(out)
    start = len(row.tokens)
    row.tokens.extend(out)
    row.mask.extend([1] * len(out))
    row.logprobs.extend(lps)
    row.output_spans.append((start, len(row.tokens)))
    row.call_ids.append(call.call_id)


def align_path(calls: list[Call]) -> PathAlignment:
    """Line the calls of one kept path up by token ids into training rows."""
    rows: list[TrainingRow] = []
    splits: Counter[str] = Counter()
    missing: list[str] = []
    cur: TrainingRow | None = None
    for call in calls:
        r = call.rollout
        if r is None or r.prompt_token_ids is None or r.output_token_ids is None:
            missing.append(call.call_id)
            continue
        prompt = r.prompt_token_ids
        if cur is None:
            cur = _new_row(call, prompt)
        elif prompt[: len(cur.tokens)] == cur.tokens:
            extra = prompt[len(cur.tokens) :]
            cur.tokens.extend(extra)
            cur.mask.extend([0] * len(extra))
            cur.logprobs.extend([None] * len(extra))
        else:
            at = _lcp(cur.tokens, prompt)
            kind = classify_drift(cur, at)
            cur.split_reason, cur.split_at = kind, at
            splits[kind] += 1
            rows.append(cur)
            cur = _new_row(call, prompt)
        _append_output(cur, call)
    if cur is not None:
        rows.append(cur)
    return PathAlignment(rows, splits, missing)
