"""Search: upstream's ``search_messages`` (SPEC §9, SR-1 … SR-16) and the structured search by
conversation behind ``SessionDB.search`` (SR-17 … SR-19), one package.

Where each part lives:

* :mod:`~hermes_state.search.options` -- what a search is asked: the list's filters (a
  :class:`~hermes_state.listing.query.ListQuery`) and :class:`SearchOptions`, and the SQL
  they make on a message's row; :mod:`~hermes_state.search.sql` -- the tables and clauses
  every path shares; :mod:`~hermes_state.search.tuning` -- the figures it is tuned by;
* :mod:`~hermes_state.search.upstream` -- ``search_messages``, upstream's three paths;
* :mod:`~hermes_state.search.engine` -- the message-level structured search, choosing among
  the rankings of :mod:`~hermes_state.search.strategies` (scored by
  :mod:`~hermes_state.search.ranking`), over the scans of :mod:`~hermes_state.search.context`,
  read plain and marked by :mod:`~hermes_state.search.light`, narrowed key by key by
  :mod:`~hermes_state.search.narrowing`, with prefixes expanded by
  :mod:`~hermes_state.search.prefixes`, the CJK and LIKE paths of
  :mod:`~hermes_state.search.cjk`, hits and snippets by :mod:`~hermes_state.search.snippets`,
  and what a connection keeps between keys in :mod:`~hermes_state.search.memo`;
* :mod:`~hermes_state.search.conversations` -- the answer by conversation (what the browser
  shows), ordered by :mod:`~hermes_state.search.weights`, with the conversations found across
  messages of :mod:`~hermes_state.search.spread` and the reason of an empty answer from
  :mod:`~hermes_state.search.explain`; asked with ``sort="rank"``, every match is ranked by
  conversation (:mod:`~hermes_state.search.by_conversation`, a strategy of the engine).

Every part works through a :class:`~hermes_state.store.Store`, never ``SessionDB``. The query
language lives in :mod:`hermes_state.query`; the two entry points are:

* :func:`search_messages` (``SessionDB.search_messages``) — upstream's list-of-dicts API,
  result for result: same sanitiser, same routing, same ``ORDER BY rank`` (exact bm25) on
  the FTS paths, same snippets and context. The SR-16 improvements apply only to queries
  upstream cannot serve (it returns ``[]`` for them: syntax errors, Latin text glued to CJK,
  phrases on the CJK paths) and to the LIKE path, which scans newest-first by rowid and
  stops at ``offset + limit`` instead of sorting every match. The LIKE path first reads only
  the newest ``TUNING.LIKE_FIRST_ROWS`` messages (enough for frequent terms), then asks the
  trigram index whether any term can match at all (see :mod:`~hermes_state.search.upstream`),
  and scans the table only if one can: the rows returned are exactly the plain scan's, an
  absent term costs ~1 ms instead of a scan.
* :func:`search` (``SessionDB.search``) — the structured search the browser and benchmark
  use, by conversation, built for speed on large stores (see "Design" below). It returns a
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
   itself the probe, so a one-word query runs one FTS statement -- unless it is one whole
   word (no ``*``: a first key, a 1-2 letter word): that is probed by rowid first (up to
   ``TUNING.EXACT_BM25_MAX_ROWS / 2`` rows of one doclist), and when exact bm25 is affordable FTS5
   ranks at once, no window highlighted for nothing. ``word*`` prefixes are the
   exception: without a prefix index FTS5 merges every doclist of the prefix up front on each
   execution, so a TEMP ``fts5vocab`` (type ``instance``, sought term by term: no doclist is
   read) expands them once into ``("word1" OR "word2" …)`` (at most ``TUNING.MAX_PREFIX_TERMS``
   terms), which FTS5 iterates lazily; the expansion is kept per connection until a commit,
   and a longer prefix typed next is the same list filtered.
2. **Choose the ranking.** If the work bm25 would do (the sum of the phrases' frequencies plus
   the matches, plus -- for a quoted phrase of several words -- the walk over its words'
   doclists FTS5 makes to find it, twice more to rank it) is small
   (≤ ``TUNING.EXACT_BM25_MAX_ROWS``; a store ranking a share of a keystroke's window across
   profiles, that share of it: ``strategies.exact_bound``), FTS5 ranks exactly: ``bm25``. If every
   phrase matches a large share of the corpus (> ``TUNING.COMMON_SHARE``), relevance means little
   and hits come newest first: ``newest``. Otherwise the newest ``TUNING.WINDOW`` matches are fetched
   with ``highlight()`` and scored in Python with the bm25 formula (k1 = 1.2, b = 0.75) using
   the probed document frequencies for IDF: ``bm25-recent-window`` (plain ``bm25`` when the
   window held every match). Pages past the window continue newest first, so paging is stable.
   A query of plain ASCII words (ANDed, single words ORed, or one chain with ``NOT`` words)
   reads the window's text unmarked and marks it in Python, as unicode61 would, wherever
   that is exact; FTS5 marks the rest (:class:`~hermes_state.search.light.Light`); quoted
   phrases of such words too, where no two marks can overlap. A phrase of several words is
   never ranked by a second FTS5 statement once its scan holds every match: the scan goes on
   past the window to the oldest match when it has at most ``TUNING.PHRASE_RANKED_ROWS``,
   and all of them are ranked in Python (``bm25``).
3. **CJK.** Tokens of ≥ 3 characters go to the trigram table as quoted substrings. A token of
   1–2 characters cannot match a trigram directly, but every occurrence of it is followed by
   some character in the indexed text (ST-4 always appends ``' ' || tool_name || ' ' ||
   tool_calls``, and tool-call JSON is ASCII), so the documents containing it are exactly
   those containing one of the trigrams that *start* with it. A TEMP ``fts5vocab`` table on
   the reader's own connection (never in the shared schema) lists those trigrams with one
   index range seek; an absent term is answered in well under a millisecond, a present one
   becomes ``("ab1" OR "ab2" …)`` on the trigram table with the query's AND/OR/NOT intact.
   Before the vocabulary, a LIKE pass over the newest ``TUNING.LIKE_FIRST_ROWS`` messages serves
   frequent short tokens in about a millisecond. Only when a token starts more than
   ``TUNING.MAX_EXPANSION`` distinct trigrams (it is then very frequent) does the full LIKE path
   run, newest first, stopping at ``offset + limit``. Short-token queries keep their
   AND/OR/NOT structure in :func:`search` (``서버 배포`` needs both words, as on the other
   paths); :func:`search_messages` keeps upstream's OR of the terms (SR-11).
4. **Bounded scans.** Scans that filters may make long (source/role filters, LIKE) stop at a
   time budget and say so in ``note``.
5. **Typing narrows.** Each key typed at the end of a word asks for a subset of the last
   query's matches (``dock*`` → ``docke*``). While nothing is committed, the connection keeps
   its last window scan; a narrower query of plain ASCII words takes the rows among it that
   still match (told by their highlighted tokens, by the v30 index's tool columns read from
   ``messages``, or, when neither can tell, by FTS5 in one index-only statement), trims
   their highlights, and reads older matches only when that scan stopped short of the
   oldest. Phrase probes, the last window ranking, the tokens of the tool columns read
   and the last answer's hits (a key that leaves the page as it was rebuilds none of them)
   are kept the same way. The answers are a fresh search's
   (:func:`~hermes_state.search.narrowing.scan_window`); :func:`forget_answers` drops what
   is kept (the bench does, to time a repeated query doing its work).

When FTS5 finds nothing for a query of ≥ 3 characters a word, the words are looked for as
substrings on the trigram index (SR-16: ``youer`` in ``修改youer服务端``) -- unless the query has
several words and every one is a word of the word index (one look-up each): then only the
phrase glued to other letters at its ends could be added, at the cost of intersecting many
common trigrams (55-110 ms for ``"staging cluster"`` at 1M).

Nothing is written to the database; the only objects created are TEMP ``fts5vocab`` tables
on the connection doing the search.
"""

from __future__ import annotations

from .conversations import search
from .engine import index_warning
from .memo import forget_answers
from .options import ORDERS, SORTS, SearchOptions, message_filters
from .sql import FTS_TABLE, TRIGRAM_TABLE, filter_sql, like_clause, trigram_vocab, where_clause
from .tuning import TUNING
from .upstream import search_messages
from .weights import Weights, conversation_score, recency

__all__ = [
    "FTS_TABLE",
    "ORDERS",
    "SORTS",
    "TRIGRAM_TABLE",
    "TUNING",
    "SearchOptions",
    "Weights",
    "conversation_score",
    "filter_sql",
    "forget_answers",
    "index_warning",
    "like_clause",
    "message_filters",
    "recency",
    "search",
    "search_messages",
    "trigram_vocab",
    "where_clause",
]
