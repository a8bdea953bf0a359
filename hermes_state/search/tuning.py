"""The numbers the search is tuned by, in one place.

They are read as attributes of :data:`TUNING` at each use, not copied into the modules that
use them: a test (or a bench trying another figure) sets one there and every part of the
search sees it -- the window size, for one, is read by the window scan, its narrowing and
the ranking alike.
"""

from __future__ import annotations


class Tuning:
    """The search's figures (see each one's comment); one instance, :data:`TUNING`."""

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
    #: Plain texts a connection keeps lower-cased for the next keys (:class:`Light`): a few
    #: windows' worth, then those of the last scan only (a v30 tool result is indexed by 8,192
    #: characters: ~32 MB at the very most, ~0.6 MB for typical messages).
    TEXTS_KEPT = 2048
    #: Prefix expansions remembered per store connection (search-as-you-type asks for ``dock*``,
    #: then ``docke*``, ``docker*``: each is the previous list filtered, no SQL).
    PREFIX_CACHE_SIZE = 256
    #: Above this much bm25 work (matching rows plus the phrases' own frequencies) FTS5's
    #: exact ranking is not used in ``auto`` mode (~3 us per row on a 2-core box).
    EXACT_BM25_MAX_ROWS = 3000
    #: Doclist entries FTS5 reads (twice: to match a phrase of several words, then to count
    #: it) per row of that work: walking an entry costs ~25-35 ns against ~3 us to score a
    #: matching row (``"staging cluster"`` at 1M: its words' 61k entries in ~1.2 ms a walk).
    WALK_ENTRIES_PER_ROW = 50
    #: Most matches of a phrase of several words read whole by its scan (past the window) and
    #: ranked in Python, every one of them: the rest of one walk, where FTS5's own ranking
    #: would walk the words' doclists twice more.
    PHRASE_RANKED_ROWS = 1500
    #: Doclist entries a keystroke's scan of a phrase of several words may walk (~35 ns an
    #: entry: ~5 ms); a phrase of commoner words reads its newest matches within them
    #: (:func:`~hermes_state.search.strategies.walk_floor`). At 1M messages every phrase of
    #: words in a few percent of messages fits; at 5M the newest quarter or so is read.
    PHRASE_WALK_ENTRIES = 150_000
    #: Fewer matches than this within that walk (a phrase too rare for it: a page would not
    #: fill) and the keystroke's page ends with them, ``short_page``: the rest of the walk is
    #: the next page's (none at all, and the scan reads on). The browser's page of 40 and one.
    PHRASE_BOUNDED_MIN_ROWS = 41
    #: Newest messages a LIKE pass over 1-2 character CJK tokens reads before the vocabulary.
    LIKE_FIRST_ROWS = 3000
    #: Most matches ranked by conversation (:mod:`~hermes_state.search.by_conversation`): one
    #: statement reads each with its bm25 and session (~80 ms for 22,000 at 1M messages,
    #: ~440 ms for 50,000, warm). Past it the newest this many are ranked, the older follow
    #: newest first.
    CONVERSATION_RANKED_ROWS = 60000
    #: Ranked by conversation, the best this many conversations are looked at for the query's
    #: words side by side (``phrase_weight``; the lift only raises a score, so one ranked
    #: lower stays lower), each by its best ``PHRASE_LIFT_MESSAGES`` matching messages, the
    #: first ``PHRASE_LIFT_CHARS`` characters of each read.
    PHRASE_LIFT_CONVERSATIONS = 200
    PHRASE_LIFT_MESSAGES = 3
    PHRASE_LIFT_CHARS = 100_000
    #: Answers a connection's cache keeps (:attr:`~hermes_state.search.memo.PrefixCache.answers`).
    ANSWERS_KEPT = 8


TUNING = Tuning()
