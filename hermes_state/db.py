"""``SessionDB``: the session store, drop-in compatible with upstream Hermes schema v11.

One ``sqlite3`` connection per instance (autocommit, ``check_same_thread=False``), shared by
all threads and serialised by a per-instance lock (CO-9). Every write goes through
``_execute_write`` (WR-1 … WR-5): ``BEGIN IMMEDIATE``, jittered retry on lock contention only,
rollback on any error, a passive checkpoint every 50 writes.

Besides upstream's dict API this class offers a small typed read API for the UI
(``list_summaries``, ``get_summary``, ``get_message_models``, ``lineage_tree``) returning the
pydantic models of :mod:`hermes_state.models`.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from .capabilities import Capabilities
from .deletion import (
    busy_sessions,
    compression_lineage,
    delegate_descendants,
    delete_session_rows,
    prunable_sql,
    remove_session_files,
)
from .errors import DatabaseError, ReadOnlyError, TitleChangedError  # noqa: F401 (ReadOnlyError: re-exported)
from .lineage import (
    ancestors as _lineage_ancestors,
    build_tree as _lineage_build_tree,
    chain as _lineage_chain,
    compression_tip as _lineage_compression_tip,
    descendants as _lineage_descendants,
    resume_target as _lineage_resume_target,
)
from .migrations import (
    parse_schema_columns as _migrations_parse_schema_columns,
    reconcile_columns as _migrations_reconcile_columns,
)
from .paths import default_db_path
from .listing.engine import Lister
from .listing.query import ListQuery
from .listing.recency import RecencyWalk as _RecencyWalk
from .listing.sql import rich_row
from .preview import compute_preview, scrub_memory_context  # noqa: F401 (re-exported)
from .prompts import iter_with_resolved_prompts, with_resolved_prompt, with_resolved_prompts
from .query import escape_like
from .schema import SCHEMA_SQL
from .telegram_topics import (
    bind as _telegram_bind,
    binding as _telegram_binding,
    binding_by_session as _telegram_binding_by_session,
    bindings_for_chat as _telegram_bindings_for_chat,
    disable as _telegram_disable,
    enable as _telegram_enable,
    has_tables as _telegram_has_tables,
    is_enabled as _telegram_is_enabled,
    migrate as _telegram_migrate,
)
from .lifecycle import statuses as lifecycle_statuses
from .unread import is_unread, set_read
from .titles import MAX_TITLE_LENGTH, next_title_from, sanitize_title, split_number_suffix
from .store import (
    CHECKPOINT_EVERY_N_WRITES,
    WRITE_MAX_RETRIES,
    WRITE_RETRY_MAX_S,
    WRITE_RETRY_MIN_S,
    Store,
    describe_open_error,
    open_mode,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


def _dumps_or_none(value: Any) -> str | None:
    """JSON columns: ``json.dumps`` defaults (ASCII escapes) when truthy, else NULL (MS-1)."""
    return json.dumps(value) if value else None


def _tool_call_weight(tool_calls: Any) -> int:
    """MS-2: a list counts its length, any other non-None value counts one."""
    if tool_calls is None:
        return 0
    if isinstance(tool_calls, list):
        return len(tool_calls)
    return 1








#: "No condition" for :meth:`SessionDB.set_session_title`'s ``expected``.
_ANY = object()




class SessionDB:
    """The Hermes session store (``state.db``): upstream's API over a :class:`Store`.

    ``SessionDB(db_path=None)`` opens (creating if needed) the database at ``db_path`` or at
    ``$HERMES_HOME/state.db``, upgrading older upstream schemas in place; ``read_only=True``
    opens with SQLite's ``mode=ro`` and every mutating method raises :class:`ReadOnlyError`.
    How a file is opened, read and written is the store's (:attr:`store`, see
    :class:`hermes_state.store.Store` for ``checkpoint_mode``, ``on_lock_wait`` and the
    immutable snapshot of a read-only directory); this class keeps upstream's names.
    """

    # Upstream's retry figures, as class attributes (a subclass or a test may lower them;
    # they are read when a store is opened).
    _WRITE_MAX_RETRIES = WRITE_MAX_RETRIES
    _WRITE_RETRY_MIN_S = WRITE_RETRY_MIN_S
    _WRITE_RETRY_MAX_S = WRITE_RETRY_MAX_S
    _CHECKPOINT_EVERY_N_WRITES = CHECKPOINT_EVERY_N_WRITES
    MAX_TITLE_LENGTH = MAX_TITLE_LENGTH

    def __init__(
        self,
        db_path: Path | str | None = None,
        *,
        read_only: bool = False,
        checkpoint_mode: str = "PASSIVE",
        on_lock_wait: Callable[[bool], None] | None = None,
    ) -> None:
        path = Path(db_path) if db_path is not None else default_db_path()
        # The store's connection busy-waits 1 s, not SQLite's 30 s default: a short wait plus
        # the jittered retry of its writes breaks writer convoys (WR-4).
        #: The runtime: connection, lock, reads, writes, capabilities, visibility rules.
        self.store = Store(
            path, read_only=read_only, checkpoint_mode=checkpoint_mode, on_lock_wait=on_lock_wait,
            write_max_retries=self._WRITE_MAX_RETRIES,
        )
        #: The human list of this store: pages, orders, pins, counts, the recency index.
        self.lister = Lister(self.store)

    # ------------------------------------------------------------------ the store's state

    db_path = property(lambda self: self.store.path, doc="The database file.")
    read_only = property(lambda self: self.store.read_only)
    immutable = property(lambda self: self.store.immutable)
    opened_version = property(lambda self: self.store.opened_version,
                              doc="Schema version found on disk when opened (None: created).")
    compat_views = property(lambda self: self.store.compat_views)
    warnings = property(lambda self: self.store.warnings)
    checkpoint_mode = property(lambda self: self.store.checkpoint_mode)
    capabilities = property(lambda self: self.store.capabilities)
    rules = property(lambda self: self.store.rules)

    @property
    def on_lock_wait(self) -> Callable[[bool], None] | None:
        return self.store.on_lock_wait

    @on_lock_wait.setter
    def on_lock_wait(self, callback: Callable[[bool], None] | None) -> None:
        self.store.on_lock_wait = callback

    # Upstream's suites (and our bench's instrumentation) reach these private names.
    _lock = property(lambda self: self.store.lock)
    _fts_enabled = property(lambda self: self.store.fts_enabled)

    @property
    def _conn(self) -> sqlite3.Connection | None:
        return self.store.raw_connection

    @_conn.setter
    def _conn(self, conn: sqlite3.Connection) -> None:
        self.store.swap_connection(conn)

    def refresh_capabilities(self) -> Capabilities:
        return self.store.refresh_capabilities()

    def _execute_write(self, fn: Callable[[sqlite3.Connection], T], *, count: bool = True) -> T:
        return self.store.write(fn, count=count)

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return self.store.read(fn)

    def _fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return self.store.fetchall(sql, params)

    def _fetchone(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        return self.store.fetchone(sql, params)

    def _require_conn(self) -> sqlite3.Connection:
        return self.store.connection

    def _check_writable(self) -> None:
        self.store.check_writable()

    def _checkpoint(self, mode: str = "PASSIVE") -> None:
        self.store.checkpoint(mode)

    def _one_schema(self, fn: Callable[[], T]) -> T:
        return self.store.one_schema(fn)

    def _read_snapshot(self, fn: Callable[[], T]) -> T:
        return self.store.read_snapshot(fn)

    def _has_session_column(self, name: str) -> bool:
        return self.store.has_session_column(name)

    def _has_message_column(self, name: str) -> bool:
        return self.store.has_message_column(name)

    def _fts_table_exists(self, name: str) -> bool:
        return self.store.fts_table_exists(name)

    def _active_clause(self, include_inactive: bool, alias: str = "", *, replay: bool = False) -> str:
        return self.store.active_clause(include_inactive, alias, replay=replay)

    def interrupt(self) -> None:
        """Stop the statement running on this connection (from any thread)."""
        self.store.interrupt()

    def close(self) -> None:
        """Keep the recency index for the next run when asked (:attr:`recency_cache`),
        checkpoint (best effort) and close."""
        self.store.close()

    def __enter__(self) -> "SessionDB":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def data_version(self) -> int:
        """``PRAGMA data_version``: changes when another connection commits (WR-8)."""
        return self.store.data_version()

    # ------------------------------------------------------------------ the list (Lister's)

    @property
    def extra_pins(self) -> frozenset[str]:
        """Pins kept in our settings file, for a store without ``sessions.pinned``."""
        return self.lister.extra_pins

    @extra_pins.setter
    def extra_pins(self, value: frozenset[str]) -> None:
        self.lister.extra_pins = value

    @property
    def recency_cache(self) -> Path | None:
        """The file keeping this reader's recency index between runs (see :class:`Lister`)."""
        return self.lister.recency_cache

    @recency_cache.setter
    def recency_cache(self, path: Path | None) -> None:
        self.lister.recency_cache = path

    @property
    def recency_guessed(self) -> bool:
        return self.lister.recency_guessed

    def pinned_ids(self) -> frozenset[str]:
        return self.lister.pinned_ids()

    def build_recency(self) -> _RecencyWalk:
        return self.lister.build_recency()

    def adopt_recency(self, walk: _RecencyWalk) -> bool:
        return self.lister.adopt_recency(walk)

    def assume_pins(self, pins: frozenset[str]) -> frozenset[str] | None:
        return self.lister.assume_pins(pins)

    def list_sessions_rich(
        self,
        source: str | None = None,
        exclude_sources: list[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        include_children: bool = False,
        min_message_count: int = 0,
        project_compression_tips: bool = True,
        order_by_last_active: bool = False,
        include_archived: bool = False,
        archived_only: bool = False,
        id_query: str | None = None,
        include_hidden: bool = False,
        include_delegates: bool = False,
        workspace: str | None = None,
        _columns: str | None = None,
        provisional: bool = False,
    ) -> list[dict]:
        """Sessions newest-started first with ``preview`` and ``last_active`` (upstream's
        list, LI-2 … LI-5): upstream's options as a :class:`ListQuery`, read by
        :meth:`Lister.rows`. Archived sessions only with ``include_archived`` (or only them,
        ``archived_only``); ``order_by_last_active`` orders by the newest activity along each
        compression chain; ``id_query`` keeps rows whose id, or an id along their chain,
        contains it."""
        query = ListQuery.from_options(
            source, exclude_sources, include_children=include_children, min_message_count=min_message_count,
            include_archived=include_archived, archived_only=archived_only, include_hidden=include_hidden,
            include_delegates=include_delegates, workspace=workspace, order_by_last_active=order_by_last_active,
        )
        # One snapshot: the rows and the prompts they point at agree (and the schema is
        # checked once).
        return self.store.read_snapshot(lambda: with_resolved_prompts(self.store, self.lister.rows(
            query, limit, offset, id_query=id_query, project=project_compression_tips, columns=_columns,
            provisional=provisional,
        )))

    def iter_listed(self, query: ListQuery, limit: int = 20, *, chunk: int = 500, brief: bool = False) -> Iterator[dict]:
        """:meth:`Lister.iter_rows`: the rows of a long list, read a chunk at a time."""
        rows = self.lister.iter_rows(query, limit, chunk=chunk, brief=brief)
        return rows if brief else iter_with_resolved_prompts(self.store, rows, chunk)

    def rank_listed(self, query: ListQuery) -> list[str]:
        return self.lister.rank_listed(query)

    def summaries_of(self, conversation_ids: list[str], *, include_delegates: bool = False) -> list:
        return self.lister.summaries_of(conversation_ids, include_delegates=include_delegates)

    def list_summaries(self, query: ListQuery, limit: int = 50, offset: int = 0, *, provisional: bool = False) -> list:
        """Typed rows of ``query``'s list (:meth:`Lister.list_summaries`)."""
        return self.lister.list_summaries(query, limit, offset, provisional=provisional)

    def count_listed(self, query: ListQuery) -> int:
        return self.lister.count_listed(query)

    def get_summary(self, session_id: str):
        return self.lister.get_summary(session_id)

    def get_summaries(self, session_ids: Iterable[str]) -> list:
        return self.lister.get_summaries(session_ids)













    # ------------------------------------------------------------------ static helpers

    @staticmethod
    def _parse_schema_columns(schema_sql: str) -> dict[str, dict[str, str]]:
        return _migrations_parse_schema_columns(schema_sql)

    def _reconcile_columns(self, cursor) -> list[str]:
        return _migrations_reconcile_columns(cursor, _migrations_parse_schema_columns(SCHEMA_SQL))

    @staticmethod
    def sanitize_title(title: str | None) -> str | None:
        return sanitize_title(title)

    @staticmethod
    def _sanitize_fts5_query(query: str) -> str:
        from .query import sanitize_fts5_query

        return sanitize_fts5_query(query)

    @staticmethod
    def _contains_cjk(text: str) -> bool:
        from .query import contains_cjk

        return contains_cjk(text)

    @staticmethod
    def _count_cjk(text: str) -> int:
        from .query import count_cjk

        return count_cjk(text)

    @staticmethod
    def _is_cjk_codepoint(cp: int) -> bool:
        from .query import is_cjk_codepoint

        return is_cjk_codepoint(cp)

    # ------------------------------------------------------------------ sessions

    def create_session(
        self,
        session_id: str,
        source: str,
        model: str | None = None,
        model_config: dict | None = None,
        system_prompt: str | None = None,
        user_id: str | None = None,
        parent_session_id: str | None = None,
        cwd: str | None = None,
    ) -> str:
        """Insert a session (first write wins: an existing id is left unchanged)."""
        config = json.dumps(model_config) if model_config else None
        now = time.time()
        columns = "id, source, user_id, model, model_config, system_prompt, parent_session_id, started_at"
        values: tuple = (session_id, source, user_id, model, config, system_prompt, parent_session_id, now)
        if cwd is not None:  # upstream v16's working directory (UC-2)
            self.store.require_column("sessions", "cwd")
            columns += ", cwd"
            values += (cwd,)
        marks = ", ".join("?" for _ in values)

        def do(conn: sqlite3.Connection) -> None:
            conn.execute(f"INSERT OR IGNORE INTO sessions ({columns}) VALUES ({marks})", values)

        self._execute_write(do)
        return session_id

    def ensure_session(
        self, session_id: str, source: str = "unknown", model: str | None = None, **kwargs: Any
    ) -> str:
        """Insert a minimal row if the id is unknown; never modifies an existing row (SS-6).

        ``kwargs`` are :meth:`create_session`'s (``model_config``, ``cwd`` …), as upstream v16
        accepts them; returns the id.
        """
        if kwargs:
            return self.create_session(session_id, source, model=model, **kwargs)
        now = time.time()
        self._execute_write(
            lambda conn: conn.execute(
                "INSERT OR IGNORE INTO sessions (id, source, model, started_at) VALUES (?, ?, ?, ?)",
                (session_id, source, model, now),
            )
        )
        return session_id

    def end_session(self, session_id: str, end_reason: str) -> None:
        """Mark a session ended; the first end reason wins (SS-2)."""
        now = time.time()
        self._execute_write(
            lambda conn: conn.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
                (now, end_reason, session_id),
            )
        )

    def reopen_session(self, session_id: str) -> None:
        """Clear ``ended_at`` and ``end_reason`` (SS-3)."""
        self._execute_write(
            lambda conn: conn.execute(
                "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?",
                (session_id,),
            )
        )

    def update_system_prompt(self, session_id: str, system_prompt: str | None) -> None:
        self._execute_write(
            lambda conn: conn.execute(
                "UPDATE sessions SET system_prompt = ? WHERE id = ?", (system_prompt, session_id)
            )
        )

    def update_token_counts(
        self,
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
        """Token and cost bookkeeping (SS-5): per-call deltas, or cumulative totals."""
        if absolute:
            sql = (
                "UPDATE sessions SET input_tokens = ?, output_tokens = ?, "
                "cache_read_tokens = ?, cache_write_tokens = ?, reasoning_tokens = ?, "
                "estimated_cost_usd = COALESCE(?, 0), "
                "actual_cost_usd = CASE WHEN ? IS NULL THEN actual_cost_usd ELSE ? END, "
                "api_call_count = ?, "
            )
        else:
            sql = (
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
        sql += (
            "cost_status = COALESCE(?, cost_status), cost_source = COALESCE(?, cost_source), "
            "pricing_version = COALESCE(?, pricing_version), "
            "billing_provider = COALESCE(billing_provider, ?), "
            "billing_base_url = COALESCE(billing_base_url, ?), "
            "billing_mode = COALESCE(billing_mode, ?), model = COALESCE(model, ?) WHERE id = ?"
        )
        params = (
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_write_tokens,
            reasoning_tokens,
            estimated_cost_usd,
            actual_cost_usd,
            actual_cost_usd,
            api_call_count,
            cost_status,
            cost_source,
            pricing_version,
            billing_provider,
            billing_base_url,
            billing_mode,
            model,
            session_id,
        )
        self._execute_write(lambda conn: conn.execute(sql, params))

    def get_session(self, session_id: str) -> dict | None:
        # v30: the prompt kept by hash comes back in system_prompt, as upstream answers.
        row = self._fetchone("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return with_resolved_prompt(self.store, dict(row) if row else None)

    def resolve_session_id(self, session_id_or_prefix: str) -> str | None:
        """Exact id, else a unique prefix (SS-8); unknown, ambiguous or blank → None."""
        if not session_id_or_prefix or not str(session_id_or_prefix).strip():
            return None
        value = str(session_id_or_prefix)

        def do(conn: sqlite3.Connection) -> str | None:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (value,)).fetchone():
                return value
            rows = conn.execute(
                "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' "
                "ORDER BY started_at DESC LIMIT 2",
                (escape_like(value) + "%",),
            ).fetchall()
            return rows[0][0] if len(rows) == 1 else None

        return self._read(do)

    def count_id_prefix(self, prefix: str) -> int:
        """How many session ids start with ``prefix``, matched as :meth:`resolve_session_id`
        matches a prefix (so callers can say "ambiguous: N sessions", CLI-17); blank → 0."""
        if not prefix or not str(prefix).strip():
            return 0
        row = self._fetchone(
            "SELECT COUNT(*) FROM sessions WHERE id LIKE ? ESCAPE '\\'",
            (escape_like(str(prefix)) + "%",),
        )
        return int(row[0])

    def session_count(
        self,
        source: str | None = None,
        min_message_count: int = 0,
        include_archived: bool = False,
        archived_only: bool = False,
        exclude_children: bool = False,
        exclude_sources: list[str] | None = None,
    ) -> int:
        """How many sessions; archived ones only when asked (upstream v16). With
        ``exclude_children`` only those :meth:`list_sessions_rich` would list."""
        query = ListQuery.from_options(
            source, exclude_sources, include_children=not exclude_children, min_message_count=min_message_count,
            include_archived=include_archived, archived_only=archived_only,
        )
        where, params = self.lister.filters(query)
        return int(self._fetchone(f"SELECT COUNT(*) FROM sessions s {where}", params)[0])



    def message_count(self, session_id: str | None = None) -> int:
        if session_id:
            return int(
                self._fetchone("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,))[0]
            )
        return int(self._fetchone("SELECT COUNT(*) FROM messages")[0])

    def source_counts(self) -> dict[str, int]:
        """Sessions per source, in one query (used by ``stats`` and the browser's filter)."""
        rows = self._fetchall("SELECT source, COUNT(*) FROM sessions GROUP BY source")
        return {row[0]: int(row[1]) for row in rows}

    def get_meta(self, key: str) -> str | None:
        row = self._fetchone("SELECT value FROM state_meta WHERE key = ?", (key,))
        return row[0] if row else None

    def set_meta(self, key: str, value: str | None) -> None:
        self._execute_write(
            lambda conn: conn.execute(
                "INSERT INTO state_meta (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
        )

    def vacuum(self) -> None:
        """Checkpoint (TRUNCATE, best effort) then VACUUM, outside any transaction (SS-11)."""
        self._check_writable()
        with self._lock:
            conn = self._require_conn()
            self._checkpoint("TRUNCATE")
            conn.execute("VACUUM")

    def maybe_auto_prune_and_vacuum(
        self,
        retention_days: int = 90,
        min_interval_hours: int = 24,
        vacuum: bool = True,
        sessions_dir: Path | None = None,
    ) -> dict:
        """Prune old ended sessions at most once per interval; never raises (SS-12)."""
        result: dict[str, Any] = {"skipped": False, "pruned": 0, "vacuumed": False}
        try:
            now = time.time()
            last = self.get_meta("last_auto_prune")
            try:
                last_value = float(last) if last is not None else None
            except (TypeError, ValueError):
                last_value = None
            if last_value is not None and now - last_value < min_interval_hours * 3600:
                result["skipped"] = True
                return result
            result["pruned"] = self.prune_sessions(
                older_than_days=retention_days, sessions_dir=sessions_dir
            )
            if vacuum and result["pruned"] > 0:
                try:
                    self.vacuum()
                    result["vacuumed"] = True
                except Exception as exc:
                    log.warning("VACUUM after auto-prune failed: %s", exc)
            self.set_meta("last_auto_prune", str(now))
        except Exception as exc:
            log.warning("auto-prune failed: %s", exc)
            result["error"] = str(exc)
        return result

    # ------------------------------------------------------------------ messages

    def append_message(
        self,
        session_id: str,
        role: str,
        content: str | None = None,
        tool_name: str | None = None,
        tool_calls: Any = None,
        tool_call_id: str | None = None,
        token_count: int | None = None,
        finish_reason: str | None = None,
        reasoning: str | None = None,
        reasoning_content: str | None = None,
        reasoning_details: Any = None,
        codex_reasoning_items: Any = None,
        codex_message_items: Any = None,
        platform_message_id: str | None = None,
        observed: bool = False,
        timestamp: Any = None,
    ) -> int:
        """Insert one message and bump the session's counters in the same transaction.

        Upstream v16's extras: ``platform_message_id`` (the messaging platform's own id),
        ``observed`` and an explicit ``timestamp`` (epoch number or datetime; an invalid one
        is ignored).
        """
        if content is not None and not isinstance(content, str):
            raise TypeError(f"content must be str or None, not {type(content).__name__}")
        values = (
            session_id,
            role,
            content,
            tool_call_id,
            _dumps_or_none(tool_calls),
            tool_name,
            time.time(),
            token_count,
            finish_reason,
            reasoning,
            reasoning_content,
            _dumps_or_none(reasoning_details),
            _dumps_or_none(codex_reasoning_items),
            _dumps_or_none(codex_message_items),
        )
        if timestamp is not None:
            explicit = _epoch_or_none(timestamp)
            if explicit is not None:
                values = values[:6] + (explicit,) + values[7:]
        sql = _INSERT_MESSAGE_SQL
        if platform_message_id is not None or observed:
            sql, values = self._with_v16_message_columns(sql, [values], [(platform_message_id, observed)])
            values = values[0]
        weight = _tool_call_weight(tool_calls)

        def do(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(sql, values)
            conn.execute(
                "UPDATE sessions SET message_count = message_count + 1, "
                "tool_call_count = tool_call_count + ? WHERE id = ?",
                (weight, session_id),
            )
            return int(cursor.lastrowid)

        return self._execute_write(do)

    def replace_messages(self, session_id: str, messages: list[dict]) -> None:
        """Atomically replace a session's transcript (MS-3)."""
        t0 = time.time()
        rows = []
        calls = 0
        for index, msg in enumerate(messages):
            role = msg.get("role", "unknown")
            assistant = role == "assistant"
            content = msg.get("content")
            if content is not None and not isinstance(content, str):
                # As append_message (MS-1): refused before anything is written.
                raise TypeError(f"message {index}: content must be str or None, not {type(content).__name__}")
            tool_calls = msg.get("tool_calls")
            calls += _tool_call_weight(tool_calls)
            rows.append(
                (
                    session_id,
                    role,
                    content,
                    msg.get("tool_call_id"),
                    _dumps_or_none(tool_calls),
                    msg.get("tool_name"),
                    t0 + index * 1e-6,
                    msg.get("token_count"),
                    msg.get("finish_reason"),
                    msg.get("reasoning") if assistant else None,
                    msg.get("reasoning_content") if assistant else None,
                    _dumps_or_none(msg.get("reasoning_details")) if assistant else None,
                    _dumps_or_none(msg.get("codex_reasoning_items")) if assistant else None,
                    _dumps_or_none(msg.get("codex_message_items")) if assistant else None,
                )
            )
        # Upstream v16's extras: an explicit timestamp, the platform's message id (also read
        # from ``message_id``) and ``observed``. Timestamps stay strictly increasing.
        extras = [
            (msg.get("platform_message_id") or msg.get("message_id"), bool(msg.get("observed")))
            for msg in messages
        ]
        explicit = [_epoch_or_none(msg.get("timestamp")) for msg in messages]
        if any(t is not None for t in explicit):
            now = t0
            for index, stamp in enumerate(explicit):
                value = stamp if stamp is not None else now
                rows[index] = rows[index][:6] + (value,) + rows[index][7:]
                now = max(now + 1e-6, value + 1e-6)
        sql = _INSERT_MESSAGE_SQL
        if any(pid is not None or seen for pid, seen in extras):
            sql, rows = self._with_v16_message_columns(sql, rows, extras)

        def do(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            conn.execute(
                "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?",
                (session_id,),
            )
            conn.executemany(sql, rows)
            conn.execute(
                "UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?",
                (len(rows), calls, session_id),
            )

        self._execute_write(do)

    def clear_messages(self, session_id: str) -> None:
        """Delete a session's messages and zero its counters; the session stays (MS-7)."""

        def do(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            conn.execute(
                "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?",
                (session_id,),
            )

        self._execute_write(do)

    def _with_v16_message_columns(
        self, sql: str, rows: list[tuple], extras: list[tuple[Any, bool]]
    ) -> tuple[str, list[tuple]]:
        """Extend the message INSERT with ``platform_message_id`` and ``observed``."""
        self.store.require_column("messages", "platform_message_id")
        self.store.require_column("messages", "observed")
        sql = sql.replace(
            "codex_message_items) VALUES (", "codex_message_items, platform_message_id, observed) VALUES (?, ?, "
        )
        return sql, [row + (pid, 1 if seen else 0) for row, (pid, seen) in zip(rows, extras)]

    def get_messages(self, session_id: str, include_inactive: bool = False) -> list[dict]:
        """Every column of every message, ordered by ``(timestamp, id)``; tool_calls decoded.

        Rewound messages (``active = 0``, UC-3) only with ``include_inactive=True``.
        """
        rows = self._fetchall(
            f"SELECT * FROM messages WHERE session_id = ?{self._active_clause(include_inactive)} "
            "ORDER BY timestamp, id",
            (session_id,),
        )
        return [_decode_message_row(row) for row in rows]

    def get_messages_as_conversation(
        self,
        session_id: str,
        include_ancestors: bool = False,
        include_inactive: bool = False,
        *,
        without_scaffolding: bool = False,
    ) -> list[dict]:
        """Replayable chat messages (MS-5), optionally for the whole root-to-session chain;
        rewound messages only with ``include_inactive=True``. ``without_scaffolding`` leaves
        out ``display_kind = 'hidden'`` rows too (a recap shows none of them, UC-3)."""
        if include_ancestors:
            ids = self.get_session_chain(session_id)
        else:
            ids = [session_id]
        placeholders = ",".join("?" for _ in ids)
        scaffolding = (
            " AND (display_kind IS NULL OR display_kind != 'hidden')"
            if without_scaffolding and self._has_message_column("display_kind") else ""
        )
        rows = self._fetchall(
            f"SELECT * FROM messages WHERE session_id IN ({placeholders})"
            f"{self._active_clause(include_inactive, replay=True)}{scaffolding} ORDER BY timestamp, id",
            ids,
        )
        conversation = [_conversation_message(row) for row in rows]
        if include_ancestors and len(ids) > 1:
            conversation = _drop_replayed_prompts(conversation)
        return conversation

    # ------------------------------------------------------------------ titles

    def set_session_title(self, session_id: str, title: str | None, *, expected: Any = _ANY) -> bool:
        """Set (or clear, with an empty title) a session's title; titles are unique (TI-2).

        Where the store has ``title_source`` (UC-5), a title set here is a person's choice:
        ``'user'`` (cleared with the title). With ``expected`` (the title the person saw,
        None for untitled) the rename happens only if that is still the title; otherwise
        :class:`~hermes_state.errors.TitleChangedError` says what it is now and nothing
        changes (two browsers renaming one session never silently lose a rename)."""
        cleaned = sanitize_title(title)
        source = ", title_source = ?" if self._has_session_column("title_source") and not self.read_only else ""

        def do(conn: sqlite3.Connection) -> bool:
            if expected is not _ANY:
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
            return self._execute_write(do)
        except sqlite3.IntegrityError as exc:
            # Another process took the title between our check and the UPDATE.
            other = self._fetchone(
                "SELECT id FROM sessions WHERE title = ? AND id != ?", (cleaned, session_id)
            )
            owner = f"session {other[0]}" if other else "another session"
            raise ValueError(f"Title '{cleaned}' is already in use by {owner}") from exc

    def get_system_prompt(self, session_id: str) -> str | None:
        """UC-3: ``sessions.system_prompt``, else the prompt stored once in ``system_prompts``
        (v30) under the session's ``system_prompt_hash``."""
        row = self._fetchone(
            f"SELECT {self.rules.system_prompt_sql('s')} FROM sessions s WHERE s.id = ?", (session_id,)
        )
        return row[0] if row else None

    def get_session_title(self, session_id: str) -> str | None:
        row = self._fetchone("SELECT title FROM sessions WHERE id = ?", (session_id,))
        return row[0] if row else None

    def get_session_by_title(self, title: str) -> dict | None:
        row = self._fetchone("SELECT * FROM sessions WHERE title = ?", (title,))
        return with_resolved_prompt(self.store, dict(row) if row else None)

    def resolve_session_by_title(self, title: str) -> str | None:
        """The latest session of a title lineage: newest ``title #N``, else ``title`` (TI-5)."""

        def do(conn: sqlite3.Connection) -> str | None:
            exact = conn.execute("SELECT id FROM sessions WHERE title = ?", (title,)).fetchone()
            numbered = conn.execute(
                "SELECT id FROM sessions WHERE title LIKE ? ESCAPE '\\' "
                "ORDER BY started_at DESC LIMIT 1",
                (escape_like(title) + " #%",),
            ).fetchone()
            if numbered:
                return numbered[0]
            return exact[0] if exact else None

        return self._read(do)

    def get_next_title_in_lineage(self, base_title: str) -> str:
        """``"name"`` → ``"name #N+1"`` given the titles already in use (TI-6)."""
        base, _ = split_number_suffix(base_title)
        rows = self._fetchall(
            "SELECT title FROM sessions WHERE title = ? OR title LIKE ? ESCAPE '\\'",
            (base, escape_like(base) + " #%"),
        )
        return next_title_from(base, [row[0] for row in rows])

    # ------------------------------------------------------------------ listing














    def search_sessions(self, source: str | None = None, limit: int = 20, offset: int = 0) -> list[dict]:
        """Every session (children included), most recently used first (LI-6)."""
        where = "WHERE s.source = ?" if source else ""
        params: list[Any] = [source] if source else []
        sql = (
            f"SELECT s.*, {self.rules.last_active_sql()} AS last_active FROM sessions s {where} "
            "ORDER BY last_active DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?"
        )
        return with_resolved_prompts(self.store, [dict(row) for row in self._fetchall(sql, params + [int(limit), int(offset)])])

    # ------------------------------------------------------------------ lineage

    def get_compression_tip(self, session_id: str) -> str:
        """Follow compression continuations to the live tip (LI-7)."""
        return self._read(lambda conn: _lineage_compression_tip(conn, session_id))

    def resolve_resume_session_id(self, session_id: str) -> str:
        """Redirect an empty compression head to the first descendant with messages (LI-8)."""
        if not session_id:
            return session_id
        try:
            return self._read(lambda conn: _lineage_resume_target(conn, session_id))
        except sqlite3.Error:
            return session_id

    def get_ancestors(self, session_id: str) -> list[str]:
        """The session and its ancestors, nearest first, cycle-safe (LI-10)."""
        return self._read(lambda conn: _lineage_ancestors(conn, session_id))

    def get_descendants(self, session_id: str) -> list[str]:
        """The session and its descendants, breadth by depth, cycle-safe (LI-11)."""
        return self._read(lambda conn: _lineage_descendants(conn, session_id))

    def get_session_chain(self, session_id: str) -> list[str]:
        """``[root, …, parent, session]`` following parent links upward (LI-12)."""
        if not session_id:
            return [session_id]
        return self._read(lambda conn: _lineage_chain(conn, session_id))

    def get_lineage_root(self, session_id: str) -> str:
        """The conversation root of a session (XR-2): top of the parent chain, loop-safe."""
        return self.get_session_chain(session_id)[0] if session_id else session_id

    def resolve_session_reference(self, name_or_id: str) -> str | None:
        """A user-supplied name or id → the session to show or resume (LI-9).

        Exact id, else a title lineage (TI-5), projected forward to the compression tip.
        """
        if not name_or_id:
            return None
        target = name_or_id if self.get_session(name_or_id) else self.resolve_session_by_title(name_or_id)
        if target is None:
            return None
        return self.get_compression_tip(target)

    # ------------------------------------------------------------------ delete / prune

    def delete_session(self, session_id: str, sessions_dir: Path | None = None) -> bool:
        """Delete a session and its messages, orphaning its children (EX-4, LI-14)."""

        def do(conn: sqlite3.Connection) -> list[str] | None:
            if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                return None
            # Upstream v16: delegate sub-agent runs (``_delegate_from``) go with their parent.
            delegates = delegate_descendants(conn, [session_id])
            delete_session_rows(conn, delegates + [session_id])
            return delegates

        delegates = self._execute_write(do)
        deleted = delegates is not None
        if deleted and sessions_dir is not None:
            remove_session_files(Path(sessions_dir), list(delegates) + [session_id])
        return deleted

    def prune_sessions(
        self,
        older_than_days: float = 90,
        source: str | None = None,
        sessions_dir: Path | None = None,
    ) -> int:
        """Delete ended sessions started before the cutoff; children are orphaned (EX-5)."""
        sql, params = prunable_sql(older_than_days, source)
        return self._sweep(sql, params, sessions_dir)

    def _sweep(self, select_sql: str, params: Iterable[Any], sessions_dir: Path | None) -> int:
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

        ids = self._execute_write(do)
        if ids and sessions_dir is not None:
            remove_session_files(Path(sessions_dir), ids)
        return len(ids)

    def prunable_session_ids(self, older_than_days: float = 90, source: str | None = None) -> list[str]:
        """The ids :meth:`prune_sessions` would delete now (for a count or a dry run)."""
        sql, params = prunable_sql(older_than_days, source)
        return [row[0] for row in self._fetchall(sql, params)]

    def prunable_totals(self, older_than_days: float = 90, source: str | None = None) -> tuple[int, int]:
        """How many sessions :meth:`prune_sessions` would delete now, and their messages (by
        the sessions' counters), in one statement."""
        sql, params = prunable_sql(older_than_days, source, "COUNT(*), COALESCE(SUM(message_count), 0)")
        sessions, messages = self._fetchone(sql, params)
        return int(sessions or 0), int(messages or 0)

    def last_write_at(self) -> float | None:
        """When an agent last wrote to the store, by two index seeks: the newest message's
        time (the highest id) or the newest session's start, whichever is later; None when
        neither has one."""

        def do(conn: sqlite3.Connection) -> float | None:
            newest = conn.execute("SELECT timestamp FROM messages ORDER BY id DESC LIMIT 1").fetchone()
            started = conn.execute("SELECT MAX(started_at) FROM sessions").fetchone()
            found = [v for v in (newest and newest[0], started and started[0]) if isinstance(v, (int, float))]
            return float(max(found)) if found else None

        return self._read(do)

    def prunable_sessions(
        self, older_than_days: float = 90, source: str | None = None,
    ) -> list[tuple[str, str | None, Any]]:
        """``(id, source, title)`` of each session :meth:`prune_sessions` would delete now, in
        one statement (a dry run lists them: a whole row read for each, kept until printed,
        took 20 s and 1.1 GB for 150k sessions)."""
        sql, params = prunable_sql(older_than_days, source, "id, source, title")

        def do(conn: sqlite3.Connection) -> list[tuple[str, str | None, Any]]:
            cursor = conn.cursor()
            cursor.row_factory = None
            return cursor.execute(sql, params).fetchall()

        return self._read(do)

    # ------------------------------------------------------------------ export

    def export_session(self, session_id: str) -> dict | None:
        """``{**session, "messages": [...]}`` (EX-1); None for an unknown id.

        The row and the messages are read in one snapshot: a session exported while an
        agent appends to it carries exactly the messages its ``message_count`` counts.
        """

        def read() -> dict | None:
            session = self.get_session(session_id)
            if session is None:
                return None
            return {**self._with_prompt(session), "messages": self.get_messages(session_id)}

        return self._read_snapshot(read)

    def _with_prompt(self, session: dict) -> dict:
        """UC-3 for exports: the system prompt travels with the session even where the store
        keeps it once, by hash, in ``system_prompts`` (v30); import puts it back there."""
        if session.get("system_prompt") is None and session.get("system_prompt_hash"):
            return {**session, "system_prompt": self.get_system_prompt(session["id"])}
        return session

    def export_all(self, source: str | None = None) -> list[dict]:
        """Every session, most recently used first, with its messages (EX-2: at most
        100000 sessions, as upstream's ``search_sessions(source, limit=100000)``)."""
        return list(self.iter_export_all(source, limit=100000))

    def iter_export_all(self, source: str | None = None, limit: int | None = None):
        """Like :meth:`export_all`, one session at a time, and every session unless ``limit``.

        The streaming exports (CLI, browser) use this without a limit: "every session" must
        not stop silently at export_all's 100000. The order (most recently used first) is
        read once, as ids only, so memory is bounded by one session and sessions written
        meanwhile neither repeat nor shift others; a session deleted meanwhile is skipped.
        """
        where = "WHERE s.source = ?" if source else ""
        params: list[Any] = [source] if source else []
        sql = (
            f"SELECT s.id FROM sessions s {where} "
            f"ORDER BY {self.rules.last_active_sql()} DESC, s.started_at DESC, s.id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        ids = [row[0] for row in self._fetchall(sql, params)]
        one = f"SELECT s.*, {self.rules.last_active_sql()} AS last_active FROM sessions s WHERE s.id = ?"

        def read(session_id: str) -> dict | None:
            row = self._fetchone(one, (session_id,))
            if row is None:
                return None
            return {**self._with_prompt(dict(row)), "messages": self.get_messages(session_id)}

        for session_id in ids:
            # one snapshot per session (row and messages agree), none held across the yield
            obj = self._read_snapshot(lambda: read(session_id))
            if obj is not None:
                yield obj

    def stats(self) -> dict:
        """Figures for ``hermes sessions stats`` (EX-7)."""
        size = self.db_path.stat().st_size if self.db_path.exists() else None

        def read() -> tuple[dict[str, int], int]:
            # UC-3: rewound messages are not counted (compacted history is).
            messages = self._fetchone(f"SELECT COUNT(*) FROM messages m WHERE {self.rules.visible('m')}")[0]
            return self.source_counts(), int(messages)

        # One snapshot, and the total is the sum of the per-source lines: every session the
        # store holds (archived and hidden ones too), so the printed figures always add up
        # while a gateway commits.
        sources, messages = self._read_snapshot(read)
        return {
            "total_sessions": sum(sources.values()),
            "total_messages": messages,
            "sources": sources,
            "db_size_bytes": size,
        }

    # ------------------------------------------------------------------ search

    def search_messages(
        self,
        query: str,
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> list[dict]:
        """Full-text search over every message (SPEC §9); never raises on query text.

        Rewound messages (``active = 0``) are never found (UC-3). Without FTS5 (see
        ``_probe_fts5``) nothing is found, as upstream.
        """
        if not self._fts_enabled:
            return []
        from .search import search_messages

        # The schema cookie looked up once, not at each of the call's three looks at the
        # capabilities (a search that finds nothing: 72.7 -> 67.5 us; upstream's one statement ~28).
        return self._one_schema(lambda: search_messages(
            self.store,
            query,
            source_filter=source_filter,
            exclude_sources=exclude_sources,
            role_filter=role_filter,
            limit=limit,
            offset=offset,
        ))

    def search(
        self,
        query: str,
        scope: ListQuery | None = None,
        *,
        limit: int = 20,
        offset: int = 0,
        sort: str = "auto",
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        prefix_last: bool = False,
        workspace: str | None = None,
        include_hidden: bool = False,
        order: str = "relevance",
        weights=None,
        now: float | None = None,
    ):
        """Structured, latency-bounded search for the UI → :class:`~hermes_state.models.SearchResult`.

        ``scope``: the list's filters as a :class:`ListQuery` (which of them a search obeys:
        :mod:`hermes_state.search.options`); without it the keyword filters (``source_filter``
        of upstream's ``search_messages``, ``exclude_sources``, ``workspace``,
        ``include_hidden``) are translated into one. ``sort`` is ``auto`` | ``rank`` |
        ``newest``; ``prefix_last=True`` makes the last plain word (≥ 3 characters) a prefix
        query for search-as-you-type. The hits come by conversation, best first (``order``:
        ``relevance`` by :class:`~hermes_state.search.Weights`, or ``newest``), conversations
        found across messages after those holding every word in one message: see
        :mod:`hermes_state.search.conversations`; never raises on query text.
        """
        from .search import SearchOptions
        from .search import search as search_by_conversation

        sources = None if source_filter is None else tuple(source_filter)
        if scope is None:
            # The keyword form: one source chosen (and nothing excluded beside it) is the
            # list's ``source``; several, or none at all, stay upstream's source filter.
            one = sources is not None and len(sources) == 1 and isinstance(sources[0], str) and not exclude_sources
            scope = ListQuery.from_options(sources[0] if one else None, exclude_sources, workspace=workspace,
                                           include_hidden=include_hidden)
            sources = None if one else sources
        elif exclude_sources is not None or workspace is not None or include_hidden:
            raise TypeError("search: give the filters as a ListQuery or as keywords, not both")
        options = SearchOptions(limit=limit, offset=offset, sort=sort, prefix_last=prefix_last, order=order,
                                roles=None if role_filter is None else tuple(role_filter), weights=weights,
                                now=now, sources=sources)
        # The schema is looked up once for the whole search, its conversation-level steps
        # included (UC-1).
        return self.store.one_schema(lambda: search_by_conversation(self.store, query, scope, options))

    # ------------------------------------------------------------------ typed read API






    def get_message_models(self, session_id: str):
        """Typed messages of one session, ordered by ``(timestamp, id)``."""
        from .models import Message, from_store

        return [from_store(Message, row) for row in self.get_messages(session_id)]

    def lineage_tree(self, session_id: str):
        """The whole family of a session as a :class:`~hermes_state.models.LineageNode` tree."""
        rules = self.rules if self.store.has_message_column("active") else None
        return self._read(lambda conn: _lineage_build_tree(conn, session_id, rules))

    # ------------------------------------------------------------------ upstream v16 (UC-2)
    #
    # Methods upstream added between schema 11 and 16, with its signatures and semantics.
    # They are written against the capabilities of the store (UC-1): a column that a store
    # lacks is never named in SQL.

    def update_session_cwd(self, session_id: str, cwd: str) -> None:
        """Record the session's working directory; a blank id or cwd does nothing."""
        if not session_id or not cwd:
            return
        self.store.require_column("sessions", "cwd")
        self._execute_write(
            lambda conn: conn.execute("UPDATE sessions SET cwd = ? WHERE id = ?", (cwd, session_id))
        )

    def update_session_model(self, session_id: str, model: str) -> None:
        """Set the session's model unconditionally (a mid-session model switch)."""
        self._execute_write(
            lambda conn: conn.execute("UPDATE sessions SET model = ? WHERE id = ?", (model, session_id))
        )

    def update_session_meta(
        self, session_id: str, model_config_json: str, model: str | None = None
    ) -> None:
        """Replace ``model_config`` (JSON text) and, when given, the model."""
        self._execute_write(
            lambda conn: conn.execute(
                "UPDATE sessions SET model_config = ?, model = COALESCE(?, model) WHERE id = ?",
                (model_config_json, model, session_id),
            )
        )

    # -------------------------------------------------- compression locks

    def try_acquire_compression_lock(
        self, session_id: str, holder: str, ttl_seconds: float = 300.0
    ) -> bool:
        """Take the per-session compression lock; False if another holder has a live one.

        An expired lock is reclaimed. Any SQLite failure answers False (the caller then
        skips compressing, the safe choice).
        """
        if not session_id:
            return False
        now = time.time()

        def do(conn: sqlite3.Connection) -> bool:
            conn.execute(
                "DELETE FROM compression_locks WHERE session_id = ? AND expires_at < ?",
                (session_id, now),
            )
            conn.execute(
                "INSERT OR IGNORE INTO compression_locks (session_id, holder, acquired_at, "
                "expires_at) VALUES (?, ?, ?, ?)",
                (session_id, holder, now, now + float(ttl_seconds)),
            )
            row = conn.execute(
                "SELECT holder FROM compression_locks WHERE session_id = ?", (session_id,)
            ).fetchone()
            return row is not None and row[0] == holder

        try:
            return bool(self._execute_write(do))
        except sqlite3.Error as exc:
            log.warning("compression lock for %s not taken: %s", session_id, exc)
            return False

    def release_compression_lock(self, session_id: str, holder: str) -> None:
        """Release the lock if ``holder`` still owns it; otherwise nothing happens."""
        if not session_id:
            return
        try:
            self._execute_write(
                lambda conn: conn.execute(
                    "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
                    (session_id, holder),
                )
            )
        except sqlite3.Error as exc:
            log.warning("compression lock for %s not released: %s", session_id, exc)

    def get_compression_lock_holder(self, session_id: str) -> str | None:
        """The holder of the session's unexpired compression lock, or None."""
        if not session_id:
            return None
        try:
            row = self._fetchone(
                "SELECT holder FROM compression_locks WHERE session_id = ? AND expires_at >= ?",
                (session_id, time.time()),
            )
        except sqlite3.OperationalError:  # a read-only pre-v16 store without the table
            return None
        return row[0] if row else None

    # -------------------------------------------------- archive

    def set_session_pinned(self, session_id: str, pinned: bool) -> bool:
        """Pin or unpin a conversation (its whole compression lineage, so the row the list
        shows agrees whichever segment is asked). Where the store has no ``pinned`` column
        (before v30) the pin goes to our settings file instead (UC-5: never a new column).
        True if the session exists."""
        from .listing.pins import set_pinned_in_file

        def lineage(conn: sqlite3.Connection) -> list[str]:
            return compression_lineage(conn, session_id)

        if not self._has_session_column("pinned"):
            ids = self._read(lineage)
            if not ids:
                return False
            set_pinned_in_file(self.db_path, ids, pinned)
            return True

        def do(conn: sqlite3.Connection) -> bool:
            ids = lineage(conn)
            if not ids:
                return False
            marks = ",".join("?" for _ in ids)
            conn.execute(f"UPDATE sessions SET pinned = ? WHERE id IN ({marks})", [1 if pinned else 0, *ids])
            return True

        self.lister.forget_pins()  # our own commit does not move this connection's data_version
        return bool(self._execute_write(do))

    def set_session_archived(self, session_id: str, archived: bool) -> bool:
        """Archive (hide from the default list) or unarchive a session and its whole
        compression lineage, ancestors and continuations alike. True if any row changed."""
        self.store.require_column("sessions", "archived")
        value = 1 if archived else 0

        def do(conn: sqlite3.Connection) -> bool:
            ids = compression_lineage(conn, session_id)
            if not ids:
                return False
            marks = ",".join("?" for _ in ids)
            cursor = conn.execute(f"UPDATE sessions SET archived = ? WHERE id IN ({marks})", [value, *ids])
            return cursor.rowcount > 0

        return bool(self._execute_write(do))

    def set_session_read(self, session_id: str, read: bool = True) -> bool:
        """Upstream's: mark the conversation read (now) or unread (0.0), its whole lineage."""
        return bool(set_read(self.store, session_id, read))

    @staticmethod
    def session_unread(session_row: dict) -> bool:
        """Upstream's: activity after the ``last_read_at`` watermark (NULL: read)."""
        get = session_row.get
        return is_unread(get("last_read_at"), get("last_active"), get("started_at"))

    def session_lifecycle_statuses(self, session_ids: list[str]) -> dict[str, str]:
        """Upstream's: ``{id: complete | interrupted | error | empty}`` from each last message."""
        return lifecycle_statuses(self.store, session_ids)

    # -------------------------------------------------- messages: window, rewind

    def _decoded_rows(self, rows: Iterable[sqlite3.Row]) -> list[dict]:
        return [_decode_message_row(row) for row in rows]

    def get_messages_around(
        self, session_id: str, around_message_id: int, window: int = 5
    ) -> dict:
        """Up to ``window`` messages either side of one message (by id), with counts.

        ``{"window": [...], "messages_before": n, "messages_after": m}``; an anchor that is
        not a message of ``session_id`` gives an empty window and zero counts.
        """
        window = max(0, int(window))

        def read(conn: sqlite3.Connection) -> dict:
            if conn.execute(
                "SELECT 1 FROM messages WHERE id = ? AND session_id = ?",
                (around_message_id, session_id),
            ).fetchone() is None:
                return {"window": [], "messages_before": 0, "messages_after": 0}
            before = conn.execute(
                "SELECT * FROM messages WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT ?",
                (session_id, around_message_id, window + 1),
            ).fetchall()
            after = conn.execute(
                "SELECT * FROM messages WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
                (session_id, around_message_id, window),
            ).fetchall()
            return {
                "window": self._decoded_rows(list(reversed(before)) + list(after)),
                "messages_before": max(0, len(before) - 1),
                "messages_after": len(after),
            }

        return self._read(read)

    def get_anchored_view(
        self,
        session_id: str,
        around_message_id: int,
        window: int = 5,
        bookend: int = 3,
        keep_roles: tuple[str, ...] | None = ("user", "assistant"),
    ) -> dict:
        """:meth:`get_messages_around` plus the session's opening and closing messages.

        The window keeps only ``keep_roles`` (the anchor always stays); ``bookend_start`` /
        ``bookend_end`` are the first / last ``bookend`` messages with those roles and
        non-empty content lying strictly outside the window. ``keep_roles=None``: no role
        filter.
        """
        bookend = max(0, int(bookend))
        around = self.get_messages_around(session_id, around_message_id, window=window)
        rows = around["window"]
        empty = {"window": [], "messages_before": 0, "messages_after": 0,
                 "bookend_start": [], "bookend_end": []}
        if not rows:
            return empty
        if keep_roles is not None:
            keep = set(keep_roles)
            shown = [m for m in rows if m.get("id") == around_message_id or m.get("role") in keep]
        else:
            shown = rows
        first, last = rows[0]["id"], rows[-1]["id"]
        start: list[dict] = []
        end: list[dict] = []
        if bookend:
            role_sql, role_params = "", []
            if keep_roles is not None:
                role_sql = f" AND role IN ({','.join('?' for _ in keep_roles)})"
                role_params = list(keep_roles)

            def read(conn: sqlite3.Connection) -> tuple[list, list]:
                head = conn.execute(
                    f"SELECT * FROM messages WHERE session_id = ? AND id < ?{role_sql} "
                    "AND length(content) > 0 ORDER BY id LIMIT ?",
                    (session_id, first, *role_params, bookend),
                ).fetchall()
                tail = conn.execute(
                    f"SELECT * FROM messages WHERE session_id = ? AND id > ?{role_sql} "
                    "AND length(content) > 0 ORDER BY id DESC LIMIT ?",
                    (session_id, last, *role_params, bookend),
                ).fetchall()
                return head, list(reversed(tail))

            head, tail = self._read(read)
            start, end = self._decoded_rows(head), self._decoded_rows(tail)
        return {
            "window": shown,
            "messages_before": around["messages_before"],
            "messages_after": around["messages_after"],
            "bookend_start": start,
            "bookend_end": end,
        }

    def rewind_to_message(self, session_id: str, target_message_id: int) -> dict:
        """Soft-delete (``active = 0``) a user message and everything after it in the session.

        Returns ``{"rewound_count", "target_message", "new_head_id"}``. Raises ``ValueError``
        when the message is not in the session or is not a user message. ``rewind_count``
        of the session grows by one on every call, even when nothing was left to rewind.
        """
        self.store.require_column("messages", "active")
        row = self._fetchone(
            "SELECT * FROM messages WHERE id = ? AND session_id = ?", (target_message_id, session_id)
        )
        if row is None:
            raise ValueError(f"message {target_message_id} not found in session {session_id}")
        target = dict(row)
        if target.get("role") != "user":
            raise ValueError(
                f"rewind target must be a 'user' message (got role={target.get('role')!r}, "
                f"id={target_message_id})"
            )
        bump = self._has_session_column("rewind_count")

        def do(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "UPDATE messages SET active = 0 WHERE session_id = ? AND id >= ? AND active = 1",
                (session_id, target_message_id),
            )
            if bump:
                conn.execute(
                    "UPDATE sessions SET rewind_count = COALESCE(rewind_count, 0) + 1 WHERE id = ?",
                    (session_id,),
                )
            return cursor.rowcount

        rewound = self._execute_write(do)
        head = self._fetchone(
            "SELECT MAX(id) FROM messages WHERE session_id = ? AND active = 1", (session_id,)
        )
        return {
            "rewound_count": int(rewound),
            "target_message": target,
            "new_head_id": head[0] if head and head[0] is not None else None,
        }

    def restore_rewound(self, session_id: str, since_message_id: int) -> int:
        """Make rewound messages with id ≥ ``since_message_id`` active again; how many."""
        self.store.require_column("messages", "active")
        return int(
            self._execute_write(
                lambda conn: conn.execute(
                    "UPDATE messages SET active = 1 WHERE session_id = ? AND id >= ? AND active = 0",
                    (session_id, since_message_id),
                ).rowcount
            )
        )

    def list_recent_user_messages(
        self, session_id: str, limit: int = 20, include_inactive: bool = False
    ) -> list[dict]:
        """The newest user messages first: ``{"id", "timestamp", "preview"}`` (80 characters,
        whitespace collapsed) -- the rewind picker's list."""
        rows = self._fetchall(
            "SELECT id, timestamp, content FROM messages WHERE session_id = ? AND role = 'user'"
            f"{self._active_clause(include_inactive)} ORDER BY id DESC LIMIT ?",
            (session_id, int(limit)),
        )
        result = []
        for row in rows:
            text = " ".join(_content_text(row["content"]).split())
            if len(text) > 80:
                text = text[:77] + "..."
            result.append({"id": row["id"], "timestamp": row["timestamp"], "preview": text})
        return result

    # -------------------------------------------------- listing

    def list_cron_job_runs(self, job_id: str, limit: int = 20, offset: int = 0) -> list[dict]:
        """Runs of one cron job (sessions ``cron_<job_id>_*`` of source ``cron``), newest
        first, with ``preview`` and ``last_active``; an id range, not a substring scan."""
        low = f"cron_{job_id}_"
        high = low[:-1] + chr(ord(low[-1]) + 1)
        rows = self._fetchall(
            f"SELECT s.*, {self.rules.preview_sql()} AS _preview_raw, {self.rules.last_active_sql()} AS last_active "
            "FROM sessions s WHERE s.source = 'cron' AND s.id >= ? AND s.id < ? "
            "ORDER BY s.started_at DESC, s.id DESC LIMIT ? OFFSET ?",
            (low, high, int(limit), int(offset)),
        )
        return with_resolved_prompts(self.store, [rich_row(row) for row in rows])

    def search_sessions_by_id(
        self, query: str, limit: int = 20, include_archived: bool = True
    ) -> list[dict]:
        """Listed sessions whose id -- or an id along their compression chain -- contains
        ``query`` (case-insensitive); exact matches first, then prefixes, then the rest,
        each most recently active first."""
        needle = (query or "").strip().lower()
        if not needle or limit <= 0:
            return []
        rows = self.list_sessions_rich(
            limit=max(limit * 4, limit),
            include_archived=include_archived,
            order_by_last_active=True,
            id_query=needle,
        )

        def rank(row: dict) -> int:
            ids = [str(v).lower() for v in (row.get("id"), row.get("_lineage_root_id")) if v]
            if needle in ids:
                return 0
            if any(v.startswith(needle) for v in ids):
                return 1
            return 2

        ordered = sorted(enumerate(rows), key=lambda item: (rank(item[1]), item[0]))
        return [row for _, row in ordered[:limit]]

    # -------------------------------------------------- delete

    def delete_sessions(self, session_ids: list[str], sessions_dir: Path | None = None) -> int:
        """Delete several sessions in one transaction (delegate children go with them,
        other children are orphaned); unknown ids and non-strings are skipped. Returns how
        many of the given sessions existed."""
        wanted = sorted({sid for sid in (session_ids or []) if isinstance(sid, str) and sid})
        if not wanted:
            return 0

        def do(conn: sqlite3.Connection) -> tuple[list[str], list[str]]:
            existing: list[str] = []
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" for _ in chunk)
                existing += [
                    row[0] for row in conn.execute(f"SELECT id FROM sessions WHERE id IN ({marks})", chunk)
                ]
            if not existing:
                return [], []
            delegates = delegate_descendants(conn, existing)
            delete_session_rows(conn, delegates + existing)
            return existing, delegates

        existing, delegates = self._execute_write(do)
        if sessions_dir is not None and (existing or delegates):
            remove_session_files(Path(sessions_dir), delegates + existing)
        return len(existing)

    def delete_session_if_empty(self, session_id: str, sessions_dir: Path | None = None) -> bool:
        """Delete a session only if it has no messages, no title and no children."""

        def do(conn: sqlite3.Connection) -> bool:
            return conn.execute(
                "DELETE FROM sessions WHERE id = ? AND title IS NULL "
                "AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id) "
                "AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = sessions.id)",
                (session_id,),
            ).rowcount > 0

        deleted = bool(self._execute_write(do))
        if deleted and sessions_dir is not None:
            remove_session_files(Path(sessions_dir), [session_id])
        return deleted

    def _empty_sessions_sql(self) -> str:
        sql = "SELECT id FROM sessions WHERE message_count = 0 AND ended_at IS NOT NULL"
        if self._has_session_column("archived"):
            sql += " AND archived = 0"
        return sql

    def count_empty_sessions(self) -> int:
        """Ended, unarchived sessions with no messages (what :meth:`delete_empty_sessions`
        would delete)."""
        return int(self._fetchone(f"SELECT COUNT(*) FROM ({self._empty_sessions_sql()})")[0])

    def delete_empty_sessions(self, sessions_dir: Path | None = None) -> int:
        """Delete every ended, unarchived session with no messages; children are orphaned."""
        return self._sweep(self._empty_sessions_sql(), (), sessions_dir)

    def prune_empty_ghost_sessions(self, sessions_dir: Path | None = None) -> int:
        """Delete ended ``tui`` sessions older than a day with no title and no messages."""
        return self._sweep(
            "SELECT id FROM sessions WHERE source = 'tui' AND title IS NULL "
            "AND ended_at IS NOT NULL AND started_at < ? "
            "AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id)",
            (time.time() - 86400,),
            sessions_dir,
        )

    def finalize_orphaned_compression_sessions(self) -> int:
        """End (``orphaned_compression``) compression continuations older than a week that
        never made an API call and were never ended, keeping their messages."""
        cutoff = time.time() - 7 * 86400
        now = time.time()
        return int(
            self._execute_write(
                lambda conn: conn.execute(
                    "UPDATE sessions SET ended_at = ?, end_reason = 'orphaned_compression' "
                    "WHERE api_call_count = 0 AND end_reason IS NULL AND ended_at IS NULL "
                    "AND started_at < ? AND parent_session_id IS NOT NULL "
                    "AND EXISTS (SELECT 1 FROM sessions p WHERE p.id = sessions.parent_session_id "
                    "AND p.end_reason = 'compression' AND p.ended_at IS NOT NULL) "
                    "AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id)",
                    (now, cutoff),
                ).rowcount
            )
        )

    # -------------------------------------------------- FTS maintenance

    def optimize_fts(self) -> int:
        """Merge each FTS index's segments into one (``'optimize'``); returns how many
        indexes were optimized. Search results and snippets do not change."""
        self._check_writable()
        names = [n for n in ("messages_fts", "messages_fts_trigram") if self._fts_table_exists(n)]
        done = 0
        with self._lock:
            conn = self._require_conn()
            for name in names:
                try:
                    conn.execute(f"INSERT INTO {name}({name}) VALUES('optimize')")
                    done += 1
                except sqlite3.OperationalError as exc:
                    log.warning("FTS optimize of %s failed: %s", name, exc)
        return done

    # -------------------------------------------------- handoff (cross-platform transfer)

    def request_handoff(self, session_id: str, platform: str) -> bool:
        """Mark a handoff to ``platform`` pending, unless one is already pending or running."""
        return bool(
            self._execute_write(
                lambda conn: conn.execute(
                    "UPDATE sessions SET handoff_state = 'pending', handoff_platform = ?, "
                    "handoff_error = NULL WHERE id = ? AND (handoff_state IS NULL "
                    "OR handoff_state IN ('completed', 'failed'))",
                    (platform, session_id),
                ).rowcount
                > 0
            )
        )

    def get_handoff_state(self, session_id: str) -> dict | None:
        """``{"state", "platform", "error"}`` of a session, or None if there is no session."""
        try:
            row = self._fetchone(
                "SELECT handoff_state, handoff_platform, handoff_error FROM sessions WHERE id = ?",
                (session_id,),
            )
        except sqlite3.Error:
            return None
        if row is None:
            return None
        return {"state": row[0], "platform": row[1], "error": row[2]}

    def list_pending_handoffs(self) -> list[dict]:
        """Sessions with a pending handoff, oldest first."""
        try:
            rows = self._fetchall(
                "SELECT * FROM sessions WHERE handoff_state = 'pending' ORDER BY started_at"
            )
        except sqlite3.Error:
            return []
        return with_resolved_prompts(self.store, [dict(row) for row in rows])

    def claim_handoff(self, session_id: str) -> bool:
        """pending → running; True if this call made the transition."""
        return bool(
            self._execute_write(
                lambda conn: conn.execute(
                    "UPDATE sessions SET handoff_state = 'running' "
                    "WHERE id = ? AND handoff_state = 'pending'",
                    (session_id,),
                ).rowcount
                > 0
            )
        )

    def complete_handoff(self, session_id: str) -> None:
        self._execute_write(
            lambda conn: conn.execute(
                "UPDATE sessions SET handoff_state = 'completed', handoff_error = NULL WHERE id = ?",
                (session_id,),
            )
        )

    def fail_handoff(self, session_id: str, error: str) -> None:
        """Mark the handoff failed with (the first 500 characters of) ``error``."""
        self._execute_write(
            lambda conn: conn.execute(
                "UPDATE sessions SET handoff_state = 'failed', handoff_error = ? WHERE id = ?",
                (str(error)[:500], session_id),
            )
        )

    # -------------------------------------------------- Telegram DM topics (explicit opt-in)

    def apply_telegram_topic_migration(self) -> None:
        """Create the Telegram DM topic tables; only ever on explicit opt-in, never on open."""
        self._execute_write(_telegram_migrate)

    def enable_telegram_topic_mode(
        self,
        *,
        chat_id: str,
        user_id: str,
        has_topics_enabled: bool | None = None,
        allows_users_to_create_topics: bool | None = None,
    ) -> None:
        self.apply_telegram_topic_migration()
        self._execute_write(
            lambda conn: _telegram_enable(
                conn, str(chat_id), str(user_id), has_topics_enabled, allows_users_to_create_topics
            )
        )

    def disable_telegram_topic_mode(self, *, chat_id: str, clear_bindings: bool = True) -> None:
        """Turn topic mode off for a chat (and drop its bindings); never creates the tables."""
        self._execute_write(lambda conn: _telegram_disable(conn, str(chat_id), clear_bindings))

    def is_telegram_topic_mode_enabled(self, *, chat_id: str, user_id: str) -> bool:
        return self._read(lambda conn: _telegram_is_enabled(conn, str(chat_id), str(user_id)))

    def get_telegram_topic_binding(self, *, chat_id: str, thread_id: str) -> dict | None:
        return self._read(lambda conn: _telegram_binding(conn, str(chat_id), str(thread_id)))

    def list_telegram_topic_bindings_for_chat(self, *, chat_id: str) -> list[dict]:
        return self._read(lambda conn: _telegram_bindings_for_chat(conn, str(chat_id)))

    def get_telegram_topic_binding_by_session(self, *, session_id: str) -> dict | None:
        return self._read(lambda conn: _telegram_binding_by_session(conn, str(session_id)))

    def is_telegram_session_linked_to_topic(self, *, session_id: str) -> bool:
        return self.get_telegram_topic_binding_by_session(session_id=session_id) is not None

    def bind_telegram_topic(
        self,
        *,
        chat_id: str,
        thread_id: str,
        user_id: str,
        session_key: str,
        session_id: str,
        managed_mode: str = "auto",
    ) -> None:
        """Bind a DM topic thread to a session; a session binds to one topic only
        (``ValueError`` otherwise); rebinding the same pair is idempotent."""
        self.apply_telegram_topic_migration()
        values = tuple(str(v) for v in (chat_id, thread_id, user_id, session_key, session_id, managed_mode))
        self._execute_write(lambda conn: _telegram_bind(conn, *values))

    def list_unlinked_telegram_sessions_for_user(
        self, *, chat_id: str, user_id: str, limit: int = 10
    ) -> list[dict]:
        """This user's Telegram sessions not bound to a topic, most recently active first."""
        linked = _telegram_has_tables(self)
        unbound = (
            " AND NOT EXISTS (SELECT 1 FROM telegram_dm_topic_bindings b WHERE b.session_id = s.id)"
            if linked else ""
        )
        rows = self._fetchall(
            f"SELECT s.*, {self.rules.preview_sql()} AS _preview_raw, {self.rules.last_active_sql()} AS last_active "
            f"FROM sessions s WHERE s.source = 'telegram' AND s.user_id = ?{unbound} "
            "ORDER BY last_active DESC, s.started_at DESC LIMIT ?",
            (str(user_id), int(limit)),
        )
        return with_resolved_prompts(self.store, [rich_row(row) for row in rows])


# ---------------------------------------------------------------------- helpers

_INSERT_MESSAGE_SQL = (
    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, "
    "timestamp, token_count, finish_reason, reasoning, reasoning_content, reasoning_details, "
    "codex_reasoning_items, codex_message_items) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)




def _decode_message_row(row: sqlite3.Row) -> dict:
    data = dict(row)
    raw = data.get("tool_calls")
    if raw:
        try:
            data["tool_calls"] = json.loads(raw)
        except (TypeError, ValueError):
            log.warning("message %s has undecodable tool_calls", data.get("id"))
            data["tool_calls"] = []
    return data


def _decode_json_or_none(raw: str, message_id: Any, column: str) -> Any:
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        log.warning("message %s has undecodable %s", message_id, column)
        return None


def _conversation_message(row: sqlite3.Row) -> dict:
    role = row["role"]
    content = row["content"]
    if role in ("user", "assistant") and isinstance(content, str):
        content = scrub_memory_context(content).strip()
    msg: dict[str, Any] = {"role": role, "content": content}
    # Upstream v16 (UC-2) replays the message time, the platform's message id (as
    # ``message_id``), ``observed`` and the assistant's finish reason as well.
    keys = row.keys()
    if row["timestamp"]:
        msg["timestamp"] = row["timestamp"]
    if row["tool_call_id"]:
        msg["tool_call_id"] = row["tool_call_id"]
    if row["tool_name"]:
        msg["tool_name"] = row["tool_name"]
    if row["tool_calls"]:
        try:
            msg["tool_calls"] = json.loads(row["tool_calls"])
        except (TypeError, ValueError):
            log.warning("message %s has undecodable tool_calls", row["id"])
            msg["tool_calls"] = []
    if "platform_message_id" in keys and row["platform_message_id"]:
        msg["message_id"] = row["platform_message_id"]
    if "observed" in keys and row["observed"]:
        msg["observed"] = True
    if role == "assistant" and row["finish_reason"]:
        msg["finish_reason"] = row["finish_reason"]
    if role == "assistant":
        if row["reasoning"]:
            msg["reasoning"] = row["reasoning"]
        if row["reasoning_content"] is not None:
            msg["reasoning_content"] = row["reasoning_content"]
        for column in ("reasoning_details", "codex_reasoning_items", "codex_message_items"):
            if row[column]:
                msg[column] = _decode_json_or_none(row[column], row["id"], column)
    return msg


def _drop_replayed_prompts(messages: list[dict]) -> list[dict]:
    """MS-5: drop a user prompt that repeats an earlier kept one with no answer between."""
    kept: list[dict] = []
    for msg in messages:
        content = msg.get("content")
        if msg["role"] == "user" and isinstance(content, str) and content:
            duplicate = False
            for earlier in reversed(kept):
                if earlier["role"] == "user" and earlier.get("content") == content:
                    duplicate = True
                    break
                if earlier["role"] == "assistant" and (
                    earlier.get("content") or earlier.get("tool_calls")
                ):
                    break
            if duplicate:
                continue
        kept.append(msg)
    return kept




























def _content_text(content: Any) -> str:
    """Message content as plain text; upstream's ``"\\x00json:"`` multimodal parts flattened."""
    if content is None:
        return ""
    if isinstance(content, str) and content.startswith("\x00json:"):
        try:
            parts = json.loads(content[len("\x00json:"):])
        except (TypeError, ValueError):
            return content
        if isinstance(parts, list):
            texts = [p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
            return " ".join(t for t in texts if t).strip() or "[multimodal content]"
        return "[multimodal content]"
    return str(content)


def _epoch_or_none(value: Any) -> float | None:
    """An explicit message timestamp: epoch number, or anything with ``.timestamp()``."""
    if value is None:
        return None
    try:
        return float(value.timestamp()) if hasattr(value, "timestamp") else float(value)
    except (TypeError, ValueError, OverflowError, OSError):
        log.debug("ignoring invalid message timestamp %r", value)
        return None




































def open_store(
    path: Path | str, access: str = "read", *, store_class: type[SessionDB] = SessionDB, **kwargs: Any
) -> SessionDB:
    """Open ``path`` for ``access`` ("read" or "write") by the one policy of
    :func:`hermes_state.store.open_mode`; every failure is a one-line :class:`DatabaseError`.
    The database must exist: nothing here creates one."""
    path = Path(path)
    read_only = open_mode(path, access)
    try:
        return store_class(path, read_only=read_only, **kwargs)
    except DatabaseError:
        raise
    except sqlite3.Error as exc:
        raise describe_open_error(path, access, exc) from exc
    except OSError as exc:
        raise DatabaseError(f"cannot open {path} ({exc.strerror or exc})") from exc
