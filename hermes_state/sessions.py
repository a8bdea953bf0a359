"""Session rows: create, end, reopen, token and cost bookkeeping, the v16 per-session fields,
archive; reading one session, resolving an id, ``state_meta`` (SPEC §4, SS-1 … SS-8; UC-2).

Each function takes a :class:`~hermes_state.store.Store`; ``SessionDB``'s methods of the same
names are these, over its store. A column a store lacks is never named in SQL (UC-1): a
write that needs one refuses with a one-line :class:`~hermes_state.errors.DatabaseError`.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from .deletion import compression_lineage
from .prompts import with_resolved_prompt
from .query import escape_like

if TYPE_CHECKING:  # pragma: no cover
    from .store import Store


# ---------------------------------------------------------------------- writes


def create_session(
    store: "Store",
    session_id: str,
    source: str,
    model: str | None = None,
    model_config: dict | None = None,
    system_prompt: str | None = None,
    user_id: str | None = None,
    parent_session_id: str | None = None,
    cwd: str | None = None,
) -> str:
    """Insert a session (first write wins: an existing id is left unchanged); its id."""
    config = json.dumps(model_config) if model_config else None
    now = time.time()
    columns = "id, source, user_id, model, model_config, system_prompt, parent_session_id, started_at"
    values: tuple = (session_id, source, user_id, model, config, system_prompt, parent_session_id, now)
    if cwd is not None:  # upstream v16's working directory (UC-2)
        store.require_column("sessions", "cwd")
        columns += ", cwd"
        values += (cwd,)
    marks = ", ".join("?" for _ in values)
    store.write(lambda conn: conn.execute(f"INSERT OR IGNORE INTO sessions ({columns}) VALUES ({marks})", values))
    return session_id


def ensure_session(store: "Store", session_id: str, source: str = "unknown", model: str | None = None, **kwargs: Any) -> str:
    """Insert a minimal row if the id is unknown; never modifies an existing row (SS-6).

    ``kwargs`` are :func:`create_session`'s (``model_config``, ``cwd`` …), as upstream v16
    accepts them; returns the id.
    """
    if kwargs:
        return create_session(store, session_id, source, model=model, **kwargs)
    now = time.time()
    store.write(
        lambda conn: conn.execute(
            "INSERT OR IGNORE INTO sessions (id, source, model, started_at) VALUES (?, ?, ?, ?)",
            (session_id, source, model, now),
        )
    )
    return session_id


def end_session(store: "Store", session_id: str, end_reason: str) -> None:
    """Mark a session ended; the first end reason wins (SS-2)."""
    now = time.time()
    store.write(
        lambda conn: conn.execute(
            "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
            (now, end_reason, session_id),
        )
    )


def reopen_session(store: "Store", session_id: str) -> None:
    """Clear ``ended_at`` and ``end_reason`` (SS-3)."""
    store.write(
        lambda conn: conn.execute(
            "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", (session_id,)
        )
    )


#: The columns :func:`update_column` sets (named in SQL: never a caller's text).
SETTABLE_COLUMNS = ("system_prompt", "model", "cwd")


def update_column(store: "Store", session_id: str, column: str, value: Any) -> None:
    """Set one of :data:`SETTABLE_COLUMNS` of a session unconditionally; a store without
    the column (``cwd`` before v16) refuses (UC-5: never a new column)."""
    if column not in SETTABLE_COLUMNS:
        raise ValueError(f"not a settable session column: {column!r}")
    if column == "cwd":
        store.require_column("sessions", column)
    store.write(lambda conn: conn.execute(f"UPDATE sessions SET {column} = ? WHERE id = ?", (value, session_id)))


def update_session_meta(store: "Store", session_id: str, model_config_json: str, model: str | None = None) -> None:
    """Replace ``model_config`` (JSON text) and, when given, the model."""
    store.write(
        lambda conn: conn.execute(
            "UPDATE sessions SET model_config = ?, model = COALESCE(?, model) WHERE id = ?",
            (model_config_json, model, session_id),
        )
    )


_ADD_TOKENS = (
    "UPDATE sessions SET input_tokens = input_tokens + ?, "
    "output_tokens = output_tokens + ?, "
    "cache_read_tokens = cache_read_tokens + ?, "
    "cache_write_tokens = cache_write_tokens + ?, "
    "reasoning_tokens = reasoning_tokens + ?, "
    "estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + COALESCE(?, 0), "
    "actual_cost_usd = CASE WHEN ? IS NULL THEN actual_cost_usd "
    "ELSE COALESCE(actual_cost_usd, 0) + ? END, "
    "api_call_count = COALESCE(api_call_count, 0) + ?, "
)
_SET_TOKENS = (
    "UPDATE sessions SET input_tokens = ?, output_tokens = ?, "
    "cache_read_tokens = ?, cache_write_tokens = ?, reasoning_tokens = ?, "
    "estimated_cost_usd = COALESCE(?, 0), "
    "actual_cost_usd = CASE WHEN ? IS NULL THEN actual_cost_usd ELSE ? END, "
    "api_call_count = ?, "
)
_TOKENS_TAIL = (
    "cost_status = COALESCE(?, cost_status), cost_source = COALESCE(?, cost_source), "
    "pricing_version = COALESCE(?, pricing_version), "
    "billing_provider = COALESCE(billing_provider, ?), "
    "billing_base_url = COALESCE(billing_base_url, ?), "
    "billing_mode = COALESCE(billing_mode, ?), model = COALESCE(model, ?) WHERE id = ?"
)


def update_token_counts(
    store: "Store",
    session_id: str,
    input_tokens: int = 0,
    output_tokens: int = 0,
    model: str | None = None,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    reasoning_tokens: int = 0,
    estimated_cost_usd: float | None = None,
    actual_cost_usd: float | None = None,
    cost_status: str | None = None,
    cost_source: str | None = None,
    pricing_version: str | None = None,
    billing_provider: str | None = None,
    billing_base_url: str | None = None,
    billing_mode: str | None = None,
    api_call_count: int = 0,
    absolute: bool = False,
) -> None:
    """Token and cost bookkeeping (SS-5): per-call deltas added to the session's, or, with
    ``absolute``, cumulative totals put in their place. The billing labels and the model
    are kept once set; the cost labels are replaced when given."""
    params = (
        input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
        estimated_cost_usd, actual_cost_usd, actual_cost_usd, api_call_count,
        cost_status, cost_source, pricing_version, billing_provider, billing_base_url, billing_mode,
        model, session_id,
    )
    sql = (_SET_TOKENS if absolute else _ADD_TOKENS) + _TOKENS_TAIL
    store.write(lambda conn: conn.execute(sql, params))


def set_archived(store: "Store", session_id: str, archived: bool) -> bool:
    """Archive (hide from the default list) or unarchive a session and its whole
    compression lineage, ancestors and continuations alike. True if any row changed."""
    store.require_column("sessions", "archived")
    value = 1 if archived else 0

    def do(conn: sqlite3.Connection) -> bool:
        ids = compression_lineage(conn, session_id)
        if not ids:
            return False
        marks = ",".join("?" for _ in ids)
        return conn.execute(f"UPDATE sessions SET archived = ? WHERE id IN ({marks})", [value, *ids]).rowcount > 0

    return bool(store.write(do))


def set_meta(store: "Store", key: str, value: str | None) -> None:
    store.write(
        lambda conn: conn.execute(
            "INSERT INTO state_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
    )


# ---------------------------------------------------------------------- reads


def get_session(store: "Store", session_id: str) -> dict | None:
    """Every column of one session (v30: the prompt kept by hash back in ``system_prompt``,
    as upstream answers); None for an unknown id."""
    row = store.fetchone("SELECT * FROM sessions WHERE id = ?", (session_id,))
    return with_resolved_prompt(store, dict(row) if row else None)


def get_system_prompt(store: "Store", session_id: str) -> str | None:
    """UC-3: ``sessions.system_prompt``, else the prompt stored once in ``system_prompts``
    (v30) under the session's ``system_prompt_hash``."""
    row = store.fetchone(f"SELECT {store.rules.system_prompt_sql('s')} FROM sessions s WHERE s.id = ?", (session_id,))
    return row[0] if row else None


def resolve_session_id(store: "Store", session_id_or_prefix: str) -> str | None:
    """Exact id, else a unique prefix (SS-8); unknown, ambiguous or blank → None."""
    if not session_id_or_prefix or not str(session_id_or_prefix).strip():
        return None
    value = str(session_id_or_prefix)

    def do(conn: sqlite3.Connection) -> str | None:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (value,)).fetchone():
            return value
        rows = conn.execute(
            "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at DESC LIMIT 2",
            (escape_like(value) + "%",),
        ).fetchall()
        return rows[0][0] if len(rows) == 1 else None

    return store.read(do)


def count_id_prefix(store: "Store", prefix: str) -> int:
    """How many session ids start with ``prefix``, matched as :func:`resolve_session_id`
    matches a prefix (so callers can say "ambiguous: N sessions", CLI-17); blank → 0."""
    if not prefix or not str(prefix).strip():
        return 0
    row = store.fetchone(
        "SELECT COUNT(*) FROM sessions WHERE id LIKE ? ESCAPE '\\'", (escape_like(str(prefix)) + "%",)
    )
    return int(row[0])  # type: ignore[index]


def message_count(store: "Store", session_id: str | None = None) -> int:
    """Messages of one session (every row, as upstream counts), or of the whole store."""
    if session_id:
        return int(store.fetchone("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,))[0])  # type: ignore[index]
    return int(store.fetchone("SELECT COUNT(*) FROM messages")[0])  # type: ignore[index]


def source_counts(store: "Store") -> dict[str, int]:
    """Sessions per source, in one query (used by ``stats`` and the browser's filter)."""
    return {row[0]: int(row[1]) for row in store.fetchall("SELECT source, COUNT(*) FROM sessions GROUP BY source")}


def get_meta(store: "Store", key: str) -> str | None:
    row = store.fetchone("SELECT value FROM state_meta WHERE key = ?", (key,))
    return row[0] if row else None


def last_write_at(store: "Store") -> float | None:
    """When an agent last wrote to the store, by two index seeks: the newest message's
    time (the highest id) or the newest session's start, whichever is later; None when
    neither has one."""

    def do(conn: sqlite3.Connection) -> float | None:
        newest = conn.execute("SELECT timestamp FROM messages ORDER BY id DESC LIMIT 1").fetchone()
        started = conn.execute("SELECT MAX(started_at) FROM sessions").fetchone()
        found = [v for v in (newest and newest[0], started and started[0]) if isinstance(v, (int, float))]
        return float(max(found)) if found else None

    return store.read(do)
