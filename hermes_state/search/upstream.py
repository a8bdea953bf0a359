"""Upstream's ``search_messages`` (SPEC §9, SR-1 … SR-16): its three query paths, result for
result -- the same sanitiser, routing, ``ORDER BY rank`` (exact bm25) on the FTS paths,
snippets and context -- with the SR-16 repairs only where upstream returns ``[]`` and on
its LIKE path (see :mod:`hermes_state.search`)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Sequence

from ..query import (
    OPERATORS,
    CjkRoute,
    contains_cjk,
    is_cjk_codepoint,
    limit_query,
    parse_fts_query,
    route_cjk,
    sanitize_fts5_query,
    trigram_match,
)
from .sql import (
    FTS_TABLE,
    TRIGRAM_TABLE,
    filter_sql,
    like_clause,
    positive_query_terms,
    safe_int,
    trigram_vocab,
    where_clause,
)
from .tuning import TUNING

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store


_RESULT_COLUMNS = (
    "m.id, m.session_id, m.role, {snippet} AS snippet, m.content, m.timestamp, m.tool_name, "
    "s.source, s.model, s.started_at AS session_started"
)


def _fts_sql(table: str, where_extra: str, order: str) -> str:
    snippet = f"snippet({table}, 0, '>>>', '<<<', '...', 40)"
    return (
        f"SELECT {_RESULT_COLUMNS.format(snippet=snippet)} FROM {table} "
        f"JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id "
        f"WHERE {table} MATCH ?{where_extra} ORDER BY {order} LIMIT ? OFFSET ?"
    )


def _context(conn: sqlite3.Connection, match: dict) -> list[dict]:
    """SR-3: previous, self and next message of the same session by ``(timestamp, id)``."""
    sid, ts, mid = match["session_id"], match["timestamp"], match["id"]
    prev = conn.execute(
        "SELECT role, content FROM messages WHERE session_id = ? AND timestamp <= ? "
        "AND (timestamp < ? OR id < ?) ORDER BY timestamp DESC, id DESC LIMIT 1",
        (sid, ts, ts, mid),
    ).fetchone()
    nxt = conn.execute(
        "SELECT role, content FROM messages WHERE session_id = ? AND timestamp >= ? "
        "AND (timestamp > ? OR id > ?) ORDER BY timestamp, id LIMIT 1",
        (sid, ts, ts, mid),
    ).fetchone()
    context = []
    if prev is not None:
        context.append({"role": prev[0], "content": (prev[1] or "")[:200]})
    context.append({"role": match["role"], "content": (match.get("content") or "")[:200]})
    if nxt is not None:
        context.append({"role": nxt[0], "content": (nxt[1] or "")[:200]})
    return context


def _finish_rows(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[dict]:
    results = []
    for row in rows:
        match = dict(row)
        try:
            match["context"] = _context(conn, match)
        except (sqlite3.Error, ValueError, UnicodeError):
            match["context"] = []
        match.pop("content", None)
        results.append(
            {
                "id": match["id"],
                "session_id": match["session_id"],
                "role": match["role"],
                "snippet": match["snippet"],
                "timestamp": match["timestamp"],
                "tool_name": match["tool_name"],
                "source": match["source"],
                "model": match["model"],
                "session_started": match["session_started"],
                "context": match["context"],
            }
        )
    return results


def search_messages(
    store: "Store",
    query: str,
    source_filter: Sequence[str] | None = None,
    exclude_sources: Sequence[str] | None = None,
    role_filter: Sequence[str] | None = None,
    limit: int = 20,
    offset: int = 0,
) -> list[dict]:
    """Upstream-compatible full-text search (SR-1 … SR-16); never raises on query text.

    UC-3: never a rewound row, scaffolding, or a message of a hidden session (v30's
    ``sessions.hidden``; this call has no way to ask for them, as upstream's has none)."""
    if not isinstance(query, str) or not query.strip():
        return []
    query, _cut = limit_query(query)
    limit = safe_int(limit, 20)
    offset = safe_int(offset, 0)
    try:
        q = sanitize_fts5_query(query)
    except Exception:  # pragma: no cover - the sanitiser is pure string work
        return []
    if not q:
        return []
    filters, filter_params = filter_sql(
        source_filter, exclude_sources, role_filter, store.rules.findable("m"), store.rules.not_hidden("s")
    )
    where_extra = where_clause(filters)

    # A store from before schema 10, opened without migrating it (UC-8), has no trigram
    # table: its substrings are found by LIKE (path C), as that store's own upstream did.
    trigram = store.fts_table_exists(TRIGRAM_TABLE)

    def run(conn: sqlite3.Connection) -> list[dict]:
        if not contains_cjk(q):
            return _path_a(conn, query, q, where_extra, filter_params, limit, offset)
        route = route_cjk(q)
        if route.path == "B" and trigram:
            return _path_b(conn, route.tokens, where_extra, filter_params, limit, offset)
        return _path_c(conn, route, where_extra, filter_params, limit, offset)

    try:
        return store.read(run)
    except (sqlite3.Error, UnicodeError, ValueError, OverflowError):
        return []


def _path_a(conn, query, q, where_extra, filter_params, limit, offset) -> list[dict]:
    parsed = parse_fts_query(q)
    match = parsed.render()
    rows: list[sqlite3.Row] = []
    if match:
        try:
            rows = conn.execute(
                _fts_sql(FTS_TABLE, where_extra, "rank"),
                [match, *filter_params, limit, offset],
            ).fetchall()
        except sqlite3.OperationalError:
            rows = []
    if not rows and len(query.strip()) >= 3 and parsed.terms:
        # SR-16: Latin glued to CJK (``修改youer服务端``) is one unicode61 token, so look
        # for the words as substrings on the trigram table.
        rows = _trigram_retry(conn, parsed, where_extra, filter_params, limit, offset)
    return _finish_rows(conn, rows)


def _trigram_retry(conn, parsed, where_extra, filter_params, limit, offset) -> list[sqlite3.Row]:
    if offset == 0 and limit == 0:
        return []
    if any(len(item.text) < 3 for item, _neg in positive_query_terms(parsed)):
        return []  # a substring under 3 characters never matches a trigram
    match = " ".join(item.render_substring() for item in parsed.items)
    # Exact bm25 only when cheap: upstream returned [] here, so this must not become slow.
    count = _probe_count(conn, TRIGRAM_TABLE, match, TUNING.EXACT_BM25_MAX_ROWS)
    if count is None or count == 0:
        return []
    order = "rank" if count <= TUNING.EXACT_BM25_MAX_ROWS else f"{TRIGRAM_TABLE}.rowid DESC"
    try:
        return conn.execute(
            _fts_sql(TRIGRAM_TABLE, where_extra, order), [match, *filter_params, limit, offset]
        ).fetchall()
    except sqlite3.OperationalError:
        return []


def _probe_count(conn, table: str, match: str, cap: int) -> int | None:
    """Number of matches, counted up to ``cap + 1`` newest-first; None on a MATCH error."""
    try:
        rows = conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?",
            (match, cap + 1),
        ).fetchall()
    except sqlite3.OperationalError:
        return None
    return len(rows)


