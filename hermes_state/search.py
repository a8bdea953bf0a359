"""Message search: the three query paths of upstream's ``search_messages`` (SPEC §9, SR-1 … SR-16).

The query language lives in :mod:`hermes_state.query` and the structured engine in
:mod:`hermes_state.search_engine`; the two entry points are:

* :func:`search_messages` — upstream's list-of-dicts API, result for result: same sanitiser,
  same routing, same ``ORDER BY rank`` (exact bm25) on the FTS paths, same snippets and
  context. The SR-16 improvements apply only to queries upstream cannot serve (it returns
  ``[]`` for them: syntax errors, Latin text glued to CJK, phrases on the CJK paths) and to
  the LIKE path, which scans newest-first by rowid and stops at ``offset + limit`` instead of
  sorting every match. The LIKE path first reads only the newest ``LIKE_FIRST_ROWS``
  messages (enough for frequent terms), then asks the trigram index whether any term can
  match at all (see :func:`_definitely_absent`), and scans the table only if one can: the
  rows returned are exactly the plain scan's, an absent term costs ~1 ms instead of a scan.
* :func:`search` (``SessionDB.search``) — the structured search the browser and benchmark
  use, built for speed on large stores (see "Design" below). It returns a
  :class:`~hermes_state.models.SearchResult` that says which path served the query, how the
  hits were ranked, an estimate of the total, and the elapsed time; each hit carries its
  snippet as plain text plus match spans, so the UI never parses markers.

Query pipeline
--------------
``sanitize_fts5_query`` is upstream's sanitiser, unchanged (SR-6; the SR-7 rows 1–32 are
tests). Its output then goes through :func:`prepare_fts_query`, a *later* stage that repairs
what FTS5 would reject (SR-16): a query FTS5 already parses is passed through byte for byte;
otherwise every whitespace-separated chunk holding ASCII punctuation (``TODO:``, ``.env``,
``-rf``, ``--force``, ``user@example.com``, ``100%``) becomes a quoted phrase, chunks with no
letters or digits are dropped, and dangling or adjacent operators are collapsed
(``a AND OR b`` → ``a OR b``).

Design (speed, :func:`search`)
------------------------------
Upstream's ``ORDER BY rank`` computes bm25 for *every* matching row, and FTS5's bm25 first
counts each phrase's matches over the whole table (``xQueryPhrase``): ~3 µs per matching row,
so ~150 ms for a word in 5 % of a million messages and ~1 s for ``the``. Walking the same
MATCH by ``rowid DESC`` with a LIMIT costs a fraction of a microsecond per row. The design
therefore never lets the cost of a query grow with the number of its matches:

1. **Probe.** ``MATCH … ORDER BY rowid DESC LIMIT K`` (K = 512) gives an exact count for
   queries with at most K matches, else a density over the newest rows that extrapolates to
   the whole table (the row count comes from FTS5's own averages record, so no
   ``COUNT(*)``). Each phrase is probed the same way, which also yields its document
   frequency. This replaces ``fts5vocab`` lookups of whole words: a vocab row for a term
   has to walk the term's whole doclist (~2 ms for ``the`` at 100k messages, ~40 ms at 1M),
   while a probe is bounded by K. In ``auto`` mode the first scan of the window (below) is
   itself the probe, so a one-word query runs one FTS statement -- unless it is one whole
   word (no ``*``: a first key, a 1-2 letter word): that is probed by rowid first (up to
   ``EXACT_BM25_MAX_ROWS / 2`` rows of one doclist), and when exact bm25 is affordable FTS5
   ranks at once, no window highlighted for nothing. ``word*`` prefixes are the
   exception: without a prefix index FTS5 merges every doclist of the prefix up front on each
   execution, so a TEMP ``fts5vocab`` (type ``instance``, sought term by term: no doclist is
   read) expands them once into ``("word1" OR "word2" …)`` (at most ``MAX_PREFIX_TERMS``
   terms), which FTS5 iterates lazily; the expansion is kept per connection until a commit,
   and a longer prefix typed next is the same list filtered.
2. **Choose the ranking.** If the work bm25 would do (the sum of the phrases' frequencies plus
   the matches) is small (≤ ``EXACT_BM25_MAX_ROWS``), FTS5 ranks exactly: ``bm25``. If every
   phrase matches a large share of the corpus (> ``COMMON_SHARE``), relevance means little
   and hits come newest first: ``newest``. Otherwise the newest ``WINDOW`` matches are fetched
   with ``highlight()`` and scored in Python with the bm25 formula (k1 = 1.2, b = 0.75) using
   the probed document frequencies for IDF: ``bm25-recent-window`` (plain ``bm25`` when the
   window held every match). Pages past the window continue newest first, so paging is stable.
   A query of plain ASCII words (ANDed, single words ORed, or one chain with ``NOT`` words)
   reads the window's text unmarked and marks it in Python, as unicode61 would, wherever
   that is exact; FTS5 marks the rest (``search_engine._Light``).
3. **CJK.** Tokens of ≥ 3 characters go to the trigram table as quoted substrings. A token of
   1–2 characters cannot match a trigram directly, but every occurrence of it is followed by
   some character in the indexed text (ST-4 always appends ``' ' || tool_name || ' ' ||
   tool_calls``, and tool-call JSON is ASCII), so the documents containing it are exactly
   those containing one of the trigrams that *start* with it. A TEMP ``fts5vocab`` table on
   the reader's own connection (never in the shared schema) lists those trigrams with one
   index range seek; an absent term is answered in well under a millisecond, a present one
   becomes ``("ab1" OR "ab2" …)`` on the trigram table with the query's AND/OR/NOT intact.
   Before the vocabulary, a LIKE pass over the newest ``LIKE_FIRST_ROWS`` messages serves
   frequent short tokens in about a millisecond. Only when a token starts more than
   ``MAX_EXPANSION`` distinct trigrams (it is then very frequent) does the full LIKE path
   run, newest first, stopping at ``offset + limit``. Short-token queries keep their
   AND/OR/NOT structure in :func:`search` (``서버 배포`` needs both words, as on the other
   paths); :func:`search_messages` keeps upstream's OR of the terms (SR-11).
4. **Bounded scans.** Scans that filters may make long (source/role filters, LIKE) stop at a
   time budget and say so in ``note``.
5. **Typing narrows.** Each key typed at the end of a word asks for a subset of the last
   query's matches (``dock*`` → ``docke*``). While nothing is committed, the connection keeps
   its last window scan; a narrower query of plain ASCII words takes the rows among it that
   still match (told by their highlighted tokens, by the v30 index's tool columns read from
   ``messages``, or, when neither can tell, by FTS5 in one index-only statement), trims
   their highlights, and reads older matches only when that scan stopped short of the
   oldest. Phrase probes, the last window ranking, the tokens of the tool columns read
   and the last answer's hits (a key that leaves the page as it was rebuilds none of them)
   are kept the same way. The answers are
   a fresh search's (``search_engine._scan_window``); ``search_engine.forget_answers`` drops
   what is kept (the bench does, to time a repeated query doing its work).

Nothing is written to the database; the only objects created are TEMP ``fts5vocab`` tables
on the connection doing the search.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .query import (
    CjkRoute,
    contains_cjk,
    escape_like,
    is_cjk_codepoint,
    limit_query,
    OPERATORS,
    parse_fts_query,
    ParsedQuery,
    QueryItem,
    route_cjk,
    sanitize_fts5_query,
    trigram_match,
)

if TYPE_CHECKING:  # pragma: no cover
    from .db import SessionDB


FTS_TABLE = "messages_fts"
TRIGRAM_TABLE = "messages_fts_trigram"


_LIKE_CLAUSE = (
    "(m.content LIKE ? ESCAPE '\\' OR m.tool_name LIKE ? ESCAPE '\\' "
    "OR m.tool_calls LIKE ? ESCAPE '\\')"
)


_LIKE_CLAUSE_NOT_NULL = (
    "(COALESCE(m.content, '') LIKE ? ESCAPE '\\' OR COALESCE(m.tool_name, '') LIKE ? ESCAPE '\\' "
    "OR COALESCE(m.tool_calls, '') LIKE ? ESCAPE '\\')"
)


def like_clause(term: str, not_null: bool = False) -> tuple[str, list[str]]:
    pattern = "%" + escape_like(term) + "%"
    return (_LIKE_CLAUSE_NOT_NULL if not_null else _LIKE_CLAUSE), [pattern, pattern, pattern]


def filter_sql(
    source_filter: Sequence[str] | None,
    exclude_sources: Sequence[str] | None,
    role_filter: Sequence[str] | None,
    findable: str = "m.active = 1",
    shown: str = "1",
) -> tuple[list[str], list[Any]]:
    """SR-4: the same source / exclude / role clauses on every path, and UC-3's rules of what
    can be found (``findable``, from :meth:`hermes_state.visibility.Rules.findable`: never a
    rewound row or scaffolding; compacted history is found) and in which sessions (``shown``,
    :meth:`~hermes_state.visibility.Rules.not_hidden`: not a hidden session's, unless asked)."""
    clauses: list[str] = [findable]
    if shown != "1":
        clauses.append(shown)
    params: list[Any] = []
    if source_filter is not None:
        values = list(source_filter)
        clauses.append(f"s.source IN ({','.join('?' for _ in values)})")
        params.extend(values)
    if exclude_sources is not None:
        values = list(exclude_sources)
        clauses.append(f"s.source NOT IN ({','.join('?' for _ in values)})")
        params.extend(values)
    if role_filter:
        values = list(role_filter)
        clauses.append(f"m.role IN ({','.join('?' for _ in values)})")
        params.extend(values)
    return clauses, params


def where_clause(clauses: Iterable[str]) -> str:
    clauses = list(clauses)
    return (" AND " + " AND ".join(clauses)) if clauses else ""


def safe_int(value: Any, default: int) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError, OverflowError):
        return default


