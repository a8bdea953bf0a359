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
import re
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from .capabilities import Capabilities
from .errors import DatabaseError, ReadOnlyError, TitleChangedError  # noqa: F401 (ReadOnlyError: re-exported)
from .lenient_text import lenient_text, refused_as_undecodable
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
from .recency import RecencyWalk as _RecencyWalk
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
from .visibility import Rules, continuation_sql
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


# MS-6: memory-context scrubbing.
_MEMORY_BLOCK_RE = re.compile(
    r"<\s*memory-context\s*>.*?<\s*/\s*memory-context\s*>", re.IGNORECASE | re.DOTALL
)
_MEMORY_NOTE_RE = re.compile(
    r"\[System note:\s*The following is recalled memory context,\s*NOT new user input\."
    r"\s*Treat as informational background data\.\]\s*",
    re.IGNORECASE,
)
_MEMORY_TAG_RE = re.compile(r"<\s*/?\s*memory-context\s*>", re.IGNORECASE)


def scrub_memory_context(text: str) -> str:
    """Remove injected memory-context blocks, notes and stray tags (MS-6)."""
    text = _MEMORY_BLOCK_RE.sub("", text)
    text = _MEMORY_NOTE_RE.sub("", text)
    return _MEMORY_TAG_RE.sub("", text)


def compute_preview(first_user_content: str | None) -> str:
    """LI-3: the list preview from the first user message's text."""
    if first_user_content is None:
        return ""
    window = first_user_content.replace("\n", " ").replace("\r", " ")[:63]
    raw = window.strip()
    if not raw:
        return ""
    return raw[:60] + ("..." if len(raw) > 60 else "")


#: "No condition" for :meth:`SessionDB.set_session_title`'s ``expected``.
_ANY = object()


