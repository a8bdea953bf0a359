"""The structured, latency-bounded search behind ``SessionDB.search`` (the browser, the bench).

See :mod:`hermes_state.search` for the design ("Design (speed, search)"): probe, choose the
ranking, CJK expansion through the trigram vocabulary, bounded scans. It shares the query
language of :mod:`hermes_state.query` and the SQL fragments of the upstream paths.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
import sqlite3
import time
import weakref
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from .query import (
    PREFIX_MIN_CHARS,
    apply_prefix_last,
    cjk_tokens,
    contains_cjk,
    find_spans,
    fold_text,
    limit_query,
    make_snippet,
    MARK_CLOSE,
    MARK_OPEN,
    MARKED_RE,
    OPERATORS,
    parse_fts_query,
    ParsedQuery,
    QueryItem,
    sanitize_fts5_query,
    short_last_word,
    split_marked,
    token_count,
    trigram_match,
    WORD_RE,
)
from .search import (
    EXACT_BM25_MAX_ROWS,
    filter_sql,
    FTS_TABLE,
    like_clause,
    LIKE_FIRST_ROWS,
    positive_query_terms,
    safe_int,
    TRIGRAM_TABLE,
    trigram_vocab,
    where_clause,
)

if TYPE_CHECKING:  # pragma: no cover
    from .capabilities import Capabilities
    from .db import SessionDB
    from .models import SearchResult


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
#: Rows a narrowed scan reads past the window when it must read older matches anyway (each
#: read is a MATCH statement: ~1-2 ms to seek the terms), for the next keys to drop.
NARROW_SLACK = 64
#: Most trigrams a 1–2 character token may expand to before the LIKE scan is used instead.
MAX_EXPANSION = 300
#: Most vocabulary terms a ``word*`` prefix is expanded to in :func:`search`. Past it FTS5
#: answers ``word*`` itself, merging every doclist of the prefix first: at 5M messages
#: ``deploy fai*`` took 110-150 ms per statement that way (``fai`` has 79 terms there, glued
#: CJK forms included), 8 ms as an OR of its terms. Enumerating a term costs ~0.1 ms.
MAX_PREFIX_TERMS = 256
#: Default time budget of scans whose length filters can stretch (LIKE, filtered windows).
DEFAULT_BUDGET_MS = 300.0
#: Messages whose other indexed columns a connection keeps for narrowing (a few keys' worth).
OTHER_COLUMNS_KEPT = 8192
#: Plain texts a connection keeps lower-cased for the next keys (:class:`_Light`): a few
#: windows' worth, then those of the last scan only (a v30 tool result is indexed by 8,192
#: characters: ~32 MB at the very most, ~0.6 MB for typical messages).
TEXTS_KEPT = 2048
#: Prefix expansions remembered per store connection (search-as-you-type asks for ``dock*``,
#: then ``docke*``, ``docker*``: each is the previous list filtered, no SQL).
PREFIX_CACHE_SIZE = 256

_BM25_K1 = 1.2
_BM25_B = 0.75
_SORTS = ("auto", "rank", "newest")


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
    prefix_cache: "_PrefixCache | None" = None
    #: :func:`_others_empty_sql` of the word index (for narrowing), when known.
    others_empty: str | None = None
    #: Per FTS table: its columns after the text, when ``messages`` has them (for narrowing).
    fts_columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Newest-first scans of the word index read its text plain and mark it here (see
    #: :class:`_Light`); None: ``highlight()`` marks it.
    light: "_Light | None" = None
    #: What the store has: which FTS tables, and where a plain scan reads their text.
    caps: "Capabilities | None" = None
    #: :attr:`trigram`, once known.
    _trigram: bool | None = None

    @property
    def filtered(self) -> bool:
        return bool(self.filters)

    @property
    def trigram(self) -> bool:
        """The trigram table exists, can be read and holds something: not in a store from
        before schema 10 opened without migrating it (UC-8), nor one whose table was dropped
        and created again empty by a writable open (MG-1 step 5 does not fill it), whose
        substrings LIKE finds instead."""
        if self._trigram is None:
            self._trigram = self.caps is not None and self.caps.fts_loads(TRIGRAM_TABLE)
            gap = _index_gap(self, TRIGRAM_TABLE) if self._trigram else None
            if gap is not None:
                self._trigram = False
                self.notes.append(f"the substring index {gap}: substrings were sought by a scan of the messages")
        return self._trigram

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


def _index_gap(ctx: _Ctx, table: str) -> str | None:
    """:func:`_read_index_gap`, read once while nothing is committed."""
    cache = ctx.prefix_cache
    if cache is None:
        return _read_index_gap(ctx.conn, ctx.caps, table)
    if table not in cache.gaps:
        cache.gaps[table] = _read_index_gap(ctx.conn, ctx.caps, table)
    return cache.gaps[table]


def _read_index_gap(conn: sqlite3.Connection, caps: "Capabilities | None", table: str) -> str | None:
    """Why the FTS index ``table`` cannot answer for the messages, as far as two cheap reads
    tell; None when it can.

    ``is empty``: its ``_idx`` shadow table lists no segment while ``messages`` has text (on
    the inline and the external-content layout alike; the table itself would read the
    content). ``lacks the older messages``: in a store of schema 16 or below -- the only ones
    whose dropped table a writable open creates again (MG-1 step 5), and whose triggers index
    every message -- its first indexed row comes after the first message: created again, then
    fed by its triggers from then on."""
    try:
        if conn.execute(f'SELECT 1 FROM "{table}_idx" LIMIT 1').fetchone() is None:
            text = conn.execute("SELECT 1 FROM messages WHERE content IS NOT NULL AND content != '' LIMIT 1")
            return "is empty" if text.fetchone() is not None else None
        if caps is not None and caps.version_class in ("migrate", "current") and caps.fts[table].inline:
            first_indexed = conn.execute(f'SELECT min(id) FROM "{table}_docsize"').fetchone()[0]
            first = conn.execute("SELECT min(id) FROM messages").fetchone()[0]
            if first is not None and first_indexed is not None and first < first_indexed:
                return "lacks the older messages"
    except (sqlite3.Error, KeyError):
        return None
    return None


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
    """``(estimate, exact)`` of the rows ``match`` selects (filters not applied); the same
    probe is answered from the connection's cache while nothing is committed (a query typed
    word by word probes its first words again at every key)."""
    cache = ctx.prefix_cache
    memo_key = (table, match, k)
    if cache is not None and memo_key in cache.probes:
        return cache.probes[memo_key]
    # Counted in SQLite: one row back, not k (fetching 1,500 rowids into Python cost more
    # than finding them: 0.7 ms against 0.2 at 5M).
    count, oldest = ctx.conn.execute(
        f"SELECT count(*), min(rowid) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? "
        "ORDER BY rowid DESC LIMIT ?)",
        (match, k + 1),
    ).fetchone()
    if count <= k:
        answer = count, True
    else:
        span = max(1, ctx.max_rowid() - int(oldest) + 1)
        total = ctx.row_count(table)
        answer = max(count, min(total, int(round(count / span * total)))), False
    if cache is not None:
        cache.probes[memo_key] = answer
    return answer


@dataclass
class _Phrase:
    """A phrase of the query, for IDF and term frequencies."""

    match: str  # MATCH text of this phrase alone
    tokens: list[str]
    prefix: bool
    negated: bool
    df: int = 0


def _idf(df: int, total: int) -> float:
    value = math.log((total - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


def _marked_count(text: str) -> int:
    """How many spans ``highlight()`` marked in ``text`` (what ``MARKED_RE`` finds): the
    number of opening markers when there are as many closing ones -- always, unless the
    content itself carries marker characters (then the regex counts; content holding both
    kinds out of order may be off by one, a ranking weight, never a hit). 400 rows a
    keystroke: ~10x faster than ``findall``."""
    opened = text.count(MARK_OPEN)
    if opened == text.count(MARK_CLOSE):
        return opened
    return len(MARKED_RE.findall(text))


class _TfMatcher:
    """Which phrases a highlighted token counts for, decided once per query (not per row):
    a token counts for a phrase when it equals the phrase's first token, or, for a one-word
    prefix phrase, when it starts with it. Negated and empty phrases count nothing."""

    __slots__ = ("size", "exact", "prefixes", "_seen")

    def __init__(self, phrases: list[_Phrase]) -> None:
        self.size = len(phrases)
        self.exact: dict[str, list[int]] = {}
        self.prefixes: list[tuple[str, int]] = []
        #: The phrases each marked piece counts for, by the piece's text: the same few tokens
        #: are marked in row after row of a window (400 rows a keystroke).
        self._seen: dict[str, tuple[int, ...]] = {}
        for index, phrase in enumerate(phrases):
            if not phrase.tokens or phrase.negated:
                continue
            head = phrase.tokens[0]
            if phrase.prefix and len(phrase.tokens) == 1:
                self.prefixes.append((head, index))
            else:
                self.exact.setdefault(head, []).append(index)

    def counts(self, spans_text: list[str]) -> list[float]:
        counts = [0.0] * self.size
        seen = self._seen
        for piece in spans_text:
            indices = seen.get(piece)
            if indices is None:
                indices = seen[piece] = self._indices(piece)
            for index in indices:
                counts[index] += 1
        return counts

    def _indices(self, piece: str) -> tuple[int, ...]:
        """The phrase of each count one marked piece adds (an index once per count)."""
        out: list[int] = []
        exact, prefixes = self.exact, self.prefixes
        for word in WORD_RE.findall(piece):
            folded = fold_text(word)
            out.extend(exact.get(folded, ()))
            for head, index in prefixes:
                if folded.startswith(head):
                    out.append(index)
        return tuple(out)


# ---------------------------------------------------------------------------- engine

@dataclass
class _Row:
    rowid: int
    plain: str
    spans: list[tuple[int, int]]
    score: float | None = None
    #: False: ``spans`` are not known yet -- only FTS5 can mark this text
    #: (:func:`_mark_inexact`).
    marked: bool = True
    #: ``plain`` and ``spans`` come from ``highlight()``, which loses text after a NUL
    #: (:func:`_text_after_nul`).
    highlighted: bool = False


#: Letters of CJK scripts that unicode61 and ``WORD_RE`` both take as token characters and
#: neither folds (kana, the unified ideographs of Unicode 1.1 and extension A, Hangul
#: syllables): text of these and ASCII splits into the same tokens in both.
_CJK_LETTERS = "\u3005-\u3007\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3400-\u4db5\u4e00-\u9fa5\uac00-\ud7a3"
#: A character around which ``WORD_RE`` and case-insensitive matching may tell tokens
#: otherwise than unicode61 (remove_diacritics 1, categories L* N* Co): the combining marks
#: unicode61 keeps inside a token (U+0300-U+0331, dropped when folded), private-use
#: characters (token characters there, separators here), and every letter or digit beyond
#: ASCII and :data:`_CJK_LETTERS` (folded to ASCII by unicode61 -- ``é`` -- or matched by
#: Python's case-insensitive ASCII -- ``K`` the Kelvin sign, ``ſ`` --, or classed by another
#: Unicode version than SQLite's). Punctuation, symbols (emoji), spaces and other marks are
#: separators in both.
_INEXACT_RE = re.compile(
    "[\u0300-\u036f\ue000-\uf8ff\U000f0000-\U0010ffff]"
    f"|(?![{_CJK_LETTERS}])[^\\W_\\x00-\\x7f]"
)


def _marks_exactly(text: str) -> bool:
    """Whether :class:`_Light` marks ``text`` as ``highlight()`` would: no character of
    :data:`_INEXACT_RE` in it (ASCII text, or ASCII and CJK, always)."""
    return text.isascii() or _INEXACT_RE.search(text) is None


def _term_regex(word: str, prefix: bool) -> "re.Pattern[str]":
    """One query word (folded ASCII) as unicode61 matches it, over a lower-cased text that
    :func:`_marks_exactly`: whole tokens equal to it, or (``prefix``) whole tokens starting
    with it. A token character is a letter or a digit (``_`` separates, as in unicode61).
    The look-behind follows the word, so that the pattern starts with it and ``re`` seeks
    it as a literal: with the look-behind first a row took ~7 us a word, 5 ms a window."""
    word = re.escape(word)
    return re.compile(word + r"(?<![^\W_]" + word + r")" + (r"[^\W_]*" if prefix else r"(?![^\W_])"))


class _Light:
    """A search of plain ASCII words -- ANDed (what people type, :func:`_query_shape`), single
    words ORed, or one chain with ``NOT`` words (:func:`_lightable`) -- reads the newest
    matches' text unmarked and marks it here.

    ``highlight()`` tokenizes every row it returns: over the 401 rows of a window scan that
    was 3-5 ms of a 5-9 ms statement at 5M messages, and the window ranking needs only each
    word's count in each row. For such a query unicode61's marks are the tokens that equal a
    word, or start with the word being typed: :func:`_term_regex` finds exactly those in text
    that :func:`_marks_exactly`. Any other row of a page is marked by FTS5
    (:func:`_mark_inexact`); in the window ranking its counts are the regex's (a weight,
    never a hit); narrowing asks FTS5 about it (:func:`_narrow`).

    The text read is the index's own (:func:`_plain_text_sql`).
    """

    __slots__ = ("terms", "words", "texts", "tf")

    def __init__(self, phrases: list[_Phrase], cache: "_PrefixCache | None" = None) -> None:
        #: Per message: its text, lower-cased, and whether :func:`_marks_exactly`; and per
        #: ``(word's pattern, message)`` the word's count there -- kept on the connection while
        #: nothing is committed: a key that narrows the last answer counts only its last word
        #: in the rows it keeps (400 rows a key: 1.5-2 ms counted afresh).
        self.texts: dict[int, tuple[str, str, bool | None]] = cache.texts if cache is not None else {}
        self.tf: dict[str, dict[int, float]] = cache.tf if cache is not None else {}
        if len(self.texts) > TEXTS_KEPT or len(self.tf) > 64:
            # Keep what the next key may narrow from (the last scan's rows), drop the rest.
            keep = {rowid for rowid, _text in cache.scan.rows} if cache is not None and cache.scan else set()
            for rowid in [rowid for rowid in self.texts if rowid not in keep]:
                del self.texts[rowid]
            self.tf.clear()
        #: Per phrase, its word as :func:`_term_regex` (None: a negated or empty phrase, or
        #: one of several words, counts nothing).
        self.terms: list[re.Pattern[str] | None] = [
            _term_regex(p.tokens[0], p.prefix) if len(p.tokens) == 1 and not p.negated else None for p in phrases
        ]
        #: Every word of the query: the marks of a page's rows.
        self.words = list({term.pattern: term for term in self.terms if term is not None}.values())

    def lowered(self, rowid: int, text: str) -> tuple[str, bool]:
        """``text`` (message ``rowid``'s) lower-cased, and whether :func:`_marks_exactly`."""
        known = self.texts.get(rowid)
        if known is None or not (known[0] is text or known[0] == text):
            known = (text, text.lower(), None)
        if known[2] is None:
            known = (text, known[1], len(known[1]) == len(text) and _marks_exactly(text))
            self.texts[rowid] = known
        return known[1], bool(known[2])

    def counts_of(self, rows: list[tuple[int, str]]) -> list[list[float]]:
        """Each phrase's matches in each of ``rows`` (``(rowid, text)``): its term frequency,
        per phrase (a column of the rows' counts each)."""
        texts = self.texts
        lowered_rows = []
        for rowid, text in rows:
            text = text or ""
            known = texts.get(rowid)
            if known is None or not (known[0] is text or known[0] == text):
                # (An ASCII text always marks exactly; others are looked at when asked.)
                known = texts[rowid] = (text, text.lower(), True if text.isascii() else None)
            lowered_rows.append((rowid, known[1]))
        columns = []
        for term in self.terms:
            if term is None:
                columns.append([0.0] * len(rows))
                continue
            counted = self.tf.setdefault(term.pattern, {})
            findall, get = term.findall, counted.get
            column = []
            for rowid, lowered in lowered_rows:
                found = get(rowid)
                if found is None:
                    found = counted[rowid] = float(len(findall(lowered)))
                column.append(found)
            columns.append(column)
        return columns

    def row(self, rowid: int, text: str | None, score: float | None) -> _Row:
        text = text or ""
        lowered, exact = self.lowered(int(rowid), text)
        if not exact or not self.words:
            return _Row(int(rowid), text, [], score, marked=False)
        spans = sorted({found.span() for word in self.words for found in word.finditer(lowered)})
        return _Row(int(rowid), text, spans, score)


def _mark_inexact(ctx: "_Ctx", table: str, match: str, rows: list[_Row]) -> None:
    """Rows of a page that :class:`_Light` could not mark, marked by ``highlight()``: one
    statement over the rowids they span (the same snapshot: the same text)."""
    todo = {row.rowid: row for row in rows if not row.marked}
    if not todo:
        return
    for rowid, text in ctx.conn.execute(
        f"SELECT rowid, highlight({table}, 0, char(2), char(3)) FROM {table} "
        f"WHERE {table} MATCH ? AND rowid BETWEEN ? AND ?",
        (match, min(todo), max(todo)),
    ):
        row = todo.get(int(rowid))
        if row is not None:
            row.plain, row.spans = split_marked(text or "")
            row.marked = row.highlighted = True
    for row in todo.values():
        row.marked = True  # (not found: nothing to mark)


@dataclass
class _Outcome:
    rows: list[_Row]
    ranking: str
    total: int
    exact: bool
    has_more: bool
    path: str


def _scan_sql(
    table: str, ctx: _Ctx, order: str, extra: str = "", plain: bool = False, flag: str | None = None
) -> str:
    """Rowid + highlighted (or, with ``plain``, raw) text of ``table`` matches, joined to the
    filter tables only when filters are set; ``flag``: a third column (see
    :func:`_others_empty_sql`). Newest first with ``ctx.light``: the text as the index holds
    it, unmarked (:class:`_Light`)."""
    if plain or (ctx.light is not None and order == "rowid"):
        text = _plain_text_sql(table, ctx)
    else:
        text = f"highlight({table}, 0, char(2), char(3))"
    select = f"SELECT {table}.rowid, {text}"
    if flag:
        select += f", {flag}"
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
    return f"{select}{source} WHERE {table} MATCH ?{extra}{where_clause(ctx.filters)} ORDER BY {order_sql}"


def _plain_text_sql(table: str, ctx: _Ctx) -> str:
    """The text of ``table``'s first column, unmarked, in a scan of it (the trigram table's,
    and the word index's read by :class:`_Light`): through the joined ``messages`` row when
    the DDL says what it is (:attr:`FtsTable.text_sql`), else from an inline table's own copy
    (it keeps what its triggers wrote, which only it knows: :attr:`FtsTable.stored_text_sql`),
    else the column itself.

    For an external-content table FTS5 reads the column by a statement per row on its
    ``content=`` table: on v30's trigram view (a join with ``sessions`` and a JSON test per
    row) that was most of a window scan (401 rows, 6.2 ms at 1M messages)."""
    fts = ctx.caps.fts.get(table) if ctx.caps is not None else None
    if fts is not None:
        if ctx.filtered and fts.text_sql:
            return fts.text_sql
        if fts.stored_text_sql:
            return fts.stored_text_sql
    return f"{table}.content"


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


@dataclass(frozen=True)
class _ScanMemo:
    """The newest-first scan of a search's window (:func:`_scan_window`): what it was made
    for (table, filters, query shape) and its rows, ``(rowid, text)`` (plain: :class:`_Light`)."""

    table: str
    filters: tuple[str, ...]
    params: tuple[Any, ...]
    shape: tuple[tuple[str, bool], ...]
    #: The most rows the scan read (``WINDOW + 1``).
    cap: int
    rows: tuple[tuple[int, str], ...]
    #: Per row: nothing in the index's other columns (True), something (False), unknown (None).
    others_empty: tuple[bool | None, ...]
    #: ``rows`` hold every match (the scan found no more), not only the newest ones.
    exhaustive: bool


def _query_shape(parsed: ParsedQuery) -> tuple[tuple[str, bool], ...] | None:
    """The query as ``(word, prefix)`` pairs when it is only plain ASCII words ANDed together
    (what people type into the search field), else None: the shapes whose answers narrow one
    another (:func:`_narrows`)."""
    shape = []
    for item in parsed.items:
        if item.kind != "word" or not item.text.isascii() or not WORD_RE.fullmatch(item.text):
            return None
        shape.append((item.text.lower(), item.prefix))
    return tuple(shape) or None


#: Tokenizers whose tokens :class:`_Light` tells as they do (none declared: unicode61).
_FOLDING_TOKENIZERS = ("unicode61",)


def _narrowable(db: "SessionDB", parsed: ParsedQuery) -> tuple[tuple[str, bool], ...] | None:
    """:func:`_query_shape` when the word index's tokenizer splits text as :class:`_Light`
    does (:func:`_splits_as_light`), else None."""
    shape = _query_shape(parsed)
    return shape if shape is not None and _splits_as_light(db) else None


def _lightable(db: "SessionDB", parsed: ParsedQuery) -> bool:
    """Whether :class:`_Light` marks ``parsed`` as ``highlight()`` does: plain ASCII words and
    the operators ``AND``, ``OR``, ``NOT``, as one ``AND`` chain (its ``NOT`` words are in no
    matching row) or as single words ORed (FTS5 marks the words of the branches that match
    a row: of single words, those the row holds) -- not an ``OR`` of chains, whose words in
    a branch that does not match are not marked."""
    for item in parsed.items:
        if item.kind == "op":
            if item.text not in ("AND", "OR", "NOT"):
                return False
        elif item.kind != "word" or not item.text.isascii() or not WORD_RE.fullmatch(item.text):
            return False
    groups = parsed.groups()
    if len(groups) > 1 and not all(len(group) == 1 and not group[0][1] for group in groups):
        return False
    return bool(parsed.terms) and _splits_as_light(db)


def _splits_as_light(db: "SessionDB") -> bool:
    """Whether the word index's tokenizer splits text as :class:`_Light` does (unicode61 as
    declared by default; not ``porter``, whose tokens are stems, nor ``ascii``, for which
    every non-ASCII character is a token character)."""
    fts = db.capabilities.fts.get(FTS_TABLE)
    if fts is None:
        return False
    words = (fts.tokenizer or "").replace("'", " ").replace('"', " ").lower().split()
    # Options that change what a token is (tokenchars, separators, categories) are not told
    # as _Light assumes; remove_diacritics only changes what non-ASCII letters fold to, and
    # a text with those is marked by FTS5 (_marks_exactly).
    return not (words and (words[0] not in _FOLDING_TOKENIZERS or any(
        word in ("tokenchars", "separators", "categories") for word in words[1:]
    )))


def _narrows(old: tuple[tuple[str, bool], ...], new: tuple[tuple[str, bool], ...]) -> bool:
    """Whether every match of ``new`` is a match of ``old``: the same words but the last, which
    ``old`` had as a prefix and ``new`` lengthens (``dock*`` → ``docke*``, ``deploy*`` →
    ``deploy``), as each key typed at the end of a word does."""
    if len(old) != len(new) or old[:-1] != new[:-1] or old[-1] == new[-1]:
        return False
    (was, was_prefix), (now, _prefix) = old[-1], new[-1]
    return was_prefix and now.startswith(was)


def _other_fts_columns(db: "SessionDB", table: str) -> tuple[str, ...] | None:
    """The word index's columns after the text (v30 also indexes ``tool_name`` and
    ``tool_calls``; ``()`` for a text-only index), when ``messages`` has them all (they can be
    read there); else None."""
    fts = db.capabilities.fts.get(table)
    if fts is None:
        return None
    others = tuple(fts.columns[1:])
    if not all(name in db.capabilities.message_columns for name in others):
        return None
    return others


def _others_empty_sql(others: tuple[str, ...] | None) -> str | None:
    """SQL true when a message has nothing in the index's ``others`` columns: its matches are
    all in the text, which ``highlight()`` marks. ``1`` for a text-only index; None when those
    columns cannot be read from ``messages m``."""
    if others is None:
        return None
    if not others:
        return "1"
    return "(" + " AND ".join(f"COALESCE(m.{name}, '') = ''" for name in others) + ")"


def _scan_window(
    ctx: _Ctx, table: str, match: str, shape: tuple[tuple[str, bool], ...] | None, plain: bool
) -> list[tuple[int, str]]:
    """The newest ``WINDOW + 1`` matches of ``match`` under the filters, newest first, with
    their text (highlighted, or plain with ``ctx.light``): the probe, the window ranking's
    candidates, the newest-first page.

    Search-as-you-type asks for ``dock*``, then ``docke*``, ``docker*``: each narrows the one
    before (:func:`_narrows`). While nothing is committed, a narrower query's matches among the
    previous scan's rows are found there (:func:`_narrow`); only when the previous scan stopped
    short of the oldest match are older matches read (those missing and ``NARROW_SLACK`` more,
    kept for the next key). The same rows as a fresh scan, without reading 400 rows again.
    Only a query of plain words narrows, so the rows kept are always plain text.
    """
    def fresh(flag: str | None) -> tuple[list[tuple[int, str]], tuple[bool | None, ...], bool]:
        sql = _scan_sql(table, ctx, "rowid", plain=plain, flag=flag)
        got = list(_iter_rows(ctx, sql, [match, *ctx.params], WINDOW + 1, True))
        rows = [(int(r[0]), r[1]) for r in got]
        return rows, tuple(bool(r[2]) if flag else None for r in got), len(got) <= WINDOW

    cache = ctx.prefix_cache
    if cache is None or shape is None or plain:
        return fresh(None)[0]  # (nothing kept: no flag column to read for each row)
    flag = ctx.others_empty if ctx.filtered or ctx.others_empty == "1" else None
    filters, params = tuple(ctx.filters), tuple(ctx.params)
    memo = cache.scan
    answer = None
    if memo is not None and (memo.table, memo.filters, memo.params, memo.cap) == (table, filters, params, WINDOW + 1):
        if memo.shape == shape:
            answer = list(memo.rows), memo.others_empty, memo.exhaustive
        elif _narrows(memo.shape, shape):
            answer = _narrow(ctx, table, match, shape, memo, flag)
    if answer is None:
        answer = fresh(flag)
    rows, others_empty, exhaustive = answer
    cache.scan = None if ctx.budget.exhausted else _ScanMemo(
        table, filters, params, shape, WINDOW + 1, tuple(rows), tuple(others_empty), exhaustive
    )
    return rows[: WINDOW + 1]


#: An ASCII text's unicode61 tokens: every other ASCII character separates them.
_ASCII_TOKEN_RE = re.compile(r"[A-Za-z0-9]+")


def _match_other_columns(
    ctx: _Ctx, table: str, term: tuple[str, bool], rowids: list[int]
) -> set[int] | None:
    """Which of ``rowids`` hold ``term`` (an ASCII ``(word, prefix)``) in the word index's
    columns after the text (v30: ``tool_name``, ``tool_calls``), read from ``messages``; None
    when a value is not ASCII (its tokens are unicode61's to tell) or the columns are not
    there. An ASCII text's tokens are its runs of letters and digits."""
    fts = ctx.fts_columns.get(table)
    if not fts:
        return None
    word, prefix = term
    # The columns of a message do not change while nothing is committed: each key typed
    # reads only the messages the last keys did not (kept on the connection's cache).
    cache = ctx.prefix_cache
    known = cache.others if cache is not None else {}
    missing = [rowid for rowid in rowids if (table, rowid) not in known]
    if missing:
        marks = ",".join("?" for _ in missing)
        for row in ctx.conn.execute(f"SELECT id, {', '.join(fts)} FROM messages WHERE id IN ({marks})", missing):
            values = [value for value in row[1:] if value is not None]
            # (A number or a blob is indexed as SQLite renders it; non-ASCII text as
            # unicode61 folds it: neither is told here.)
            if all(isinstance(value, str) and value.isascii() for value in values):
                tokens = {token for value in values for token in _ASCII_TOKEN_RE.findall(value.lower())}
                known[(table, int(row[0]))] = tuple(sorted(tokens))
            else:
                known[(table, int(row[0]))] = None
    found: set[int] = set()
    for rowid in rowids:
        tokens = known.get((table, rowid), ())  # (a message deleted since: nothing to match)
        if tokens is None:
            return None
        # Sorted: the first token not below the word is the word, or the first to start
        # with it, if any is.
        at = bisect.bisect_left(tokens, word)
        if at < len(tokens) and (tokens[at].startswith(word) if prefix else tokens[at] == word):
            found.add(rowid)
    return found


def _narrow(
    ctx: _Ctx, table: str, match: str, shape: tuple[tuple[str, bool], ...], memo: _ScanMemo, flag: str | None
) -> tuple[list[tuple[int, str]], tuple[bool | None, ...], bool] | None:
    """:func:`_scan_window` for a query that narrows the previous scan's (None: scan afresh).

    A previous row matches the narrower query when its text holds a token of the lengthened
    last word (its other words matched already); it does not when its text holds none and it
    has nothing in the index's other columns. Only when some row cannot be told so (a text
    :func:`_marks_exactly` cannot vouch for, a tool column that is not ASCII text) does FTS5
    say, for all of them, in one index-only statement: its matches at or above the scan's
    oldest rowid."""
    previous, others_empty = memo.rows, memo.others_empty
    if not previous:
        return [], (), True  # the wider query matched nothing under these filters
    last = _term_regex(*shape[-1])
    light = ctx.light
    if light is None:  # pragma: no cover - a query that narrows is always read plain
        return None
    kept: list[tuple[int, str, bool | None, bool | None]] = []
    undecided = False
    elsewhere: list[int] = []  # rows whose text has no such token: their other columns decide
    # The last word's count in each row, kept for the window ranking that follows (as
    # :meth:`_Light.counts_of` keeps it); :meth:`_Light.lowered` inlined: 400 rows a key.
    texts, counted, findall = light.texts, light.tf.setdefault(last.pattern, {}), last.findall
    for (rowid, text), empty in zip(previous, others_empty):
        text = text or ""
        known = texts.get(rowid)
        if known is None or known[2] is None or not (known[0] is text or known[0] == text):
            lowered, exact = light.lowered(rowid, text)
        else:
            lowered, exact = known[1], known[2]
        found = counted.get(rowid) if exact else None
        if exact and found is None:
            found = counted[rowid] = float(len(findall(lowered)))
        if not exact:
            verdict: bool | None = None  # (only unicode61 can tell its tokens)
            undecided = True
        elif found:
            verdict = True
        elif empty is True:
            verdict = False
        else:
            verdict = None
            elsewhere.append(rowid)
        kept.append((rowid, text, empty, verdict))
    if elsewhere and not undecided:
        found_elsewhere = _match_other_columns(ctx, table, shape[-1], elsewhere)
        if found_elsewhere is None:
            undecided = True
        else:
            kept = [
                (rowid, text, empty, rowid in found_elsewhere if verdict is None else verdict)
                for rowid, text, empty, verdict in kept
            ]
    oldest = previous[-1][0]
    if undecided:
        found = {
            int(r[0])
            for r in ctx.conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid >= ?", (match, oldest)
            )
        }
        chosen = [(rowid, text, empty) for rowid, text, empty, _v in kept if rowid in found]
    else:
        chosen = [(rowid, text, empty) for rowid, text, empty, verdict in kept if verdict]
    rows = [(rowid, text) for rowid, text, _e in chosen]
    flags = [empty for _r, _t, empty in chosen]
    exhaustive = memo.exhaustive
    if not exhaustive and len(rows) <= WINDOW:
        # That scan stopped short of the oldest match: read older ones, as many as are missing
        # and NARROW_SLACK more, so that the next key may drop as many without reading again.
        older_sql = _scan_sql(table, ctx, "rowid", extra=f" AND {table}.rowid < ?", flag=flag)
        need = WINDOW + 1 - len(rows) + NARROW_SLACK
        got = 0
        for r in _iter_rows(ctx, older_sql, [match, oldest, *ctx.params], need, True):
            rows.append((int(r[0]), r[1]))
            flags.append(bool(r[2]) if flag else None)
            got += 1
        exhaustive = got < need
    return rows, tuple(flags), exhaustive


