"""Which sessions' titles contain a piece of text, for a reader that asks at every keystroke.

No index in a store helps a substring (the title index is ordered by title), so SQLite answers
``title LIKE '%text%'`` by reading every title: 26-50 ms at 250k sessions, waited for by the
search pane whenever the newest sessions do not hold enough matches. :class:`TitleIndex` keeps
every title of the store in one byte string, folded as ``LIKE`` folds (ASCII letters only),
and finds the text in it at memory speed (~1-3 ms at 250k titles).

What it answers are *candidates*: the caller reads them again through SQL with the real
condition, so a title changed or deleted since is never a wrong answer. Titled sessions newer
than the newest one read are added by rowid whenever the store changed; the caller also reads
again the newest sessions (titled since they were created); an older session renamed *into* a
match could be missed, so an index that has seen changes is rebuilt once it is
:data:`TitleIndex.MAX_AGE_S` old (a build reads the title index only: 0.1-0.4 s at 250k
sessions).
"""

from __future__ import annotations

import sqlite3
import time
from array import array
from bisect import bisect_right


class TitleIndex:
    """Every title of one store, for substring search (see the module docstring)."""

    #: An index that has seen the store change is rebuilt after this many seconds.
    MAX_AGE_S = 30.0
    #: More candidates than this: the caller scans with SQL instead (a text this common is
    #: found among the newest sessions anyway).
    MAX_CANDIDATES = 4000

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._blob = b""
        self._starts = array("q")
        self._rowids = array("q")
        self._built_at: float | None = None
        self._max_rowid = 0
        self._version: tuple[int, int] | None = None
        self._changed = False
        #: The last search: its folded text, the indices it found (None: too many) and the
        #: length of the blob it searched. The next keystroke usually extends the text, so
        #: its titles are among these (3-4 ms to search 250k titles, microseconds these).
        self._last: tuple[bytes, list[int] | None, int] | None = None

    @property
    def built(self) -> bool:
        return self._built_at is not None

    @property
    def exact(self) -> bool:
        """Nothing was committed since the build (as of the last :meth:`refresh`): every
        title is as read, and :meth:`candidates` misses none."""
        return self._built_at is not None and not self._changed

    def build(self, conn: sqlite3.Connection) -> None:
        """Read every title (streamed: holding 250k rows at once cost ~65 MB of peak memory
        for an index of ~8 MB)."""
        cursor = conn.cursor()
        cursor.row_factory = None
        cursor.execute("SELECT rowid, title FROM sessions WHERE title IS NOT NULL ORDER BY rowid")
        blob = bytearray()
        starts = array("q")
        rowids = array("q")
        last = 0
        while rows := cursor.fetchmany(2048):
            for rowid, title in rows:
                if blob:
                    blob += b"\n"
                starts.append(len(blob))
                rowids.append(rowid)
                blob += _fold(title)
            last = rows[-1][0]
        self._blob, self._starts, self._rowids, self._last = bytes(blob), starts, rowids, None
        self._built_at = self._clock()
        # (New titled sessions are read by rowid from here: one created untitled, then
        # titled, after the newest titled one is read too.)
        self._max_rowid = last
        self._version = _data_version(conn)
        self._changed = False

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Up to date with the store as ``conn`` sees it (build, add new sessions, or rebuild)."""
        if not self.built:
            self.build(conn)
            return
        version = _data_version(conn)
        if version == self._version:
            return
        self._version = version
        self._changed = True
        if self._clock() - self._built_at > self.MAX_AGE_S:
            self.build(conn)
            return
        cursor = conn.cursor()
        cursor.row_factory = None
        new = cursor.execute(
            "SELECT rowid, title FROM sessions WHERE rowid > ? AND title IS NOT NULL ORDER BY rowid",
            (self._max_rowid,),
        ).fetchall()
        if new:
            tail = b"\n".join(_fold(title) for _rowid, title in new)
            position = len(self._blob) + 1 if self._blob else 0
            for rowid, title in new:
                self._starts.append(position)
                self._rowids.append(rowid)
                position += len(_fold(title)) + 1
            self._blob = self._blob + b"\n" + tail if self._blob else tail
            self._max_rowid = new[-1][0]

    def candidates(self, text: str, most: int | None = None) -> list[int] | None:
        """Rowids of the sessions whose title (as last read) contains ``text`` as ``LIKE``
        would find it; None when there are more than :data:`MAX_CANDIDATES`, or than ``most``
        (a caller that wants only a few stops looking sooner: this runs beside a keystroke's
        search and holds the interpreter while it loops)."""
        needle = _fold(text)
        if not needle:
            return []
        if b"\n" in needle:
            return None  # (titles are joined by line breaks: let SQL look)
        cap = self.MAX_CANDIDATES if most is None else min(most, self.MAX_CANDIDATES)
        blob, starts, rowids = self._blob, self._starts, self._rowids
        last = self._last
        if last is not None and last[1] is not None and last[2] == len(blob) and last[0] in needle:
            if len(last[1]) > cap:
                return None  # (as many as the last text's may match: not few)
            end = len(blob)
            found = [
                index for index in last[1]
                if needle in blob[starts[index]:(starts[index + 1] - 1 if index + 1 < len(starts) else end)]
            ]
        else:
            found = []
            position = blob.find(needle)
            while position != -1:
                index = bisect_right(starts, position) - 1
                found.append(index)
                if len(found) > cap:
                    if cap == self.MAX_CANDIDATES:
                        self._last = (needle, None, len(blob))
                    return None
                # The next match starts after this title: one candidate per session.
                nxt = starts[index + 1] if index + 1 < len(starts) else len(blob)
                position = blob.find(needle, nxt)
        self._last = (needle, found, len(blob))
        return [rowids[index] for index in found]


def _fold(text: str) -> bytes:
    """``text`` as SQLite's ``LIKE`` compares it: UTF-8, ASCII letters case-folded."""
    return text.encode("utf-8", "surrogatepass").lower()


def _data_version(conn: sqlite3.Connection) -> tuple[int, int]:
    """Changes by other connections (``PRAGMA data_version``) and by this one."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes
