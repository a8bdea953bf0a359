"""``SessionDB``: upstream Hermes' session store API, drop-in compatible with its schema v11
(and v16's methods, UC-2), as a thin facade.

Each method keeps upstream's name and signature and is a few lines over the
:class:`~hermes_state.store.Store` (connection, lock, ``BEGIN IMMEDIATE`` writes with their
jittered retry, snapshots, capabilities, reader rules) and the feature modules that hold the
work: :mod:`~hermes_state.sessions`, :mod:`~hermes_state.messages_write`,
:mod:`~hermes_state.messages_read`, :mod:`~hermes_state.titles`, :mod:`~hermes_state.lineage`,
:mod:`~hermes_state.deletion`, :mod:`~hermes_state.maintenance`,
:mod:`~hermes_state.export_read`, :mod:`~hermes_state.session_lists`,
:mod:`~hermes_state.handoff`, :mod:`~hermes_state.compression_locks`,
:mod:`~hermes_state.telegram_topics`, the list (:mod:`~hermes_state.listing`) and search. Those
modules take a store, never a ``SessionDB``: new code calls them, not this class.

The private names upstream's own suites touch (``_conn``, ``_lock``, ``_execute_write``,
``_fts_enabled`` …) are one-line delegates to the store. Besides upstream's dict API the class
offers a small typed read API for the UI (``list_summaries``, ``get_summary``,
``get_message_models``, ``lineage_tree``) returning the models of :mod:`hermes_state.models`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

# The feature modules by name (``sessions.create_session(self.store, …)`` reads as what it
# is); absolute, as ``from . import`` would run the package's __init__, which imports this.
import hermes_state.compression_locks as compression_locks
import hermes_state.deletion as deletion
import hermes_state.export_read as export_read
import hermes_state.handoff as handoff
import hermes_state.maintenance as maintenance
import hermes_state.messages_read as messages_read
import hermes_state.messages_write as messages_write
import hermes_state.session_lists as session_lists
import hermes_state.sessions as sessions
import hermes_state.stats as store_stats
import hermes_state.titles as titles
from .capabilities import Capabilities
from .errors import DatabaseError, ReadOnlyError, TitleChangedError
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
from .listing.engine import lister_of
from .listing.pins import set_pinned
from .listing.query import ListQuery
from .listing.recency import RecencyWalk as _RecencyWalk
from .preview import compute_preview, scrub_memory_context
from .prompts import iter_with_resolved_prompts, with_resolved_prompts
from .schema import SCHEMA_SQL
from .telegram_topics import (
    bind as _telegram_bind,
    binding as _telegram_binding,
    binding_by_session as _telegram_binding_by_session,
    bindings_for_chat as _telegram_bindings_for_chat,
    disable as _telegram_disable,
    enable as _telegram_enable,
    is_enabled as _telegram_is_enabled,
    migrate as _telegram_migrate,
)
from .lifecycle import statuses as lifecycle_statuses
from .unread import is_unread, set_read
from .titles import ANY_TITLE, MAX_TITLE_LENGTH, sanitize_title
from .store import (
    CHECKPOINT_EVERY_N_WRITES,
    WRITE_MAX_RETRIES,
    WRITE_RETRY_MAX_S,
    WRITE_RETRY_MIN_S,
    Store,
    describe_open_error,
    open_mode,
)

T = TypeVar("T")

# Names this module has always offered (upstream's module had them beside SessionDB).
__all__ = ["SessionDB", "open_store", "DatabaseError", "ReadOnlyError", "TitleChangedError",
           "compute_preview", "scrub_memory_context"]


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
        self.lister = lister_of(self.store)

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

    # Upstream's suites (and our tests' and bench's instrumentation) reach these private
    # names: each is the store's.
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

    def _checkpoint(self, mode: str = "PASSIVE") -> None:
        self.store.checkpoint(mode)

    def _one_schema(self, fn: Callable[[], T]) -> T:
        return self.store.one_schema(fn)

    def _read_snapshot(self, fn: Callable[[], T]) -> T:
        return self.store.read_snapshot(fn)

    def _has_session_column(self, name: str) -> bool:
        return self.store.has_session_column(name)

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

    # ------------------------------------------------------------------ sessions (sessions.py)

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
        return sessions.create_session(
            self.store, session_id, source, model, model_config, system_prompt, user_id, parent_session_id, cwd,
        )

    def ensure_session(
        self, session_id: str, source: str = "unknown", model: str | None = None, **kwargs: Any
    ) -> str:
        """Insert a minimal row if the id is unknown; never modifies an existing row (SS-6)."""
        return sessions.ensure_session(self.store, session_id, source, model, **kwargs)

    def end_session(self, session_id: str, end_reason: str) -> None:
        """Mark a session ended; the first end reason wins (SS-2)."""
        sessions.end_session(self.store, session_id, end_reason)

    def reopen_session(self, session_id: str) -> None:
        """Clear ``ended_at`` and ``end_reason`` (SS-3)."""
        sessions.reopen_session(self.store, session_id)

    def update_system_prompt(self, session_id: str, system_prompt: str | None) -> None:
        sessions.update_column(self.store, session_id, "system_prompt", system_prompt)

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
        sessions.update_token_counts(
            self.store, session_id, input_tokens, output_tokens, model, cache_read_tokens, cache_write_tokens,
            reasoning_tokens, estimated_cost_usd, actual_cost_usd, cost_status, cost_source, pricing_version,
            billing_provider, billing_base_url, billing_mode, api_call_count, absolute,
        )

    def get_session(self, session_id: str) -> dict | None:
        return sessions.get_session(self.store, session_id)

    def resolve_session_id(self, session_id_or_prefix: str) -> str | None:
        """Exact id, else a unique prefix (SS-8); unknown, ambiguous or blank → None."""
        return sessions.resolve_session_id(self.store, session_id_or_prefix)

    def count_id_prefix(self, prefix: str) -> int:
        """How many session ids start with ``prefix`` (CLI-17: "ambiguous: N sessions")."""
        return sessions.count_id_prefix(self.store, prefix)

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
        return sessions.message_count(self.store, session_id)

    def source_counts(self) -> dict[str, int]:
        """Sessions per source, in one query (used by ``stats`` and the browser's filter)."""
        return sessions.source_counts(self.store)

    def get_meta(self, key: str) -> str | None:
        return sessions.get_meta(self.store, key)

    def set_meta(self, key: str, value: str | None) -> None:
        sessions.set_meta(self.store, key, value)

    def last_write_at(self) -> float | None:
        """When an agent last wrote: the newest message's time or session's start."""
        return sessions.last_write_at(self.store)

    # ------------------------------------------------------------------ housekeeping (maintenance.py)

    def vacuum(self) -> None:
        """Checkpoint (TRUNCATE, best effort) then VACUUM, outside any transaction (SS-11)."""
        maintenance.vacuum(self.store)

    def maybe_auto_prune_and_vacuum(
        self,
        retention_days: int = 90,
        min_interval_hours: int = 24,
        vacuum: bool = True,
        sessions_dir: Path | None = None,
    ) -> dict:
        """Prune old ended sessions at most once per interval; never raises (SS-12). The
        prune and the VACUUM are this object's methods (a subclass may replace them)."""
        return maintenance.auto_prune(
            self.store, retention_days, min_interval_hours,
            prune=lambda days: self.prune_sessions(older_than_days=days, sessions_dir=sessions_dir),
            vacuum_after=self.vacuum if vacuum else None,
        )

    def prune_sessions(
        self, older_than_days: float = 90, source: str | None = None, sessions_dir: Path | None = None,
    ) -> int:
        """Delete ended sessions started before the cutoff; children are orphaned (EX-5)."""
        return maintenance.prune_sessions(self.store, older_than_days, source, sessions_dir)

    def prunable_session_ids(self, older_than_days: float = 90, source: str | None = None) -> list[str]:
        """The ids :meth:`prune_sessions` would delete now (for a count or a dry run)."""
        return maintenance.prunable_session_ids(self.store, older_than_days, source)

    def prunable_totals(self, older_than_days: float = 90, source: str | None = None) -> tuple[int, int]:
        """How many sessions :meth:`prune_sessions` would delete now, and their messages."""
        return maintenance.prunable_totals(self.store, older_than_days, source)

    def prunable_sessions(
        self, older_than_days: float = 90, source: str | None = None,
    ) -> list[tuple[str, str | None, Any]]:
        """``(id, source, title)`` of each session :meth:`prune_sessions` would delete now."""
        return maintenance.prunable_sessions(self.store, older_than_days, source)

    def count_empty_sessions(self) -> int:
        """Ended, unarchived sessions with no messages (what :meth:`delete_empty_sessions`
        would delete)."""
        return maintenance.count_empty_sessions(self.store)

    def delete_empty_sessions(self, sessions_dir: Path | None = None) -> int:
        """Delete every ended, unarchived session with no messages; children are orphaned."""
        return maintenance.delete_empty_sessions(self.store, sessions_dir)

    def prune_empty_ghost_sessions(self, sessions_dir: Path | None = None) -> int:
        """Delete ended ``tui`` sessions older than a day with no title and no messages."""
        return maintenance.prune_empty_ghost_sessions(self.store, sessions_dir)

    def finalize_orphaned_compression_sessions(self) -> int:
        """End (``orphaned_compression``) week-old compression continuations that never made
        an API call and were never ended, keeping their messages."""
        return maintenance.finalize_orphaned_compression_sessions(self.store)

    def optimize_fts(self) -> int:
        """Merge each FTS index's segments into one; how many indexes were optimized."""
        return maintenance.optimize_fts(self.store)

    # ------------------------------------------------------------------ messages (messages_write.py, messages_read.py)

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
        """Insert one message and bump the session's counters in the same transaction."""
        return messages_write.append_message(
            self.store, session_id, role, content, tool_name, tool_calls, tool_call_id, token_count, finish_reason,
            reasoning, reasoning_content, reasoning_details, codex_reasoning_items, codex_message_items,
            platform_message_id, observed, timestamp,
        )

    def replace_messages(self, session_id: str, messages: list[dict]) -> None:
        """Atomically replace a session's transcript (MS-3)."""
        messages_write.replace_messages(self.store, session_id, messages)

    def clear_messages(self, session_id: str) -> None:
        """Delete a session's messages and zero its counters; the session stays (MS-7)."""
        messages_write.clear_messages(self.store, session_id)

    def rewind_to_message(self, session_id: str, target_message_id: int) -> dict:
        """Soft-delete (``active = 0``) a user message and everything after it in the session:
        ``{"rewound_count", "target_message", "new_head_id"}``."""
        return messages_write.rewind_to_message(self.store, session_id, target_message_id)

    def restore_rewound(self, session_id: str, since_message_id: int) -> int:
        """Make rewound messages with id ≥ ``since_message_id`` active again; how many."""
        return messages_write.restore_rewound(self.store, session_id, since_message_id)

    def get_messages(self, session_id: str, include_inactive: bool = False) -> list[dict]:
        """Every column of every message, ordered by ``(timestamp, id)``; tool_calls decoded."""
        return messages_read.get_messages(self.store, session_id, include_inactive)

    def get_messages_as_conversation(
        self,
        session_id: str,
        include_ancestors: bool = False,
        include_inactive: bool = False,
        *,
        without_scaffolding: bool = False,
    ) -> list[dict]:
        """Replayable chat messages (MS-5), optionally for the whole root-to-session chain."""
        return messages_read.get_messages_as_conversation(
            self.store, session_id, include_ancestors, include_inactive, without_scaffolding=without_scaffolding,
        )

    def get_messages_around(self, session_id: str, around_message_id: int, window: int = 5) -> dict:
        """Up to ``window`` messages either side of one message (by id), with counts."""
        return messages_read.get_messages_around(self.store, session_id, around_message_id, window)

    def get_anchored_view(
        self,
        session_id: str,
        around_message_id: int,
        window: int = 5,
        bookend: int = 3,
        keep_roles: tuple[str, ...] | None = ("user", "assistant"),
    ) -> dict:
        """:meth:`get_messages_around` plus the session's opening and closing messages."""
        return messages_read.get_anchored_view(self.store, session_id, around_message_id, window, bookend, keep_roles)

    def list_recent_user_messages(
        self, session_id: str, limit: int = 20, include_inactive: bool = False
    ) -> list[dict]:
        """The newest user messages first (the rewind picker's list)."""
        return messages_read.list_recent_user_messages(self.store, session_id, limit, include_inactive)

    # ------------------------------------------------------------------ titles (titles.py)

    def set_session_title(self, session_id: str, title: str | None, *, expected: Any = ANY_TITLE) -> bool:
        """Set (or clear) a session's title; titles are unique (TI-2). With ``expected``, only
        if that is still its title (else :class:`TitleChangedError`)."""
        return titles.set_session_title(self.store, session_id, title, expected=expected)

    def get_system_prompt(self, session_id: str) -> str | None:
        """UC-3: the session's prompt, from the row or stored once by hash (v30)."""
        return sessions.get_system_prompt(self.store, session_id)

    def get_session_title(self, session_id: str) -> str | None:
        return titles.get_session_title(self.store, session_id)

    def get_session_by_title(self, title: str) -> dict | None:
        return titles.get_session_by_title(self.store, title)

    def resolve_session_by_title(self, title: str) -> str | None:
        """The latest session of a title lineage: newest ``title #N``, else ``title`` (TI-5)."""
        return titles.resolve_session_by_title(self.store, title)

    def get_next_title_in_lineage(self, base_title: str) -> str:
        """``"name"`` → ``"name #N+1"`` given the titles already in use (TI-6)."""
        return titles.next_title_in_lineage(self.store, base_title)

    # ------------------------------------------------------------------ lineage (lineage.py)

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
        """A user-supplied name or id → the session to show or resume (LI-9): exact id, else
        a title lineage (TI-5), projected forward to the compression tip."""
        if not name_or_id:
            return None
        target = name_or_id if self.get_session(name_or_id) else self.resolve_session_by_title(name_or_id)
        if target is None:
            return None
        return self.get_compression_tip(target)

    # ------------------------------------------------------------------ delete (deletion.py)

    def delete_session(self, session_id: str, sessions_dir: Path | None = None) -> bool:
        """Delete a session and its messages, orphaning its children (EX-4, LI-14)."""
        return deletion.delete_session(self.store, session_id, sessions_dir)

    def delete_sessions(self, session_ids: list[str], sessions_dir: Path | None = None) -> int:
        """Delete several sessions in one transaction; how many of them existed."""
        return deletion.delete_sessions(self.store, session_ids, sessions_dir)

    def delete_session_if_empty(self, session_id: str, sessions_dir: Path | None = None) -> bool:
        """Delete a session only if it has no messages, no title and no children."""
        return deletion.delete_session_if_empty(self.store, session_id, sessions_dir)

    # ------------------------------------------------------------------ export (export_read.py, stats.py)

    def export_session(self, session_id: str) -> dict | None:
        """``{**session, "messages": [...]}`` (EX-1), read in one snapshot; None if unknown."""
        return export_read.export_session(self.store, session_id)

    def export_all(self, source: str | None = None) -> list[dict]:
        """Every session, most recently used first, with its messages (EX-2: at most
        100000 sessions, as upstream's ``search_sessions(source, limit=100000)``)."""
        return list(export_read.iter_export_all(self.store, source, limit=100000))

    def iter_export_all(self, source: str | None = None, limit: int | None = None) -> Iterator[dict]:
        """Like :meth:`export_all`, one session at a time, and every session unless ``limit``."""
        return export_read.iter_export_all(self.store, source, limit)

    def stats(self) -> dict:
        """Figures for ``hermes sessions stats`` (EX-7)."""
        return store_stats.totals(self.store)

    # ------------------------------------------------------------------ other lists (session_lists.py)

    def search_sessions(self, source: str | None = None, limit: int = 20, offset: int = 0) -> list[dict]:
        """Every session (children included), most recently used first (LI-6)."""
        return session_lists.search_sessions(self.store, source, limit, offset)

    def list_cron_job_runs(self, job_id: str, limit: int = 20, offset: int = 0) -> list[dict]:
        """Runs of one cron job (sessions ``cron_<job_id>_*``), newest first."""
        return session_lists.list_cron_job_runs(self.store, job_id, limit, offset)

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
            limit=max(limit * 4, limit), include_archived=include_archived, order_by_last_active=True,
            id_query=needle,
        )
        return session_lists.rank_id_matches(rows, needle, limit)

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
        sort: str = "rank",
        source_filter: list[str] | None = None,
        exclude_sources: list[str] | None = None,
        role_filter: list[str] | None = None,
        prefix_last: bool = False,
        workspace: str | None = None,
        include_hidden: bool = False,
        order: str = "relevance",
        weights=None,
        now: float | None = None,
        window: int | None = None,
    ):
        """Structured search by conversation → :class:`~hermes_state.models.SearchResult`:
        by default what the browser's pane shows once typing pauses.

        ``scope``: the list's filters as a :class:`ListQuery` (which of them a search obeys:
        :mod:`hermes_state.search.options`); without it the keyword filters (``source_filter``
        of upstream's ``search_messages``, ``exclude_sources``, ``workspace``,
        ``include_hidden``) are translated into one. ``sort``: ``rank`` (the default: every
        match ranked by conversation, :mod:`hermes_state.search.by_conversation`; past
        ``TUNING.CONVERSATION_RANKED_ROWS`` matches, the newest that many) | ``auto`` (what a
        keystroke affords, latency-bounded: the browser asks this while typing) | ``newest``;
        ``prefix_last=True`` makes the last plain word (≥ 3 characters) a prefix query for
        search-as-you-type. The hits come by conversation, best first (``order``:
        ``relevance`` by :class:`~hermes_state.search.Weights`, or ``newest``), conversations
        found across messages after those holding every word in one message: see
        :mod:`hermes_state.search.conversations`; never raises on query text. ``window``: with
        ``sort="auto"``, how many of the newest matches are ranked when not all can be (None:
        ``TUNING.WINDOW``; several stores searched as one ask each for its share).
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
                                now=now, sources=sources, window=window)
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
        if session_id and cwd:
            sessions.update_column(self.store, session_id, "cwd", cwd)

    def update_session_model(self, session_id: str, model: str) -> None:
        """Set the session's model unconditionally (a mid-session model switch)."""
        sessions.update_column(self.store, session_id, "model", model)

    def update_session_meta(self, session_id: str, model_config_json: str, model: str | None = None) -> None:
        """Replace ``model_config`` (JSON text) and, when given, the model."""
        sessions.update_session_meta(self.store, session_id, model_config_json, model)

    def try_acquire_compression_lock(self, session_id: str, holder: str, ttl_seconds: float = 300.0) -> bool:
        """Take the per-session compression lock; False if another holder has a live one."""
        return compression_locks.try_acquire(self.store, session_id, holder, ttl_seconds)

    def release_compression_lock(self, session_id: str, holder: str) -> None:
        """Release the lock if ``holder`` still owns it; otherwise nothing happens."""
        compression_locks.release(self.store, session_id, holder)

    def get_compression_lock_holder(self, session_id: str) -> str | None:
        """The holder of the session's unexpired compression lock, or None."""
        return compression_locks.holder(self.store, session_id)

    def set_session_pinned(self, session_id: str, pinned: bool) -> bool:
        """Pin or unpin a conversation (its whole compression lineage); True if it exists."""
        self.lister.forget_pins()  # our own commit does not move this connection's data_version
        return set_pinned(self.store, session_id, pinned)

    def set_session_archived(self, session_id: str, archived: bool) -> bool:
        """Archive (hide from the default list) or unarchive a session and its whole
        compression lineage. True if any row changed."""
        return sessions.set_archived(self.store, session_id, archived)

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

    # -------------------------------------------------- handoff (handoff.py)

    def request_handoff(self, session_id: str, platform: str) -> bool:
        """Mark a handoff to ``platform`` pending, unless one is already pending or running."""
        return handoff.request_handoff(self.store, session_id, platform)

    def get_handoff_state(self, session_id: str) -> dict | None:
        """``{"state", "platform", "error"}`` of a session, or None if there is no session."""
        return handoff.get_handoff_state(self.store, session_id)

    def list_pending_handoffs(self) -> list[dict]:
        """Sessions with a pending handoff, oldest first."""
        return handoff.list_pending_handoffs(self.store)

    def claim_handoff(self, session_id: str) -> bool:
        """pending → running; True if this call made the transition."""
        return handoff.claim_handoff(self.store, session_id)

    def complete_handoff(self, session_id: str) -> None:
        handoff.complete_handoff(self.store, session_id)

    def fail_handoff(self, session_id: str, error: str) -> None:
        """Mark the handoff failed with (the first 500 characters of) ``error``."""
        handoff.fail_handoff(self.store, session_id, error)

    # -------------------------------------------------- Telegram DM topics (telegram_topics.py; explicit opt-in)

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
        return session_lists.unlinked_telegram_sessions(self.store, user_id, limit)


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
