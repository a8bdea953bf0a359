"""How a conversation ended: complete ("done"), interrupted, error or empty.

Upstream's own session pickers show each row's lifecycle status
(``SessionDB.session_lifecycle_statuses``, tagged ``done`` / ``intr`` / ``err`` / ``empty``),
derived from one row only -- the session's **last message** (its largest id; whether it was
rewound plays no part), so it costs one index seek per session and never reads a transcript:

* an error ``finish_reason`` (``error``, ``agent_error``, ``content_filter``) -> ``error``;
* a user or tool message, or an assistant message with tool calls still pending ->
  ``interrupted`` (the agent never answered);
* anything else -> ``complete`` (the benign default: an unknown shape never alarms);
* no message at all -> ``empty``.

A listed conversation's status is its live tip's (the session the list row shows). The SQL
of the same rule (:func:`status_sql`) is what the list filters by, so a status filter, the
list's count and the glyphs drawn always agree.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Iterable

from .sql_ids import in_chunks
from .visibility import continuation_sql

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store

COMPLETE = "complete"
INTERRUPTED = "interrupted"
ERROR = "error"
EMPTY = "empty"

#: Every status, in the order pickers and the legend show them.
STATUSES = (COMPLETE, INTERRUPTED, ERROR, EMPTY)

#: Upstream's short tags (its picker's column), also accepted as names on the command line.
TAGS = {COMPLETE: "done", INTERRUPTED: "intr", ERROR: "err", EMPTY: "empty"}

#: Names a person may type for each status.
ALIASES = {
    "done": COMPLETE, "complete": COMPLETE, "completed": COMPLETE,
    "interrupted": INTERRUPTED, "intr": INTERRUPTED,
    "error": ERROR, "err": ERROR, "errored": ERROR,
    "empty": EMPTY,
}

#: finish_reason values of a turn that ended in a provider or agent error (upstream's).
ERROR_FINISH_REASONS = ("error", "agent_error", "content_filter")

#: What Python's ``str.strip()`` strips of an ASCII value (SQL ``trim`` strips only spaces).
_WHITESPACE = " \t\n\r\x0b\x0c"


def parse_statuses(text: str) -> tuple[str, ...]:
    """``"done,error"`` -> ``("complete", "error")``; raises ValueError naming a word that is
    no status."""
    found: list[str] = []
    for word in (w.strip().lower() for w in text.split(",")):
        if not word:
            continue
        status = ALIASES.get(word)
        if status is None:
            raise ValueError(f"unknown status {word!r} (done, interrupted, error or empty)")
        if status not in found:
            found.append(status)
    if not found:
        raise ValueError("no status given (done, interrupted, error or empty)")
    return tuple(found)


def classify(role: str | None, has_tool_calls: bool, finish_reason: str | None) -> str:
    """The status of a session whose last message is this one (see the module docstring)."""
    if str(finish_reason or "").strip().lower() in ERROR_FINISH_REASONS:
        return ERROR
    kind = str(role or "").strip().lower()
    if kind in ("user", "tool") or (kind == "assistant" and has_tool_calls):
        return INTERRUPTED
    return COMPLETE


def statuses(store: "Store", session_ids: Iterable[str]) -> dict[str, str]:
    """``{session_id: status}`` of these sessions (``empty`` for one without messages, or
    not in the store), one statement per :data:`~hermes_state.sql_ids.SQL_IDS_PER_STATEMENT` ids."""
    ids = list(dict.fromkeys(sid for sid in session_ids if sid))
    found = {sid: EMPTY for sid in ids}
    if not ids:
        return found
    finish = "m.finish_reason" if store.has_message_column("finish_reason") else "NULL"
    calls = "m.tool_calls IS NOT NULL" if store.has_message_column("tool_calls") else "0"

    def run(conn: sqlite3.Connection) -> None:
        cursor = conn.cursor()
        cursor.row_factory = None
        for chunk, marks in in_chunks(ids):
            for sid, role, has_calls, reason in cursor.execute(
                f"SELECT m.session_id, m.role, {calls}, {finish} FROM messages m"
                f" JOIN (SELECT session_id, MAX(id) AS last FROM messages WHERE session_id IN ({marks})"
                " GROUP BY session_id) l ON m.id = l.last",
                chunk,
            ):
                found[sid] = classify(role, bool(has_calls), reason)

    store.read(run)
    return found


def tip_sql(alias: str = "s") -> str:
    """SQL of the id the list shows for the listed row ``alias``: itself, or for a
    compression root the live tip its chain leads to, each step to the newest-started
    continuation as :func:`hermes_state.lineage.compression_tip` walks it -- a chain of any
    length. UNION visits each session once, so a loop of parent links ends (its root is
    then shown for it)."""
    step = (
        "(SELECT c.id FROM sessions p JOIN sessions c ON c.parent_session_id = p.id"
        f" WHERE p.id = walk.id AND {continuation_sql('p', 'c')} ORDER BY c.started_at DESC LIMIT 1)"
    )
    continued = (
        "EXISTS (SELECT 1 FROM sessions tp JOIN sessions tc ON tc.parent_session_id = tp.id"
        f" WHERE tp.id = walk.id AND {continuation_sql('tp', 'tc')})"
    )
    return (
        f"(CASE WHEN {alias}.end_reason = 'compression' THEN COALESCE((WITH RECURSIVE walk(id) AS"
        f" (SELECT {alias}.id UNION SELECT {step} FROM walk WHERE walk.id IS NOT NULL)"
        f" SELECT walk.id FROM walk WHERE walk.id IS NOT NULL AND NOT {continued} LIMIT 1), {alias}.id)"
        f" ELSE {alias}.id END)"
    )


def status_of_sql(store: "Store", session_id_sql: str) -> str:
    """SQL of the status (:data:`STATUSES`) of the session whose id is ``session_id_sql``."""
    reasons = ",".join(f"'{r}'" for r in ERROR_FINISH_REASONS)
    ws = "'" + _WHITESPACE + "'"
    finish = (
        f"lower(trim(COALESCE(m.finish_reason, ''), {ws})) IN ({reasons})"
        if store.has_message_column("finish_reason") else "0"
    )
    calls = "m.tool_calls IS NOT NULL" if store.has_message_column("tool_calls") else "0"
    role = f"lower(trim(COALESCE(m.role, ''), {ws}))"
    return (
        f"COALESCE((SELECT CASE WHEN {finish} THEN '{ERROR}'"
        f" WHEN {role} IN ('user', 'tool') OR ({role} = 'assistant' AND {calls}) THEN '{INTERRUPTED}'"
        f" ELSE '{COMPLETE}' END FROM messages m"
        # MAX(id) then the row by its id: one seek on (session_id, id) where the store has
        # that index (v30), and 5x faster than ORDER BY id DESC LIMIT 1 where it has not.
        f" WHERE m.id = (SELECT MAX(l.id) FROM messages l WHERE l.session_id = {session_id_sql})), '{EMPTY}')"
    )


def status_sql(store: "Store", alias: str = "s") -> str:
    """SQL of the status of the conversation the listed row ``alias`` is (its tip's)."""
    return status_of_sql(store, tip_sql(alias))


def status_clause(store: "Store", wanted: Iterable[str], alias: str = "s") -> tuple[str, list[str]]:
    """A WHERE term keeping the listed rows whose status is one of ``wanted``."""
    names = [s for s in dict.fromkeys(wanted) if s in STATUSES]
    if not names:
        return "0", []
    return f"{status_sql(store, alias)} IN ({','.join('?' for _ in names)})", names
