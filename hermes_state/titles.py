"""Session titles: sanitising, setting, finding and lineage numbering (SPEC §7, TI-1 … TI-6).

The functions that read or write take a :class:`~hermes_state.store.Store`; ``SessionDB``'s
title methods are these, over its store.
"""

from __future__ import annotations

import re
import sqlite3
from typing import TYPE_CHECKING, Any

from .errors import TitleChangedError
from .prompts import with_resolved_prompt
from .query import escape_like

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store

MAX_TITLE_LENGTH = 100

# TI-1 step 2: ASCII control characters except tab, LF and CR (those become spaces later).
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# TI-1 step 3: invisible and format characters (zero-width, bidi controls, BOM, annotations).
_INVISIBLE_RE = re.compile("[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffc]")
_WHITESPACE_RE = re.compile(r"\s+")
_NUMBER_SUFFIX_RE = re.compile(r"^(.*) #(\d+)$", re.DOTALL)


def sanitize_title(title: str | None) -> str | None:
    """Clean a user-supplied title (TI-1).

    Removes control and invisible characters, folds whitespace runs to one space, strips.
    Returns None for a title that is empty after cleaning. Raises ``ValueError`` when the
    cleaned title is longer than ``MAX_TITLE_LENGTH`` code points.
    """
    if not title:
        return None
    cleaned = _CONTROL_RE.sub("", title)
    cleaned = _INVISIBLE_RE.sub("", cleaned)
    cleaned = _WHITESPACE_RE.sub(" ", cleaned).strip()
    if not cleaned:
        return None
    if len(cleaned) > MAX_TITLE_LENGTH:
        raise ValueError(f"Title too long ({len(cleaned)} chars, max {MAX_TITLE_LENGTH})")
    return cleaned


def split_number_suffix(title: str) -> tuple[str, int | None]:
    """``"name #3"`` → ``("name", 3)``; a title without ``" #<digits>"`` → ``(title, None)``."""
    match = _NUMBER_SUFFIX_RE.match(title)
    if match and match.group(2).isascii():
        return match.group(1), int(match.group(2))
    return title, None


def next_title_from(base: str, existing: list[str]) -> str:
    """TI-6 steps 3-4 given the titles that equal ``base`` or look like ``base #…``."""
    if not existing:
        return base
    highest = 1
    for title in existing:
        _, number = split_number_suffix(title)
        if number is not None and number > highest:
            highest = number
    return f"{base} #{highest + 1}"


#: "No condition" for :func:`set_session_title`'s ``expected``.
ANY_TITLE = object()


def set_session_title(store: "Store", session_id: str, title: str | None, *, expected: Any = ANY_TITLE) -> bool:
    """Set (or clear, with an empty title) a session's title; titles are unique (TI-2).

    Where the store has ``title_source`` (UC-5), a title set here is a person's choice:
    ``'user'`` (cleared with the title). With ``expected`` (the title the person saw,
    None for untitled) the rename happens only if that is still the title; otherwise
    :class:`~hermes_state.errors.TitleChangedError` says what it is now and nothing
    changes (two browsers renaming one session never silently lose a rename). True if the
    session exists."""
    cleaned = sanitize_title(title)
    source = ", title_source = ?" if store.has_session_column("title_source") and not store.read_only else ""

    def do(conn: sqlite3.Connection) -> bool:
        if expected is not ANY_TITLE:
            row = conn.execute("SELECT title FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is not None and row[0] != expected:
                raise TitleChangedError(session_id, row[0])
        if cleaned is not None:
            other = conn.execute(
                "SELECT id FROM sessions WHERE title = ? AND id != ?", (cleaned, session_id)
            ).fetchone()
            if other:
                raise ValueError(f"Title '{cleaned}' is already in use by session {other[0]}")
        values: list[Any] = [cleaned]
        if source:
            values.append("user" if cleaned is not None else None)
        cursor = conn.execute(f"UPDATE sessions SET title = ?{source} WHERE id = ?", (*values, session_id))
        return cursor.rowcount > 0

    try:
        return store.write(do)
    except sqlite3.IntegrityError as exc:
        # Another process took the title between our check and the UPDATE.
        other = store.fetchone("SELECT id FROM sessions WHERE title = ? AND id != ?", (cleaned, session_id))
        owner = f"session {other[0]}" if other else "another session"
        raise ValueError(f"Title '{cleaned}' is already in use by {owner}") from exc


def get_session_title(store: "Store", session_id: str) -> str | None:
    row = store.fetchone("SELECT title FROM sessions WHERE id = ?", (session_id,))
    return row[0] if row else None


def get_session_by_title(store: "Store", title: str) -> dict | None:
    """The session holding ``title`` (every column, the v30 prompt put back), or None."""
    row = store.fetchone("SELECT * FROM sessions WHERE title = ?", (title,))
    return with_resolved_prompt(store, dict(row) if row else None)


def resolve_session_by_title(store: "Store", title: str) -> str | None:
    """The latest session of a title lineage: newest ``title #N``, else ``title`` (TI-5)."""

    def do(conn: sqlite3.Connection) -> str | None:
        exact = conn.execute("SELECT id FROM sessions WHERE title = ?", (title,)).fetchone()
        numbered = conn.execute(
            "SELECT id FROM sessions WHERE title LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 1",
            (escape_like(title) + " #%",),
        ).fetchone()
        if numbered:
            return numbered[0]
        return exact[0] if exact else None

    return store.read(do)


def next_title_in_lineage(store: "Store", base_title: str) -> str:
    """``"name"`` → ``"name #N+1"`` given the titles already in use (TI-6)."""
    base, _ = split_number_suffix(base_title)
    rows = store.fetchall(
        "SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\\'",
        (base, escape_like(base) + " #%"),
    )
    return next_title_from(base, [row[0] for row in rows])
