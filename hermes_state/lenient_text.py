"""Reading text that SQLite holds as invalid UTF-8.

SQLite does not check that TEXT is UTF-8: a store written by another tool may hold bytes that
are not. Python's ``sqlite3`` then refuses the whole read ("Could not decode to UTF-8 column
…"), and one such message would empty the list it previews or the export it belongs to.

Reads keep ``sqlite3``'s own decoding (a Python text factory costs a quarter of a large read);
only a read refused that way is run again with every invalid byte read as U+FFFD.

The standard library only: export workers import this file by its path.
"""

from __future__ import annotations

import sqlite3
from typing import Callable, TypeVar

T = TypeVar("T")

#: The start of ``sqlite3``'s message for a TEXT value that is not UTF-8.
UNDECODABLE = "Could not decode to UTF-8"


#: What ``sqlite3`` gives for a blob (and what may stand for one).
BLOB_TYPES = (bytes, bytearray, memoryview)


def lenient_text(raw: bytes | bytearray | memoryview) -> str:
    """Bytes as ``str``, an invalid UTF-8 byte as U+FFFD: a TEXT value ``sqlite3`` refused,
    or a blob where text belongs (nothing enforces a column's type)."""
    return bytes(raw).decode("utf-8", "replace")


def refused_as_undecodable(conn: sqlite3.Connection, exc: sqlite3.OperationalError) -> bool:
    """``exc`` is ``sqlite3`` refusing text that is not UTF-8 through ``conn``, which does not
    read leniently yet (the read is worth running again with :func:`lenient_text`)."""
    return UNDECODABLE in str(exc) and conn.text_factory is not lenient_text


def read_leniently(conn: sqlite3.Connection, fn: Callable[[], T]) -> T:
    """``fn()`` (reading through ``conn``); when it is refused for text that is not UTF-8,
    ``fn()`` again with :func:`lenient_text` decoding ``conn``'s text."""
    try:
        return fn()
    except sqlite3.OperationalError as exc:
        if not refused_as_undecodable(conn, exc):
            raise
    previous = conn.text_factory
    conn.text_factory = lenient_text
    try:
        return fn()
    finally:
        conn.text_factory = previous
