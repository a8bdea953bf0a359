"""Search by conversation: what :meth:`SessionDB.search` answers (the browser's search).

A person remembers a conversation, not a message: "the caddy thing where we added a udp rule"
has ``caddy`` in one turn and ``udp rule`` in another, maybe in a compression child. So the
answer is made of conversations (``conversation.conversation_roots``: the row the list shows),
in a stated order (SR-17, SR-18):

* **Message-level matches** (every word of the query in one message, as FTS5 decides, through
  :func:`hermes_state.search.engine.search`) come first, one page at a time.
* **Conversation-level matches** follow on the page where the message-level ones end: a
  conversation none of whose messages holds every word, but whose visible messages
  (``visibility.Rules.findable``: no rewound row, no scaffolding) hold each word somewhere.
  A quoted phrase still has to stand in one message; a typed prefix matches words it starts,
  never a hex id or hash unless nothing else starts so (see :mod:`hermes_state.search.spread`).
  ``OR`` separates alternatives: a conversation matches when it matches one of them.
  ``NOT word`` after a word: a message-level hit never holds it (FTS5's rule), and a
  conversation is found across messages only if **none** of its visible messages holds it.
* Within each part conversations are ordered by
  :class:`~hermes_state.search.weights.Weights`' formula (see
  :func:`~hermes_state.search.weights.conversation_score`), or newest first; the hits of one conversation stay together.

How the conversations found across messages are found, fast: :mod:`hermes_state.search.spread`.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import is_interrupted
from ..models import CONVERSATION_RANKING, CONVERSATION_WINDOW_RANKING
from ..query import limit_query, make_snippet, sanitize_fts5_query, short_last_word
from ..sql_ids import in_chunks
from .engine import search as message_search
from .explain import explain_empty
from .options import ORDERS, SearchOptions, message_filters
from .spread import Spread, find_spread, query_groups, roots_of
from .weights import ID_CREDIT, ID_LIKE_RE, Weights, conversation_score, ids_meant

if TYPE_CHECKING:  # pragma: no cover
    from ..listing.query import ListQuery
    from ..models import SearchHit, SearchResult
    from ..store import Store


def _spread_hits(conn: sqlite3.Connection, spread: Spread, cjk: bool) -> list["SearchHit"]:
    from ..models import SearchHit, from_store

    ids = [rowid for match in spread.matches for rowid in match.messages]
    if not ids:
        return []
    rows: dict[int, Any] = {}
    for chunk, marks in in_chunks(ids):
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


def ordered(hits: list["SearchHit"], roots: dict[str, str], order: str, now: float, weights: Weights,
             ids_meant: bool = False) -> list["SearchHit"]:
    """Message-level hits grouped by conversation, best conversation first (SR-18)."""
    groups: dict[str, list["SearchHit"]] = {}
    for hit in hits:
        groups.setdefault(roots.get(hit.session_id, hit.session_id), []).append(hit)
    id_like: dict[str, bool] = {}  # (the same few words are matched in every hit)

    def reads_as_id(word: str) -> bool:
        known = id_like.get(word)
        if known is None:
            known = id_like[word] = ID_LIKE_RE.fullmatch(word.lower()) is not None
        return known

    def credited(hit: "SearchHit") -> float | None:
        # A hit whose every match is an id or a hash (`cadd7398…` for `cadd`) is credited
        # little: each such token is rare, so bm25 would put it above the word meant.
        if hit.score is None or ids_meant or not hit.spans:
            return hit.score
        snippet = hit.snippet
        if all(reads_as_id(snippet[a:b]) for a, b in hit.spans):
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
            out.append(_of_conversation(hit, root))
    return out


def in_given_order(hits: list["SearchHit"], roots: dict[str, str]) -> list["SearchHit"]:
    """Hits ranked by conversation already (:mod:`~hermes_state.search.by_conversation`),
    each given its conversation."""
    return [_of_conversation(hit, roots.get(hit.session_id, hit.session_id)) for hit in hits]


def _of_conversation(hit: "SearchHit", root: str) -> "SearchHit":
    """``hit`` with its conversation set to ``root`` -- in place, not copied (a copy of a
    model cost ~5-40 us, 40 a key): a hit's conversation is that of its session, which does
    not change while nothing is committed, and the engine gives its hits again only until a
    commit."""
    if hit.conversation_id != root:
        hit.__dict__["conversation_id"] = root
    return hit


def _short_word_said(query: str, prefix_last: bool) -> bool:
    """The engine said already why the answer is empty: a last word too short to be a prefix."""
    text, _cut = limit_query(query)
    if not (prefix_last and text[-1:].isalnum()):
        return False
    return short_last_word(sanitize_fts5_query(text)) is not None


def search(store: "Store", query: str, scope: "ListQuery", options: SearchOptions = SearchOptions()) -> "SearchResult":
    """:func:`hermes_state.search.engine.search`'s hits, by conversation (SR-17, SR-18): the
    page's message-level hits grouped and ordered by conversation, then -- on the page where
    they end -- the conversations found across messages; an empty answer says why (SR-19).
    ``scope``: the list's filters (which of them a search obeys:
    :mod:`hermes_state.search.options`); ``options``: the search's own knobs."""
    order, offset, prefix_last = options.order, options.offset, options.prefix_last
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}")
    weights = (options.weights or Weights()).clean()
    now = time.time() if options.now is None else float(options.now)
    started = time.perf_counter()
    if order == "newest" and options.sort != "newest":
        options = replace(options, sort="newest")
    elif order == "relevance" and options.sort == "rank":
        # Every match, ranked by conversation (SR-18; past its bound, the newest so).
        options = replace(options, sort="conversation", weights=weights, now=now)
    base = message_search(store, query, scope, options)
    if base.error or not base.path or not isinstance(query, str):
        return base.model_copy(update={"order": order})
    filters, params = message_filters(store.rules, scope, options)
    try:
        groups, cjk = query_groups(query, prefix_last)
    except Exception:  # pragma: no cover - pure string work
        groups, cjk = [], False

    def run(conn: sqlite3.Connection) -> "SearchResult":
        roots = roots_of(store, conn, {hit.session_id for hit in base.hits})
        if base.ranking in (CONVERSATION_RANKING, CONVERSATION_WINDOW_RANKING):
            hits = in_given_order(list(base.hits), roots)
        else:
            hits = ordered(list(base.hits), roots, order, now, weights, ids_meant=ids_meant(query))
        notes = [base.note] if base.note else []
        spread = Spread()
        last_page = not base.has_more and (offset == 0 or base.hits)
        if last_page and groups and not base.answered_query and any(len(g) >= 2 for g in groups):
            try:
                spread = find_spread(store, conn, groups, cjk, filters, params, now=now, weights=weights)
            except sqlite3.OperationalError as exc:
                if is_interrupted(exc):
                    raise
                spread.notes.append("the search across messages failed: " + str(exc))
            if order == "newest":
                spread.matches.sort(key=lambda m: m.newest, reverse=True)
            hits += _spread_hits(conn, spread, cjk)
            notes.extend(spread.notes)
        if not hits and offset == 0 and not _short_word_said(query, prefix_last):
            why = explain_empty(store, conn, query, groups, cjk, spread, scope, options)
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
        return store.read(run)
    except sqlite3.OperationalError as exc:
        if is_interrupted(exc):
            raise
        return base.model_copy(update={"order": order, "note": f"search by conversation failed: {exc}"})
    except (sqlite3.Error, UnicodeError, ValueError) as exc:
        return base.model_copy(update={"order": order, "note": f"search by conversation failed: {exc}"})
