"""Pruning of an episode's main segments (PIPELINE §4): retries, branches, longest paths, checks.

Every call ends in exactly one state: kept, pruned(reason), auxiliary(role) or failed(reason).
Episode-level reasons are collected, all of them, with evidence text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clawviz.recon.canonical import message_hash
from clawviz.recon.classify import Classification
from clawviz.recon.markers import is_harness_retry, tool_names_used
from clawviz.recon.selfcheck import Unexplained, lost_branches, unexplained_edits, unexplained_roots
from clawviz.recon.tree import CallTree, failure_code
from clawviz.settings import DEFAULT_SETTINGS, Settings
from clawviz.types import (
    Call,
    CallDecision,
    PathInfo,
    Reason,
    ReasonCode,
    Role,
    State,
    format_value,
)
from clawviz.types import call_label as label

RETRY_NOTE = "; retry: "
"""Separator of the retry note at the end of a stored `role_reason` (`retry_note` reads it)."""
IDENTICAL_RESEND = "identical re-send"
HARNESS_RETRY = "harness retry with a changed body"

ABNORMAL_CODES = frozenset(
    {
        "too_many_branches",
        "ended_in_error",
        "orphaned_request",
        "unsupported_tool",
        "missing_reward",
        "unexplained_root",
        "unexplained_edit",
        "lost_kept_call",
        "analysis_error",
    }
)
"""Episode reasons that exclude an attempt from GRPO statistics (not below_reward_threshold)."""


@dataclass
class RetryGroup:
    """Sibling calls where each later one takes the place of an earlier one."""

    members: list[str]
    keeper: str | None
    why: str
    kinds: dict[str, str] = field(default_factory=dict)
    """Per later member: `IDENTICAL_RESEND` or `HARNESS_RETRY`."""


def retry_kind(prev: Call, cur: Call) -> str:
    """`IDENTICAL_RESEND` when the retry sent the same messages (an SDK retry; system prompt
    volatile spans aside), else `HARNESS_RETRY` (OpenClaw appends `Continue the current task`,
    which tree matching ignores, so the kind is read from the messages themselves)."""
    if len(prev.messages) != len(cur.messages):
        return HARNESS_RETRY
    # The store shares one object per distinct message: the same object needs no hashing.
    same = all(
        a is b or message_hash(a) == message_hash(b)
        for a, b in zip(prev.messages, cur.messages, strict=True)
    )
    return IDENTICAL_RESEND if same else HARNESS_RETRY


def retry_note(role_reason: str) -> str:
    """The retry note stored at the end of a decision's role_reason ('' when it has none)."""
    # The note is appended last and never holds the separator: split at the last one.
    return role_reason.rsplit(RETRY_NOTE, 1)[1] if RETRY_NOTE in role_reason else ""


def base_role_reason(role_reason: str) -> str:
    """A decision's role_reason without its retry note."""
    return role_reason.rsplit(RETRY_NOTE, 1)[0]


@dataclass
class PruneResult:
    """Per-call decisions, main paths and episode reasons of one episode."""

    decisions: dict[str, CallDecision]
    paths: list[PathInfo]
    reasons: list[Reason]
    retry_groups: list[RetryGroup] = field(default_factory=list)
    n_leaves: int = 0


class _UnionFind:
    def __init__(self) -> None:
        self.up: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.up.setdefault(x, x)
        while self.up[x] != x:
            self.up[x] = self.up[self.up[x]]
            x = self.up[x]
        return x

    def union(self, a: str, b: str) -> None:
        self.up[self.find(b)] = self.find(a)