class Listed(list):
    """Rows of a list, and whether they are exactly what the store holds now (``exact``): a
    provisional first page (see :meth:`SessionDB.list_sessions_rich`) may not be."""

    def __init__(self, rows=(), *, exact: bool = True) -> None:
        super().__init__(rows)
        self.exact = exact


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
        #: ``(rules, {filters: (where, params)})``: see :meth:`_rich_filters`.
        self._filters_kept: tuple[Rules, dict] | None = None
        self._extra_pins: frozenset[str] | None = None
        self._pins_cache: tuple[int, frozenset[str]] | None = None
        self._count_cache: dict[tuple, tuple[int, int]] = {}
        #: Per source: (data_version, its sessions counted up to SOURCE_WALK_CERTAIN, the
        #: store's largest rowid), for SessionDB._walk_start_for.
        self._source_sizes: dict[str, tuple[int, int, int]] = {}
        #: The sessions of the newest messages, kept between lists by last activity (BR-10).
        self._recency = _RecencyWalk(path)
        self._summary_cols: tuple[Capabilities, str] | None = None
        # The recency index is kept for the next run when the store closes.
        self.store.on_close.append(lambda: self._recency.save())

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

    @property
    def extra_pins(self) -> frozenset[str]:
        """Pins kept in our settings file, for a store without ``sessions.pinned``."""
        if self._extra_pins is None:
            if self._has_session_column("pinned"):
                self._extra_pins = frozenset()
            else:
                from .pins import pinned_in_file

                self._extra_pins = pinned_in_file(self.db_path)
        return self._extra_pins

    @extra_pins.setter
    def extra_pins(self, value: frozenset[str]) -> None:
        self._extra_pins = frozenset(value)

    def pinned_ids(self) -> frozenset[str]:
        """Ids of the pinned sessions, exactly (on a v30 store: a scan of every session row,
        kept until another connection commits)."""
        return self._pinned_ids()

    @property
    def recency_guessed(self) -> bool:
        """This reader's recency index is only a guess (see :meth:`RecencyWalk.guess`): its
        provisional pages may rank otherwise than the store says."""
        return self._recency.guessed

    def build_recency(self) -> _RecencyWalk:
        """A recency index built on this connection (one seek per session), for
        :meth:`adopt_recency` by another: the build need not hold that one's lock."""
        walk = _RecencyWalk(self.db_path)
        self._read(walk.build)
        return walk

    def adopt_recency(self, walk: _RecencyWalk) -> None:
        """Use ``walk`` (built by another connection to the same file) as this reader's
        recency index; it is kept in this reader's cache file."""
        with self._lock:
            walk.cache = self._recency.cache
            if walk.pins is None:
                walk.pins = self._recency.pins
            self._recency = walk
            walk.save()

    def assume_pins(self, pins: frozenset[str]) -> frozenset[str] | None:
        """The pinned sessions as another connection found them exactly: what a provisional
        page (see :meth:`list_sessions_rich`) rests on from now on. Returns what it rested on
        before (None: nothing yet)."""
        previous, self._recency.pins = self._recency.pins, frozenset(pins)
        return previous

    def _pinned_first(self, alias: str = "s") -> str:
        """ORDER BY term: pinned conversations first (the column, else the settings file)."""
        rank = self._pinned_rank(alias)
        return f"{rank} DESC, " if rank is not None else ""

    def _pinned_rank(self, alias: str = "s") -> str | None:
        """What :meth:`_pinned_first` orders by (higher first); None when nothing is pinned."""
        if self._has_session_column("pinned"):
            return self.rules.pinned_rank(alias)
        pins = self.extra_pins
        if not pins:
            return None
        quoted = ",".join("'" + p.replace("'", "''") + "'" for p in sorted(pins))
        return f"({alias}.id IN ({quoted}))"

    @property
    def recency_cache(self) -> Path | None:
        """A file that keeps this reader's recency index (which sessions hold the newest
        messages, BR-10) between runs, or None (the default: kept in memory only). Set it
        before the first list by last activity; see :mod:`hermes_state.recency`."""
        return self._recency.cache

    @recency_cache.setter
    def recency_cache(self, path: Path | None) -> None:
        self._recency.cache = Path(path) if path is not None else None


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
        row = self._fetchone("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return dict(row) if row else None

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
        where, params = self._rich_filters(
            source, exclude_sources, not exclude_children, min_message_count,
            include_archived, archived_only,
        )
        return int(self._fetchone(f"SELECT COUNT(*) FROM sessions s {where}", params)[0])

    def _rich_filters(
        self,
        source: str | None,
        exclude_sources: list[str] | None,
        include_children: bool,
        min_message_count: int = 0,
        include_archived: bool = False,
        archived_only: bool = False,
        include_hidden: bool = False,
        include_delegates: bool = False,
        workspace: str | None = None,
        walk_source: bool = False,
    ) -> tuple[str, list[Any]]:
        """WHERE clause (alias ``s``) shared by listing and counting (built once per filters
        and schema: a page asks for it twice, a browser on every page); ``walk_source`` as
        :func:`_list_filters`."""
        rules = self.rules
        key = (source, tuple(exclude_sources or ()), include_children, min_message_count, include_archived,
               archived_only, include_hidden, include_delegates, workspace, walk_source)
        kept = self._filters_kept
        if kept is None or kept[0] is not rules:
            kept = self._filters_kept = (rules, {})
        found = kept[1].get(key)
        if found is not None:
            return found[0], list(found[1])
        where, params = self._build_filters(
            rules, source, exclude_sources, include_children, min_message_count, include_archived,
            archived_only, include_hidden, include_delegates, workspace, walk_source,
        )
        if len(kept[1]) >= 64:
            kept[1].clear()
        kept[1][key] = (where, tuple(params))
        return where, params

    def _build_filters(
        self, rules: Rules, source: str | None, exclude_sources: list[str] | None, include_children: bool,
        min_message_count: int, include_archived: bool, archived_only: bool, include_hidden: bool,
        include_delegates: bool, workspace: str | None, walk_source: bool = False,
    ) -> tuple[str, list[Any]]:
        where, params = _list_filters(rules, source, exclude_sources, include_children, include_delegates,
                                      walk_source)
        # The row's own flags first: SQLite tests a scanned row's terms in this order, and the
        # lineage test (subqueries, JSON) rejected what a flag would have (the archived view
        # by last activity: 170 -> 130 ms a page at 250k sessions). (No parameters: the
        # order of the placeholders is unchanged.)
        flags: list[str] = []
        if self._has_session_column("archived"):
            if archived_only:
                flags.append("s.archived = 1")
            elif not include_archived:
                flags.append("s.archived = 0")
        elif archived_only:
            flags.append("0")
        if not include_hidden and self._has_session_column("hidden"):
            flags.append("COALESCE(s.hidden, 0) = 0")  # UC-3: hidden unless asked for
        clauses = flags + ([where[len("WHERE "):]] if where else [])
        if min_message_count and min_message_count > 0:
            clauses.append("s.message_count >= ?")
            params.append(int(min_message_count))
        narrow, narrow_params = rules.workspace_clause(workspace)
        if narrow is not None:  # BR-13: one workspace
            clauses.append(narrow)
            params.extend(narrow_params)
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", params

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
        return dict(row) if row else None

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
        """Sessions newest-started first with ``preview`` and ``last_active`` (LI-2 … LI-5).

        Unless ``include_children``, only roots and branches are listed (delegate runs marked
        ``_delegate_from`` never); compression roots are then replaced by their live tip
        (``_lineage_root_id`` names the root). A child whose parent row is missing (a broken
        link) is listed as a root. Upstream v16's options: archived sessions only with
        ``include_archived`` (or only them, ``archived_only``); ``min_message_count``;
        ``order_by_last_active`` orders by the newest activity along each compression chain;
        ``id_query`` keeps rows whose id, or an id along their chain, contains it
        (case-insensitive). ``_columns`` (for :meth:`list_summaries`) reads only these
        columns of each row (alias ``s``) instead of all of them.

        ``provisional`` (a first page that must be quick, BR-10): the pinned sessions may be
        taken from the recency cache (:attr:`recency_cache`) instead of reading every session
        row to find them; the list returned (a :class:`Listed`) then says ``exact = False``,
        and the caller asks again without it once the page is shown.
        """
        # One read snapshot: the filters, the walk and the rows see one state, and the
        # schema is checked once for all of them (see ``capabilities``).
        return self._read_snapshot(lambda: self._list_sessions_rich(
            source, exclude_sources, limit, offset, include_children, min_message_count,
            project_compression_tips, order_by_last_active, include_archived, archived_only, id_query,
            include_hidden, include_delegates, workspace, _columns, provisional,
        ))

    def _list_sessions_rich(
        self, source: str | None, exclude_sources: list[str] | None, limit: int, offset: int,
        include_children: bool, min_message_count: int, project_compression_tips: bool,
        order_by_last_active: bool, include_archived: bool, archived_only: bool, id_query: str | None,
        include_hidden: bool, include_delegates: bool, workspace: str | None, _columns: str | None,
        provisional: bool,
    ) -> list[dict]:
        columns = _columns or "s.*"
        where, params = self._rich_filters(
            source, exclude_sources, include_children, min_message_count,
            include_archived, archived_only, include_hidden, include_delegates, workspace,
        )
        needle = (id_query or "").strip().lower()
        if (
            order_by_last_active and not needle and not include_children
            and 0 <= offset and offset + limit <= _ACTIVITY_WALK_ROWS
        ):
            # The first pages by last activity without computing it for every session
            # (BR-10): only the conversations that can be on the page are ranked.
            rows = self._activity_first_pages(
                where, params, limit, offset, project_compression_tips, include_delegates, columns,
                provisional,
            )
            if rows is not None:
                return rows
        if order_by_last_active or needle:
            return self._chain_page(
                where, params, needle, order_by_last_active, limit, offset,
                project_compression_tips and not include_children, include_delegates, columns,
            )
        else:
            if source and self._walk_start_for(source, offset + limit):
                where, params = self._rich_filters(
                    source, exclude_sources, include_children, min_message_count, include_archived,
                    archived_only, include_hidden, include_delegates, workspace, walk_source=True,
                )
            select = self._by_start_select(columns)
            pins = sorted(self._pinned_ids())
            if pins:
                # Pinned first without giving up the start-time index: the few pinned rows
                # are read apart, the rest walk the index (sorting every session by a
                # "pinned" flag took 400 ms at 50k sessions).
                return self._pinned_then_rest(select, where, params, pins, limit, offset,
                                              project_compression_tips and not include_children,
                                              include_delegates, columns)
            sql = f"{select} {where} ORDER BY {self._by_start()}"
        sql += " LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]

        rules = self.rules
        file_pins = self.extra_pins

        def do(conn: sqlite3.Connection) -> list[dict]:
            rows = [_rich_row(row) for row in conn.execute(sql, params).fetchall()]
            return _finish_listing(conn, rows, rules, file_pins,
                                   project_compression_tips and not include_children, include_delegates,
                                   columns)

        return self._read(do)

    def _chain_page(
        self, where: str, params: list[Any], needle: str, by_activity: bool, limit: int, offset: int,
        project: bool, include_delegates: bool, columns: str,
    ) -> list[dict]:
        """A page ranked along each conversation's compression chain (by its last activity, or
        found by an id along the chain), in two statements: the page's ids ranked, then their
        rows and previews. One statement computed every listed session's preview and columns
        before sorting them: a page deep in the list by last activity took 7.8-8.4 s at 5M
        messages (v30), 4.4-4.6 s ranking ids alone."""
        rules = self.rules
        ranked_sql, ranked_params = _chain_list_sql(
            where, params, needle, by_activity, rules, self._pinned_first(), "s.id", previews=False,
        )
        ranked_sql += " LIMIT ? OFFSET ?"
        ranked_params += [int(limit), int(offset)]
        file_pins = self.extra_pins

        def do(conn: sqlite3.Connection) -> list[dict]:
            cursor = conn.cursor()
            cursor.row_factory = None
            ranked = [sid for sid, _chain_last in cursor.execute(ranked_sql, ranked_params).fetchall()]
            return _rows_of(conn, ranked, rules, file_pins, project, include_delegates, columns)

        return self._read(do)

    def rank_listed(
        self,
        source: str | None = None,
        exclude_sources: list[str] | None = None,
        *,
        include_archived: bool = False,
        archived_only: bool = False,
        include_hidden: bool = False,
        include_delegates: bool = False,
        workspace: str | None = None,
        by_activity: bool = True,
    ) -> list[str]:
        """The ids of every conversation :meth:`list_summaries` lists under these filters, in
        its order (by last activity, or with ``by_activity=False`` by start; compression roots:
        each is shown at its tip): the whole ranking its pages are slices of, for a reader that
        pages deep into the list. By last activity, one scan of every listed session and its
        newest message (seconds at 250k sessions); by start, one walk of the start index
        (~1 s there), where each page deep in the list walked it up to its offset instead."""
        where, params = self._rich_filters(
            source, exclude_sources, False, 0, include_archived, archived_only, include_hidden,
            include_delegates, workspace,
        )
        if not by_activity:
            return self._read_snapshot(lambda: self._rank_by_start(where, params))
        sql, params = _chain_list_sql(
            where, params, "", True, self.rules, self._pinned_first(), "s.id", previews=False,
        )

        def do(conn: sqlite3.Connection) -> list[str]:
            cursor = conn.cursor()
            cursor.row_factory = None
            return [sid for sid, _chain_last in cursor.execute(sql, params)]

        return self._read_snapshot(lambda: self._read(do))

    def _rank_by_start(self, where: str, params: list[Any]) -> list[str]:
        """:meth:`rank_listed` by start: the pinned conversations, then the rest, each in
        :data:`BY_START` order -- as :meth:`_pinned_then_rest` reads a page."""
        pins = sorted(self._pinned_ids())
        select = "SELECT s.id FROM sessions s"
        statements = _pinned_and_rest(select, where, params, pins)
        order = self._by_start()

        def do(conn: sqlite3.Connection) -> list[str]:
            cursor = conn.cursor()
            cursor.row_factory = None
            ids: list[str] = []
            for sql, args in statements:
                ids += [row[0] for row in cursor.execute(f"{sql} ORDER BY {order}", args)]
            return ids

        return self._read(do)

    def summaries_of(self, conversation_ids: list[str], *, include_delegates: bool = False) -> list["SessionSummary"]:
        """The rows :meth:`list_summaries` shows for these conversations (ids from
        :meth:`rank_listed`), in this order; an id no longer in the store is left out."""
        from .models import SessionSummary

        rules, file_pins, columns = self.rules, self.extra_pins, self._summary_columns()
        ids = list(conversation_ids)

        def do(conn: sqlite3.Connection) -> list[dict]:
            return _rows_of(conn, ids, rules, file_pins, True, include_delegates, columns)

        return SessionSummary.from_listing(self._read_snapshot(lambda: self._read(do)))

    def _activity_first_pages(
        self, where: str, params: list[Any], limit: int, offset: int, project: bool,
        include_delegates: bool, columns: str = "s.*", provisional: bool = False,
    ) -> "Listed | None":
        """A page near the top of the list by last activity (BR-10), or None when the fast
        path cannot vouch for it (then the general query answers).

        One read transaction, so the walk, the ranking and the rows see the same state: the
        conversations that can be on the page are found from the newest messages
        (:func:`_activity_candidates`) and read with what ranks them, ranked by their chains'
        last activity, and only the page's previews are read (:func:`_activity_page`)."""
        rules = self.rules
        pinned_rank = self._pinned_rank()
        file_pins = self.extra_pins

        def do(conn: sqlite3.Connection, pins: frozenset[str]) -> list[dict] | None:
            walk = self._recency
            wanted = offset + limit
            for _attempt in range(4):
                met = _MetConversations(columns, where, params, rules, pinned_rank, previews=offset == 0)
                try:
                    floor = _activity_candidates(conn, walk, met, wanted, pins, provisional)
                except BaseException:
                    walk.reset()  # never keep a walk cut short by an error or an interrupt
                    raise
                if floor is None:
                    return None
                paged = _activity_page(conn, met, floor, pins, limit, offset, rules)
                if isinstance(paged, int):
                    # Conversations met in the walk that rank below its floor (their newest
                    # messages rewound): walk on for as many more.
                    wanted += paged
                    continue
                if paged is None:
                    return None
                rows, tips = paged
                return _finish_listing(conn, rows, rules, file_pins, project, include_delegates, columns, tips)
            return None

        def snapshot() -> Listed | None:
            pins, exact = self._pinned_ids(provisional=provisional), True
            if pins is None:
                # The pins the recency cache kept (read with it), or none known yet (a first
                # run): no scan of every row -- ~0.1 s at 250k sessions, ~0.75 s from a cold
                # page cache -- before the first page. The caller reads the page again.
                self._read(lambda conn: self._recency.refresh(conn, guess_ok=True))
                pins, exact = self._recency.pins or frozenset(), False
            rows = self._read(lambda conn: do(conn, pins))
            return None if rows is None else Listed(rows, exact=exact and not self._recency.guessed)

        return self._read_snapshot(snapshot)

    def _pinned_ids(self, provisional: bool = False) -> frozenset[str] | None:
        """Ids of pinned sessions: the v30 column (read once per change of the store, as the
        column has no index: a scan of every session row), else our settings file.
        ``provisional``: None rather than scanning (the caller may use the recency cache's)."""
        if not self._has_session_column("pinned"):
            return self.extra_pins
        version = self.data_version()
        cached = self._pins_cache
        if cached is not None and cached[0] == version:
            return cached[1]
        if provisional:
            return None
        pins = frozenset(r[0] for r in self._fetchall("SELECT id FROM sessions WHERE pinned != 0"))
        self._pins_cache = (version, pins)
        self._recency.pins = pins  # kept with the recency index for the next run
        return pins

    def _pinned_then_rest(
        self, select: str, where: str, params: list[Any], pins: list[str], limit: int, offset: int,
        project: bool, include_delegates: bool, columns: str = "s.*",
    ) -> list[dict]:
        """A page of the start-ordered list with the pinned rows first (see list_sessions_rich)."""
        (pinned_sql, pinned_args), (rest_sql, rest_args) = _pinned_and_rest(select, where, params, pins)
        rules = self.rules
        file_pins = self.extra_pins
        order = self._by_start()

        def do(conn: sqlite3.Connection) -> list[dict]:
            pinned = conn.execute(f"{pinned_sql} ORDER BY {order}", pinned_args).fetchall()
            page = pinned[offset: offset + limit]
            room = limit - len(page)
            if room > 0:
                page += conn.execute(
                    f"{rest_sql} ORDER BY {order} LIMIT ? OFFSET ?",
                    [*rest_args, room, max(0, offset - len(pinned))],
                ).fetchall()
            rows = [_rich_row(row) for row in page]
            return _finish_listing(conn, rows, rules, file_pins, project, include_delegates, columns)

        return self._read(do)

    def iter_sessions_rich(
        self,
        source: str | None = None,
        exclude_sources: list[str] | None = None,
        limit: int = 20,
        *,
        archived_only: bool = False,
        chunk: int = 500,
        brief: bool = False,
    ) -> Iterator[dict]:
        """The rows ``list_sessions_rich(source, exclude_sources, limit,
        archived_only=archived_only)`` returns -- newest-started first, pinned first,
        compression roots at their tips -- one at a time, ``chunk`` rows read at once instead
        of the whole list (``hermes sessions list --limit 1000000`` held every row of a
        197k-session store at once: 0.9 GB). ``brief``: only the columns
        :meth:`list_summaries` reads (~20 of a v30 row's ~60), not all of them.

        One read snapshot from the first row to the last (no row listed twice or missed
        while other processes commit), held with the instance lock until the iterator is
        exhausted or closed: read it to the end or close it."""
        with self.store.snapshot():
            conn = self._require_conn()
            if self.compat_views:
                self.capabilities
            where, params = self._rich_filters(
                source, exclude_sources, False, 0, False, archived_only, False, False, None,
                walk_source=bool(source) and self._walk_start_for(source, int(limit)),
            )
            columns = self._summary_columns() if brief else "s.*"
            rules, file_pins = self.rules, self.extra_pins
            select = self._by_start_select(columns)
            pins = sorted(self._pinned_ids())
            # As list_sessions_rich: the pinned rows, then the rest by the start index.
            statements = _pinned_and_rest(select, where, params, pins)
            order = self._by_start()
            left = int(limit)
            for sql, args in statements:
                if left <= 0:
                    break
                for rows in _listed_chunks(
                    conn, f"{sql} ORDER BY {order} LIMIT ?", [*args, left], chunk,
                    lambda rows: _finish_listing(conn, rows, rules, file_pins, True, False, columns),
                ):
                    left -= len(rows)
                    yield from rows

    def _walk_start_for(self, source: str, rows: int) -> bool:
        """Should the list by start, filtered to ``source``, walk the start index and test
        each session's source (a page of a common source: ~0.3 ms at 250k sessions) rather
        than read the source's sessions through a source index and sort them all, their
        previews and last activity computed for each first (cli, 40 % of them: 0.5 s a page)?
        Yes unless the source is so rare that the walk would read most of the index to find
        ``rows`` of it (a source of ten sessions: ~100 ms walked, 0.1 ms sorted). Decided from
        a count of the source's sessions capped at :data:`SOURCE_WALK_CERTAIN` (one index
        range, kept until another commit) against the store's size."""
        if "sessions" in self.compat_views:
            return False  # (a view has no start index of its own to walk)
        version = self.data_version()
        kept = self._source_sizes.get(source)
        if kept is None or kept[0] != version:
            conn = self._require_conn()
            found = int(conn.execute(
                "SELECT COUNT(*) FROM (SELECT 1 FROM sessions WHERE source = ? LIMIT ?)",
                (source, SOURCE_WALK_CERTAIN),
            ).fetchone()[0])
            total = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM sessions").fetchone()[0])
            if len(self._source_sizes) > 64:
                self._source_sizes.clear()
            kept = self._source_sizes[source] = (version, found, total)
        _version, found, total = kept
        if found >= SOURCE_WALK_CERTAIN:
            return True
        walked = min(total, rows * total / max(found, 1))
        return walked * WALK_ROW_COST < found * SORTED_ROW_COST

    def _by_start(self) -> str:
        """The ORDER BY of the list by start (:data:`BY_START`, or through a view
        :data:`BY_START_VIEW`)."""
        return BY_START_VIEW if "sessions" in self.compat_views else BY_START

    def _by_start_select(self, columns: str) -> str:
        """The listing's SELECT (alias ``s``): ``columns``, the preview's raw text and the
        last activity."""
        rules = self.rules
        return (
            f"SELECT {columns}, {rules.preview_sql()} AS _preview_raw, "
            f"{rules.last_active_sql()} AS last_active FROM sessions s"
        )

    def search_sessions(self, source: str | None = None, limit: int = 20, offset: int = 0) -> list[dict]:
        """Every session (children included), most recently used first (LI-6)."""
        where = "WHERE s.source = ?" if source else ""
        params: list[Any] = [source] if source else []
        sql = (
            f"SELECT s.*, {self.rules.last_active_sql()} AS last_active FROM sessions s {where} "
            "ORDER BY last_active DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?"
        )
        return [dict(row) for row in self._fetchall(sql, params + [int(limit), int(offset)])]

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
            delegates = _delegate_descendants(conn, [session_id])
            _delete_sessions(conn, delegates + [session_id])
            return delegates

        delegates = self._execute_write(do)
        deleted = delegates is not None
        if deleted and sessions_dir is not None:
            _remove_session_files(Path(sessions_dir), list(delegates) + [session_id])
        return deleted

    def prune_sessions(
        self,
        older_than_days: float = 90,
        source: str | None = None,
        sessions_dir: Path | None = None,
    ) -> int:
        """Delete ended sessions started before the cutoff; children are orphaned (EX-5)."""
        sql, params = _prunable_sql(older_than_days, source)
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
            _delete_sessions(conn, ids)
            return ids

        ids = self._execute_write(do)
        if ids and sessions_dir is not None:
            _remove_session_files(Path(sessions_dir), ids)
        return len(ids)

    def prunable_session_ids(self, older_than_days: float = 90, source: str | None = None) -> list[str]:
        """The ids :meth:`prune_sessions` would delete now (for a count or a dry run)."""
        sql, params = _prunable_sql(older_than_days, source)
        return [row[0] for row in self._fetchall(sql, params)]

    def prunable_totals(self, older_than_days: float = 90, source: str | None = None) -> tuple[int, int]:
        """How many sessions :meth:`prune_sessions` would delete now, and their messages (by
        the sessions' counters), in one statement."""
        sql, params = _prunable_sql(older_than_days, source, "COUNT(*), COALESCE(SUM(message_count), 0)")
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
        sql, params = _prunable_sql(older_than_days, source, "id, source, title")

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
            self,
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
    ):
        """Structured, latency-bounded search for the UI → :class:`~hermes_state.models.SearchResult`.

        ``sort`` is ``auto`` | ``rank`` | ``newest``; ``prefix_last=True`` makes the last plain
        word (≥ 3 characters) a prefix query for search-as-you-type; hidden sessions' messages
        only with ``include_hidden``. See :func:`hermes_state.search_engine.search`; never
        raises on query text.
        """
        from .search_engine import search

        return search(
            self,
            query,
            limit=limit,
            offset=offset,
            sort=sort,
            source_filter=source_filter,
            exclude_sources=exclude_sources,
            role_filter=role_filter,
            prefix_last=prefix_last,
            workspace=workspace,
            include_hidden=include_hidden,
        )

    # ------------------------------------------------------------------ typed read API

    def list_summaries(
        self,
        source: str | None = None,
        exclude_sources: list[str] | None = None,
        limit: int = 50,
        offset: int = 0,
        *,
        include_archived: bool = False,
        archived_only: bool = False,
        include_hidden: bool = False,
        order_by_last_active: bool = False,
        include_delegates: bool = False,
        workspace: str | None = None,
        provisional: bool = False,
    ) -> "Listed":
        """Typed rows of :meth:`list_sessions_rich` (compression chains shown at their tip);
        ``provisional`` as there (the answer's ``exact`` says whether it was)."""
        from .models import SessionSummary

        def read() -> Listed:
            rows = self.list_sessions_rich(
                source, exclude_sources, limit=limit, offset=offset, include_archived=include_archived,
                archived_only=archived_only, include_hidden=include_hidden,
                order_by_last_active=order_by_last_active, include_delegates=include_delegates,
                workspace=workspace,
                _columns=self._summary_columns(), provisional=provisional,
            )
            return Listed(SessionSummary.from_listing(rows), exact=getattr(rows, "exact", True))

        return self._read_snapshot(read)

    def _summary_columns(self) -> str:
        """The columns a :class:`~hermes_state.models.SessionSummary` is made of, as far as
        this store has them (a v30 row has ~60: converting them all was a third of a page)."""
        caps = self.capabilities
        cached = self._summary_cols
        if cached is None or cached[0] is not caps:
            names = [name for name in _SUMMARY_COLUMNS if name == "id" or self._has_session_column(name)]
            cached = self._summary_cols = (caps, ", ".join(_summary_column(name) for name in names))
        return cached[1]

    def count_listed(
        self,
        source: str | None = None,
        exclude_sources: list[str] | None = None,
        include_archived: bool = False,
        archived_only: bool = False,
        include_hidden: bool = False,
        include_delegates: bool = False,
        workspace: str | None = None,
    ) -> int:
        """How many rows :meth:`list_sessions_rich` would list in total (for paging).

        On a read-only store (a viewer) the answer is kept until another process commits
        (``PRAGMA data_version``): a browser asks on every page load, and counting every
        session took ~30 ms at 50k sessions."""
        where, params = self._rich_filters(
            source, exclude_sources, False, 0, include_archived, archived_only, include_hidden,
            include_delegates, workspace,
        )
        key = (where, tuple(params))
        version = self.data_version() if self.read_only else None
        cached = self._count_cache.get(key)
        if version is not None and cached is not None and cached[0] == version:
            return cached[1]
        count = int(self._fetchone(f"SELECT COUNT(*) FROM sessions s {where}", params)[0])
        if version is not None:
            if len(self._count_cache) > 64:
                self._count_cache.clear()
            self._count_cache[key] = (version, count)
        return count

    def get_summary(self, session_id: str):
        """A :class:`~hermes_state.models.SessionSummary` of one session (no projection)."""
        found = self.get_summaries([session_id])
        return found[0] if found else None

    def get_summaries(self, session_ids: "Iterable[str]") -> list:
        """:meth:`get_summary` of each id, in the order given, in one statement (a title
        match shows eight); ids without a session are left out."""
        from .models import SessionSummary

        ids = list(dict.fromkeys(session_ids))
        if not ids:
            return []
        rows = self._fetchall(
            f"SELECT s.*, {self.rules.preview_sql()} AS _preview_raw, {self.rules.last_active_sql()} AS last_active "
            f"FROM sessions s WHERE s.id IN ({','.join('?' for _ in ids)})",
            ids,
        )
        found = {}
        for row in rows:
            data = _rich_row(row)
            if "pinned" not in data:
                data["pinned"] = int(data["id"] in self.extra_pins)
            found[data["id"]] = data
        return SessionSummary.from_rows([found[sid] for sid in ids if sid in found])

    def get_message_models(self, session_id: str):
        """Typed messages of one session, ordered by ``(timestamp, id)``."""
        from .models import Message, from_store

        return [from_store(Message, row) for row in self.get_messages(session_id)]

    def lineage_tree(self, session_id: str):
        """The whole family of a session as a :class:`~hermes_state.models.LineageNode` tree."""
        return self._read(lambda conn: _lineage_build_tree(conn, session_id))

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
        from .pins import set_pinned_in_file

        def lineage(conn: sqlite3.Connection) -> list[str]:
            return _compression_lineage(conn, session_id)

        if not self._has_session_column("pinned"):
            ids = self._read(lineage)
            if not ids:
                return False
            self.extra_pins = set_pinned_in_file(self.db_path, ids, pinned)
            return True

        def do(conn: sqlite3.Connection) -> bool:
            ids = lineage(conn)
            if not ids:
                return False
            marks = ",".join("?" for _ in ids)
            conn.execute(f"UPDATE sessions SET pinned = ? WHERE id IN ({marks})", [1 if pinned else 0, *ids])
            return True

        self._pins_cache = None  # our own commit does not move this connection's data_version
        return bool(self._execute_write(do))

    def set_session_archived(self, session_id: str, archived: bool) -> bool:
        """Archive (hide from the default list) or unarchive a session and its whole
        compression lineage, ancestors and continuations alike. True if any row changed."""
        self.store.require_column("sessions", "archived")
        value = 1 if archived else 0

        def do(conn: sqlite3.Connection) -> bool:
            ids = _compression_lineage(conn, session_id)
            if not ids:
                return False
            marks = ",".join("?" for _ in ids)
            cursor = conn.execute(f"UPDATE sessions SET archived = ? WHERE id IN ({marks})", [value, *ids])
            return cursor.rowcount > 0

        return bool(self._execute_write(do))

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
        return [_rich_row(row) for row in rows]

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
            delegates = _delegate_descendants(conn, existing)
            _delete_sessions(conn, delegates + existing)
            return existing, delegates

        existing, delegates = self._execute_write(do)
        if sessions_dir is not None and (existing or delegates):
            _remove_session_files(Path(sessions_dir), delegates + existing)
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
            _remove_session_files(Path(sessions_dir), [session_id])
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
        return [dict(row) for row in rows]

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
        return [_rich_row(row) for row in rows]


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


