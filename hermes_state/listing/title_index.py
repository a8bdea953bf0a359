"""Which sessions' titles contain a piece of text, for a reader that asks at every keystroke.

No index in a store helps a substring (the title index is ordered by title), so SQLite answers
``title LIKE '%text%'`` by reading every title: 26-50 ms at 250k sessions, waited for by the
search pane whenever the newest sessions do not hold enough matches. :class:`TitleIndex` keeps
every title of the store in one byte string, folded as ``LIKE`` folds (ASCII letters only),
**newest session first**, and finds the text in it at memory speed.

The title match shows the few newest sessions whose title contains the text, so the search
walks the titles newest first and stops as soon as the caller has enough (:meth:`newest`): a
common text (``doc`` at 250k titles) is answered from the first few kilobytes; only a text
that few titles hold reads them all (~4-6 ms at 250k titles, holding the interpreter).

What it answers are *candidates*: the caller reads them again through SQL with the real
condition, so a title changed or deleted since is never a wrong answer. Titled sessions newer
than the newest one read are added by rowid whenever the store changed, kept apart and always
searched whole (:meth:`fresh`: a session imported with an old start time is still in order);
the caller also reads again the newest sessions (titled since they were created); an older
session renamed *into* a match could be missed, so an index that has seen changes is rebuilt
once it is :data:`TitleIndex.MAX_AGE_S` old (a build reads every title: 0.2-0.4 s at 250k
sessions), by its owner, beside the searches (:attr:`TitleIndex.stale`).
"""

from __future__ import annotations

import sqlite3
import time
from array import array
from bisect import bisect_right
from typing import Iterable, Iterator


class _Titles:
    """Folded titles joined by line breaks, with where each starts and its session's rowid."""

    __slots__ = ("blob", "starts", "rowids")

    def __init__(self, blob: bytes = b"", starts: array | None = None, rowids: array | None = None) -> None:
        self.blob = blob
        self.starts = starts if starts is not None else array("q")
        self.rowids = rowids if rowids is not None else array("q")

    def extend(self, rows: Iterable[tuple[int, bytes]]) -> None:
        """Add ``(rowid, folded title)`` rows after the ones held (streamed: ``rows`` may be a
        generator over a cursor)."""
        blob = bytearray(self.blob)
        for rowid, folded in rows:
            if self.starts:
                blob += b"\n"
            self.starts.append(len(blob))
            self.rowids.append(rowid)
            blob += folded
        self.blob = bytes(blob)

    def end_of(self, index: int) -> int:
        """Where title ``index`` ends (its line break, or the blob's end)."""
        return self.starts[index + 1] - 1 if index + 1 < len(self.starts) else len(self.blob)

    def find(self, needle: bytes, position: int = 0) -> Iterator[int]:
        """Indices of the titles containing ``needle`` from byte ``position`` on, in order."""
        blob, starts = self.blob, self.starts
        position = blob.find(needle, position)
        while position != -1:
            index = bisect_right(starts, position) - 1
            yield index
            # The next match starts after this title: one candidate per session.
            position = blob.find(needle, starts[index + 1] if index + 1 < len(starts) else len(blob))


