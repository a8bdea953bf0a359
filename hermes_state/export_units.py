"""What an export holds beyond "every session as stored": ``--lineage``, ``--only
user-prompts``, ``--redact``.

* **Lineage**: a conversation's compression lineage is exported as one unit, root to tip
  (UC-3: a compression continuation, never a branch, a reset child or a delegate run).
  :func:`lineage_order` reorders an export's session order so each chain's segments come
  together, root first, at the place of the chain's most recently used segment;
  :func:`chain_of` is the chain of one session. Each session then carries
  ``lineage = {"conversation": root id, "segment": k, "segments": n}`` (JSONL keeps it on
  each line: an import ignores it), and :func:`group_units` hands the writers one chain at a
  time (a chain's dicts are held together: one conversation, never the whole export).
* **Prompts only**: the user's own prompts -- user rows that are neither scaffolding nor a
  compaction summary the agent wrote into a continuation.
* **Redaction**: every text of a session (content, reasoning, tool calls, title, system
  prompt …) through :func:`hermes_state.redact.redact_value`; ids are kept.

Everything here takes a plain connection or the session dicts; the standard library only
(an export worker imports it by its path, as :mod:`hermes_state.export_batch`).
"""

from __future__ import annotations

import sqlite3
from array import array
from dataclasses import dataclass
from typing import Iterable, Iterator

try:
    from .redact import redact_value
    from .visibility import continuation_sql, is_compaction_summary
except ImportError:  # run by its path in an export worker (hermes_state.export_batch): no package
    from redact import redact_value  # type: ignore[no-redef]
    from visibility import continuation_sql, is_compaction_summary  # type: ignore[no-redef]

#: ``--only`` choices.
ONLY_CHOICES = ("user-prompts",)
#: The key a session carries in a lineage export.
LINEAGE_KEY = "lineage"
#: Longest chain followed (a damaged store's parent links may loop).
MAX_SEGMENTS = 1000


@dataclass(frozen=True)
class ExportOptions:
    """How an export is shaped; the default is every session as stored."""

    lineage: bool = False
    only: str | None = None
    redact: bool = False

    def __post_init__(self) -> None:
        if self.only is not None and self.only not in ONLY_CHOICES:
            raise ValueError(f"unknown --only value {self.only!r} (expected one of {', '.join(ONLY_CHOICES)})")

    @property
    def plain(self) -> bool:
        return not (self.lineage or self.only or self.redact)


PLAIN = ExportOptions()


# ---------------------------------------------------------------------------- shaping


def is_user_prompt(msg: dict) -> bool:
    """A prompt the user wrote: a user row that is not scaffolding and not a compaction
    summary (written by the agent into the continuation's first user message)."""
    if msg.get("role") != "user" or msg.get("display_kind") == "hidden":
        return False
    content = msg.get("content")
    return not (isinstance(content, str) and is_compaction_summary(content))


def shape(obj: dict, options: ExportOptions) -> dict:
    """``obj`` as ``options`` export it (a new dict when anything changes)."""
    if options.only == "user-prompts":
        obj = {**obj, "messages": [m for m in obj.get("messages") or [] if is_user_prompt(m)]}
    if options.redact:
        obj = redact_value(obj)
    return obj


def shaped(objs: Iterable[dict], options: ExportOptions) -> Iterator[dict]:
    if not (options.only or options.redact):
        yield from objs
        return
    for obj in objs:
        yield shape(obj, options)


def group_units(objs: Iterable[dict]) -> Iterator[list[dict]]:
    """The sessions as the units a document holds: one session each, or in a lineage
    export the consecutive segments of one conversation together."""
    unit: list[dict] = []
    current = None
    for obj in objs:
        mark = obj.get(LINEAGE_KEY)
        conversation = mark.get("conversation") if isinstance(mark, dict) else None
        if unit and (conversation is None or conversation != current):
            yield unit
            unit = []
        unit.append(obj)
        current = conversation
    if unit:
        yield unit


# ---------------------------------------------------------------------------- lineage