def _list_filters(
    rules: Rules, source: str | None, exclude_sources: list[str] | None, include_children: bool,
    include_delegates: bool = False, walk_source: bool = False,
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if not include_children:
        # UC-3: roots, orphans, branches and reset children; delegate runs never (they
        # stay hidden even once orphaned, as upstream v16 keeps them) unless asked for (BR-15).
        listed = rules.listed("s")
        clauses.append(f"({listed} OR {rules.delegate('s')})" if include_delegates else listed)
    if source:
        # ``walk_source``: tested on each row walked, not looked up through a source index
        # (the unary ``+`` keeps SQLite from using one; see SessionDB._walk_start_for).
        clauses.append("+s.source = ?" if walk_source else "s.source = ?")
        params.append(source)
    if exclude_sources:
        clauses.append(f"s.source NOT IN ({','.join('?' for _ in exclude_sources)})")
        params.extend(exclude_sources)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def _listed_chunks(
    conn: sqlite3.Connection, sql: str, params: list[Any], chunk: int,
    finish: Callable[[list[dict]], list[dict]],
) -> Iterator[list[dict]]:
    """The rows of ``sql`` as listing rows, ``chunk`` at a time, each chunk through
    ``finish``. Text that is not UTF-8 is read leniently (as ``read_leniently`` does for a
    whole read): the statement runs again so decoding and the rows already handed out are
    passed over (one snapshot: the same rows, in the same order)."""
    done = 0
    previous = conn.text_factory
    try:
        while True:
            try:
                cursor = conn.execute(sql, params)
                skip = done
                while skip > 0:
                    got = cursor.fetchmany(min(skip, chunk))
                    if not got:
                        break
                    skip -= len(got)
                while True:
                    batch = cursor.fetchmany(chunk)
                    if not batch:
                        return
                    rows = finish([_rich_row(row) for row in batch])
                    done += len(batch)
                    yield rows
            except sqlite3.OperationalError as exc:
                if not refused_as_undecodable(conn, exc):
                    raise
                conn.text_factory = lenient_text
    finally:
        conn.text_factory = previous


#: The list by start (LI-2): newest start first; sessions started at the same instant in the
#: order they were written (the rowid), as the start index ``started_at DESC`` keeps them -- so
#: it still serves the order alone, nothing sorted -- and named, so that a page read with
#: ``OFFSET`` and a slice of :meth:`SessionDB.rank_listed`'s ranking agree whatever plan SQLite
#: picks for each (a source filter reads the source index and sorts).
BY_START = "s.started_at DESC, s.rowid"
#: A source with at least this many sessions is listed by start by walking the start index
#: (see SessionDB._walk_start_for); below it, by its count against the store's size.
SOURCE_WALK_CERTAIN = 5_000
#: What one row costs (relative; measured at 250k sessions, v30): walked on the start index
#: and its source tested (~0.4 us), or read through the source index with its preview and
#: last activity, then sorted (~5-9 us).
WALK_ROW_COST = 0.4
SORTED_ROW_COST = 7.0
#: The same through a compatibility view (an older file read as v11): a view's rowid is NULL.
BY_START_VIEW = "s.started_at DESC, s.id"


def _pinned_and_rest(select: str, where: str, params: list[Any], pins: list[str]) -> list[tuple[str, list[Any]]]:
    """The start-ordered list with the pinned rows first, as two statements without their
    ORDER BY: the pinned rows, then the rest (which walk the start index); one, the whole
    list, when nothing is pinned."""
    if not pins:
        return [(f"{select} {where}", list(params))]
    marks = ",".join("?" for _ in pins)
    joiner = " AND " if where else "WHERE "
    return [
        (f"{select} {where}{joiner}s.id IN ({marks})", [*params, *pins]),
        (f"{select} {where}{joiner}s.id NOT IN ({marks})", [*params, *pins]),
    ]


def _rich_row(row: sqlite3.Row) -> dict:
    # Not dict(row): that looks every column up by name (quadratic in the ~60 columns of a
    # v30 row; 1.1 ms for a page of 50, against 0.15 ms this way).
    return _rich_tuple(row.keys(), row)


def _rich_tuple(names: list[str], values: Iterable[Any]) -> dict:
    data = dict(zip(names, values))
    data["preview"] = compute_preview(data.pop("_preview_raw", None))
    return data


#: What a :class:`~hermes_state.models.SessionSummary` reads of a session row.
_SUMMARY_COLUMNS = (
    "id", "source", "title", "started_at", "ended_at", "end_reason", "message_count", "tool_call_count",
    "model", "user_id", "parent_session_id", "input_tokens", "output_tokens", "estimated_cost_usd",
    "archived", "pinned", "hidden", "title_source", "cwd", "git_branch", "git_repo_root",
)

#: Summary columns read as their field's value when NULL (what ``_summary_fields`` did row by
#: row in Python), and the flags as 0 or 1 (any value but 0 sets one, as the filters read them).
_SUMMARY_DEFAULTS = {
    "source": "''", "started_at": "0.0", "message_count": "0", "tool_call_count": "0",
    "input_tokens": "0", "output_tokens": "0",
}
_SUMMARY_FLAGS = ("archived", "pinned", "hidden")


def _summary_column(name: str) -> str:
    """One column of :meth:`SessionDB._summary_columns`: as the summary's field takes it
    (see :meth:`~hermes_state.models.SessionSummary.from_listing`)."""
    if name in _SUMMARY_DEFAULTS:
        return f"COALESCE(s.{name}, {_SUMMARY_DEFAULTS[name]}) AS {name}"
    if name in _SUMMARY_FLAGS:
        return f"(COALESCE(s.{name}, 0) != 0) AS {name}"
    return f"s.{name}"


_TIP_FIELDS = (
    "id",
    "ended_at",
    "end_reason",
    "message_count",
    "tool_call_count",
    "title",
    "model",
    "system_prompt",
    "cwd",
)


def _rows_of(
    conn: sqlite3.Connection, ids: list[str], rules: Rules, file_pins: frozenset[str], project: bool,
    include_delegates: bool, columns: str,
) -> list[dict]:
    """The listing's rows of these sessions, in this order (with their previews and last
    activity, finished as every listing finishes them); ids not found are left out."""
    if not ids:
        return []
    by_id: dict[str, dict] = {}
    for start in range(0, len(ids), 400):
        chunk = ids[start:start + 400]
        for row in conn.execute(
            f"SELECT {columns}, {rules.preview_sql()} AS _preview_raw, {rules.last_active_sql()} AS last_active"
            f" FROM sessions s WHERE s.id IN ({_marks(len(chunk))})",
            _padded(chunk),
        ).fetchall():
            data = _rich_row(row)
            by_id[data["id"]] = data
    rows = [by_id[sid] for sid in ids if sid in by_id]
    return _finish_listing(conn, rows, rules, file_pins, project, include_delegates, columns)


def _finish_listing(
    conn: sqlite3.Connection, rows: list[dict], rules: Rules, file_pins: frozenset[str],
    project: bool, include_delegates: bool, columns: str = "s.*", tips: dict[str, str] | None = None,
) -> list[dict]:
    """What every listing does to its rows: pins from the settings file, compression roots
    shown at their tip (LI-5; ``tips``: those already known), delegate runs marked."""
    for row in rows:
        row.pop("_chain_last_active", None)
        if file_pins and "pinned" not in row:
            row["pinned"] = int(row["id"] in file_pins)
    if project:
        rows = _project_tips(conn, rows, rules, columns, tips)
    if include_delegates and rows:
        ids = [row["id"] for row in rows]
        marks = ",".join("?" for _ in ids)
        delegates = {
            r[0] for r in conn.execute(
                f"SELECT s.id FROM sessions s WHERE s.id IN ({marks}) AND {rules.delegate('s')}", ids
            )
        }
        for row in rows:
            row["_delegate"] = int(row["id"] in delegates)
    return rows


def _project_tips(
    conn: sqlite3.Connection, rows: list[dict], rules: Rules, columns: str = "s.*",
    tips: dict[str, str] | None = None,
) -> list[dict]:
    """LI-5: show each compression root as its live tip (``tips``: those already known; the
    others found by :func:`_straight_tips`, a fork by compression_tip). The tips' rows are
    read by one statement."""
    roots = [row["id"] for row in rows if row.get("end_reason") == "compression"]
    if not roots:
        return rows
    known = dict(tips) if tips is not None else _straight_tips(conn, roots)
    for root in roots:
        if root not in known:
            known[root] = _lineage_compression_tip(conn, root)
    wanted = sorted({known[root] for root in roots if known[root] != root})
    if not wanted:
        return rows
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(
        f"SELECT {columns}, {rules.preview_sql()} AS _preview_raw, {rules.last_active_sql()} AS last_active "
        f"FROM sessions s WHERE s.id IN ({_marks(len(wanted))})",
        _padded(wanted),
    )
    names = [d[0] for d in cursor.description]
    where = names.index("id")
    found = {row[where]: _rich_tuple(names, row) for row in cursor.fetchall()}
    out = []
    for row in rows:
        tip_data = found.get(known.get(row["id"], row["id"])) if row.get("end_reason") == "compression" else None
        if tip_data is None:
            out.append(row)
            continue
        projected = dict(row)
        for field in _TIP_FIELDS + ("last_active", "preview"):
            if field in tip_data:
                projected[field] = tip_data[field]
        projected["_lineage_root_id"] = row["id"]
        out.append(projected)
    return out


#: Tables whose rows belong to a session and go with it (UC-5): (table, column).
DEPENDENT_TABLES: tuple[tuple[str, str], ...] = (
    ("session_model_usage", "session_id"),
    ("compression_locks", "session_id"),
    ("session_turn_leases", "conversation_id"),
    ("telegram_dm_topic_bindings", "session_id"),
)


def _table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def dependent_tables(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """The :data:`DEPENDENT_TABLES` this store has."""
    return [(t, c) for t, c in DEPENDENT_TABLES if c in _table_columns(conn, t)]


def busy_sessions(conn: sqlite3.Connection, ids: list[str], now: float | None = None) -> list[tuple[str, str, float]]:
    """``(session_id, what, until)`` for sessions an agent holds right now: an unexpired
    ``compression_locks`` or ``session_turn_leases`` row (UC-5: never deleted under it)."""
    now = time.time() if now is None else now
    held: list[tuple[str, str, float]] = []
    for table, column, what in (("compression_locks", "session_id", "a compression"),
                                ("session_turn_leases", "conversation_id", "a turn")):
        if column not in _table_columns(conn, table):
            continue
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" for _ in chunk)
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


def _prunable_sql(older_than_days: float, source: str | None, columns: str = "id") -> tuple[str, list[Any]]:
    """Ended sessions started before the cutoff (EX-5), optionally of one source."""
    cutoff = time.time() - older_than_days * 86400
    sql = f"SELECT {columns} FROM sessions WHERE started_at < ? AND ended_at IS NOT NULL"
    params: list[Any] = [cutoff]
    if source:
        sql += " AND source = ?"
        params.append(source)
    return sql, params


def _delete_sessions(conn: sqlite3.Connection, ids: list[str]) -> None:
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
    prompts = "system_prompt_hash" in _table_columns(conn, "sessions") and bool(
        _table_columns(conn, "system_prompts")
    )
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" for _ in chunk)
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


def _remove_session_files(directory: Path, ids: list[str]) -> None:
    """EX-4: remove ``<id>.json``, ``<id>.jsonl`` and ``request_dump_<id>_*.json``."""
    for session_id in ids:
        candidates = [directory / f"{session_id}.json", directory / f"{session_id}.jsonl"]
        try:
            candidates += [
                p
                for p in directory.glob(f"request_dump_{_glob_escape(session_id)}_*.json")
                if p.is_file()
            ]
        except OSError:
            pass
        for path in candidates:
            try:
                path.unlink()
            except OSError:
                pass


def _glob_escape(text: str) -> str:
    import glob

    return glob.escape(text)


def _compression_lineage(conn: sqlite3.Connection, session_id: str) -> list[str]:
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


_DELEGATE_FROM = "json_extract(CASE WHEN json_valid(model_config) THEN model_config END, '$._delegate_from')"


def _delegate_descendants(conn: sqlite3.Connection, parent_ids: list[str]) -> list[str]:
    """Delegate sub-agent runs hanging off ``parent_ids`` (``model_config._delegate_from``
    naming the parent, or a marked child of it), recursively; the parents excluded."""
    found: list[str] = []
    seen = set(parent_ids)
    frontier = list(parent_ids)
    while frontier:
        batch, frontier = frontier[:400], frontier[400:]
        marks = ",".join("?" for _ in batch)
        rows = conn.execute(
            f"SELECT id FROM sessions WHERE {_DELEGATE_FROM} IN ({marks}) "
            f"OR (parent_session_id IN ({marks}) AND {_DELEGATE_FROM} IS NOT NULL)",
            batch + batch,
        ).fetchall()
        for (child,) in rows:
            if child not in seen:
                seen.add(child)
                found.append(child)
                frontier.append(child)
    return found


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


#: The fast last-activity path serves pages ending within this many conversations; deeper
#: pages use the general query (BR-10).
_ACTIVITY_WALK_ROWS = 1000
#: New sessions gathered by the walk before their conversations are looked up, at least.
_ACTIVITY_WALK_BATCH = 8
#: A walk that took this many sessions per conversation wanted (plus a few hundred) without
#: filling the page gives up: a selective filter (the archived view, one source) lists few
#: conversations, which the general query ranks faster than the walk would find them.
_ACTIVITY_WALK_SELECTIVE = 10
#: ... or, in a large store, this share of its sessions (1/40): the general query ranks every
#: session the filter lists, after scanning them all for it (0.15-0.7 s at 250k sessions for a
#: source or a workspace with 1-7 % of the conversations; 14-94 ms by the walk), and a walk of
#: 1/40 of them that finds too few costs ~0.1 s more (the archived view: 0.47 -> 0.61 s).
#: At 50k sessions the floor above is the larger.
_ACTIVITY_WALK_SHARE = 40
#: More candidates than this (bound parameters of one statement) go to the general query.
_ACTIVITY_MAX_CANDIDATES = 16_384


def _activity_candidates(
    conn: sqlite3.Connection, walk: _RecencyWalk, met: "_MetConversations", wanted: int,
    pinned: Iterable[str] = (), guess_ok: bool = False,
) -> float | None:
    """Find the listed conversations (compression roots that ``met`` lists) that can be among
    the ``wanted`` most recently active, without ranking every session (BR-10): they are read
    into ``met``. Returns ``floor``.

    Sessions are taken from ``walk`` (newest message first) until ``wanted`` conversations are
    found, and then every session with the same bound. ``floor`` is the last one's bound: a
    session not taken has no message newer than it, so its conversation can only rank higher
    through a start or a ``last_activity_at`` at or after ``floor`` -- both looked up by index
    and added, as are the ``pinned`` sessions (pinned conversations come first whatever their
    activity; they count towards ``wanted``). A conversation taken may still rank below
    ``floor`` (its newest messages rewound): :func:`_activity_page` checks the page against
    ``floor``.

    None: the walk went through every session it keeps, or took ``_ACTIVITY_WALK_SELECTIVE``
    sessions per conversation wanted (in a large store, a share of its sessions:
    ``_ACTIVITY_WALK_SHARE``), without finding ``wanted`` conversations (a small store,
    one of mostly empty sessions, a selective filter): the general query answers.
    """
    most_seen = _ACTIVITY_WALK_SELECTIVE * wanted + 256
    shared = not _ACTIVITY_WALK_SHARE  # (the store's share looked at, once, when reached)
    # Pinned conversations come first whatever their activity: looked up with the first
    # batch, they count towards the page (the page check in _activity_page holds either way).
    pins = list(dict.fromkeys(pinned))
    walk.refresh(conn, guess_ok=guess_ok)
    order = walk.order
    taken = 0
    while len(met.rows) < wanted or taken == 0:
        # Ask for enough new sessions to fill the set at the rate seen so far (some are
        # internal runs, continuations of a conversation already found, ...); at first the rest
        # of the page after the pinned conversations plus a quarter (usually one look-up), then
        # while none was found twice as many as taken (a selective filter: few rounds).
        found = len(met.rows)
        if found and taken:
            need = int((wanted - found) * 1.1 * taken / found) + 1
        else:
            first = max(wanted - len(pins), 0)
            need = max(first + first // 4 + 4, taken)
        need = max(_ACTIVITY_WALK_BATCH, min(need, most_seen + 1 - taken))
        batch = [sid for _negated, sid in order[taken:taken + need]]
        taken += len(batch)
        if batch or pins:
            met.read(conn, batch + pins)
            pins = []
        if taken > most_seen and not shared and taken < len(order):
            # About to give up: in a large store, walk on through a share of its sessions
            # (how many it has had: the rowid only grows; one seek, only here).
            shared = True
            sessions = conn.execute("SELECT MAX(rowid) FROM sessions").fetchone()[0] or 0
            most_seen = max(most_seen, sessions // _ACTIVITY_WALK_SHARE)
        if taken >= len(order) or taken > most_seen:
            break
    if len(met.rows) < wanted or not taken:
        return None
    floor = -order[taken - 1][0]
    looked = {sid for _negated, sid in order[:taken]} | set(pinned)
    # Sessions tied with the last one taken are as recent: take them too. Then every session
    # not taken has a bound below the floor -- those not kept too, unless the walk went
    # through all it keeps with the floor still within their bound.
    tied = []
    while taken < len(order) and -order[taken][0] >= floor:
        tied.append(order[taken][1])
        taken += 1
    if taken >= len(order) and walk.bound >= floor:
        return None
    extra = tied + [sid for sid in dict.fromkeys(_started_after(conn, floor, met.rules)) if sid not in looked]
    if extra:
        met.read(conn, list(dict.fromkeys(extra)))
    return floor


class _MetConversations:
    """The listed conversations the last-activity walk met (BR-10), each read once, by the
    statement that checks it is listed, with all that ranking it and showing it needs: the
    listing's ``columns``, its own last activity, its pinned rank and its start.

    ``rows`` maps each conversation's id to that row: the columns (:attr:`names`), then its
    own last activity, its pinned rank, its start, whether it ended with ``compression`` (a
    chain to walk), with ``previews`` its preview, and its id. A session met that is not listed
    may continue a conversation after a compression: the conversation is followed back to its
    root, which is read in its place when listed.

    ``previews``: read each conversation's preview with it (for the first page, whose
    conversations are nearly all those met: one statement fewer than reading the page's
    previews apart)."""

    def __init__(
        self, columns: str, where: str, params: list[Any], rules: Rules, pinned_rank: str | None,
        previews: bool = False,
    ) -> None:
        filters = where[len("WHERE "):] if where else "1"
        self.rules = rules
        self.params = list(params)
        self.rows: dict[str, tuple] = {}
        #: Sessions read and not listed (a continuation, a delegate run, filtered out): the
        #: snapshot does not change, so they are not read again when a walk up meets them.
        self.refused: set[str] = set()
        self.names: list[str] = []
        self.previews = previews
        #: The values each row carries after the listing's columns (and before its id).
        self.extra = 5 if previews else 4
        preview = f", {rules.preview_sql()}" if previews else ""
        self._select = (
            f"SELECT {columns}, {rules.last_active_sql()}, {pinned_rank or '0'}, s.started_at, "
            f"s.end_reason = 'compression'{preview}, s.id FROM sessions s WHERE s.id IN ({{marks}}) AND {filters}"
        )

    def read(self, conn: sqlite3.Connection, session_ids: list[str]) -> None:
        """Read those of ``session_ids`` (not read yet) that are listed, then the listed
        conversations the others continue."""
        rows, refused = self.rows, self.refused
        unread = [sid for sid in dict.fromkeys(session_ids) if sid not in rows and sid not in refused]
        listed = self._read_listed(conn, unread)
        unlisted = [sid for sid in unread if sid not in listed]
        refused.update(unlisted)
        if unlisted:
            roots = [sid for sid in _continued_roots(conn, unlisted) if sid not in rows and sid not in refused]
            if roots:
                listed = self._read_listed(conn, roots)
                refused.update(sid for sid in roots if sid not in listed)

    def _read_listed(self, conn: sqlite3.Connection, session_ids: list[str]) -> set[str]:
        found: set[str] = set()
        cursor = conn.cursor()
        cursor.row_factory = None
        for start in range(0, len(session_ids), 400):
            chunk = session_ids[start:start + 400]
            cursor.execute(self._select.format(marks=_marks(len(chunk))), _padded(chunk) + self.params)
            if not self.names:
                self.names = [d[0] for d in cursor.description][:-self.extra - 1]  # and the id
            for row in cursor.fetchall():
                self.rows[row[-1]] = row
                found.add(row[-1])
        return found


def _continued_roots(conn: sqlite3.Connection, session_ids: list[str]) -> list[str]:
    """The sessions that ``session_ids`` continue after a compression, followed back through
    every continuation (the roots among them are the conversations listed)."""
    out: list[str] = []
    cont = continuation_sql("p", "c")
    cursor = conn.cursor()
    cursor.row_factory = None
    for start in range(0, len(session_ids), 400):
        chunk = session_ids[start:start + 400]
        # The walk up starts at the parents (most sessions have none).
        cursor.execute(
            "WITH RECURSIVE up(cur, depth) AS ("
            " SELECT p.id, 1 FROM sessions c JOIN sessions p ON p.id = c.parent_session_id"
            f" WHERE c.id IN ({_marks(len(chunk))}) AND {cont}"
            " UNION ALL"
            " SELECT p.id, up.depth + 1 FROM up JOIN sessions c ON c.id = up.cur"
            " JOIN sessions p ON p.id = c.parent_session_id"
            f" WHERE {cont} AND up.depth < 100)"
            " SELECT DISTINCT cur FROM up",
            _padded(chunk),
        )
        out.extend(row[0] for row in cursor.fetchall())
    return list(dict.fromkeys(out))


def _started_after(conn: sqlite3.Connection, floor: float, rules: Rules) -> list[str]:
    """Sessions with a start or a ``last_activity_at`` at or after ``floor`` (by index)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    if rules.last_activity_at:
        # One statement (the two index ranges OR-ed), each row read once.
        cursor.execute(
            "SELECT id FROM sessions WHERE started_at >= ?1 OR COALESCE(last_activity_at, started_at) >= ?1",
            (floor,),
        )
    else:
        cursor.execute("SELECT id FROM sessions WHERE started_at >= ?", (floor,))
    return [row[0] for row in cursor.fetchall()]


def _activity_page(
    conn: sqlite3.Connection, met: _MetConversations, floor: float, pins: frozenset[str], limit: int,
    offset: int, rules: Rules,
) -> tuple[list[dict], dict[str, str]] | int | None:
    """Rows ``offset`` … ``offset + limit`` of the conversations ``met`` read, ranked as
    :func:`_chain_list_sql` ranks by activity: pinned first, then the newest activity along
    the compression chain (then start, then id); and the compression tips the ranking walked
    to.

    Only a compression root has a chain to walk (continuations follow a segment that ended
    with ``compression``): one statement walks those few; any other conversation's chain
    activity is its own, read with its row. The ranking is made here, ordering values as
    SQLite orders them (:func:`_sqlite_order`); the page's previews were read with its rows
    (``met.previews``) or are read by one more statement. A chain that goes straight (one
    continuation per segment, no cycle) ends at the tip
    :func:`~hermes_state.lineage.compression_tip` would find; other chains are left to it.

    A number when the page cannot be vouched for: its last row is neither pinned nor active
    at or after ``floor``, so a conversation the walk did not see might rank above it; the
    number of candidates below the floor is how many more conversations the walk should
    find. None: too many candidates."""
    rows = met.rows
    if len(rows) > _ACTIVITY_MAX_CANDIDATES:
        return None
    own, pin, started, compressed = range(len(met.names), len(met.names) + 4)
    chains = _chain_activity(conn, sorted(sid for sid, row in rows.items() if row[compressed]), rules)
    ranking = []
    for sid, row in rows.items():
        last, members = chains.get(sid, (None, None))
        if last is None:
            last = row[own] if row[own] is not None else row[started]
        ranking.append((sid, last, members, row[pin], row[started]))
    if all(type(r[1]) in _NUMBERS and type(r[3]) in _NUMBERS and type(r[4]) in _NUMBERS for r in ranking):
        ranking.sort(key=lambda r: (r[3], r[1], r[4], r[0]), reverse=True)  # as SQLite would, quicker
    else:
        ranking.sort(key=lambda r: (_sqlite_order(r[3]), _sqlite_order(r[1]), _sqlite_order(r[4]),
                                    _sqlite_order(r[0])), reverse=True)
    ranked = ranking[offset:offset + limit]
    if len(ranked) < limit:
        return None  # the walk found enough conversations, so this cannot be; be safe

    def below(sid: str, act: Any) -> bool:
        return sid not in pins and not (isinstance(act, (int, float)) and act >= floor)

    if below(ranked[-1][0], ranked[-1][1]):
        # Every candidate below the floor took the place of one the walk has not reached.
        return sum(1 for sid, act, *_rest in ranking if below(sid, act))
    if met.previews:
        previews = {sid: rows[sid][compressed + 1] for sid, *_rest in ranked}
    else:
        page = [entry[0] for entry in ranked]
        cursor = conn.cursor()
        cursor.row_factory = None
        cursor.execute(
            f"SELECT s.id, {rules.preview_sql()} FROM sessions s WHERE s.id IN ({_marks(len(page))})",
            _padded(page),
        )
        previews = dict(cursor.fetchall())
    names = met.names
    tips: dict[str, str] = {}
    out = []
    for sid, chain_last, members, _pin, _started in ranked:
        row = rows[sid]
        data = dict(zip(names, row))  # the columns (zip stops at the names)
        if row[compressed]:
            data["last_active"] = row[own]  # the tip's, once projected
            if members is not None and (tip := _straight_tip(members)) is not None:
                tips[sid] = tip
        else:
            data["last_active"] = chain_last
        data["preview"] = compute_preview(previews.get(sid))
        out.append(data)
    return out, tips


def _chain_activity(conn: sqlite3.Connection, roots: list[str], rules: Rules) -> dict[str, tuple[Any, str]]:
    """Each compression root's newest activity along its chain and the chain's members (a
    JSON array of ``[depth, id]``; see :func:`_straight_tip`)."""
    out: dict[str, tuple[Any, str]] = {}
    cursor = conn.cursor()
    cursor.row_factory = None
    for start in range(0, len(roots), 400):
        chunk = roots[start:start + 400]
        cursor.execute(
            _chain_cte(f"WHERE s.id IN ({_marks(len(chunk))}) AND s.end_reason = 'compression'", rules,
                       "json_group_array(json_array(chain.depth, chain.cur_id))")
            + "SELECT root_id, last, members FROM activity",
            _padded(chunk),
        )
        out.update((root, (last, members)) for root, last, members in cursor.fetchall())
    return out


_NUMBERS = (int, float)


def _sqlite_order(value: Any) -> tuple[int, Any]:
    """A sort key ordering values as SQLite's ORDER BY does: NULL, then numbers (integers and
    reals together), then text (by code point: UTF-8's byte order), then blobs."""
    if value is None:
        return (0, 0)
    if isinstance(value, _NUMBERS):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, bytes(value))


def _straight_tips(conn: sqlite3.Connection, roots: list[str]) -> dict[str, str]:
    """The tip of each compression root whose chain goes straight (see :func:`_straight_tip`),
    all walked by one statement instead of two look-ups per segment and root."""
    if not roots:
        return {}
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(
        "WITH RECURSIVE chain(root_id, cur_id, depth) AS ("
        f" SELECT s.id, s.id, 0 FROM sessions s WHERE s.id IN ({_marks(len(roots))})"
        " UNION ALL"
        " SELECT chain.root_id, c.id, chain.depth + 1 FROM chain"
        " JOIN sessions p ON p.id = chain.cur_id"
        " JOIN sessions c ON c.parent_session_id = p.id"
        f" WHERE {continuation_sql('p', 'c')} AND chain.depth < 100)"
        " SELECT root_id, json_group_array(json_array(depth, cur_id)) FROM chain GROUP BY root_id",
        _padded(roots),
    )
    return {root: tip for root, members in cursor.fetchall() if (tip := _straight_tip(members)) is not None}


def _straight_tip(members: str) -> str | None:
    """The last segment of a chain (a JSON array of ``[depth, id]``) that goes straight: one
    segment at each depth, none twice. None otherwise (a fork, a cycle)."""
    try:
        pairs = json.loads(members)
    except ValueError:
        return None
    by_depth = {depth: sid for depth, sid in pairs}
    if sorted(by_depth) != list(range(len(pairs))) or len(set(by_depth.values())) != len(pairs):
        return None
    return by_depth[len(pairs) - 1]


def _marks(n: int) -> str:
    """``?`` placeholders for an IN list of ``n`` values, padded (see :func:`_padded`)."""
    return ",".join("?" * _padded_size(n))


def _padded_size(n: int) -> int:
    if n <= 256:
        return max(16, -(-n // 16) * 16)
    size = 512
    while size < n:
        size *= 2
    return size


def _padded(values: list[Any]) -> list[Any]:
    """``values`` padded with NULLs (which no ``IN`` matches) to a multiple of 16 (a power of
    two past 256): a few statement texts instead of one per length, so the connection's
    prepared statements are reused (preparing the ranking query costs more than running it)."""
    return values + [None] * (_padded_size(len(values)) - len(values))


def _chain_cte(where: str, rules: Rules, members: str | None = None) -> str:
    """``chain`` (each listed row of ``where`` and its compression continuations, forward) and
    ``activity`` (each listed row's newest activity along its chain, and ``members`` when
    given: an aggregate over the chain's rows).

    Each chain row carries what the next step and the activity need of its session (how it
    ended, when, its own last activity), read with the row: the walk looks a session's
    continuations up only when it ended ``compression`` (one index seek, none for the other
    sessions), and no session is read twice. Reading each member again by id, twice, took
    half of a page deep in the list by last activity (0.5 of 1.0 s at 1M messages)."""
    return (
        "WITH RECURSIVE chain(root_id, cur_id, depth, end_reason, ended_at, last) AS ("
        f" SELECT s.id, s.id, 0, s.end_reason, s.ended_at, {rules.last_active_sql('s')} FROM sessions s {where}"
        " UNION ALL"
        f" SELECT chain.root_id, c.id, chain.depth + 1, c.end_reason, c.ended_at, {rules.last_active_sql('c')}"
        " FROM chain JOIN sessions c ON c.parent_session_id = chain.cur_id"
        f" WHERE {continuation_sql('chain', 'c')} AND chain.depth < 100),"
        f" activity(root_id, last{', members' if members else ''}) AS ("
        f" SELECT chain.root_id, MAX(chain.last){', ' + members if members else ''}"
        " FROM chain GROUP BY chain.root_id) "
    )


def _activity_order(pinned_first: str, activity: str = "COALESCE(a.last, s.started_at)") -> str:
    """The order by last activity (BR-10): pinned first, newest chain activity, then start."""
    return f" ORDER BY {pinned_first}{activity} DESC, s.started_at DESC, s.id DESC"


def _chain_list_sql(
    where: str, params: list[Any], needle: str, by_activity: bool, rules: Rules, pinned_first: str,
    columns: str = "s.*", previews: bool = True,
) -> tuple[str, list[Any]]:
    """The listing query walking each listed row's compression chain forward: for ordering
    by the chain's newest activity and for matching ``needle`` against any id along it.
    Without ``previews``: ``columns`` and the chain's last activity only."""
    own = f", {rules.preview_sql()} AS _preview_raw, {rules.last_active_sql()} AS last_active" if previews else ""
    select = (
        f"SELECT {columns}{own}, COALESCE(a.last, s.started_at) AS _chain_last_active "
        "FROM sessions s JOIN activity a ON a.root_id = s.id"
    )
    all_params = list(params)
    if needle:
        select += (
            " WHERE EXISTS (SELECT 1 FROM chain q WHERE q.root_id = s.id"
            " AND lower(q.cur_id) LIKE ? ESCAPE '\\')"
        )
        all_params.append("%" + escape_like(needle) + "%")
    order = _activity_order(pinned_first) if by_activity else f" ORDER BY {pinned_first}s.started_at DESC"
    return _chain_cte(where, rules) + select + order, all_params


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
