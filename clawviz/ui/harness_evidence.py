"""Which evidence named an episode's harness (issue 29 §3), and the session cross-check (§4), as
lines of the Episode page.

Every call keeps why it got its harness in `Call.extra["harness_evidence"]` (set at ingest by
`clawviz.ingest.identity`: a system-prompt marker, a tool only one harness defines, the
user-agent, a header, the markers of an OpenClaw session file, the transcript format, or the
recorder's metadata). This module sums that evidence over the episode's calls, so a reader sees
not only "harness: openclaw" but what in the traffic said so, and whether some calls said
another harness or nothing. `python -m clawviz explain EPISODE --json` lists the same evidence
per call (`harness`, `harness_evidence`). When a wire log and a transcript of one session are
both loaded, the wire episode says which transcript cross-checks it and whether they agree, and
the transcript episode names the wire episode it is linked to (`clawviz.jobs.sessions`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clawviz.types import Call

if TYPE_CHECKING:
    from clawviz.ui.data import EpisodeView

EVIDENCE_KEY = "harness_evidence"
SHOWN = 3
"""Distinct pieces of evidence named in the line (the rest are counted)."""


@dataclass(frozen=True)
class HarnessEvidence:
    """The episode's harness and the evidence its calls carry for it."""

    harness: str | None
    sources: tuple[tuple[str, int], ...]
    """(evidence, calls naming the episode's harness with it), most calls first."""
    calls: int
    """Calls considered: model calls (non-model endpoints such as `GET /v1/models` say
    nothing about the harness)."""
    without: int
    """Of those, calls that carry no evidence (stored before evidence was kept, or no marker)."""
    others: tuple[tuple[str, int], ...]
    """Other harnesses some calls were given, with their counts."""


def _norm(harness: str | None) -> str:
    return (harness or "").strip().lower().replace("_", "-")


def episode_evidence(episode: Mapping[str, Any], calls: Sequence[Call]) -> HarnessEvidence:
    """Sum the calls' harness evidence for the episode's harness (`episode["harness"]`, else
    the harness most of its calls were given)."""
    model = [c for c in calls if c.endpoint != "non_model"] or list(calls)
    named = Counter(c.harness for c in model if c.harness)
    harness = episode.get("harness") or (named.most_common(1)[0][0] if named else None)
    own = _norm(harness)
    sources: Counter[str] = Counter()
    others: Counter[str] = Counter()
    without = 0
    for c in model:
        if c.harness and _norm(c.harness) != own:
            others[c.harness] += 1
            continue
        text = (c.extra or {}).get(EVIDENCE_KEY)
        if isinstance(text, str) and text.strip():
            sources[text.strip()] += 1
        else:
            without += 1
    ordered = tuple(sorted(sources.items(), key=lambda kv: (-kv[1], kv[0])))
    return HarnessEvidence(
        harness=harness,
        sources=ordered,
        calls=len(model),
        without=without,
        others=tuple(sorted(others.items(), key=lambda kv: (-kv[1], kv[0]))),
    )


def _calls(n: int) -> str:
    return f"{n} call{'s' if n != 1 else ''}"


def evidence_text(ev: HarnessEvidence) -> str:
    """One plain-text line: `harness: X — from: <evidence> (n of N calls); ...`."""
    if ev.harness is None:
        if not ev.calls:
            return "harness: — (the episode has no calls)"
        return f"harness: — (nothing in the traffic of its {_calls(ev.calls)} names one)"
    parts = [f"{text} ({n} of {ev.calls})" for text, n in ev.sources[:SHOWN]]
    rest = ev.sources[SHOWN:]
    if rest:
        parts.append(f"{len(rest)} more ({sum(n for _, n in rest)} of {ev.calls})")
    if ev.without:
        parts.append(f"no evidence kept ({ev.without} of {ev.calls})")
    if not ev.sources:
        parts = [
            "no call carries evidence for it (set by the results line or an older ingest; "
            "re-ingest to record the evidence)"
        ]
    line = f"harness: {ev.harness} — from: " + "; ".join(parts)
    if ev.others:
        named = ", ".join(f"{h} ({_calls(n)})" for h, n in ev.others)
        line += f". Other harnesses named by some calls: {named}"
    return line


SHOWN_DISAGREEMENTS = 3


def session_text(episode: Mapping[str, Any]) -> tuple[str, bool] | None:
    """The episode's place in its session (issue 29 §4), and whether it needs a look: a
    transcript linked to its wire episode (`primary_episode`), or a wire episode whose linked
    transcript was cross-checked (`cross_check`: transcript, agree, disagreements). None when
    neither."""
    primary = episode.get("primary_episode")
    if primary:
        return (
            f"session: this transcript is the cross-check of wire episode {primary}, the "
            "primary record (exports leave this episode out)",
            False,
        )
    raw = episode.get("cross_check")
    if not raw:
        return None
    try:
        check = json.loads(raw)
    except (TypeError, ValueError):
        return "session: the stored cross-check cannot be read", True
    if not isinstance(check, dict):
        return "session: the stored cross-check cannot be read", True
    transcript = check.get("transcript") or "?"
    agree = check.get("agree")
    if agree is True:
        return (
            f"session: transcript {transcript} is this episode's cross-check and agrees "
            "(kept calls and main parents)",
            False,
        )
    if agree is None:
        return (
            f"session: transcript {transcript} is linked, but was not compared (one side has "
            "no analysis)",
            True,
        )
    found = [str(d) for d in check.get("disagreements") or []]
    shown = "; ".join(found[:SHOWN_DISAGREEMENTS])
    more = len(found) - SHOWN_DISAGREEMENTS
    return (
        f"session: transcript {transcript} is this episode's cross-check and disagrees: "
        + (shown or "(no detail stored)")
        + (f" (and {more} more)" if more > 0 else ""),
        True,
    )


def harness_caption(view: EpisodeView) -> None:
    """The identity lines under the episode's facts: the harness evidence, and the session
    cross-check (a warning when the transcript disagrees). Text, never markup."""
    import streamlit as st

    from clawviz.ui.inspector import escape_md

    st.caption(escape_md(evidence_text(episode_evidence(view.episode, view.calls))))
    session = session_text(view.episode)
    if session is not None:
        text, warn = session
        if warn:
            st.warning(escape_md(text), icon=":material/compare_arrows:")
        else:
            st.caption(escape_md(text))
