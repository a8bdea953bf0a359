"""The rankings a reader pages deep into the list through, kept by filters and made again at
a pace.

Deep in the list each page would rank every conversation again (4-5 s at 250k sessions by
last activity; by start, a walk of the start index up to the page's offset, 0.4-0.8 s past
100,000 rows). A reader that pages there gets slices of one ranking instead (rows read by
id, a few ms). This module keeps those rankings: at most :data:`KEPT_RANKINGS`, the last used
kept; after another process's commit a ranking in use is made again in the census's turn,
no sooner than :data:`RANK_IDLE_RATIO` times what it cost (at most a tenth of a core while a
gateway commits), and one nobody read since is dropped instead.

It holds no connection: the caller says how a ranking is made and how to read the store's
``data_version`` (the browser's door does both on a connection of its own, so the reader
stays free for the pages near the top meanwhile).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .query import ListQuery

if TYPE_CHECKING:
    from ..store import Store

#: Rankings kept for deep pages (filters switched back and forth), each ~100 bytes a conversation.
KEPT_RANKINGS = 2

#: A stale ranking is made again no sooner than this many times what it cost after it was
#: made: ranking takes at most a tenth of a core (4 s at 250k sessions: every 40 s while a
#: gateway commits), and the census's count, paced by its own cost, keeps its pace.
RANK_IDLE_RATIO = 9.0


@dataclass
class Ranking:
    """The whole list under one set of filters (:func:`~hermes_state.listing.rank`), for a
    reader paging deep into it: each page is a slice, its rows read by id."""

    ids: list[str]
    #: ``data_version`` of the connection that ranked, before it ranked (another process's
    #: commit since makes the ranking stale: it is made again in the census's turn).
    version: int
    #: A page was read from it since it was ranked (one nobody reads is dropped, not ranked again).
    used: bool = False
    #: What making it cost (seconds), and when it was made (``time.monotonic``).
    cost_s: float = 0.0
    made_at: float = 0.0


def make_ranking(store: "Store", query: ListQuery) -> Ranking:
    """Rank ``query``'s whole list on ``store``, noting its ``data_version`` first (a commit
    while ranking makes it stale) and what it cost."""
    from . import pages

    version = store.data_version()
    started = time.monotonic()
    ids = pages.rank(store, query)
    made_at = time.monotonic()
    return Ranking(ids, version, cost_s=made_at - started, made_at=made_at)


class Rankings:
    """The rankings kept, by :class:`ListQuery` (thread-safe: pages and the census ask from
    their own workers).

    ``make(query)`` ranks a list (:func:`make_ranking` on the caller's connection);
    ``data_version()`` reads the store's count of commits on the same connection;
    ``on_making(waiting)`` is told when a reader must wait for a ranking (seconds at 250k
    sessions: the browser says why in its status line) and when it has it."""

    def __init__(
        self,
        make: Callable[[ListQuery], Ranking],
        data_version: Callable[[], int],
        on_making: Callable[[bool], None] = lambda _waiting: None,
    ) -> None:
        self._make = make
        self._data_version = data_version
        self._on_making = on_making
        self._kept: dict[ListQuery, Ranking] = {}  # (the last used last)
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._kept)

    def kept(self) -> list[Ranking]:
        """The rankings kept now, the last used last."""
        with self._lock:
            return list(self._kept.values())

    def ids(self, query: ListQuery) -> list[str]:
        """The ranking for these filters: the one made last, even if another process has
        committed since (the census ranks again in its turn), else one made now."""
        with self._lock:
            ranking = self._kept.pop(query, None)
            if ranking is None:
                self._on_making(True)
                try:
                    ranking = self._make(query)
                finally:
                    self._on_making(False)
            ranking.used = True
            self._kept[query] = ranking
            while len(self._kept) > KEPT_RANKINGS:
                del self._kept[next(iter(self._kept))]
            return ranking.ids

    def again(self, query: ListQuery) -> tuple[float | None, float | None]:
        """In the census's turn: rank these filters again if a page was read from their
        ranking since the last census and another process has committed since it was made
        (then what the new ranking cost, in seconds: the pages shown may have changed), once
        its turn has come (:data:`RANK_IDLE_RATIO`; until then, the seconds left). One nobody
        read is dropped instead. (A reader deep in the list reads its pages again at every
        commit, from the ranking.)"""
        with self._lock:
            ranking = self._kept.get(query)
            if ranking is None:
                return None, None
            if not ranking.used:
                del self._kept[query]
                return None, None
            if self._data_version() == ranking.version:
                ranking.used = False  # (read again before the next census, or dropped then)
                return None, None
            wait = ranking.made_at + RANK_IDLE_RATIO * ranking.cost_s - time.monotonic()
            if wait > 0.05:
                return None, wait  # (still used: ranked again in a later census)
            ranking = self._kept[query] = self._make(query)
            return ranking.cost_s, None

    def forget(self) -> None:
        """After the user's own change (or another file at the path): the next deep page
        ranks afresh (their archive, pin or delete shows at once, not at the next census)."""
        with self._lock:
            self._kept.clear()
