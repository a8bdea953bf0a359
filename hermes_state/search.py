"""Message search: sanitiser, CJK routing, the three query paths (SPEC §9, SR-1 … SR-16).

Two entry points share this module:

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
   itself the probe, so a one-word query runs one FTS statement. ``word*`` prefixes are the
   exception: without a prefix index FTS5 merges every doclist of the prefix up front on each
   execution, so a TEMP ``fts5vocab`` expands them once into ``("word1" OR "word2" …)``
   (at most ``MAX_PREFIX_TERMS`` terms), which FTS5 iterates lazily.
2. **Choose the ranking.** If the work bm25 would do (the sum of the phrases' frequencies plus
   the matches) is small (≤ ``EXACT_BM25_MAX_ROWS``), FTS5 ranks exactly: ``bm25``. If every
   phrase matches a large share of the corpus (> ``COMMON_SHARE``), relevance means little
   and hits come newest first: ``newest``. Otherwise the newest ``WINDOW`` matches are fetched
   with ``highlight()`` and scored in Python with the bm25 formula (k1 = 1.2, b = 0.75) using
   the probed document frequencies for IDF: ``bm25-recent-window`` (plain ``bm25`` when the
   window held every match). Pages past the window continue newest first, so paging is stable.
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

Nothing is written to the database; the only objects created are TEMP ``fts5vocab`` tables
on the connection doing the search.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .db import SessionDB
    from .models import SearchResult

FTS_TABLE = "messages_fts"
TRIGRAM_TABLE = "messages_fts_trigram"

#: Markers used internally for snippet()/highlight(); never shown to a user. Two control
#: characters that message text practically never contains.
MARK_OPEN = "\x02"
MARK_CLOSE = "\x03"
#: Markers of upstream's snippets (SR-13), kept in ``SearchHit.raw_snippet``.
UPSTREAM_OPEN = ">>>"
UPSTREAM_CLOSE = "<<<"

# ---------------------------------------------------------------------------- CJK (SR-8)

_CJK_RANGES = (
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0x3400, 0x4DBF),  # Extension A
    (0x20000, 0x2A6DF),  # Extension B
    (0x3000, 0x303F),  # CJK Symbols and Punctuation
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0xAC00, 0xD7AF),  # Hangul Syllables
)


def is_cjk_codepoint(cp: int) -> bool:
    """True if code point ``cp`` lies in one of SR-8's CJK ranges."""
    for low, high in _CJK_RANGES:
        if low <= cp <= high:
            return True
    return False


def contains_cjk(text: str) -> bool:
    """Any CJK code point in ``text`` (SR-8)."""
    if not text:
        return False
    return any(is_cjk_codepoint(ord(ch)) for ch in text)


def count_cjk(text: str) -> int:
    """The number of CJK code points in ``text`` (SR-8)."""
    if not text:
        return 0
    return sum(1 for ch in text if is_cjk_codepoint(ord(ch)))


# ---------------------------------------------------------------------------- sanitiser (SR-6)

_QUOTED_RE = re.compile(r'"[^"]*"')
_SPECIALS_RE = re.compile(r'[+{}()"^]')
_STARS_RE = re.compile(r"\*+")
_LEADING_STAR_RE = re.compile(r"(^|\s)\*")
_LEADING_OP_RE = re.compile(r"(?i)^(AND|OR|NOT)\b\s*")
_TRAILING_OP_RE = re.compile(r"(?i)\s+(AND|OR|NOT)\s*$")
_COMPOUND_RE = re.compile(r"\b(\w+(?:[._-]\w+)+)\b")


def sanitize_fts5_query(query: str) -> str:
    """Upstream's FTS5 query sanitiser, step for step (SR-6, examples in SR-7)."""
    quoted: list[str] = []

    def protect(match: re.Match) -> str:
        quoted.append(match.group(0))
        return f"\x00Q{len(quoted) - 1}\x00"

    text = _QUOTED_RE.sub(protect, query)
    text = _SPECIALS_RE.sub(" ", text)
    text = _STARS_RE.sub("*", text)
    text = _LEADING_STAR_RE.sub(r"\1", text)
    text = _LEADING_OP_RE.sub("", text.strip())
    text = _TRAILING_OP_RE.sub("", text.strip())
    text = _COMPOUND_RE.sub(r'"\1"', text)
    for index, phrase in enumerate(quoted):
        text = text.replace(f"\x00Q{index}\x00", phrase)
    return text.strip()


# ---------------------------------------------------------------------------- SR-16 repair

_FTS_SPACE = " \t\n\r\f\v"
_OPERATORS = ("AND", "OR", "NOT")


def _is_bareword_char(ch: str) -> bool:
    """FTS5's bareword alphabet: non-ASCII, ASCII letters/digits, ``_`` and 0x1A."""
    o = ord(ch)
    if o > 127:
        return True
    return ch.isalnum() or ch == "_" or o == 0x1A


def _has_token_char(text: str) -> bool:
    """Whether the tokenizer would index anything of ``text`` (a letter or digit)."""
    return any(ch.isalnum() for ch in text)


@dataclass
class QueryItem:
    """One element of a parsed FTS5 query: a word, a quoted phrase, or an operator."""

    kind: str  # "word" | "phrase" | "op"
    text: str
    prefix: bool = False

    def render(self) -> str:
        if self.kind == "op":
            return self.text
        if self.kind == "word":
            return self.text + ("*" if self.prefix else "")
        return '"' + self.text.replace('"', '""') + '"' + ("*" if self.prefix else "")

    def render_substring(self) -> str:
        """As a trigram-table substring phrase (prefix stars dropped: substrings are prefixes)."""
        if self.kind == "op":
            return self.text
        return '"' + self.text.replace('"', '""') + '"'


