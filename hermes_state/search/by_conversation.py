"""Every match of a query ranked by conversation (SR-18's exact ranking): what a search asked
with ``sort="rank"`` answers by conversation once typing pauses, and what
``hermes-sessions search`` answers.

Ranking messages and then grouping them gives the conversation of the best *message*: a long
generated chat that mentions ``certificate`` once in a short line beats the five-message
conversation about an expired certificate, four of whose messages name it. A person
remembers the conversation, so each conversation is scored from all its matching messages:

* ``best`` -- its best message's bm25 (FTS5's own, over the whole index) over the best of any
  conversation: the words, rare and frequent in one message;
* ``about`` -- how much of the conversation is about the words: bm25's saturation applied to
  the conversation as a document, its matching messages as the term frequency and its
  messages as its length (``n (k1 + 1) / (n + k1 (1 - b + b · length / average length))``),
  over the highest of any conversation: four of five messages beat one of ninety;
* ``title`` -- the share of the query's words its title holds (the last word as typed: a
  prefix), the conversation's own summary of itself.

``relevance = ((1 - about_weight) · best + about_weight · about) · (1 + title_weight · title)``,
blended with recency by :func:`~hermes_state.search.weights.conversation_score`.

Cost: one statement reads every match with its bm25 and its session (~80 ms for 22,000
matches at 1M messages, warm), so it runs only up to ``TUNING.CONVERSATION_RANKED_ROWS``
matches (past it the query is too common for the conversations to differ by it: exact
message-level bm25 answers) and is kept on the connection until a commit, for the next pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .context import Ctx, Outcome, Row, plain_text_sql
from ..query import parse_fts_query
from .sql import positive_query_terms, where_clause
from .tuning import TUNING
from .weights import Weights, conversation_score

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store

#: The ranking of an answer ranked by conversation over every match (see
#: :mod:`hermes_state.models`).
_K1, _B = 1.2, 0.75
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")


@dataclass(frozen=True)
class ByConversation:
    """What ranking by conversation needs beside the engine's context: the store (for each
    session's conversation), the clock and weights of the blend, and the query's words (for
    its titles; ``last_prefix``: the last is being typed)."""

    store: "Store"
    now: float
    weights: Weights
    words: tuple[str, ...]
    last_prefix: bool

    def title_share(self, titles: set[str]) -> float:
        """The share of the query's words one of ``titles`` holds (as whole words; the last,
        ``last_prefix``, as the start of one; CJK as a substring)."""
        if not self.words or not titles:
            return 0.0
        best = 0.0
        for title in titles:
            lowered = title.lower()
            held = 0
            for index, word in enumerate(self.words):
                if _CJK_RE.search(word):
                    held += word in lowered
                    continue
                end = "" if self.last_prefix and index == len(self.words) - 1 else r"(?![^\W_])"
                held += re.search(r"(?<![^\W_])" + re.escape(word) + end, lowered) is not None
            best = max(best, held / len(self.words))
        return best


def title_words(q: str) -> tuple[str, ...]:
    """The words of the query's positive items (sanitized ``q``), lower-cased, for
    :meth:`ByConversation.title_share`."""
    try:
        parsed = parse_fts_query(q)
    except Exception:  # pragma: no cover - pure string work
        return ()
    words: list[str] = []
    for item, _negs in positive_query_terms(parsed):
        words.extend(word.lower() for word in item.text.split() if word)
    return tuple(words)


def conversation_ranked(ctx: Ctx, table: str, match: str, path: str, plain: bool,
                        to_row: Callable[[int, str, float | None], Row]) -> Outcome | None:
    """The page ``ctx.offset``/``ctx.limit`` of ``match``'s hits on ``table``, conversations
    in the order of the module docstring, each one's hits best first; None when there are
    more than ``TUNING.CONVERSATION_RANKED_ROWS`` matches (or no ranking was asked for)."""
    asked = ctx.by_conversation
    if asked is None:
        return None
    cache = ctx.prefix_cache
    key = (table, match, tuple(ctx.filters), tuple(ctx.params), asked.weights, asked.words, asked.last_prefix)
    order = cache.by_conversation.get(key) if cache is not None else None
    if order is None:
        order = _rank(ctx, table, match, asked)
        if order is None:
            return None
        if cache is not None:
            while len(cache.by_conversation) >= TUNING.ANSWERS_KEPT:
                del cache.by_conversation[next(iter(cache.by_conversation))]
            cache.by_conversation[key] = order
    page_ids = order[ctx.offset:ctx.offset + ctx.limit]
    rows = _page_rows(ctx, table, match, plain, page_ids, to_row)
    more = len(order) > ctx.offset + len(page_ids)
    from ..models import CONVERSATION_RANKING

    return Outcome(rows, CONVERSATION_RANKING, len(order), True, more, path)


def _rank(ctx: Ctx, table: str, match: str, asked: ByConversation) -> list[int] | None:
    """Every match's rowid, in the ranking's order; None past the bound."""
    counts = "COALESCE(s.message_count, 0)" if _has_counts(ctx) else "0"
    sql = (f"SELECT {table}.rowid, {table}.rank, m.session_id, s.parent_session_id IS NOT NULL, "
           f"{counts}, s.title, m.timestamp FROM {table} JOIN messages m ON m.id = {table}.rowid "
           f"LEFT JOIN sessions s ON s.id = m.session_id WHERE {table} MATCH ?{where_clause(ctx.filters)}")
    cursor = ctx.conn.execute(sql, [match, *ctx.params])
    rows = cursor.fetchmany(TUNING.CONVERSATION_RANKED_ROWS + 1)
    if len(rows) > TUNING.CONVERSATION_RANKED_ROWS:
        cursor.close()
        return None
    if not rows:
        return []
    climbing = {sid for _r, _k, sid, parent, _c, _t, _s in rows if parent}
    roots: dict[str, str] = {}
    if climbing:
        from .spread import roots_of

        roots = roots_of(asked.store, ctx.conn, climbing)
    # Per conversation: its hits (rowid, bm25), its sessions' sizes and titles, its newest hit.
    hits: dict[str, list[tuple[float, int]]] = {}
    sizes: dict[str, dict[str, int]] = {}
    titles: dict[str, set[str]] = {}
    newest: dict[str, float] = {}
    for rowid, rank, sid, _parent, count, title, stamp in rows:
        root = roots.get(sid, sid)
        hits.setdefault(root, []).append((-float(rank or 0.0), int(rowid)))
        sizes.setdefault(root, {})[sid] = int(count or 0)
        if isinstance(title, str) and title:
            titles.setdefault(root, set()).add(title)
        if isinstance(stamp, (int, float)) and stamp > newest.get(root, float("-inf")):
            newest[root] = float(stamp)
    lengths = {root: max(len(hits[root]), sum(sizes[root].values())) for root in hits}
    average = sum(lengths.values()) / len(lengths)
    about = {root: _saturated(len(hits[root]), lengths[root], average) for root in hits}
    best = {root: max(score for score, _rowid in members) for root, members in hits.items()}
    top_best = max(best.values()) or 1.0
    top_about = max(about.values()) or 1.0
    weights = asked.weights
    scored = []
    for root, members in hits.items():
        relevance = ((1.0 - weights.about) * max(0.0, best[root]) / top_best
                     + weights.about * about[root] / top_about)
        relevance *= 1.0 + weights.title * asked.title_share(titles.get(root, set()))
        score = conversation_score(relevance, newest.get(root), asked.now, weights)
        scored.append((score, newest.get(root, 0.0), root))
    scored.sort(reverse=True)
    order: list[int] = []
    for _score, _newest, root in scored:
        # (ties as FTS5's ORDER BY rank leaves them: the older first)
        order.extend(rowid for _s, rowid in sorted(hits[root], key=lambda hit: (-hit[0], hit[1])))
    return order


def _saturated(n: int, length: int, average: float) -> float:
    norm = _K1 * (1.0 - _B + _B * (length / average if average > 0 else 1.0))
    return n * (_K1 + 1.0) / (n + norm)


def _has_counts(ctx: Ctx) -> bool:
    return ctx.caps is None or ctx.caps.has_session_column("message_count")


def _page_rows(ctx: Ctx, table: str, match: str, plain: bool, rowids: list[int],
               to_row: Callable[[int, str, float | None], Row]) -> list[Row]:
    """The page's rows, highlighted (or plain), in ``rowids``' order."""
    if not rowids:
        return []
    text = plain_text_sql(table, ctx) if plain else f"highlight({table}, 0, char(2), char(3))"
    marks = ",".join("?" for _ in rowids)
    source = (f" FROM {table} JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id"
              if ctx.filtered else f" FROM {table}")
    sql = (f"SELECT {table}.rowid, {text}, {table}.rank{source} WHERE {table} MATCH ? "
           f"AND {table}.rowid IN ({marks}){where_clause(ctx.filters)}")
    found = {int(r[0]): r for r in ctx.conn.execute(sql, [match, *rowids, *ctx.params])}
    return [to_row(r[0], r[1], -float(r[2] or 0.0)) for r in (found.get(rowid) for rowid in rowids) if r is not None]


