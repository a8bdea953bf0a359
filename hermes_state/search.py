"""Message search: sanitiser, CJK routing, the three query paths (SPEC §9, SR-1 … SR-16).

Two entry points share this module:

* :func:`search_messages` — upstream's list-of-dicts API, result for result: same sanitiser,
  same routing, same ``ORDER BY rank`` (exact bm25) on the FTS paths, same snippets and
  context. The SR-16 improvements apply only to queries upstream cannot serve (it returns
  ``[]`` for them: syntax errors, Latin text glued to CJK, phrases on the CJK paths) and to
  the LIKE path, which scans newest-first by rowid and stops at ``offset + limit`` instead of
  sorting every match.
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
   frequency. This replaces ``fts5vocab`` lookups for path A: a vocab row for a term has to
   walk the term's whole doclist (~2 ms for ``the`` at 100k messages, ~20 ms at 1M), while a
   probe is bounded by K.
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
   Only when a token starts more than ``MAX_EXPANSION`` distinct trigrams (it is then very
   frequent) does the LIKE path run, newest first, stopping at ``offset + limit``.
4. **Bounded scans.** Scans that filters may make long (source/role filters, LIKE) stop at a
   time budget and say so in ``note``.

Nothing is written to the database; the only objects created are TEMP ``fts5vocab`` tables
on the connection doing the search.
"""

from __future__ import annotations

import math
import re
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


def _like_clause(term: str) -> tuple[str, list[str]]:
    pattern = "%" + escape_like(term) + "%"
    return _LIKE_CLAUSE, [pattern, pattern, pattern]


def _filter_sql(
    source_filter: Sequence[str] | None,
    exclude_sources: Sequence[str] | None,
    role_filter: Sequence[str] | None,
) -> tuple[list[str], list[Any]]:
    """SR-4: the same source / exclude / role clauses on every path."""
    clauses: list[str] = []
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
    sql = (
        f"SELECT {_RESULT_COLUMNS.format(snippet=snippet)} FROM messages m "
        f"JOIN sessions s ON s.id = m.session_id WHERE ({' OR '.join(clauses)}){where_extra} "
        # SR-16: newest first by rowid, so SQLite walks the table backwards and stops at
        # offset + limit matches instead of sorting every match.
        "ORDER BY m.id DESC LIMIT ? OFFSET ?"
    )
    try:
        rows = conn.execute(sql, [terms[0], *params, *filter_params, limit, offset]).fetchall()
    except sqlite3.OperationalError:
        return []
    return _finish_rows(conn, rows)


#: Above this much bm25 work (matching rows plus the phrases' own frequencies) FTS5's exact
#: ranking is not used by :func:`search` in ``auto`` mode (~3 µs per row on a 2-core box).
EXACT_BM25_MAX_ROWS = 3000