@dataclass
class ParsedQuery:
    """A sanitised query as FTS5 will see it, plus whether it needed repair."""

    items: list[QueryItem] = field(default_factory=list)
    #: True when the sanitised text was already valid FTS5 and is used verbatim.
    verbatim: bool = True
    sanitized: str = ""

    def render(self) -> str:
        if self.verbatim:
            return self.sanitized
        return " ".join(item.render() for item in self.items)

    @property
    def terms(self) -> list[QueryItem]:
        return [item for item in self.items if item.kind != "op"]

    def groups(self) -> list[list[tuple[QueryItem, list[QueryItem]]]]:
        """FTS5 precedence (NOT > AND > OR): OR-separated groups of ``(term, [negated])``."""
        groups: list[list[tuple[QueryItem, list[QueryItem]]]] = [[]]
        pending_not = False
        for item in self.items:
            if item.kind == "op":
                if item.text == "OR":
                    if groups[-1]:
                        groups.append([])
                    pending_not = False
                elif item.text == "NOT":
                    pending_not = bool(groups[-1])
                continue
            if pending_not and groups[-1]:
                groups[-1][-1][1].append(item)
            else:
                groups[-1].append((item, []))
            pending_not = False
        return [group for group in groups if group]


def _lex_chunks(text: str) -> list[list[tuple[str, str]]]:
    """Split ``text`` FTS5-style into whitespace-separated chunks of pieces.

    A piece is ``("phrase", inner)``, ``("word", run)``, ``("star", "*")``,
    ``("special", ch)`` or ``("open", rest)`` for an unterminated quote.
    """
    chunks: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _FTS_SPACE:
            if current:
                chunks.append(current)
                current = []
            i += 1
            continue
        if ch == '"':
            end = text.find('"', i + 1)
            if end < 0:
                current.append(("open", text[i + 1 :]))
                i = n
            else:
                current.append(("phrase", text[i + 1 : end]))
                i = end + 1
            continue
        if ch == "*":
            current.append(("star", "*"))
            i += 1
            continue
        if _is_bareword_char(ch):
            j = i
            while j < n and _is_bareword_char(text[j]):
                j += 1
            current.append(("word", text[i:j]))
            i = j
            continue
        current.append(("special", ch))
        i += 1
    if current:
        chunks.append(current)
    return chunks


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 for ch in text)


def _clean_control(text: str) -> str:
    return "".join(" " if ord(ch) < 32 else ch for ch in text)


def parse_fts_query(sanitized: str) -> ParsedQuery:
    """Parse sanitiser output into items; repair it if FTS5 would reject it (SR-16)."""
    parsed = ParsedQuery(sanitized=sanitized)
    verbatim = True
    items: list[QueryItem] = []
    for chunk in _lex_chunks(sanitized):
        kinds = {kind for kind, _ in chunk}
        dirty = bool(kinds & {"special", "open"}) or any(
            kind in ("phrase", "word") and _has_control(value) for kind, value in chunk
        )
        if dirty:
            verbatim = False
            raw = "".join(
                f'"{value}"' if kind == "phrase" else ('"' + value if kind == "open" else value)
                for kind, value in chunk
            )
            prefix = raw.endswith("*")
            body = _clean_control(raw.rstrip("*").replace('"', " ")).strip()
            if body and _has_token_char(body):
                items.append(QueryItem("phrase", body, prefix))
            continue
        for kind, value in chunk:
            if kind == "star":
                if items and items[-1].kind != "op" and not items[-1].prefix:
                    items[-1].prefix = True
                continue
            if kind == "word" and value in _OPERATORS and len(chunk) == 1:
                items.append(QueryItem("op", value))
            elif kind == "word":
                items.append(QueryItem("word", value))
            else:
                items.append(QueryItem("phrase", value))
    # Operators: none at either end, none adjacent (keep the last of a run).
    fixed: list[QueryItem] = []
    for item in items:
        if item.kind == "op":
            if not fixed:
                verbatim = False
                continue
            if fixed[-1].kind == "op":
                verbatim = False
                fixed[-1] = item
                continue
        fixed.append(item)
    while fixed and fixed[-1].kind == "op":
        verbatim = False
        fixed.pop()
    # An empty phrase ("") matches nothing in FTS5; keep verbatim semantics for it.
    parsed.items = fixed
    parsed.verbatim = verbatim and bool(fixed)
    if not parsed.verbatim and not any(item.kind != "op" for item in fixed):
        parsed.items = []
    return parsed


def prepare_fts_query(sanitized: str) -> str:
    """The MATCH text for ``messages_fts``: the sanitiser's output, repaired per SR-16.

    Valid FTS5 passes through unchanged, so SR-7 rows 1–32 reach FTS5 exactly as upstream
    sends them. Returns ``""`` when nothing searchable is left.
    """
    return parse_fts_query(sanitized).render()


# ---------------------------------------------------------------------------- CJK routing (SR-9)

_CJK_TOKEN_RE = re.compile(r'"([^"]*)"|([^\s"]+)')


@dataclass
class CjkRoute:
    """Routing of a sanitised query that contains CJK (SR-9, SR-16 phrases honoured)."""

    path: str  # "B" (trigram) or "C" (LIKE)
    tokens: list[str]  # operators upper-cased, phrases as one token
    raw: str

    @property
    def terms(self) -> list[str]:
        return [t for t in self.tokens if t not in _OPERATORS]


def _is_op_token(token: str) -> bool:
    return token.upper() in _OPERATORS


def cjk_tokens(q: str) -> list[str]:
    """Tokens of a CJK query: balanced quoted phrases are one token (SR-16), else split on
    whitespace as upstream does; operator words (any case) are returned upper-cased, and
    dangling or adjacent operators are dropped so the trigram MATCH cannot fail on them."""
    raw_tokens: list[str] = []
    for match in _CJK_TOKEN_RE.finditer(q):
        if match.group(1) is not None:
            phrase = match.group(1).strip()
            if phrase:
                raw_tokens.append(phrase)
        else:
            raw_tokens.append(match.group(2))
    tokens: list[str] = []
    for token in raw_tokens:
        if _is_op_token(token):
            op = token.upper()
            if not tokens:
                continue
            if tokens[-1] in _OPERATORS:
                tokens[-1] = op
                continue
            tokens.append(op)
        else:
            tokens.append(token)
    while tokens and tokens[-1] in _OPERATORS:
        tokens.pop()
    return tokens


def route_cjk(q: str) -> CjkRoute:
    """SR-9 steps 2–3 with the per-token rule: trigram unless a CJK token has 1–2 CJK chars."""
    raw = q.strip('"').strip()
    tokens = cjk_tokens(q)
    terms = [t for t in tokens if t not in _OPERATORS]
    cjk_terms = [t for t in terms if contains_cjk(t)]
    if count_cjk(raw) >= 3 and all(count_cjk(t) >= 3 for t in cjk_terms):
        return CjkRoute("B", tokens, raw)
    return CjkRoute("C", tokens, raw)