def find_retry_groups(tree: CallTree, cls: Classification) -> list[list[str]]:
    """Main calls grouped as retries: identical re-sends, and harness retries of a sibling."""
    uf = _UnionFind()
    is_main = {cid: cr.role == "main" for cid, cr in cls.roles.items()}
    siblings_so_far: dict[str | None, list[str]] = {}
    for call in tree.calls:
        cid = call.call_id
        if not is_main[cid]:
            continue
        parent = tree.parent[cid]
        earlier = tree.resend_of.get(cid)
        if earlier is not None and is_main.get(earlier):
            uf.union(earlier, cid)
        elif is_harness_retry(call, cls.texts.get(cid)):
            cr = cls.roles[cid]
            sibs = [
                s for s in siblings_so_far.get(parent, []) if cls.roles[s].segment == cr.segment
            ]
            if cr.continuation:
                # Only a failed first request on the same compacted history can be retried.
                sibs = [
                    s
                    for s in sibs
                    if cls.roles[s].continuation and cls.roles[s].linked_call == cr.linked_call
                ]
            failed = [s for s in sibs if s in tree.failed]
            # Between roots only a failed one can have been retried: other roots are segments.
            target = failed[-1] if failed else (sibs[-1] if sibs and parent is not None else None)
            if target is not None:
                uf.union(target, cid)
        siblings_so_far.setdefault(parent, []).append(cid)
    groups: dict[str, list[str]] = {}
    for cid in uf.up:
        groups.setdefault(uf.find(cid), []).append(cid)
    out = [sorted(g, key=tree.index.__getitem__) for g in groups.values() if len(g) > 1]
    return sorted(out, key=lambda g: tree.index[g[0]])


def _main_children(tree: CallTree, cls: Classification) -> dict[str, list[str]]:
    kids: dict[str, list[str]] = {c.call_id: [] for c in tree.calls}
    for call in tree.calls:
        cid = call.call_id
        if cls.roles[cid].role == "main" and not cls.roles[cid].continuation:
            mp = cls.main_parent(tree, cid)
            if mp is not None:
                kids[mp].append(cid)
    return kids


def _subtree(kids: dict[str, list[str]], root: str) -> list[str]:
    out, stack = [], [root]
    while stack:
        x = stack.pop()
        out.append(x)
        stack.extend(kids[x])
    return out


def _choose_keeper(
    tree: CallTree, members: list[str], kids: dict[str, list[str]]
) -> tuple[str | None, str]:
    ok = [m for m in members if m not in tree.failed]
    if not ok:
        return None, "every attempt failed"
    extended = [m for m in ok if any(k not in tree.failed for k in kids[m])]
    if len(extended) == 1:
        return extended[0], "the one a later call extends"
    if len(extended) > 1:
        spans = []
        for m in extended:
            idx = [tree.index[x] for x in _subtree(kids, m)]
            spans.append((min(idx), max(idx), m))
        sequential = all(spans[i][1] < spans[i + 1][0] for i in range(len(spans) - 1))
        if sequential:
            return spans[-1][2], "earlier branches abandoned when the harness re-sent the request"
        size = {m: len(_subtree(kids, m)) for m in extended}
        best = max(extended, key=lambda m: (size[m], tree.index[m]))
        return best, "the extended one with the larger subtree"
    delivered = [m for m in ok if tree.by_id[m].delivered is True]
    if delivered:
        return delivered[-1], "latest delivered (none extended)"
    unknown = [m for m in ok if tree.by_id[m].delivered is not False]
    if unknown:
        return unknown[-1], "latest (none extended, delivery not logged)"
    return ok[-1], "latest (none extended or delivered)"


def prune_episode(
    tree: CallTree,
    cls: Classification,
    *,
    reward: float | None,
    settings: Settings = DEFAULT_SETTINGS,
    has_episode: bool = True,
) -> PruneResult:
    """Decide every call's state and the episode's reasons (PIPELINE §4)."""
    kids = _main_children(tree, cls)
    superseded, retry_of, groups = _supersede_retries(tree, cls, kids)
    notes = _retry_notes(tree, groups, kids)
    leaves_by_seg, counted = _main_leaves(tree, cls, kids, superseded)

    paths, kept = _select_paths(tree, cls, leaves_by_seg, settings)
    reasons = _episode_reasons(tree, cls, counted, reward, settings, retry_of, paths)

    decisions: dict[str, CallDecision] = {}
    for call in tree.calls:
        cid = call.call_id
        cr = cls.roles[cid]
        state, reason = _state_of(call, cr.role, tree, superseded, kept, has_episode)
        decisions[cid] = CallDecision(
            call_id=cid,
            role=cr.role,
            state=state,
            reason=reason,
            role_reason=(
                f"{cr.reason}; parent by rule {tree.tolerated[cid]}"
                if cid in tree.tolerated
                else cr.reason
            )
            + (RETRY_NOTE + notes[cid] if cid in notes else ""),
            parent_call=tree.parent[cid],
            retry_of=retry_of.get(cid) or cls.resend_of(tree, cid),
            segment=cr.segment,
            thread=cr.thread,
            linked_call=cr.linked_call,
            depth=tree.depths[cid],
            match_ignored=[i.as_dict() for i in tree.ignored.get(cid, ())],
        )
    return PruneResult(decisions, paths, reasons, groups, len(counted))


