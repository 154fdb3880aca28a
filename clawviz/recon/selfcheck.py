"""The self-check of PIPELINE §2: flag a tree the reconstruction rules cannot explain.

A harness release that changes what it sends (a new per-request block, a re-rendered prompt)
breaks prefix matching silently: every request then starts a new root, and the episode is
drawn and trained as if those roots were right. So after classification each episode is
checked for the shapes no rule explains:

- more than one main root in one session with no compaction or session boundary between
  them: a main root after the first that is neither a compaction continuation, nor a retry of
  an earlier root (an identical re-send or the harness's own retry), nor in another session;
- a compaction continuation with no summary link;
- a second root after the same compaction: a compaction explains exactly one new root, its
  continuation (a root with the same summary link and compacted history as an earlier one is
  explained only as a retry of it, or when the earlier one failed).

Such an episode gets `unexplained_root` with the evidence (`prune._episode_reasons`); the
setting `drop_unexplained_root` (default on) drops it. Two more checks look at the paths:

- `unexplained_edits`: a kept call whose parent the content-anchored alignment found with
  differences no edit rule explains (`recon.edits`): reason `unexplained_edit`, which drops the
  episode when more kept calls have them than the setting `max_unexplained_edits`;
- `lost_branches`: a pruned branch whose own replies' tool-call ids appear in a kept call's
  history (the kept path re-sent what that branch answered, so a kept call may have been lost):
  reason `lost_kept_call`, dropped with `drop_unexplained_root`.
"""

from __future__ import annotations

from dataclasses import dataclass

from clawviz.recon.classify import Classification
from clawviz.recon.edits import tool_ids
from clawviz.recon.tree import CallTree
from clawviz.types import PathInfo, State, call_label


@dataclass(frozen=True)
class Unexplained:
    """One call the rules cannot place, and why."""

    call_id: str
    evidence: str


def _label(tree: CallTree, cid: str) -> str:
    return call_label(tree.by_id[cid])


def unexplained_roots(
    tree: CallTree, cls: Classification, retry_of: dict[str, str]
) -> list[Unexplained]:
    """Main roots (and continuations) of an episode that no rule explains, in call order."""
    out: list[Unexplained] = []
    first: str | None = None
    continued: dict[tuple[str, int | None], str] = {}
    """(summary link, segment) -> the continuation root that compaction explains."""
    for call in tree.calls:
        cid = call.call_id
        cr = cls.roles[cid]
        if cr.role != "main" or tree.parent[cid] is not None:
            continue
        if cr.continuation:
            if cr.linked_call is None:
                out.append(
                    Unexplained(
                        cid, f"compaction continuation {_label(tree, cid)} has no summary link"
                    )
                )
                continue
            odd = _second_continuation(tree, cls, retry_of, continued, cid)
            if odd is not None:
                out.append(odd)
            continue
        if first is None:
            first = cid
            continue
        if cid in retry_of or cls.resend_of(tree, cid) is not None:
            continue  # a retry of an earlier root
        s0, s1 = tree.by_id[first].session_id, call.session_id
        if s0 is not None and s1 is not None and s0 != s1:
            continue  # another session of the same episode
        n_msgs = len(call.messages)
        out.append(
            Unexplained(
                cid,
                f"main call {_label(tree, cid)} has no parent: none of its {n_msgs} messages "
                f"continues an earlier call, and no compaction or session boundary comes before "
                f"it (first main root {_label(tree, first)})",
            )
        )
    return out


def _second_continuation(
    tree: CallTree,
    cls: Classification,
    retry_of: dict[str, str],
    continued: dict[tuple[str, int | None], str],
    cid: str,
) -> Unexplained | None:
    """A continuation root after the one its compaction explains, unless it retries it."""
    cr = cls.roles[cid]
    key = (cr.linked_call or "", cr.segment)
    earlier = continued.get(key)
    if earlier is None:
        continued[key] = cid
        return None
    if cid in retry_of or cls.resend_of(tree, cid) is not None or earlier in tree.failed:
        continued[key] = cid  # a retry takes the place of the root it retries
        return None
    summary = _label(tree, cr.linked_call) if cr.linked_call else "?"
    return Unexplained(
        cid,
        f"main call {_label(tree, cid)} is a second root after compaction {summary}: that "
        f"compaction explains one new root, its continuation {_label(tree, earlier)}",
    )


def _kept_calls(paths: list[PathInfo]) -> list[str]:
    seen: dict[str, None] = {}
    for p in paths:
        if p.state == State.KEPT:
            seen.update(dict.fromkeys(p.call_ids))
    return list(seen)


def unexplained_edits(tree: CallTree, paths: list[PathInfo]) -> list[Unexplained]:
    """Kept calls whose history differs from their parent's in a way no edit rule explains."""
    out = []
    for cid in _kept_calls(paths):
        odd = [e for e in tree.edits.get(cid, ()) if not e.explained]
        if odd:
            parent = tree.parent[cid]
            out.append(
                Unexplained(
                    cid,
                    f"kept call {_label(tree, cid)} continues call "
                    f"{_label(tree, parent) if parent else '?'} with {len(odd)} unexplained "
                    f"edit(s): " + "; ".join(e.summary for e in odd[:2]),
                )
            )
    out.sort(key=lambda u: tree.index[u.call_id])
    return out


def lost_branches(tree: CallTree, paths: list[PathInfo]) -> list[Unexplained]:
    """Pruned (not_longest) branches whose own replies' tool-call ids a kept call re-sends."""
    pruned = [p for p in paths if p.state != State.KEPT and p.reason == "not_longest"]
    if not pruned:
        return []
    kept_set = set(_kept_calls(paths))
    # The leaf of a kept path re-sends its whole path's history: its request holds every
    # tool-call id the path's requests carry (one request per path, not one per call).
    sent: dict[str, str] = {}
    """Tool-call id -> the kept path's leaf whose request carries it."""
    for p in paths:
        if p.state == State.KEPT and p.call_ids:
            leaf = p.call_ids[-1]
            for m in tree.by_id[leaf].messages:
                for tid in tool_ids(m):
                    sent.setdefault(tid, leaf)
    out: list[Unexplained] = []
    flagged: set[str] = set()
    for p in pruned:
        for cid in p.call_ids:
            if cid in kept_set or cid in flagged:
                continue
            reply = tree.by_id[cid].response
            shared = sorted(tool_ids(reply) & set(sent)) if reply else []
            if shared:
                flagged.add(cid)
                out.append(
                    Unexplained(
                        cid,
                        f"pruned call {_label(tree, cid)} made tool call(s) "
                        f"{', '.join(shared[:3])} that kept call {_label(tree, sent[shared[0]])} "
                        "re-sends: a kept call may have been lost",
                    )
                )
                break
    out.sort(key=lambda u: tree.index[u.call_id])
    return out
