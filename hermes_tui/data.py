"""The browser's access to the store. Every method here blocks: call it from a thread worker.

Reads use a read-only :class:`~hermes_state.SessionDB` (``mode=ro``: the browser never
creates or migrates a database). Writes (rename, delete, undo) go through a second,
writable ``SessionDB`` opened on first use, so they get the store's write path with its
``BEGIN IMMEDIATE`` and jittered retry.
"""

from __future__ import annotations

import random
import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from hermes_state import SessionDB
from hermes_state.db import DatabaseError, describe_db_error
from hermes_state.models import SessionSummary
from hermes_state.schema import MAX_KNOWN_VERSION
from hermes_state.titles import escape_like

T = TypeVar("T")


#: Status-line texts while another process holds a lock.
READ_WAIT_TEXT = "Database busy (another process holds a lock) — retrying…"
WRITE_WAIT_TEXT = "Database locked by another process — waiting to write…"


_SURROGATES_RE = re.compile("[\ud800-\udfff]")


def is_lock_error(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


@dataclass
class HitGroup:
    """Search hits of one conversation (lineage root)."""

    root_id: str
    label: str
    source: str
    hits: list[Any] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.hits)


@dataclass
class SearchView:
    """What the search pane shows for one query."""

    query: str
    groups: list[HitGroup] = field(default_factory=list)
    title_matches: list[SessionSummary] = field(default_factory=list)
    path: str = ""
    ranking: str = ""
    hit_count: int = 0
    total_estimate: int | None = None
    elapsed_ms: float = 0.0
    note: str | None = None