def _supersede_retries(
    tree: CallTree, cls: Classification, kids: dict[str, list[str]]
) -> tuple[set[str], dict[str, str], list[RetryGroup]]:
    """Calls superseded by a retry (with their subtrees), who retries whom, and the groups."""
    superseded: set[str] = set()
    retry_of: dict[str, str] = {}
    groups: list[RetryGroup] = []
    for members in find_retry_groups(tree, cls):
        kinds = {}
        for prev, cur in zip(members, members[1:], strict=False):
            retry_of[cur] = prev
            kinds[cur] = retry_kind(tree.by_id[prev], tree.by_id[cur])
        if any(m in superseded for m in members):
            superseded.update(x for m in members for x in _subtree(kids, m))
            continue
        keeper, why = _choose_keeper(tree, members, kids)
        groups.append(RetryGroup(members, keeper, why, kinds))
        for m in members:
            if m != keeper:
                superseded.update(_subtree(kids, m))
    return superseded, retry_of, groups


def _retry_notes(
    tree: CallTree, groups: list[RetryGroup], kids: dict[str, list[str]]
) -> dict[str, str]:
    """Per call of a retry group (and each call below a replaced member): what it retries, what
    replaced it and the keeper rationale (`RetryGroup.why`), naming calls by `call_label`."""

    def name(cid: str) -> str:
        return f"call {label(tree.by_id[cid])}"

    notes: dict[str, str] = {}
    for g in groups:
        prev_of = dict(zip(g.members[1:], g.members, strict=False))
        for m in g.members:
            parts = []
            if m in prev_of:
                parts.append(f"retry of {name(prev_of[m])} ({g.kinds[m]})")
            others = [x for x in g.members if x != m]
            if m == g.keeper:
                parts.append(f"kept over {', '.join(name(x) for x in others)}: {g.why}")
            elif g.keeper is not None:
                parts.append(f"replaced by {name(g.keeper)} (kept: {g.why})")
            else:
                parts.append(f"not replaced: {g.why}")
            notes.setdefault(m, "; ".join(parts))
            if m != g.keeper and g.keeper is not None:
                for x in _subtree(kids, m)[1:]:
                    notes.setdefault(x, f"below {name(m)}, replaced by {name(g.keeper)}")
    return notes


def _main_leaves(
    tree: CallTree, cls: Classification, kids: dict[str, list[str]], superseded: set[str]
) -> tuple[dict[int, list[str]], list[str]]:
    """Leaves of the valid main calls per segment, and those that count as branches (in call
    order)."""

    def valid(cid: str) -> bool:
        return cls.roles[cid].role == "main" and cid not in superseded and cid not in tree.failed

    leaves_by_seg: dict[int, list[str]] = {}
    for call in tree.calls:
        cid = call.call_id
        if valid(cid) and not any(valid(k) for k in kids[cid]):
            leaves_by_seg.setdefault(cls.roles[cid].segment or 0, []).append(cid)
    # A segment's tip that a compaction continued is no terminal branch of the episode: the
    # summary call hangs below it and the next segment carries on from its summary.
    continued = {
        cls.roles[s].linked_call
        for cr in cls.roles.values()
        if cr.continuation and (s := cr.linked_call) is not None and s in cls.roles
    }
    counted = [leaf for v in leaves_by_seg.values() for leaf in v if leaf not in continued]
    return leaves_by_seg, sorted(counted, key=tree.index.__getitem__)