def _fts_engine(
    ctx: _Ctx,
    table: str,
    match: str,
    phrases: list[_Phrase],
    path: str,
    substring_terms: list[str] | None = None,
    shape: tuple[tuple[str, bool], ...] | None = None,
    exact_under: int = 0,
) -> _Outcome:
    """Rank ``match`` on ``table`` per the design in the module docstring.

    With ``substring_terms`` (trigram table) rows carry their plain text and spans are the
    terms' occurrences; otherwise ``highlight()`` marks the tokens FTS5 matched, or, with
    ``ctx.light``, the newest-first scans read the text plain and :class:`_Light` marks it.
    """
    plain = substring_terms is not None
    sort = ctx.sort

    def to_ranked(rowid: int, text: str, score: float | None) -> _Row:
        """A row of a statement that highlighted it (or, ``plain``, of the trigram table)."""
        if plain:
            return _Row(int(rowid), text or "", find_spans(text or "", substring_terms), score)
        body, spans = split_marked(text or "")
        return _Row(int(rowid), body, spans, score, highlighted=True)

    light = ctx.light if not plain else None
    #: A row of a newest-first scan (:func:`_scan_sql`: plain text with ``ctx.light``).
    to_row = light.row if light is not None else to_ranked

    if sort != "auto":
        total, exact = _probe(ctx, table, match, PROBE_ROWS)
        if total == 0:
            return _Outcome([], "", 0, True, False, path)
        if sort == "rank":
            return _exact_bm25(ctx, table, match, path, total, exact, to_ranked, plain)
        return _newest(ctx, table, match, path, total, exact, to_row, plain, [])

    if (not plain and len(phrases) == 1 and len(phrases[0].tokens) == 1
            and not phrases[0].prefix and not phrases[0].negated):
        # One whole word (a first key, a 1-2 letter word): its matches are counted by a rowid
        # scan of its doclist (~0.3 ms for 1,500 rows) before any text is highlighted. When
        # FTS5 can rank them all, the window scan would be thrown away (`d` at 1M v30: 401
        # rows highlighted, 3-4 ms, then the exact ranking anyway). Not for several words:
        # the probe of an AND of common words (`the s`) reads far more than it returns.
        outcome = _exact_if_affordable(ctx, table, match, phrases, path, to_ranked)
        if outcome is not None:
            return outcome
    # auto: one scan of the newest WINDOW + 1 matches serves as probe, as the candidates of
    # the window ranking and as the page of a newest-first answer.
    rows = _scan_window(ctx, table, match, shape, plain)
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
    work = _bm25_work(ctx, table, phrases, total)
    # (``exact_under``: few matches of trigram expansions, whose bm25 credits a rare
    # continuation of a short word as the window's counts cannot, at a bounded cost)
    if work <= EXACT_BM25_MAX_ROWS or (complete and total <= exact_under and work <= 20 * EXACT_BM25_MAX_ROWS):
        return _exact_bm25(ctx, table, match, path, total, exact, to_ranked, plain)
    positive = [p for p in phrases if not p.negated]
    if not complete and positive and all(p.df > COMMON_SHARE * n_rows for p in positive):
        return _newest(ctx, table, match, path, total, exact, to_row, plain, rows)
    return _window(ctx, table, match, phrases, path, total, exact, to_row, plain, rows, complete)