def _next_segments(conn: sqlite3.Connection, wanted: set[str] | None) -> dict[str, str]:
    """``{session: the session continuing it}`` for every compression continuation (the
    newest one where a session has several, as the tip walk follows), within ``wanted``."""
    cursor = conn.cursor()
    cursor.row_factory = None
    sql = (
        "SELECT p.id, c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        f"WHERE {continuation_sql('p', 'c')} ORDER BY p.id, c.started_at DESC, c.id DESC"
    )
    found: dict[str, str] = {}
    for parent, child in cursor.execute(sql):
        if parent in found or parent == child:
            continue
        if wanted is None or (parent in wanted and child in wanted):
            found[parent] = child
    return found


def lineage_order(
    conn: sqlite3.Connection, ids: list[str], counts: "array[int]"
) -> "tuple[list[str], array[int], dict[str, tuple[str, int, int]]]":
    """``ids`` (an export's order) with each compression chain's segments together, root to
    tip, where the chain's first-listed segment was; their ``counts`` in step; and each
    session's ``(conversation root, segment number, segments)``."""
    wanted = set(ids)
    following = _next_segments(conn, wanted)
    preceding = {child: parent for parent, child in following.items()}
    count_of = dict(zip(ids, counts))
    order: list[str] = []
    marks: dict[str, tuple[str, int, int]] = {}
    for session_id in ids:
        if session_id in marks:
            continue
        head = session_id
        seen = {head}
        while head in preceding and preceding[head] not in seen and len(seen) < MAX_SEGMENTS:
            head = preceding[head]
            seen.add(head)
        chain = [head]
        while chain[-1] in following and following[chain[-1]] not in marks and len(chain) < MAX_SEGMENTS:
            nxt = following[chain[-1]]
            if nxt in chain:
                break
            chain.append(nxt)
        chain = [sid for sid in chain if sid not in marks]
        for number, member in enumerate(chain, 1):
            marks[member] = (chain[0], number, len(chain))
        order.extend(chain)
        if session_id not in marks:  # (only where parent links loop: exported on its own)
            marks[session_id] = (session_id, 1, 1)
            order.append(session_id)
    return order, array("q", (count_of[sid] for sid in order)), marks


def chain_of(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """The compression chain ``session_id`` is part of, root to tip: the sessions it
    continues (up its parent links while each step is a compression continuation), itself,
    and the newest continuations after it."""
    up_sql = (
        "SELECT p.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        f"WHERE c.id = ? AND {continuation_sql('p', 'c')}"
    )
    down_sql = (
        "SELECT c.id FROM sessions c JOIN sessions p ON p.id = c.parent_session_id "
        f"WHERE p.id = ? AND {continuation_sql('p', 'c')} ORDER BY c.started_at DESC, c.id DESC LIMIT 1"
    )
    before: list[str] = []
    seen = {session_id}
    current = session_id
    while len(seen) < MAX_SEGMENTS:
        row = conn.execute(up_sql, (current,)).fetchone()
        if row is None or row[0] in seen:
            break
        current = row[0]
        seen.add(current)
        before.append(current)
    after: list[str] = []
    current = session_id
    while len(seen) < MAX_SEGMENTS:
        row = conn.execute(down_sql, (current,)).fetchone()
        if row is None or row[0] in seen:
            break
        current = row[0]
        seen.add(current)
        after.append(current)
    return [*reversed(before), session_id, *after]


def mark(obj: dict, marks: dict[str, tuple[str, int, int]]) -> dict:
    """``obj`` carrying its place in its conversation (see the module docstring)."""
    found = marks.get(obj.get("id"))  # type: ignore[arg-type]
    if found is None:
        return obj
    root, number, total = found
    return {**obj, LINEAGE_KEY: {"conversation": root, "segment": number, "segments": total}}


__all__ = [
    "ExportOptions",
    "LINEAGE_KEY",
    "ONLY_CHOICES",
    "PLAIN",
    "chain_of",
    "group_units",
    "is_user_prompt",
    "lineage_order",
    "mark",
    "shape",
    "shaped",
]
