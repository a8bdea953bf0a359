"""The message-level structured search (:func:`search`): what
:func:`hermes_state.search.conversations.search` groups by conversation, and what the bench
times. See "Design" in :mod:`hermes_state.search`: probe, choose the ranking, CJK expansion
through the trigram vocabulary, bounded scans."""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ..query import (
    PREFIX_MIN_CHARS,
    apply_prefix_last,
    contains_cjk,
    limit_query,
    parse_fts_query,
    sanitize_fts5_query,
    short_last_word,
)
from .by_conversation import ByConversation, side_by_side, title_words
from .cjk import cjk_search, describe_like, like_search, substring_phrases
from .context import Budget, Ctx, index_gap
from .light import Light, mark_inexact
from .memo import ANSWER_FIELDS, PrefixCache, memo_of
from .narrowing import lightable, narrowable, other_fts_columns, others_empty_sql
from .options import SORTS, SearchOptions, message_filters
from .prefixes import expand_prefixes, unicode61_phrases, words_all_indexed
from .ranking import Phrase
from .snippets import make_hits, snippets_from_other_columns, text_after_nul
from .sql import FTS_TABLE, TRIGRAM_TABLE, positive_query_terms, safe_int
from .strategies import fts_engine
from .weights import Weights, ids_meant
from .tuning import TUNING

if TYPE_CHECKING:  # pragma: no cover
    from ..listing.query import ListQuery
    from ..models import SearchResult
    from ..store import Store

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


#: A query that starts with the NOT operator (FTS5's operators are upper case; a lower-case
#: ``not`` is a word).
_LEADING_NOT_RE = re.compile(r"\s*NOT\s+\S")