def _bm25_work(ctx: _Ctx, table: str, phrases: list[_Phrase], total: int) -> int:
    """What exact bm25 would read for a query of ``total`` matches: those, and every
    phrase's matches for its frequency (each phrase's ``df`` is set: a lone positive phrase's
    is ``total``, the others are probed)."""
    if len(phrases) == 1 and not phrases[0].negated:
        phrases[0].df = total
    else:
        for phrase in phrases:
            phrase.df = _probe(ctx, table, phrase.match, PHRASE_PROBE_ROWS)[0]
    return total + sum(p.df for p in phrases)


def _exact_if_affordable(ctx, table, match, phrases, path, to_row) -> _Outcome | None:
    """The exact bm25 answer of a one-word query (highlighted, not plain) when a rowid probe
    shows its work within ``EXACT_BM25_MAX_ROWS`` -- the choice :func:`_fts_engine` makes
    after the window scan, made from an exact count of the unfiltered matches; None when it
    is not, or not known to be (the probe counts up to half the bound: one word's work is
    twice its matches)."""
    total, exact = _probe(ctx, table, match, EXACT_BM25_MAX_ROWS // 2)
    if total == 0:
        return _Outcome([], "", 0, True, False, path)
    if not exact or _bm25_work(ctx, table, phrases, total) > EXACT_BM25_MAX_ROWS:
        return None
    # (Filters narrow the count: then it is an upper bound, not the answer's.)
    return _exact_bm25(ctx, table, match, path, total, not ctx.filtered, to_row, False)


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


#: :func:`token_count` of the texts a connection's windows hold (the same objects key after
#: key: their hash is kept, a look-up costs less than counting again).
_tokens = functools.lru_cache(maxsize=8192)(token_count)
#: Best first, ties newest first (rowids are unique: the order is total).
_SCORE_ROWID = itemgetter(0, 1)


def _window_scores(rows, phrases, idfs, plain, light: "_Light | None" = None) -> list[tuple[float, int, Any]]:
    """``(score, rowid, text)`` of the window's rows, best first (ties: newest first): each
    phrase's count in each row -- a substring's occurrences in the lower-cased text
    (``plain``), a word's matches in the text read plain (``light``), or the pieces
    ``highlight()`` marked -- and the row's length, ranked by :func:`_bm25_ranked`."""
    if plain:
        lowered = [(text or "").lower() for _rowid, text in rows]
        columns = [
            [float(lower.count(p.tokens[0])) for lower in lowered] if p.tokens and not p.negated
            else [0.0] * len(rows)
            for p in phrases
        ]
        dls = [float(len(lower)) for lower in lowered]
        return _bm25_ranked(rows, columns, dls, idfs)
    dls = [float(_tokens(text or "")) for _rowid, text in rows]
    if light is not None:
        columns = light.counts_of(rows)
    elif len(phrases) == 1 and not phrases[0].negated and len(phrases[0].tokens) <= 1:
        columns = [[float(_marked_count(text or "")) for _rowid, text in rows]]
    else:
        matcher = _TfMatcher(phrases)
        per_row = [matcher.counts(MARKED_RE.findall(text or "")) for _rowid, text in rows]
        columns = [list(column) for column in zip(*per_row)]
    return _bm25_ranked(rows, columns, dls, idfs)


def _bm25_ranked(rows, columns, dls, idfs) -> list[tuple[float, int, Any]]:
    """``(score, rowid, text)`` of ``rows``, best first (ties: newest first): bm25 of each row
    from ``columns`` (per phrase, its count in each row), ``dls`` (each row's length) and
    ``idfs``, the phrases' terms summed in phrase order -- a phrase at a time over the rows
    (a call or a list per row cost ~1 ms over a 400-row window)."""
    k1, b, k1p1 = _BM25_K1, _BM25_B, _BM25_K1 + 1
    avgdl = sum(dls) / len(dls) if dls else 1.0
    norms = [k1 * (1 - b + b * (dl / avgdl if avgdl > 0 else 1.0)) for dl in dls]
    sums: list[float] = [0] * len(rows)
    for column, idf in zip(columns, idfs):
        sums = [score + idf * tf * k1p1 / (tf + norm) if tf > 0 else score
                for score, tf, norm in zip(sums, column, norms)]
    scored = [(score, int(rowid), text or "") for score, (rowid, text) in zip(sums, rows)]
    scored.sort(key=_SCORE_ROWID, reverse=True)
    return scored


def _window(ctx, table, match, phrases, path, total, exact, to_row, plain, rows, complete) -> _Outcome:
    """bm25 (Python, probed IDF) over the newest ``WINDOW`` matches; older ones follow."""
    rows = rows[:WINDOW]
    n_rows = ctx.row_count(table)
    idfs = [_idf(p.df, n_rows) for p in phrases]
    # Only tf and document length are needed here; the page's snippets are built later.
    # Typing the rest of a word often leaves the window as it was (``kubern*`` …
    # ``kubernetes*``): the same rows, the same IDFs, the same ranking, kept on the connection.
    cache = ctx.prefix_cache
    key = (tuple(rows), tuple(idfs), plain, ctx.light is not None)
    kept = cache.window if cache is not None else None
    if kept is not None and kept[0] == key:
        scored = kept[1]
    else:
        scored = _window_scores(rows, phrases, idfs, plain, ctx.light)
        if cache is not None:
            cache.window = (key, scored)
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


def _next_prefix_bound(prefix: str) -> str:
    return prefix + "\U0010ffff"


def _expand_short(ctx: _Ctx, term: str) -> list[str] | None:
    """Trigrams that start with a 1–2 character ``term``: [] when absent, None when too many."""
    vocab = trigram_vocab(ctx.conn)
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
    # (a substring is its own prefix: `golang*` typed last is the substring golang)
    tokens = [t.rstrip("*") or t for t in cjk_tokens(q)]
    items = [QueryItem("op", t) if t in OPERATORS else QueryItem("phrase", t) for t in tokens]
    groups = ParsedQuery(items=items, verbatim=False).groups()
    terms = [item.text for item in items if item.kind != "op"]
    if not terms:
        return None, ""
    if not ctx.trigram:
        return _like_search(ctx, groups, terms), _describe_like(groups)
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
    # Short words are ranked as others are (their phrase is their expansion): newest first
    # lost what bm25 ranks first in a few ms (`服务器 证书`).
    phrases = _substring_phrases(groups, {term: render(term) for term in expansions})
    if expansions:
        return _fts_engine(ctx, TRIGRAM_TABLE, match, phrases, "trigram", positive_terms, exact_under=1000), match
    return _fts_engine(ctx, TRIGRAM_TABLE, match, phrases, "trigram", positive_terms), match


def _substring_phrases(groups, matches: dict[str, str | None] | None = None) -> list[_Phrase]:
    matches = matches or {}
    phrases = []
    for group in groups:
        for pos, negs in group:
            for item, negated in [(pos, False), *((n, True) for n in negs)]:
                match = matches.get(item.text) or _quote(item.text)
                phrases.append(_Phrase(match, [item.text.lower()], False, negated))
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
            clause, values = like_clause(pos.text)
            parts.append(clause)
            params.extend(values)
            for neg in negs:
                # NOT over NULL columns would be NULL: compare against '' instead.
                clause, values = like_clause(neg.text, not_null=True)
                parts.append("NOT " + clause)
                params.extend(values)
        group_sql.append("(" + " AND ".join(parts) + ")")
    sql = (
        "SELECT m.id, COALESCE(m.content, '') || ' ' || COALESCE(m.tool_name, '') || ' ' || "
        "COALESCE(m.tool_calls, '') FROM messages m "
        + ("JOIN sessions s ON s.id = m.session_id " if ctx.filtered else "")
        + f"WHERE ({' OR '.join(group_sql)}){where_clause(ctx.filters)}"
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

def _unicode61_phrases(parsed: ParsedQuery, expansions: dict[int, str] | None = None) -> list[_Phrase]:
    """The query's phrases for IDF and term frequencies. A ``word*`` expanded from the
    vocabulary is probed as its expansion (an OR of terms, iterated lazily), never as
    ``word*``, which FTS5 answers by merging every doclist of the prefix first (60-70 ms for
    ``fail*`` at 5M messages)."""
    phrases = []
    expansions = expansions or {}
    for group in parsed.groups():
        for pos, negs in group:
            for item, negated in [(pos, False), *((n, True) for n in negs)]:
                tokens = [fold_text(w) for w in WORD_RE.findall(item.text)]
                phrases.append(_Phrase(expansions.get(id(item), item.render()), tokens, item.prefix, negated))
    return phrases


def _word_vocab(conn: sqlite3.Connection) -> str:
    """A TEMP fts5vocab over ``messages_fts`` on this connection (never in ``main``)."""
    name = "temp.hermes_search_word_vocab"
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {FTS_TABLE}, row)")
    return name


class _PrefixCache:
    """What one store connection's searches keep for the next while nothing is committed:
    ``word*`` expansions (prefix → its vocabulary terms, or None when it has more than
    ``MAX_PREFIX_TERMS``), phrase probes, and the last window scan (see :func:`_scan_window`).
    Valid until something is committed (new messages bring new terms and matches): by another
    connection (``PRAGMA data_version`` changes) or by this one (its ``total_changes`` grows).
    Searches on one connection run one at a time (the store's lock)."""

    __slots__ = ("key", "terms", "probes", "scan", "window", "others", "hits", "texts", "tf", "answers",
                 "gaps", "__weakref__")

    def __init__(self) -> None:
        self.key: tuple[int, int, int] | None = None
        self.terms: dict[str, list[str] | None] = {}
        #: ``(table, match, k)`` → what :func:`_probe` answered.
        self.probes: dict[tuple[str, str, int], tuple[int, bool]] = {}
        self.scan: _ScanMemo | None = None
        #: The last window ranking: ``((rows, IDFs, plain), scored rows)`` (see :func:`_window`).
        self.window: tuple[tuple, list] | None = None
        #: ``(table, rowid)`` → the tokens of the word index's other columns of that message,
        #: sorted (None: a value only unicode61 can tokenize), for :func:`_match_other_columns`.
        self.others: dict[tuple[str, int], tuple[str, ...] | None] = {}
        #: The last answer's hits by what they were made from (see :func:`_hits`).
        self.hits: dict[tuple, Any] = {}
        #: Plain texts lower-cased, and words counted in them (see :class:`_Light`).
        self.texts: dict[int, tuple[str, str, bool | None]] = {}
        self.tf: dict[str, dict[int, float]] = {}
        #: The last answers by what was asked (see :func:`search`: the words before a short
        #: last word answer again what they answered a key earlier).
        self.answers: dict["_Question", Any] = {}
        #: FTS table → what it lacks (:func:`_index_gap`), None: nothing.
        self.gaps: dict[str, str | None] = {}

    def clear(self) -> None:
        self.terms.clear()
        self.gaps.clear()
        self.forget_answers()

    def forget_answers(self) -> None:
        """Everything but the prefix expansions (see :func:`forget_answers`)."""
        self.probes.clear()
        self.scan = None
        self.window = None
        self.others.clear()
        self.hits = {}
        self.texts.clear()
        self.tf.clear()
        self.answers.clear()


_PREFIX_CACHES: "weakref.WeakKeyDictionary[Any, _PrefixCache]" = weakref.WeakKeyDictionary()

#: Answers a connection's cache keeps (:attr:`_PrefixCache.answers`), and what of one is given
#: again (the rest -- query, elapsed time -- is the asking call's own).
ANSWERS_KEPT = 8
_ANSWER_FIELDS = ("effective_query", "path", "ranking", "hits", "total_estimate", "total_exact", "has_more",
                  "note", "error")


def _prefix_cache(db: Any, conn: sqlite3.Connection) -> _PrefixCache | None:
    """The expansion cache of ``db``'s connection ``conn``, emptied when the data changed."""
    try:
        cache = _PREFIX_CACHES.get(db)
        if cache is None:
            cache = _PREFIX_CACHES[db] = _PrefixCache()
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        key = (id(conn), version, conn.total_changes)
    except (TypeError, sqlite3.Error):  # not weak-referenceable, or no answer: no cache
        return None
    if cache.key != key:
        cache.key = key
        cache.clear()
    if len(cache.terms) >= PREFIX_CACHE_SIZE:
        cache.terms.clear()
    if len(cache.probes) >= PREFIX_CACHE_SIZE:
        cache.probes.clear()
    if len(cache.others) >= OTHER_COLUMNS_KEPT:
        cache.others.clear()
    return cache


def forget_answers(db: Any) -> None:
    """Drop what ``db``'s searches keep for the next one -- window scans, rankings, probes --
    but not the prefix expansions. For measuring: the bench repeats a query to time it, and
    a repeated query would otherwise be answered from what the previous run kept."""
    cache = _PREFIX_CACHES.get(db)
    if cache is not None:
        cache.forget_answers()


_NO_ENTRY = object()


def _word_terms_vocab(conn: sqlite3.Connection) -> str:
    """A TEMP ``fts5vocab`` of type ``instance`` over ``messages_fts`` (never in ``main``)."""
    name = "temp.hermes_search_word_terms"
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {FTS_TABLE}, instance)")
    return name


