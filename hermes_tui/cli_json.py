"""``--json`` for ``list``, ``stats``, ``trash`` and ``pin --list``: one stable, documented JSON
document on stdout for scripts (README, "JSON output").

Every document is one object with ``"version": 1`` and ``"command"``; a listing carries its
items in one array, written one item per line as they are read (a large ``--limit`` is never
held whole). Each field is always present, with ``null`` where the store has no value (or no
such column). Strings are the stored text exactly: JSON escaping keeps every code point, and
the ones a terminal would act on are written as ``\\u`` escapes -- C0 controls by ``json``
itself, DEL, the C1 controls and the bidi marks by :func:`~hermes_state.inert_text.escape_json_text`
(as the JSONL export writes them) -- so ``hermes-sessions list --json`` on a terminal is safe
and ``json.loads`` of it gives back exactly what is stored.

A version is a promise: a field is never renamed, retyped or removed under ``"version": 1``;
new fields may be added.
"""

from __future__ import annotations

import json
import math
import sys
from contextlib import closing
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator

from hermes_state.inert_text import escape_json_text
from hermes_state.models import shown_source
from hermes_state.sql_ids import chunked

if TYPE_CHECKING:  # pragma: no cover
    from hermes_state import SessionDB

#: The version of every document's shape (see the module's docstring).
JSON_VERSION = 1

#: The fields of one session of ``list --json`` and ``pin --list --json``, in order.
SESSION_FIELDS = (
    "id", "title", "preview", "source", "created_source", "shown_source", "model",
    "started_at", "ended_at", "end_reason", "last_active", "message_count", "tool_call_count",
    "input_tokens", "output_tokens", "estimated_cost_usd", "parent_session_id", "lineage_root_id",
    "archived", "pinned", "cwd", "git_branch", "git_repo_root",
)


def dumps(value: Any) -> str:
    """``value`` as JSON text whose strings are exact and inert on a terminal."""
    return escape_json_text(json.dumps(value, ensure_ascii=False, allow_nan=False, default=str))


def _number(value: Any) -> float | None:
    """A time or an amount: a finite number, else None (a store edited by hand may hold text)."""
    if isinstance(value, bool) or value is None:
        return None
    if not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return None
    return value if math.isfinite(value) else None


def _integer(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def session_item(row: dict) -> dict:
    """One session of a listing row (``iter_listed``), with :data:`SESSION_FIELDS`."""
    source = _text(row.get("source")) or ""
    created = _text(row.get("created_source"))
    return {
        "id": str(row["id"]),
        "title": _text(row.get("title")),
        "preview": _text(row.get("preview")) or "",
        "source": source,
        "created_source": created,
        "shown_source": shown_source(source, created),
        "model": _text(row.get("model")),
        "started_at": _number(row.get("started_at")),
        "ended_at": _number(row.get("ended_at")),
        "end_reason": _text(row.get("end_reason")),
        "last_active": _number(row.get("last_active")),
        "message_count": _integer(row.get("message_count")) or 0,
        "tool_call_count": _integer(row.get("tool_call_count")) or 0,
        "input_tokens": _integer(row.get("input_tokens")),
        "output_tokens": _integer(row.get("output_tokens")),
        "estimated_cost_usd": _number(row.get("estimated_cost_usd")),
        "parent_session_id": _text(row.get("parent_session_id")),
        # A compression chain is listed once, at its live tip: the chain's first session.
        "lineage_root_id": _text(row.get("_lineage_root_id")),
        "archived": bool(row.get("archived")),
        "pinned": bool(row.get("pinned")),
        "cwd": _text(row.get("cwd")),
        "git_branch": _text(row.get("git_branch")),
        "git_repo_root": _text(row.get("git_repo_root")),
    }


def shown_counts(db: "SessionDB", rows: Iterator[dict]) -> Iterator[dict]:
    """``rows`` (a streamed listing: upstream's rows, the stored ``message_count``) with each
    count of the messages its transcript shows, as the browser counts them (rewound ones left
    out): `list --json` said 15 where the browser said 12. Closing it closes ``rows``."""
    with closing(rows):
        for batch in chunked(rows):  # (a statement's worth of sessions at a time)
            yield from db.lister.count_shown_messages(batch)


def write_document(command: str, key: str, items: Iterable[dict], out: IO[str] | None = None,
                   **head: Any) -> int:
    """Write ``{"version": 1, "command": …, **head, key: [items…]}``, one item a line, as the
    items come; return how many were written."""
    out = out or sys.stdout
    start = {"version": JSON_VERSION, "command": command, **head}
    opening = dumps(start)[:-1]  # without its closing brace: the array follows
    out.write(f"{opening}, {dumps(key)}: [")
    count = 0
    for item in items:
        out.write(("\n" if count == 0 else ",\n") + dumps(item))
        count += 1
    out.write("\n]}\n" if count else "]}\n")
    return count


def write_object(command: str, body: dict, out: IO[str] | None = None) -> None:
    """Write ``{"version": 1, "command": …, **body}`` on one line."""
    (out or sys.stdout).write(dumps({"version": JSON_VERSION, "command": command, **body}) + "\n")
