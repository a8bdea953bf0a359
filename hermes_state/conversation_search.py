"""Search by conversation: what :meth:`SessionDB.search` answers (the browser's search).

A person remembers a conversation, not a message: "the caddy thing where we added a udp rule"
has ``caddy`` in one turn and ``udp rule`` in another, maybe in a compression child. So the
answer is made of conversations (``conversation.conversation_roots``: the row the list shows),
in a stated order (SR-17, SR-18):

* **Message-level matches** (every word of the query in one message, as FTS5 decides, through
  :func:`hermes_state.search_engine.search`) come first, one page at a time.
* **Conversation-level matches** follow on the page where the message-level ones end: a
  conversation none of whose messages holds every word, but whose visible messages
  (``visibility.Rules.findable``: no rewound row, no scaffolding) hold each word somewhere.
  A quoted phrase still has to stand in one message; a typed prefix matches words it starts,
  never a hex id or hash unless nothing else starts so (see :func:`_word_terms`).
  ``OR`` separates alternatives: a conversation matches when it matches one of them.
  ``NOT word`` after a word: a message-level hit never holds it (FTS5's rule), and a
  conversation is found across messages only if **none** of its visible messages holds it.
* Within each part conversations are ordered by :class:`Weights`' formula (see
  :func:`conversation_score`), or newest first; the hits of one conversation stay together.

How the spread matches stay fast (p95 ≤ 30 ms at 1M messages): each word's matches are
counted newest first up to :data:`ENUM_ROWS` by the index alone. Words with fewer matches are
read whole (message → session → conversation) and their conversations intersected; the
others (common words, or every word when all are common: then only their newest matches are
candidates, and the note says so) are looked for inside each candidate conversation's rowid
range, one bounded statement each, under a time budget (:data:`SPREAD_BUDGET_MS`).
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from .conversation import conversation_roots
from .errors import is_interrupted
from .listing.query import ListQuery
from .query import (
    OPERATORS,
    ParsedQuery,
    QueryItem,
    apply_prefix_last,
    cjk_tokens,
    contains_cjk,
    limit_query,
    make_snippet,
    parse_fts_query,
    sanitize_fts5_query,
    short_last_word,
    WORD_RE,
)
from .search import FTS_TABLE, TRIGRAM_TABLE, filter_sql, trigram_vocab, where_clause

if TYPE_CHECKING:  # pragma: no cover
    from .models import SearchHit, SearchResult

#: ``db`` below is the facade (``SessionDB``): the message-level engine still takes it (see
#: docs/architecture.md, "In progress"); only its ``store``, ``rules`` and ``capabilities``
#: are read here.
SessionDB = Any

#: The two orders of an answer: ``relevance`` (the formula of :class:`Weights`) or ``newest``.
ORDERS = ("relevance", "newest")
#: A word with at most this many matches is read whole to find its conversations (~1 ms for
#: 600 rows at 1M messages); a commoner word is looked for inside candidate conversations.
ENUM_ROWS = 600
#: Most conversations found across messages that one answer shows (they follow every
#: message-level match; a person reads the first few).
MAX_SPREAD = 30
#: Most candidate conversations whose rowid ranges are searched for the common words.
MAX_CANDIDATES = 24
#: Statements looking inside candidate conversations one search may run (~50-100 us each at
#: 1M messages), and the time they may take on a loaded machine, before it stops and says so.
MAX_INSIDE_STATEMENTS = 36
SPREAD_BUDGET_MS = 150.0
#: Most vocabulary terms a prefix or a 1-2 character CJK word expands to here.
MAX_EXPANSION = 256
#: Messages of one conversation a word is looked for in (newest first) per range statement.
PER_CONVERSATION_ROWS = 20
#: Matches of a common word read (by the index alone) over the rowids the candidate
#: conversations span: one statement instead of one per conversation (each seeks every
#: segment of the index: ~1 ms at 1M messages on a busy box).
SPAN_ROWS = 5_000

#: What a hit whose every match is an id or a hash keeps of its score (see :func:`_ordered`).
ID_CREDIT = 0.1
#: A token that reads as an id, a hash or a number rather than a word: hex digits with at
#: least one digit (``cadd7398``), or digits with anything (``v2``, ``3f``).
_ID_LIKE_RE = re.compile(r"(?=.*\d)[0-9a-f]{6,}|.*\d.*")


@dataclass(frozen=True)
class Weights:
    """How a conversation's relevance and its recency are blended (SR-18); the browser takes
    them from its config file (``search:``), as plain numbers.

    ``recency``: the share of the score that is recency (0: relevance alone);
    ``half_life_days``: recency halves every this many days of a conversation's age (its
    newest matching message); ``together``: for a conversation found across messages, the
    share of its relevance given for how much of the query one of its messages holds."""

    recency: float = 0.2
    half_life_days: float = 30.0
    together: float = 0.5

    def clean(self) -> "Weights":
        """These weights within their ranges (a config file may say anything)."""
        def clamp(value: Any, low: float, high: float, default: float) -> float:
            try:
                number = float(value)
            except (TypeError, ValueError):
                return default
            return default if math.isnan(number) else min(high, max(low, number))

        return Weights(clamp(self.recency, 0.0, 1.0, 0.2), clamp(self.half_life_days, 0.01, 36500.0, 30.0),
                       clamp(self.together, 0.0, 1.0, 0.5))


def recency(timestamp: float | None, now: float, half_life_days: float) -> float:
    """``2 ** (-age / half-life)``: 1 for a conversation active now, ½ one half-life ago."""
    if timestamp is None:
        return 0.0
    age_days = max(0.0, now - float(timestamp)) / 86400.0
    return 2.0 ** (-age_days / max(0.01, half_life_days))


def conversation_score(relevance: float, newest: float | None, now: float, weights: Weights) -> float:
    """SR-18: ``(1 - recency) × relevance + recency × 2^(-age_days / half_life_days)``.

    ``relevance`` is in [0, 1]: for a message-level match its best hit's bm25 (rarity and
    frequency of the words, message length in tokens) over the page's best (1 when the hits
    were ranked newest first); for a conversation found across messages
    ``coverage × ((1 - together) + together × held_together)``, where ``coverage`` is the
    share of the query's idf its messages hold and ``held_together`` the largest share one
    message holds."""
    return (1.0 - weights.recency) * relevance + weights.recency * recency(newest, now, weights.half_life_days)


# ---------------------------------------------------------------------------- terms


@dataclass
class _Term:
    """One positive or excluded item of the query, as the index it is looked for in sees it."""

    text: str
    table: str
    #: MATCH text of this item alone; None: nothing can match it.
    match: str | None
    #: How the item is found in a message's text for its snippet: whole words, a word's
    #: start (a prefix), or a substring (CJK).
    pattern: "re.Pattern[str] | None"
    count: int = 0
    exact: bool = True
    oldest: int = 0
    #: rowid → (session id, timestamp), when the item's matches were read whole.
    rows: dict[int, tuple[str, float]] | None = None


def _word_pattern(words: Sequence[str], prefix: bool) -> "re.Pattern[str] | None":
    parts = []
    for index, word in enumerate(words):
        tail = r"[^\W_]*" if prefix and index == len(words) - 1 else r"(?![^\W_])"
        parts.append(r"(?<![^\W_])" + re.escape(word) + tail)
    if not parts:
        return None
    return re.compile(r"[\W_]+".join(parts) if len(parts) > 1 else parts[0], re.IGNORECASE)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _word_terms(conn: sqlite3.Connection, folded: str, memo: "_Memo | None" = None) -> list[str] | None:
    """The index's words that start with ``folded``, ids and hashes left out unless the
    prefix has a digit or nothing else starts so (``cadd`` is ``caddy``, not ``cadd7398``);
    None when there are more than :data:`MAX_EXPANSION`. A longer prefix of one expanded
    since the last commit is that list filtered."""
    if memo is not None:
        if folded in memo.terms:
            return memo.terms[folded]
        for cut in range(len(folded) - 1, 2, -1):
            wider = memo.terms.get(folded[:cut])
            if wider is not None:
                return [term for term in wider if term.startswith(folded)]
    found = _read_word_terms(conn, folded)
    if memo is not None:
        memo.terms[folded] = found
    return found


def _read_word_terms(conn: sqlite3.Connection, folded: str) -> list[str] | None:
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.hermes_convsearch_terms USING fts5vocab(main, {FTS_TABLE}, instance)"
    )
    sql = "SELECT term FROM temp.hermes_convsearch_terms WHERE term >= ? AND term < ? LIMIT 1"
    bound = folded + "\U0010ffff"
    terms: list[str] = []
    low = folded
    while True:
        row = conn.execute(sql, (low, bound)).fetchone()
        if row is None:
            break
        if len(terms) == MAX_EXPANSION:
            return None
        terms.append(str(row[0]))
        low = terms[-1] + "\x01"
    if any(ch.isdigit() for ch in folded):
        return terms
    words = [term for term in terms if not _ID_LIKE_RE.fullmatch(term)]
    return words or terms


def _short_cjk_terms(conn: sqlite3.Connection, term: str) -> list[str] | None:
    """Trigrams that start with a 1-2 character ``term`` (see :mod:`hermes_state.search`)."""
    vocab = trigram_vocab(conn)
    folded = term.lower()
    rows = conn.execute(
        f"SELECT term FROM {vocab} WHERE term >= ? AND term < ? LIMIT ?",
        (folded, folded + "\U0010ffff", MAX_EXPANSION + 1),
    ).fetchall()
    if len(rows) > MAX_EXPANSION:
        return None
    return [str(row[0]) for row in rows]


def _make_term(conn: sqlite3.Connection, item: QueryItem, cjk: bool, trigram: bool,
               memo: "_Memo | None" = None) -> _Term | None:
    """The item as a :class:`_Term`; None when it cannot be looked for here (a CJK word in a
    store without the substring index, a prefix of too many words)."""
    text = item.text
    if cjk:
        if not trigram:
            return None
        pattern = re.compile(re.escape(text), re.IGNORECASE)
        if len(text) >= 3:
            return _Term(text, TRIGRAM_TABLE, _quote(text), pattern)
        found = _short_cjk_terms(conn, text)
        if found is None:
            return None
        return _Term(text, TRIGRAM_TABLE, "(" + " OR ".join(map(_quote, found)) + ")" if found else None, pattern)
    words = [w.lower() for w in WORD_RE.findall(text)]
    if not words:
        return None
    pattern = _word_pattern(words, item.prefix)
    if item.kind == "word" and item.prefix and text.isascii() and WORD_RE.fullmatch(text):
        found = _word_terms(conn, text.lower(), memo)
        if found is None:
            return _Term(text, FTS_TABLE, item.render(), pattern)
        return _Term(text, FTS_TABLE, "(" + " OR ".join(map(_quote, found)) + ")" if found else None, pattern)
    return _Term(text, FTS_TABLE, item.render(), pattern)


def query_groups(query: str, prefix_last: bool) -> tuple[list[list[tuple[QueryItem, list[QueryItem]]]], bool]:
    """The query's OR-separated groups of ``(positive item, [excluded items])``, as
    :func:`hermes_state.search_engine.search` reads it (its sanitiser and repair, the last
    word a prefix while it is typed), and whether it goes to the CJK paths."""
    text, _cut = limit_query(query)
    typing_word = prefix_last and text[-1:].isalnum()
    q = sanitize_fts5_query(text)
    if typing_word and q:
        q = apply_prefix_last(q)
    if not q:
        return [], False
    if contains_cjk(q):
        tokens = [t.rstrip("*") or t for t in cjk_tokens(q)]  # (a substring is its own prefix)
        items = [QueryItem("op", t) if t in OPERATORS else QueryItem("phrase", t) for t in tokens]
        return ParsedQuery(items=items, verbatim=False).groups(), True
    return parse_fts_query(q).groups(), False


# ---------------------------------------------------------------------------- the spread part


@dataclass
class SpreadMatch:
    """A conversation found across messages: its root, the messages that together hold the
    query's words, its relevance and newest matching message."""

    root: str
    messages: list[int]
    relevance: float
    newest: float
    score: float = 0.0


