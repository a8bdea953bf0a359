"""What can go wrong with a store, said in one line for a person.

A leaf module: every other module of the package (and the UI) asks these questions here, so
there is one answer to "is this a lock?" and one wording for each failure.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path


class DatabaseError(Exception):
    """A database that cannot be used: missing, not a database, corrupt, or unsupported.

    The message is one line meant for a person; the CLI prints it after ``Error: ``.
    """


class ReadOnlyError(DatabaseError):
    """A mutating method was called on a store opened with ``read_only=True``."""


class TitleChangedError(Exception):
    """A conditional rename found another title than the one the person saw."""

    def __init__(self, session_id: str, current: str | None) -> None:
        super().__init__(f"the title of {session_id} changed meanwhile (it is now {current!r})")
        self.session_id = session_id
        self.current = current


def is_lock_error(exc: BaseException | None) -> bool:
    """Another process holds a lock (``database is locked`` / ``busy``): worth retrying.

    A :class:`DatabaseError` raised while opening counts when its cause was a lock.
    """
    while exc is not None:
        if isinstance(exc, sqlite3.OperationalError):
            text = str(exc).lower()
            return "locked" in text or "busy" in text
        if not isinstance(exc, DatabaseError):
            return False
        exc = exc.__cause__
    return False


def is_interrupted(exc: BaseException) -> bool:
    """The statement was stopped by ``Connection.interrupt()`` (a superseded search)."""
    return isinstance(exc, sqlite3.OperationalError) and "interrupted" in str(exc).lower()


def needs_immutable(path: Path, exc: BaseException) -> bool:
    """``mode=ro`` failed because SQLite cannot create ``-shm`` in a read-only directory."""
    text = str(exc).lower()
    return (
        ("readonly" in text or "read-only" in text or "unable to open" in text)
        and not os.access(path.parent, os.W_OK)
        and not Path(str(path) + "-shm").exists()
    )


def describe_db_error(exc: BaseException, path: Path) -> str:
    """One line for a person about why ``path`` could not be used."""
    text = str(exc)
    lower = text.lower()
    if "file is not a database" in lower or "not a database" in lower:
        return f"{path} is not a SQLite database (or it is encrypted)"
    if "malformed" in lower or "corrupt" in lower:
        return f"{path} is corrupt ({text})"
    if "unable to open" in lower:
        return f"cannot open {path} ({text})"
    if "no such table" in lower:
        return f"{path} is not a Hermes session database ({text})"
    if "locked" in lower or "busy" in lower:
        return f"{path} is locked by another process ({text})"
    if "readonly" in lower or "read-only" in lower:
        return f"{path} is read-only ({text})"
    return f"{path}: {text}"


def describe_write_error(exc: BaseException, nothing: str = "Nothing was changed.") -> str:
    """One line for a person about a failed write; says that nothing changed."""
    if is_lock_error(exc):
        return (
            "The database is locked: another process has held its write lock longer than "
            f"the retry budget. {nothing} Try again in a moment."
        )
    if isinstance(exc, DatabaseError):
        return f"{exc}. {nothing}"
    if isinstance(exc, sqlite3.Error):
        return f"The database refused the change ({exc}). {nothing}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}. {nothing}"
    return f"{type(exc).__name__}: {exc}. {nothing}"