def _path_b(conn, tokens, where_extra, filter_params, limit, offset) -> list[dict]:
    if not any(t not in OPERATORS for t in tokens):
        return []
    match = trigram_match(tokens)
    try:
        rows = conn.execute(
            _fts_sql(TRIGRAM_TABLE, where_extra, "rank"), [match, *filter_params, limit, offset]
        ).fetchall()
    except sqlite3.OperationalError:
        return []
    return _finish_rows(conn, rows)


def _path_c(conn, route: CjkRoute, where_extra, filter_params, limit, offset) -> list[dict]:
    terms = route.terms or [route.raw]
    clauses, params = [], []
    for term in terms:
        clause, values = like_clause(term)
        clauses.append(clause)
        params.extend(values)
    snippet = "substr(m.content, max(1, instr(m.content, ?) - 40), 120)"
    base = (
        f"SELECT {_RESULT_COLUMNS.format(snippet=snippet)} FROM messages m "
        f"JOIN sessions s ON s.id = m.session_id WHERE ({' OR '.join(clauses)}){where_extra}"
    )
    # SR-16: newest first by rowid, so SQLite walks the table backwards and stops at
    # offset + limit matches instead of sorting every match.
    tail = " ORDER BY m.id DESC LIMIT ? OFFSET ?"
    args = [terms[0], *params, *filter_params]
    try:
        if limit > 0:
            # Frequent terms fill the page from the newest messages alone.
            floor = int(conn.execute("SELECT COALESCE(max(id), 0) FROM messages").fetchone()[0]) - TUNING.LIKE_FIRST_ROWS
            rows = conn.execute(base + " AND m.id > ?" + tail, [*args, floor, limit, offset]).fetchall()
            if len(rows) == limit:
                return _finish_rows(conn, rows)
            # Absent terms need no scan: the trigram index proves it (same result, []).
            present = [term for term in terms if not _definitely_absent(conn, term)]
            if not present:
                return []
            if len(present) < len(terms):
                # An absent term adds nothing to the OR but its LIKE on every row of the
                # scan: leave it out (same rows; the snippet still anchors on terms[0]).
                clauses, params = [], []
                for term in present:
                    clause, values = like_clause(term)
                    clauses.append(clause)
                    params.extend(values)
                base = (
                    f"SELECT {_RESULT_COLUMNS.format(snippet=snippet)} FROM messages m "
                    f"JOIN sessions s ON s.id = m.session_id WHERE ({' OR '.join(clauses)}){where_extra}"
                )
                args = [terms[0], *params, *filter_params]
        rows = conn.execute(base + tail, [*args, limit, offset]).fetchall()
    except sqlite3.OperationalError:
        return []
    return _finish_rows(conn, rows)


def _definitely_absent(conn: sqlite3.Connection, term: str) -> bool:
    """True only if no message can match ``LIKE '%term%'`` (False when unsure).

    A term of ≥ 3 characters is absent iff its trigram phrase matches nothing (both sides are
    case-folded by SQLite, and LIKE only folds ASCII). A shorter one is absent iff no
    indexed trigram starts with it: every occurrence is followed by some character, since
    the indexed text always ends with ``' ' || tool_calls`` and tool-call JSON is ASCII.
    Python's lower() is used for the prefix, so only short terms whose every character is
    ASCII, CJK or caseless (kana extensions, radicals, symbols, emoji: folding leaves them
    alone on both sides) are judged.
    """
    try:
        if len(term) >= 3:
            row = conn.execute(
                f"SELECT 1 FROM {TRIGRAM_TABLE} WHERE {TRIGRAM_TABLE} MATCH ? LIMIT 1",
                ('"' + term.replace('"', '""') + '"',),
            ).fetchone()
            return row is None
        if not term or not all(
            ch.isascii() or is_cjk_codepoint(ord(ch)) or ch.lower() == ch == ch.upper() for ch in term
        ):
            return False
        vocab = trigram_vocab(conn)
        folded = term.lower()
        row = conn.execute(
            f"SELECT 1 FROM {vocab} WHERE term >= ? AND term < ? LIMIT 1",
            (folded, folded + "\U0010ffff"),
        ).fetchone()
        return row is None
    except sqlite3.Error:
        return False