def trigram_match(tokens: Sequence[str]) -> str:
    """SR-10: operators verbatim, every other token a quoted substring (inner ``"`` doubled)."""
    return " ".join(
        t if t in _OPERATORS else '"' + t.replace('"', '""') + '"' for t in tokens
    )


# ---------------------------------------------------------------------------- shared SQL

def escape_like(value: str) -> str:
    """Escape ``\\``, ``%`` and ``_`` for ``LIKE … ESCAPE '\\'`` (SR-11)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_LIKE_CLAUSE = (
    "(m.content LIKE ? ESCAPE '\\' OR m.tool_name LIKE ? ESCAPE '\\' "
    "OR m.tool_calls LIKE ? ESCAPE '\\')"
)


_LIKE_CLAUSE_NOT_NULL = (
    "(COALESCE(m.content, '') LIKE ? ESCAPE '\\' OR COALESCE(m.tool_name, '') LIKE ? ESCAPE '\\' "
    "OR COALESCE(m.tool_calls, '') LIKE ? ESCAPE '\\')"
)


def _like_clause(term: str, not_null: bool = False) -> tuple[str, list[str]]:
    pattern = "%" + escape_like(term) + "%"
    return (_LIKE_CLAUSE_NOT_NULL if not_null else _LIKE_CLAUSE), [pattern, pattern, pattern]


def _filter_sql(
    source_filter: Sequence[str] | None,
    exclude_sources: Sequence[str] | None,
    role_filter: Sequence[str] | None,
) -> tuple[list[str], list[Any]]:
    """SR-4: the same source / exclude / role clauses on every path."""
    # UC-3: rewound messages (active = 0) are never found. Every store has the column:
    # v12+ on disk, older read-only stores through the compatibility views (default 1).
    clauses: list[str] = ["m.active = 1"]
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


def _where(clauses: Iterable[str]) -> str:
    clauses = list(clauses)
    return (" AND " + " AND ".join(clauses)) if clauses else ""


def _safe_int(value: Any, default: int) -> int:
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
    """Upstream-compatible full-text search (SR-1 … SR-16); never raises on query text."""
    if not isinstance(query, str) or not query.strip():
        return []
    query, _cut = limit_query(query)
    limit = _safe_int(limit, 20)
    offset = _safe_int(offset, 0)
    try:
        q = sanitize_fts5_query(query)
    except Exception:  # pragma: no cover - the sanitiser is pure string work
        return []
    if not q:
        return []
    filters, filter_params = _filter_sql(source_filter, exclude_sources, role_filter)
    where_extra = _where(filters)

    def run(conn: sqlite3.Connection) -> list[dict]:
        if not contains_cjk(q):
            return _path_a(conn, query, q, where_extra, filter_params, limit, offset)
        route = route_cjk(q)
        if route.path == "B":
            return _path_b(conn, route.tokens, where_extra, filter_params, limit, offset)
        return _path_c(conn, route, where_extra, filter_params, limit, offset)

    try:
        return db._read(run)
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
    if any(len(item.text) < 3 for item, _neg in _positive_terms(parsed)):
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


def _positive_terms(parsed: ParsedQuery) -> list[tuple[QueryItem, list[QueryItem]]]:
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
    if not any(t not in _OPERATORS for t in tokens):
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
        clause, values = _like_clause(term)
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
                    clause, values = _like_clause(term)
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
        vocab = _trigram_vocab(conn)
        folded = term.lower()
        row = conn.execute(
            f"SELECT 1 FROM {vocab} WHERE term >= ? AND term < ? LIMIT 1",
            (folded, folded + "\U0010ffff"),
        ).fetchone()
        return row is None
    except sqlite3.Error:
        return False


#: Above this much bm25 work (matching rows plus the phrases' own frequencies) FTS5's exact
#: ranking is not used by :func:`search` in ``auto`` mode (~3 µs per row on a 2-core box).
EXACT_BM25_MAX_ROWS = 3000


# ============================================================================ structured search

#: Probe size: queries with at most this many matches are counted exactly.
PROBE_ROWS = 512
#: Probe size for a single phrase's document frequency (IDF and the cost decision).
PHRASE_PROBE_ROWS = 256
#: A query whose every positive phrase matches more than this share of messages is ranked
#: newest first in ``auto`` mode: relevance means little there.
COMMON_SHARE = 0.30
#: Matches ranked by the window bm25 when exact bm25 would be too slow.
WINDOW = 400
#: Most trigrams a 1–2 character token may expand to before the LIKE scan is used instead.
MAX_EXPANSION = 300
#: Most vocabulary terms a ``word*`` prefix is expanded to in :func:`search`.
MAX_PREFIX_TERMS = 64
#: Newest messages a LIKE pass over 1–2 character CJK tokens reads before the vocabulary.
LIKE_FIRST_ROWS = 3000
#: Default time budget of scans whose length filters can stretch (LIKE, filtered windows).
DEFAULT_BUDGET_MS = 300.0
#: Longest query searched, in characters and in whitespace-separated words; a longer one is
#: cut (at a word boundary) before anything else. Nobody types more, and every extra word or
#: trigram is another index walk: at 100k messages a 10,000-character word took ~0.4 s and
#: 500 × ``docker AND`` took 2 s in :func:`search_messages` (0.3 s in :func:`search`).
MAX_QUERY_CHARS = 500
MAX_QUERY_WORDS = 32
#: Snippet width in characters (FTS5's 40 tokens are about this much English).
SNIPPET_CHARS = 200
_SNIPPET_LEAD = 50

_BM25_K1 = 1.2
_BM25_B = 0.75
_WORD_RE = re.compile(r"[^\W_]+")
_MARKED_RE = re.compile("\x02([^\x03]*)\x03")
_SORTS = ("auto", "rank", "newest")


_LAST_SPACE_RE = re.compile(r"\s(?=\S*$)")


def limit_query(text: str) -> tuple[str, str | None]:
    """``text`` cut to :data:`MAX_QUERY_CHARS` characters (at the last whitespace when
    there is one in the second half) and :data:`MAX_QUERY_WORDS` words; plus a note saying
    so, or None when nothing was cut."""
    note = None
    if len(text) > MAX_QUERY_CHARS:
        head = text[:MAX_QUERY_CHARS]
        space = _LAST_SPACE_RE.search(head)
        text = head[: space.start()] if space and space.start() > MAX_QUERY_CHARS // 2 else head
        note = f"query cut to its first {len(text)} characters"
    words = text.split()
    if len(words) > MAX_QUERY_WORDS:
        text = " ".join(words[:MAX_QUERY_WORDS])
        note = f"query cut to its first {MAX_QUERY_WORDS} words"
    return text, note


class _Budget:
    def __init__(self, ms: float) -> None:
        self.deadline = time.perf_counter() + max(1.0, float(ms)) / 1000.0
        self.exhausted = False

    def over(self) -> bool:
        if time.perf_counter() > self.deadline:
            self.exhausted = True
        return self.exhausted


@dataclass
class _Ctx:
    conn: sqlite3.Connection
    filters: list[str]
    params: list[Any]
    limit: int
    offset: int
    sort: str
    budget: _Budget
    notes: list[str] = field(default_factory=list)
    _row_counts: dict[str, int] = field(default_factory=dict)
    _max_rowid: int | None = None

    @property
    def filtered(self) -> bool:
        return bool(self.filters)

    @property
    def want(self) -> int:
        """Rows needed to fill the page and know whether there is more."""
        return self.offset + self.limit + 1

    def max_rowid(self) -> int:
        if self._max_rowid is None:
            row = self.conn.execute("SELECT max(id) FROM messages").fetchone()
            self._max_rowid = int(row[0] or 0)
        return self._max_rowid

    def row_count(self, table: str) -> int:
        if table not in self._row_counts:
            self._row_counts[table] = _fts_row_count(self.conn, table) or max(1, self.max_rowid())
        return self._row_counts[table]


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """SQLite's big-endian varint (FTS5 uses it in its structure records)."""
    value = 0
    for i in range(9):
        if pos + i >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos + i]
        if i == 8:
            return (value << 8) | byte, pos + 9
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, pos + i + 1
    raise ValueError("bad varint")  # pragma: no cover