def _prefix_terms(ctx: _Ctx, folded: str) -> list[str] | None:
    """Vocabulary terms that start with ``folded``; None when there are more than
    ``MAX_PREFIX_TERMS``.

    Not from an ``fts5vocab`` *row* table: each of its rows walks the term's whole doclist to
    count documents (~30 ns a document: 45 ms for ``the*`` at 1M messages, 10 ms for
    ``doc*``, five times that at 5M), a cost that grows with the store. The terms are
    enumerated instead by seeking an ``instance`` table one term at a time (``term >= t ||
    x'01'`` seeks past ``t`` without reading its doclist): tens of microseconds a term
    whatever its frequency. The frequency of the expansion is probed later like any phrase's.
    A longer prefix of one already expanded on this connection is that list filtered.
    """
    cache = ctx.prefix_cache
    if cache is not None:
        found = cache.terms.get(folded, _NO_ENTRY)
        if found is not _NO_ENTRY:
            return found  # type: ignore[return-value]
        for cut in range(len(folded) - 1, 0, -1):
            wider = cache.terms.get(folded[:cut], _NO_ENTRY)
            if isinstance(wider, list):
                narrowed = [term for term in wider if term.startswith(folded)]
                cache.terms[folded] = narrowed
                return narrowed
    vocab = _word_terms_vocab(ctx.conn)
    sql = f"SELECT term FROM {vocab} WHERE term >= ? AND term < ? LIMIT 1"
    bound = _next_prefix_bound(folded)
    terms: list[str] = []
    low = folded
    result: list[str] | None = terms
    while True:
        row = ctx.conn.execute(sql, (low, bound)).fetchone()
        if row is None:
            break
        if len(terms) == MAX_PREFIX_TERMS:
            result = None
            break
        terms.append(str(row[0]))
        low = terms[-1] + "\x01"
    if cache is not None:
        cache.terms[folded] = result
    return result


