"""One episode per session: a harness transcript of a session whose wire log is loaded too.

A proxy's wire log and the harness's own transcript of the same run are two records of one
session; loaded side by side they would be two episodes, and an export would train on the
session twice. `link_sessions` (called once at the end of every ingest, so the order of the
files and of the ingests does not matter) recognises the pairs and links each transcript
episode to its wire episode (`Episode.primary_episode`): the wire is the primary record (it
holds token ids and logprobs), the transcript a cross-check. Exports skip linked transcripts
(`export.source`).

A transcript episode and a wire episode are the same session when their time ranges overlap
(or either has none) and the content says so: a session id one carries is the other's id or a
session id of its calls, or most of the transcript's tool-call ids (unique per reply) are the
wire's, or, for a session without tool calls, most of the transcript's replies (canonical
messages) are replies on the wire, or all of them are and one is long enough to tell (an
OpenClaw cron run's one reply: its own session, inside the wire's episode) or each was given
on the wire within seconds of the transcript's time. The cross-check compares their decisions:
a reply the transcript keeps that the wire has but prunes (or the reverse), or given under
another parent, is a disagreement about kept calls or parents, written as JSON to the wire
episode's `cross_check` (`{"transcript", "agree", "disagreements"}`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson
from sqlmodel import Session, col, select

from clawviz import store
from clawviz.recon import ALL_IGNORE_PATTERNS, TIP_EXTENSIONS, block_text, match_key, tool_ids
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.store import Episode, read_analysis
from clawviz.types import Call, EpisodeAnalysis, State, call_label

SLACK_S = 600.0
"""Seconds by which the two records' time ranges may miss each other and still overlap."""
SHARE = 0.5
"""Share of the transcript's tool-call ids (or replies) the wire must hold."""
STRONG_CHARS = 40
"""Characters of text a reply needs to tell a session by on its own."""
SAME_TIME_S = 5.0
"""Seconds between a transcript's reply and the wire call that gave the same reply for a short
reply to count (a transcript entry is written when the reply arrives)."""


@dataclass
class Record:
    """What the matching reads of one episode's calls."""

    episode_id: str
    first_ts: float | None
    last_ts: float | None
    calls: list[Call]
    session_ids: set[str] = field(default_factory=set)
    tool_ids: set[str] = field(default_factory=set)
    replies: dict[str, list[str]] = field(default_factory=dict)
    """Match key of a reply -> the calls that gave it."""
    telling: set[str] = field(default_factory=set)
    """Keys of replies long enough to tell a session by (STRONG_CHARS of text)."""

    @classmethod
    def of(cls, ep: Episode, calls: list[Call]) -> Record:
        return cls.of_calls(ep.episode_id, calls, ep.first_ts, ep.last_ts)

    @classmethod
    def of_calls(
        cls,
        episode_id: str,
        calls: list[Call],
        first_ts: float | None = None,
        last_ts: float | None = None,
    ) -> Record:
        r = cls(episode_id, first_ts, last_ts, calls)
        r.session_ids = {c.session_id for c in calls if c.session_id} | {episode_id}
        for c in calls:
            if c.response is not None:
                r.tool_ids |= tool_ids(c.response)
                key = match_key(c.response, ignore_patterns=ALL_IGNORE_PATTERNS)
                r.replies.setdefault(key, []).append(c.call_id)
                if len(" ".join(block_text(c.response.get("content")).split())) >= STRONG_CHARS:
                    r.telling.add(key)
        return r


def _overlap(a: Record | Episode, b: Record | Episode) -> bool:
    if a.first_ts is None or a.last_ts is None or b.first_ts is None or b.last_ts is None:
        return True
    return a.first_ts <= b.last_ts + SLACK_S and b.first_ts <= a.last_ts + SLACK_S


def _times(rec: Record, cids: list[str]) -> list[float]:
    by_id = {c.call_id: c for c in rec.calls}
    out = []
    for cid in cids:
        c = by_id[cid]
        out += [t for t in (c.t_request, c.t_response) if t is not None]
    return out


def _same_times(transcript: Record, wire: Record, keys: set[str]) -> bool:
    """Every shared reply was given on the wire within SAME_TIME_S of the transcript's."""
    for key in keys:
        mine, theirs = _times(transcript, transcript.replies[key]), _times(wire, wire.replies[key])
        if not any(abs(a - b) <= SAME_TIME_S for a in mine for b in theirs):
            return False
    return bool(keys)


def same_session(transcript: Record, wire: Record) -> str | None:
    """Why two records are one session (the evidence), or None."""
    if not _overlap(transcript, wire):
        return None
    ids = transcript.session_ids & wire.session_ids
    if ids:
        return f"session id {sorted(ids)[0]}"
    if transcript.tool_ids:
        shared = transcript.tool_ids & wire.tool_ids
        if len(shared) >= max(1, SHARE * len(transcript.tool_ids)):
            return f"{len(shared)} of {len(transcript.tool_ids)} tool-call ids"
        return None
    if transcript.replies:
        shared_r = set(transcript.replies) & set(wire.replies)
        every = shared_r == set(transcript.replies) and (
            shared_r & transcript.telling or _same_times(transcript, wire, shared_r)
        )
        if every or len(shared_r) >= max(2, SHARE * len(transcript.replies)):
            return f"{len(shared_r)} of {len(transcript.replies)} replies"
    return None


