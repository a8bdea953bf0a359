"""Conversations found across messages (SR-17): none of whose messages holds every word of
the query, but whose visible messages hold each word somewhere.

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from ..conversation import conversation_roots
from ..folding import fold, words_regex
from ..query import (
    OPERATORS,
    ParsedQuery,
    QueryItem,
    apply_prefix_last,
    cjk_tokens,
    contains_cjk,
    limit_query,
    parse_fts_query,
    sanitize_fts5_query,
    WORD_RE,
)
from ..sql_ids import in_chunks
from .sql import FTS_TABLE, TRIGRAM_TABLE, quote, trigrams_starting, where_clause, words_starting
from .weights import Weights, conversation_score, words_meant

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store

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
    """Where the item's words stand in a text, as its highlight marks them (the query's own,
    :func:`hermes_state.query.highlight_pattern`)."""
    return re.compile(words_regex(list(words), prefix), re.IGNORECASE) if words else None


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
    found = words_starting(conn, folded, MAX_EXPANSION)
    found = None if found is None else words_meant(folded, found)
    if memo is not None:
        memo.terms[folded] = found
    return found


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
            return _Term(text, TRIGRAM_TABLE, quote(text), pattern)
        found = trigrams_starting(conn, text, MAX_EXPANSION)
        if found is None:
            return None
        return _Term(text, TRIGRAM_TABLE, "(" + " OR ".join(map(quote, found)) + ")" if found else None, pattern)
    words = WORD_RE.findall(fold(text))  # (folded first: a decomposed accent is no separator)
    if not words:
        return None
    pattern = _word_pattern(words, item.prefix)
    if item.kind == "word" and item.prefix and text.isascii() and WORD_RE.fullmatch(text):
        found = _word_terms(conn, text.lower(), memo)
        if found is None:
            return _Term(text, FTS_TABLE, item.render(), pattern)
        return _Term(text, FTS_TABLE, "(" + " OR ".join(map(quote, found)) + ")" if found else None, pattern)
    return _Term(text, FTS_TABLE, item.render(), pattern)


def query_groups(query: str, prefix_last: bool) -> tuple[list[list[tuple[QueryItem, list[QueryItem]]]], bool]:
    """The query's OR-separated groups of ``(positive item, [excluded items])``, as
    :func:`hermes_state.search.engine.search` reads it (its sanitiser and repair, the last
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
class Spread:
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


def _memo(store: "Store", conn: sqlite3.Connection) -> _Memo:
    """The store's memo (kept on it: :meth:`Store.attached`), emptied after a commit, or on
    another connection (the store reopened its file)."""
    try:
        key = (id(conn), int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
    except sqlite3.Error:
        return _Memo()
    memo = store.attached("spread-memo", lambda _store: _Memo())
    if memo.key != key or len(memo.roots) > 200_000 or len(memo.terms) > 512:
        memo.key, memo.roots, memo.terms = key, {}, {}
    return memo


def roots_of(store: "Store", conn: sqlite3.Connection, session_ids: set[str]) -> dict[str, str]:
    """:func:`conversation_roots`, those already known since the last commit from memory."""
    known = _memo(store, conn).roots
    missing = [sid for sid in session_ids if sid not in known]
    if missing:
        # A session without a parent is its own conversation's root (most are): only the
        # others walk up (conversation_roots' recursive statement costs ~40 us a session).
        climbing = []
        for chunk, marks in in_chunks(missing):
            with_parent = {sid for (sid,) in conn.execute(
                f"SELECT id FROM sessions WHERE id IN ({marks}) AND parent_session_id IS NOT NULL", chunk)}
            for sid in chunk:
                if sid in with_parent:
                    climbing.append(sid)
                else:
                    known[sid] = sid
        if climbing:
            known.update(conversation_roots(store, climbing))
    return {sid: known.get(sid, sid) for sid in session_ids}


def _members(store: "Store", conn: sqlite3.Connection, roots: list[str]) -> dict[str, list[str]]:
    """Every session of each conversation (its compression chain and delegate runs)."""
    listed = store.rules.listed("c")
    out: dict[str, list[str]] = {root: [] for root in roots}
    parents: list[str] = []
    for chunk, marks in in_chunks(roots):
        parents.extend(sid for (sid,) in conn.execute(
            f"SELECT DISTINCT parent_session_id FROM sessions WHERE parent_session_id IN ({marks})", chunk))
    for chunk, marks in in_chunks(parents):
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
    for chunk, marks in in_chunks(sessions):
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
    for chunk, marks in in_chunks(inside):
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
    store: "Store",
    conn: sqlite3.Connection,
    groups: list[list[tuple[QueryItem, list[QueryItem]]]],
    cjk: bool,
    filters: list[str],
    params: list[Any],
    *,
    now: float,
    weights: Weights,
    budget_ms: float = SPREAD_BUDGET_MS,
) -> Spread:
    """The conversations that match across messages (none of whose messages holds every
    word of a group), best first (see the module docstring)."""
    spread = Spread()
    memo = _memo(store, conn)
    budget = _Budget(budget_ms)
    finder = _Finder(conn, filters, params, budget)
    trigram = store.capabilities.fts_loads(TRIGRAM_TABLE) if cjk else False
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
        roots = roots_of(store, conn, sessions)
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
            # (short: the pane's subtitle is the width of the list beside the detail pane)
            spread.notes.append(f"across messages: newest {MAX_CANDIDATES} of {len(order):,} "
                                "conversations with the words ranked")
            order = order[:MAX_CANDIDATES]
        elif partial:
            spread.notes.append(f"common words: across messages, the newest {ENUM_ROWS} "
                                f"messages with “{enumerable[0].text}” were tried")
        # Sessions and rowid ranges are needed only where statements look inside a
        # conversation: for the common words, the excluded ones, or a partial enumeration.
        needs_inside = partial or bool(negs) or len(enumerable) < len(terms)
        members = _members(store, conn, order) if needs_inside else {root: [] for root in order}
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