def _expand_prefixes(ctx: _Ctx, parsed: ParsedQuery) -> tuple[str, dict[int, str]]:
    """Rewrite ``word*`` items as ``(word1 OR word2 …)`` from the vocabulary; returns the
    query and each expanded item's MATCH text (by ``id(item)``).

    Without a prefix index FTS5 merges every doclist of a prefix up front, on *each*
    execution (~3–8 ms at 1M messages); an OR of the same terms is iterated lazily, so the
    probes and scans that follow stay cheap (the terms come from :func:`_prefix_terms`).
    Prefixes with more than ``MAX_PREFIX_TERMS`` terms, or non-ASCII ones (whose folding
    only SQLite knows), are left to FTS5.
    """
    rendered: list[str] = []
    expansions: dict[int, str] = {}
    previous: QueryItem | None = None
    for item in parsed.items:
        # FTS5 accepts implicit AND between phrases only, not before a parenthesis.
        if previous is not None and previous.kind != "op" and item.kind != "op":
            rendered.append("AND")
        previous = item
        text = item.render()
        if item.kind == "word" and item.prefix and item.text.isascii() and WORD_RE.fullmatch(item.text):
            terms = _prefix_terms(ctx, item.text.lower())
            if terms:
                text = expansions[id(item)] = "(" + " OR ".join(_quote(term) for term in terms) + ")"
        rendered.append(text)
    if not expansions:
        return parsed.render(), expansions
    return " ".join(rendered), expansions


def _text_after_nul(ctx: _Ctx, db: "SessionDB", table: str, rows: list[_Row]) -> None:
    """The page's rows marked by ``highlight()`` whose text holds a NUL, given their whole text.

    ``highlight()`` copies the text between two marks as a C string: a NUL there ends the
    copy, and the rest of that stretch was lost (``before\\x00after zebra`` came back as
    ``before`` + ``zebra``: the snippet showed neither the NUL nor what followed it).
    Otherwise its text, marks removed, is the indexed text exactly; so the page's texts are
    measured in bytes (one statement; a length, not a scan, however long the text) and a
    text ``highlight()`` gave back shorter is read again whole. The strings it marked are
    found in that text where they stand as whole words (FTS5 marks whole tokens: the same
    string at word boundaries is the same match).
    """
    todo = {row.rowid: row for row in rows if row.highlighted}
    if not todo:
        return
    for row in todo.values():
        row.highlighted = False
    fts = db.capabilities.fts.get(table)

    def texts(rowids: list[int], what: str) -> list[tuple[int, Any]]:
        marks = ",".join("?" for _ in rowids)
        if fts is not None and fts.text_sql:
            inner = f"SELECT m.id AS i, {fts.text_sql} AS t FROM messages m WHERE m.id IN ({marks})"
        elif fts is not None and fts.stored_text_sql:
            # (an inline table's own copy, read as a plain table: half the time of the
            # same rows through the FTS5 table)
            inner = f"SELECT id AS i, c0 AS t FROM {table}_content WHERE id IN ({marks})"
        else:
            inner = f"SELECT {table}.rowid AS i, {table}.content AS t FROM {table} WHERE {table}.rowid IN ({marks})"
        return ctx.conn.execute(f"SELECT i, {what} FROM ({inner})", rowids).fetchall()

    try:
        sizes = texts(list(todo), "length(CAST(t AS BLOB))")
        cut = [int(rowid) for rowid, size in sizes if int(rowid) in todo and isinstance(size, int)
               and len(todo[int(rowid)].plain.encode("utf-8", "surrogatepass")) != size]
        read = texts(cut, "t") if cut else []
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError:
        # (an external table whose content= view no longer keeps a row: FTS5 calls that
        # corrupt) the snippets stay as highlight() made them.
        return
    for rowid, whole in read:
        row = todo[int(rowid)]
        if not isinstance(whole, str) or "\x00" not in whole:
            continue  # (shorter for another reason: text that is not UTF-8, marker characters)
        pieces = sorted({row.plain[a:b] for a, b in row.spans if b > a}, key=len, reverse=True)
        row.plain = whole
        if not pieces:
            row.spans = []
            continue
        words = re.compile("(?<![^\\W_])(?:" + "|".join(map(re.escape, pieces)) + ")(?![^\\W_])")
        row.spans = [match.span() for match in words.finditer(whole)]


def _snippets_from_other_columns(
    ctx: _Ctx, db: "SessionDB", table: str, phrases: list[_Phrase], rows: list[_Row]
) -> None:
    """Rows of the page that matched outside their text -- a v30 store also indexes each
    message's tool name and tool calls -- take their snippet from what matched: the tool calls'
    text, or the tool's name before the text (such a hit showed no snippet and nothing
    highlighted: ``d`` at 1M v30 matched 40 tool calls). The query's words are found in those
    columns here, as unicode61 splits words (``highlight()`` over them cost 2-4 ms a page)."""
    bare = [row for row in rows if not row.spans]
    if not bare:
        return
    fts = db.capabilities.fts.get(table)
    wanted = [name for name in ("tool_name", "tool_calls") if fts is not None and name in fts.columns]
    words = _words_pattern(phrases)
    if not wanted or words is None:
        return
    found = {
        int(r[0]): r[1:]
        for r in ctx.conn.execute(
            f"SELECT id, {', '.join(wanted)} FROM messages WHERE id IN ({','.join('?' for _ in bare)})",
            [row.rowid for row in bare],
        )
    }
    for row in bare:
        for name, value in zip(wanted, found.get(row.rowid, ())):
            text = value if isinstance(value, str) else ("" if value is None else str(value))
            spans = [(m.start(), m.end()) for m in words.finditer(text)]
            if not spans:
                continue
            if name == "tool_name":
                row.plain = f"{text}: {row.plain}" if row.plain else text
            else:
                row.plain = text
            row.spans = spans
            break


def _words_pattern(phrases: list[_Phrase]) -> "re.Pattern[str] | None":
    """The words of the query's positive phrases as whole words (a prefix: the word's start),
    case-insensitive; None when there are none."""
    parts = []
    for phrase in phrases:
        if phrase.negated:
            continue
        for index, token in enumerate(phrase.tokens):
            tail = r"[^\W_]*" if phrase.prefix and index == len(phrase.tokens) - 1 else r"(?![^\W_])"
            parts.append(r"(?<![^\W_])" + re.escape(token) + tail)
    if not parts:
        return None
    return re.compile("|".join(sorted(set(parts), key=len, reverse=True)), re.IGNORECASE)


def _hits(ctx: _Ctx, rows: list[_Row], path: str) -> list:
    from .models import SearchHit, from_store

    if not rows:
        return []
    # While nothing is committed a hit is what its row makes it: a key that leaves most of
    # the page as it was (typing the rest of a word) reuses the last answer's hits.
    cache = ctx.prefix_cache
    before = cache.hits if cache is not None else {}
    made: dict[tuple, Any] = {}
    keys = [(row.rowid, row.plain, tuple(row.spans), row.score, path) for row in rows]
    missing = [row.rowid for row, key in zip(rows, keys) if key not in before]
    meta = {}
    if missing:
        marks = ",".join("?" for _ in missing)
        meta = {
            int(r[0]): r
            for r in ctx.conn.execute(
                "SELECT m.id, m.session_id, m.role, m.timestamp, m.tool_name, s.source, s.model, "
                "s.started_at, s.title FROM messages m LEFT JOIN sessions s ON s.id = m.session_id "
                f"WHERE m.id IN ({marks})",
                missing,
            )
        }
    hits = []
    for row, key in zip(rows, keys):
        hit = before.get(key)
        if hit is not None:
            hits.append(hit)
            made[key] = hit
            continue
        info = meta.get(row.rowid)
        if info is None:  # deleted between the scan and now
            continue
        snippet, spans, raw = make_snippet(row.plain, row.spans)
        hits.append(
            from_store(SearchHit, dict(
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
            ))
        )
        made[key] = hits[-1]
    if cache is not None:
        cache.hits = made
    return hits


_INDEX_FLAGS = ("fts_stale", "fts_cjk_stale", "fts_rebuild_high_water", "fts_rebuild_progress")