def search(store: "Store", query: str, scope: "ListQuery", options: SearchOptions = SearchOptions()) -> "SearchResult":
    """Structured, latency-bounded search of messages (see "Design" in :mod:`hermes_state.search`).

    ``scope`` says which messages may be found (its source or excluded sources, workspace and
    hidden sessions: see :mod:`hermes_state.search.options`); ``options`` are the search's
    own knobs: ``sort`` -- ``auto`` (bm25 when affordable, else bm25 over the newest matches,
    or newest first for near-universal terms), ``rank`` (exact bm25 over every match, like
    :func:`~hermes_state.search.upstream.search_messages`; may be slow for very common
    words) or ``newest``; ``prefix_last`` treats the last plain word (≥ 3 characters) as a
    prefix, for search-as-you-type: ``dock`` finds ``docker``; not once a space or
    punctuation follows it (``dock `` is the word dock); ``roles`` (SR-4). Never raises on
    the query text: failures are reported in ``error``. Hidden sessions' messages (v30
    ``sessions.hidden``) are found only with the scope's ``include_hidden`` (UC-3, BR-15).
    """
    from ..models import SearchResult

    started = time.perf_counter()
    sort, prefix_last, budget_ms = options.sort, options.prefix_last, options.budget
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {', '.join(SORTS)}")
    limit = safe_int(options.limit, 20)
    offset = safe_int(options.offset, 0)
    text = query if isinstance(query, str) else ""
    result = SearchResult(query=text, sort=sort, limit=limit, offset=offset)

    def done(**changes: Any) -> "SearchResult":
        changes["elapsed_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
        return result.model_copy(update=changes)

    if not text.strip():
        return done(note="empty query")
    text, cut_note = limit_query(text)
    if _LEADING_NOT_RE.match(text):
        # Upstream's sanitiser drops a leading operator, so `NOT docker` searched docker: the
        # very matches the person asked to leave out. NOT leaves out of what the words before
        # it find; alone it finds nothing (FTS5 cannot list every message without a word).
        return done(note="NOT leaves words out of what the words before it find: put a word to "
                         "find first (deploy NOT docker)")
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
        def asked() -> "SearchResult":
            # (built from the store's rules: inside the one look at its schema)
            filters, params = message_filters(store.rules, scope, options)
            question = _Question(text, q, typing_word, cut_note, limit, offset, sort, budget_ms,
                                 tuple(filters), tuple(params),
                                 (options.weights or Weights()).clean() if sort == "conversation" else None,
                                 safe_int(options.window, 0) or None)
            return _search(store, done, question, reuse, options.now)

        return store.one_schema(asked)

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
    budget_ms: float
    #: The WHERE clauses of the messages that may be found, and their parameters
    #: (:func:`~hermes_state.search.options.message_filters`).
    filters: tuple[str, ...]
    params: tuple[Any, ...]
    #: With ``sort="conversation"``: the weights of its ranking (its clock is left out: the
    #: pages of one answer are ranked at its first page's).
    weights: Weights | None = None
    #: ``SearchOptions.window`` (None: ``TUNING.WINDOW``).
    window: int | None = None


def _search(store: "Store", done, asked: _Question, reuse: bool, now: float | None = None) -> "SearchResult":
    """:func:`search` once the query is known to have something to search. The answer is kept
    in the connection's cache under ``asked``; with ``reuse`` an answer kept there since the
    last commit is given again."""
    text, q, typing_word, cut_note = asked.text, asked.q, asked.typing_word, asked.cut_note
    limit, offset, sort, budget_ms = asked.limit, asked.offset, asked.sort, asked.budget_ms
    filters, params = list(asked.filters), list(asked.params)
    caps = store.capabilities

    def run(conn: sqlite3.Connection, cache: PrefixCache | None) -> "SearchResult":
        ctx = Ctx(conn, filters, params, limit, offset, sort, Budget(budget_ms),
                  prefix_cache=cache, caps=caps)
        if asked.window is not None and asked.window > 0:
            ctx.window = asked.window
        if sort == "conversation":
            ctx.by_conversation = ByConversation(store, time.time() if now is None else float(now),
                                                 asked.weights or Weights(), title_words(q),
                                                 pairs=side_by_side(q))
        if cut_note:
            ctx.notes.append(cut_note)
        stale = index_warning(conn)
        if stale:
            ctx.notes.append(stale)
        cjk = contains_cjk(q)
        if not cjk and ctx.caps is not None and ctx.caps.fts_loads(FTS_TABLE):
            gap = index_gap(ctx, FTS_TABLE)
            if gap is not None:
                ctx.notes.append(f"the word index {gap}: results may be incomplete")
        phrases: list[Phrase] = []
        if cjk:
            outcome, effective = cjk_search(ctx, q)
            if outcome is None:
                return done(note="query had nothing searchable")
        else:
            parsed = parse_fts_query(q)
            effective = parsed.render()
            if not effective or not any(item.text.strip() for item in parsed.terms):
                # Only empty phrases (`""`): FTS5 matches nothing, and the pane should say why.
                return done(note="query had nothing searchable")
            effective, expansions = expand_prefixes(ctx, parsed)
            if ctx.by_conversation is not None and expansions and not ids_meant(text):
                # (ranked by conversation: which hits matched only an id or a hash)
                words_only, _ = expand_prefixes(ctx, parsed, words_only=True)
                if words_only != effective:
                    ctx.by_conversation = replace(ctx.by_conversation, words_match=words_only)
            phrases = unicode61_phrases(parsed, expansions)
            # (A stale index may hold words its text no longer has: FTS5 alone decides.)
            shape = None if stale else narrowable(caps, parsed)
            if shape is not None or (not stale and lightable(caps, parsed)):
                ctx.light = Light(phrases, ctx.prefix_cache)
            if shape is not None:
                others = other_fts_columns(caps, FTS_TABLE)
                ctx.others_empty = others_empty_sql(others)
                if others:
                    ctx.fts_columns[FTS_TABLE] = others
            outcome = fts_engine(ctx, FTS_TABLE, effective, phrases, "fts5", shape=shape)
            mark_inexact(ctx, FTS_TABLE, effective, outcome.rows)
            if (
                outcome.total == 0
                and len(text.strip()) >= 3
                and parsed.terms
                and all(len(pos.text) >= 3 for pos, _ in positive_query_terms(parsed))
                # (`dock ` ends in a space: the word dock, never the substring of docker)
                and not (text[-1:].isspace() and all(p.text.isascii() for p, _ in positive_query_terms(parsed)))
                # (words FTS5 knows as words, found nowhere together: no substring to look for)
                and not words_all_indexed(ctx, parsed)
            ):
                if ctx.trigram:
                    retry = " ".join(item.render_substring() for item in parsed.items)
                    outcome = fts_engine(
                        ctx, TRIGRAM_TABLE, retry, substring_phrases(parsed.groups()), "fts5+trigram",
                        [pos.text for pos, _ in positive_query_terms(parsed)],
                    )
                    effective = retry
                else:
                    groups = parsed.groups()
                    found = like_search(ctx, groups, [pos.text for pos, _ in positive_query_terms(parsed)])
                    outcome = replace(found, path="fts5+like")
                    effective = describe_like(groups)
        if typing_word and not outcome.rows and outcome.total == 0:
            short = short_last_word(q)
            if short is not None:
                # `ku` while `kubernetes` is typed: nothing has the word `ku`; say why the
                # answer is empty and what the next letter will do.
                ctx.notes.append(f"“{short}” counts as a whole word until it has {PREFIX_MIN_CHARS} letters: "
                                 "keep typing")
        hit_path = outcome.path.split("+")[-1]
        if hit_path == "fts5":
            text_after_nul(ctx, FTS_TABLE, outcome.rows)
        if hit_path == "fts5" and phrases:
            snippets_from_other_columns(ctx, FTS_TABLE, phrases, outcome.rows)
        hits = make_hits(ctx, outcome.rows, hit_path)
        return done(
            effective_query=effective,
            path=outcome.path,
            ranking=outcome.ranking if outcome.rows or outcome.ranking else "",
            hits=hits,
            total_estimate=max(outcome.total, offset + len(hits)),
            total_exact=outcome.exact,
            has_more=outcome.has_more,
            short_page=outcome.short_page,
            note="; ".join(ctx.notes) or None,
        )

    def run_kept(conn: sqlite3.Connection) -> "SearchResult":
        cache = memo_of(store, conn)
        kept = cache.answers.get(asked) if cache is not None and reuse else None
        if kept is not None:
            return done(**{name: getattr(kept, name) for name in ANSWER_FIELDS})
        found = run(conn, cache)
        if cache is not None and not found.error:
            answers = cache.answers
            answers.pop(asked, None)
            while len(answers) >= TUNING.ANSWERS_KEPT:
                del answers[next(iter(answers))]  # the oldest
            answers[asked] = found
        return found

    def run_alone(conn: sqlite3.Connection) -> "SearchResult":
        return run(conn, memo_of(store, conn))

    try:
        hash(asked)
        read = run_kept
    except TypeError:  # a filter of values that cannot be a key: nothing kept, nothing reused
        read = run_alone
    try:
        return store.read(read)
    except sqlite3.OperationalError as exc:
        message = str(exc)
        if "fts5" in message or "syntax" in message or "no such column" in message:
            return done(error=f"query not understood: {message}")
        return done(error=f"search failed: {message}")
    except (sqlite3.Error, UnicodeError, ValueError, OverflowError, RecursionError) as exc:
        return done(error=f"search failed: {exc}")
