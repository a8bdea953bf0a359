"""Upstream's other lists of sessions, beside the human list of :mod:`hermes_state.listing`:
every session most recently used first (LI-6), the runs of one cron job, a user's Telegram
sessions not bound to a DM topic, and the order of a search by id.

Each reader takes a :class:`~hermes_state.store.Store` and returns upstream's session dicts
(every column, ``last_active``; ``preview`` where upstream gives one; the v30 prompt kept by
hash put back in ``system_prompt``). ``SessionDB``'s methods of the same names are these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .listing.sql import rich_row
from .prompts import with_resolved_prompts

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store


def search_sessions(store: "Store", source: str | None = None, limit: int = 20, offset: int = 0) -> list[dict]:
    """Every session (children included), most recently used first (LI-6)."""
    where = "WHERE s.source = ?" if source else ""
    params: list[Any] = [source] if source else []
    sql = (
        f"SELECT s.*, {store.rules.last_active_sql()} AS last_active FROM sessions s {where} "
        "ORDER BY last_active DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?"
    )
    return with_resolved_prompts(store, [dict(row) for row in store.fetchall(sql, params + [int(limit), int(offset)])])


def _previewed(store: "Store", where: str, order_and_limit: str, params: list[Any]) -> list[dict]:
    rules = store.rules
    rows = store.fetchall(
        f"SELECT s.*, {rules.preview_sql()} AS _preview_raw, {rules.last_active_sql()} AS last_active "
        f"FROM sessions s WHERE {where} ORDER BY {order_and_limit}",
        params,
    )
    return with_resolved_prompts(store, [rich_row(row) for row in rows])


def list_cron_job_runs(store: "Store", job_id: str, limit: int = 20, offset: int = 0) -> list[dict]:
    """Runs of one cron job (sessions ``cron_<job_id>_*`` of source ``cron``), newest
    first, with ``preview`` and ``last_active``; an id range, not a substring scan."""
    low = f"cron_{job_id}_"
    high = low[:-1] + chr(ord(low[-1]) + 1)
    return _previewed(
        store, "s.source = 'cron' AND s.id >= ? AND s.id < ?",
        "s.started_at DESC, s.id DESC LIMIT ? OFFSET ?", [low, high, int(limit), int(offset)],
    )


def unlinked_telegram_sessions(store: "Store", user_id: str, limit: int = 10) -> list[dict]:
    """This user's Telegram sessions not bound to a DM topic, most recently active first
    (every one of them while the store has no bindings table: nothing is bound yet). A
    session binds to one topic whatever the chat, so the chat plays no part."""
    unbound = (
        " AND NOT EXISTS (SELECT 1 FROM telegram_dm_topic_bindings b WHERE b.session_id = s.id)"
        if store.capabilities.has_telegram_topics else ""
    )
    return _previewed(
        store, f"s.source = 'telegram' AND s.user_id = ?{unbound}",
        "last_active DESC, s.started_at DESC LIMIT ?", [str(user_id), int(limit)],
    )


def rank_id_matches(rows: list[dict], needle: str, limit: int) -> list[dict]:
    """The order of a search by id over listed ``rows`` (most recently active first):
    exact matches of the id or the chain's root id first, then prefixes, then the rest."""

    def rank(row: dict) -> int:
        ids = [str(v).lower() for v in (row.get("id"), row.get("_lineage_root_id")) if v]
        if needle in ids:
            return 0
        if any(v.startswith(needle) for v in ids):
            return 1
        return 2

    ordered = sorted(enumerate(rows), key=lambda item: (rank(item[1]), item[0]))
    return [row for _, row in ordered[:limit]]
