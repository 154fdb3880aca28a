"""The Tokens tab of the call inspector: every generated token with its text (when logged),
logprob and truncated importance ratio, the token heatmap, and the per-token PPO advantage.

Token text is log text: `strip_html` escapes every piece (tested with hostile tokens).
"""

from __future__ import annotations

import html

import pandas as pd
import streamlit as st

from clawviz.figures import (
    TokenCell,
    advantage_figure,
    advantage_grid,
    logprob_colour,
    ratio_colour,
    token_cells,
    token_figure,
    token_grid,
)
from clawviz.recon import ImportanceStats, importance_ratios, ppo_token_advantages
from clawviz.types import Call, State
from clawviz.ui import data, state
from clawviz.ui.inspector import escape_md

KEY_TOKEN_COLOUR = "episode_token_colour"
COLOUR_LOGPROB, COLOUR_RATIO = "logprob", "importance ratio"
MAX_STRIP_TOKENS = 2000
"""Tokens drawn in the strip (the table below it has all of them)."""

_STRIP = (
    "font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; "
    "line-height: 1.9; white-space: pre-wrap; word-break: break-word; padding: 8px; "
    "border: 1px solid #d0d7de; border-radius: 6px; max-height: 420px; overflow: auto"
)


def _cell_html(c: TokenCell, colour_by: str, cap: float) -> str:
    if colour_by == COLOUR_RATIO:
        bg = ratio_colour(c.ratio, cap)
    else:
        bg = logprob_colour(c.logprob)
    border = "2px solid #cf222e" if c.clipped else "1px solid #d8dee4"
    extra = "font-size: 11px; color: #57606a; " if c.text is None else ""
    mark = '<sup style="color: #cf222e; font-weight: 700">✂</sup>' if c.clipped else ""
    return (
        f'<span title="{html.escape(c.hover, quote=True)}" style="background: {bg}; '
        f'border: {border}; border-radius: 3px; padding: 0 1px; margin: 0 1px; {extra}">'
        f"{html.escape(c.label)}{mark}</span>"
    )


def strip_html(
    cells: list[TokenCell], colour_by: str, cap: float, max_tokens: int = MAX_STRIP_TOKENS
) -> str:
    """Generated tokens in a row of coloured boxes (hover: id, text, logprob, ratio)."""
    parts = [_cell_html(c, colour_by, cap) for c in cells[:max_tokens]]
    if len(cells) > max_tokens:
        parts.append(
            f'<div style="color: #9a6700">… {len(cells) - max_tokens:,} more tokens in the '
            "table below …</div>"
        )
    return f'<div style="{_STRIP}">{"".join(parts)}</div>'


def token_table(cells: list[TokenCell]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "#": c.index + 1,
                "token id": c.token_id,
                "text": c.text,
                "logprob": c.logprob,
                "ratio": c.ratio,
                "clipped": c.clipped,
            }
            for c in cells
        ],
        columns=["#", "token id", "text", "logprob", "ratio", "clipped"],
    )


def tokens_tab(call: Call, view: data.EpisodeView) -> None:
    r = call.rollout
    if r is None or not (r.output_token_ids or r.prompt_token_ids or r.output_tokens):
        st.info(
            "No token ids were logged for this call (the recorder did not ask the server "
            "for them), so there is no token view."
        )
        return
    grid = token_grid(r.prompt_token_ids, r.output_token_ids, r.output_logprobs)
    has_ids = bool(r.prompt_token_ids or r.output_token_ids)
    cols = st.columns(4)
    if has_ids:
        cols[0].metric("Context tokens (mask 0)", f"{grid.n_context:,}")
        cols[1].metric("Trained tokens (mask 1)", f"{grid.n_trained:,}")
    else:
        cols[0].metric("Generated tokens", f"{len(r.output_tokens or []):,}")
    known = [v for v in r.output_logprobs or [] if v is not None]
    if known:
        cols[2].metric("Mean logprob", f"{sum(known) / len(known):.3f}")
    if r.policy_version is not None:
        cols[3].metric("Policy version", str(r.policy_version))
    cap = float(state.current_settings().is_ratio_cap)
    ratios = importance_ratios(r, cap)
    generated_tokens(call, ratios, cap)
    if has_ids:
        st.caption(
            f"Last {grid.shown_context} context tokens (grey) then every generated token, "
            "shaded by its logprob."
        )
        st.plotly_chart(token_figure(grid), key="episode_token_view", config={"displaylogo": False})
    else:
        st.caption(
            "The log has token text and logprobs but no token ids, so this call cannot be "
            "lined up into training rows (PIPELINE §6 needs ids; text is never re-tokenised)."
        )
    ppo_advantage_view(call, view)