def _fts_row_count(conn: sqlite3.Connection, table: str) -> int | None:
    """Rows in an FTS5 table from its averages record (``%_data`` id 1), without a scan."""
    try:
        row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
        if row is None or not row[0]:
            return None
        count, _ = _read_varint(bytes(row[0]), 0)
        return count if count > 0 else None
    except (sqlite3.Error, ValueError, TypeError):
        return None


def _probe(ctx: _Ctx, table: str, match: str, k: int) -> tuple[int, bool]:
    """``(estimate, exact)`` of the rows ``match`` selects (filters not applied)."""
    rows = ctx.conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?",
        (match, k + 1),
    ).fetchall()
    if len(rows) <= k:
        return len(rows), True
    span = max(1, ctx.max_rowid() - int(rows[-1][0]) + 1)
    total = ctx.row_count(table)
    return max(len(rows), min(total, int(round(len(rows) / span * total)))), False


# ---------------------------------------------------------------------------- snippets

def _split_marked(marked: str) -> tuple[str, list[tuple[int, int]]]:
    """Text with MARK_OPEN/MARK_CLOSE markers → plain text and the marked spans."""
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    start = None
    i = 0
    n = len(marked)
    while i < n:
        j_open = marked.find(MARK_OPEN, i)
        j_close = marked.find(MARK_CLOSE, i)
        candidates = [j for j in (j_open, j_close) if j >= 0]
        if not candidates:
            plain.append(marked[i:])
            break
        j = min(candidates)
        plain.append(marked[i:j])
        pos += j - i
        if j == j_open:
            start = pos
        elif start is not None:
            if pos > start:
                spans.append((start, pos))
            start = None
        i = j + 1
    return "".join(plain), spans


def find_spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Case-insensitive occurrences of ``terms`` in ``text``, merged, in order."""
    spans: list[tuple[int, int]] = []
    for term in terms:
        if not term:
            continue
        try:
            for m in re.finditer(re.escape(term), text, re.IGNORECASE):
                if m.end() > m.start():
                    spans.append((m.start(), m.end()))
        except re.error:  # pragma: no cover - escaped patterns always compile
            continue
    return _merge_spans(spans)


def _merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


_FLAT = str.maketrans({"\n": " ", "\r": " ", "\t": " ", MARK_OPEN: " ", MARK_CLOSE: " "})


def make_snippet(
    text: str, spans: Sequence[tuple[int, int]], width: int = SNIPPET_CHARS
) -> tuple[str, list[tuple[int, int]], str]:
    """A window of ``text`` around the densest matches: ``(snippet, spans, raw_snippet)``.

    The window (about ``width`` characters, snapped to word boundaries) is the one covering
    the most distinct matched strings, then the most matches, then the earliest. ``...``
    marks a cut, as FTS5's snippet does. Newlines and tabs become spaces.
    """
    text = text or ""
    n = len(text)
    best = (0, min(n, width))
    if spans and n > width:
        best_key = None
        for s_start, _s_end in spans:
            start = max(0, s_start - _SNIPPET_LEAD)
            if start > 0:
                space = text.find(" ", start, s_start)
                if space >= 0:
                    start = space + 1
            end = min(n, start + width)
            inside = [(a, b) for a, b in spans if a >= start and b <= end]
            distinct = len({text[a:b].lower() for a, b in inside})
            key = (distinct, len(inside), -start)
            if best_key is None or key > best_key:
                best_key, best = key, (start, end)
    start, end = best
    if end < n:
        space = text.rfind(" ", start, end)
        covered = max((b for a, b in spans if a >= start and b <= end), default=start)
        if space > covered and space > start + width // 2:
            end = space
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < n else ""
    body = text[start:end].translate(_FLAT)
    shift = len(prefix) - start
    out_spans = [(a + shift, b + shift) for a, b in spans if a >= start and b <= end]
    snippet = prefix + body + suffix
    raw_parts: list[str] = []
    last = 0
    for a, b in out_spans:
        raw_parts.append(snippet[last:a])
        raw_parts.append(UPSTREAM_OPEN + snippet[a:b] + UPSTREAM_CLOSE)
        last = b
    raw_parts.append(snippet[last:])
    return snippet, out_spans, "".join(raw_parts)


# ---------------------------------------------------------------------------- bm25 in a window

@functools.lru_cache(maxsize=4096)
def _fold(token: str) -> str:
    """unicode61's folding, approximately: lower case without diacritics."""
    token = token.lower()
    if token.isascii():
        return token
    decomposed = unicodedata.normalize("NFD", token)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@dataclass
