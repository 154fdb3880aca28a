"""The self-check of PIPELINE §2: flag a tree the reconstruction rules cannot explain.

A harness release that changes what it sends (a new per-request block, a re-rendered prompt)
breaks prefix matching silently: every request then starts a new root, and the episode is
drawn and trained as if those roots were right. So after classification each episode is
checked for the shapes no rule explains:

- more than one main root in one session with no compaction or session boundary between
  them: a main root after the first that is neither a compaction continuation, nor a retry of
  an earlier root (an identical re-send or the harness's own retry), nor in another session;
- a compaction continuation with no summary link.

Such an episode gets `unexplained_root` with the evidence (`prune._episode_reasons`); the
setting `drop_unexplained_root` (default on) drops it.
"""

from __future__ import annotations

from dataclasses import dataclass

from clawviz.recon.classify import Classification
from clawviz.recon.tree import CallTree
from clawviz.types import call_label


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
