"""Reconstruction (pure: no store, no I/O), the rules of docs/PIPELINE.md.

`canonical` (match keys), `markers` (harness marker strings as data), `matchview` (what a
harness sends once and does not keep), `tree` (parent per call by message-prefix trie),
`classify` (roles and segments), `selfcheck` (trees the rules cannot explain), `prune` (states
and reasons), `advantage` (rewards, GRPO, PPO, importance ratios), `tokens` (a kept path lined
up by its logged token ids, split where they drift, PIPELINE §6) and `pipeline` (all of it for
one episode); views over it: `calldiff` (a call against its parent), `align` (two episodes).

The public names below (`__all__`) are imported from their module on first use
(`clawviz._lazy`); callers outside the stage import them from `clawviz.recon`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clawviz._lazy import lazy_api

if TYPE_CHECKING:
    from clawviz.recon.advantage import (
        ImportanceStats,
        grpo_advantages,
        importance_ratios,
        ppo_token_advantages,
        reward_from_result,
    )
    from clawviz.recon.align import GROUPS, Comparison, TurnPair, compare, compare_order
    from clawviz.recon.calldiff import (
        CallDiff,
        DiffLine,
        SectionDiff,
        call_diff,
        call_edits,
        message_lines,
    )
    from clawviz.recon.canonical import (
        block_text,
        dumps_canonical,
        match_key,
        message_hash,
        normalize_blocks,
        strip_cache_control,
    )
    from clawviz.recon.classify import TIP_EXTENSIONS
    from clawviz.recon.edits import tool_ids
    from clawviz.recon.markers import ALL_IGNORE_PATTERNS, HARNESS_MARKERS
    from clawviz.recon.matchview import RULE_CODES, match_view
    from clawviz.recon.pipeline import UNATTACHED, analyse_episode, apply_grpo
    from clawviz.recon.prune import ABNORMAL_CODES, base_role_reason, retry_note
    from clawviz.recon.tokens import DRIFT_KINDS, align_path
    from clawviz.recon.tree import build_call_tree

__all__ = [
    "ABNORMAL_CODES",
    "ALL_IGNORE_PATTERNS",
    "CallDiff",
    "Comparison",
    "DRIFT_KINDS",
    "DiffLine",
    "GROUPS",
    "HARNESS_MARKERS",
    "ImportanceStats",
    "RULE_CODES",
    "SectionDiff",
    "TIP_EXTENSIONS",
    "TurnPair",
    "UNATTACHED",
    "align_path",
    "analyse_episode",
    "apply_grpo",
    "base_role_reason",
    "block_text",
    "build_call_tree",
    "call_diff",
    "call_edits",
    "compare",
    "compare_order",
    "dumps_canonical",
    "grpo_advantages",
    "importance_ratios",
    "match_key",
    "match_view",
    "message_hash",
    "message_lines",
    "normalize_blocks",
    "ppo_token_advantages",
    "retry_note",
    "reward_from_result",
    "strip_cache_control",
    "tool_ids",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "advantage": (
        "ImportanceStats",
        "grpo_advantages",
        "importance_ratios",
        "ppo_token_advantages",
        "reward_from_result",
    ),
    "align": ("Comparison", "GROUPS", "TurnPair", "compare", "compare_order"),
    "calldiff": ("CallDiff", "DiffLine", "SectionDiff", "call_diff", "call_edits", "message_lines"),
    "canonical": (
        "block_text",
        "dumps_canonical",
        "match_key",
        "message_hash",
        "normalize_blocks",
        "strip_cache_control",
    ),
    "classify": ("TIP_EXTENSIONS",),
    "edits": ("tool_ids",),
    "markers": ("ALL_IGNORE_PATTERNS", "HARNESS_MARKERS"),
    "matchview": ("RULE_CODES", "match_view"),
    "pipeline": ("UNATTACHED", "analyse_episode", "apply_grpo"),
    "prune": ("ABNORMAL_CODES", "base_role_reason", "retry_note"),
    "tokens": ("DRIFT_KINDS", "align_path"),
    "tree": ("build_call_tree",),
}
"""Which module holds each public name."""

__getattr__, __dir__ = lazy_api(__name__, _HOMES)