class _Phrase:
    """A phrase of the query, for IDF and term frequencies."""

    match: str  # MATCH text of this phrase alone
    tokens: list[str]
    prefix: bool
    negated: bool
    df: int = 0
    #: Document frequency already known (from the vocabulary): no probe needed.
    df_known: bool = False


def _idf(df: int, total: int) -> float:
    value = math.log((total - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


def _bm25(tfs: Sequence[float], idfs: Sequence[float], dl: float, avgdl: float) -> float:
    norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * (dl / avgdl if avgdl > 0 else 1.0))
    return sum(idf * tf * (_BM25_K1 + 1) / (tf + norm) for tf, idf in zip(tfs, idfs) if tf > 0)


def _tf_unicode61(spans_text: list[str], phrases: list[_Phrase]) -> list[float]:
    counts = [0.0] * len(phrases)
    for piece in spans_text:
        for word in _WORD_RE.findall(piece):
            folded = _fold(word)
            for index, phrase in enumerate(phrases):
                if not phrase.tokens or phrase.negated:
                    continue
                head = phrase.tokens[0]
                if folded == head or (phrase.prefix and len(phrase.tokens) == 1 and folded.startswith(head)):
                    counts[index] += 1
    return counts


def _tf_substring(plain_lower: str, phrases: list[_Phrase]) -> list[float]:
    return [
        float(plain_lower.count(p.tokens[0])) if p.tokens and not p.negated else 0.0
        for p in phrases
    ]


# ---------------------------------------------------------------------------- engine

@dataclass
class _Row:
    rowid: int
    plain: str
    spans: list[tuple[int, int]]
    score: float | None = None


@dataclass
class _Outcome:
    rows: list[_Row]
    ranking: str
    total: int
    exact: bool
    has_more: bool
    path: str


def _scan_sql(table: str, ctx: _Ctx, order: str, extra: str = "", plain: bool = False) -> str:
    """Rowid + highlighted (or, with ``plain``, raw) text of ``table`` matches, joined to the
    filter tables only when filters are set."""
    text = f"{table}.content" if plain else f"highlight({table}, 0, char(2), char(3))"
    select = f"SELECT {table}.rowid, {text}"
    if order == "rank":
        select += f", {table}.rank"
    if ctx.filtered:
        source = (
            f" FROM {table} JOIN messages m ON m.id = {table}.rowid "
            "JOIN sessions s ON s.id = m.session_id"
        )
    else:
        source = f" FROM {table}"
    order_sql = "rank" if order == "rank" else f"{table}.rowid DESC"
    return f"{select}{source} WHERE {table} MATCH ?{extra}{_where(ctx.filters)} ORDER BY {order_sql}"


def _iter_rows(ctx: _Ctx, sql: str, params: list[Any], cap: int, check_budget: bool):
    """Up to ``cap`` rows of ``sql``, stopping early when the budget runs out."""
    cursor = ctx.conn.execute(sql, params)
    got = 0
    while got < cap:
        batch = cursor.fetchmany(min(64, cap - got))
        if not batch:
            return
        for row in batch:
            yield row
        got += len(batch)
        if check_budget and ctx.budget.over():
            return


def _fts_engine(
    ctx: _Ctx,
    table: str,
    match: str,
    phrases: list[_Phrase],
    path: str,
    substring_terms: list[str] | None = None,
    force_newest: bool = False,
) -> _Outcome:
    """Rank ``match`` on ``table`` per the design in the module docstring.

    With ``substring_terms`` (trigram table) rows carry their plain text and spans are the
    terms' occurrences; otherwise ``highlight()`` marks the tokens FTS5 matched.
    """
    plain = substring_terms is not None
    sort = "newest" if force_newest else ctx.sort

    def to_row(rowid: int, text: str, score: float | None) -> _Row:
        if plain:
            return _Row(int(rowid), text or "", find_spans(text or "", substring_terms), score)
        body, spans = _split_marked(text or "")
        return _Row(int(rowid), body, spans, score)

    if sort != "auto":
        total, exact = _probe(ctx, table, match, PROBE_ROWS)
        if total == 0:
            return _Outcome([], "", 0, True, False, path)
        if sort == "rank":
            return _exact_bm25(ctx, table, match, path, total, exact, to_row, plain)
        return _newest(ctx, table, match, path, total, exact, to_row, plain, [])

    # auto: one scan of the newest WINDOW + 1 matches serves as probe, as the candidates of
    # the window ranking and as the page of a newest-first answer.
    rows = list(_iter_rows(ctx, _scan_sql(table, ctx, "rowid", plain=plain), [match, *ctx.params], WINDOW + 1, True))
    if not rows:
        if ctx.budget.exhausted:
            ctx.notes.append("search stopped at its time budget before finding a match")
            return _Outcome([], "", 0, False, False, path)
        return _Outcome([], "", 0, True, False, path)
    n_rows = ctx.row_count(table)
    complete = len(rows) <= WINDOW and not ctx.budget.exhausted
    if complete:
        total, exact = len(rows), True
    else:
        span = max(1, ctx.max_rowid() - int(rows[-1][0]) + 1)
        total, exact = max(len(rows), min(n_rows, int(round(len(rows) / span * n_rows)))), False
    positive = [p for p in phrases if not p.negated]
    if len(phrases) == 1 and positive:
        phrases[0].df = total
    else:
        for phrase in phrases:
            if not phrase.df_known:
                phrase.df = _probe(ctx, table, phrase.match, PHRASE_PROBE_ROWS)[0]
    work = total + sum(p.df for p in phrases)
    if work <= EXACT_BM25_MAX_ROWS:
        return _exact_bm25(ctx, table, match, path, total, exact, to_row, plain)
    if not complete and positive and all(p.df > COMMON_SHARE * n_rows for p in positive):
        return _newest(ctx, table, match, path, total, exact, to_row, plain, rows)
    return _window(ctx, table, match, phrases, path, total, exact, to_row, plain, rows, complete)


def _exact_bm25(ctx, table, match, path, total, exact, to_row, plain) -> _Outcome:
    sql = _scan_sql(table, ctx, "rank", plain=plain) + " LIMIT ? OFFSET ?"
    rows = ctx.conn.execute(sql, [match, *ctx.params, ctx.limit + 1, ctx.offset]).fetchall()
    out = [to_row(r[0], r[1], -float(r[2])) for r in rows[: ctx.limit]]
    more = len(rows) > ctx.limit
    if not more and (out or ctx.offset == 0):
        return _Outcome(out, "bm25", ctx.offset + len(out), True, False, path)
    return _Outcome(out, "bm25", total, exact, more, path)


def _newest(ctx, table, match, path, total, exact, to_row, plain, scanned) -> _Outcome:
    """Newest first; ``scanned`` holds rows already read newest-first (maybe enough)."""
    if len(scanned) >= ctx.want:
        got = scanned
    else:
        sql = _scan_sql(table, ctx, "rowid", plain=plain)
        got = list(_iter_rows(ctx, sql, [match, *ctx.params], ctx.want, ctx.filtered))
    page = got[ctx.offset : ctx.offset + ctx.limit]
    out = [to_row(r[0], r[1], None) for r in page]
    more = len(got) > ctx.offset + ctx.limit
    if ctx.budget.exhausted and len(got) < ctx.want:
        ctx.notes.append("search stopped at its time budget; older matches were not scanned")
    if ctx.filtered and not more and not ctx.budget.exhausted:
        total, exact = len(got), True
    return _Outcome(out, "newest", total, exact and not (ctx.filtered and more), more, path)


def _window(ctx, table, match, phrases, path, total, exact, to_row, plain, rows, complete) -> _Outcome:
    """bm25 (Python, probed IDF) over the newest ``WINDOW`` matches; older ones follow."""
    rows = rows[:WINDOW]
    n_rows = ctx.row_count(table)
    idfs = [_idf(p.df, n_rows) for p in phrases]
    # Only tf and document length are needed here; the page's snippets are built later.
    single = len(phrases) == 1 and not phrases[0].negated and len(phrases[0].tokens) <= 1
    parsed = []
    for rowid, text in rows:
        text = text or ""
        if plain:
            lower = text.lower()
            tfs = _tf_substring(lower, phrases)
            dl = float(len(lower))
        else:
            pieces = _MARKED_RE.findall(text)
            tfs = [float(len(pieces))] if single else _tf_unicode61(pieces, phrases)
            dl = float(text.count(" ") + 1)
        parsed.append((rowid, text, tfs, dl))
    avgdl = (sum(p[3] for p in parsed) / len(parsed)) if parsed else 1.0
    scored: list[tuple[float, int, Any]] = [
        (_bm25(tfs, idfs, dl, avgdl), int(rowid), text) for rowid, text, tfs, dl in parsed
    ]
    scored.sort(key=lambda item: (-item[0], -item[1]))
    start, stop = ctx.offset, ctx.offset + ctx.limit
    page = [to_row(rowid, text, score) for score, rowid, text in scored[start:stop]]
    if complete:
        return _Outcome(page, "bm25", total, exact, len(scored) > stop, path)
    if ctx.budget.exhausted:
        ctx.notes.append(f"ranked the newest {len(rows)} matches (time budget)")
        return _Outcome(page, "bm25-recent-window", total, False, len(scored) > stop, path)
    # Past the window, older matches follow newest first: a stable order for paging.
    more = len(scored) > stop
    if len(page) < ctx.limit and rows:
        skip = max(0, ctx.offset - len(scored))
        need = ctx.limit - len(page)
        older_sql = _scan_sql(table, ctx, "rowid", extra=f" AND {table}.rowid < ?", plain=plain)
        oldest = min(int(r[0]) for r in rows)
        older = list(
            _iter_rows(ctx, older_sql, [match, oldest, *ctx.params], skip + need + 1, True)
        )
        page += [to_row(r[0], r[1], None) for r in older[skip : skip + need]]
        more = len(older) > skip + need
    return _Outcome(page, "bm25-recent-window", total, exact, more, path)


# ---------------------------------------------------------------------------- CJK (search)

def _trigram_vocab(conn: sqlite3.Connection) -> str:
    """A TEMP fts5vocab over the trigram table on this connection (never in ``main``)."""
    name = "temp.hermes_search_trigram_vocab"
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {TRIGRAM_TABLE}, row)"
    )
    return name


