"""What a store's searches keep on its connection for the next search while nothing is
committed (expansions, probes, the last window scan and ranking, the last answers), and how
to drop it for measuring (:func:`forget_answers`)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from .tuning import TUNING

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store
    from .narrowing import ScanMemo

class PrefixCache:
    """What one store connection's searches keep for the next while nothing is committed:
    ``word*`` expansions (prefix → its vocabulary terms, or None when it has more than
    ``MAX_PREFIX_TERMS``), phrase probes, and the last window scan (see :func:`scan_window`).
    Valid until something is committed (new messages bring new terms and matches): by another
    connection (``PRAGMA data_version`` changes) or by this one (its ``total_changes`` grows).
    Searches on one connection run one at a time (the store's lock)."""

    __slots__ = ("key", "terms", "probes", "scan", "window", "others", "hits", "texts", "tf", "answers",
                 "gaps", "by_conversation")

    def __init__(self) -> None:
        self.key: tuple[int, int, int] | None = None
        self.terms: dict[str, list[str] | None] = {}
        #: ``(table, match, k)`` → what :func:`probe` answered.
        self.probes: dict[tuple[str, str, int], tuple[int, bool]] = {}
        self.scan: ScanMemo | None = None
        #: The last window ranking: ``((rows, IDFs, plain), scored rows)`` (see :func:`window_ranked`).
        self.window: tuple[tuple, list] | None = None
        #: ``(table, rowid)`` → the tokens of the word index's other columns of that message,
        #: sorted (None: a value only unicode61 can tokenize), for :func:`match_other_columns`.
        self.others: dict[tuple[str, int], tuple[str, ...] | None] = {}
        #: The last answer's hits by what they were made from (see :func:`make_hits`).
        self.hits: dict[tuple, Any] = {}
        #: Plain texts lower-cased, and words counted in them (see :class:`Light`).
        self.texts: dict[int, tuple[str, str, bool | None]] = {}
        self.tf: dict[str, dict[int, float]] = {}
        #: The last answers by what was asked (see :func:`hermes_state.search.engine.search`: the words before a short
        #: last word answer again what they answered a key earlier).
        self.answers: dict[tuple, Any] = {}
        #: FTS table → what it lacks (:func:`index_gap`), None: nothing.
        self.gaps: dict[str, str | None] = {}
        #: Every match's rowid in the order ranked by conversation, by what was ranked (see
        #: :func:`~hermes_state.search.by_conversation.conversation_ranked`): the next pages.
        self.by_conversation: dict[tuple, tuple[list[int], dict[int, float], int | None]] = {}

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
        self.by_conversation.clear()


#: The key :meth:`Store.attached` keeps a store's :class:`PrefixCache` under.
_KEPT_AS = "search-memo"

#: What of a kept answer is given again (the rest -- query, elapsed time -- is the asking
#: call's own).
ANSWER_FIELDS = ("effective_query", "path", "ranking", "hits", "total_estimate", "total_exact", "has_more",
                 "short_page", "note", "error")


def memo_of(store: "Store", conn: sqlite3.Connection) -> PrefixCache | None:
    """The expansion cache of ``store``'s connection ``conn``, emptied when the data changed."""
    try:
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
    except sqlite3.Error:  # no answer: no cache
        return None
    # Kept on the store (every reader of it shares one), and keyed by the connection too: a
    # store that reopened its file starts afresh whatever the new file's data_version says.
    cache = kept_for(store)
    key = (id(conn), version, conn.total_changes)
    if cache.key != key:
        cache.key = key
        cache.clear()
    if len(cache.terms) >= TUNING.PREFIX_CACHE_SIZE:
        cache.terms.clear()
    if len(cache.probes) >= TUNING.PREFIX_CACHE_SIZE:
        cache.probes.clear()
    if len(cache.others) >= TUNING.OTHER_COLUMNS_KEPT:
        cache.others.clear()
    return cache


def kept_for(store: "Store") -> PrefixCache:
    """What ``store``'s searches keep (one :class:`PrefixCache` per store, on it)."""
    return store.attached(_KEPT_AS, lambda _store: PrefixCache())


def forget_everything(store: "Store") -> None:
    """Drop all this memo keeps for ``store``, the prefix expansions too (the conversation
    memo of :mod:`~hermes_state.search.spread` and the store's ``until_changed`` answers
    are not this memo's)."""
    cache = kept_for(store)
    cache.key = None
    cache.clear()


def forget_answers(store: "Store") -> None:
    """Drop what ``store``'s searches keep for the next one -- window scans, rankings, probes --
    but not the prefix expansions. For measuring: the bench repeats a query to time it, and
    a repeated query would otherwise be answered from what the previous run kept."""
    kept_for(store).forget_answers()