# ---------------------------------------------------------------------------- search_messages

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
    db: "SessionDB",
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
        source_filter, exclude_sources, role_filter, db.rules.findable("m"), db.rules.not_hidden("s")
    )
    where_extra = where_clause(filters)

    # A store from before schema 10, opened without migrating it (UC-8), has no trigram
    # table: its substrings are found by LIKE (path C), as that store's own upstream did.
    trigram = db.store.fts_table_exists(TRIGRAM_TABLE)

    def run(conn: sqlite3.Connection) -> list[dict]:
        if not contains_cjk(q):
            return _path_a(conn, query, q, where_extra, filter_params, limit, offset)
        route = route_cjk(q)
        if route.path == "B" and trigram:
            return _path_b(conn, route.tokens, where_extra, filter_params, limit, offset)
        return _path_c(conn, route, where_extra, filter_params, limit, offset)

    try:
        return db.store.read(run)
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
    count = _probe_count(conn, TRIGRAM_TABLE, match, EXACT_BM25_MAX_ROWS)
    if count is None or count == 0:
        return []
    order = "rank" if count <= EXACT_BM25_MAX_ROWS else f"{TRIGRAM_TABLE}.rowid DESC"
    try:
        return conn.execute(
            _fts_sql(TRIGRAM_TABLE, where_extra, order), [match, *filter_params, limit, offset]
        ).fetchall()
    except sqlite3.OperationalError:
        return []


def positive_query_terms(parsed: ParsedQuery) -> list[tuple[QueryItem, list[QueryItem]]]:
    return [clause for group in parsed.groups() for clause in group]


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
            floor = int(conn.execute("SELECT COALESCE(max(id), 0) FROM messages").fetchone()[0]) - LIKE_FIRST_ROWS
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
#: Newest messages a LIKE pass over 1–2 character CJK tokens reads before the vocabulary.
LIKE_FIRST_ROWS = 3000


# ---------------------------------------------------------------------------- CJK (search)

def trigram_vocab(conn: sqlite3.Connection) -> str:
    """A TEMP fts5vocab over the trigram table on this connection (never in ``main``)."""
    name = "temp.hermes_search_trigram_vocab"
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {TRIGRAM_TABLE}, row)"
    )
    return name

#: Above this much bm25 work (matching rows plus the phrases' own frequencies) FTS5's exact
#: ranking is not used by :func:`search` in ``auto`` mode (~3 µs per row on a 2-core box).
EXACT_BM25_MAX_ROWS = 3000