def _next_prefix_bound(prefix: str) -> str:
    return prefix + "\U0010ffff"


def _expand_short(ctx: _Ctx, term: str) -> list[str] | None:
    """Trigrams that start with a 1–2 character ``term``: [] when absent, None when too many."""
    vocab = _trigram_vocab(ctx.conn)
    folded = term.lower()
    cursor = ctx.conn.execute(
        f"SELECT term FROM {vocab} WHERE term >= ? AND term < ?",
        (folded, _next_prefix_bound(folded)),
    )
    out: list[str] = []
    while True:
        batch = cursor.fetchmany(64)
        if not batch:
            return out
        out.extend(row[0] for row in batch)
        if len(out) > MAX_EXPANSION:
            return None


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _cjk_search(ctx: _Ctx, q: str) -> tuple[_Outcome | None, str]:
    """Paths B/C for :func:`search`: trigram substrings, short tokens expanded or LIKE."""
    tokens = cjk_tokens(q)
    items = [QueryItem("op", t) if t in _OPERATORS else QueryItem("phrase", t) for t in tokens]
    groups = ParsedQuery(items=items, verbatim=False).groups()
    terms = [item.text for item in items if item.kind != "op"]
    if not terms:
        return None, ""
    if any(len(term) < 3 for term in terms):
        # Frequent short tokens fill a page from the newest few thousand messages: try
        # that cheap LIKE pass first; rare and absent ones go to the trigram vocabulary.
        quick = _like_search(ctx, groups, terms, floor=ctx.max_rowid() - LIKE_FIRST_ROWS)
        if quick is not None:
            return quick, _describe_like(groups)
    expansions: dict[str, list[str] | None] = {}
    for term in terms:
        if len(term) < 3 and term not in expansions:
            expansions[term] = _expand_short(ctx, term)
    if any(value is None for value in expansions.values()):
        return _like_search(ctx, groups, terms), _describe_like(groups)

    def render(term: str) -> str | None:
        if term in expansions:
            found = expansions[term]
            if not found:
                return None
            return "(" + " OR ".join(_quote(t) for t in found) + ")"
        return _quote(term)

    rendered_groups = []
    for group in groups:
        parts = []
        dead = False
        for pos, negs in group:
            head = render(pos.text)
            if head is None:
                dead = True
                break
            neg_parts = [r for r in (render(n.text) for n in negs) if r is not None]
            parts.append("(" + " NOT ".join([head, *neg_parts]) + ")" if neg_parts else head)
        if not dead and parts:
            rendered_groups.append(" AND ".join(parts))
    if not rendered_groups:
        return _Outcome([], "", 0, True, False, "trigram"), trigram_match(tokens)
    match = " OR ".join(
        f"({g})" if len(rendered_groups) > 1 else g for g in rendered_groups
    )
    positive_terms = [pos.text for group in groups for pos, _ in group]
    if expansions:
        outcome = _fts_engine(ctx, TRIGRAM_TABLE, match, [], "trigram", positive_terms, force_newest=True)
        return outcome, match
    phrases = _substring_phrases(groups)
    return _fts_engine(ctx, TRIGRAM_TABLE, match, phrases, "trigram", positive_terms), match


