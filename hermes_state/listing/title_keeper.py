"""The title index a reader matches titles against, and when it is built again.

A :class:`~hermes_state.listing.title_index.TitleIndex` is built by reading every title
(0.2-0.4 s at 250k sessions). On the title match's own thread the next keystroke would wait
for that, so a :class:`TitleKeeper` builds it aside, on a thread and connection of its own,
and puts it in place when it is done: until the first is built SQL answers the title match;
while a stale one is rebuilt, the stale one answers (with the newest sessions read again).
A build that fails is tried again no sooner than :data:`TITLE_RETRY_S` later, not at the
next key (a build per key would keep a core busy reading every title for nothing). When
another file takes the store's path, :meth:`TitleKeeper.reset` starts over: a build of the
old file finishing later is not put in place.

It holds no connection: the caller gives the store a build reads from and a retry for
reads that meet a lock.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, TypeVar

from .title_index import TitleIndex

if TYPE_CHECKING:
    from ..store import Store

T = TypeVar("T")

#: After a failed title index build, the next one is tried this much later.
TITLE_RETRY_S = 30.0


class TitleKeeper:
    """The index in place (:attr:`index`) and its builds (:attr:`build`: the last one asked
    for, a ``Future``)."""

    def __init__(self, builder_store: Callable[[], "Store"], retry: Callable[[Callable[[], T]], T]) -> None:
        self._builder_store = builder_store
        self._retry = retry
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hermes-titles-build")
        #: Every title of the store (not built yet: the title match asks SQL).
        self.index = TitleIndex(owner_rebuilds=True)
        self.build: Future | None = None
        self._failed_at = float("-inf")
        #: Changes when another file takes the path: an older build is not put in place.
        self._generation = 0
        self._closed = False

    def wants_build(self, index: TitleIndex) -> bool:
        """Should ``index`` (the one a match just used) be built again? (Not one already replaced.)"""
        return (index.stale or not index.built) and index is self.index

    def ensure(self, store: "Store") -> None:
        """Build the index -- the first one, or afresh when it is stale -- beside the searches,
        and put it in place. ``store`` is the one the index is refreshed on: its count of
        commits before the build is what the new index compares with (another connection's
        count cannot be)."""
        from . import pages

        seen = self._retry(lambda: pages.title_index_version(store))
        with self._lock:
            if self._closed or (self.index.built and not self.index.stale) or (
                self.build is not None and not self.build.done()
            ) or time.monotonic() - self._failed_at < TITLE_RETRY_S:
                return
            generation = self._generation

            def build() -> None:
                fresh = TitleIndex(owner_rebuilds=True)
                builder = self._builder_store()
                try:
                    self._retry(lambda: pages.refresh_title_index(builder, fresh))
                except Exception:
                    self._failed_at = time.monotonic()
                    raise
                fresh.answer_on(seen)
                with self._lock:
                    if generation == self._generation and not self._closed:
                        self.index = fresh

            try:
                self.build = self._pool.submit(build)
            except RuntimeError:  # (shut down: the store is closing)
                self.build = None

    def reset(self) -> None:
        """Another file is at the path: an empty index, and no build of the old file put in place."""
        with self._lock:
            self.index = TitleIndex(owner_rebuilds=True)
            self._generation += 1

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