def _kept(rec: Record, analysis: EpisodeAnalysis) -> dict[str, bool]:
    """Per reply key: whether any main call giving it is kept."""
    out: dict[str, bool] = {}
    for key, cids in rec.replies.items():
        mains = [analysis.decisions[c] for c in cids if c in analysis.decisions]
        mains = [d for d in mains if d.role == "main"]
        if mains:
            out[key] = any(d.state == State.KEPT for d in mains)
    return out


def _parent_replies(rec: Record, analysis: EpisodeAnalysis) -> dict[str, str | None]:
    """Per reply key of a main call: the reply key of its main parent (past tip extensions: a
    transcript keeps a heartbeat the wire's next request hides), None for a root."""
    key_of = {cid: key for key, cids in rec.replies.items() for cid in cids}
    dec = analysis.decisions
    out: dict[str, str | None] = {}
    for key, cids in rec.replies.items():
        for cid in cids:
            d = dec.get(cid)
            if d is None or d.role != "main":
                continue
            p = d.parent_call
            while p is not None and p in dec and dec[p].role in TIP_EXTENSIONS:
                p = dec[p].parent_call
            out[key] = key_of.get(p) if p else None
    return out


def compare_kept(
    transcript: Record, t_analysis: EpisodeAnalysis, wire: Record, w_analysis: EpisodeAnalysis
) -> dict[str, object]:
    """Where the two records disagree about kept calls or parents, for each main reply both
    hold (a parent is compared by its reply, past tip extensions)."""
    t_kept, w_kept = _kept(transcript, t_analysis), _kept(wire, w_analysis)
    t_par, w_par = _parent_replies(transcript, t_analysis), _parent_replies(wire, w_analysis)
    by_id = {c.call_id: c for c in wire.calls}
    out = []
    for key in sorted(set(t_kept) & set(w_kept), key=lambda k: wire.replies[k][0]):
        call = by_id[wire.replies[key][0]]
        if t_kept[key] != w_kept[key]:
            side = "kept by the transcript, pruned on the wire"
            if w_kept[key]:
                side = "kept on the wire, pruned by the transcript"
            out.append(f"call {call_label(call)}: {side}")
        tp, wp = t_par.get(key), w_par.get(key)
        if tp is not None and wp is not None and tp != wp:
            out.append(f"call {call_label(call)}: another parent in the transcript")
    return {"transcript": transcript.episode_id, "agree": not out, "disagreements": out}


def cross_check(
    session: Session, transcript: Record, wire: Record, settings: Settings
) -> dict[str, object]:
    """`compare_kept` on the two episodes' stored analyses (KeyError if one has none)."""
    return compare_kept(
        transcript,
        read_analysis(session, transcript.episode_id, settings),
        wire,
        read_analysis(session, wire.episode_id, settings),
    )


class _Loader:
    """Each episode's `Record`, loaded once and only when a pair needs it."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.memo: dict[str, Record] = {}

    def __call__(self, ep: Episode) -> Record:
        got = self.memo.get(ep.episode_id)
        if got is None:
            calls = store.load_calls(self.session, ep.episode_id)
            got = self.memo[ep.episode_id] = Record.of(ep, calls)
        return got


def link_sessions(
    session: Session, episodes: set[str] | None = None, settings: Settings = DEFAULT_SETTINGS
) -> list[tuple[str, str, str]]:
    """Link every unlinked transcript episode to the wire episode of its session; commit.

    `episodes`: the episodes an ingest touched (None: all). A pair is looked at when either
    side is among them, so a transcript loaded before or after its wire log, in the same ingest
    or another, is linked all the same. Returns (transcript, wire, evidence) per new link.
    """
    query = select(Episode).where(
        Episode.source_kind == "transcript", col(Episode.primary_episode).is_(None)
    )
    # In episode-id order, whatever order the rows were written in (parallel writers), so the
    # links and each wire episode's cross-check come out the same for any ingest.
    transcripts = sorted(session.exec(query), key=lambda e: e.episode_id)
    if not transcripts:
        return []
    wires = sorted(
        session.exec(select(Episode).where(Episode.source_kind == "exchange")),
        key=lambda e: e.episode_id,
    )
    load = _Loader(session)
    links: list[tuple[str, str, str]] = []
    for ep_t in transcripts:
        touched = episodes is None or ep_t.episode_id in episodes
        cands = [
            w for w in wires if (touched or w.episode_id in (episodes or ())) and _overlap(ep_t, w)
        ]
        if not cands:
            continue
        t = load(ep_t)
        hits = [(w, why) for w in cands if (why := same_session(t, load(w))) is not None]
        if not hits:
            continue
        # The wire episode holding most of the transcript's replies; on a tie (a resumed
        # session re-sends the replies of the one it resumes) the first in episode-id order.
        ep_w, why = min(
            hits,
            key=lambda h: (-len(set(t.replies) & set(load(h[0]).replies)), h[0].episode_id),
        )
        ep_t.primary_episode = ep_w.episode_id
        try:
            check = cross_check(session, t, load(ep_w), settings)
        except KeyError:  # not analysed (the analysis at ingest failed): not compared
            check = {"transcript": t.episode_id, "agree": None, "disagreements": []}
        ep_w.cross_check = orjson.dumps(check).decode()
        session.add(ep_t)
        session.add(ep_w)
        links.append((ep_t.episode_id, ep_w.episode_id, why))
    session.commit()
    return links


def primary_episodes(session: Session) -> list[str]:
    """Episode ids that are no linked transcript (one per session), sorted."""
    query = select(Episode.episode_id).where(col(Episode.primary_episode).is_(None))
    return sorted(session.exec(query))