def _substring_phrases(groups) -> list[_Phrase]:
    phrases = []
    for group in groups:
        for pos, negs in group:
            phrases.append(_Phrase(_quote(pos.text), [pos.text.lower()], False, False))
            for neg in negs:
                phrases.append(_Phrase(_quote(neg.text), [neg.text.lower()], False, True))
    return phrases


def _describe_like(groups) -> str:
    out = []
    for group in groups:
        parts = []
        for pos, negs in group:
            parts.append(" NOT ".join([_quote(pos.text), *(_quote(n.text) for n in negs)]))
        out.append(" AND ".join(parts))
    return "LIKE " + " OR ".join(out)


def _like_search(ctx: _Ctx, groups, terms: list[str], floor: int | None = None) -> _Outcome | None:
    """LIKE scan, newest first by rowid, boolean structure kept, stopping at the page.

    With ``floor`` only rows above that rowid are scanned, and None is returned unless
    they hold the whole page (the caller then looks further by other means).
    """
    group_sql, params = [], []
    for group in groups:
        parts = []
        for pos, negs in group:
            clause, values = _like_clause(pos.text)
            parts.append(clause)
            params.extend(values)
            for neg in negs:
                # NOT over NULL columns would be NULL: compare against '' instead.
                clause, values = _like_clause(neg.text, not_null=True)
                parts.append("NOT " + clause)
                params.extend(values)
        group_sql.append("(" + " AND ".join(parts) + ")")
    sql = (
        "SELECT m.id, COALESCE(m.content, '') || ' ' || COALESCE(m.tool_name, '') || ' ' || "
        "COALESCE(m.tool_calls, '') FROM messages m "
        + ("JOIN sessions s ON s.id = m.session_id " if ctx.filtered else "")
        + f"WHERE ({' OR '.join(group_sql)}){_where(ctx.filters)}"
        + (" AND m.id > ?" if floor is not None else "")
        + " ORDER BY m.id DESC"
    )
    args = [*params, *ctx.params] + ([floor] if floor is not None else [])
    got = list(_iter_rows(ctx, sql, args, ctx.want, True))
    if floor is not None and len(got) < ctx.want:
        return None
    page = got[ctx.offset : ctx.offset + ctx.limit]
    positive = [pos.text for group in groups for pos, _ in group]
    rows = []
    for rowid, text in page:
        rows.append(_Row(int(rowid), text or "", find_spans(text or "", positive)))
    more = len(got) > ctx.offset + ctx.limit
    if more:
        span = max(1, ctx.max_rowid() - int(got[-1][0]) + 1)
        total, exact = max(len(got), int(len(got) / span * ctx.row_count(FTS_TABLE))), False
    else:
        total, exact = len(got), not ctx.budget.exhausted
    if ctx.budget.exhausted and not more:
        ctx.notes.append("search stopped at its time budget; older messages were not scanned")
    return _Outcome(rows, "newest", total, exact, more, "like")


# ---------------------------------------------------------------------------- entry point

def _unicode61_phrases(parsed: ParsedQuery, known_df: dict[int, int] | None = None) -> list[_Phrase]:
    phrases = []
    known_df = known_df or {}
    for group in parsed.groups():
        for pos, negs in group:
            for item, negated in [(pos, False), *((n, True) for n in negs)]:
                tokens = [_fold(w) for w in _WORD_RE.findall(item.text)]
                phrase = _Phrase(item.render(), tokens, item.prefix, negated)
                if id(item) in known_df:
                    phrase.df, phrase.df_known = known_df[id(item)], True
                phrases.append(phrase)
    return phrases


def _word_vocab(conn: sqlite3.Connection) -> str:
    """A TEMP fts5vocab over ``messages_fts`` on this connection (never in ``main``)."""
    name = "temp.hermes_search_word_vocab"
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {FTS_TABLE}, row)")
    return name


def _expand_prefixes(ctx: _Ctx, parsed: ParsedQuery) -> tuple[str, dict[int, int]]:
    """Rewrite ``word*`` items as ``(word1 OR word2 …)`` from the vocabulary.

    Without a prefix index FTS5 merges every doclist of a prefix up front, on *each*
    execution (~3–8 ms at 1M messages); an OR of the same terms is iterated lazily, so the
    probes and scans that follow stay cheap, and the vocabulary walk gives the document
    frequency too. Prefixes with more than ``MAX_PREFIX_TERMS`` terms, or non-ASCII ones
    (whose folding only SQLite knows), are left to FTS5.
    """
    known: dict[int, int] = {}
    rendered: list[str] = []
    changed = False
    previous: QueryItem | None = None
    for item in parsed.items:
        # FTS5 accepts implicit AND between phrases only, not before a parenthesis.
        if previous is not None and previous.kind != "op" and item.kind != "op":
            rendered.append("AND")
        previous = item
        text = item.render()
        if item.kind == "word" and item.prefix and item.text.isascii() and _WORD_RE.fullmatch(item.text):
            folded = item.text.lower()
            vocab = _word_vocab(ctx.conn)
            cursor = ctx.conn.execute(
                f"SELECT term, doc FROM {vocab} WHERE term >= ? AND term < ?",
                (folded, _next_prefix_bound(folded)),
            )
            terms = cursor.fetchmany(MAX_PREFIX_TERMS + 1)
            if terms and len(terms) <= MAX_PREFIX_TERMS:
                text = "(" + " OR ".join(_quote(term) for term, _doc in terms) + ")"
                known[id(item)] = min(ctx.row_count(FTS_TABLE), sum(int(doc) for _t, doc in terms))
                changed = True
        rendered.append(text)
    if not changed:
        return parsed.render(), known
    return " ".join(rendered), known


def apply_prefix_last(q: str) -> str:
    """``prefix_last``: make the last word a prefix query if it is a plain word of ≥ 3
    characters (not quoted, not an operator, not CJK, not already a prefix)."""
    chunks = _lex_chunks(q)
    if not chunks:
        return q
    last = chunks[-1]
    if len(last) != 1 or last[0][0] != "word":
        return q
    word = last[0][1]
    if word.upper() in _OPERATORS or len(word) < 3 or contains_cjk(word) or not q.endswith(word):
        return q
    return q + "*"


def _hits(ctx: _Ctx, rows: list[_Row], path: str) -> list:
    from .models import SearchHit

    if not rows:
        return []
    marks = ",".join("?" for _ in rows)
    meta = {
        int(r[0]): r
        for r in ctx.conn.execute(
            "SELECT m.id, m.session_id, m.role, m.timestamp, m.tool_name, s.source, s.model, "
            "s.started_at, s.title FROM messages m LEFT JOIN sessions s ON s.id = m.session_id "
            f"WHERE m.id IN ({marks})",
            [r.rowid for r in rows],
        )
    }
    hits = []
    for row in rows:
        info = meta.get(row.rowid)
        if info is None:  # deleted between the scan and now
            continue
        snippet, spans, raw = make_snippet(row.plain, row.spans)
        hits.append(
            SearchHit(
                id=row.rowid,
                session_id=info[1],
                role=info[2],
                timestamp=info[3] if info[3] is not None else 0.0,
                tool_name=info[4],
                source=info[5] or "",
                model=info[6],
                session_started=info[7],
                session_title=info[8],
                snippet=snippet,
                spans=spans,
                raw_snippet=raw,
                score=row.score,
                path=path,
            )
        )
    return hits


def search(
    db: "SessionDB",
    query: str,
    *,
    limit: int = 20,
    offset: int = 0,
    sort: str = "auto",
    source_filter: Sequence[str] | None = None,
    exclude_sources: Sequence[str] | None = None,
    role_filter: Sequence[str] | None = None,
    prefix_last: bool = False,
    budget_ms: float = DEFAULT_BUDGET_MS,
) -> "SearchResult":
    """Structured, latency-bounded search for the UI (see the module docstring).

    ``sort``: ``auto`` (bm25 when affordable, else bm25 over the newest matches, or newest
    first for near-universal terms), ``rank`` (exact bm25 over every match, like
    :func:`search_messages`; may be slow for very common words) or ``newest``.
    ``prefix_last=True`` treats the last plain word (≥ 3 characters) as a prefix, for
    search-as-you-type: ``dock`` finds ``docker``. Filters as in SR-4. Never raises on the
    query text: failures are reported in ``error``.
    """
    from .models import SearchResult

    started = time.perf_counter()
    if sort not in _SORTS:
        raise ValueError(f"sort must be one of {', '.join(_SORTS)}")
    limit = _safe_int(limit, 20)
    offset = _safe_int(offset, 0)
    text = query if isinstance(query, str) else ""
    result = SearchResult(query=text, sort=sort, limit=limit, offset=offset)

    def done(**changes: Any) -> "SearchResult":
        changes["elapsed_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
        return result.model_copy(update=changes)

    if not text.strip():
        return done(note="empty query")
    text, cut_note = limit_query(text)
    try:
        q = sanitize_fts5_query(text)
        if prefix_last and q:
            q = apply_prefix_last(q)
    except Exception:  # pragma: no cover - pure string work
        q = ""
    if not q:
        return done(note="query had nothing searchable")
    filters, params = _filter_sql(source_filter, exclude_sources, role_filter)

    def run(conn: sqlite3.Connection) -> "SearchResult":
        ctx = _Ctx(conn, filters, params, limit, offset, sort, _Budget(budget_ms))
        if cut_note:
            ctx.notes.append(cut_note)
        if contains_cjk(q):
            outcome, effective = _cjk_search(ctx, q)
            if outcome is None:
                return done(note="query had nothing searchable")
        else:
            parsed = parse_fts_query(q)
            effective = parsed.render()
            if not effective:
                return done(note="query had nothing searchable")
            effective, known_df = _expand_prefixes(ctx, parsed)
            outcome = _fts_engine(ctx, FTS_TABLE, effective, _unicode61_phrases(parsed, known_df), "fts5")
            if (
                outcome.total == 0
                and len(text.strip()) >= 3
                and parsed.terms
                and all(len(pos.text) >= 3 for pos, _ in _positive_terms(parsed))
            ):
                retry = " ".join(item.render_substring() for item in parsed.items)
                outcome = _fts_engine(
                    ctx, TRIGRAM_TABLE, retry, _substring_phrases(parsed.groups()), "fts5+trigram",
                    [pos.text for pos, _ in _positive_terms(parsed)],
                )
                effective = retry
        hit_path = outcome.path.split("+")[-1]
        hits = _hits(ctx, outcome.rows, hit_path)
        return done(
            effective_query=effective,
            path=outcome.path,
            ranking=outcome.ranking if outcome.rows or outcome.ranking else "",
            hits=hits,
            total_estimate=max(outcome.total, offset + len(hits)),
            total_exact=outcome.exact,
            has_more=outcome.has_more,
            note="; ".join(ctx.notes) or None,
        )

    try:
        return db._read(run)
    except sqlite3.OperationalError as exc:
        message = str(exc)
        if "fts5" in message or "syntax" in message or "no such column" in message:
            return done(error=f"query not understood: {message}")
        return done(error=f"search failed: {message}")
    except (sqlite3.Error, UnicodeError, ValueError, OverflowError, RecursionError) as exc:
        return done(error=f"search failed: {exc}")
