"""The browser's one door to the store. Every method blocks: call it from a thread worker.

Nothing here writes SQL: listing, matching, search, delete/undo and the open/probe policy are
public functions of :mod:`hermes_state`; this class holds the connections they run on and
turns their answers into what the screens show.

Connections: a read-only ``reader`` (``mode=ro``: the browser never creates or migrates a
database) for the list, detail, recap, transcript and lineage; a ``searcher`` of its own so a
superseded search can be interrupted without touching other reads; an ``aux`` reader so the
title/id match overlaps the full-text search; and a writable ``SessionDB`` opened on first
write, which brings the store's write path (``BEGIN IMMEDIATE``, jittered retry).
"""

from __future__ import annotations

import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from hermes_state import SessionDB
from hermes_state import listing
from hermes_state.listing import ListQuery
from hermes_state.listing.marks import ConversationMarks, keeps
from hermes_state.listing.counts import SourceCounts, conversations_by_source
from hermes_state.listing.engine import lister_of
from hermes_state.listing.rankings import Rankings, make_ranking
from hermes_state.unread import UnreadNotTracked, not_tracked, set_read
from hermes_state.listing.narrow import Narrow
from hermes_state.listing import recency
from hermes_state import open_store
from hermes_state.store import READ_WAIT_TEXT, WRITE_WAIT_TEXT, retry_read, write_problem
from hermes_state.errors import DatabaseError, is_interrupted
from hermes_state.models import LineageNode, Message, SessionSummary
from hermes_state.query import limit_query
from hermes_state.recap import RecapConfig, build_recap
from hermes_state.watch import newest_message_id
from hermes_state.conversation import conversation_roots
from hermes_state.listing.title_keeper import TitleKeeper

from . import operations
from .view_models import Census, FileState, HitGroup, RecapData, SearchView

if TYPE_CHECKING:  # (imported on first use: deletes are not made at start-up)
    from hermes_state import trash

T = TypeVar("T")

__all__ = [
    "BrowserData", "FirstWindow", "READ_WAIT_TEXT", "WRITE_WAIT_TEXT",
]


def _data_version(db: SessionDB) -> int | None:
    """The reader's ``data_version`` (None if it cannot be read: the watch then refreshes)."""
    try:
        return db.data_version()
    except Exception:
        return None


class FirstWindow:
    """The browser's first pages, read in a thread while the UI is still being imported and
    started: opening the store and reading its first window -- disk reads from a
    cold page cache -- overlap ~0.5 s of Python imports instead of following them.

    It opens the reader the browser will use (read-only, with the recency cache) and reads the
    page the browser's first window asks for, provisionally (see
    :func:`hermes_state.listing.page`); :class:`BrowserData` adopts both. An error is kept,
    not raised: the browser then opens the store itself and reports it its usual way.
    """

    def __init__(
        self, db_path: Path, *, page_size: int, query: ListQuery, cache_dir: Path | None,
    ) -> None:
        self.db_path = Path(db_path)
        self.cache_dir = cache_dir
        #: The list the browser opens on (the screen's first filters): counted later, provisionally.
        self.query = query
        self.page_size = page_size
        #: The reader, once opened (None: not yet, or the open failed: see ``error``).
        self.db: SessionDB | None = None
        self.error: BaseException | None = None
        self.pages: dict[tuple, tuple[list[SessionSummary], int | None]] = {}
        #: The reader's ``data_version`` before it read the pages (None: not read).
        self.version: int | None = None
        #: (device, inode) of the file at the path just before the reader opened it: the
        #: file it reads, even if another is put in its place before the browser adopts it.
        self.identity: tuple[int, int] | None = None
        #: Set once the open is done (whether it worked), and once the pages are read.
        self.opened = threading.Event()
        self.done = threading.Event()
        self._claimed = False
        #: The reader the pages are read with (claimed or not), interrupted by :meth:`close`.
        self._reading: SessionDB | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="hermes-first-window", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            try:
                self.identity = _file_identity(self.db_path)
                db = SessionDB(self.db_path, read_only=True)
                if self.cache_dir is not None:
                    db.recency_cache = recency.cache_file(self.db_path, self.cache_dir)
                # Before the read: a commit from here on may be missing from the pages, and
                # the browser's change watch, started later, asks whether there was one.
                version = _data_version(db)
                with self._lock:
                    if self._claimed:  # closed before it opened
                        db.close()
                        return
                    self.db, self.version = db, version
            except BaseException as exc:
                self.error = exc
                return
            finally:
                self.opened.set()
            self._reading = db
            answer = listing.page(db.store, self.query, 0, self.page_size, count=False, provisional=True)
            self.pages[(self.query, 0, self.page_size, False, True)] = answer
        except BaseException as exc:  # a page failed: the browser reads it again itself
            self.error = self.error or exc
        finally:
            self.opened.set()
            self.done.set()

    def claim(self) -> SessionDB | None:
        """The opened reader, handed over once (None: it did not open)."""
        self.opened.wait()
        with self._lock:
            if self._claimed:
                return None
            self._claimed = True
            db, self.db = self.db, None
            return db

    def take(
        self, query: ListQuery, offset: int, limit: int, *, count: bool, provisional: bool,
    ) -> tuple[list[SessionSummary], int | None] | None:
        """The page read ahead for exactly these arguments, once (None: not read ahead, or
        :meth:`forget` was called)."""
        self.done.wait()  # (the reader is busy with them until then anyway)
        with self._lock:
            return self.pages.pop((query, offset, limit, count, provisional), None)

    def forget(self) -> None:
        """The pages are of a file no longer at the path: none is handed out."""
        self.done.wait()
        with self._lock:
            self.pages.clear()

    def close(self) -> None:
        """Nobody will use it (the plain picker runs instead, or the browser never started)."""
        with self._lock:
            self._claimed = True
            db, self.db = self.db, None
        # Its first page may take seconds (a chain of 200,000 segments): interrupted, not
        # waited for, so that quitting at once is quick.
        while not self.done.wait(0.02):
            reading = self._reading
            if reading is not None:
                reading.interrupt()
        if db is not None:
            db.close()