def generated_tokens(call: Call, ratios: ImportanceStats | None, cap: float) -> None:
    """The per-token strip and table of the generated tokens."""
    r = call.rollout
    assert r is not None
    cells = token_cells(
        r.output_token_ids,
        r.output_tokens,
        r.output_logprobs,
        ratios.ratios if ratios else None,
        ratios.clipped if ratios else None,
    )
    st.markdown(f"**Generated tokens ({len(cells):,})**")
    if not cells:
        st.caption("This call generated no tokens.")
        return
    facts = []
    facts.append(
        "token text from the log"
        if r.output_tokens
        else "no token text in the log (ids shown as ⟨id⟩; the reply is never re-tokenised)"
    )
    facts.append("logprobs logged" if r.output_logprobs else "no logprobs logged")
    if ratios is not None:
        n_clipped = sum(ratios.clipped)
        facts.append(
            f"importance ratio min(exp(logp_train − logp_rollout), {cap:g}): mean "
            f"{ratios.mean_ratio:.3f}, clipped {ratios.clipped_fraction:.1%} "
            f"({n_clipped:,} token{'s' if n_clipped != 1 else ''}, marked ✂)"
        )
    elif r.trainer_logprobs is not None:
        facts.append(
            "trainer logprobs logged but not one per generated token with a rollout "
            "logprob, so there is no importance ratio"
        )
    else:
        facts.append("no trainer logprobs logged, so no importance ratio")
    st.caption("; ".join(facts) + ".")
    modes = [COLOUR_LOGPROB] + ([COLOUR_RATIO] if ratios is not None else [])
    colour_by = COLOUR_LOGPROB
    if len(modes) > 1:
        colour_by = (
            st.segmented_control(
                "Colour tokens by", modes, default=COLOUR_LOGPROB, key=KEY_TOKEN_COLOUR
            )
            or COLOUR_LOGPROB
        )
    st.html(strip_html(cells, colour_by, cap))
    st.caption(
        "White: the sampler was sure (p near 1); orange: an unlikely token. Hover a token for "
        "its id, text, logprob and ratio."
        if colour_by == COLOUR_LOGPROB
        else f"White: ratio 1; blue: below 1; orange: above 1, full orange at the cap {cap:g}; "
        "a red frame and ✂ mark a clipped token (its ratio was above the cap)."
    )
    with st.expander("Token table"):
        st.dataframe(
            token_table(cells),
            hide_index=True,
            width="stretch",
            column_config={
                "logprob": st.column_config.NumberColumn(format="%.4f"),
                "ratio": st.column_config.NumberColumn(format="%.3f"),
            },
        )


def ppo_advantage_view(call: Call, view: data.EpisodeView) -> None:
    """Per generated token `A_t = R - V(s_t)` (PIPELINE §5), or why it cannot be shown."""
    st.markdown("**PPO advantage per generated token**")
    values = call.rollout.values if call.rollout else None
    if not values:
        st.info(
            "No value estimates were logged for this call, so there is no per-token advantage: "
            "each kept path carries its return R (gamma = lambda = 1), see the Paths table."
        )
        return
    reward = view.reward
    if reward is None:
        st.info(
            "Value estimates were logged, but this episode has no reward, so A_t = R − V(s_t) "
            "is undefined (a missing reward is never read as 0)."
        )
        return
    d = view.analysis.decisions.get(call.call_id) if view.analysis else None
    if d is None or d.state != State.KEPT:
        state_text = d.state if d else "not analysed"
        st.info(
            f"This call is {escape_md(state_text)}, not on a kept path, so it is not trained "
            "and has no advantage (its logged values are ignored)."
        )
        return
    adv = ppo_token_advantages([call], reward)
    if not adv:
        return
    assert call.rollout is not None
    n_out = len(call.rollout.output_token_ids or [])
    st.caption(
        f"A_t = R − V(s_t) with R = {reward:.3f}: blue above the value estimate, red below; "
        f"mean {sum(adv[0]) / max(len(adv[0]), 1):+.3f} over {len(adv[0]):,} tokens."
        + (
            f" The log has {len(values):,} values for {n_out:,} generated tokens."
            if n_out and len(values) != n_out
            else ""
        )
    )
    grid = advantage_grid(call.rollout.output_token_ids, adv[0], values)
    st.plotly_chart(
        advantage_figure(grid), key="episode_advantage_view", config={"displaylogo": False}
    )
