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
import random
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from . import lineage as _lineage
from . import migrations
from .errors import DatabaseError, ReadOnlyError, describe_db_error
from .errors import is_lock_error as _is_lock_error
from .errors import needs_immutable as _needs_immutable
from .paths import default_db_path
from .schema import SCHEMA_SQL, SCHEMA_VERSION
from .query import escape_like
from .titles import MAX_TITLE_LENGTH, next_title_from, sanitize_title, split_number_suffix

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


#: SQL fragment selecting the first 63 characters of the first user message (LI-3) and the
#: last activity (LI-4) of session alias ``s``; both use ``idx_messages_session``.
_PREVIEW_SQL = (
    "(SELECT substr(m.content, 1, 63) FROM messages m WHERE m.session_id = s.id "
    "AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.timestamp, m.id LIMIT 1)"
)
_LAST_ACTIVE_SQL = (
    "COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at)"
)


class SessionDB:
    """The Hermes session store (``state.db``).

    ``SessionDB(db_path=None)`` opens (creating if needed) the database at ``db_path`` or at
    ``$HERMES_HOME/state.db``, upgrading older upstream schemas to 11 in place.
    ``read_only=True`` opens with SQLite's ``mode=ro``: the file must exist, nothing is
    created or migrated, and every mutating method raises :class:`ReadOnlyError`. In a
    directory it cannot write, with no ``-shm`` beside the file (a WAL reader must create
    it), the file is read as an immutable snapshot instead (``immutable=1``): ``immutable``
    is then True and ``warnings`` says that changes by other processes are not seen.
    ``on_lock_wait(waiting)`` is told when a write waits for another process's lock.
    ``checkpoint_mode`` chooses the WAL checkpoint run every 50 writes and at close:
    ``"PASSIVE"`` (upstream's, default) or ``"TRUNCATE"`` (also shrinks the WAL file).
    """

    _WRITE_MAX_RETRIES = 15
    _WRITE_RETRY_MIN_S = 0.020
    _WRITE_RETRY_MAX_S = 0.150
    _CHECKPOINT_EVERY_N_WRITES = 50
    MAX_TITLE_LENGTH = MAX_TITLE_LENGTH

    def __init__(
        self,
        db_path: Path | str | None = None,
        *,
        read_only: bool = False,
        checkpoint_mode: str = "PASSIVE",
        on_lock_wait: Callable[[bool], None] | None = None,
    ) -> None:
        self.db_path = Path(db_path) if db_path is not None else default_db_path()
        #: Called with True when a write has to wait for another process's lock (before each
        #: retry) and with False once that write has finished waiting (committed or failed).
        #: A viewer uses it to say "waiting for the database"; it must not raise.
        self.on_lock_wait = on_lock_wait
        self.read_only = read_only
        if checkpoint_mode.upper() not in ("PASSIVE", "TRUNCATE"):
            raise ValueError("checkpoint_mode must be PASSIVE or TRUNCATE")
        self.checkpoint_mode = checkpoint_mode.upper()
        self._lock = threading.RLock()
        self._write_count = 0
        self._conn: sqlite3.Connection | None = None
        #: Schema version found on disk when opened (None: created by this open).
        self.opened_version: int | None = None
        #: Human-readable warnings about the database (e.g. a newer schema version).
        self.warnings: list[str] = []
        #: Read as an immutable snapshot (read-only directory without ``-shm``; see
        #: ``_open_read_only``): changes by other processes are not seen.
        self.immutable = False

        _check_sqlite_features()
        if read_only:
            self._conn = self._open_read_only()
        else:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            # timeout=1.0, not SQLite's 30 s default: a short busy wait plus the jittered
            # application-level retry of _execute_write breaks writer convoys (WR-4).
            conn = sqlite3.connect(
                str(self.db_path), check_same_thread=False, timeout=1.0, isolation_level=None
            )
            conn.row_factory = sqlite3.Row
            self._conn = conn
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA foreign_keys=ON")
                self._init_schema()
            except BaseException:
                self._conn = None
                conn.close()
                raise

    # ------------------------------------------------------------------ connection

    def _open_read_only(self) -> sqlite3.Connection:
        parent = self.db_path.parent
        if parent.exists() and not parent.is_dir():
            raise DatabaseError(f"{parent} is a file, not a directory (it should hold {self.db_path.name})")
        if not self.db_path.exists():
            raise DatabaseError(f"no database at {self.db_path}")
        if self.db_path.is_dir():
            raise DatabaseError(f"{self.db_path} is a directory, not a database")
        try:
            empty = self.db_path.stat().st_size == 0
        except OSError:
            empty = False
        if empty:
            raise DatabaseError(f"{self.db_path} is an empty file, not a session database (yet)")
        try:
            conn, row = self._connect_read_only(immutable=False)
        except sqlite3.OperationalError as exc:
            if not _needs_immutable(self.db_path, exc):
                raise DatabaseError(describe_db_error(exc, self.db_path)) from exc
            # A WAL reader must create -shm beside the database; in a directory it cannot
            # write, the only way to read is as an immutable file: no locks, no -shm, and
            # no view of changes other processes make meanwhile (nor of a -wal left behind).
            conn, row = self._connect_read_only(immutable=True)
            self.immutable = True
            wal = Path(str(self.db_path) + "-wal")
            unseen = wal.stat().st_size if wal.exists() else 0
            self.warnings.append(
                f"{parent} is not writable, so the database is shown as a snapshot: changes "
                "made by other processes while it is open are not seen"
                + (f", nor the {unseen} bytes of recent changes in {wal.name}" if unseen else "")
            )
        self.opened_version = int(row[0]) if row else None
        try:
            # Old files keep their shape on disk; reads see it as v11 through TEMP views.
            migrations.create_compat_views(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise DatabaseError(describe_db_error(exc, self.db_path)) from exc
        if self.opened_version is not None and self.opened_version > SCHEMA_VERSION:
            self.warnings.append(
                f"database schema version {self.opened_version} is newer than "
                f"{SCHEMA_VERSION}; opened read-only"
            )
        elif self.opened_version is not None and self.opened_version < SCHEMA_VERSION:
            self.warnings.append(
                f"database schema version {self.opened_version} is older than "
                f"{SCHEMA_VERSION}; search may miss tool names until a writer upgrades it"
            )
        return conn

    def _connect_read_only(self, *, immutable: bool) -> tuple[sqlite3.Connection, Any]:
        """A ``mode=ro`` connection (``immutable=1`` too if asked) and the schema version row."""
        uri = "file:" + _uri_path(self.db_path) + "?mode=ro" + ("&immutable=1" if immutable else "")
        conn = sqlite3.connect(
            uri, uri=True, check_same_thread=False, timeout=1.0, isolation_level=None
        )
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA foreign_keys=ON")
            row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
        except sqlite3.OperationalError:
            conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise DatabaseError(describe_db_error(exc, self.db_path)) from exc
        return conn, row

    def _init_schema(self) -> None:
        def init(conn: sqlite3.Connection) -> int | None:
            return migrations.initialize(conn)

        self.opened_version = self._execute_write(init, count=False)
        if self.opened_version is not None and self.opened_version > SCHEMA_VERSION:
            message = (
                f"database schema version {self.opened_version} is newer than "
                f"{SCHEMA_VERSION}; continuing without changing it"
            )
            self.warnings.append(message)

    def _require_conn(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            raise sqlite3.ProgrammingError("SessionDB is closed")
        return conn

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{self.db_path} is open read-only")

    def _execute_write(self, fn: Callable[[sqlite3.Connection], T], *, count: bool = True) -> T:
        """Run ``fn(conn)`` in one ``BEGIN IMMEDIATE`` transaction and return its result.

        Retries (up to ``_WRITE_MAX_RETRIES`` attempts, sleeping a random 20-150 ms between
        them) only when SQLite reports the database locked or busy; any other error rolls back
        and propagates at once. ``fn`` may run more than once, so it must have no side effects
        outside the transaction.
        """
        self._check_writable()
        attempts = max(1, int(self._WRITE_MAX_RETRIES))
        waited = False
        try:
            for attempt in range(attempts):
                with self._lock:
                    conn = self._require_conn()
                    try:
                        conn.execute("BEGIN IMMEDIATE")
                        try:
                            result = fn(conn)
                            conn.execute("COMMIT")
                        except BaseException:
                            try:
                                conn.execute("ROLLBACK")
                            except Exception:
                                pass
                            raise
                    except sqlite3.OperationalError as exc:
                        if not _is_lock_error(exc) or attempt == attempts - 1:
                            raise
                    else:
                        if count:
                            self._after_write()
                        return result
                if self.on_lock_wait is not None:
                    waited = True
                    self._notify_lock_wait(True)
                time.sleep(random.uniform(self._WRITE_RETRY_MIN_S, self._WRITE_RETRY_MAX_S))
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            if waited:
                self._notify_lock_wait(False)

    def _notify_lock_wait(self, waiting: bool) -> None:
        try:
            self.on_lock_wait(waiting)  # type: ignore[misc]
        except Exception as exc:  # a display callback never breaks a write
            log.debug("on_lock_wait failed: %s", exc)

    def _after_write(self) -> None:
        self._write_count += 1
        if self._write_count % self._CHECKPOINT_EVERY_N_WRITES == 0:
            self._checkpoint(self.checkpoint_mode)

    def _checkpoint(self, mode: str = "PASSIVE") -> None:
        try:
            self._require_conn().execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
        except Exception as exc:  # best effort: never fail a write because of it
            log.debug("checkpoint failed: %s", exc)

    def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read under the instance lock (WR-7); no application-level retry."""
        with self._lock:
            return fn(self._require_conn())

    def _fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return self._read(lambda conn: conn.execute(sql, tuple(params)).fetchall())

    def _fetchone(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        return self._read(lambda conn: conn.execute(sql, tuple(params)).fetchone())

    def interrupt(self) -> None:
        """Stop the statement running on this connection (from any thread); it raises
        ``sqlite3.OperationalError('interrupted')`` in the thread that ran it. A no-op when
        nothing runs or the store is closed."""
        conn = self._conn
        if conn is not None:
            try:
                conn.interrupt()
            except sqlite3.ProgrammingError:
                pass  # closed meanwhile

    def close(self) -> None:
        """Checkpoint (best effort), close the connection and set ``_conn`` to None."""
        with self._lock:
            conn = self._conn
            if conn is None:
                return
            if not self.read_only:
                self._checkpoint(self.checkpoint_mode)
            try:
                conn.close()
            finally:
                self._conn = None

    def __enter__(self) -> "SessionDB":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def data_version(self) -> int:
        """``PRAGMA data_version``: changes when another connection commits (WR-8)."""
        return int(self._fetchone("PRAGMA data_version")[0])

    # ------------------------------------------------------------------ static helpers

    @staticmethod
    def _parse_schema_columns(schema_sql: str) -> dict[str, dict[str, str]]:
        return migrations.parse_schema_columns(schema_sql)

    def _reconcile_columns(self, cursor) -> list[str]:
        return migrations.reconcile_columns(cursor, migrations.parse_schema_columns(SCHEMA_SQL))

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
    ) -> str:
        """Insert a session (first write wins: an existing id is left unchanged)."""
        config = json.dumps(model_config) if model_config else None
        now = time.time()

        def do(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO sessions (id, source, user_id, model, model_config, "
                "system_prompt, parent_session_id, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, source, user_id, model, config, system_prompt, parent_session_id, now),
            )

        self._execute_write(do)
        return session_id

    def ensure_session(self, session_id: str, source: str = "unknown", model: str | None = None) -> None:
        """Insert a minimal row if the id is unknown; never modifies an existing row (SS-6)."""
        now = time.time()
        self._execute_write(
            lambda conn: conn.execute(
                "INSERT OR IGNORE INTO sessions (id, source, model, started_at) VALUES (?, ?, ?, ?)",
                (session_id, source, model, now),
            )
        )

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

    def session_count(self, source: str | None = None) -> int:
        if source:
            return int(self._fetchone("SELECT COUNT(*) FROM sessions WHERE source = ?", (source,))[0])
        return int(self._fetchone("SELECT COUNT(*) FROM sessions")[0])

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
    ) -> int:
        """Insert one message and bump the session's counters in the same transaction."""
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
        weight = _tool_call_weight(tool_calls)

        def do(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(_INSERT_MESSAGE_SQL, values)
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
            tool_calls = msg.get("tool_calls")
            calls += _tool_call_weight(tool_calls)
            rows.append(
                (
                    session_id,
                    role,
                    msg.get("content"),
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

        def do(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            conn.execute(
                "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?",
                (session_id,),
            )
            conn.executemany(_INSERT_MESSAGE_SQL, rows)
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

    def get_messages(self, session_id: str) -> list[dict]:
        """Every column of every message, ordered by ``(timestamp, id)``; tool_calls decoded."""
        rows = self._fetchall(
            "SELECT * FROM messages WHERE session_id = ? ORDER BY timestamp, id", (session_id,)
        )
        return [_decode_message_row(row) for row in rows]

    def get_messages_as_conversation(
        self, session_id: str, include_ancestors: bool = False
    ) -> list[dict]:
        """Replayable chat messages (MS-5), optionally for the whole root-to-session chain."""
        if include_ancestors:
            ids = self.get_session_chain(session_id)
        else:
            ids = [session_id]
        placeholders = ",".join("?" for _ in ids)
        rows = self._fetchall(
            f"SELECT * FROM messages WHERE session_id IN ({placeholders}) ORDER BY timestamp, id",
            ids,
        )
        conversation = [_conversation_message(row) for row in rows]
        if include_ancestors and len(ids) > 1:
            conversation = _drop_replayed_prompts(conversation)
        return conversation

    # ------------------------------------------------------------------ titles

    def set_session_title(self, session_id: str, title: str | None) -> bool:
        """Set (or clear, with an empty title) a session's title; titles are unique (TI-2)."""
        cleaned = sanitize_title(title)

        def do(conn: sqlite3.Connection) -> bool:
            if cleaned is not None:
                other = conn.execute(
                    "SELECT id FROM sessions WHERE title = ? AND id != ?", (cleaned, session_id)
                ).fetchone()
                if other:
                    raise ValueError(f"Title '{cleaned}' is already in use by session {other[0]}")
            cursor = conn.execute(
                "UPDATE sessions SET title = ? WHERE id = ?", (cleaned, session_id)
            )
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
        project_compression_tips: bool = True,
    ) -> list[dict]:
        """Sessions newest-started first with ``preview`` and ``last_active`` (LI-2 … LI-5).

        Unless ``include_children``, only roots and branches are listed; compression roots
        are then replaced by their live tip (``_lineage_root_id`` names the root). A child
        whose parent row is missing (a broken link) is listed as a root.
        """
        where, params = _list_filters(source, exclude_sources, include_children)
        sql = (
            f"SELECT s.*, {_PREVIEW_SQL} AS _preview_raw, {_LAST_ACTIVE_SQL} AS last_active "
            f"FROM sessions s {where} ORDER BY s.started_at DESC LIMIT ? OFFSET ?"
        )
        params += [int(limit), int(offset)]

        def do(conn: sqlite3.Connection) -> list[dict]:
            rows = [_rich_row(row) for row in conn.execute(sql, params).fetchall()]
            if project_compression_tips and not include_children:
                rows = [_project_tip(conn, row) for row in rows]
            return rows

        return self._read(do)

    def search_sessions(self, source: str | None = None, limit: int = 20, offset: int = 0) -> list[dict]:
        """Every session (children included), most recently used first (LI-6)."""
        where = "WHERE s.source = ?" if source else ""
        params: list[Any] = [source] if source else []
        sql = (
            f"SELECT s.*, {_LAST_ACTIVE_SQL} AS last_active FROM sessions s {where} "
            "ORDER BY last_active DESC, s.started_at DESC, s.id DESC LIMIT ? OFFSET ?"
        )
        return [dict(row) for row in self._fetchall(sql, params + [int(limit), int(offset)])]

    # ------------------------------------------------------------------ lineage

    def get_compression_tip(self, session_id: str) -> str:
        """Follow compression continuations to the live tip (LI-7)."""
        return self._read(lambda conn: _lineage.compression_tip(conn, session_id))

    def resolve_resume_session_id(self, session_id: str) -> str:
        """Redirect an empty compression head to the first descendant with messages (LI-8)."""
        if not session_id:
            return session_id
        try:
            return self._read(lambda conn: _lineage.resume_target(conn, session_id))
        except sqlite3.Error:
            return session_id

    def get_ancestors(self, session_id: str) -> list[str]:
        """The session and its ancestors, nearest first, cycle-safe (LI-10)."""
        return self._read(lambda conn: _lineage.ancestors(conn, session_id))

    def get_descendants(self, session_id: str) -> list[str]:
        """The session and its descendants, breadth by depth, cycle-safe (LI-11)."""
        return self._read(lambda conn: _lineage.descendants(conn, session_id))

    def get_session_chain(self, session_id: str) -> list[str]:
        """``[root, …, parent, session]`` following parent links upward (LI-12)."""
        if not session_id:
            return [session_id]
        return self._read(lambda conn: _lineage.chain(conn, session_id))

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

        def do(conn: sqlite3.Connection) -> bool:
            if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                return False
            _delete_sessions(conn, [session_id])
            return True

        deleted = self._execute_write(do)
        if deleted and sessions_dir is not None:
            _remove_session_files(Path(sessions_dir), [session_id])
        return deleted

    def prune_sessions(
        self,
        older_than_days: float = 90,
        source: str | None = None,
        sessions_dir: Path | None = None,
    ) -> int:
        """Delete ended sessions started before the cutoff; children are orphaned (EX-5)."""
        sql, params = _prunable_sql(older_than_days, source)

        def do(conn: sqlite3.Connection) -> list[str]:
            ids = [row[0] for row in conn.execute(sql, params).fetchall()]
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

    # ------------------------------------------------------------------ export

    def _read_snapshot(self, fn: Callable[[], T]) -> T:
        """Run several reads (``fn`` calls the usual read methods) in one read transaction,
        so they all see the same state even while other processes commit."""
        with self._lock:
            conn = self._require_conn()
            if conn.in_transaction:
                return fn()
            conn.execute("BEGIN")
            try:
                return fn()
            finally:
                try:
                    conn.execute("COMMIT")  # ends the read snapshot; nothing was written
                except sqlite3.Error:
                    pass

    def export_session(self, session_id: str) -> dict | None:
        """``{**session, "messages": [...]}`` (EX-1); None for an unknown id.

        The row and the messages are read in one snapshot: a session exported while an
        agent appends to it carries exactly the messages its ``message_count`` counts.
        """

        def read() -> dict | None:
            session = self.get_session(session_id)
            if session is None:
                return None
            return {**session, "messages": self.get_messages(session_id)}

        return self._read_snapshot(read)

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
            f"ORDER BY {_LAST_ACTIVE_SQL} DESC, s.started_at DESC, s.id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        ids = [row[0] for row in self._fetchall(sql, params)]
        one = f"SELECT s.*, {_LAST_ACTIVE_SQL} AS last_active FROM sessions s WHERE s.id = ?"

        def read(session_id: str) -> dict | None:
            row = self._fetchone(one, (session_id,))
            if row is None:
                return None
            return {**dict(row), "messages": self.get_messages(session_id)}

        for session_id in ids:
            # one snapshot per session (row and messages agree), none held across the yield
            obj = self._read_snapshot(lambda: read(session_id))
            if obj is not None:
                yield obj

    def stats(self) -> dict:
        """Figures for ``hermes sessions stats`` (EX-7)."""
        size = self.db_path.stat().st_size if self.db_path.exists() else None
        return {
            "total_sessions": self.session_count(),
            "total_messages": self.message_count(),
            "sources": self.source_counts(),
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
        """Full-text search over every message (SPEC §9); never raises on query text."""
        from .search import search_messages

        return search_messages(
            self,
            query,
            source_filter=source_filter,
            exclude_sources=exclude_sources,
            role_filter=role_filter,
            limit=limit,
            offset=offset,
        )

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
    ):
        """Structured, latency-bounded search for the UI → :class:`~hermes_state.models.SearchResult`.

        ``sort`` is ``auto`` | ``rank`` | ``newest``; ``prefix_last=True`` makes the last plain
        word (≥ 3 characters) a prefix query for search-as-you-type. See
        :func:`hermes_state.search.search`; never raises on query text.
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
        )

    # ------------------------------------------------------------------ typed read API

    def list_summaries(
        self,
        source: str | None = None,
        exclude_sources: list[str] | None = None,
        limit: int = 50,
        offset: int = 0,
    ):
        """Typed rows of :meth:`list_sessions_rich` (compression chains shown at their tip)."""
        from .models import SessionSummary

        rows = self.list_sessions_rich(source, exclude_sources, limit=limit, offset=offset)
        return [SessionSummary.from_row(row) for row in rows]

    def count_listed(self, source: str | None = None, exclude_sources: list[str] | None = None) -> int:
        """How many rows :meth:`list_sessions_rich` would list in total (for paging)."""
        where, params = _list_filters(source, exclude_sources, include_children=False)
        return int(self._fetchone(f"SELECT COUNT(*) FROM sessions s {where}", params)[0])

    def get_summary(self, session_id: str):
        """A :class:`~hermes_state.models.SessionSummary` of one session (no projection)."""
        from .models import SessionSummary

        row = self._fetchone(
            f"SELECT s.*, {_PREVIEW_SQL} AS _preview_raw, {_LAST_ACTIVE_SQL} AS last_active "
            "FROM sessions s WHERE s.id = ?",
            (session_id,),
        )
        return SessionSummary.from_row(_rich_row(row)) if row else None

    def get_message_models(self, session_id: str):
        """Typed messages of one session, ordered by ``(timestamp, id)``."""
        from .models import Message

        return [Message.model_validate(row) for row in self.get_messages(session_id)]

    def lineage_tree(self, session_id: str):
        """The whole family of a session as a :class:`~hermes_state.models.LineageNode` tree."""
        return self._read(lambda conn: _lineage.build_tree(conn, session_id))


# ---------------------------------------------------------------------- helpers

_INSERT_MESSAGE_SQL = (
    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, "
    "timestamp, token_count, finish_reason, reasoning, reasoning_content, reasoning_details, "
    "codex_reasoning_items, codex_message_items) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _check_sqlite_features() -> None:
    """CO-7: FTS5 with the trigram tokenizer (SQLite ≥ 3.34) must be available."""
    if sqlite3.sqlite_version_info < (3, 34, 0):
        raise DatabaseError(
            f"SQLite {sqlite3.sqlite_version} is too old: the trigram tokenizer needs 3.34+"
        )
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute("CREATE VIRTUAL TABLE t USING fts5(c, tokenize='trigram')")
    except sqlite3.OperationalError as exc:
        raise DatabaseError(f"this SQLite lacks FTS5 or its trigram tokenizer: {exc}") from exc
    finally:
        probe.close()


def _uri_path(path: Path) -> str:
    from urllib.parse import quote

    return quote(str(path.resolve()))


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
    source: str | None, exclude_sources: list[str] | None, include_children: bool
) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if not include_children:
        clauses.append(
            "(s.parent_session_id IS NULL"
            " OR NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id)"
            " OR EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id"
            " AND p.end_reason = 'branched' AND s.started_at >= p.ended_at))"
        )
    if source:
        clauses.append("s.source = ?")
        params.append(source)
    if exclude_sources:
        clauses.append(f"s.source NOT IN ({','.join('?' for _ in exclude_sources)})")
        params.extend(exclude_sources)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def _rich_row(row: sqlite3.Row) -> dict:
    data = dict(row)
    data["preview"] = compute_preview(data.pop("_preview_raw", None))
    return data


_TIP_FIELDS = (
    "id",
    "ended_at",
    "end_reason",
    "message_count",
    "tool_call_count",
    "title",
    "model",
    "system_prompt",
)


def _project_tip(conn: sqlite3.Connection, row: dict) -> dict:
    """LI-5: show a compression root as its live tip."""
    if row.get("end_reason") != "compression":
        return row
    tip_id = _lineage.compression_tip(conn, row["id"])
    if tip_id == row["id"]:
        return row
    tip = conn.execute(
        f"SELECT s.*, {_PREVIEW_SQL} AS _preview_raw, {_LAST_ACTIVE_SQL} AS last_active "
        "FROM sessions s WHERE s.id = ?",
        (tip_id,),
    ).fetchone()
    if tip is None:
        return row
    tip_data = _rich_row(tip)
    projected = dict(row)
    for field in _TIP_FIELDS + ("last_active", "preview"):
        projected[field] = tip_data[field]
    projected["_lineage_root_id"] = row["id"]
    return projected


def _prunable_sql(older_than_days: float, source: str | None) -> tuple[str, list[Any]]:
    """Ended sessions started before the cutoff (EX-5), optionally of one source."""
    cutoff = time.time() - older_than_days * 86400
    sql = "SELECT id FROM sessions WHERE started_at < ? AND ended_at IS NOT NULL"
    params: list[Any] = [cutoff]
    if source:
        sql += " AND source = ?"
        params.append(source)
    return sql, params


def _delete_sessions(conn: sqlite3.Connection, ids: list[str]) -> None:
    """Orphan children, delete messages (FTS follows via triggers), delete rows."""
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" for _ in chunk)
        conn.execute(
            f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN ({marks})",
            chunk,
        )
        conn.execute(f"DELETE FROM messages WHERE session_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM sessions WHERE id IN ({marks})", chunk)


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
