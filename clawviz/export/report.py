"""The export report: rows, trained tokens, skipped paths by reason, dataset statistics.

Statistics are per exported trajectory (episode), defined as on the Runs page
(`queries.dataset_stats`), but over the calls the export actually trains: turns = trained
replies; tokens = for each segment, the full context of its last exported call (prompt incl.
cache + output, from usage, else from token ids), summed over segments; tool calls = tool_use
blocks in the trained replies; tool types = distinct tool names among them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from clawviz.store import PAPER_STATS, STAT_LABELS
from clawviz.types import Call, Message


def tool_uses(message: Message | None) -> list[str]:
    """Names of the tool_use blocks of a reply, one per call (as the Runs page counts them)."""
    content = (message or {}).get("content")
    if not isinstance(content, list):
        return []
    return [
        str(b.get("name", "?"))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


def call_context(call: Call) -> int:
    """Prompt (incl. cache) + output tokens of one call: usage, else logged token ids."""
    u = call.usage
    parts = [u.input_tokens, u.output_tokens, u.cache_read_input_tokens]
    parts.append(u.cache_creation_input_tokens)
    if any(p is not None for p in parts):
        return sum(p or 0 for p in parts)
    r = call.rollout
    if r is not None:
        return len(r.prompt_token_ids or []) + len(r.output_token_ids or [])
    return 0


@dataclass
class _Trajectory:
    trained: dict[str, list[str]] = field(default_factory=dict)
    """Trained call id -> tool names its reply used."""
    last_context: dict[int, int] = field(default_factory=dict)


@dataclass
class ExportReport:
    """What an export wrote and skipped."""

    format: str
    path: str
    settings_hash: str
    advantage: str | None = None
    episodes_selected: int = 0
    episodes_exported: int = 0
    paths_exported: int = 0
    rows: int = 0
    bytes: int = 0
    trained_tokens: int = 0
    """RL: loss_mask ones. SFT: generated tokens of the trained replies (usage / token ids)."""
    trained_messages: int = 0
    context_tokens: int = 0
    """RL: loss_mask zeros."""
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_examples: dict[str, list[str]] = field(default_factory=dict)
    splits: Counter[str] = field(default_factory=Counter)
    omitted_blocks: Counter[str] = field(default_factory=Counter)
    rows_shared_prefix_only: int = 0
    calls_without_logprobs: int = 0
    filters: dict[str, Any] = field(default_factory=dict)
    _cur: tuple[str, _Trajectory] | None = field(default=None, repr=False)
    """The episode being added; folded into `_sums` when the next one starts, so the report
    holds a few numbers, not a record per episode (an export's memory stays bounded)."""
    _sums: dict[str, float] = field(default_factory=dict, repr=False)
    _n_traj: int = field(default=0, repr=False)

    def skip(self, code: str, where: str) -> None:
        self.skipped[code] += 1
        examples = self.skipped_examples.setdefault(code, [])
        if len(examples) < 5:
            examples.append(where)

    def add_trajectory(self, episode_id: str, segment: int, calls: list[Call]) -> None:
        """Record the calls one row trains (and its last call's context for its segment).

        An episode's rows are added together (`run_export` adds them episode by episode)."""
        if not calls:
            return
        if self._cur is None or self._cur[0] != episode_id:
            self._fold()
            self._cur = (episode_id, _Trajectory())
        t = self._cur[1]
        for c in calls:
            t.trained.setdefault(c.call_id, tool_uses(c.response))
        ctx = call_context(calls[-1])
        t.last_context[segment] = max(ctx, t.last_context.get(segment, 0))

    def _fold(self) -> None:
        if self._cur is None:
            return
        t = self._cur[1]
        used = [n for names in t.trained.values() for n in names]
        one = {
            "turns": float(len(t.trained)),
            "tokens": float(sum(t.last_context.values())),
            "tool_calls": float(len(used)),
            "tool_types": float(len(set(used))),
        }
        for k, v in one.items():
            self._sums[k] = self._sums.get(k, 0.0) + v
        self._n_traj += 1
        self._cur = None

    def merge(self, other: ExportReport) -> None:
        """Add the counts of another report of the same export (one shard's) to this one."""
        self._fold()
        other._fold()
        for name in (
            "episodes_selected",
            "episodes_exported",
            "paths_exported",
            "rows",
            "bytes",
            "trained_tokens",
            "trained_messages",
            "context_tokens",
            "rows_shared_prefix_only",
            "calls_without_logprobs",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped.update(other.skipped)
        self.splits.update(other.splits)
        self.omitted_blocks.update(other.omitted_blocks)
        for code, examples in other.skipped_examples.items():
            mine = self.skipped_examples.setdefault(code, [])
            mine.extend(examples[: max(0, 5 - len(mine))])
        for k, v in other._sums.items():
            self._sums[k] = self._sums.get(k, 0.0) + v
        self._n_traj += other._n_traj

    @property
    def trajectories(self) -> int:
        """Episodes with at least one exported row."""
        return self._n_traj + (self._cur is not None)

    def stats(self) -> dict[str, dict[str, float | None]]:
        """Per-trajectory means of the exported set next to the paper's figures."""
        self._fold()
        n = self._n_traj
        out: dict[str, dict[str, float | None]] = {}
        for key in PAPER_STATS:
            ours = self._sums.get(key, 0.0) / n if n else None
            out[key] = {"export": ours, "paper": PAPER_STATS[key]}
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "path": self.path,
            "settings_hash": self.settings_hash,
            "advantage": self.advantage,
            "filters": self.filters,
            "episodes_selected": self.episodes_selected,
            "episodes_exported": self.episodes_exported,
            "paths_exported": self.paths_exported,
            "rows": self.rows,
            "bytes": self.bytes,
            "trained_tokens": self.trained_tokens,
            "trained_messages": self.trained_messages,
            "context_tokens": self.context_tokens,
            "skipped_paths": dict(sorted(self.skipped.items())),
            "skipped_examples": self.skipped_examples,
            "splits": dict(sorted(self.splits.items())),
            "rows_shared_prefix_only": self.rows_shared_prefix_only,
            "calls_without_logprobs": self.calls_without_logprobs,
            "omitted_blocks": dict(sorted(self.omitted_blocks.items())),
            "trajectories": self.trajectories,
            "stats_per_trajectory": self.stats(),
        }

    def text(self) -> str:
        """The report as printed by the CLI."""
        lines = [
            f"export {self.format} -> {self.path} ({self.bytes:,} bytes)",
            f"  settings {self.settings_hash}"
            + (f", advantage {self.advantage}" if self.advantage else ""),
            f"  episodes: {self.episodes_exported} exported of {self.episodes_selected} selected;"
            f" paths: {self.paths_exported}; rows: {self.rows}",
        ]
        if self.format == "sft":
            lines.append(
                f"  trained messages: {self.trained_messages}; "
                f"trained tokens (generated, from usage): {self.trained_tokens:,}"
            )
        else:
            lines.append(
                f"  trained tokens: {self.trained_tokens:,}; context tokens: "
                f"{self.context_tokens:,}; splits: "
                + (", ".join(f"{k} {v}" for k, v in sorted(self.splits.items())) or "none")
            )
            if self.calls_without_logprobs:
                lines.append(f"  calls without rollout logprobs: {self.calls_without_logprobs}")
        if self.skipped:
            lines.append(f"  skipped paths: {sum(self.skipped.values())}")
            for code, n in sorted(self.skipped.items()):
                ex = ", ".join(self.skipped_examples.get(code, [])[:2])
                lines.append(f"    {code}: {n}  (e.g. {ex})")
        else:
            lines.append("  skipped paths: 0")
        if self.omitted_blocks:
            lines.append(
                "  blocks not carried: "
                + ", ".join(f"{k} {v}" for k, v in sorted(self.omitted_blocks.items()))
            )
        lines.append(f"  per trajectory ({self.trajectories} trajectories)   export    paper")
        for key, v in self.stats().items():
            ours = "-" if v["export"] is None else f"{v['export']:.2f}"
            lines.append(f"    {STAT_LABELS[key]:<12} {ours:>20} {v['paper']:>8.2f}")
        return "\n".join(lines)