def _state_of(
    call: Call,
    role: str,
    tree: CallTree,
    superseded: set[str],
    kept: set[str],
    has_episode: bool,
) -> tuple[State, str | None]:
    """A call's one state and its reason (PIPELINE §4), first rule that applies."""
    cid = call.call_id
    if not has_episode:
        return State.AUXILIARY, "unattached"
    if role == Role.AUX_NON_MODEL:
        return State.AUXILIARY, Role.AUX_NON_MODEL
    if cid in tree.failed:
        return State.FAILED, failure_code(call)
    if role != Role.MAIN:
        return State.AUXILIARY, role
    if cid in superseded:
        return State.PRUNED, ReasonCode.SUPERSEDED_RETRY
    if cid in kept:
        return State.KEPT, None
    return State.PRUNED, ReasonCode.NOT_LONGEST


def _select_paths(
    tree: CallTree,
    cls: Classification,
    leaves_by_seg: dict[int, list[str]],
    settings: Settings,
) -> tuple[list[PathInfo], set[str]]:
    paths: list[PathInfo] = []
    kept: set[str] = set()
    for seg in sorted(leaves_by_seg):
        candidates = []
        for leaf in leaves_by_seg[seg]:
            chain = []
            cur: str | None = leaf
            while cur is not None:
                chain.append(cur)
                cur = None if cls.roles[cur].continuation else cls.main_parent(tree, cur)
            chain.reverse()
            gen = [tree.by_id[c].generated_tokens for c in chain]
            candidates.append(
                (leaf, chain, sum(g or 0 for g in gen), any(g is not None for g in gen))
            )
        has_tokens = any(c[3] for c in candidates)

        def score(c: tuple, has_tokens: bool = has_tokens) -> tuple:
            return (c[2] if has_tokens else len(c[1]), tree.index[c[0]])

        best = max(candidates, key=score)
        unit = "generated tokens" if has_tokens else "calls"
        for leaf, chain, tokens, _ in candidates:
            keep = settings.branch_policy == "all_valid" or leaf == best[0]
            if keep:
                kept.update(chain)
            why = ""
            if not keep:
                mine, theirs = score((leaf, chain, tokens, None))[0], score(best)[0]
                why = (
                    f"path {seg}:{best[0]} (ending at call {label(tree.by_id[best[0]])}) won with "
                    f"{theirs:,} {unit}; this one has {mine:,} ({mine - theirs:+,})"
                    + (", the latest wins a tie" if mine == theirs else "")
                )
            paths.append(
                PathInfo(
                    path_id=f"{seg}:{leaf}",
                    segment=seg,
                    call_ids=chain,
                    state="kept" if keep else "pruned",
                    reason=None if keep else "not_longest",
                    generated_tokens=tokens,
                    has_values=all(
                        (r := tree.by_id[c].rollout) is not None and r.values is not None
                        for c in chain
                    ),
                    why=why,
                )
            )
    return paths, kept


def _reward_call(tree: CallTree, cls: Classification, paths: list[PathInfo]) -> str | None:
    """The call an episode's reward belongs to: the last call of its last kept path (the final
    answer), else its last main call."""
    kept = [p for p in paths if p.state == State.KEPT and p.call_ids]
    if kept:
        return max(kept, key=lambda p: (p.segment, tree.index[p.call_ids[-1]])).call_ids[-1]
    mains = [c.call_id for c in tree.calls if cls.roles[c.call_id].role == "main"]
    return mains[-1] if mains else None


def _self_check_reason(code: str, what: str, odd: list[Unexplained]) -> Reason | None:
    """A self-check reason naming every call it found (the first three quoted)."""
    if not odd:
        return None
    more = f" (and {len(odd) - 3} more)" if len(odd) > 3 else ""
    return Reason(
        code,
        f"{len(odd)} call(s) {what}: " + "; ".join(u.evidence for u in odd[:3]) + more,
        odd[0].call_id,
        [u.call_id for u in odd],
    )


def _unexplained_reason(
    tree: CallTree, cls: Classification, retry_of: dict[str, str]
) -> Reason | None:
    """`unexplained_root`: calls the rules cannot place (the first three quoted)."""
    return _self_check_reason(
        "unexplained_root", "the rules cannot place", unexplained_roots(tree, cls, retry_of)
    )


def _branches_reason(leaves: list[str], limit: int) -> Reason | None:
    """`too_many_branches`: more leaves than `max_leaves`."""
    n_leaves = len(leaves)
    if n_leaves <= limit:
        return None
    # Pinned on the leaf that crossed the limit (in call order); every counted leaf listed.
    crossing = leaves[limit]
    return Reason(
        "too_many_branches",
        f"{n_leaves} leaves > max_leaves {limit}",
        crossing,
        [crossing] + [x for x in leaves if x != crossing],
    )


def _last_main_reason(tree: CallTree, mains: list[Call]) -> Reason | None:
    """`orphaned_request` / `ended_in_error`: the episode's last main call failed."""
    if not mains or mains[-1].call_id not in tree.failed:
        return None
    last = mains[-1]
    code = failure_code(last)
    if code == "orphaned_request":
        return Reason(
            "orphaned_request",
            f"last main call {label(last)} has no response",
            last.call_id,
            [last.call_id],
        )
    what = f"HTTP {last.http_status}" if last.http_status else code
    return Reason(
        "ended_in_error",
        f"last main call {label(last)} failed ({what})",
        last.call_id,
        [last.call_id],
    )


def _unsupported_reason(tree: CallTree, mains: list[Call], settings: Settings) -> Reason | None:
    """`unsupported_tool`: a successful main call used a tool in `unsupported_tools`."""
    unsupported = set(settings.unsupported_tools or ())
    users: list[tuple[str, Call]] = []
    for call in mains:
        if call.call_id in tree.failed:
            continue
        users += [(t, call) for t in tool_names_used(call.response) if t in unsupported]
    if not users:
        return None
    tool, first = users[0]
    ids = list(dict.fromkeys(c.call_id for _, c in users))
    more = f" (and {len(ids) - 1} more call(s))" if len(ids) > 1 else ""
    return Reason("unsupported_tool", f"{tool} in call {label(first)}{more}", first.call_id, ids)


def _reward_reason(
    tree: CallTree,
    cls: Classification,
    reward: float | None,
    settings: Settings,
    paths: list[PathInfo],
) -> Reason | None:
    """`missing_reward` / `below_reward_threshold`, pinned on the call the reward belongs to."""
    at = _reward_call(tree, cls, paths)
    pinned = [at] if at else []
    if reward is None:
        return Reason("missing_reward", "no reward recorded for this episode", at, pinned)
    limit_r = settings.reward_threshold
    if reward < limit_r:
        return Reason(
            "below_reward_threshold",
            f"reward {format_value(reward, limit_r)} < reward_threshold {format_value(limit_r)}",
            at,
            pinned,
        )
    return None


def _episode_reasons(
    tree: CallTree,
    cls: Classification,
    leaves: list[str],
    reward: float | None,
    settings: Settings,
    retry_of: dict[str, str] | None = None,
    paths: list[PathInfo] | None = None,
) -> list[Reason]:
    """Every episode reason with its evidence and the call it is pinned on (`Reason.call_id`)."""
    mains = [c for c in tree.calls if cls.roles[c.call_id].role == "main"]
    found = [
        _unexplained_reason(tree, cls, retry_of or {}),
        _branches_reason(leaves, settings.max_leaves),
        _last_main_reason(tree, mains),
        _unsupported_reason(tree, mains, settings),
        _reward_reason(tree, cls, reward, settings, paths or []),
    ]
    if paths:
        found += [
            _self_check_reason(
                "unexplained_edit",
                "kept with edits no rule explains",
                unexplained_edits(tree, paths),
            ),
            _self_check_reason(
                "lost_kept_call", "pruned but re-sent by the kept path", lost_branches(tree, paths)
            ),
        ]
    return [r for r in found if r is not None]
