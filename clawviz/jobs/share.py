"""The Episode explorer's payload of a stored episode (what `clawviz share` and the Episode
page send the explorer): its calls and analysis read from the store, laid out by
`figures.explorer.build_payload`."""

from __future__ import annotations

from typing import Any

from clawviz.figures import build_payload
from clawviz.settings import Settings


def load_payload(
    session: Any, episode_id: str, settings: Settings, *, redact: bool = False
) -> dict[str, Any]:
    """The payload of a stored episode with its comments by call (none when redacted; raises
    KeyError for an unknown id)."""
    from clawviz.jobs.analyse import episode_analysis
    from clawviz.store import Episode, comments_by_call, load_calls

    if session.get(Episode, episode_id) is None:
        raise KeyError(episode_id)
    calls = load_calls(session, episode_id)
    analysis = episode_analysis(session, episode_id, settings)
    payload = build_payload(episode_id, calls, analysis, redact=redact, prices=settings.prices)
    if not redact:  # reviewers' notes stay inside the team, like the system prompts
        payload["comments"] = comments_by_call(session, episode_id)
    return payload
