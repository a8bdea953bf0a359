"""Cheap change detection for readers (SPEC WR-8, BR-8).

``PRAGMA data_version`` on a connection changes exactly when *another* connection commits to
the database, and costs microseconds; the gateway index ``sessions.json`` is watched by
:class:`~hermes_state.gateway.SessionsIndexWatcher` (one ``stat`` when nothing changed; a file
caught mid-write keeps the previous lanes). A viewer polls :meth:`ChangeWatcher.poll` a few times a
second from a worker thread and reloads only when something changed.

The watcher owns its own read-only connection so that a long query on the viewer's main
reader never delays change detection.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from .gateway import SessionEntry, SessionsIndexWatcher
from .listing.pins import pins_signature, written_here


@dataclass(frozen=True)
class Change:
    """What changed since the previous poll."""

    database: bool = False
    lanes: bool = False
    #: The database file appeared, disappeared or was replaced.
    reopened: bool = False

    def __bool__(self) -> bool:
        return self.database or self.lanes or self.reopened


class ChangeWatcher:
    """Detect commits by other processes and edits of ``sessions.json``.

    ``poll()`` never raises for a locked or missing database: a busy database reports no
    change (the next poll sees it), a missing one reports ``reopened`` once when it appears.
    """

    def __init__(self, db_path: Path | str, sessions_dir: Path | str | None = None) -> None:
        self.db_path = Path(db_path)
        self._index = SessionsIndexWatcher(Path(sessions_dir)) if sessions_dir is not None else None
        if self._index is not None:
            self._index.poll()  # what is there now is the baseline, not a change
        self._conn: sqlite3.Connection | None = None
        self._version: int | None = None
        self._db_identity: tuple | None = None
        self._lock = threading.Lock()
        self.last_error: str | None = None
        # Pins of stores without a ``pinned`` column live in our settings file: another
        # process's pin is a change of what the list shows, as a commit is.
        self._pins = pins_signature()
        if self._identity() is not None:
            try:
                self._connect()
            except sqlite3.Error as exc:
                self.last_error = str(exc)
                self._close()

    def _identity(self) -> tuple | None:
        try:
            st = os.stat(self.db_path)
        except OSError:
            return None
        return (st.st_ino, st.st_dev)

    def _connect(self) -> None:
        from urllib.parse import quote

        uri = "file:" + quote(str(self.db_path.resolve())) + "?mode=ro"
        self._conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=0.2)
        self._version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        self._db_identity = self._identity()

    def poll(self) -> Change:
        with self._lock:
            return self._poll()

    def _poll(self) -> Change:
        database = reopened = False
        identity = self._identity()
        if self._conn is None or identity != self._db_identity:
            if self._conn is not None:
                self._close()
                reopened = True
            if identity is not None:
                try:
                    self._connect()
                    reopened = True
                except sqlite3.Error as exc:
                    self.last_error = str(exc)
                    self._close()
        elif self._conn is not None:
            try:
                version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
                self.last_error = None
            except sqlite3.Error as exc:
                self.last_error = str(exc)
                version = self._version
            if version != self._version:
                self._version = version
                database = True
        lanes = self._index.poll() if self._index is not None else False
        pins = pins_signature()
        if pins != self._pins:
            self._pins = pins
            # Another process's pin changes what the list shows, as a commit does; this
            # process's own pin has been shown already.
            database = database or not written_here(pins)
        return Change(database=database, lanes=lanes, reopened=reopened)

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn = None
        self._version = None
        self._db_identity = None

    @property
    def lanes(self) -> dict[str, SessionEntry]:
        """The gateway index as last read (empty without one)."""
        with self._lock:
            return dict(self._index.entries) if self._index is not None else {}

    def close(self) -> None:
        with self._lock:
            self._close()
