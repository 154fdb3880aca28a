"""The explorer payload packed for the wire (the `clawviz share` file): the same data with every
repeated string sent once (issue 25's size row: file size / distinct content).

`build_payload` returns calls as a list of readable dicts; `pack_payload` turns calls and edges
into columns (each key written once, not once per call), string columns with repeats into a
table of distinct values plus indices, each call's message references into "the previous
call's first n, then these", and each diff line into one integer referring to one `lines` table
of distinct diff lines. explorer.js `unpack` rebuilds exactly the `build_payload` form, so the
rest of the JS reads one shape. Pure data: nothing here is markup.
"""

from __future__ import annotations

from typing import Any

PACK_FORMAT = 1


def _is_table(values: list[Any]) -> bool:
    """All dicts with the same keys (the per-call `usage` and `timing`)."""
    if not values or not all(isinstance(v, dict) for v in values):
        return False
    keys = list(values[0])
    return all(list(v) == keys for v in values)


def _column(values: list[Any]) -> dict[str, Any]:
    """One column: `{"t": table}` for same-shaped dicts, `{"d": distinct, "i": indices}` for
    strings that repeat (None is index -1), else `{"v": values}`."""
    if _is_table(values):
        return {"t": pack_rows(values)}
    if all(v is None or isinstance(v, str) for v in values):
        distinct: dict[str, int] = {}
        idx = [-1 if v is None else distinct.setdefault(v, len(distinct)) for v in values]
        if len(distinct) < len(values):
            return {"d": list(distinct), "i": idx}
    return {"v": values}


def pack_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows of dicts as columns: `{"n": rows, "k": keys, "c": columns}` (a key a row lacks is
    not expected: `build_payload` writes every key for every call)."""
    keys = list(rows[0]) if rows else []
    return {"n": len(rows), "k": keys, "c": [_column([r.get(k) for r in rows]) for k in keys]}


KINDS = ("same", "add", "del", "fold")
"""A diff line is one integer: `value * 8 + kind * 2 + ignored`, where kind indexes KINDS and
value is the line's index in `lines` (for `fold`, the number of folded lines)."""


def _pack_diff(diff: dict[str, Any] | None, lines: dict[str, int]) -> dict[str, Any] | None:
    if diff is None:
        return None
    out: dict[str, Any] = {}
    for name, sec in diff.items():
        if not isinstance(sec, dict):
            out[name] = sec
            continue
        packed = [sec["added"], sec["removed"]]  # a section: added, removed, then its lines
        for kind, text, ignored in sec["lines"]:
            value = text if kind == "fold" else lines.setdefault(text, len(lines))
            packed.append(value * 8 + KINDS.index(kind) * 2 + (1 if ignored else 0))
        out[name] = packed
    return out


def _history(refs: list[int], previous: list[int]) -> list[int]:
    """A call's message references as [n, new...]: the first n are the previous call's first n
    (calls re-send their history), the rest follow."""
    n = 0
    while n < len(refs) and n < len(previous) and refs[n] == previous[n]:
        n += 1
    return [n, *refs[n:]]


def pack_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with calls and edges as columns and diff lines as references (see the module
    docstring); every other key unchanged."""
    calls = payload.get("calls") or []
    lines: dict[str, int] = {}
    rows: list[dict[str, Any]] = []
    previous: list[int] = []
    for c in calls:
        refs = list(c.get("messages") or [])
        rows.append(
            {**c, "diff": _pack_diff(c.get("diff"), lines), "messages": _history(refs, previous)}
        )
        previous = refs
    out = dict(payload)
    out["packed"] = PACK_FORMAT
    out["calls"] = pack_rows(rows)
    out["edges"] = pack_rows(list(payload.get("edges") or []))
    out["lines"] = list(lines)
    return out


def distinct_content(payload: dict[str, Any]) -> int:
    """UTF-8 bytes of the payload's distinct texts (messages, system prompts, responses) plus
    its distinct diff lines, each once: what the size row divides by."""
    lines: set[str] = set()
    for c in payload.get("calls") or []:
        for sec in (c.get("diff") or {}).values():
            if isinstance(sec, dict):
                lines.update(ln[1] for ln in sec["lines"] if ln[0] != "fold")
    texts = set(payload.get("texts") or [])
    return sum(len(t.encode("utf-8")) for t in texts | lines)
