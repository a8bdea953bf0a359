"""Journal mode with a fallback for file systems without WAL, and the last open error.

Upstream v16 (UC-2) exposes these at module level of ``hermes_state``:

- :func:`apply_wal_with_fallback` sets ``journal_mode=WAL``; on a network or FUSE file system
  where SQLite refuses (``locking protocol``, ``not authorized``) it falls back to ``DELETE``
  and logs one warning per label per process. It never downgrades a file that is already in
  WAL mode (mixing journal modes across processes corrupts a database), and any other error
  propagates.
- :func:`get_last_init_error` / :func:`format_session_db_unavailable` tell a person why the
  last ``SessionDB()`` of this process failed to open. A successful open does not clear it
  (another thread may be about to report its own failure).
"""

from __future__ import annotations

import logging
import sqlite3
import threading

log = logging.getLogger("hermes_state")

#: Lower-cased fragments of the errors that mean "this file system cannot do WAL".
WAL_INCOMPATIBLE = ("locking protocol", "not authorized")

#: Labels already warned about (one warning per label per process).
_wal_fallback_warned_paths: set[str] = set()
_warned_lock = threading.Lock()

_last_init_error: str | None = None
_last_init_error_lock = threading.Lock()


def _current_mode(conn: sqlite3.Connection) -> str | None:
    try:
        row = conn.execute("PRAGMA journal_mode").fetchone()
    except sqlite3.OperationalError:
        return None
    if not row or row[0] is None:
        return None
    mode = row[0]
    if isinstance(mode, bytes):
        mode = mode.decode("ascii", "replace")
    return str(mode).strip().lower()


def apply_wal_with_fallback(conn: sqlite3.Connection, *, db_label: str = "state.db") -> str:
    """Put ``conn`` in WAL mode, else DELETE mode on a WAL-incompatible file system.

    Returns ``"wal"`` or ``"delete"``. A connection already in WAL mode is left alone (the
    set-pragma is not even issued).
    """
    if _current_mode(conn) == "wal":
        return "wal"
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        return "wal"
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        if not any(marker in text for marker in WAL_INCOMPATIBLE):
            raise
        if _current_mode(conn) == "wal":
            raise  # another process has it in WAL mode: never downgrade
        _warn_once(db_label, exc)
        conn.execute("PRAGMA journal_mode=DELETE")
        return "delete"


def _warn_once(db_label: str, exc: BaseException) -> None:
    with _warned_lock:
        if db_label in _wal_fallback_warned_paths:
            return
        _wal_fallback_warned_paths.add(db_label)
    log.warning(
        "%s: this file system does not support WAL (%s); using journal_mode=DELETE "
        "instead (slower, readers wait for writers). This warning is shown once per process.",
        db_label,
        exc,
    )


def set_last_init_error(message: str | None) -> None:
    """Record (or, with None, clear) why the last ``SessionDB()`` open failed."""
    global _last_init_error
    with _last_init_error_lock:
        _last_init_error = message


#: Upstream's name, which its own suites call on the package.
_set_last_init_error = set_last_init_error


def get_last_init_error() -> str | None:
    """Why the last failed ``SessionDB()`` open of this process failed, or None."""
    return _last_init_error


def format_session_db_unavailable(prefix: str = "Session database not available") -> str:
    """``"<prefix>."``, or ``"<prefix>: <cause>."`` with a hint for WAL-incompatible mounts."""
    cause = get_last_init_error()
    if not cause:
        return f"{prefix}."
    hint = ""
    if any(marker in cause.lower() for marker in WAL_INCOMPATIBLE):
        hint = " (state.db may be on NFS/SMB/FUSE; see https://www.sqlite.org/wal.html)"
    return f"{prefix}: {cause}{hint}."


__all__ = [
    "apply_wal_with_fallback",
    "format_session_db_unavailable",
    "get_last_init_error",
]