#: The status line while a ranking for pages deep in the list is made (once for the filters).
RANKING_TEXT = "ordering every conversation to show this far down (once for these filters)…"




class BrowserData:
    """Blocking access to one store for the browser (one instance per app)."""

    def __init__(
        self,
        db_path: Path,
        *,
        on_wait: Callable[[str | None], None] | None = None,
        on_file_event: Callable[[str, str], None] | None = None,
        on_activity: Callable[[str | None], None] | None = None,
        trash_dir: Path | None = None,
        cache_dir: Path | None = None,
        first_window: FirstWindow | None = None,
        profile: str | None = None,
        titles_beside: bool = True,
    ) -> None:
        self.db_path = Path(db_path)
        #: The title match runs on a thread of its own beside the full-text search (True), or
        #: after it on the caller's: across profiles three such threads, each wanting the GIL
        #: while the next store's search runs, cost more than they overlap (~1.5 ms a key).
        self.titles_beside = titles_beside
        #: The Hermes profile the commands printed for its sessions name (``-p NAME``, PF-7),
        #: or None: the default profile, named by nothing.
        self.profile = profile
        #: The first pages and the reader, read ahead while the UI started (or None).
        self._first_window = first_window
        #: Where deleted sessions are kept for ``hermes sessions restore`` (None: nowhere).
        self.trash_dir = trash_dir
        #: Where the reader keeps its recency index between runs (None: not kept), so the
        #: first page by last activity of the next run reads only what was written since.
        self.cache_dir = cache_dir
        self._dbs: dict[str, SessionDB] = {}
        self._writer: SessionDB | None = None
        #: (device, inode) of the file the open connections read; None before the first open.
        self._identity: tuple[int, int] | None = None
        #: Connections to a file that was replaced: other threads may still be reading
        #: through them, so they are closed with the store, not at once.
        self._retired: list[SessionDB] = []
        #: Why writes are refused because the file was deleted (None while it is there).
        self.gone: str | None = None
        #: Told ``(kind, sentence)`` once when the file is replaced or deleted.
        self._on_file_event = on_file_event or (lambda _kind, _text: None)
        self._open_lock = threading.Lock()
        # Opening the writer may wait (up to the write retry budget) for another process's
        # lock; it has its own lock so that reads never queue behind that wait.
        self._writer_lock = threading.Lock()
        self._on_wait = on_wait or (lambda _text: None)
        #: Told what the reader waits for while it lasts (a ranking of the whole list), then None.
        self._on_activity = on_activity or (lambda _text: None)
        self._roots: dict[str, str] = {}
        #: Conversation names by root, valid while the reader's data_version stays (typing
        #: shows the same conversations key after key; a rename is a commit).
        self._labels: dict[str, str] = {}
        self._labels_for: tuple[int, int] | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hermes-titles")
        #: Every title of the store, for the title match on the ``aux`` connection; a stale
        #: index is rebuilt aside on the ``titles`` connection and swapped in
        #: (:mod:`hermes_state.listing.title_keeper`).
        self.titles = TitleKeeper(lambda: self._connection("titles").store, self._retry)
        #: The rankings deep pages are slices of (:mod:`hermes_state.listing.rankings`), made
        #: on the ``counter`` connection so the reader stays free for the pages near the top
        #: and the detail pane meanwhile.
        self.rankings = Rankings(
            lambda query: self._retry(lambda: make_ranking(self._connection("counter").store, query)),
            lambda: self._retry(self._connection("counter").data_version),
            lambda waiting: self._on_activity(RANKING_TEXT if waiting else None),
        )
        self.warnings: list[str] = []
        self._closed = False
        #: The reader's ``data_version`` before its first read, and the reader it is of (see
        #: :meth:`changed_since_first_read`).
        self._first_read: tuple[SessionDB, int | None] | None = None

    # ------------------------------------------------------------------ connections

    def _connection(self, name: str) -> SessionDB:
        with self._open_lock:
            if self._closed:
                raise DatabaseError("the browser is closing")
            db = self._dbs.get(name)
            if db is None:
                ahead = self._first_window.claim() if name == "reader" and self._first_window else None
                # Taken before the open; with the read-ahead's reader, the file it opened: one
                # put in its place since (a restore, a sync tool) is then seen as a replacement
                # by check_file, and reopened.
                identity = self._identity or (
                    self._first_window.identity if ahead is not None else _file_identity(self.db_path))
                db = ahead or self._retry(lambda: SessionDB(self.db_path, read_only=True))
                if name == "reader":
                    if ahead is None and self.cache_dir is not None:
                        db.recency_cache = recency.cache_file(self.db_path, self.cache_dir)
                    if self._first_read is None:
                        version = self._first_window.version if ahead is not None else _data_version(db)
                        self._first_read = (db, version)
                if not self._dbs:
                    self.warnings.extend(db.warnings)
                self._dbs[name] = db
                self._identity = identity
            return db

    def check_file(self) -> FileState:
        """Is the file at the path still the one the connections read? (before every write,
        and on every watcher tick).

        ``SAME``; ``REPLACED`` (a restore or a sync tool put another file there): every
        connection is reopened on the file at the path, so reads and writes go to it;
        ``DELETED``: what was read stays on screen, writes are refused (:attr:`gone`) and
        nothing ever creates a new file in its place. A change is reported once through
        ``on_file_event`` (its kind the state's value).
        """
        with self._open_lock:
            if self._closed or self._identity is None:
                return FileState.SAME
            now = _file_identity(self.db_path)
            if now == self._identity:
                return FileState.SAME
            if now is None:
                if self.gone is None:
                    self.gone = f"{self.db_path} was deleted while the browser was open"
                    event = (FileState.DELETED, f"{self.gone}: showing what was read before; nothing can be changed.")
                else:
                    return FileState.DELETED
            else:
                self._retired.extend(self._dbs.values())
                if self._writer is not None:
                    self._retired.append(self._writer)
                self._dbs.clear()
                self._writer = None
                self._identity = None
                self._roots.clear()
                self._labels, self._labels_for = {}, None
                self.rankings.forget()
                self.titles.reset()
                self.gone = None
                event = (FileState.REPLACED, f"{self.db_path} was replaced by another file; reopened it.")
        if event[0] is FileState.REPLACED and self._first_window is not None:
            self._first_window.forget()  # (outside the lock: it may wait for the read-ahead)
        self._on_file_event(event[0].value, event[1])
        return event[0]

    @property
    def reader(self) -> SessionDB:
        return self._connection("reader")

    def changed_since_first_read(self) -> bool:
        """Has another process committed since the reader's first read? Asked once by the
        change watch when it starts (with a baseline of its own from then on): the first pages
        are read ahead while the UI loads, before the watch runs, and a commit in between
        would otherwise show only with the next one -- never, if the gateway fell quiet.
        False before the reader is open (whatever it reads later is current); True when it
        cannot tell (a refresh too many costs a page read)."""
        with self._open_lock:
            first = self._first_read
            if first is None or self._closed or self._dbs.get("reader") is not first[0]:
                return False
        db, version = first
        if version is None:
            return True
        try:
            return db.data_version() != version
        except Exception:
            return True

    def for_commands(self, session_id: str) -> tuple[str | None, str]:
        """``(profile, the session's own id)``: where a command printed for a person finds
        the session shown as ``session_id`` (the profile None: wherever Hermes runs)."""
        return self.profile, session_id

    @property
    def is_open(self) -> bool:
        """The reader has been opened (the database was usable at least once)."""
        return "reader" in self._dbs

    @property
    def immutable(self) -> bool:
        """Read as an immutable snapshot: changes by other processes are not seen."""
        reader = self._dbs.get("reader")
        return bool(reader is not None and reader.immutable)

    def write_problem(self) -> str | None:
        """Why this database cannot be changed from the browser, or None if it can."""
        if self.gone:
            return self.gone
        return write_problem(self.db_path, self.reader.opened_version)

    def writer(self) -> SessionDB:
        """The writable store, for one write: asked again before every write, so a file that
        was replaced meanwhile is reopened and a deleted one is never written (or created)."""
        if self.check_file() is FileState.DELETED:
            raise DatabaseError(f"{self.gone}; nothing was changed")
        with self._writer_lock:
            if self._closed:
                raise DatabaseError("the browser is closing")
            if self._writer is None:
                problem = write_problem(self.db_path, self.reader.opened_version)
                if problem and "newer" in problem:
                    raise DatabaseError(f"cannot change {self.db_path}: {problem}")
                # open_store never creates a file: a database deleted a moment ago stays gone.
                writer = open_store(self.db_path, "write", on_lock_wait=self._write_wait)
                with self._open_lock:
                    if self._closed:
                        writer.close()
                        raise DatabaseError("the browser is closing")
                    self._writer = writer
            return self._writer

    def _write_wait(self, waiting: bool) -> None:
        self._on_wait(WRITE_WAIT_TEXT if waiting else None)

    def forget_search_answers(self) -> None:
        """Drop what the search connection keeps from the last keys (window scans, rankings,
        probes, hits), so that the next query does all of its own work; the prefix
        expansions stay (:func:`~hermes_state.search.forget_answers`). For measuring:
        the bench types each query as if for the first time."""
        from hermes_state.search import forget_answers

        db = self._dbs.get("searcher")
        if db is not None:
            forget_answers(db.store)

    def interrupt_search(self) -> None:
        """Stop the search that is running, if any (a newer query supersedes it)."""
        db = self._dbs.get("searcher")
        if db is not None:
            db.interrupt()

    def close(self) -> None:
        with self._open_lock:
            self._closed = True
        if self._first_window is not None:
            self._first_window.close()  # a reader it opened that nobody claimed
        with self._open_lock:
            self._closed = True
            for db in [*self._dbs.values(), self._writer, *self._retired]:
                if db is not None:
                    try:
                        # A worker still reading (a long chain walked) is interrupted until
                        # it lets go: the process ends only once its threads have.
                        db.store.close_promptly()
                    except Exception:
                        pass
            self._dbs.clear()
            self._retired.clear()
            self._writer = None
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.titles.close()

    def _retry(self, fn: Callable[[], T]) -> T:
        return retry_read(fn, self.db_path, on_wait=self._on_wait)

    def read(self, fn: Callable[[SessionDB], T]) -> T:
        """``fn(reader)`` through the lock-retry policy (for the typed read API)."""
        reader = self.reader
        return self._retry(lambda: fn(reader))

    # ------------------------------------------------------------------ list

    def page(
        self, offset: int, limit: int, query: ListQuery, *, count: bool = True, provisional: bool = False,
    ) -> tuple[list[SessionSummary], int | None]:
        """A page of ``query``'s list and its length (None with ``count=False``);
        ``provisional`` as :func:`hermes_state.listing.page` (the rows' ``exact`` says
        whether it was)."""
        if self._first_window is not None:
            self.reader  # adopts the reader read ahead (the pages came from it)
            ahead = self._first_window.take(query, offset, limit, count=count, provisional=provisional)
            if ahead is not None:
                return ahead
        if listing.ranked_deep(offset, limit, by_activity=query.by_activity):
            # Deep in the list by last activity each page would rank every conversation
            # again (4-5 s at 250k sessions, 0.5-0.9 s at 50k), by start walk the start
            # index up to its offset (0.4-0.8 s a page past 100,000 rows): pages are slices
            # of one ranking, whose rows are read by id (a few ms).
            ids = self.rankings.ids(query)
            return self._slice(ids, offset, limit, query), (len(ids) if count else None)
        return self.read(lambda db: listing.page(db.store, query, offset, limit, count=count, provisional=provisional))

    def list_position(self, key: str, query: ListQuery) -> int | None:
        """Where the conversation ``key`` (its compression root) is in ``query``'s list, or None
        when the filters leave it out: read from the ranking deep pages are read from (made once
        per filters and commit: seconds at 250k sessions, the status line says so meanwhile)."""
        ids = self.rankings.ids(query)
        try:
            return ids.index(key)
        except ValueError:
            return None

    def workspace_counts(self, query: ListQuery) -> list[listing.WorkspaceCount]:
        """Each workspace with its conversation count under ``query``'s other filters (BR-13)."""
        return self.read(lambda db: listing.workspace_counts(db.store, query))

    def count_windows(self, query: ListQuery, narrows: dict[str, Narrow]) -> dict[str, int]:
        """How many conversations ``query``'s list has under each of ``narrows`` in its place
        (the time picker's presets, BR-21), counted on the census's connection."""
        counter = self._connection("counter")

        def count(db: SessionDB) -> dict[str, int]:
            return {key: listing.count_listed(db.store, query.with_(narrow=narrow)) for key, narrow in narrows.items()}

        return self._retry(lambda: count(counter))

    def page_of_ids(
        self, session_ids: set[str], offset: int, limit: int, query: ListQuery,
    ) -> tuple[list[SessionSummary], int]:
        """A page of just these sessions (e.g. the ones live in a gateway lane), newest first,
        under ``query``'s filters as :func:`hermes_state.listing.page_of_ids` reads them."""
        return self.read(lambda db: listing.page_of_ids(db.store, session_ids, offset, limit, query))

    def source_counts(self) -> dict[str, int]:
        return self.read(lambda db: db.source_counts())

    def census(self, query: ListQuery, *, count: bool) -> Census:
        """``query``'s length (when ``count``), the per-source counts and the exact pins, read
        on a connection of their own (``counter``): the scans take ~0.3 s at 250k sessions
        and the list's pages must not wait for them. The reader learns the pins (its
        provisional pages rest on them from now on), and, when its recency index was only a
        guess (no cache: a first run), gets one built here (1-2 s at 250k sessions);
        ``revised`` says whether either changes what its pages would show."""
        counter = self._connection("counter")

        def read(db: SessionDB) -> tuple[frozenset[str], int | None, dict[str, int], SourceCounts | None]:
            pins = db.pinned_ids()
            # (one grouped scan: the list's total and the picker's numbers, which then agree)
            listed = conversations_by_source(lister_of(db.store), query) if count else None
            return pins, listed.total if listed else None, db.source_counts(), listed

        pins, total, sources, listed = self._retry(lambda: read(counter))
        ranking_s, again_in = self.rankings.again(query)
        reader = self.reader
        assumed = reader.assume_pins(pins)
        revised = (assumed is not None and assumed != pins) or ranking_s is not None
        if reader.recency_guessed:
            # A guess or a cache file, confirmed (or corrected) by the store: the pages shown
            # are read again only when the built index ranks otherwise.
            revised = reader.adopt_recency(self._retry(counter.build_recency)) or revised
        self.warm_titles()
        return Census(total, sources, revised=revised, ranking_s=ranking_s or 0.0, again_in=again_in,
                      listed_by_source=listed.by_source if listed else None)

    def conversations_by_source(self, query: ListQuery) -> dict[str, int]:
        """The source picker's numbers when no census has them yet: conversations the list
        shows under ``query``'s other filters, per source."""
        counter = self._connection("counter")
        return self._retry(lambda: conversations_by_source(lister_of(counter.store), query).by_source)

    def _slice(self, ids: list[str], offset: int, limit: int, query: ListQuery) -> list[SessionSummary]:
        """The rows of ``ids[offset:offset + limit]``. A conversation deleted by another
        process since the ranking was made is skipped and the next ones fill its place, so
        the page stays whole (a short page would be asked for again and again)."""
        rows: list[SessionSummary] = []
        start = offset
        while len(rows) < limit and start < len(ids):
            chunk = ids[start:start + limit - len(rows) + 8]
            start += len(chunk)
            rows += self.read(lambda db: listing.summaries_of(db.store, chunk, query))
        return rows[:limit]

    def summary(self, session_id: str) -> SessionSummary | None:
        return self.read(lambda db: db.get_summary(session_id))

    def messages(self, session_id: str) -> list[Message]:
        return self.read(lambda db: db.get_message_models(session_id))

    def lineage(self, session_id: str) -> LineageNode | None:
        return self.read(lambda db: db.lineage_tree(session_id))

    def recap(self, requested_id: str, config: RecapConfig) -> RecapData:
        """Everything the recap screen shows for ``requested_id`` (resolved to its resume target)."""
        return self.read(lambda db: _read_recap(db, requested_id, config))

    # ------------------------------------------------------------------ search

    def match_sessions(self, text: str, query: ListQuery, *, limit: int = 8) -> list[SessionSummary]:
        """Sessions whose title contains ``text`` or whose id starts with it (BR-2 a), under
        ``query``'s source, workspace and hidden filters; with its unread-only or status
        filter, those the list would keep. (Its time window is the caller's: by conversation.)"""
        aux = self._connection("aux")
        titles = self.titles.index
        # Until the index is built (0.2 s at 250k sessions, in the background: a search
        # typed as the browser opens must not wait for it) SQL answers: the newest sessions,
        # then SQLite's scan of every title (~1 and ~10-13 ms at 250k sessions).
        # (the schema looked up once for the match and its rows' summaries, not at each of
        # their reads: every key asked it seven times a store)
        found = self._retry(lambda: aux.store.one_schema(
            lambda: listing.match_sessions(aux.store, text, query, limit=limit, index=titles if titles.built else None)
        ))
        if self.titles.wants_build(titles):
            self.titles.ensure(aux.store)
        if query.unread_only or query.statuses:
            found = [s for s in found if keeps(ConversationMarks(s.unread, s.lifecycle), query)]
        if text[-1:].isspace() and text.strip():
            # `dock ` is the word dock, in titles as in messages (the title match is a
            # substring): a title must hold the text as whole words, an id start with it.
            stripped = text.strip()
            words = re.compile(r"(?<![^\W_])" + re.escape(stripped) + r"(?![^\W_])", re.IGNORECASE)
            found = [s for s in found if s.id.startswith(stripped) or words.search(s.title or "")]
        return found

    def warm_search(self) -> None:
        """Import the search engine and build the models of its answers now (once the first
        page is painted: neither is needed for it), rather than at the first key (~15 ms)."""
        from hermes_state import models
        from hermes_state.search import engine  # noqa: F401

        for model in (models.SearchHit, models.SearchResult, models.ConversationHit):
            model.model_rebuild()
        models.list_from_store(models.SearchHit, [])  # (the hits' list validator, made at its first use)

    def warm_titles(self) -> None:
        """Have every title read for the title match (0.2 s at 250k sessions) once the census
        has counted, in the background on a connection of its own: the searches' title
        match never waits for it (it asks SQL until the index is in place)."""
        self.titles.ensure(self._connection("aux").store)

    def search(
        self, query: str, listed: ListQuery, *, limit: int = 40, offset: int = 0,
        order: str = "relevance", weights: Any = None, now: float | None = None, sort: str = "auto",
        window: int | None = None, keystroke: bool = False,
    ) -> SearchView:
        """Full-text search grouped by conversation (XR-2), plus title/id matches (first page
        only), under the list's filters ``listed``; ``offset`` asks for a later page of hits
        (BR-20). Of those filters search obeys the source, the workspace, the unread-only and
        status filters, and hidden sessions only with ``include_hidden`` (BR-15); archived
        conversations are found whatever the view, and marked. Its ``narrow`` (the time
        window, BR-21) keeps the hits whose conversation it keeps, as the list would: a page
        may then show fewer groups than hits were asked for (``more`` still says whether the
        search has more). ``window``: see :meth:`hermes_state.SessionDB.search`. ``keystroke``
        (a key typed, not a refresh or a later page): the doors' one signature; one store's
        keystroke answer is the engine's ``sort="auto"`` either way, where the door of several
        profiles ends its page at a store's short one (:class:`~.data_profiles.ProfilesData`)."""
        view = SearchView(query=query, offset=offset)
        view.stamps["start"] = time.perf_counter()
        if not query.strip():
            return view
        searcher = self._connection("searcher")
        # Every path gets the query cut to what SQLite accepts (a 50,000-character paste made
        # the title match fail with "LIKE or GLOB pattern too complex"); the search's note
        # says it was cut.
        cut_query, _cut = limit_query(query)
        # Title/id matching runs beside the full-text search on its own connection: SQLite
        # releases the GIL while a statement runs, so the two queries overlap on two cores --
        # for one store; across profiles (titles_beside off) after it, on this thread.
        titles = (self._pool.submit(self.match_sessions, cut_query, listed)
                  if offset == 0 and self.titles_beside else None)
        # The schema looked up once for the search and its conversations' names and marks on
        # this connection, not at each of their reads (the title match looks once on its own).
        answered = searcher.store.one_schema(lambda: self._search_grouped(
            searcher, view, query, listed, limit=limit, offset=offset, order=order, weights=weights, now=now,
            sort=sort, window=window))
        if not answered:
            if titles is not None:
                titles.cancel()
            view.interrupted = True
            return view
        view.stamps["grouped"] = time.perf_counter()
        if titles is not None:
            view.title_matches = titles.result()
        elif offset == 0:
            view.title_matches = self.match_sessions(cut_query, listed)
        if view.title_matches:
            from hermes_state.search.found import kept_by_conversation_filters

            # (the rows the list's time window and other conversation filters keep, as the
            # hits' conversations are kept)
            kept = kept_by_conversation_filters(searcher.store, listed, [s.id for s in view.title_matches],
                                                self._retry)
            if kept is not None:
                view.title_matches = [s for s in view.title_matches if s.id in kept]
            # Each title match's conversation, as each hit's: Esc after acting on a segment of
            # a chain puts the list on the chain's row (a segment's own id names no row).
            view.title_roots = self._roots_of({s.id for s in view.title_matches})
        view.stamps["done"] = time.perf_counter()
        return view

    def _search_grouped(
        self, searcher: SessionDB, view: SearchView, query: str, listed: ListQuery, *, limit: int, offset: int,
        order: str, weights: Any, now: float | None, sort: str, window: int | None,
    ) -> bool:
        """The search's hits into ``view``, grouped by conversation (:meth:`search`); False
        when a newer search interrupted it."""
        try:
            if offset == 0:
                # Before the search: a message written after this id is new to its answer.
                view.newest_id = self._retry(lambda: newest_message_id(searcher.store))
            result = self._retry(
                lambda: searcher.search(
                    query, listed, limit=limit, offset=offset, prefix_last=True, order=order, weights=weights,
                    now=now, sort=sort, window=window,
                )
            )
        except Exception as exc:
            if is_interrupted(exc):
                return False
            raise
        view.stamps["query"] = time.perf_counter()
        view.path = result.path
        view.ranking = result.ranking
        view.order = result.order
        view.elapsed_ms = result.elapsed_ms
        view.total_estimate = result.total_estimate
        view.hit_count = len(result.hits)
        # (a page may hold more hits than asked: the conversations found across messages
        # follow the last message-level hits)
        view.more = result.has_more
        # (a keystroke's page a bounded walk ended: short, with more to read)
        view.more_certain = view.short_page = result.short_page
        view.note = getattr(result, "note", None) or getattr(result, "error", None)
        view.answered = getattr(result, "answered_query", None)
        # Hits into conversations, named and marked, kept by the list's conversation filters:
        # the library's one step (hermes_state.search.found), with this door's memos.
        # (imported here: the search package is not needed for the first page, and it
        # costs its import; warm_search brings it in once that page is painted)
        from hermes_state.search.found import found_conversations

        found = found_conversations(
            searcher.store, result, listed, roots_of=self._roots_of, labels_of=self._conversation_labels,
            retry=self._retry)
        view.groups = [
            HitGroup(root_id=c.root_id, label=c.label, source=c.source, hits=c.hits, archived=c.archived,
                     hidden=c.hidden, unread=c.unread, across=c.across)
            for c in found.conversations
        ]
        view.filtered_out = frozenset(found.dropped_roots)
        return True

    def _conversation_labels(self, root_ids: list[str]) -> dict[str, listing.ConversationLabel]:
        """Each conversation's name (:func:`listing.conversation_labels`), the ones read since
        the last commit from memory."""

        def read(db: SessionDB) -> dict[str, str]:
            state = (id(db), db.data_version())  # (a reopened reader counts afresh)
            if state != self._labels_for:
                self._labels, self._labels_for = {}, state
            known = self._labels
            missing = [root for root in root_ids if root not in known]
            if missing:
                known.update(listing.conversation_labels(db.store, missing))
            return {root: known[root] for root in root_ids if root in known}

        return self.read(read)

    def _roots_of(self, session_ids: set[str]) -> dict[str, str]:
        """The conversation of each session (:func:`conversation_roots`: the row the list
        shows it in), cached ones free, the rest in one query."""
        missing = [sid for sid in session_ids if sid not in self._roots]
        if missing:
            self._roots.update(self.read(lambda db: conversation_roots(db.store, missing)))
        return {sid: self._roots.get(sid, sid) for sid in session_ids}

    # ------------------------------------------------------------------ writes

    def rename(self, session_id: str, raw: str, *, expected: str | None) -> operations.RenameOutcome:
        """Rename, if the title is still ``expected`` (the one the person saw)."""
        return operations.rename_session(self.writer, session_id, raw, expected=expected)

    def archive_unavailable(self) -> str | None:
        """Why this store cannot archive (no ``sessions.archived`` column), or None (BR-11)."""
        return self.read(lambda db: db.capabilities.archive_problem)

    def set_archived(self, session_id: str, archived: bool) -> bool:
        """Archive or unarchive a conversation's whole compression lineage (UC-5)."""
        try:
            return self.writer().set_session_archived(session_id, archived)
        finally:
            self.rankings.forget()

    def unread_problem(self, session_id: str | None = None) -> str | None:
        """Why this store cannot be marked read or unread (no ``last_read_at``), or None.
        (``session_id``: the conversation about to be marked; one store answers for all.)"""
        return self.read(lambda db: not_tracked(db.store))

    def set_read(self, session_id: str, read: bool) -> bool:
        """Mark the conversation read (now) or unread: ``last_read_at`` of its sessions only.
        A store without the column is refused before a writer is opened (a write open could
        bring an old store up to date)."""
        problem = self.unread_problem()
        if problem:
            raise UnreadNotTracked(problem)
        try:
            return bool(set_read(self.writer().store, session_id, read))
        finally:
            self.rankings.forget()

    def set_pinned(self, session_id: str, pinned: bool) -> bool:
        """Pin or unpin (``sessions.pinned``, else our settings file; UC-5)."""
        try:
            return self._set_pinned(session_id, pinned)
        finally:
            self.rankings.forget()

    def _set_pinned(self, session_id: str, pinned: bool) -> bool:
        if self.read(lambda db: db.capabilities.has_pinned):
            return self.writer().set_session_pinned(session_id, pinned)
        # No column: the pin goes to our settings file, so the store is not opened for
        # writing (which could migrate an old store, UC-8). Every connection reads the file
        # again when it changed.
        return self.reader.set_session_pinned(session_id, pinned)

    def delete_preview(self, session_id: str, *, now: float, live_window_s: float) -> trash.DeletePreview | None:
        from hermes_state import trash

        return self.read(
            lambda db: trash.preview_delete(db, session_id, now=now, live_window_s=live_window_s)
        )

    def delete(self, session_id: str, *, sessions_dir: Path | None) -> trash.DeleteOutcome:
        from hermes_state import trash

        try:
            return trash.delete_with_snapshot(
                self.writer, session_id, sessions_dir=sessions_dir, trash=self.trash_dir
            )
        finally:
            self.rankings.forget()

    def undo(self, snapshot: trash.DeletedSession) -> trash.UndoReport:
        from hermes_state import trash

        try:
            return trash.undo_delete(self.writer, snapshot)
        finally:
            self.rankings.forget()

    # ------------------------------------------------------------------ export

    def plan_export(
        self, session_id: str | None, *, query: str | None, listed: ListQuery, directory: Path, now: float,
        marked: list[str] | None = None,
    ) -> operations.ExportPlan:
        """The export dialog's scopes (:func:`operations.plan_export`) for the screen's list."""
        return self.read(lambda db: operations.plan_export(
            db, session_id, query=query, listed=listed, directory=directory, now=now, marked=marked))

    def run_export(self, scope, fmt, path, *, progress=None, cancelled=lambda: False) -> operations.ExportOutcome:
        return operations.run_export(self.reader, scope, fmt, path, progress=progress, cancelled=cancelled)


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _read_recap(reader: SessionDB, requested_id: str, config: RecapConfig) -> RecapData:
    target = reader.resolve_resume_session_id(requested_id)
    summary = reader.get_summary(target)
    if summary is None:
        return RecapData(requested_id=requested_id, target_id=target, summary=None)
    conversation = [
        m for m in reader.get_messages_as_conversation(target, without_scaffolding=True)
        if m.get("role") != "session_meta"
    ]
    if config.mode == "minimal":
        # Upstream's minimal resume prints no recap (RC-9); a browser screen that shows none
        # at all left the reader blind before Enter: minimal here is the last exchange.
        config = config.model_copy(update={"mode": "full", "exchanges": 1})
    recap = build_recap(conversation, config)
    tip = reader.get_compression_tip(target)
    tip_summary = reader.get_summary(tip) if tip != target else None
    chain = reader.get_session_chain(tip) if tip != target else []
    if target not in chain:
        chain = reader.get_session_chain(target)
    return RecapData(
        requested_id=requested_id,
        target_id=target,
        summary=summary,
        recap=recap,
        position=chain.index(target) + 1,
        chain_length=len(chain),
        tip_id=tip if tip != target else None,
        tip_ended=tip_summary is not None and not tip_summary.is_live,
        chain=chain,
    )
