"""One policy for opening a store, asking whether it can be written, and reading through locks.

The CLI and the browser both open ``state.db`` through here, so they agree on what a
missing, empty, read-only, newer or locked database means and say it in the same words.
Every error is a :class:`~hermes_state.errors.DatabaseError` with a one-line message.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from pathlib import Path
from typing import Callable, TypeVar
from urllib.parse import quote

from .db import SessionDB
from .errors import DatabaseError, describe_db_error, is_lock_error, needs_immutable
from .schema import MAX_KNOWN_VERSION

T = TypeVar("T")

#: Status texts while another process holds a lock.
READ_WAIT_TEXT = "Database busy (another process holds a lock) — retrying…"
WRITE_WAIT_TEXT = "Database locked by another process — waiting to write…"


def _ro_uri(path: Path) -> str:
    return "file:" + quote(str(path.resolve())) + "?mode=ro"


def probe_version(path: Path) -> int | None:
    """Schema version of the file without changing anything.

    ``None``: an empty SQLite file (no tables); ``0``: Hermes tables without a version row.
    Raises :class:`DatabaseError` for an SQLite file that holds some other application's
    tables, and ``sqlite3.DatabaseError`` for a file that is not SQLite or is corrupt.
    """
    uri = _ro_uri(path)
    conn = sqlite3.connect(uri, uri=True, timeout=1.0)
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.OperationalError as exc:
        conn.close()
        if not needs_immutable(path, exc):
            raise
        # Read-only directory without -shm: read it as SessionDB(read_only=True) will.
        conn = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=1.0)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return None
        if "sessions" not in tables and "schema_version" not in tables:
            raise DatabaseError(f"{path} is not a Hermes session database")
        if "schema_version" not in tables:
            return 0
        row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
        return int(row[0]) if row else 0
    finally:
        conn.close()


def files_writable(path: Path) -> bool:
    """The file and its directory (for ``-wal``/``-shm``) are writable by us."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def open_store(
    path: Path, access: str = "read", *, store_class: type[SessionDB] = SessionDB, **kwargs
) -> SessionDB:
    """Open ``path`` for ``access`` ("read" or "write") by the one policy.

    A read opens read-only whatever the version (UC-8: reading never migrates); a write
    refuses read-only files and stores above the newest schema known (UC-9: never written,
    let alone migrated). The database must exist: nothing here creates one.
    """
    path = Path(path)
    if not path.exists():
        raise DatabaseError(f"no database at {path}")
    if path.is_dir():
        raise DatabaseError(f"{path} is a directory, not a database")
    writable = files_writable(path)
    try:
        version = probe_version(path)
        if access == "read":
            # UC-8: reading never migrates or changes a store; an empty file (no version at
            # all) is still initialised as upstream does (CLI-3).
            read_only = not writable or version is not None
        else:
            if not writable:
                raise DatabaseError(f"{path} is read-only")
            if version is not None and version > MAX_KNOWN_VERSION:
                # UC-9: never write to (let alone migrate) a store newer than any we know.
                raise DatabaseError(
                    f"{path} has schema version {version}, newer than this program's "
                    f"{MAX_KNOWN_VERSION}; it can only be read, nothing was changed"
                )
            read_only = False
        return store_class(path, read_only=read_only, **kwargs)
    except DatabaseError:
        raise
    except sqlite3.Error as exc:
        if access == "read" and needs_immutable(path, exc):
            raise DatabaseError(
                f"{path} cannot be read: its directory is not writable and SQLite needs to "
                f"create {path.name}-shm beside it (it exists while a Hermes process has the "
                "database open)"
            ) from exc
        raise DatabaseError(describe_db_error(exc, path)) from exc
    except OSError as exc:
        raise DatabaseError(f"cannot open {path} ({exc.strerror or exc})") from exc


def write_problem(path: Path, reader: SessionDB) -> str | None:
    """Why this store cannot be changed, or None if it can.

    Asks the schema version the reader found, the file system (``os.access``) and then
    SQLite itself, which knows about read-only mounts, ACLs and -wal/-shm files that
    permission bits do not show.
    """
    path = Path(path)
    if reader.opened_version is not None and reader.opened_version > MAX_KNOWN_VERSION:
        return f"schema version {reader.opened_version} is newer than this program's"
    if not os.access(path, os.W_OK):
        return f"{path} is read-only"
    if not os.access(path.parent, os.W_OK):
        return f"{path.parent} is read-only (SQLite needs it for its lock files)"
    return sqlite_write_problem(path)


def sqlite_write_problem(path: Path) -> str | None:
    """SQLite's own answer: an empty write statement on a ``mode=rw`` connection.

    A busy database is some other process writing, hence writable: None. Nothing is
    written; the lock is held for microseconds.
    """
    uri = "file:" + quote(str(Path(path).resolve())) + "?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=0, isolation_level=None)
    except sqlite3.Error as exc:
        return f"SQLite cannot open {path} for writing ({exc})"
    try:
        conn.execute("BEGIN IMMEDIATE")
        # A write statement that changes nothing: SQLite checks it may write at all.
        conn.execute("UPDATE sessions SET id = id WHERE 0")
    except sqlite3.Error as exc:
        text = str(exc).lower()
        if "readonly" in text or "read-only" in text or "unable to open" in text:
            return f"SQLite reports {path} is read-only ({exc})"
        return None
    finally:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        finally:
            conn.close()
    return None


def retry_read(
    fn: Callable[[], T],
    path: Path,
    *,
    on_wait: Callable[[str | None], None] | None = None,
    attempts: int = 40,
) -> T:
    """Run a read; while the database is locked or busy, say so and try again.

    Other operational errors (an interrupt, a statement SQLite refuses) propagate as they
    are; a damaged file becomes a one-line :class:`DatabaseError`.
    """
    say = on_wait or (lambda _text: None)
    for attempt in range(attempts):
        try:
            result = fn()
        except (sqlite3.OperationalError, DatabaseError) as exc:
            if not is_lock_error(exc):
                raise
            if attempt == attempts - 1:
                if isinstance(exc, DatabaseError):
                    raise
                raise DatabaseError(describe_db_error(exc, path)) from exc
            say(READ_WAIT_TEXT)
            time.sleep(random.uniform(0.05, 0.2))
            continue
        except sqlite3.DatabaseError as exc:
            raise DatabaseError(describe_db_error(exc, path)) from exc
        if attempt:
            say(None)
        return result
    raise AssertionError("unreachable")  # pragma: no cover
