"""RL rows: each kept path lined up by its logged token ids, split where alignment breaks.

The rows are `clawviz.recon.tokens.align_path`'s training rows (PIPELINE §6): the logged prompt ids
and the sampled output ids, never re-tokenised; outputs are mask 1 with their rollout logprobs,
everything else mask 0 with no logprob. A path is exported only when every call on it has both
prompt and output token ids: a gap would leave that call's sampled tokens untrained (they would
arrive as context of the next prompt) and there is nothing to fill it with but a re-tokenisation.

With `branch_policy = all_valid` paths of one segment share their first calls; each shared
call's output is trained by the first path (in the stored path order) and is context (mask 0)
in the later ones, which carry the `prefix_id`. A row left with no trained token is not written.
"""

from __future__ import annotations

from typing import Literal

from clawviz.export.sft import PathRows, exportable_paths, prefix_id, row_header
from clawviz.export.source import EpisodeData
from clawviz.recon import align_path, ppo_token_advantages
from clawviz.types import Call, PathInfo

AdvantageKind = Literal["grpo", "ppo"]


def missing_tokens(calls: list[Call]) -> tuple[str, str] | None:
    """Why a path has no usable token ids: (code, evidence), or None when all calls have them."""

    def has(c: Call, name: str) -> bool:
        return c.rollout is not None and getattr(c.rollout, name) is not None

    no_prompt = [c.call_id for c in calls if not has(c, "prompt_token_ids")]
    no_output = [c.call_id for c in calls if not has(c, "output_token_ids")]
    if not no_prompt and not no_output:
        return None
    n = len(calls)
    if len(no_prompt) == n and len(no_output) == n:
        return "no_token_ids", f"none of the {n} calls logged token ids"
    if len(no_prompt) == n:
        return "no_prompt_token_ids", f"output ids logged, prompt ids on none of the {n} calls"
    bad = sorted(set(no_prompt) | set(no_output), key=[c.call_id for c in calls].index)
    return "partial_token_ids", f"{len(bad)} of {n} calls without token ids (first {bad[0]})"


def _advantage(
    ep: EpisodeData, path: PathInfo, calls: list[Call], kind: AdvantageKind
) -> tuple[float | None, str, list[list[float]] | None]:
    if kind == "grpo":
        return path.advantage, "grpo", None
    ret = path.ppo_return if path.ppo_return is not None else ep.reward
    per = ppo_token_advantages(calls, ret) if ret is not None and path.has_values else None
    return ret, ("ppo_values" if per is not None else "ppo_return"), per


def rl_rows(ep: EpisodeData, settings_hash: str, advantage: AdvantageKind = "grpo") -> PathRows:
    """RL rows of one episode's kept paths."""
    out = PathRows()
    claimed: set[str] = set()
    for path, ready, n_shared in exportable_paths(ep, out, missing_tokens):
        pid = prefix_id(ep.episode_id, path, n_shared)
        by_id = {c.call_id: c for c in ready}
        adv, adv_kind, per_call = _advantage(ep, path, ready, advantage)
        per_of = dict(zip(path.call_ids, per_call, strict=True)) if per_call else {}
        alignment = align_path(ready)
        trained_here: list[str] = []
        for k, row in enumerate(alignment.rows):
            mask = list(row.mask)
            logprobs = list(row.logprobs)
            token_adv: list[float | None] | None = [None] * len(mask) if per_of else None
            own: list[str] = []
            for cid, (start, end) in zip(row.call_ids, row.output_spans, strict=True):
                if cid in claimed:
                    mask[start:end] = [0] * (end - start)
                    logprobs[start:end] = [None] * (end - start)
                    continue
                own.append(cid)
                values = per_of.get(cid)
                if token_adv is not None and values is not None and len(values) == end - start:
                    token_adv[start:end] = values
            if not own:
                out.shared_only += 1
                continue
            trained_here.extend(own)
            drift = alignment.rows[k - 1].split_reason if k else None
            out.rows.append(
                {
                    **row_header(
                        ep, path, "rl", f"{ep.episode_id}/{path.path_id}/{k}", settings_hash
                    ),
                    "split": k,
                    "n_splits": len(alignment.rows),
                    "drift_reason": drift,
                    "advantage": adv,
                    "advantage_kind": adv_kind,
                    "call_ids": own,
                    "input_ids": list(row.tokens),
                    "loss_mask": mask,
                    "rollout_logprobs": logprobs,
                    "token_advantages": token_adv,
                    "policy_versions": sorted(
                        {v for c in own if (v := by_id[c].rollout.policy_version) is not None}  # type: ignore[union-attr]
                    ),
                    "prefix_id": pid,
                }
            )
        claimed.update(trained_here)
        out.trained_calls.append((path.segment, trained_here))
    return out