class BrowserData:
    """Blocking data access for the browser (one instance per app)."""

    def __init__(self, db_path: Path, *, on_wait: Callable[[str | None], None] | None = None) -> None:
        self.db_path = Path(db_path)
        self._reader: SessionDB | None = None
        self._writer: SessionDB | None = None
        self._aux: SessionDB | None = None
        self._open_lock = threading.Lock()
        # Opening the writer may wait (up to the write retry budget) for another process's
        # lock; it has its own lock so that reads never queue behind that wait.
        self._writer_lock = threading.Lock()
        self._on_wait = on_wait or (lambda _text: None)
        self._roots: dict[str, str] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hermes-titles")
        self.warnings: list[str] = []
        self._closed = False

    # ------------------------------------------------------------------ connections

    @property
    def reader(self) -> SessionDB:
        with self._open_lock:
            if self._closed:
                raise DatabaseError("the browser is closing")
            if self._reader is None:
                self._reader = self._retry(lambda: SessionDB(self.db_path, read_only=True))
                self.warnings.extend(self._reader.warnings)
            return self._reader

    @property
    def is_open(self) -> bool:
        """The reader has been opened (the database was usable at least once)."""
        return self._reader is not None

    @property
    def immutable(self) -> bool:
        """Read as an immutable snapshot: changes by other processes are not seen."""
        reader = self._reader
        return bool(reader is not None and reader.immutable)

    @property
    def read_only_reason(self) -> str | None:
        """Why this database cannot be changed from the browser, or None if it can.

        Asks the file system (``os.access``) and then SQLite itself, which knows about
        read-only mounts, ACLs and -wal/-shm files that permission bits do not show.
        """
        import os

        reader = self.reader
        if reader.opened_version is not None and reader.opened_version > MAX_KNOWN_VERSION:
            return f"schema version {reader.opened_version} is newer than this browser's"
        if not os.access(self.db_path, os.W_OK):
            return f"{self.db_path} is read-only"
        if not os.access(self.db_path.parent, os.W_OK):
            return f"{self.db_path.parent} is read-only (SQLite needs it for its lock files)"
        return self._sqlite_read_only_reason()

    def _sqlite_read_only_reason(self) -> str | None:
        """SQLite's own answer: an empty write statement on a ``mode=rw`` connection.

        A busy database is some other process writing, hence writable: None. Nothing is
        written; the lock is held for microseconds.
        """
        from urllib.parse import quote

        uri = "file:" + quote(str(self.db_path.resolve())) + "?mode=rw"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=0, isolation_level=None)
        except sqlite3.Error as exc:
            return f"SQLite cannot open {self.db_path} for writing ({exc})"
        try:
            conn.execute("BEGIN IMMEDIATE")
            # A write statement that changes nothing: SQLite checks it may write at all.
            conn.execute("UPDATE sessions SET id = id WHERE 0")
        except sqlite3.Error as exc:
            text = str(exc).lower()
            if "readonly" in text or "read-only" in text or "unable to open" in text:
                return f"SQLite reports {self.db_path} is read-only ({exc})"
            return None
        finally:
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            finally:
                conn.close()
        return None

    @property
    def aux_reader(self) -> SessionDB:
        """A second read-only connection, so a side query can overlap the main one."""
        with self._open_lock:
            if self._closed:
                raise DatabaseError("the browser is closing")
            if self._aux is None:
                self._aux = self._retry(lambda: SessionDB(self.db_path, read_only=True))
            return self._aux

    def writer(self) -> SessionDB:
        with self._writer_lock:
            if self._closed:
                raise DatabaseError("the browser is closing")
            if self._writer is None:
                reason = None
                if self._reader is not None and (self._reader.opened_version or 0) > MAX_KNOWN_VERSION:
                    reason = "its schema version is newer than this browser's"
                if reason:
                    raise DatabaseError(f"cannot change {self.db_path}: {reason}")
                writer = SessionDB(self.db_path, on_lock_wait=self._write_wait)
                with self._open_lock:
                    if self._closed:
                        writer.close()
                        raise DatabaseError("the browser is closing")
                    self._writer = writer
            return self._writer

    def _write_wait(self, waiting: bool) -> None:
        self._on_wait(WRITE_WAIT_TEXT if waiting else None)

    def close(self) -> None:
        with self._open_lock:
            self._closed = True
            for db in (self._reader, self._writer, self._aux):
                if db is not None:
                    try:
                        db.close()
                    except Exception:
                        pass
            self._reader = self._writer = self._aux = None
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _retry(self, fn: Callable[[], T], attempts: int = 40) -> T:
        """Run a read; while the database is locked or busy, say so and try again."""
        for attempt in range(attempts):
            try:
                result = fn()
            except (sqlite3.OperationalError, DatabaseError) as exc:
                # Opening the reader reports a lock as DatabaseError (its cause is the lock).
                if not (is_lock_error(exc) or is_lock_error(exc.__cause__ or exc)):
                    raise
                if attempt == attempts - 1:
                    if isinstance(exc, DatabaseError):
                        raise
                    raise DatabaseError(describe_db_error(exc, self.db_path)) from exc
                self._on_wait(READ_WAIT_TEXT)
                time.sleep(random.uniform(0.05, 0.2))
                continue
            except sqlite3.DatabaseError as exc:
                raise DatabaseError(describe_db_error(exc, self.db_path)) from exc
            if attempt:
                self._on_wait(None)
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    # ------------------------------------------------------------------ list

    def page(
        self,
        offset: int,
        limit: int,
        *,
        source: str | None,
        exclude_sources: list[str] | None,
    ) -> tuple[list[SessionSummary], int]:
        reader = self.reader
        rows = self._retry(
            lambda: reader.list_summaries(source, exclude_sources, limit=limit, offset=offset)
        )
        total = self._retry(lambda: reader.count_listed(source, exclude_sources))
        return rows, total

    def page_of_ids(
        self,
        session_ids: set[str],
        offset: int,
        limit: int,
        *,
        source: str | None,
        exclude_sources: list[str] | None,
    ) -> tuple[list[SessionSummary], int]:
        """A page of just these sessions (e.g. the ones live in a gateway lane), newest first."""
        if not session_ids:
            return [], 0
        reader = self.reader
        ids = sorted(session_ids)
        clauses = [f"s.id IN ({','.join('?' for _ in ids)})"]
        params: list[Any] = list(ids)
        if source:
            clauses.append("s.source = ?")
            params.append(source)
        elif exclude_sources:
            clauses.append(f"s.source NOT IN ({','.join('?' for _ in exclude_sources)})")
            params.extend(exclude_sources)
        where = " AND ".join(clauses)
        rows = self._retry(
            lambda: reader._fetchall(
                f"SELECT s.id FROM sessions s WHERE {where} ORDER BY s.started_at DESC LIMIT ? OFFSET ?",
                params + [limit, offset],
            )
        )
        total = self._retry(
            lambda: reader._fetchone(f"SELECT COUNT(*) FROM sessions s WHERE {where}", params)[0]
        )
        out = [summary for row in rows if (summary := self.summary(row[0])) is not None]
        return out, int(total)

    def source_counts(self) -> dict[str, int]:
        reader = self.reader
        return self._retry(reader.source_counts)

    def summary(self, session_id: str) -> SessionSummary | None:
        reader = self.reader
        return self._retry(lambda: reader.get_summary(session_id))

    # ------------------------------------------------------------------ search

    def match_sessions(
        self,
        text: str,
        *,
        source: str | None,
        exclude_sources: list[str] | None,
        limit: int = 8,
        reader: SessionDB | None = None,
    ) -> list[SessionSummary]:
        """Sessions whose title contains ``text`` or whose id starts with it (BR-2 a).

        Cheap at 50k sessions: an id prefix is a range on the primary key; a title substring
        first looks among the newest sessions (enough when it is common) and otherwise scans
        the covering title index (fast when it is rare). Titles are matched from 3
        characters on, as prefixes are.
        """
        # SQLite only binds valid UTF-8: a lone surrogate (pasted or decoded from bad bytes)
        # would raise UnicodeEncodeError; no title or id can contain one anyway.
        text = _SURROGATES_RE.sub("", text).strip()
        if not text:
            return []
        reader = reader or self.reader
        filters, fparams = "", []
        if source:
            filters, fparams = " AND s.source = ?", [source]
        elif exclude_sources:
            filters = f" AND s.source NOT IN ({','.join('?' for _ in exclude_sources)})"
            fparams = list(exclude_sources)
        found: list[str] = []

        def add(rows) -> None:
            for row in rows:
                if row[0] not in found and len(found) < limit:
                    found.append(row[0])

        add(self._retry(lambda: reader._fetchall(
            f"SELECT s.id FROM sessions s WHERE s.id >= ? AND s.id < ?{filters} "
            "ORDER BY s.started_at DESC LIMIT ?",
            [text, text + "\U0010ffff", *fparams, limit],
        )))
        if len(text) >= 3 and len(found) < limit:
            like = f"%{escape_like(text)}%"
            recent = self._retry(lambda: reader._fetchall(
                "SELECT s.id FROM (SELECT id, title, source, started_at FROM sessions "
                "ORDER BY started_at DESC LIMIT 2000) s "
                f"WHERE s.title LIKE ? ESCAPE '\\'{filters} ORDER BY s.started_at DESC LIMIT ?",
                [like, *fparams, limit],
            ))
            add(recent)
            if len(recent) < limit:
                add(self._retry(lambda: reader._fetchall(
                    "SELECT s.id FROM sessions s WHERE s.rowid IN (SELECT rowid FROM sessions "
                    f"WHERE title IS NOT NULL AND title LIKE ? ESCAPE '\\'){filters} "
                    "ORDER BY s.started_at DESC LIMIT ?",
                    [like, *fparams, limit],
                )))
        out = []
        for sid in found:
            summary = self._retry(lambda sid=sid: reader.get_summary(sid))
            if summary is not None:
                out.append(summary)
        return out

    def search(
        self,
        query: str,
        *,
        source: str | None,
        exclude_sources: list[str] | None,
        limit: int = 40,
    ) -> SearchView:
        """Full-text search grouped by conversation, plus title/id matches."""
        reader = self.reader
        view = SearchView(query=query)
        if not query.strip():
            return view
        # Title/id matching runs beside the full-text search: SQLite releases the GIL while
        # a statement runs, so the two queries overlap on two cores.
        titles = self._pool.submit(
            self.match_sessions, query, source=source, exclude_sources=exclude_sources,
            reader=self.aux_reader,
        )
        result = self._retry(
            lambda: reader.search(
                query,
                limit=limit,
                source_filter=[source] if source else None,
                exclude_sources=None if source else exclude_sources,
                prefix_last=True,
            )
        )
        view.path = result.path
        view.ranking = result.ranking
        view.elapsed_ms = result.elapsed_ms
        view.total_estimate = result.total_estimate
        view.hit_count = len(result.hits)
        view.note = getattr(result, "note", None) or getattr(result, "error", None)
        roots = self._roots_of({hit.session_id for hit in result.hits})
        groups: dict[str, HitGroup] = {}
        for hit in result.hits:
            root = roots.get(hit.session_id, hit.session_id)
            group = groups.get(root)
            if group is None:
                group = groups[root] = HitGroup(root_id=root, label="", source=hit.source or "")
            group.hits.append(hit)
        labels = self._labels(list(groups))
        for root, group in groups.items():
            group.label = labels.get(root) or root
        # Conversations with more hits first; ties keep the order of their best hit.
        view.groups = sorted(groups.values(), key=lambda g: -g.count)
        view.title_matches = titles.result()
        return view

    def _roots_of(self, session_ids: set[str]) -> dict[str, str]:
        """Lineage roots of many sessions: cached ones free, the rest in one query."""
        from hermes_state.retrieval import lineage_roots

        missing = [sid for sid in session_ids if sid not in self._roots]
        if missing:
            reader = self.reader
            self._roots.update(self._retry(lambda: lineage_roots(reader, missing)))
        return {sid: self._roots.get(sid, sid) for sid in session_ids}

    def _labels(self, root_ids: list[str]) -> dict[str, str]:
        """Each conversation's name: its live tip's title, else the root's title or preview.

        One query for all roots; only compressed roots need their tip looked up.
        """
        from hermes_state.db import _PREVIEW_SQL, compute_preview

        if not root_ids:
            return {}
        reader = self.reader
        marks = ",".join("?" for _ in root_ids)
        rows = self._retry(
            lambda: reader._fetchall(
                f"SELECT s.id, s.title, s.end_reason, {_PREVIEW_SQL} AS preview "
                f"FROM sessions s WHERE s.id IN ({marks})",
                root_ids,
            )
        )
        labels: dict[str, str] = {}
        for row in rows:
            label = row["title"] or compute_preview(row["preview"])
            if row["end_reason"] == "compression":
                tip = self._retry(lambda: reader.get_compression_tip(row["id"]))
                if tip != row["id"]:
                    tip_title = self._retry(lambda: reader.get_session_title(tip))
                    label = tip_title or label
            labels[row["id"]] = label
        return labels
