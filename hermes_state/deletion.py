"""Deleting sessions: what goes with a session, what stops a delete, and the rows and files it
removes; the deletes of a store (one session, several, an empty one, a sweep). Used by
``SessionDB``'s deletes, by the prunes (:mod:`hermes_state.maintenance`) and by the trash,
which snapshots the same rows before it deletes them.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .errors import DatabaseError
from .sql_ids import in_chunks
from .visibility import continuation_sql

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store


#: Tables whose rows belong to a session and go with it (UC-5): (table, column).
DEPENDENT_TABLES: tuple[tuple[str, str], ...] = (
    ("session_model_usage", "session_id"),
    ("compression_locks", "session_id"),
    ("session_turn_leases", "conversation_id"),
    ("telegram_dm_topic_bindings", "session_id"),
)


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def dependent_tables(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """The :data:`DEPENDENT_TABLES` this store has."""
    return [(t, c) for t, c in DEPENDENT_TABLES if c in table_columns(conn, t)]


def busy_sessions(conn: sqlite3.Connection, ids: list[str], now: float | None = None) -> list[tuple[str, str, float]]:
    """``(session_id, what, until)`` for sessions an agent holds right now: an unexpired
    ``compression_locks`` or ``session_turn_leases`` row (UC-5: never deleted under it)."""
    now = time.time() if now is None else now
    held: list[tuple[str, str, float]] = []
    for table, column, what in (("compression_locks", "session_id", "a compression"),
                                ("session_turn_leases", "conversation_id", "a turn")):
        if column not in table_columns(conn, table):
            continue
        for chunk, marks in in_chunks(ids):
            held += [
                (row[0], what, float(row[1]))
                for row in conn.execute(
                    f"SELECT {column}, expires_at FROM {table} WHERE {column} IN ({marks}) AND expires_at > ?",
                    chunk + [now],
                )
            ]
    return held


def unloadable_fts_tables(conn: sqlite3.Connection) -> list[str]:
    """FTS5 tables over ``messages`` whose tokenizer this process cannot load (UC-7)."""
    names = [
        row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'"
        )
    ]
    broken = []
    for name in names:
        try:
            conn.execute(f'SELECT 1 FROM "{name}" LIMIT 0').fetchall()
        except sqlite3.OperationalError as exc:
            if "tokenizer" in str(exc).lower():
                broken.append(name)
    return broken


def stand_down_unloadable_fts(conn: sqlite3.Connection) -> list[str]:
    """UC-7, as upstream does it: in the caller's write transaction, drop the triggers that
    would feed an FTS table whose tokenizer cannot load here and mark that index stale
    (``state_meta.fts_cjk_stale = '1'`` for the CJK table), so upstream rebuilds it where the
    tokenizer is installed. Returns the triggers dropped."""
    dropped: list[str] = []
    for table in unloadable_fts_tables(conn):
        triggers = [
            row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'"
            )
            if row[0].startswith(table + "_")
        ]
        for trigger in triggers:
            conn.execute(f'DROP TRIGGER IF EXISTS "{trigger}"')
            dropped.append(trigger)
        key = "fts_cjk_stale" if table == "messages_fts_cjk" else f"{table}_stale"
        conn.execute(
            "INSERT INTO state_meta (key, value) VALUES (?, '1') "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key,)
        )
    return dropped


class SessionBusyError(DatabaseError):
    """An agent holds the session right now (an unexpired compression lock or turn lease)."""


def prunable_sql(older_than_days: float, source: str | None, columns: str = "id") -> tuple[str, list[Any]]:
    """Ended sessions started before the cutoff (EX-5), optionally of one source."""
    cutoff = time.time() - older_than_days * 86400
    sql = f"SELECT {columns} FROM sessions WHERE started_at < ? AND ended_at IS NOT NULL"
    params: list[Any] = [cutoff]
    if source:
        sql += " AND source = ?"
        params.append(source)
    return sql, params


def delete_session_rows(conn: sqlite3.Connection, ids: list[str]) -> None:
    """Orphan children, delete messages (FTS follows via triggers), the rows of dependent
    tables and the sessions, then system prompts nobody uses any more (UC-5). Refuses, in
    one line and before changing anything, while an agent holds one of the sessions."""
    held = busy_sessions(conn, ids)
    if held:
        sid, what, until = held[0]
        stamp = time.strftime("%H:%M:%S", time.localtime(until))
        raise SessionBusyError(
            f"session {sid} is in use: an agent holds it for {what} until {stamp}; nothing was deleted"
        )
    stand_down_unloadable_fts(conn)
    dependents = dependent_tables(conn)
    prompts = "system_prompt_hash" in table_columns(conn, "sessions") and bool(
        table_columns(conn, "system_prompts")
    )
    for chunk, marks in in_chunks(ids):
        hashes = [
            row[0] for row in conn.execute(
                f"SELECT DISTINCT system_prompt_hash FROM sessions WHERE id IN ({marks}) "
                "AND system_prompt_hash IS NOT NULL", chunk,
            )
        ] if prompts else []
        conn.execute(
            f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN ({marks})",
            chunk,
        )
        conn.execute(f"DELETE FROM messages WHERE session_id IN ({marks})", chunk)
        for table, column in dependents:
            conn.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)
        conn.execute(f"DELETE FROM sessions WHERE id IN ({marks})", chunk)
        for digest in hashes:
            conn.execute(
                "DELETE FROM system_prompts WHERE hash = ? AND NOT EXISTS "
                "(SELECT 1 FROM sessions WHERE system_prompt_hash = ?)", (digest, digest),
            )


def remove_session_files(directory: Path, ids: list[str]) -> None:
    """EX-4: remove ``<id>.json``, ``<id>.jsonl`` and ``request_dump_<id>_*.json``."""
    for session_id in ids:
        if "\x00" in session_id:
            continue  # no file is named with a NUL (and os.* raise ValueError for one)
        if "/" in session_id or session_id in (".", ".."):
            # A session's files are named by its id inside ``directory``: an id that is not a
            # plain file name (another writer can store ``../../x``) names none there, and
            # must never reach a file outside it.
            continue
        candidates = [directory / f"{session_id}.json", directory / f"{session_id}.jsonl"]
        try:
            candidates += [
                p
                for p in directory.glob(f"request_dump_{glob_escape(session_id)}_*.json")
                if p.is_file()
            ]
        except OSError:
            pass
        for path in candidates:
            try:
                path.unlink()
            except OSError:
                pass


def glob_escape(text: str) -> str:
    import glob

    return glob.escape(text)


def compression_lineage(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """The session plus every compression ancestor and continuation (a continuation is a
    child started at or after its parent ended with ``compression``); empty if unknown."""
    rows = conn.execute(
        "WITH RECURSIVE "
        "up(id) AS (SELECT id FROM sessions WHERE id = ? UNION "
        "  SELECT p.id FROM up JOIN sessions c ON c.id = up.id "
        "  JOIN sessions p ON p.id = c.parent_session_id "
        f"  WHERE {continuation_sql('p', 'c')}), "
        "down(id) AS (SELECT id FROM sessions WHERE id = ? UNION "
        "  SELECT c.id FROM down JOIN sessions p ON p.id = down.id "
        "  JOIN sessions c ON c.parent_session_id = p.id "
        f"  WHERE {continuation_sql('p', 'c')}) "
        "SELECT id FROM up UNION SELECT id FROM down",
        (session_id, session_id),
    ).fetchall()
    return [row[0] for row in rows]


DELEGATE_FROM = "json_extract(CASE WHEN json_valid(model_config) THEN model_config END, '$._delegate_from')"


def delegate_descendants(conn: sqlite3.Connection, parent_ids: list[str]) -> list[str]:
    """Delegate sub-agent runs hanging off ``parent_ids`` (``model_config._delegate_from``
    naming the parent, or a marked child of it), recursively; the parents excluded."""
    found: list[str] = []
    seen = set(parent_ids)
    frontier = list(parent_ids)
    while frontier:
        # A work queue (children found join it), not one list chunked: sql_ids.in_chunks does
        # not fit. 400 ids a statement: each is bound twice, 800 parameters, under SQLite's 999.
        batch, frontier = frontier[:400], frontier[400:]
        marks = ",".join("?" for _ in batch)
        rows = conn.execute(
            f"SELECT id FROM sessions WHERE {DELEGATE_FROM} IN ({marks}) "
            f"OR (parent_session_id IN ({marks}) AND {DELEGATE_FROM} IS NOT NULL)",
            batch + batch,
        ).fetchall()
        for (child,) in rows:
            if child not in seen:
                seen.add(child)
                found.append(child)
                frontier.append(child)
    return found


# ---------------------------------------------------------------------- deletes of a store
#
# SessionDB's deletes are these, over its store: each runs in one write transaction, and the
# session's files (``sessions_dir``) go only once the rows are gone.


def delete_session(store: "Store", session_id: str, sessions_dir: Path | None = None) -> bool:
    """Delete a session and its messages, orphaning its children (EX-4, LI-14); upstream
    v16's delegate sub-agent runs (``_delegate_from``) go with their parent. True if it
    existed."""

    def do(conn: sqlite3.Connection) -> list[str] | None:
        if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
            return None
        delegates = delegate_descendants(conn, [session_id])
        delete_session_rows(conn, delegates + [session_id])
        return delegates

    delegates = store.write(do)
    if delegates is not None and sessions_dir is not None:
        remove_session_files(Path(sessions_dir), list(delegates) + [session_id])
    return delegates is not None


def delete_sessions(store: "Store", session_ids: list[str], sessions_dir: Path | None = None) -> int:
    """Delete several sessions in one transaction (delegate children go with them,
    other children are orphaned); unknown ids and non-strings are skipped. Returns how
    many of the given sessions existed."""
    wanted = sorted({sid for sid in (session_ids or []) if isinstance(sid, str) and sid})
    if not wanted:
        return 0

    def do(conn: sqlite3.Connection) -> tuple[list[str], list[str]]:
        existing: list[str] = []
        for chunk, marks in in_chunks(wanted):
            existing += [row[0] for row in conn.execute(f"SELECT id FROM sessions WHERE id IN ({marks})", chunk)]
        if not existing:
            return [], []
        delegates = delegate_descendants(conn, existing)
        delete_session_rows(conn, delegates + existing)
        return existing, delegates

    existing, delegates = store.write(do)
    if sessions_dir is not None and (existing or delegates):
        remove_session_files(Path(sessions_dir), delegates + existing)
    return len(existing)


def delete_session_if_empty(store: "Store", session_id: str, sessions_dir: Path | None = None) -> bool:
    """Delete a session only if it has no messages, no title and no children."""
    deleted = bool(store.write(lambda conn: conn.execute(
        "DELETE FROM sessions WHERE id = ? AND title IS NULL "
        "AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id) "
        "AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = sessions.id)",
        (session_id,),
    ).rowcount > 0))
    if deleted and sessions_dir is not None:
        remove_session_files(Path(sessions_dir), [session_id])
    return deleted


def sweep(store: "Store", select_sql: str, params: Iterable[Any], sessions_dir: Path | None) -> int:
    """The one bulk delete of the cleanups (prune, empty and ghost sessions): the ids
    ``select_sql`` finds, in one transaction, leaving out sessions an agent holds right now
    (they wait for the next sweep instead of failing all of it). Returns how many went."""
    params = list(params)

    def do(conn: sqlite3.Connection) -> list[str]:
        ids = [row[0] for row in conn.execute(select_sql, params).fetchall()]
        held = {sid for sid, _what, _until in busy_sessions(conn, ids)}
        ids = [sid for sid in ids if sid not in held]
        delete_session_rows(conn, ids)
        return ids

    ids = store.write(do)
    if ids and sessions_dir is not None:
        remove_session_files(Path(sessions_dir), ids)
    return len(ids)
