"""Which sessions were written to most recently: what the first pages by last activity (BR-10)
are ranked from, kept by a reader between lists and, when asked, between runs.

Nothing in a store indexes messages by time (only ``(session_id, timestamp)``), so knowing which
sessions hold the newest messages means one index seek per session: ~0.25 s at 50k sessions,
over a second at 250k, several from a cold page cache. A reader does that once; afterwards it
reads only the messages written since (``id`` above the newest it read). With a cache file
(:attr:`RecencyWalk.cache`) the next process starts from what the last one knew and reads only
what was written in between, so a browser opens at the same speed on every store size.

What is kept is an upper bound per session, never a guess: a message deleted or rewound since
leaves its session's bound too high, which only adds a candidate that ranks lower; a message
written since is read before the bounds are used. A cache is used only for the very file it
was made from (same path, device and inode) whose newest message it read is still there,
unchanged; message ids are never reused (``AUTOINCREMENT``) while that message exists. Any
doubt -- another file, a damaged or foreign cache, too many messages since -- and the index
is built again.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import logging
import math
import os
import sqlite3
import time
from pathlib import Path

from ..paths import read_side_file
from ..visibility import EPOCH_2100

log = logging.getLogger(__name__)

#: Plausible timestamps end before 2100: later ones are ignored for activity (UC-3).
EPOCH_2100 = EPOCH_2100

#: Layout of the cache file; a file of another layout is ignored (and later replaced).
CACHE_FORMAT = 1


class RecencyWalk:
    """The sessions most recently written to, newest first (BR-10).

    ``order`` holds ``(-newest, session_id)`` sorted: ``newest`` is the largest message
    timestamp (before 2100) a session had when last read -- an upper bound of its last
    activity through messages, visible or not. Only the ``KEEP`` highest are kept; every other
    session's bound is at most ``bound``. :meth:`build` reads every session's bound once;
    afterwards :meth:`refresh` reads only the messages written since (``id`` above ``top``), so
    a list after a commit costs what the commit wrote. Message ids are not reused while the
    newest one read exists; when it is gone, or too many new messages came, the index is built
    again. Nothing here assumes that ids follow time (a store imported session by session does
    not).

    ``database`` and ``cache``: with both set, :meth:`refresh` starts from the cache file when
    it was made from this very file, and :meth:`save` writes it (after a build, and when the
    store closes).
    """

    #: Sessions kept in ``order`` (enough for the deepest fast page and a selective filter).
    KEEP = 12_000
    #: More new messages than this since the last read: build again.
    MAX_NEW = 20_000
    #: Newest messages a guess (see :meth:`guess`) reads.
    GUESS_ROWS = 20_000

    def __init__(self, database: Path | None = None, cache: Path | None = None) -> None:
        self.database = database
        self.cache = cache
        #: ``top`` when the state was last saved or loaded (nothing new to save while equal).
        self._saved_top: tuple | None = None
        #: The file (path, device, inode) the state was read from: saved only for that file.
        self._file: list | None = None
        #: The pinned sessions (``sessions.pinned``) when last known exactly, kept with the
        #: index: finding them means reading every session row (there is no index on the
        #: column), so a first page may start from these while they are checked. None: unknown.
        self.pins: frozenset[str] | None = None
        self._saved_pins: frozenset[str] | None = None
        self.reset()

    def reset(self) -> None:
        self.order: list[tuple[float, str]] = []
        self.newest: dict[str, float] = {}
        self.bound: float | None = None  # None: not built
        #: ``(id, session_id, timestamp)`` of the newest message read, None for an empty store.
        self.top: tuple[int, str, object] | None = None
        #: Made by :meth:`guess`: not bounds, only the likely order.
        self.guessed = False

    # ------------------------------------------------------------------ reading the store

    def build(self, conn: sqlite3.Connection) -> None:
        self.reset()
        self._file = self._identity()
        cursor = conn.cursor()
        cursor.row_factory = None
        # One index seek per session (the newest message before 2100), the highest kept.
        rows = cursor.execute(
            "SELECT id, newest FROM (SELECT s.id, (SELECT MAX(m.timestamp) FROM messages m"
            f" WHERE m.session_id = s.id AND m.timestamp < {EPOCH_2100}) AS newest FROM sessions s)"
            " WHERE newest IS NOT NULL ORDER BY newest DESC LIMIT ?",
            (self.KEEP + 1,),
        ).fetchall()
        kept = sorted((-float(ts), sid) for sid, ts in rows)
        self.bound = -kept[self.KEEP][0] if len(kept) > self.KEEP else float("-inf")
        self.order = kept[:self.KEEP]
        self.newest = {sid: -negated for negated, sid in self.order}
        top = cursor.execute("SELECT id, session_id, timestamp FROM messages ORDER BY id DESC LIMIT 1").fetchone()
        self.top = (top[0], top[1], top[2]) if top else None
        self._saved_top = None  # a build is always worth keeping

    def guess(self, conn: sqlite3.Connection) -> None:
        """The likely order, from the newest :data:`GUESS_ROWS` messages written (by id) -- what
        a first page may rest on while :meth:`build` runs elsewhere (1-2 s at 250k sessions).
        Right whenever messages are written in the order of their times, as a live store's
        are; a store imported session by session may rank otherwise, which the build
        corrects. Marked ``guessed``; never saved."""
        self.reset()
        cursor = conn.cursor()
        cursor.row_factory = None
        # Each session's newest time among those messages, found by SQLite: a session's row
        # each (~1,000), not the 20,000 messages' 60,000 values. Python's sqlite3 lets go of
        # the interpreter around every value it reads, and this runs beside the UI's imports
        # (browse's read-ahead), which took it back each time: reading the messages themselves
        # took ~0.4 s there for ~40 ms of work, and the first page of a first run came last.
        rows = cursor.execute(
            "SELECT session_id, MAX(timestamp) FROM (SELECT session_id, timestamp FROM messages"
            " ORDER BY id DESC LIMIT ?)"
            f" WHERE typeof(timestamp) IN ('integer', 'real') AND timestamp < {EPOCH_2100}"
            " GROUP BY session_id",
            (self.GUESS_ROWS,),
        ).fetchall()
        kept = sorted((-float(ts), sid) for sid, ts in rows)[:self.KEEP]
        self.order = kept
        self.newest = {sid: -negated for negated, sid in kept}
        self.bound = float("-inf")  # (every session not met is taken to be older)
        top = cursor.execute("SELECT id, session_id, timestamp FROM messages ORDER BY id DESC LIMIT 1").fetchone()
        self.top = (top[0], top[1], top[2]) if top else None
        self.guessed = True

    def refresh(self, conn: sqlite3.Connection, *, guess_ok: bool = False) -> None:
        """Bring the bounds up to the newest message (in the caller's read snapshot).
        ``guess_ok``: with neither a kept index nor a usable cache, :meth:`guess` instead of
        building (and a guess already made is brought up to date); else a guess is replaced
        by a build."""
        if self.guessed and not guess_ok:
            self.build(conn)
            self.save()
            return
        if self.bound is None:
            if self._load(conn):
                # The cache file may only speed up what the store confirms: it is taken as a
                # guess (good enough for a first page that says it is provisional) until a
                # build confirms it. A cache that left out a session written recently once
                # hid it from every page, and was written back on exit.
                self.guessed = True
                if not guess_ok:
                    self.build(conn)
                    self.save()
                    return
            else:
                if guess_ok:
                    self.guess(conn)
                    return
                self.build(conn)
                self.save()
                return
        cursor = conn.cursor()
        cursor.row_factory = None
        if self.top is not None:
            row = cursor.execute("SELECT session_id, timestamp FROM messages WHERE id = ?", (self.top[0],)).fetchone()
            if row is None or row[0] != self.top[1] or row[1] != self.top[2]:
                self.build(conn)
                self.save()
                return
        new = cursor.execute(
            "SELECT id, session_id, timestamp FROM messages WHERE id > ? ORDER BY id DESC LIMIT ?",
            (self.top[0] if self.top is not None else -1, self.MAX_NEW + 1),
        ).fetchall()
        if not new:
            return
        if len(new) > self.MAX_NEW:
            self.build(conn)
            self.save()
            return
        self.top = (new[0][0], new[0][1], new[0][2])
        latest: dict[str, float] = {}
        for _mid, sid, ts in new:
            if isinstance(ts, (int, float)) and ts < EPOCH_2100 and ts > latest.get(sid, float("-inf")):
                latest[sid] = float(ts)
        for sid, ts in latest.items():
            old = self.newest.get(sid)
            if old is not None:
                if ts <= old:
                    continue
                del self.order[bisect.bisect_left(self.order, (-old, sid))]
            elif ts <= self.bound:
                continue  # still within the bound of the sessions not kept
            bisect.insort(self.order, (-ts, sid))
            self.newest[sid] = ts
        while len(self.order) > self.KEEP:
            negated, sid = self.order.pop()
            del self.newest[sid]
            self.bound = max(self.bound, -negated)

    # ------------------------------------------------------------------ between runs

    def _identity(self) -> list | None:
        if self.database is None:
            return None
        try:
            st = os.stat(self.database)
            return [str(Path(self.database).resolve()), st.st_dev, st.st_ino]
        except OSError:
            return None

    def _load(self, conn: sqlite3.Connection) -> bool:
        """Take the state the cache file holds, if it was made from this file and its newest
        message is still there unchanged (checked by :meth:`refresh` right after)."""
        if self.cache is None:
            return False
        identity = self._identity()
        try:
            # A FIFO or a device at the cache's path must not hang or fill memory: a cache
            # that cannot be read is a cache that is not there.
            data = json.loads(read_side_file(self.cache))
        except (OSError, ValueError):
            return False
        try:
            if (
                not isinstance(data, dict) or data.get("format") != CACHE_FORMAT
                or data.get("keep") != self.KEEP or identity is None or data.get("file") != identity
            ):
                return False
            bound = data["bound"]
            bound = float("-inf") if bound is None else float(bound)
            top = data["top"]
            if top is not None:
                top = (int(top[0]), str(top[1]), top[2])
                if not (top[2] is None or isinstance(top[2], (int, float, str))):
                    return False
            ids, times = data["ids"], data["newest"]
            if (
                not isinstance(ids, list) or not isinstance(times, list) or len(ids) != len(times)
                or len(ids) > self.KEEP or not {type(sid) for sid in ids} <= {str}
                or not {type(ts) for ts in times} <= {float, int}
                or (times and not (math.isfinite(min(times)) and math.isfinite(max(times))))
            ):
                return False
            pins = data.get("pins")
            if pins is not None and not (isinstance(pins, list) and {type(sid) for sid in pins} <= {str}):
                return False
        except (KeyError, TypeError, ValueError, IndexError):
            return False
        if math.isnan(bound) or (top is None and ids):
            # (An empty store when saved: anything in it now is new, read from id 0.)
            return False
        order = sorted(zip([-float(ts) for ts in times], ids))  # saved sorted: a linear pass
        newest = dict(zip(ids, map(float, times)))
        if len(newest) != len(order) or (order and -order[-1][0] < bound):
            return False
        self.order, self.newest, self.bound, self.top = order, newest, bound, top
        self._saved_top = top
        self._file = identity
        if self.pins is None and pins is not None:
            self.pins = self._saved_pins = frozenset(pins)
        return True

    def save(self) -> None:
        """Write the state to the cache file (best effort: a cache that cannot be written
        only costs the next process a build)."""
        if self.cache is None or self.bound is None or self.guessed:
            return
        if self.top == self._saved_top and self.pins == self._saved_pins:
            return
        identity = self._identity()
        if identity is None or identity != self._file:
            return  # the file at the path is not the one read (replaced meanwhile)
        data = {
            "format": CACHE_FORMAT,
            "keep": self.KEEP,
            "file": identity,
            "top": list(self.top) if self.top is not None else None,
            "bound": None if self.bound == float("-inf") else self.bound,
            "ids": [sid for _negated, sid in self.order],
            "newest": [-negated for negated, _sid in self.order],
            "pins": sorted(self.pins) if self.pins is not None else None,
        }
        try:
            from ..paths import write_atomic

            self.cache.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_atomic(self.cache, [json.dumps(data, separators=(",", ":"))], sync=False)
        except (OSError, ValueError) as exc:
            log.debug("recency cache not written: %s", exc)
            return
        self._saved_top, self._saved_pins = self.top, self.pins
        _sweep(self.cache.parent)


#: A cache file nobody wrote for this long is of a store gone or no longer browsed.
STALE_AFTER_S = 30 * 86400


def _sweep(directory: Path) -> None:
    """Remove cache files of stores not browsed for :data:`STALE_AFTER_S` (a demo's, a copy's)."""
    try:
        now = time.time()
        for entry in os.scandir(directory):
            if entry.name.startswith("recency-") and entry.name.endswith(".json"):
                if now - entry.stat().st_mtime > STALE_AFTER_S:
                    os.unlink(entry.path)
    except OSError:
        pass


def cache_file(database: Path, directory: Path) -> Path:
    """The cache file of ``database`` in ``directory`` (one per database, by resolved path)."""
    try:
        key = str(Path(database).resolve())
    except OSError:
        key = str(database)
    return directory / f"recency-{hashlib.sha256(key.encode('utf-8', 'surrogatepass')).hexdigest()[:24]}.json"