@dataclass
class _Spread:
    matches: list[SpreadMatch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The words (by text) that no visible message holds, for an empty answer's explanation.
    absent: list[str] = field(default_factory=list)
    #: Conversations that held every word but also an excluded one.
    excluded: int = 0
    #: The terms of the groups looked at (spans of the hits).
    patterns: list["re.Pattern[str]"] = field(default_factory=list)


class _Budget:
    """The statements that look inside conversations: at most :data:`MAX_INSIDE_STATEMENTS`
    (what bounds the work, and keeps an answer the same from one run to the next), and a
    time budget should a loaded machine make even those slow."""

    def __init__(self, ms: float, statements: int = 0) -> None:
        self.deadline = time.perf_counter() + ms / 1000.0
        self.statements = statements or MAX_INSIDE_STATEMENTS
        self.exhausted = False

    def over(self) -> bool:
        self.statements -= 1
        if self.statements < 0 or time.perf_counter() > self.deadline:
            self.exhausted = True
        return self.exhausted


class _Memo:
    """What one store's searches keep while nothing is committed: conversation roots, and
    prefix expansions (search-as-you-type asks for ``con*``, then ``conf*``...)."""

    __slots__ = ("key", "roots", "terms")

    def __init__(self) -> None:
        self.key: tuple = ()
        self.roots: dict[str, str] = {}
        self.terms: dict[str, list[str] | None] = {}


_MEMOS: "weakref.WeakKeyDictionary[Any, _Memo]" = weakref.WeakKeyDictionary()


def _memo(db: Any, conn: sqlite3.Connection) -> _Memo:
    try:
        key = (id(conn), int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
        memo = _MEMOS.setdefault(db, _Memo())
    except (TypeError, sqlite3.Error):
        return _Memo()
    if memo.key != key or len(memo.roots) > 200_000 or len(memo.terms) > 512:
        memo.key, memo.roots, memo.terms = key, {}, {}
    return memo


def _roots(db: "SessionDB", conn: sqlite3.Connection, session_ids: set[str]) -> dict[str, str]:
    """:func:`conversation_roots`, those already known since the last commit from memory."""
    known = _memo(db, conn).roots
    missing = [sid for sid in session_ids if sid not in known]
    if missing:
        # A session without a parent is its own conversation's root (most are): only the
        # others walk up (conversation_roots' recursive statement costs ~40 us a session).
        climbing = []
        for start in range(0, len(missing), 500):
            chunk = missing[start:start + 500]
            marks = ",".join("?" for _ in chunk)
            with_parent = {sid for (sid,) in conn.execute(
                f"SELECT id FROM sessions WHERE id IN ({marks}) AND parent_session_id IS NOT NULL", chunk)}
            for sid in chunk:
                if sid in with_parent:
                    climbing.append(sid)
                else:
                    known[sid] = sid
        if climbing:
            known.update(conversation_roots(db.store, climbing))
    return {sid: known.get(sid, sid) for sid in session_ids}


def _members(db: "SessionDB", conn: sqlite3.Connection, roots: list[str]) -> dict[str, list[str]]:
    """Every session of each conversation (its compression chain and delegate runs)."""
    listed = db.rules.listed("c")
    out: dict[str, list[str]] = {root: [] for root in roots}
    parents: list[str] = []
    for start in range(0, len(roots), 500):
        chunk = roots[start:start + 500]
        marks = ",".join("?" for _ in chunk)
        parents.extend(sid for (sid,) in conn.execute(
            f"SELECT DISTINCT parent_session_id FROM sessions WHERE parent_session_id IN ({marks})", chunk))
    for start in range(0, len(parents), 500):
        chunk = parents[start:start + 500]
        marks = ",".join("?" for _ in chunk)
        sql = (
            "WITH RECURSIVE down(root, id) AS ("
            f" SELECT id, id FROM sessions WHERE id IN ({marks})"
            " UNION SELECT down.root, c.id FROM down JOIN sessions c ON c.parent_session_id = down.id"
            f" WHERE NOT {listed})"
            " SELECT root, id FROM down"
        )
        for root, sid in conn.execute(sql, chunk):
            out.setdefault(root, []).append(sid)
    for root in roots:
        if not out[root]:
            out[root] = [root]
    return out


def _ranges(conn: sqlite3.Connection, sessions: list[str]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for start in range(0, len(sessions), 500):
        chunk = sessions[start:start + 500]
        marks = ",".join("?" for _ in chunk)
        for sid, low, high in conn.execute(
            f"SELECT session_id, min(id), max(id) FROM messages WHERE session_id IN ({marks}) GROUP BY session_id",
            chunk,
        ):
            if low is not None:
                out[sid] = (int(low), int(high))
    return out


class _Finder:
    """The statements of the spread part, with the answer's filters."""

    def __init__(self, conn: sqlite3.Connection, filters: list[str], params: list[Any], budget: _Budget) -> None:
        self.conn = conn
        self.filters = filters
        self.params = params
        self.budget = budget
        #: The sessions table joined only when a filter reads it (a lookup per row).
        self.sessions = " JOIN sessions s ON s.id = m.session_id" if any("s." in f for f in filters) else ""

    def count(self, term: _Term) -> None:
        """How many messages hold ``term`` (up to ``ENUM_ROWS + 1``, by the index alone)."""
        table = term.table
        count, oldest = self.conn.execute(
            f"SELECT count(*), min(rowid) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? "
            "ORDER BY rowid DESC LIMIT ?)",
            (term.match, ENUM_ROWS + 1),
        ).fetchone()
        term.count, term.exact, term.oldest = int(count), int(count) <= ENUM_ROWS, int(oldest or 0)

    def read(self, term: _Term, cap: int = ENUM_ROWS) -> None:
        """The term's newest ``cap`` matches under the filters: rowid → (session, time)."""
        table = term.table
        sql = (
            f"SELECT {table}.rowid, m.session_id, m.timestamp FROM {table} "
            f"JOIN messages m ON m.id = {table}.rowid{self.sessions} "
            f"WHERE {table} MATCH ?{where_clause(self.filters)} ORDER BY {table}.rowid DESC LIMIT ?"
        )
        term.rows = {
            int(rowid): (sid, float(ts or 0.0))
            for rowid, sid, ts in self.conn.execute(sql, [term.match, *self.params, cap])
        }

    def inside(self, match: str, table: str, members: list[str], low: int, high: int,
               limit: int = PER_CONVERSATION_ROWS) -> list[tuple[int, float]]:
        """Messages of ``members`` (rowids ``low``..``high``) that ``match`` matches, newest
        first: ``(rowid, time)``."""
        marks = ",".join("?" for _ in members)
        sql = (
            f"SELECT {table}.rowid, m.timestamp FROM {table} "
            f"JOIN messages m ON m.id = {table}.rowid{self.sessions} "
            f"WHERE {table} MATCH ? AND {table}.rowid BETWEEN ? AND ? AND m.session_id IN ({marks})"
            f"{where_clause(self.filters)} ORDER BY {table}.rowid DESC LIMIT ?"
        )
        return [(int(r), float(t or 0.0))
                for r, t in self.conn.execute(sql, [match, low, high, *members, *self.params, limit])]


def _across(finder: "_Finder", term: "_Term", sessions: list[tuple[int, int, str]],
            roots: dict[str, str]) -> tuple[dict[str, list[tuple[int, float]]], int]:
    """A common word's matches inside the candidate conversations' sessions: one index-only
    statement over the rowids they span (newest first, at most :data:`SPAN_ROWS`), the rows
    inside a session's range confirmed by one read of ``messages``. Returns root → matches
    and the lowest rowid looked at (0: every one): a conversation below it is unresolved."""
    import bisect

    if not sessions:
        return {}, 0
    sessions = sorted(sessions)
    lows = [low for low, _high, _sid in sessions]
    table = term.table
    rows = finder.conn.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?",
        (term.match, lows[0], max(high for _low, high, _sid in sessions), SPAN_ROWS + 1),
    ).fetchall()
    floor = int(rows[SPAN_ROWS - 1][0]) if len(rows) > SPAN_ROWS else 0
    inside: list[int] = []
    highs = [high for _low, high, _sid in sessions]
    for (rowid,) in rows[:SPAN_ROWS]:
        at = bisect.bisect_right(lows, rowid) - 1
        # (sessions written at the same time interleave: a few ranges before may hold it)
        for back in range(at, max(-1, at - 8), -1):
            if highs[back] >= rowid:
                inside.append(int(rowid))
                break
    wanted = {sid for _low, _high, sid in sessions}
    out: dict[str, list[tuple[int, float]]] = {}
    for start in range(0, len(inside), 500):
        chunk = inside[start:start + 500]
        marks = ",".join("?" for _ in chunk)
        for rowid, sid, ts in finder.conn.execute(
            f"SELECT m.id, m.session_id, m.timestamp FROM messages m{finder.sessions} "
            f"WHERE m.id IN ({marks}){where_clause(finder.filters)} ORDER BY m.id DESC",
            [*chunk, *finder.params],
        ):
            if sid in wanted:
                out.setdefault(roots.get(sid, sid), []).append((int(rowid), float(ts or 0.0)))
    return out, floor


def _idf(df: int, total: int) -> float:
    value = math.log((total - df + 0.5) / (df + 0.5)) if total > 0 else 1.0
    return value if value > 0 else 1e-3


def find_spread(
    db: "SessionDB",
    conn: sqlite3.Connection,
    groups: list[list[tuple[QueryItem, list[QueryItem]]]],
    cjk: bool,
    filters: list[str],
    params: list[Any],
    *,
    now: float,
    weights: Weights,
    budget_ms: float = SPREAD_BUDGET_MS,
) -> _Spread:
    """The conversations that match across messages (none of whose messages holds every
    word of a group), best first (see the module docstring)."""
    spread = _Spread()
    memo = _memo(db, conn)
    budget = _Budget(budget_ms)
    finder = _Finder(conn, filters, params, budget)
    trigram = db.capabilities.fts_loads(TRIGRAM_TABLE) if cjk else False
    total = int(conn.execute("SELECT COALESCE(max(id), 0) FROM messages").fetchone()[0]) or 1
    found: dict[str, SpreadMatch] = {}
    for group in groups:
        if len(group) < 2:
            continue  # one item: every match is a message-level one
        terms: list[_Term] = []
        for item, _negs in group:
            term = _make_term(conn, item, cjk, trigram, memo)
            if term is None:
                why = "this store has no substring index" if cjk and not trigram else "too many words start so"
                spread.notes.append(f"“{item.text}” was not looked for across messages ({why})")
                terms = []
                break
            terms.append(term)
        if not terms:
            continue
        spread.patterns.extend(t.pattern for t in terms if t.pattern is not None)
        missing = [t.text for t in terms if t.match is None]
        for term in terms:
            if term.match is not None:
                finder.count(term)
                if term.count == 0:
                    missing.append(term.text)
        if missing:
            spread.absent.extend(t for t in missing if t not in spread.absent)
            continue
        negs = []
        for _item, excluded in group:
            for neg in excluded:
                term = _make_term(conn, neg, cjk, trigram, memo)
                if term is not None and term.match is not None:
                    negs.append(term)
        for term in terms:
            # (a df past the counted rows is extrapolated from their rowid span)
            if not term.exact:
                span = max(1, total - term.oldest + 1)
                term.count = max(term.count, int(term.count / span * total))
        idfs = [_idf(t.count, total) for t in terms]
        weight_sum = sum(idfs) or 1.0
        enumerable = sorted((t for t in terms if t.exact), key=lambda t: t.count)
        partial = False
        if not enumerable:
            rarest = min(terms, key=lambda t: t.count)
            finder.read(rarest)
            enumerable = [rarest]
            partial = True
        else:
            for term in enumerable:
                finder.read(term)
        # Conversations holding every enumerable term, by the newest match of the rarest.
        sessions = {sid for t in enumerable for sid, _ts in (t.rows or {}).values()}
        roots = _roots(db, conn, sessions)
        per_term: list[dict[str, list[tuple[int, float]]]] = []
        for term in enumerable:
            by_root: dict[str, list[tuple[int, float]]] = {}
            for rowid, (sid, ts) in (term.rows or {}).items():
                by_root.setdefault(roots.get(sid, sid), []).append((rowid, ts))
            per_term.append(by_root)
        candidates = set(per_term[0])
        for by_root in per_term[1:]:
            candidates &= set(by_root)
        if not candidates:
            continue
        # (rows come newest first: a conversation's first row is its newest match)
        newest_of = {root: rows[0][0] for root, rows in per_term[0].items() if root in candidates}
        order = sorted(candidates, key=newest_of.__getitem__, reverse=True)
        if len(order) > MAX_CANDIDATES:
            spread.notes.append(f"words across messages were looked for in the newest {MAX_CANDIDATES} "
                                "conversations that could hold them")
            order = order[:MAX_CANDIDATES]
        elif partial:
            spread.notes.append(f"every word is common: words across messages were looked for among the "
                                f"newest {ENUM_ROWS} messages holding “{enumerable[0].text}”")
        # Sessions and rowid ranges are needed only where statements look inside a
        # conversation: for the common words, the excluded ones, or a partial enumeration.
        needs_inside = partial or bool(negs) or len(enumerable) < len(terms)
        members = _members(db, conn, order) if needs_inside else {root: [] for root in order}
        ranges = _ranges(conn, [sid for root in order for sid in members[root]]) if needs_inside else {}
        full_match = " AND ".join(f"({t.match})" for t in terms)
        table = terms[0].table
        # The common words and the excluded ones, over the candidates' sessions at once.
        spans = [(ranges[sid][0], ranges[sid][1], sid) for root in order for sid in members[root] if sid in ranges]
        member_roots = {sid: root for root in order for sid in members[root]}
        scanned: dict[int, tuple[dict[str, list[tuple[int, float]]], int]] = {}
        for term in [*(t for t in terms if t not in enumerable), *negs]:
            scanned[id(term)] = _across(finder, term, spans, member_roots)
        lowest = {root: min((ranges[sid][0] for sid in members[root] if sid in ranges), default=0) for root in order}
        # (a partial read of the rarest word holds every match at or above its oldest row)
        read_floor = min(enumerable[0].rows or {0: None}) if partial and len(enumerable[0].rows or ()) >= ENUM_ROWS else 0
        # The words read whole first (no statement), then the rarest of the others.
        looking = sorted(enumerate(terms), key=lambda pair: (pair[1] not in enumerable, pair[1].count))
        stopped = False
        for root in order:
            if root in found:
                continue
            spans = [ranges[sid] for sid in members[root] if sid in ranges]
            if needs_inside and not spans:
                continue
            low, high = (min(a for a, _b in spans), max(b for _a, b in spans)) if spans else (0, 0)
            sids = members[root]
            held: dict[int, set[int]] = {}  # rowid → indexes of the terms it holds
            times: dict[int, float] = {}
            complete = True
            for index, term in looking:
                if term in enumerable:
                    rows = per_term[enumerable.index(term)].get(root, [])
                    if partial and lowest[root] < read_floor:
                        complete = False  # (older matches of it were not read)
                else:
                    by_root, floor = scanned[id(term)]
                    if lowest[root] >= floor:
                        rows = by_root.get(root, [])
                    else:
                        # (below the span scan's rows: a statement for this conversation,
                        # the part a budget bounds)
                        if budget.over():
                            stopped = True
                            break
                        rows = finder.inside(term.match or "", term.table, sids, low, high)
                        complete = False
                if not rows:
                    break
                for rowid, ts in rows:
                    held.setdefault(rowid, set()).add(index)
                    times[rowid] = ts
            else:
                if any(len(indexes) == len(terms) for indexes in held.values()):
                    continue  # one message holds every word: a message-level match
                unresolved = [neg for neg in negs if lowest[root] < scanned[id(neg)][1]]
                if (not complete or unresolved) and budget.over():
                    stopped = True  # (counted once for the checks below)
                if stopped:
                    break
                if not complete and finder.inside(full_match, table, sids, low, high, 1):
                    continue
                if any(root in scanned[id(neg)][0] for neg in negs) or any(
                        finder.inside(neg.match or "", neg.table, sids, low, high, 1) for neg in unresolved):
                    spread.excluded += 1
                    continue
                together = max(sum(idfs[i] for i in indexes) for indexes in held.values()) / weight_sum
                relevance = (1.0 - weights.together) + weights.together * together
                cover = _cover(held, len(terms))
                newest = max(times.values())
                match = SpreadMatch(root, cover, relevance, newest)
                match.score = conversation_score(relevance, newest, now, weights)
                found[root] = match
            if stopped:
                spread.notes.append("the search across messages stopped at its time budget")
                break
    spread.matches = sorted(found.values(), key=lambda m: (m.score, m.newest), reverse=True)[:MAX_SPREAD]
    return spread


def _cover(held: dict[int, set[int]], n_terms: int) -> list[int]:
    """The fewest messages (greedily, newest first on ties) that together hold every term."""
    left = set(range(n_terms))
    chosen: list[int] = []
    while left:
        best = max(held, key=lambda rowid: (len(held[rowid] & left), rowid))
        if not held[best] & left:
            break
        chosen.append(best)
        left -= held[best]
    return sorted(chosen)


# ---------------------------------------------------------------------------- the answer


def _filters(db: "SessionDB", source_filter, exclude_sources, role_filter, scope: ListQuery):
    shown = "1" if scope.include_hidden else db.rules.not_hidden("s")
    filters, params = filter_sql(source_filter, exclude_sources, role_filter, db.rules.findable("m"), shown)
    narrow, narrow_params = db.rules.workspace_clause(scope.workspace)
    if narrow is not None:
        filters.append(narrow)
        params.extend(narrow_params)
    return filters, params


def _spread_hits(conn: sqlite3.Connection, spread: _Spread, cjk: bool) -> list["SearchHit"]:
    from .models import SearchHit, from_store

    ids = [rowid for match in spread.matches for rowid in match.messages]
    if not ids:
        return []
    rows: dict[int, Any] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        marks = ",".join("?" for _ in chunk)
        for row in conn.execute(
            "SELECT m.id, m.session_id, m.role, m.timestamp, m.tool_name, s.source, s.model, s.started_at, "
            "s.title, COALESCE(m.content, '') || CASE WHEN COALESCE(m.tool_calls, '') != '' "
            "THEN ' ' || m.tool_calls ELSE '' END "
            f"FROM messages m LEFT JOIN sessions s ON s.id = m.session_id WHERE m.id IN ({marks})",
            chunk,
        ):
            rows[int(row[0])] = row
    hits = []
    for match in spread.matches:
        for rowid in match.messages:
            row = rows.get(rowid)
            if row is None:
                continue
            text = row[9] if isinstance(row[9], str) else ""
            spans = sorted({m.span() for pattern in spread.patterns for m in pattern.finditer(text) if m.end() > m.start()})
            merged: list[tuple[int, int]] = []
            for a, b in spans:
                if merged and a <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
                else:
                    merged.append((a, b))
            snippet, out_spans, raw = make_snippet(text, merged)
            hits.append(from_store(SearchHit, dict(
                id=rowid, session_id=row[1], role=row[2], timestamp=row[3] if row[3] is not None else 0.0,
                tool_name=row[4], source=row[5] or "", model=row[6], session_started=row[7], session_title=row[8],
                snippet=snippet, spans=out_spans, raw_snippet=raw, score=match.relevance,
                path="trigram" if cjk else "fts5", conversation_id=match.root, across=len(match.messages),
            )))
    return hits


def _ordered(hits: list["SearchHit"], roots: dict[str, str], order: str, now: float, weights: Weights,
             ids_meant: bool = False) -> list["SearchHit"]:
    """Message-level hits grouped by conversation, best conversation first (SR-18)."""
    groups: dict[str, list["SearchHit"]] = {}
    for hit in hits:
        groups.setdefault(roots.get(hit.session_id, hit.session_id), []).append(hit)
    def credited(hit: "SearchHit") -> float | None:
        # A hit whose every match is an id or a hash (`cadd7398…` for `cadd`) is credited
        # little: each such token is rare, so bm25 would put it above the word meant.
        if hit.score is None or ids_meant or not hit.spans:
            return hit.score
        if all(_ID_LIKE_RE.fullmatch(hit.snippet[a:b].lower()) for a, b in hit.spans):
            return hit.score * ID_CREDIT
        return hit.score

    scores = [hit.score for hit in hits if hit.score is not None]
    best = max(scores) if scores else 0.0
    ranked = []
    for position, (root, members) in enumerate(groups.items()):
        newest = max(hit.timestamp for hit in members)
        if order == "newest":
            key: tuple = (newest, -position)
        else:
            top = max((c for c in map(credited, members) if c is not None), default=None)
            relevance = 1.0 if not scores else (max(0.0, top) / best if top is not None and best > 0 else 0.0)
            key = (conversation_score(relevance, newest, now, weights), -position)
        ranked.append((key, root, members))
    ranked.sort(key=lambda entry: entry[0], reverse=True)
    out = []
    for _key, root, members in ranked:
        if order == "newest":
            members = sorted(members, key=lambda hit: (hit.timestamp, hit.id), reverse=True)
        for hit in members:
            # Set in place, not copied (a copy of a model cost ~5-40 us, 40 a key): a hit's
            # conversation is that of its session, which does not change while nothing is
            # committed -- and the engine gives its hits again only until a commit.
            if hit.conversation_id != root:
                hit.__dict__["conversation_id"] = root
            out.append(hit)
    return out


def _short_word_said(query: str, prefix_last: bool) -> bool:
    """The engine said already why the answer is empty: a last word too short to be a prefix."""
    text, _cut = limit_query(query)
    if not (prefix_last and text[-1:].isalnum()):
        return False
    return short_last_word(sanitize_fts5_query(text)) is not None


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
    scope: ListQuery = ListQuery(),
    order: str = "relevance",
    weights: Weights | None = None,
    now: float | None = None,
) -> "SearchResult":
    """:func:`hermes_state.search_engine.search`'s hits, by conversation (SR-17, SR-18): the
    page's message-level hits grouped and ordered by conversation, then -- on the page where
    they end -- the conversations found across messages; an empty answer says why (SR-19)."""
    from .search_engine import search as message_search
    from .search_explain import explain_empty

    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}")
    weights = (weights or Weights()).clean()
    now = time.time() if now is None else float(now)
    started = time.perf_counter()
    base = message_search(
        db, query, limit=limit, offset=offset, sort="newest" if order == "newest" else sort,
        source_filter=source_filter, exclude_sources=exclude_sources, role_filter=role_filter,
        prefix_last=prefix_last, workspace=scope.workspace, include_hidden=scope.include_hidden,
    )
    if base.error or not base.path or not isinstance(query, str):
        return base.model_copy(update={"order": order})
    filters, params = _filters(db, source_filter, exclude_sources, role_filter, scope)
    try:
        groups, cjk = query_groups(query, prefix_last)
    except Exception:  # pragma: no cover - pure string work
        groups, cjk = [], False

    def run(conn: sqlite3.Connection) -> "SearchResult":
        roots = _roots(db, conn, {hit.session_id for hit in base.hits})
        hits = _ordered(list(base.hits), roots, order, now, weights, ids_meant=any(ch.isdigit() for ch in query))
        notes = [base.note] if base.note else []
        spread = _Spread()
        last_page = not base.has_more and (offset == 0 or base.hits)
        if last_page and groups and not base.answered_query and any(len(g) >= 2 for g in groups):
            try:
                spread = find_spread(db, conn, groups, cjk, filters, params, now=now, weights=weights)
            except sqlite3.OperationalError as exc:
                if is_interrupted(exc):
                    raise
                spread.notes.append("the search across messages failed: " + str(exc))
            if order == "newest":
                spread.matches.sort(key=lambda m: m.newest, reverse=True)
            hits += _spread_hits(conn, spread, cjk)
            notes.extend(spread.notes)
        if not hits and offset == 0 and not _short_word_said(query, prefix_last):
            why = explain_empty(db, conn, query, groups, cjk, spread, prefix_last=prefix_last,
                                source_filter=source_filter, exclude_sources=exclude_sources,
                                role_filter=role_filter, scope=scope)
            if why:
                notes.append(why)
        conversations = len({hit.conversation_id for hit in hits})
        # (found across messages alone: the index that found them, not a retry that did not)
        path = base.path if base.hits or not spread.matches else ("trigram" if cjk else "fts5")
        return base.model_copy(update={
            "path": path,
            "hits": hits,
            "order": order,
            "conversations": conversations,
            "spread_conversations": len(spread.matches),
            "total_estimate": base.total_estimate + sum(len(m.messages) for m in spread.matches),
            "note": "; ".join(dict.fromkeys(n for n in notes if n)) or None,
            "elapsed_ms": round((time.perf_counter() - started) * 1000.0, 3),
        })

    try:
        return db.store.read(run)
    except sqlite3.OperationalError as exc:
        if is_interrupted(exc):
            raise
        return base.model_copy(update={"order": order, "note": f"search by conversation failed: {exc}"})
    except (sqlite3.Error, UnicodeError, ValueError) as exc:
        return base.model_copy(update={"order": order, "note": f"search by conversation failed: {exc}"})
