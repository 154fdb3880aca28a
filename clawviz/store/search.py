"""Full-text search over every distinct message and every reply in the store.

The index is a table of documents (`search_doc`: one per distinct request message, one per
call's reply) with a full-text index beside it: SQLite FTS5 (`search_fts`, external content),
or on PostgreSQL a GIN index over `to_tsvector('simple', text)`. It is filled incrementally by
`refresh_index` from the calls it has not seen yet, so the first search after an ingest indexes
only the new calls.

A hit names the call that *introduced* the message (the first call, in call order, whose request
carried it) or that generated the reply, with its episode, source file and line, and a snippet
around the first match. Query text is taken literally (every word must appear; quotes, `*`,
`OR`, `-` and the like are ordinary characters) unless `syntax=True` asks for the backend's own
query language.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import orjson
from sqlalchemy import text
from sqlmodel import Session

from clawviz.recon import message_hash
from clawviz.store.calls import message_texts, unpack_text
from clawviz.store.models import MessageRow, SearchDoc

Progress = Callable[[int, int], None]
BATCH = 500
SNIPPET_CHARS = 160
"""Characters of context after a hit in its snippet."""
SNIPPET_BEFORE = 40
"""Characters of context before it: few, so a table cell shows the match, not only its lead."""


@dataclass
class Hit:
    """One search result: a document and the call that introduced or generated it."""

    kind: str
    """message (a request message, first sent by this call) | reply (this call's response)."""
    role: str
    call_id: str
    episode_id: str | None
    source_file: str
    line: int
    snippet_before: str
    snippet_match: str
    snippet_after: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def snippet(self) -> str:
        return f"{self.snippet_before}«{self.snippet_match}»{self.snippet_after}"


# --- what a document says -----------------------------------------------------------------------
def _block_words(block: Any) -> Iterable[str]:
    if isinstance(block, str):
        yield block
        return
    if not isinstance(block, dict):
        return
    for key in ("text", "thinking", "name"):
        value = block.get(key)
        if isinstance(value, str):
            yield value
    if "input" in block:
        yield orjson.dumps(block["input"]).decode()
    content = block.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for inner in content:
            yield from _block_words(inner)


def message_text(message: Any) -> str:
    """Everything searchable in one message: text, thinking, tool names, inputs and results."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(w for b in blocks for w in _block_words(b) if w)


def _loads(value: str | None) -> Any:
    """JSON text as stored (stdlib json where orjson refuses lone surrogates of a bad log)."""
    if not value:
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return json.loads(value)


# --- the index ------------------------------------------------------------------------------
def _is_sqlite(session: Session) -> bool:
    return session.get_bind().dialect.name == "sqlite"


def _ensure_fts(session: Session) -> None:
    if _is_sqlite(session):
        session.execute(
            text(
                "CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5("
                "text, content='search_doc', content_rowid='id', tokenize='unicode61')"
            )
        )
    else:
        session.execute(
            text(
                "CREATE INDEX IF NOT EXISTS ix_search_doc_tsv ON search_doc "
                "USING gin (to_tsvector('simple', text))"
            )
        )


def _pending_calls(session: Session, limit: int) -> list[tuple]:
    """The pending calls (`search_pending`) of the episodes of up to `limit` pending calls,
    whole episodes in call order: a reply re-sent as history later in its episode is found in
    the same batch, so it stays the reply's document (not a new message)."""
    some = list(
        session.execute(
            text(
                'SELECT DISTINCT c.episode_id FROM "call" c JOIN (SELECT call_id FROM '
                "search_pending LIMIT :n) p ON p.call_id = c.call_id"
            ),
            {"n": limit},
        ).scalars()
    )
    if not some:
        return []
    cols = "c.call_id, c.episode_id, c.message_hashes, c.response_json"
    order = " ORDER BY c.episode_id, c.seq, c.t_request, c.source_file, c.line"
    base = f'SELECT {cols} FROM "call" c JOIN search_pending p ON p.call_id = c.call_id WHERE '
    out: list[tuple] = []
    if None in some:
        out += list(session.execute(text(base + "c.episode_id IS NULL" + order)))
    named = [e for e in some if e is not None]
    for i in range(0, len(named), BATCH):
        part = named[i : i + BATCH]
        marks = ", ".join(f":e{j}" for j in range(len(part)))
        out += list(
            session.execute(
                text(base + f"c.episode_id IN ({marks})" + order),
                {f"e{j}": e for j, e in enumerate(part)},
            )
        )
    return out


def refresh_index(session: Session, progress: Progress | None = None) -> int:
    """Index the calls of the pending queue (filled by a trigger on call inserts, so this
    never searches for unindexed calls), `BATCH` calls per committed batch; returns how many
    documents were added. Ingest calls `index_pending` after each file, so a search usually
    finds the queue empty (one indexed probe)."""
    _ensure_fts(session)
    total = session.execute(text("SELECT COUNT(*) FROM search_pending")).scalar_one()
    added = done = 0
    while batch := _pending_calls(session, BATCH):
        added += _index_batch(session, batch)
        session.commit()
        done += len(batch)
        if progress:
            progress(min(done, total), max(total, done))
    session.commit()
    return added


def index_pending(session: Session) -> int:
    """`refresh_index` for ingest's end of a file: the calls it just wrote, in batches; never
    fails the ingest (on an error the calls stay queued for the next file or search)."""
    try:
        return refresh_index(session)
    except Exception:  # noqa: BLE001 - the index catches up later; the calls are stored
        session.rollback()
        return 0


def _index_batch(session: Session, batch: list[tuple]) -> int:
    """Write the documents of one batch of pending calls and dequeue them (one transaction)."""
    first_new = _max_id(session) + 1
    ids = [c[0] for c in batch]
    # A call indexed already (by a parallel process, or before the queue): its documents stand.
    done = _indexed(session, ids)
    todo = [c for c in batch if c[0] not in done]
    docs = _batch_docs(session, todo, _known(session, todo))
    if docs:
        session.execute(SearchDoc.__table__.insert(), docs)
        if _is_sqlite(session):
            session.execute(
                text(
                    "INSERT INTO search_fts(rowid, text) SELECT id, text FROM search_doc "
                    "WHERE id >= :first"
                ),
                {"first": first_new},
            )
    for i in range(0, len(ids), BATCH):
        part = ids[i : i + BATCH]
        marks = ", ".join(f":c{j}" for j in range(len(part)))
        session.execute(
            text(f"DELETE FROM search_pending WHERE call_id IN ({marks})"),  # noqa: S608
            {f"c{j}": c for j, c in enumerate(part)},
        )
    return len(docs)


def _in_list(session: Session, sql: str, values: list[str]) -> set[str]:
    out: set[str] = set()
    for i in range(0, len(values), BATCH):
        part = values[i : i + BATCH]
        marks = ", ".join(f":v{j}" for j in range(len(part)))
        rows = session.execute(text(sql.format(marks)), {f"v{j}": v for j, v in enumerate(part)})
        out.update(r[0] for r in rows)
    return out


def _indexed(session: Session, call_ids: list[str]) -> set[str]:
    sql = "SELECT key FROM search_doc WHERE kind = 'call' AND key IN ({})"
    return _in_list(session, sql, call_ids)


def _known(session: Session, batch: list[tuple]) -> set[str]:
    """The message hashes of this batch's requests and replies already in the index (an
    indexed lookup per batch, never the whole index in memory)."""
    hashes: set[str] = set()
    for _call_id, _episode_id, hashes_json, response_json in batch:
        hashes.update(_loads(unpack_text(hashes_json)) or [])
        reply = _loads(unpack_text(response_json))
        if isinstance(reply, dict):
            hashes.add(message_hash(reply))
    sql = "SELECT key FROM search_doc WHERE kind = 'message' AND key IN ({})"
    return _in_list(session, sql, sorted(hashes))


def _max_id(session: Session) -> int:
    return session.execute(text("SELECT COALESCE(MAX(id), 0) FROM search_doc")).scalar_one()


def _batch_docs(session: Session, batch: list[tuple], known: set[str]) -> list[dict[str, Any]]:
    """The documents of one batch of calls: each call's reply, and each request message no
    earlier call sent (nor generated: a reply re-sent as history is the reply's document)."""
    docs: list[dict[str, Any]] = []
    new_hashes: dict[str, str] = {}
    for call_id, episode_id, hashes_json, response_json in batch:
        for h in _loads(unpack_text(hashes_json)) or []:
            if h not in known and h not in new_hashes:
                new_hashes[h] = call_id
        reply = _loads(unpack_text(response_json))
        if isinstance(reply, dict):
            known.add(message_hash(reply))
        # A 'call' document marks the call as indexed and holds its reply text.
        docs.append(
            {"kind": "call", "key": call_id, "call_id": call_id, "episode_id": episode_id,
             "role": "assistant", "text": message_text(reply)}
        )  # fmt: skip
    episode_of = {c[0]: c[1] for c in batch}
    fresh = {h: c for h, c in new_hashes.items() if h not in known}
    for row in _message_rows(session, list(fresh)):
        caller = fresh[row.hash]
        docs.append(
            {"kind": "message", "key": row.hash, "call_id": caller,
             "episode_id": episode_of.get(caller), "role": row.role,
             "text": message_text(_loads(message_texts(row)[0]))}
        )  # fmt: skip
    known.update(new_hashes)
    return docs


def _message_rows(session: Session, hashes: list[str]) -> list[MessageRow]:
    from sqlmodel import col, select

    rows: list[MessageRow] = []
    for i in range(0, len(hashes), BATCH):
        part = hashes[i : i + BATCH]
        rows.extend(session.exec(select(MessageRow).where(col(MessageRow.hash).in_(part))))
    return rows


# --- queries --------------------------------------------------------------------------------
_WORD = re.compile(r"\w+", re.UNICODE)


def literal_terms(query: str) -> list[str]:
    """The words of a literal query (what the full-text index can match)."""
    return _WORD.findall(query)


def _fts5_literal(query: str) -> str:
    return " ".join('"' + t.replace('"', '""') + '"' for t in literal_terms(query))


def search(
    session: Session,
    query: str,
    *,
    episode_id: str | None = None,
    role: str | None = None,
    syntax: bool = False,
    limit: int = 200,
) -> list[Hit]:
    """Documents matching `query` (see the module docstring), best first (SQLite: bm25)."""
    refresh_index(session)
    if not query.strip() or (not syntax and not literal_terms(query)):
        return []
    where, params = _filters(episode_id, role)
    params["limit"] = limit
    if _is_sqlite(session):
        params["q"] = query if syntax else _fts5_literal(query)
        sql = (
            "SELECT d.kind, d.role, d.call_id, d.episode_id, d.text, c.source_file, c.line "
            'FROM search_fts JOIN search_doc d ON d.id = search_fts.rowid JOIN "call" c '
            f"ON c.call_id = d.call_id WHERE search_fts MATCH :q {where} "
            "ORDER BY bm25(search_fts) LIMIT :limit"
        )
        if not where:
            # Rank in the index alone, then read only the `limit` best documents and calls
            # (not the text and call of every match): the same rows, and a first search pays
            # cold pages for 20 documents, not thousands (bench/README.md, issue 26 third pass).
            sql = (
                "SELECT d.kind, d.role, d.call_id, d.episode_id, d.text, c.source_file, c.line "
                "FROM (SELECT rowid AS id, bm25(search_fts) AS score FROM search_fts "
                "WHERE search_fts MATCH :q ORDER BY score LIMIT :limit) f "
                'JOIN search_doc d ON d.id = f.id JOIN "call" c ON c.call_id = d.call_id '
                "ORDER BY f.score"
            )
    else:
        params["q"] = query
        fn = "websearch_to_tsquery" if syntax else "plainto_tsquery"
        sql = (
            "SELECT d.kind, d.role, d.call_id, d.episode_id, d.text, c.source_file, c.line "
            'FROM search_doc d JOIN "call" c ON c.call_id = d.call_id '
            f"WHERE to_tsvector('simple', d.text) @@ {fn}('simple', :q) {where} "
            f"ORDER BY ts_rank(to_tsvector('simple', d.text), {fn}('simple', :q)) DESC, d.id "
            "LIMIT :limit"
        )
    try:
        rows = list(session.execute(text(sql), params))
    except Exception as exc:  # a malformed query in syntax mode
        session.rollback()
        raise ValueError(f"search query not understood: {exc.__class__.__name__}") from None
    terms = literal_terms(query)
    return [_hit(r, terms) for r in rows if r[4]]


def _filters(episode_id: str | None, role: str | None) -> tuple[str, dict[str, Any]]:
    where, params = "", {}
    if episode_id:
        where += " AND d.episode_id = :episode"
        params["episode"] = episode_id
    if role:
        where += " AND d.role = :role"
        params["role"] = role
    return where, params


def _hit(row: Any, terms: list[str]) -> Hit:
    kind, role, call_id, episode_id, body, source_file, line = row
    before, match, after = snippet(body, terms)
    return Hit(
        kind="reply" if kind == "call" else "message", role=role, call_id=call_id,
        episode_id=episode_id, source_file=source_file, line=line,
        snippet_before=before, snippet_match=match, snippet_after=after,
    )  # fmt: skip


def snippet(body: str, terms: list[str]) -> tuple[str, str, str]:
    """(before, match, after) around the first occurrence of any term, whitespace squeezed."""
    lower = body.lower()
    found = [(lower.find(t.lower()), t) for t in terms]
    found = [(i, t) for i, t in found if i >= 0]
    if not found:
        return (" ".join(body[: SNIPPET_CHARS * 2].split()), "", "")
    i, t = min(found)
    start = max(0, i - SNIPPET_BEFORE)
    end = min(len(body), i + len(t) + SNIPPET_CHARS)
    before = ("…" if start else "") + " ".join(body[start:i].split())
    after = " ".join(body[i + len(t) : end].split()) + ("…" if end < len(body) else "")
    return (before + (" " if body[i - 1 : i].isspace() else ""), body[i : i + len(t)],
            (" " if body[i + len(t) : i + len(t) + 1].isspace() else "") + after)  # fmt: skip


def episodes_matching(session: Session, query: str, *, limit: int = 5000) -> set[str]:
    """Episodes with at least one document matching `query` (the Runs page text filter)."""
    return {h.episode_id for h in search(session, query, limit=limit) if h.episode_id}
