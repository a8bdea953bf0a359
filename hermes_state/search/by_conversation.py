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
  prefix), the conversation's own summary of itself;
* ``phrase`` -- the largest share of the query's neighbouring word pairs (``docker build``,
  ``build cache`` of ``docker build cache``; :func:`side_by_side`) that one of its matching
  messages holds side by side, in the order typed, each pair counted by its rarity among the
  conversations looked at: words remembered together were read together. Looked at for the
  best ``TUNING.PHRASE_LIFT_CONVERSATIONS`` conversations (a lift never lowers a score).

``relevance = ((1 - about_weight) · best + about_weight · about) · (1 + title_weight · title)
· (1 + phrase_weight · phrase)``, blended with recency by
:func:`~hermes_state.search.weights.conversation_score`.

Cost: one statement reads every match with its bm25 and its session, newest first (~80 ms
for 22,000 matches at 1M messages, warm), up to ``TUNING.CONVERSATION_RANKED_ROWS``; a word
in more messages than that has its newest that many ranked (ranking
``bm25-conversations-recent``, the note says so) and the older follow newest first -- the
keystroke's window, 150 times wider. The order is kept on the connection until a
commit, for the next pages.
"""

from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..models import CONVERSATION_RANKING, CONVERSATION_WINDOW_RANKING
from ..folding import fold
from ..query import contains_cjk, parse_fts_query
from ..sql_ids import in_chunks
from .context import Ctx, Outcome, Row, indexed_texts_sql, older_newest_first, plain_text_sql, source_sql
from .sql import FTS_TABLE, positive_query_terms, where_clause
from .tuning import TUNING
from .weights import ID_CREDIT, Weights, conversation_score

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store

#: bm25's k1 and b, for the conversation as a document.
_K1, _B = 1.2, 0.75
_UNKNOWN = object()
#: A word as FTS5's unicode61 tokenizer reads one: letters and digits (``_`` separates).
_TOKEN = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class ByConversation:
    """What ranking by conversation needs beside the engine's context: the store (for each
    session's conversation), the clock and weights of the blend, and the query's words (for
    its titles)."""

    store: "Store"
    now: float
    weights: Weights
    #: The query's positive words, each with whether it is a typed prefix, once each.
    words: tuple[tuple[str, bool], ...]
    #: The query with its prefixes' ids and hashes left out (``cadd`` without
    #: ``cadd7398…``), when it has any and the query has no digit: a hit it does not match
    #: holds the word being typed only as an id or a hash, and is credited ``ID_CREDIT`` of
    #: its bm25 and counts for nothing in ``about`` (the word index only).
    words_match: str | None = None
    #: The query's pairs of words typed side by side (:func:`side_by_side`), once each.
    pairs: tuple[tuple[tuple[str, bool], tuple[str, bool]], ...] = ()

    def title_share(self) -> Callable[[str], float]:
        """The share of the query's words a title holds (as whole words; a typed prefix as the
        start of one; CJK as a substring), as a function of the title (one pattern for all the
        words: thousands of titles are asked)."""
        words = self.words
        if not words:
            return lambda _title: 0.0
        parts = []
        for index, (word, prefix) in enumerate(words):
            if contains_cjk(word):
                parts.append(f"(?P<w{index}>{re.escape(word)})")
            else:
                end = "" if prefix else r"(?![^\W_])"
                parts.append(rf"(?<![^\W_])(?P<w{index}>{re.escape(word)}){end}")
        pattern = re.compile("|".join(parts), re.IGNORECASE)
        count = len(words)

        def share(title: str) -> float:
            if not title:
                return 0.0
            held = {m.lastgroup for m in pattern.finditer(fold(title))}
            return len(held) / count

        return share


    def neighbours(self) -> list[re.Pattern[str]]:
        """One pattern for each of :attr:`pairs`, matching the two words side by side in a
        text, in the order typed, as whole words (one typed as a prefix as the start of one);
        a pair with a CJK word as the trigram index reads it: the two as they stand in the
        text, with nothing or separators between them (``构建docker镜像`` holds ``docker 镜像``:
        CJK text sets no space around a Latin word, and a query with CJK is found by
        substring); none for a query of one word."""
        patterns = []
        for (first, first_prefix), (second, prefix) in self.pairs:
            if contains_cjk(first) or contains_cjk(second):
                patterns.append(re.compile(rf"{re.escape(first)}[\W_]*{re.escape(second)}", re.IGNORECASE))
                continue
            start, between = r"(?<![^\W_])", r"[\W_]+"
            end = "" if prefix else r"(?![^\W_])"
            first_end = r"[^\W_]*" if first_prefix else r"(?![^\W_])"
            patterns.append(re.compile(
                f"{start}{re.escape(first)}{first_end}{between}{re.escape(second)}{end}", re.IGNORECASE))
        return patterns


def _index_words(text: str) -> list[str]:
    """The words of a query item as the word index splits them, lower-cased: ``docker-compose``
    is ``docker compose`` there (a text's ``docker compose`` matched it, a title's too); a
    CJK word as typed (the trigram index reads it as a substring)."""
    return [token for word in fold(text).split()
            for token in ([word] if contains_cjk(word) else _TOKEN.findall(word))]


def title_words(q: str) -> tuple[tuple[str, bool], ...]:
    """The words of the query's positive items (sanitized ``q``, its last word already made a
    prefix when it is being typed), lower-cased, each with whether it is a prefix, once each:
    for :meth:`ByConversation.title_share`."""
    try:
        parsed = parse_fts_query(q)
    except Exception:  # pragma: no cover - pure string work
        return ()
    words: dict[str, bool] = {}
    for item, _negs in positive_query_terms(parsed):
        split = _index_words(item.text)
        for index, word in enumerate(split):
            words[word] = words.get(word, False) or (item.prefix and index == len(split) - 1)
    return tuple(words.items())


def side_by_side(q: str) -> tuple[tuple[tuple[str, bool], tuple[str, bool]], ...]:
    """The pairs of words ``q`` (sanitized, as :func:`title_words` takes it) has side by side,
    in the order typed, each word lower-cased with whether it is a prefix, once each: for
    :meth:`ByConversation.neighbours`. From the words as typed, not :func:`title_words`' once
    each (``build docker build cache`` has ``build cache``, not ``docker cache``); within one
    OR alternative (``docker OR podman build``: only ``podman build``); none across an
    excluded word (``docker NOT compose build``: ``compose`` stood between)."""
    try:
        parsed = parse_fts_query(q)
    except Exception:  # pragma: no cover - pure string work
        return ()
    pairs: dict[tuple[tuple[str, bool], tuple[str, bool]], None] = {}
    for group in parsed.groups():
        run: list[tuple[str, bool]] = []
        for item, negs in group:
            split = _index_words(item.text)
            run += [(word, item.prefix and index == len(split) - 1) for index, word in enumerate(split)]
            if negs:
                pairs.update(dict.fromkeys(zip(run, run[1:])))
                run = []
        pairs.update(dict.fromkeys(zip(run, run[1:])))
    return tuple(pairs)


def conversation_ranked(ctx: Ctx, table: str, match: str, path: str, plain: bool,
                        to_ranked: Callable[[int, str, float | None], Row],
                        to_row: Callable[[int, str, float | None], Row], estimate: int) -> Outcome:
    """The page ``ctx.offset``/``ctx.limit`` of ``match``'s hits on ``table``, conversations
    in the order of the module docstring, each one's hits best first (``to_ranked`` makes
    their rows), by what ``ctx.by_conversation`` says (the engine sets it for this sort).
    Past ``TUNING.CONVERSATION_RANKED_ROWS`` matches, the newest that many are ranked, and
    the older follow newest first (``to_row`` makes the rows of that scan); ``estimate`` is
    the probe's count of them all."""
    asked = ctx.by_conversation
    if asked is None:  # pragma: no cover - the engine sets it with sort="conversation"
        raise ValueError("ranking by conversation without what it needs (Ctx.by_conversation)")
    cache = ctx.prefix_cache
    # (the clock to the hour: the pages of one answer, asked seconds apart, share its order;
    # recency of a 30-day half-life moves by 0.1 % in an hour)
    key = (table, match, tuple(ctx.filters), tuple(ctx.params), asked.weights, asked.words,
           asked.words_match, asked.pairs, int(asked.now // 3600))
    try:
        hash(key)
    except TypeError:  # (a filter of values that cannot be a key: nothing kept)
        cache = None
    kept = cache.by_conversation.get(key, _UNKNOWN) if cache is not None else _UNKNOWN
    if kept is _UNKNOWN:
        kept = _rank(ctx, table, match, asked)
        if cache is not None:
            while len(cache.by_conversation) >= TUNING.ANSWERS_KEPT:
                del cache.by_conversation[next(iter(cache.by_conversation))]
            cache.by_conversation[key] = kept
    order, scores, oldest = kept
    page_ids = order[ctx.offset:ctx.offset + ctx.limit]
    rows = _page_rows(ctx, table, match, plain, page_ids, scores, to_ranked)
    more = len(order) > ctx.offset + len(page_ids)
    if oldest is None:
        return Outcome(rows, CONVERSATION_RANKING, len(order), True, more, path)
    # More matches than are ranked: the older ones follow, newest first (a stable order
    # for paging, as past the keystroke's window).
    if ctx.offset == 0:
        ctx.notes.append(f"ranked the newest {len(order):,} matches by conversation")
    if len(rows) < ctx.limit:
        # (not stopped by the time budget: the ranking may have spent it, and a page cut
        # short would end the answer with nothing said)
        older, more = older_newest_first(ctx, table, match, plain, to_row, oldest,
                                         max(0, ctx.offset - len(order)), ctx.limit - len(rows), False)
        rows += older
    else:
        more = True
    if not more:
        return Outcome(rows, CONVERSATION_WINDOW_RANKING, ctx.offset + len(rows), True, False, path)
    return Outcome(rows, CONVERSATION_WINDOW_RANKING, max(estimate, len(order) + 1), False, more, path)


def _rank(ctx: Ctx, table: str, match: str,
          asked: ByConversation) -> tuple[list[int], dict[int, float], int | None]:
    """Every match's rowid, in the ranking's order, each one's bm25, and (when there are
    more than ``TUNING.CONVERSATION_RANKED_ROWS``, the newest that many ranked) the oldest
    rowid ranked, else None.

    Per-row Python is what this costs past the statement (22,000 rows for ``certif*`` at
    1M): a row only joins its session's list; the rest is per session, then per
    conversation, each read once."""
    join = (f" JOIN messages m ON m.id = {table}.rowid JOIN sessions s ON s.id = m.session_id"
            if ctx.filtered else f" JOIN messages m ON m.id = {table}.rowid")
    # Newest first: past the bound, the rows read are the newest (FTS5 computes bm25 for the
    # rows it gives, not for the ones a LIMIT leaves).
    sql = (f"SELECT {table}.rowid, {table}.rank, m.session_id, m.timestamp FROM {table}{join} "
           f"WHERE {table} MATCH ?{where_clause(ctx.filters)} ORDER BY {table}.rowid DESC")
    cursor = ctx.conn.execute(sql, [match, *ctx.params])
    rows = cursor.fetchmany(TUNING.CONVERSATION_RANKED_ROWS + 1)
    oldest: int | None = None
    if len(rows) > TUNING.CONVERSATION_RANKED_ROWS:
        cursor.close()
        rows = rows[:TUNING.CONVERSATION_RANKED_ROWS]
        oldest = int(rows[-1][0])
    if not rows:
        return [], {}, None
    # The hits that match a word, not only an id or a hash (see ByConversation.words_match).
    words: set[int] | None = None
    if asked.words_match is not None and table == FTS_TABLE:
        # (within the rowids read, under the same filters: never more rows than they are)
        words = {rowid for (rowid,) in ctx.conn.execute(
            f"SELECT {table}.rowid FROM {table}{join} WHERE {table} MATCH ? AND {table}.rowid >= ?"
            f"{where_clause(ctx.filters)}", [asked.words_match, int(rows[-1][0]), *ctx.params])}
    # Each session's hits (bm25 as ranked, rowid), how many match a word, its newest hit.
    # (FTS5's rank is a float; a timestamp may be anything a writer stored.)
    by_session: dict[str, list[tuple[float, int]]] = {}
    worded: dict[str, int] = {}
    newest_of: dict[str, float] = {}
    scores: dict[int, float] = {}
    for rowid, rank, sid, stamp in rows:
        score = scores[rowid] = -rank
        word = 1
        if words is not None and rowid not in words:
            score, word = score * ID_CREDIT, 0
        members = by_session.get(sid)
        if members is None:
            by_session[sid] = [(score, rowid)]
            worded[sid] = word
            newest_of[sid] = stamp if isinstance(stamp, (int, float)) else 0.0
            continue
        members.append((score, rowid))
        worded[sid] += word
        if isinstance(stamp, (int, float)) and stamp > newest_of[sid]:
            newest_of[sid] = stamp
    sessions = _sessions(ctx, list(by_session))
    climbing = {sid for sid, (parent, _count, _title) in sessions.items() if parent}
    roots: dict[str, str] = {}
    if climbing:
        from .spread import roots_of

        roots = roots_of(asked.store, ctx.conn, climbing)
    # Per conversation (most are one session with one hit): its hits, its length (its
    # sessions' messages), the best share of the words a title holds, its newest hit.
    conversations: dict[str, list[str]] = {}
    for sid in by_session:
        conversations.setdefault(roots.get(sid, sid), []).append(sid)
    share = asked.title_share()
    unknown = (False, 0, "")
    stats = []
    for root, sids in conversations.items():
        if len(sids) == 1:
            sid = sids[0]
            members = by_session[sid]
            _parent, count, title = sessions.get(sid, unknown)
            n = worded[sid]
            best = members[0][0] if len(members) == 1 else max(members)[0]
            length = max(count, len(members))
            stats.append((root, n, length, best, share(title) if title else 0.0, newest_of[sid], members))
            continue
        members = [hit for sid in sids for hit in by_session[sid]]
        n = sum(worded[sid] for sid in sids)
        length = max(len(members), sum(sessions.get(sid, unknown)[1] for sid in sids))
        title_share = max(share(sessions.get(sid, unknown)[2]) for sid in sids)
        stats.append((root, n, length, max(members)[0], title_share, max(newest_of[sid] for sid in sids), members))
    average = sum(entry[2] for entry in stats) / len(stats)
    top_best = max(max(entry[3] for entry in stats), 0.0) or 1.0
    weights = asked.weights
    k1, b = _K1, _B
    norm_of = (lambda length: k1 * (1.0 - b + b * length / average)) if average > 0 else (lambda _length: k1)
    about = [n * (k1 + 1.0) / (n + norm_of(length)) for _root, n, length, *_rest in stats]
    top_about = max(about) or 1.0
    best_part, about_part, lift = (1.0 - weights.about) / top_best, weights.about / top_about, weights.title
    scored = []
    for (root, _n, _length, best, title, newest, members), aboutness in zip(stats, about):
        relevance = (best_part * (best if best > 0.0 else 0.0) + about_part * aboutness) * (1.0 + lift * title)
        scored.append((conversation_score(relevance, newest, asked.now, weights), newest, root, members,
                       relevance))
    scored.sort(key=lambda entry: (entry[0], entry[1], entry[2]), reverse=True)
    neighbours = asked.neighbours() if weights.phrase > 0.0 else []
    if neighbours:
        scored = _lift_side_by_side(ctx, table, scored, neighbours, asked)
    order: list[int] = []
    for _score, _newest, _root, members, _relevance in scored:
        if len(members) == 1:
            order.append(members[0][1])
            continue
        # (ties as FTS5's ORDER BY rank leaves them: the older first)
        members.sort(key=lambda hit: (-hit[0], hit[1]))
        order.extend(rowid for _score, rowid in members)
    return order, scores, oldest


def _lift_side_by_side(ctx: Ctx, table: str, scored: list[tuple], neighbours: list[re.Pattern[str]],
                       asked: ByConversation) -> list[tuple]:
    """``scored`` (best first) with the best ``PHRASE_LIFT_CONVERSATIONS`` conversations'
    relevance lifted by ``1 + phrase_weight × phrase`` (the module docstring), ordered again.
    Their best matching messages' text is what ``table`` indexed (content, tool name and
    tool-call JSON, ST-4 -- ``messages.content`` alone misses a command run with no text of
    its own; :func:`~hermes_state.search.context.indexed_texts_sql`), and the pairs are
    looked for in Python: FTS5 asked for
    a phrase within given rowids walks the phrase's doclists once per rowid (0.2-1.5 s for
    300 rowids at 1M messages)."""
    top = scored[:TUNING.PHRASE_LIFT_CONVERSATIONS]
    # Each conversation's best matching messages, the ones looked at.
    looked_at = [
        [rowid for _score, rowid in (members if len(members) <= TUNING.PHRASE_LIFT_MESSAGES else sorted(
            members, key=lambda hit: -hit[0])[:TUNING.PHRASE_LIFT_MESSAGES])]
        for _s, _n, _r, members, _rel in top
    ]
    texts: dict[int, str] = {}
    ids = list(dict.fromkeys(rowid for rowids in looked_at for rowid in rowids))
    try:
        for chunk, marks in in_chunks(ids):
            inner = indexed_texts_sql(table, ctx, marks)
            for rowid, text in ctx.conn.execute(
                f"SELECT i, substr(t, 1, {int(TUNING.PHRASE_LIFT_CHARS)}) FROM ({inner})", chunk,
            ):
                if isinstance(text, str):
                    texts[int(rowid)] = fold(text)
    except sqlite3.OperationalError:
        raise  # (an interrupt: a newer keystroke)
    except sqlite3.DatabaseError:
        # (an external table whose content= view no longer keeps a row: FTS5 calls that
        # corrupt) the ranking stands without the lift.
        return scored
    # Which pairs each looked-at conversation's messages hold (by message: the share is one
    # message's), then how rare each pair is among them: a pair most hold side by side
    # (``docker build`` in a store of docker chats) says little of which one is meant, one
    # that few hold (``build cache``) says much -- an IDF of the pair over the conversations
    # looked at, ``log((N + 1) / (held by + 1)) / log(N + 1)``, from 0 to 1.
    # (per conversation looked at: the pairs each of its messages holds, of those holding any)
    pairs_by_message: list[list[tuple[int, ...]]] = []
    counts = [0] * len(neighbours)
    for rowids in looked_at:
        found: list[tuple[int, ...]] = []
        for rowid in rowids:
            text = texts.get(rowid)
            if text is not None:
                pairs_held = tuple(i for i, pattern in enumerate(neighbours) if pattern.search(text))
                if pairs_held:
                    found.append(pairs_held)
        for i in {i for pairs_held in found for i in pairs_held}:
            counts[i] += 1
        pairs_by_message.append(found)
    looked = len(top)
    rarity = [math.log((looked + 1) / (count + 1)) / math.log(looked + 1) for count in counts]
    weight = asked.weights.phrase / len(neighbours)
    lifted = []
    for (score, newest, root, members, relevance), found in zip(top, pairs_by_message):
        share = max((sum(rarity[i] for i in pairs_held) for pairs_held in found), default=0.0)
        if share > 0.0:
            relevance *= 1.0 + weight * share
            score = conversation_score(relevance, newest, asked.now, asked.weights)
        lifted.append((score, newest, root, members, relevance))
    lifted.sort(key=lambda entry: (entry[0], entry[1], entry[2]), reverse=True)
    return lifted + scored[len(top):]


def _sessions(ctx: Ctx, ids: list[str]) -> dict[str, tuple[bool, int, str]]:
    """Each session's ``(has a parent, messages, title)``."""
    counts = "COALESCE(message_count, 0)" if _has_counts(ctx) else "0"
    out: dict[str, tuple[bool, int, str]] = {}
    for chunk, marks in in_chunks(ids):
        for sid, parent, count, title in ctx.conn.execute(
            f"SELECT id, parent_session_id IS NOT NULL, {counts}, title FROM sessions WHERE id IN ({marks})", chunk
        ):
            out[sid] = (bool(parent), count if isinstance(count, int) else 0, title if isinstance(title, str) else "")
    # A store without the column, or a count never kept (NULL, 0): the messages counted --
    # with every conversation as long as its matches, every one would look all about them.
    uncounted = [sid for sid, (_parent, count, _title) in out.items() if count <= 0]
    for chunk, marks in in_chunks(uncounted):
        for sid, count in ctx.conn.execute(
            f"SELECT session_id, count(*) FROM messages WHERE session_id IN ({marks}) GROUP BY session_id", chunk
        ):
            parent, _count, title = out[sid]
            out[sid] = (parent, int(count), title)
    return out


def _has_counts(ctx: Ctx) -> bool:
    return ctx.caps is None or ctx.caps.has_session_column("message_count")


def _page_rows(ctx: Ctx, table: str, match: str, plain: bool, rowids: list[int], scores: dict[int, float],
               to_row: Callable[[int, str, float | None], Row]) -> list[Row]:
    """The page's rows, highlighted (or plain), in ``rowids``' order, scored from ``scores``
    (not ``rank`` again: in a statement of its own bm25 walks every phrase's doclist once
    more to count it -- 0.7 s for ``config file update*`` at 1M, where the highlighting of
    40 rows takes 8 ms)."""
    if not rowids:
        return []
    text = plain_text_sql(table, ctx) if plain else f"highlight({table}, 0, char(2), char(3))"
    marks = ",".join("?" for _ in rowids)
    sql = (f"SELECT {table}.rowid, {text}{source_sql(table, ctx)} WHERE {table} MATCH ? "
           f"AND {table}.rowid IN ({marks}){where_clause(ctx.filters)}")
    found = {int(r[0]): r for r in ctx.conn.execute(sql, [match, *rowids, *ctx.params])}
    return [to_row(r[0], r[1], scores.get(int(r[0]))) for r in (found.get(rowid) for rowid in rowids)
            if r is not None]


