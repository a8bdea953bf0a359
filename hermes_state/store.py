"""The store: one SQLite connection to a ``state.db`` and the rules for using it.

:class:`Store` is the runtime every feature module of :mod:`hermes_state` works through
(listing, search, retrieval, export, trash, lineage, …): how a file is opened (created,
read-only, as an immutable snapshot, refused), how reads and writes run (one lock per
connection, ``BEGIN IMMEDIATE`` with a jittered retry on lock contention, a read snapshot
over several statements), what the store can do (:class:`~hermes_state.capabilities.Capabilities`,
probed from its live schema) and which rows a reader shows
(:class:`~hermes_state.visibility.Rules`).

It knows nothing of sessions or messages beyond that. ``SessionDB`` (upstream's API) is a
thin facade over a store and the feature modules.

The module also holds the one policy for *deciding how to open* a file (:func:`open_mode`):
the CLI and the browser both go through it, so a missing, empty, read-only, newer or locked
database means the same thing everywhere and is said in the same words.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol, TypeVar, Union
from urllib.parse import quote

from .capabilities import Capabilities, classify_version
from .capabilities import detect as detect_capabilities
from .capabilities import schema_cookie
from .errors import DatabaseError, ReadOnlyError, describe_db_error, is_lock_error, needs_immutable
from .lenient_text import read_leniently
from .migrations import create_compat_views, declared_columns, initialize
from .schema import MAX_KNOWN_VERSION, SCHEMA_VERSION
from .visibility import Rules
from .walmode import apply_wal_with_fallback, set_last_init_error

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Status texts while another process holds a lock.
READ_WAIT_TEXT = "Database busy (another process holds a lock) — retrying…"
WRITE_WAIT_TEXT = "Database locked by another process — waiting to write…"

#: Attempts of one write while SQLite reports the database locked or busy (upstream's figure).
WRITE_MAX_RETRIES = 15
#: The random sleep between two attempts (seconds).
WRITE_RETRY_MIN_S = 0.020
WRITE_RETRY_MAX_S = 0.150
#: A passive WAL checkpoint every this many writes of one connection (upstream's figure).
CHECKPOINT_EVERY_N_WRITES = 50


class _MarkedAnswers:
    """What :meth:`Store.until_changed` keeps: answers, and the change mark they hold for."""

    def __init__(self) -> None:
        self.mark: tuple[int, int] | None = None
        self.answers: dict = {}


class Store:
    """One connection to ``path`` (autocommit, ``check_same_thread=False``), shared by all
    threads and serialised by :attr:`lock`.

    ``read_only=False`` creates the file if needed and upgrades an older upstream schema in
    place (a store newer than any known schema is opened read-only instead: never written).
    ``read_only=True`` opens with SQLite's ``mode=ro``: the file must exist and nothing is
    created or migrated; an older file is shown in the current shape through TEMP views. In a
    directory it cannot write, with no ``-shm`` beside the file (a WAL reader must create
    it), the file is read as an immutable snapshot instead (:attr:`immutable`;
    :attr:`warnings` says that changes by other processes are not seen).

    ``on_lock_wait(waiting)`` is told when a write waits for another process's lock.
    ``checkpoint_mode`` is the WAL checkpoint run every 50 writes and at close: ``"PASSIVE"``
    (upstream's) or ``"TRUNCATE"`` (also shrinks the WAL file).
    """

    def __init__(
        self,
        path: Path | str,
        *,
        read_only: bool = False,
        checkpoint_mode: str = "PASSIVE",
        on_lock_wait: Callable[[bool], None] | None = None,
        write_max_retries: int = WRITE_MAX_RETRIES,
    ) -> None:
        self.path = Path(path)
        #: Called with True when a write has to wait for another process's lock (before each
        #: retry) and with False once that write has finished waiting (committed or failed).
        #: A viewer uses it to say "waiting for the database"; it must not raise.
        self.on_lock_wait = on_lock_wait
        self.read_only = read_only
        if checkpoint_mode.upper() not in ("PASSIVE", "TRUNCATE"):
            raise ValueError("checkpoint_mode must be PASSIVE or TRUNCATE")
        self.checkpoint_mode = checkpoint_mode.upper()
        self.write_max_retries = write_max_retries
        self.lock = threading.RLock()
        self._write_count = 0
        #: Commits made through this store. ``data_version`` moves only for other
        #: connections' commits; the two together say whether anything changed.
        self.own_commits = 0
        self._conn: sqlite3.Connection | None = None
        #: Schema version found on disk when opened (None: created by this open).
        self.opened_version: int | None = None
        #: Tables shown through a TEMP view in their current shape (a read-only open of an
        #: older file, :func:`~hermes_state.migrations.create_compat_views`): a view has no rowid.
        self.compat_views: list[str] = []
        #: The schema cookie of the file when they were made.
        self._views_cookie: int | None = None
        #: Human-readable warnings about the database (e.g. a newer schema version).
        self.warnings: list[str] = []
        #: Read as an immutable snapshot: changes by other processes are not seen.
        self.immutable = False
        #: Full-text search is usable (False only when this SQLite lacks FTS5).
        self.fts_enabled = True
        self._caps: Capabilities | None = None
        #: Inside a read snapshot whose schema cookie was checked: the schema cannot change
        #: under a read transaction, so :attr:`capabilities` needs no check. None: the next
        #: look checks and then holds; False: every look checks.
        self._caps_in_snapshot: bool | None = False
        self._rules: Rules | None = None
        self._rules_for: Capabilities | None = None
        #: Called (under the lock, before the connection closes) by :meth:`close`.
        self.on_close: list[Callable[[], None]] = []
        #: What feature modules keep for this store (see :meth:`attached`).
        self._attached: dict[Any, Any] = {}
        try:
            self._open(read_only)
        except Exception as exc:
            # Why the open failed, for get_last_init_error() (upstream v16); never cleared
            # on success, another thread may be about to report its own failure.
            set_last_init_error(f"{type(exc).__name__}: {exc}")
            raise

    # ------------------------------------------------------------------ opening

    def _open(self, read_only: bool) -> None:
        check_sqlite_features()
        if read_only:
            self._conn = self._open_read_only()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # timeout=1.0, not SQLite's 30 s default: a short busy wait plus the jittered
        # application-level retry of write() breaks writer convoys (WR-4).
        conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=1.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        self._conn = conn
        try:
            found = peek_version(conn)
            if found is not None and classify_version(found) == "unknown":
                # UC-9: a store newer than any schema this project knows is only read.
                self._conn = None
                conn.close()
                self.read_only = True
                self._conn = self._open_read_only()
                return
            apply_wal_with_fallback(conn, db_label="state.db")
            conn.execute("PRAGMA foreign_keys=ON")
            self.fts_enabled = probe_fts5(conn, required=False)
            fts5 = self.fts_enabled
            self.opened_version = self.write(lambda c: initialize(c, fts5), count=False)
        except BaseException:
            self._conn = None
            conn.close()
            raise

    def _open_read_only(self) -> sqlite3.Connection:
        path = self.path
        parent = path.parent
        if parent.exists() and not parent.is_dir():
            raise DatabaseError(f"{parent} is a file, not a directory (it should hold {path.name})")
        if not path.exists():
            raise DatabaseError(f"no database at {path}")
        if path.is_dir():
            raise DatabaseError(f"{path} is a directory, not a database")
        try:
            empty = path.stat().st_size == 0
        except OSError:
            empty = False
        if empty:
            raise DatabaseError(f"{path} is an empty file, not a session database (yet)")
        try:
            conn, row = self._connect_read_only(immutable=False)
        except sqlite3.OperationalError as exc:
            if not needs_immutable(path, exc):
                raise DatabaseError(describe_db_error(exc, path)) from exc
            # A WAL reader must create -shm beside the database; in a directory it cannot
            # write, the only way to read is as an immutable file: no locks, no -shm, and
            # no view of changes other processes make meanwhile (nor of a -wal left behind).
            conn, row = self._connect_read_only(immutable=True)
            self.immutable = True
            wal = Path(str(path) + "-wal")
            unseen = wal.stat().st_size if wal.exists() else 0
            self.warnings.append(
                f"{parent} is not writable, so the database is shown as a snapshot: changes "
                "made by other processes while it is open are not seen"
                + (f", nor the {unseen} bytes of recent changes in {wal.name}" if unseen else "")
            )
        self.opened_version = int(row[0]) if row else None
        try:
            # Old files keep their shape on disk; reads see them in the current shape
            # through TEMP views.
            self.compat_views = create_compat_views(conn)
            self._views_cookie = schema_cookie(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise DatabaseError(describe_db_error(exc, path)) from exc
        if self.opened_version is not None and classify_version(self.opened_version) == "unknown":
            message = (
                f"database schema version {self.opened_version} is newer than "
                f"{MAX_KNOWN_VERSION}; opened read-only"
            )
            self.warnings.append(message)
            _warn_unknown_version_once(path, message)
        elif self.opened_version is not None and self.opened_version < 11:
            self.warnings.append(
                f"database schema version {self.opened_version} is older than "
                f"{SCHEMA_VERSION}; search may miss tool names until a writer upgrades it"
            )
        return conn

    def _connect_read_only(self, *, immutable: bool) -> tuple[sqlite3.Connection, Any]:
        """A ``mode=ro`` connection (``immutable=1`` too if asked) and the schema version row."""
        uri = "file:" + quote(str(self.path.resolve())) + "?mode=ro" + ("&immutable=1" if immutable else "")
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=1.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA foreign_keys=ON")
            row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
            probe_fts5(conn, required=True)
        except sqlite3.OperationalError:
            conn.close()
            raise
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise DatabaseError(describe_db_error(exc, self.path)) from exc
        except DatabaseError:
            conn.close()
            raise
        return conn, row

    # ------------------------------------------------------------------ the connection

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection (hold :attr:`lock` while using it); raises once closed."""
        conn = self._conn
        if conn is None:
            raise sqlite3.ProgrammingError("the store is closed")
        return conn

    @property
    def raw_connection(self) -> sqlite3.Connection | None:
        """The connection, or None once closed (never raises)."""
        return self._conn

    def swap_connection(self, conn: sqlite3.Connection) -> sqlite3.Connection | None:
        """Put ``conn`` in place of the connection (an instrumented wrapper of it, for a
        benchmark that counts statements); returns the one it replaced."""
        with self.lock:
            previous, self._conn = self._conn, conn
            return previous

    @property
    def closed(self) -> bool:
        return self._conn is None

    def check_writable(self) -> None:
        """Raise :class:`ReadOnlyError` (saying why) unless this store may be written."""
        if self.read_only:
            if self.opened_version is not None and classify_version(self.opened_version) == "unknown":
                raise ReadOnlyError(
                    f"{self.path} has schema version {self.opened_version}, newer than "
                    f"{MAX_KNOWN_VERSION}: it can only be read, nothing was changed"
                )
            raise ReadOnlyError(f"{self.path} is open read-only")

    # ------------------------------------------------------------------ capabilities (UC-1)

    @property
    def capabilities(self) -> Capabilities:
        """What this store has, read from its live schema once and cached; detected again
        when the schema cookie changes (another process migrated it)."""
        with self.lock:
            conn = self.connection
            caps = self._caps
            if caps is not None and self._caps_in_snapshot:
                return caps
            if caps is None or caps.schema_cookie != schema_cookie(conn):
                if self.compat_views and self._views_cookie != schema_cookie(conn):
                    self._refresh_compat_views(conn)
                caps = self._caps = detect_capabilities(conn)
            if self._caps_in_snapshot is None:
                # The first check of a read snapshot: its cookie holds until it ends.
                self._caps_in_snapshot = True
            return caps

    def _refresh_compat_views(self, conn: sqlite3.Connection) -> None:
        """The file's schema changed under views made for its old shape (another connection
        -- the browser's own writer, a gateway -- migrated it): they would hide the columns
        it has now (a title set since read as NULL, every session as not archived). Made
        again for the shape it has now; none at all once it has every column."""
        for name in self.compat_views:
            conn.execute(f'DROP VIEW IF EXISTS temp."{name}"')
        self.compat_views = create_compat_views(conn)
        self._views_cookie = schema_cookie(conn)

    def attached(self, key: Any, make: Callable[["Store"], T]) -> T:
        """The one object kept for ``key`` on this store, ``make(self)`` at the first ask.

        State a feature module keeps per store lives here, so every reader of one store
        shares it: the list engine's pins, counts and recency index
        (:func:`hermes_state.listing.engine.lister_of`) are the same for the facade, an
        export and a recall over one connection."""
        found = self._attached.get(key)
        if found is not None:
            return found  # (without the lock: a search holding it must not stall the asker)
        with self.lock:
            found = self._attached.get(key)
            if found is None:
                found = self._attached[key] = make(self)
            return found

    def until_changed(self, key: Any, limit: int = 50_000) -> dict:
        """A dictionary kept on this store for ``key`` (see :meth:`attached`), empty again
        whenever the store may have changed since (:meth:`change_mark`) and once it holds more
        than ``limit`` entries: answers worked out from the data, asked again and again while
        nothing commits (search as you type asks about mostly the same sessions at each key)."""
        kept = self.attached(("until-changed", key), lambda _store: _MarkedAnswers())
        mark = self.change_mark()
        if kept.mark != mark or len(kept.answers) > limit:
            kept.mark, kept.answers = mark, {}
        return kept.answers

    def refresh_capabilities(self) -> Capabilities:
        """Detect the capabilities again (e.g. after another process changed ``state_meta``)."""
        with self.lock:
            self._caps = None
        return self.capabilities

    @property
    def rules(self) -> Rules:
        """The UC-3 reader rules for this store (:class:`~hermes_state.visibility.Rules`)."""
        caps = self.capabilities
        if self._rules_for is not caps:
            self._rules = Rules.of(self)
            self._rules_for = caps
        return self._rules  # type: ignore[return-value]

    def has_session_column(self, name: str) -> bool:
        """The column can be read: it exists, or a read-only open shows it through a view."""
        return self.capabilities.has_session_column(name) or (
            self.read_only and name in declared_columns("sessions")
        )

    def has_message_column(self, name: str) -> bool:
        return self.capabilities.has_message_column(name) or (
            self.read_only and name in declared_columns("messages")
        )

    def require_column(self, table: str, name: str) -> None:
        has = self.has_session_column if table == "sessions" else self.has_message_column
        if not has(name):
            raise DatabaseError(f"{self.path} has no {table}.{name} column (schema {self.opened_version})")

    def fts_table_exists(self, name: str) -> bool:
        """The FTS table exists and can be queried here (its tokenizer loads)."""
        return self.capabilities.fts_loads(name)

    def active_clause(self, include_inactive: bool, alias: str = "", *, replay: bool = False) -> str:
        """Only visible rows (UC-3: not rewound; compacted history stays) unless asked for
        rewound rows too (or the store has no flag). ``replay``: only active rows -- what an
        agent resumes with, so compaction history is not replayed beside its summary."""
        if include_inactive or not self.has_message_column("active"):
            return ""
        table = alias.rstrip(".") or "messages"
        return f" AND {table}.active = 1" if replay else " AND " + self.rules.visible(table)

    # ------------------------------------------------------------------ reads and writes

    def write(self, fn: Callable[[sqlite3.Connection], T], *, count: bool = True) -> T:
        """Run ``fn(conn)`` in one ``BEGIN IMMEDIATE`` transaction and return its result.

        Retries (up to :attr:`write_max_retries` attempts, sleeping a random 20-150 ms
        between them) only when SQLite reports the database locked or busy; any other error
        rolls back and propagates at once -- but one: a transaction refused for text that is
        not UTF-8 runs again reading text leniently (:mod:`hermes_state.lenient_text`).
        ``fn`` may run more than once, so it must have no side effects outside the
        transaction. ``count``: the write counts toward the periodic checkpoint.
        """
        self.check_writable()
        attempts = max(1, int(self.write_max_retries))
        waited = False

        def transaction(conn: sqlite3.Connection) -> T:
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
            return result

        try:
            for attempt in range(attempts):
                with self.lock:
                    conn = self.connection
                    try:
                        result = read_leniently(conn, lambda: transaction(conn))
                    except sqlite3.OperationalError as exc:
                        if not is_lock_error(exc) or attempt == attempts - 1:
                            raise
                    else:
                        self.own_commits += 1
                        if count:
                            self._after_write()
                        return result
                if self.on_lock_wait is not None:
                    waited = True
                    self._notify_lock_wait(True)
                time.sleep(random.uniform(WRITE_RETRY_MIN_S, WRITE_RETRY_MAX_S))
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
        if self._write_count % CHECKPOINT_EVERY_N_WRITES == 0:
            self.checkpoint(self.checkpoint_mode)

    def checkpoint(self, mode: str = "PASSIVE") -> None:
        """A WAL checkpoint, best effort: never fails the caller."""
        try:
            self.connection.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
        except Exception as exc:
            log.debug("checkpoint failed: %s", exc)

    def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read under the lock (WR-7); no application-level retry but one: a read
        refused for text that is not UTF-8 runs again reading it leniently
        (:mod:`hermes_state.lenient_text`)."""
        with self.lock:
            conn = self.connection
            if self.compat_views:
                # An older file shown through views: if it was migrated meanwhile, they are
                # made again for its new shape before anything reads through them.
                self.capabilities
            return read_leniently(conn, lambda: fn(conn))

    def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return self.read(lambda conn: conn.execute(sql, tuple(params)).fetchall())

    def fetchone(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        return self.read(lambda conn: conn.execute(sql, tuple(params)).fetchone())

    def one_schema(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` (several reads, each in its own transaction) looking the schema cookie
        up once, at the first look at :attr:`capabilities`, not at every one (a search that
        finds nothing ran 12 statements, 5 once it looked once). Only for work that decides
        from the capabilities once anyway (a search builds its filters from them before its
        first statement): a schema changed meanwhile is seen by the next call."""
        with self.lock:
            if self._caps_in_snapshot is not False:  # (inside a snapshot, or already held)
                return fn()
            self._caps_in_snapshot = None
            try:
                return fn()
            finally:
                self._caps_in_snapshot = False

    def read_snapshot(self, fn: Callable[[], T]) -> T:
        """Run several reads (``fn`` calls the usual read methods) in one read transaction,
        so they all see the same state even while other processes commit."""
        with self.snapshot():
            return fn()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction (and the lock) for the reads inside it; inside one already,
        that one."""
        with self.lock:
            conn = self.connection
            if conn.in_transaction:
                yield
                return
            conn.execute("BEGIN")
            self._caps_in_snapshot = None  # checked once, at the first look (see capabilities)
            try:
                yield
            finally:
                self._caps_in_snapshot = False
                try:
                    conn.execute("COMMIT")  # ends the read snapshot; nothing was written
                except sqlite3.Error:
                    pass

    def data_version(self) -> int:
        """``PRAGMA data_version``: changes when another connection commits (WR-8)."""
        return int(self.fetchone("PRAGMA data_version")[0])  # type: ignore[index]

    def change_mark(self) -> tuple[int, int]:
        """Changes whenever the store may have changed: another connection's commit or one
        of our own (a key for what is computed from the data)."""
        return (self.data_version(), self.own_commits)

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

    def close_promptly(self, wait_s: float = 1.0) -> bool:
        """Close even while another thread reads through this connection: its statements are
        interrupted until it lets go of the lock (a read may be many statements: a walk of a
        200,000-segment chain kept ``q`` from giving the terminal back for seconds). False,
        and the connection left open for its thread, if it still holds the lock after
        ``wait_s``."""
        deadline = time.monotonic() + wait_s
        while not self.lock.acquire(timeout=0.02):
            self.interrupt()
            if time.monotonic() > deadline:
                return False
        try:
            self.close()
        finally:
            self.lock.release()
        return True

    def close(self) -> None:
        """Run :attr:`on_close`, checkpoint (best effort, writers only) and close."""
        with self.lock:
            conn = self._conn
            if conn is None:
                return
            for hook in self.on_close:
                hook()
            if not self.read_only:
                self.checkpoint(self.checkpoint_mode)
            try:
                conn.close()
            finally:
                self._conn = None


class HoldsStore(Protocol):
    """Anything that works over a store: ``SessionDB`` (upstream's facade) is one."""

    @property
    def store(self) -> Store: ...


#: What a feature module's public functions take: a :class:`Store`, or an object holding one
#: (a caller with a ``SessionDB`` in hand passes it as it is; the module works on its store).
StoreLike = Union[Store, HoldsStore]


def store_of(source: StoreLike) -> Store:
    """The store itself, or the one ``source`` works over."""
    return source if isinstance(source, Store) else source.store


# ---------------------------------------------------------------------- SQLite's features


def check_sqlite_features() -> None:
    """CO-7: FTS5 with the trigram tokenizer (SQLite ≥ 3.34) must be available."""
    if sqlite3.sqlite_version_info < (3, 34, 0):
        raise DatabaseError(f"SQLite {sqlite3.sqlite_version} is too old: the trigram tokenizer needs 3.34+")
    # FTS5 and its trigram tokenizer are probed on the opened connection (probe_fts5).


def probe_fts5(conn: sqlite3.Connection, *, required: bool) -> bool:
    """Whether ``conn`` has FTS5 with the trigram tokenizer, probed in its TEMP schema.

    Missing FTS5 altogether: a writer degrades as upstream v16 does (no full-text search,
    FTS triggers dropped so message writes keep working; the next FTS5-capable open
    restores and rebuilds the index) and False is returned. A reader (``required``), or an
    SQLite whose FTS5 lacks the trigram tokenizer, gets a one-line :class:`DatabaseError`
    naming the missing feature (CO-7).
    """
    cursor = conn.cursor()  # a connection's cursor factory may stand for another build
    try:
        cursor.execute("CREATE VIRTUAL TABLE temp._hermes_fts5_probe USING fts5(c, tokenize='trigram')")
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        if "no such module" in text and "fts5" in text and not required:
            log.warning("this SQLite lacks FTS5: full-text search is disabled for %s", "state.db")
            return False
        raise DatabaseError(f"this SQLite lacks FTS5 or its trigram tokenizer: {exc}") from exc
    cursor.execute("DROP TABLE temp._hermes_fts5_probe")
    return True


def peek_version(conn: sqlite3.Connection) -> int | None:
    """The stored schema version of a (possibly new or empty) file, without writing."""
    try:
        row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
    except sqlite3.OperationalError:
        return None
    try:
        return int(row[0]) if row is not None and row[0] is not None else None
    except (TypeError, ValueError):
        return None


_UNKNOWN_VERSION_WARNED: set[str] = set()
_UNKNOWN_VERSION_LOCK = threading.Lock()


def _warn_unknown_version_once(path: Path, message: str) -> None:
    """UC-9: one logged warning per store per process, however often it is opened."""
    try:
        key = str(path.resolve())
    except OSError:
        key = str(path)
    with _UNKNOWN_VERSION_LOCK:
        if key in _UNKNOWN_VERSION_WARNED:
            return
        _UNKNOWN_VERSION_WARNED.add(key)
    log.warning("%s: %s", path, message)


# ---------------------------------------------------------------------- how to open a file


def _ro_uri(path: Path) -> str:
    return "file:" + quote(str(path.resolve())) + "?mode=ro"


def probe_version(path: Path) -> int | None:
    """Schema version of the file without changing anything.

    ``None``: an empty SQLite file (no tables); ``0``: Hermes tables without a version row.
    Raises :class:`DatabaseError` for an SQLite file that holds some other application's
    tables, and ``sqlite3.DatabaseError`` for a file that is not SQLite or is corrupt.
    """
    uri = _ro_uri(path)
    conn = sqlite3.connect(uri, uri=True, timeout=1.0)
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.OperationalError as exc:
        conn.close()
        if not needs_immutable(path, exc):
            raise
        # Read-only directory without -shm: read it as a read-only store will.
        conn = sqlite3.connect(uri + "&immutable=1", uri=True, timeout=1.0)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return None
        if "sessions" not in tables and "schema_version" not in tables:
            raise DatabaseError(f"{path} is not a Hermes session database")
        if "schema_version" not in tables:
            return 0
        row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
        return int(row[0]) if row else 0
    finally:
        conn.close()


def files_writable(path: Path) -> bool:
    """The file and its directory (for ``-wal``/``-shm``) are writable by us."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


class BlankDatabase(DatabaseError):
    """The file exists but holds no schema at all (0 bytes, or SQLite with no tables).

    A write initialises it; a read must not (UC-8), so a read-only caller gets this error
    and shows an empty history instead."""

    def __init__(self, path: Path) -> None:
        try:
            empty = Path(path).stat().st_size == 0
        except OSError:
            empty = False
        what = "is an empty file" if empty else "holds no tables"
        super().__init__(f"{path} {what}, not a session database (yet)")
        self.path = Path(path)


def open_mode(path: Path, access: str = "read") -> bool:
    """Whether ``path`` opens read-only for ``access`` ("read" or "write"), by the one policy;
    raises a one-line :class:`DatabaseError` when it cannot be opened for it at all.

    A read opens read-only whatever the version (UC-8: reading never migrates); a write
    refuses read-only files and stores above the newest schema known (UC-9: never written,
    let alone migrated). The database must exist: nothing here creates one.
    """
    path = Path(path)
    if not path.exists():
        raise DatabaseError(f"no database at {path}")
    if path.is_dir():
        raise DatabaseError(f"{path} is a directory, not a database")
    writable = files_writable(path)
    try:
        version = probe_version(path)
    except DatabaseError:
        raise
    except sqlite3.Error as exc:
        raise describe_open_error(path, access, exc) from exc
    except OSError as exc:
        raise DatabaseError(f"cannot open {path} ({exc.strerror or exc})") from exc
    if access == "read":
        if version is None:
            # UC-8: a read never writes, whatever the file: an empty file (or an SQLite file
            # with no tables) is not given a schema by a read; the caller decides what an
            # empty history looks like.
            raise BlankDatabase(path)
        return True
    if not writable:
        raise DatabaseError(f"{path} is read-only")
    if version is not None and version > MAX_KNOWN_VERSION:
        # UC-9: never write to (let alone migrate) a store newer than any we know.
        raise DatabaseError(
            f"{path} has schema version {version}, newer than this program's "
            f"{MAX_KNOWN_VERSION}; it can only be read, nothing was changed"
        )
    return False


def describe_open_error(path: Path, access: str, exc: sqlite3.Error) -> DatabaseError:
    """The one-line error for an SQLite error met while opening ``path``."""
    if access == "read" and needs_immutable(path, exc):
        return DatabaseError(
            f"{path} cannot be read: its directory is not writable and SQLite needs to "
            f"create {path.name}-shm beside it (it exists while a Hermes process has the "
            "database open)"
        )
    return DatabaseError(describe_db_error(exc, path))


def write_problem(path: Path, opened_version: int | None) -> str | None:
    """Why the store at ``path`` (opened at ``opened_version``) cannot be changed, or None.

    Asks the schema version, the file system (``os.access``) and then SQLite itself, which
    knows about read-only mounts, ACLs and -wal/-shm files that permission bits do not show.
    """
    path = Path(path)
    if opened_version is not None and opened_version > MAX_KNOWN_VERSION:
        return f"schema version {opened_version} is newer than this program's"
    if not os.access(path, os.W_OK):
        return f"{path} is read-only"
    if not os.access(path.parent, os.W_OK):
        return f"{path.parent} is read-only (SQLite needs it for its lock files)"
    return sqlite_write_problem(path)


def sqlite_write_problem(path: Path) -> str | None:
    """SQLite's own answer: an empty write statement on a ``mode=rw`` connection.

    A busy database is some other process writing, hence writable: None. Nothing is
    written; the lock is held for microseconds.
    """
    uri = "file:" + quote(str(Path(path).resolve())) + "?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=0, isolation_level=None)
    except sqlite3.Error as exc:
        return f"SQLite cannot open {path} for writing ({exc})"
    try:
        conn.execute("BEGIN IMMEDIATE")
        # A write statement that changes nothing: SQLite checks it may write at all.
        conn.execute("UPDATE sessions SET id = id WHERE 0")
    except sqlite3.Error as exc:
        text = str(exc).lower()
        if "readonly" in text or "read-only" in text or "unable to open" in text:
            return f"SQLite reports {path} is read-only ({exc})"
        return None
    finally:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        finally:
            conn.close()
    return None


def retry_read(
    fn: Callable[[], T],
    path: Path,
    *,
    on_wait: Callable[[str | None], None] | None = None,
    attempts: int = 40,
) -> T:
    """Run a read; while the database is locked or busy, say so and try again.

    Other operational errors (an interrupt, a statement SQLite refuses) propagate as they
    are; a damaged file becomes a one-line :class:`DatabaseError`.
    """
    say = on_wait or (lambda _text: None)
    for attempt in range(attempts):
        try:
            result = fn()
        except (sqlite3.OperationalError, DatabaseError) as exc:
            if not is_lock_error(exc):
                raise
            if attempt == attempts - 1:
                if isinstance(exc, DatabaseError):
                    raise
                raise DatabaseError(describe_db_error(exc, path)) from exc
            say(READ_WAIT_TEXT)
            time.sleep(random.uniform(0.05, 0.2))
            continue
        except sqlite3.DatabaseError as exc:
            raise DatabaseError(describe_db_error(exc, path)) from exc
        if attempt:
            say(None)
        return result
    raise AssertionError("unreachable")  # pragma: no cover