class TitleIndex:
    """Every title of one store, for substring search (see the module docstring)."""

    #: An index that has seen the store change is rebuilt after this many seconds.
    MAX_AGE_S = 30.0

    def __init__(self, clock=time.monotonic, *, owner_rebuilds: bool = False) -> None:
        self._clock = clock
        #: Once old and changed, :meth:`refresh` marks the index :attr:`stale` for its owner
        #: to rebuild elsewhere, instead of rebuilding it in the caller's time.
        self.owner_rebuilds = owner_rebuilds
        #: Every titled session at the build, newest (``started_at``) first.
        self._main = _Titles()
        #: Titled sessions added since the build (rowid order): few, searched whole.
        self._fresh = _Titles()
        self._built_at: float | None = None
        self._max_rowid = 0
        #: Where the titles are read with their rowids, and the rowid there
        #: (:func:`sessions_with_rowid`).
        self._source, self._rowid = "sessions s", "s.rowid"
        self._version: tuple[int, int] | None = None
        self._changed = False
        #: Changed and older than MAX_AGE_S: a rebuilt index should replace this one.
        self.stale = False
        #: How far the last walk of :attr:`_main` went: its folded text, the titles it found
        #: (indices, in order) and the byte where it stopped (every title before it was looked
        #: at). The next keystroke usually extends the text: its titles before that byte are
        #: among these (microseconds), only the rest of the blob is searched.
        self._last: tuple[bytes, list[int], int, bytes] | None = None

    @property
    def source(self) -> str:
        """The FROM clause its rowids are read again through (``sessions`` as ``s``)."""
        return self._source

    @property
    def rowid_sql(self) -> str:
        """The rowid of ``s`` in :attr:`source`."""
        return self._rowid

    @property
    def built(self) -> bool:
        return self._built_at is not None

    @property
    def exact(self) -> bool:
        """Nothing was committed since the build (as of the last :meth:`refresh`): every
        title is as read, and :meth:`candidates` misses none."""
        return self._built_at is not None and not self._changed

    def build(self, conn: sqlite3.Connection) -> None:
        """Read every title, newest session first (streamed: holding 250k rows at once cost
        ~65 MB of peak memory for an index of ~8 MB)."""
        cursor = conn.cursor()
        cursor.row_factory = None
        self._source, self._rowid = sessions_with_rowid(conn)
        cursor.execute(
            f"SELECT {self._rowid}, s.title FROM {self._source} WHERE s.title IS NOT NULL ORDER BY s.started_at DESC"
        )
        titles = _Titles()
        titles.extend(
            (rowid, _fold(title)) for rows in iter(lambda: cursor.fetchmany(2048), []) for rowid, title in rows
        )
        self._main, self._fresh, self._last = titles, _Titles(), None
        self._built_at = self._clock()
        # (New titled sessions are read by rowid from here: one created untitled, then
        # titled, after the newest titled one is read too.)
        self._max_rowid = max(titles.rowids, default=0)
        self._version = store_version(conn)
        self._changed = False
        self.stale = False

    def answer_on(self, version: tuple[int, int]) -> None:
        """This index was built on one connection and will be refreshed on another, whose
        :func:`store_version` was ``version`` before the build read anything. ``PRAGMA
        data_version`` counts per connection, so the builder's own count means nothing to
        the other: compared with it, a commit could go unseen whenever the two counts
        happened to match. Compared with ``version``, any commit since then counts as a
        change -- one the build already read only costs a look at the newest sessions."""
        self._version = version

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Up to date with the store as ``conn`` sees it (build, add new sessions, or rebuild)."""
        if not self.built:
            self.build(conn)
            return
        version = store_version(conn)
        if version == self._version:
            return
        self._version = version
        self._changed = True
        if self._clock() - self._built_at > self.MAX_AGE_S:
            if not self.owner_rebuilds:
                self.build(conn)
                return
            # Rebuilding here would hold this keystroke's title match for the whole read
            # (0.3 s at 250k sessions): the owner rebuilds on a connection and thread of its
            # own and swaps the new index in (``stale`` says so); meanwhile new sessions are
            # added below and the caller reads the newest sessions again, as for any change.
            self.stale = True
        cursor = conn.cursor()
        cursor.row_factory = None
        rowid = self._rowid
        new = cursor.execute(
            f"SELECT {rowid}, s.title FROM {self._source} WHERE {rowid} > ? AND s.title IS NOT NULL "
            f"ORDER BY {rowid}",
            (self._max_rowid,),
        ).fetchall()
        if new:
            self._fresh.extend((rowid, _fold(title)) for rowid, title in new)
            self._max_rowid = new[-1][0]

    def fresh(self, text: str) -> list[int] | None:
        """Rowids of the sessions titled since the build whose title contains ``text``
        (None: a text with a line break, which SQL must look for)."""
        needle = _fold(text)
        if b"\n" in needle:
            return None
        if not needle:
            return []
        titles = self._fresh
        return [titles.rowids[index] for index in titles.find(needle)]

    def newest(self, text: str) -> Iterator[int] | None:
        """Rowids of the sessions (as of the build) whose title contains ``text`` as ``LIKE``
        would find it, newest first, found as they are asked for; None for a text with a line
        break (titles are joined by line breaks: SQL must look)."""
        needle = _fold(text)
        if b"\n" in needle:
            return None
        if not needle:
            return iter(())
        return self._walk(needle)

    def candidates(self, text: str) -> list[int] | None:
        """Every rowid :meth:`fresh` and :meth:`newest` give for ``text``."""
        fresh = self.fresh(text)
        walk = self.newest(text)
        if fresh is None or walk is None:
            return None
        return fresh + list(walk)

    def _walk(self, needle: bytes) -> Iterator[int]:
        titles = self._main
        blob, starts, rowids = titles.blob, titles.starts, titles.rowids
        last = self._last
        found: list[int] = []
        if last is not None and last[3] is blob and last[0] in needle:
            # Before the byte the last walk reached, only the titles it found can hold this
            # text (it contains the last one).
            _text, before, reached, _blob = last
            for index in before:
                self._last = (needle, found, starts[index], blob)
                if needle in blob[starts[index]:titles.end_of(index)]:
                    found.append(index)
                    self._last = (needle, found, titles.end_of(index) + 1, blob)
                    yield rowids[index]
            position = reached
        else:
            position = 0
        self._last = (needle, found, position, blob)
        for index in titles.find(needle, position):
            found.append(index)
            self._last = (needle, found, titles.end_of(index) + 1, blob)
            yield rowids[index]
        self._last = (needle, found, len(blob) + 1, blob)


def sessions_with_rowid(conn: sqlite3.Connection) -> tuple[str, str]:
    """``(FROM clause, rowid expression)`` reading ``sessions`` as ``s`` with each session's
    rowid. An older file opened read-only is read through a TEMP view of that name (its
    v11 shape, :func:`~hermes_state.migrations.create_compat_views`), whose rowid is NULL:
    then the rowid is the table's, joined by id."""
    shadowed = conn.execute(
        "SELECT 1 FROM temp.sqlite_master WHERE type = 'view' AND name = 'sessions'"
    ).fetchone()
    if shadowed:
        return "main.sessions r JOIN sessions s ON s.id = r.id", "r.rowid"
    return "sessions s", "s.rowid"


def _fold(text: str) -> bytes:
    """``text`` as SQLite's ``LIKE`` compares it: UTF-8, ASCII letters case-folded."""
    return text.encode("utf-8", "surrogatepass").lower()


def store_version(conn: sqlite3.Connection) -> tuple[int, int]:
    """Changes by other connections (``PRAGMA data_version``) and by this one: what
    :meth:`TitleIndex.refresh` compares on ``conn`` (see :meth:`TitleIndex.answer_on`)."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes
