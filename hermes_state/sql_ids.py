"""Ids asked for in SQL ``IN (...)`` lists a statement's worth at a time.

``in_chunks(ids)`` yields ``(chunk, marks)``: each run of at most
:data:`SQL_IDS_PER_STATEMENT` ids, in their order, with its ``?`` placeholders::

    for chunk, marks in in_chunks(ids):
        conn.execute(f"SELECT id FROM sessions WHERE id IN ({marks})", chunk)

``chunked(ids)`` yields the runs alone, for a statement that writes its placeholders its
own way (the list's padded ``IN`` lists, :func:`hermes_state.listing.activity.placeholders`),
or for a stream of rows looked up a statement's worth at a time (read as it goes).
A statement binding more than one parameter per item passes a smaller ``size`` (and
``mark="(?, ?)"`` for pairs) and says why where it does.

The standard library only, and no import of the package: :mod:`hermes_state.visibility`
uses it, and an export worker runs without the package, importing modules by their file names
(``export_batch`` imports ``export_units``, which imports ``visibility``, which imports this).
"""

from __future__ import annotations

from itertools import islice
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

#: Ids bound in one statement. SQLite builds before 3.32 refuse a statement with more than
#: 999 host parameters (``SQLITE_MAX_VARIABLE_NUMBER``), and Python's ``sqlite3`` may be
#: linked against one of them; a statement often binds a few parameters beside the ids (a
#: time, a filter's values) or pads its list (to 512 for 500 ids), so 500 leaves room.
SQL_IDS_PER_STATEMENT = 500


def chunked(items: Iterable[T], size: int = SQL_IDS_PER_STATEMENT) -> Iterator[list[T]]:
    """``items`` in runs of at most ``size``, in order, each item in exactly one run; nothing
    for no items. A stream is read a run at a time (a listing of every session is never held
    whole)."""
    if size < 1:
        raise ValueError(f"size must be at least 1, not {size}")
    stream = iter(items)
    while run := list(islice(stream, size)):
        yield run


def in_chunks(
    items: Iterable[T], size: int = SQL_IDS_PER_STATEMENT, *, mark: str = "?",
) -> Iterator[tuple[list[T], str]]:
    """``(chunk, marks)`` for each run of :func:`chunked`: ``marks`` is ``mark`` once per item
    of the run, comma separated, for ``IN ({marks})`` (or ``VALUES {marks}``)."""
    for chunk in chunked(items, size):
        yield chunk, ",".join([mark] * len(chunk))


__all__ = ["SQL_IDS_PER_STATEMENT", "chunked", "in_chunks"]
