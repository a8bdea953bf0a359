"""Housekeeping of a store: prunes (old, empty and ghost sessions), orphaned compression
continuations, VACUUM and its once-a-day automation, FTS index merges (SPEC §10, EX-5,
SS-11, SS-12).

Each function takes a :class:`~hermes_state.store.Store`; ``SessionDB``'s methods of the same
names are these, over its store. Every sweep leaves out the sessions an agent holds right
now (:func:`hermes_state.deletion.sweep`).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .deletion import prunable_sql, sweep
from .sessions import get_meta, set_meta

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------- prunes


def prune_sessions(
    store: "Store", older_than_days: float = 90, source: str | None = None, sessions_dir: Path | None = None
) -> int:
    """Delete ended sessions started before the cutoff; children are orphaned (EX-5)."""
    sql, params = prunable_sql(older_than_days, source)
    return sweep(store, sql, params, sessions_dir)


def prunable_session_ids(store: "Store", older_than_days: float = 90, source: str | None = None) -> list[str]:
    """The ids :func:`prune_sessions` would delete now (for a count or a dry run)."""
    sql, params = prunable_sql(older_than_days, source)
    return [row[0] for row in store.fetchall(sql, params)]


def prunable_totals(store: "Store", older_than_days: float = 90, source: str | None = None) -> tuple[int, int]:
    """How many sessions :func:`prune_sessions` would delete now, and their messages (by
    the sessions' counters), in one statement."""
    sql, params = prunable_sql(older_than_days, source, "COUNT(*), COALESCE(SUM(message_count), 0)")
    sessions, messages = store.fetchone(sql, params)  # type: ignore[misc]
    return int(sessions or 0), int(messages or 0)


def prunable_sessions(
    store: "Store", older_than_days: float = 90, source: str | None = None,
) -> list[tuple[str, str | None, Any]]:
    """``(id, source, title)`` of each session :func:`prune_sessions` would delete now, in
    one statement (a dry run lists them: a whole row read for each, kept until printed,
    took 20 s and 1.1 GB for 150k sessions)."""
    sql, params = prunable_sql(older_than_days, source, "id, source, title")

    def do(conn: sqlite3.Connection) -> list[tuple[str, str | None, Any]]:
        cursor = conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()

    return store.read(do)


def _empty_sessions_sql(store: "Store") -> str:
    sql = "SELECT id FROM sessions WHERE message_count = 0 AND ended_at IS NOT NULL"
    if store.has_session_column("archived"):
        sql += " AND archived = 0"
    return sql


def count_empty_sessions(store: "Store") -> int:
    """Ended, unarchived sessions with no messages (what :func:`delete_empty_sessions`
    would delete)."""
    return int(store.fetchone(f"SELECT COUNT(*) FROM ({_empty_sessions_sql(store)})")[0])  # type: ignore[index]


def delete_empty_sessions(store: "Store", sessions_dir: Path | None = None) -> int:
    """Delete every ended, unarchived session with no messages; children are orphaned."""
    return sweep(store, _empty_sessions_sql(store), (), sessions_dir)


def prune_empty_ghost_sessions(store: "Store", sessions_dir: Path | None = None) -> int:
    """Delete ended ``tui`` sessions older than a day with no title and no messages."""
    return sweep(
        store,
        "SELECT id FROM sessions WHERE source = 'tui' AND title IS NULL "
        "AND ended_at IS NOT NULL AND started_at < ? "
        "AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id)",
        (time.time() - 86400,),
        sessions_dir,
    )


def finalize_orphaned_compression_sessions(store: "Store") -> int:
    """End (``orphaned_compression``) compression continuations older than a week that
    never made an API call and were never ended, keeping their messages; how many."""
    cutoff = time.time() - 7 * 86400
    now = time.time()
    return int(store.write(lambda conn: conn.execute(
        "UPDATE sessions SET ended_at = ?, end_reason = 'orphaned_compression' "
        "WHERE api_call_count = 0 AND end_reason IS NULL AND ended_at IS NULL "
        "AND started_at < ? AND parent_session_id IS NOT NULL "
        "AND EXISTS (SELECT 1 FROM sessions p WHERE p.id = sessions.parent_session_id "
        "AND p.end_reason = 'compression' AND p.ended_at IS NOT NULL) "
        "AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id)",
        (now, cutoff),
    ).rowcount))


# ---------------------------------------------------------------------- the file


def vacuum(store: "Store") -> None:
    """Checkpoint (TRUNCATE, best effort) then VACUUM, outside any transaction (SS-11)."""
    store.check_writable()
    with store.lock:
        conn = store.connection
        store.checkpoint("TRUNCATE")
        conn.execute("VACUUM")


def auto_prune(
    store: "Store",
    retention_days: float = 90,
    min_interval_hours: float = 24,
    *,
    prune: Callable[[float], int] | None = None,
    vacuum_after: Callable[[], None] | None = None,
) -> dict:
    """Prune sessions ended and older than ``retention_days`` at most once per interval
    (``state_meta``'s ``last_auto_prune``), then ``vacuum_after()`` when anything went
    (None: no VACUUM); never raises (SS-12).

    ``prune(days)``: the prune to run (``SessionDB`` passes its own methods, which a
    subclass or a test may replace, as upstream's do); by default :func:`prune_sessions`."""
    result: dict[str, Any] = {"skipped": False, "pruned": 0, "vacuumed": False}
    try:
        now = time.time()
        last = get_meta(store, "last_auto_prune")
        try:
            last_value = float(last) if last is not None else None
        except (TypeError, ValueError):
            last_value = None
        if last_value is not None and now - last_value < min_interval_hours * 3600:
            result["skipped"] = True
            return result
        result["pruned"] = prune(retention_days) if prune else prune_sessions(store, retention_days)
        if vacuum_after is not None and result["pruned"] > 0:
            try:
                vacuum_after()
                result["vacuumed"] = True
            except Exception as exc:
                log.warning("VACUUM after auto-prune failed: %s", exc)
        set_meta(store, "last_auto_prune", str(now))
    except Exception as exc:
        log.warning("auto-prune failed: %s", exc)
        result["error"] = str(exc)
    return result


def optimize_fts(store: "Store") -> int:
    """Merge each FTS index's segments into one (``'optimize'``); returns how many
    indexes were optimized. Search results and snippets do not change."""
    store.check_writable()
    names = [n for n in ("messages_fts", "messages_fts_trigram") if store.fts_table_exists(n)]
    done = 0
    with store.lock:
        conn = store.connection
        for name in names:
            try:
                conn.execute(f"INSERT INTO {name}({name}) VALUES('optimize')")
                done += 1
            except sqlite3.OperationalError as exc:
                log.warning("FTS optimize of %s failed: %s", name, exc)
    return done