def index_warning(conn: sqlite3.Connection) -> str | None:
    """UC-4: a word that the answer may be partial, when upstream marked an index stale or is
    rebuilding it (read fresh: another process may set these at any time)."""
    try:
        flags = dict(conn.execute(
            f"SELECT key, value FROM state_meta WHERE key IN ({','.join('?' for _ in _INDEX_FLAGS)})",
            _INDEX_FLAGS,
        ).fetchall())
    except sqlite3.Error:
        return None
    if flags.get("fts_rebuild_high_water") is not None or flags.get("fts_rebuild_progress") is not None:
        return "the search index is being rebuilt: results may be incomplete"
    if str(flags.get("fts_stale") or "").strip() not in ("", "0"):
        return "the search index is marked stale: results may be incomplete"
    if str(flags.get("fts_cjk_stale") or "").strip() not in ("", "0"):
        return "the CJK index is marked stale (upstream rebuilds it): its results may be incomplete"
    return None


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
    workspace: str | None = None,
    include_hidden: bool = False,
) -> "SearchResult":
    """Structured, latency-bounded search for the UI (see the module docstring).

    ``sort``: ``auto`` (bm25 when affordable, else bm25 over the newest matches, or newest
    first for near-universal terms), ``rank`` (exact bm25 over every match, like
    :func:`search_messages`; may be slow for very common words) or ``newest``.
    ``prefix_last=True`` treats the last plain word (≥ 3 characters) as a prefix, for
    search-as-you-type: ``dock`` finds ``docker``; not once a space or punctuation follows it
    (``dock `` is the word dock). Filters as in SR-4. Never raises on the
    query text: failures are reported in ``error``. ``workspace`` keeps the messages of
    sessions in that workspace (BR-13, as :func:`hermes_state.listing.page`); hidden
    sessions' messages (v30 ``sessions.hidden``) are found only with ``include_hidden``
    (UC-3, BR-15).
    """
    from .models import SearchResult

    started = time.perf_counter()
    if sort not in _SORTS:
        raise ValueError(f"sort must be one of {', '.join(_SORTS)}")
    limit = safe_int(limit, 20)
    offset = safe_int(offset, 0)
    text = query if isinstance(query, str) else ""
    result = SearchResult(query=text, sort=sort, limit=limit, offset=offset)

    def done(**changes: Any) -> "SearchResult":
        changes["elapsed_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
        return result.model_copy(update=changes)

    if not text.strip():
        return done(note="empty query")
    text, cut_note = limit_query(text)
    # The last word is being typed only while the text ends with it: a space (or a comma, a
    # full stop) after it says it is whole (`deploy ` is the word deploy, not deployment).
    typing_word = prefix_last and text[-1:].isalnum()
    try:
        q = sanitize_fts5_query(text)
        if typing_word and q:
            q = apply_prefix_last(q)
    except Exception:  # pragma: no cover - pure string work
        q = ""
    if not q:
        return done(note="query had nothing searchable")

    def answer(text: str, q: str, typing_word: bool, limit: int = limit, offset: int = offset,
               reuse: bool = False) -> "SearchResult":
        asked = _Question(text, q, typing_word, cut_note, limit, offset, sort, _frozen(source_filter),
                          _frozen(exclude_sources), _frozen(role_filter), budget_ms, workspace,
                          bool(include_hidden))
        return db.store.one_schema(lambda: _search(db, done, asked, reuse))

    found = answer(text, q, typing_word)
    shorter = _without_short_last_word(text, q) if typing_word and not found.hits and not found.error else None
    if shorter is not None and offset:
        # A later page: whether the first had anything decides, as it did for that page.
        none = not answer(text, q, typing_word, limit=1, offset=0).hits
    else:
        none = found.total_estimate == 0
    if shorter is not None and none:
        # `the se` while `the server` is typed: no message has the word `se`, and a pane that
        # went hits -> nothing -> hits at each letter would flicker for a word not yet written.
        # The words before it answer, and the note says so (their hits hold every `the ser*`):
        # as they did a key or two earlier (`the `), when nothing was committed since.
        rest, rest_q, short = shorter
        before = answer(rest, rest_q, False, reuse=True)  # (followed by a space: whole words)
        if before.hits:
            answered = rest_q.strip()
            note = (f"Showing matches for “{answered}”: “{short}” is a whole word until it has "
                    f"{PREFIX_MIN_CHARS} letters")
            return before.model_copy(update={"note": "; ".join(filter(None, [note, before.note])),
                                             "answered_query": answered})
    return found


def _without_short_last_word(text: str, q: str) -> tuple[str, str, str] | None:
    """``(text, q, word)``: the query without its last ``word`` when ``prefix_last`` left that
    word whole only for being short (:func:`short_last_word`) and other words come before it;
    else None."""
    short = short_last_word(q)
    if short is None or not text.endswith(short):
        return None
    rest = text[: len(text) - len(short)]
    try:
        rest_q = sanitize_fts5_query(rest)
    except Exception:  # pragma: no cover - pure string work
        return None
    if not rest_q.strip() or rest_q.strip() == q.strip():
        return None
    return rest, rest_q, short


class _Question(NamedTuple):
    """What one :func:`_search` is asked: its arguments, and the key its answer is kept under
    (so that nothing that changes an answer can be left out of the key). A tuple: made and
    hashed on every search, a frozen dataclass cost 4-5 µs of a 0.5 ms search."""

    text: str
    q: str
    typing_word: bool
    cut_note: str | None
    limit: int
    offset: int
    sort: str
    source_filter: tuple[str, ...] | None
    exclude_sources: tuple[str, ...] | None
    role_filter: tuple[str, ...] | None
    budget_ms: float
    workspace: str | None
    include_hidden: bool


def _frozen(values: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


def _search(db, done, asked: _Question, reuse: bool) -> "SearchResult":
    """:func:`search` once the query is known to have something to search. The answer is kept
    in the connection's cache under ``asked``; with ``reuse`` an answer kept there since the
    last commit is given again."""
    text, q, typing_word, cut_note = asked.text, asked.q, asked.typing_word, asked.cut_note
    limit, offset, sort, budget_ms = asked.limit, asked.offset, asked.sort, asked.budget_ms
    source_filter, exclude_sources, role_filter = asked.source_filter, asked.exclude_sources, asked.role_filter
    workspace = asked.workspace
    shown = "1" if asked.include_hidden else db.rules.not_hidden("s")
    filters, params = filter_sql(source_filter, exclude_sources, role_filter, db.rules.findable("m"), shown)
    narrow, narrow_params = db.rules.workspace_clause(workspace)
    if narrow is not None:
        filters.append(narrow)
        params.extend(narrow_params)

    def run(conn: sqlite3.Connection, cache: _PrefixCache | None) -> "SearchResult":
        ctx = _Ctx(conn, filters, params, limit, offset, sort, _Budget(budget_ms),
                   prefix_cache=cache, caps=db.capabilities)
        if cut_note:
            ctx.notes.append(cut_note)
        stale = index_warning(conn)
        if stale:
            ctx.notes.append(stale)
        cjk = contains_cjk(q)
        if not cjk and ctx.caps is not None and ctx.caps.fts_loads(FTS_TABLE):
            gap = _index_gap(ctx, FTS_TABLE)
            if gap is not None:
                ctx.notes.append(f"the word index {gap}: results may be incomplete")
        phrases: list[_Phrase] = []
        if cjk:
            outcome, effective = _cjk_search(ctx, q)
            if outcome is None:
                return done(note="query had nothing searchable")
        else:
            parsed = parse_fts_query(q)
            effective = parsed.render()
            if not effective or not any(item.text.strip() for item in parsed.terms):
                # Only empty phrases (`""`): FTS5 matches nothing, and the pane should say why.
                return done(note="query had nothing searchable")
            effective, expansions = _expand_prefixes(ctx, parsed)
            phrases = _unicode61_phrases(parsed, expansions)
            # (A stale index may hold words its text no longer has: FTS5 alone decides.)
            shape = None if stale else _narrowable(db, parsed)
            if shape is not None or (not stale and _lightable(db, parsed)):
                ctx.light = _Light(phrases, ctx.prefix_cache)
            if shape is not None:
                others = _other_fts_columns(db, FTS_TABLE)
                ctx.others_empty = _others_empty_sql(others)
                if others:
                    ctx.fts_columns[FTS_TABLE] = others
            outcome = _fts_engine(ctx, FTS_TABLE, effective, phrases, "fts5", shape=shape)
            _mark_inexact(ctx, FTS_TABLE, effective, outcome.rows)
            if (
                outcome.total == 0
                and len(text.strip()) >= 3
                and parsed.terms
                and all(len(pos.text) >= 3 for pos, _ in positive_query_terms(parsed))
                # (`dock ` ends in a space: the word dock, never the substring of docker)
                and not (text[-1:].isspace() and all(p.text.isascii() for p, _ in positive_query_terms(parsed)))
            ):
                if ctx.trigram:
                    retry = " ".join(item.render_substring() for item in parsed.items)
                    outcome = _fts_engine(
                        ctx, TRIGRAM_TABLE, retry, _substring_phrases(parsed.groups()), "fts5+trigram",
                        [pos.text for pos, _ in positive_query_terms(parsed)],
                    )
                    effective = retry
                else:
                    groups = parsed.groups()
                    found = _like_search(ctx, groups, [pos.text for pos, _ in positive_query_terms(parsed)])
                    outcome = replace(found, path="fts5+like")
                    effective = _describe_like(groups)
        if typing_word and not outcome.rows and outcome.total == 0:
            short = short_last_word(q)
            if short is not None:
                # `ku` while `kubernetes` is typed: nothing has the word `ku`; say why the
                # answer is empty and what the next letter will do.
                ctx.notes.append(f"“{short}” counts as a whole word until it has {PREFIX_MIN_CHARS} letters: "
                                 "keep typing")
        hit_path = outcome.path.split("+")[-1]
        if hit_path == "fts5":
            _text_after_nul(ctx, db, FTS_TABLE, outcome.rows)
        if hit_path == "fts5" and phrases:
            _snippets_from_other_columns(ctx, db, FTS_TABLE, phrases, outcome.rows)
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

    def run_kept(conn: sqlite3.Connection) -> "SearchResult":
        cache = _prefix_cache(db, conn)
        kept = cache.answers.get(asked) if cache is not None and reuse else None
        if kept is not None:
            return done(**{name: getattr(kept, name) for name in _ANSWER_FIELDS})
        found = run(conn, cache)
        if cache is not None and not found.error:
            answers = cache.answers
            answers.pop(asked, None)
            while len(answers) >= ANSWERS_KEPT:
                del answers[next(iter(answers))]  # the oldest
            answers[asked] = found
        return found

    def run_alone(conn: sqlite3.Connection) -> "SearchResult":
        return run(conn, _prefix_cache(db, conn))

    try:
        hash(asked)
        read = run_kept
    except TypeError:  # a filter of values that cannot be a key: nothing kept, nothing reused
        read = run_alone
    try:
        return db.store.read(read)
    except sqlite3.OperationalError as exc:
        message = str(exc)
        if "fts5" in message or "syntax" in message or "no such column" in message:
            return done(error=f"query not understood: {message}")
        return done(error=f"search failed: {message}")
    except (sqlite3.Error, UnicodeError, ValueError, OverflowError, RecursionError) as exc:
        return done(error=f"search failed: {exc}")
