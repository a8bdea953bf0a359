"""The SQL every search path shares: the index tables' names, the filter clauses of a search
(SR-4, UC-3), LIKE clauses, and the TEMP vocabulary of the substring index."""

from __future__ import annotations

import sqlite3
from typing import Any, Iterable, Sequence

from ..query import ParsedQuery, QueryItem, escape_like

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


def positive_query_terms(parsed: ParsedQuery) -> list[tuple[QueryItem, list[QueryItem]]]:
    return [clause for group in parsed.groups() for clause in group]


def trigram_vocab(conn: sqlite3.Connection) -> str:
    """A TEMP fts5vocab over the trigram table on this connection (never in ``main``)."""
    name = "temp.hermes_search_trigram_vocab"
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {TRIGRAM_TABLE}, row)"
    )
    return name


# ---------------------------------------------------------------------------- the indexes' words


def quote(text: str) -> str:
    """``text`` as one FTS5 string (a term of the vocabulary, a phrase)."""
    return '"' + text.replace('"', '""') + '"'


def next_prefix_bound(prefix: str) -> str:
    """Above every term that starts with ``prefix`` (``term >= prefix AND term < bound``)."""
    return prefix + "\U0010ffff"


def _word_terms_vocab(conn: sqlite3.Connection) -> str:
    """A TEMP ``fts5vocab`` of type ``instance`` over ``messages_fts`` (never in ``main``)."""
    name = "temp.hermes_search_word_terms"
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {FTS_TABLE}, instance)")
    return name


def words_starting(conn: sqlite3.Connection, folded: str, most: int) -> list[str] | None:
    """The word index's terms that start with ``folded``; None when there are more than
    ``most``.

    Not from an ``fts5vocab`` *row* table: each of its rows walks the term's whole doclist to
    count documents (~30 ns a document: 45 ms for ``the*`` at 1M messages, 10 ms for
    ``doc*``, five times that at 5M), a cost that grows with the store. The terms are
    enumerated instead by seeking an ``instance`` table one term at a time (``term >= t ||
    x'01'`` seeks past ``t`` without reading its doclist): tens of microseconds a term
    whatever its frequency."""
    vocab = _word_terms_vocab(conn)
    sql = f"SELECT term FROM {vocab} WHERE term >= ? AND term < ? LIMIT 1"
    bound = next_prefix_bound(folded)
    terms: list[str] = []
    low = folded
    while True:
        row = conn.execute(sql, (low, bound)).fetchone()
        if row is None:
            return terms
        if len(terms) == most:
            return None
        terms.append(str(row[0]))
        low = terms[-1] + "\x01"


def trigrams_starting(conn: sqlite3.Connection, term: str, most: int) -> list[str] | None:
    """The trigram index's terms that start with ``term`` (folded; a 1-2 character CJK word):
    None when there are more than ``most``."""
    vocab = trigram_vocab(conn)
    folded = term.lower()
    rows = conn.execute(
        f"SELECT term FROM {vocab} WHERE term >= ? AND term < ? LIMIT ?",
        (folded, next_prefix_bound(folded), most + 1),
    ).fetchall()
    if len(rows) > most:
        return None
    return [str(row[0]) for row in rows]
