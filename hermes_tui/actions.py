"""Rename, delete (with undo) and export: the app-side persistence behind the browser's keys.

Two layers live here:

* blocking functions that take a :class:`~hermes_state.SessionDB` and return plain outcome
  objects (never raise for anything a person can cause: duplicate titles, locked databases,
  unwritable paths) -- they run in thread workers and are tested against real databases;
* :class:`SessionActions`, one per app, which runs them in workers, opens the modals and
  holds the :class:`UndoStack` of deletes made in this run of the app.

Delete takes its undo snapshot and deletes **in the same write transaction**: a gateway may be
appending to the session right now (the confirm modal warns about that), and a snapshot taken
in an earlier transaction could miss a message that the delete then removes. The statements
that delete are the store's own (EX-4, LI-14), and the session's files are removed after the
commit exactly as ``SessionDB.delete_session(id, sessions_dir=…)`` does.
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from hermes_state import SessionDB
from hermes_state.db import DatabaseError, _delete_sessions, _remove_session_files
from hermes_state.export import iter_export, render_chunks, write_atomic
from hermes_state.titles import sanitize_title

from .data import is_lock_error
from .textsafe import inert_line

if TYPE_CHECKING:
    from .app import HermesApp

ProgressCallback = Callable[[int, int], None]

#: Files kept in memory so that undo can put them back (larger ones are reported instead).
MAX_SAVED_FILE_BYTES = 64 * 1024 * 1024
#: Deletes remembered for undo in one run of the app.
UNDO_DEPTH = 20
#: Message hits read to find the sessions matching a search (export scope).
EXPORT_SEARCH_LIMIT = 1000


# ---------------------------------------------------------------------------- errors


def describe_write_error(exc: BaseException, nothing: str = "Nothing was changed.") -> str:
    """One line for a person about a failed write; says that nothing changed."""
    if is_lock_error(exc):
        return (
            "The database is locked: another process has held its write lock longer than "
            f"the retry budget. {nothing} Try again in a moment."
        )
    if isinstance(exc, DatabaseError):
        return f"{exc}. {nothing}"
    if isinstance(exc, sqlite3.Error):
        return f"The database refused the change ({exc}). {nothing}"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}. {nothing}"
    return f"{type(exc).__name__}: {exc}. {nothing}"


# ---------------------------------------------------------------------------- rename


@dataclass(frozen=True)
class RenameOutcome:
    """What a rename did. ``ok`` with ``title`` None means the title was cleared."""

    ok: bool
    title: str | None = None
    error: str | None = None


def check_title(raw: str) -> tuple[str | None, str | None]:
    """``(cleaned, None)`` or ``(None, reason)`` per TI-1, without touching the database."""
    try:
        return sanitize_title(raw), None
    except ValueError as exc:
        return None, str(exc)


def rename_session(writer: Callable[[], SessionDB], session_id: str, raw: str) -> RenameOutcome:
    """Sanitise and store a title (TI-1, TI-2); every failure leaves the database unchanged."""
    cleaned, error = check_title(raw)
    if error:
        return RenameOutcome(False, error=error)
    try:
        updated = writer().set_session_title(session_id, raw)
    except ValueError as exc:  # duplicate (TI-2), raised inside the rolled-back transaction
        return RenameOutcome(False, error=str(exc))
    except Exception as exc:  # locked, read-only, closing …: rolled back by _execute_write
        return RenameOutcome(False, error=describe_write_error(exc))
    if not updated:
        return RenameOutcome(False, error=f"Session {session_id} no longer exists. Nothing was changed.")
    return RenameOutcome(True, title=cleaned)


# ---------------------------------------------------------------------------- delete preview


@dataclass(frozen=True)
class RelatedSession:
    id: str
    title: str | None
    preview: str = ""

    @property
    def label(self) -> str:
        return self.title or self.preview or self.id


@dataclass
class DeletePreview:
    """Everything the confirm modal says about what a delete removes and touches."""

    session_id: str
    title: str | None
    preview: str
    source: str
    message_count: int
    started_at: float
    ended_at: float | None
    last_active: float
    #: Direct children: their parent link is cleared (LI-14), they are not deleted.
    children: list[RelatedSession] = field(default_factory=list)
    #: The parent, which stays.
    parent: RelatedSession | None = None
    #: Not ended and written within the live window.
    live: bool = False
    #: A gateway chat lane that points at this session (None if none).
    lane: Any = None

    @property
    def label(self) -> str:
        return self.title or self.preview or self.session_id


_FIRST_USER_SQL = (
    "(SELECT substr(m.content, 1, 80) FROM messages m WHERE m.session_id = s.id "
    "AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.timestamp, m.id LIMIT 1)"
)


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def preview_delete(
    reader: SessionDB, session_id: str, *, now: float, live_window_s: float
) -> DeletePreview | None:
    """What deleting ``session_id`` would do; None if it does not exist."""

    def read(conn: sqlite3.Connection) -> DeletePreview | None:
        row = conn.execute(
            f"SELECT s.id, s.title, s.source, s.started_at, s.ended_at, s.parent_session_id, "
            f"{_FIRST_USER_SQL} AS first_user, "
            "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n, "
            "(SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id) AS last_ts "
            "FROM sessions s WHERE s.id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        children = [
            RelatedSession(r["id"], r["title"], _one_line(r["first_user"]))
            for r in conn.execute(
                f"SELECT s.id, s.title, {_FIRST_USER_SQL} AS first_user FROM sessions s "
                "WHERE s.parent_session_id = ? AND s.id != ? ORDER BY s.started_at, s.id",
                (session_id, session_id),
            )
        ]
        parent = None
        parent_id = row["parent_session_id"]
        if parent_id and parent_id != session_id:
            prow = conn.execute(
                f"SELECT s.id, s.title, {_FIRST_USER_SQL} AS first_user FROM sessions s WHERE s.id = ?",
                (parent_id,),
            ).fetchone()
            if prow is not None:
                parent = RelatedSession(prow["id"], prow["title"], _one_line(prow["first_user"]))
        last_active = row["last_ts"] if row["last_ts"] is not None else row["started_at"]
        live = row["ended_at"] is None and (now - float(last_active or 0)) <= live_window_s
        return DeletePreview(
            session_id=row["id"],
            title=row["title"],
            preview=_one_line(row["first_user"])[:60],
            source=row["source"] or "",
            message_count=int(row["n"]),
            started_at=float(row["started_at"] or 0),
            ended_at=row["ended_at"],
            last_active=float(last_active or 0),
            children=children,
            parent=parent,
            live=live,
        )

    return reader._read(read)


# ---------------------------------------------------------------------------- delete + undo


@dataclass(frozen=True)
class SavedFile:
    """A session file removed by the delete, kept so undo can write it back."""

    path: Path
    data: bytes
    mode: int
    mtime: float


@dataclass
class DeletedSession:
    """An exact snapshot of a deleted session, taken in the deleting transaction."""

    session_id: str
    label: str
    session_columns: list[str]
    session_row: tuple
    message_columns: list[str]
    message_rows: list[tuple]
    #: Children whose ``parent_session_id`` the delete cleared.
    child_ids: list[str]
    sessions_dir: Path | None = None
    files: list[SavedFile] = field(default_factory=list)
    #: Files removed but too large to keep in memory (undo cannot bring them back).
    unsaved_files: list[Path] = field(default_factory=list)

    def column(self, name: str) -> Any:
        try:
            return self.session_row[self.session_columns.index(name)]
        except ValueError:
            return None


@dataclass
class DeleteOutcome:
    ok: bool
    deleted: DeletedSession | None = None
    error: str | None = None


def _session_files(directory: Path, session_id: str) -> list[Path]:
    """The files EX-4 removes for a session (same names, same glob)."""
    import glob

    paths = [directory / f"{session_id}.json", directory / f"{session_id}.jsonl"]
    try:
        paths += sorted(
            p for p in directory.glob(f"request_dump_{glob.escape(session_id)}_*.json") if p.is_file()
        )
    except OSError:
        pass
    return paths


def _save_files(directory: Path | None, session_id: str) -> tuple[list[SavedFile], list[Path]]:
    if directory is None:
        return [], []
    saved: list[SavedFile] = []
    unsaved: list[Path] = []
    budget = MAX_SAVED_FILE_BYTES
    for path in _session_files(directory, session_id):
        try:
            st = path.stat()
            if not path.is_file():
                continue
            if st.st_size > budget:
                unsaved.append(path)
                continue
            data = path.read_bytes()
        except OSError:
            continue
        budget -= len(data)
        saved.append(SavedFile(path, data, st.st_mode & 0o7777, st.st_mtime))
    return saved, unsaved


def delete_with_snapshot(
    writer: Callable[[], SessionDB], session_id: str, *, sessions_dir: Path | None
) -> DeleteOutcome:
    """Delete a session (EX-4, LI-14) and return an exact snapshot for :func:`undo_delete`."""
    files, unsaved = _save_files(sessions_dir, session_id)

    def do(conn: sqlite3.Connection) -> DeletedSession | None:
        cur = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,))
        row = cur.fetchone()
        if row is None:
            return None
        session_columns = [d[0] for d in cur.description]
        mcur = conn.execute("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,))
        message_rows = [tuple(r) for r in mcur.fetchall()]
        message_columns = [d[0] for d in mcur.description]
        child_ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM sessions WHERE parent_session_id = ? AND id != ? ORDER BY id",
                (session_id, session_id),
            )
        ]
        _delete_sessions(conn, [session_id])
        title = row["title"]
        return DeletedSession(
            session_id=session_id,
            label=title or session_id,
            session_columns=session_columns,
            session_row=tuple(row),
            message_columns=message_columns,
            message_rows=message_rows,
            child_ids=child_ids,
        )

    try:
        deleted = writer()._execute_write(do)
    except Exception as exc:
        return DeleteOutcome(False, error=describe_write_error(exc, "Nothing was deleted."))
    if deleted is None:
        return DeleteOutcome(False, error=f"Session {session_id} no longer exists.")
    if sessions_dir is not None:
        _remove_session_files(sessions_dir, [session_id])
        deleted.sessions_dir = sessions_dir
        deleted.files = files
        deleted.unsaved_files = unsaved
    return DeleteOutcome(True, deleted=deleted)


@dataclass
class UndoReport:
    """What an undo restored, and what it could not."""

    session_id: str
    label: str
    restored: bool = False
    #: Transient failure (e.g. a lock): nothing changed and the undo can be tried again.
    retryable: bool = False
    error: str | None = None
    messages: int = 0
    #: ``(old_id, new_id)`` for messages whose id had been taken by another message.
    reassigned: list[tuple[int, int]] = field(default_factory=list)
    #: ``(title, owner_id)``: the title now belongs to another session; restored untitled.
    title_taken: tuple[str, str] | None = None
    #: The session's parent no longer exists; restored as a root.
    parent_missing: str | None = None
    children_relinked: list[str] = field(default_factory=list)
    children_missing: list[str] = field(default_factory=list)
    #: ``(child_id, new_parent_id)``: a child got another parent meanwhile; left alone.
    children_moved: list[tuple[str, str]] = field(default_factory=list)
    files_restored: list[Path] = field(default_factory=list)
    files_failed: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return self.restored and not self.problems()

    def problems(self) -> list[str]:
        """Human-readable list of what could not be restored exactly."""
        out: list[str] = []
        if self.title_taken:
            title, owner = self.title_taken
            out.append(f"title '{title}' is now used by session {owner}, so it was restored untitled")
        if self.reassigned:
            n = len(self.reassigned)
            out.append(f"{n} message id{'s were' if n != 1 else ' was'} taken meanwhile and got new ids")
        if self.parent_missing:
            out.append(f"its parent {self.parent_missing} no longer exists, so it is now a root")
        if self.children_missing:
            out.append(f"child session(s) {', '.join(self.children_missing)} no longer exist")
        for child, parent in self.children_moved:
            out.append(f"child {child} now belongs to {parent} and was left there")
        for path, reason in self.files_failed:
            out.append(f"file {path.name} was not restored ({reason})")
        return out

    def summary(self) -> str:
        if not self.restored:
            return self.error or "Nothing was restored."
        n = self.messages
        text = f"Restored '{self.label}' with {n} message{'s' if n != 1 else ''}"
        if self.children_relinked:
            k = len(self.children_relinked)
            text += f" and re-linked {k} child session{'s' if k != 1 else ''}"
        problems = self.problems()
        if problems:
            return text + ". Could not restore: " + "; ".join(problems) + "."
        return text + "."


class _IdTaken(Exception):
    pass


def undo_delete(writer: Callable[[], SessionDB], snapshot: DeletedSession) -> UndoReport:
    """Put a deleted session back exactly, in one write transaction (FTS follows by trigger).

    The session row, every message (same ids, timestamps and columns), the title and the
    children's parent links come back. Conflicts that appeared since the delete are reported,
    and everything else is still restored: a title now used elsewhere (restored untitled), a
    message id taken by another message (new id), a parent that is gone (restored as a
    root), a child deleted or re-parented meanwhile (left alone).
    """
    report = UndoReport(snapshot.session_id, snapshot.label)

    def do(conn: sqlite3.Connection) -> UndoReport:
        # Fresh report per attempt: _execute_write may run this more than once.
        rep = UndoReport(snapshot.session_id, snapshot.label)
        sid = snapshot.session_id
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone():
            raise _IdTaken(sid)
        current = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
        record = {
            name: value
            for name, value in zip(snapshot.session_columns, snapshot.session_row)
            if name in current
        }
        title = record.get("title")
        if title is not None:
            owner = conn.execute(
                "SELECT id FROM sessions WHERE title = ? AND id != ?", (title, sid)
            ).fetchone()
            if owner:
                rep.title_taken = (title, owner[0])
                record["title"] = None
        parent = record.get("parent_session_id")
        if parent is not None and parent != sid:
            if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchone():
                rep.parent_missing = parent
                record["parent_session_id"] = None
        names = list(record)
        conn.execute(
            f"INSERT INTO sessions ({', '.join(_quote(n) for n in names)}) "
            f"VALUES ({', '.join('?' for _ in names)})",
            [record[n] for n in names],
        )

        mcols = [c for c in snapshot.message_columns]
        mcurrent = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
        keep = [i for i, name in enumerate(mcols) if name in mcurrent]
        id_index = mcols.index("id")
        with_id = [mcols[i] for i in keep]
        without_id = [mcols[i] for i in keep if i != id_index]
        insert_with_id = (
            f"INSERT INTO messages ({', '.join(_quote(n) for n in with_id)}) "
            f"VALUES ({', '.join('?' for _ in with_id)})"
        )
        insert_new_id = (
            f"INSERT INTO messages ({', '.join(_quote(n) for n in without_id)}) "
            f"VALUES ({', '.join('?' for _ in without_id)})"
        )
        for row in snapshot.message_rows:
            old_id = row[id_index]
            if conn.execute("SELECT 1 FROM messages WHERE id = ?", (old_id,)).fetchone():
                cur = conn.execute(insert_new_id, [row[i] for i in keep if i != id_index])
                rep.reassigned.append((old_id, cur.lastrowid))
            else:
                conn.execute(insert_with_id, [row[i] for i in keep])
            rep.messages += 1

        for child in snapshot.child_ids:
            crow = conn.execute(
                "SELECT parent_session_id FROM sessions WHERE id = ?", (child,)
            ).fetchone()
            if crow is None:
                rep.children_missing.append(child)
            elif crow[0] is None:
                conn.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (sid, child))
                rep.children_relinked.append(child)
            else:
                rep.children_moved.append((child, crow[0]))
        rep.restored = True
        return rep

    try:
        report = writer()._execute_write(do)
    except _IdTaken:
        report.error = (
            f"A session with id {snapshot.session_id} exists again (created after the delete); "
            "nothing was restored."
        )
        return report
    except Exception as exc:
        report.error = describe_write_error(exc, "Nothing was restored.")
        report.retryable = is_lock_error(exc) or isinstance(exc, DatabaseError)
        return report
    _restore_files(snapshot, report)
    return report


def _restore_files(snapshot: DeletedSession, report: UndoReport) -> None:
    for saved in snapshot.files:
        if saved.path.exists():
            report.files_failed.append((saved.path, "a file with that name exists again"))
            continue
        try:
            write_atomic(saved.path, [saved.data], mode=saved.mode)
            os.utime(saved.path, (saved.mtime, saved.mtime))
        except OSError as exc:
            report.files_failed.append((saved.path, exc.strerror or str(exc)))
            continue
        report.files_restored.append(saved.path)
    for path in snapshot.unsaved_files:
        report.files_failed.append((path, "too large to keep for undo"))


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class UndoStack:
    """Deletes made in this run of the app, newest last (bounded)."""

    def __init__(self, limit: int = UNDO_DEPTH) -> None:
        self.limit = limit
        self._items: list[DeletedSession] = []

    def push(self, item: DeletedSession) -> None:
        self._items.append(item)
        del self._items[: max(0, len(self._items) - self.limit)]

    def pop(self) -> DeletedSession | None:
        return self._items.pop() if self._items else None

    def peek(self) -> DeletedSession | None:
        return self._items[-1] if self._items else None

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)


# ---------------------------------------------------------------------------- export


FORMAT_EXTENSIONS = {"jsonl": "jsonl", "md": "md"}
FORMAT_LABELS = {"jsonl": "JSONL (as upstream writes it)", "md": "Markdown transcript"}


@dataclass(frozen=True)
class ExportScope:
    """One choice of what to export."""

    key: str  # session | lineage | search | source | all
    label: str
    stem: str
    count: int
    session_ids: tuple[str, ...] | None = None  # None: every session (of ``source``)
    source: str | None = None
    #: Why this scope cannot be used (shown, and the choice is disabled).
    unavailable: str | None = None


@dataclass
class ExportPlan:
    """The choices the export modal offers, and where files go by default."""

    scopes: list[ExportScope]
    directory: Path
    stamp: str

    def default_path(self, scope: ExportScope, fmt: str) -> Path:
        return self.directory / f"hermes-{scope.stem}-{self.stamp}.{FORMAT_EXTENSIONS[fmt]}"


@dataclass
class ExportOutcome:
    ok: bool
    path: Path | None = None
    sessions: int = 0
    bytes: int = 0
    error: str | None = None
    cancelled: bool = False


def _slug(text: str, limit: int = 32) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return slug[:limit].strip("-")


def file_stamp(now: float) -> str:
    return datetime.fromtimestamp(now).strftime("%Y%m%d-%H%M%S")


def _hit_session_ids(reader: SessionDB, query: str, source: str | None, exclude: list[str] | None) -> list[str]:
    """Sessions of the messages matching ``query``, in hit order (first hit first)."""
    search = getattr(reader, "search", None)
    if search is not None:
        result = search(
            query,
            limit=EXPORT_SEARCH_LIMIT,
            source_filter=[source] if source else None,
            exclude_sources=None if source else exclude,
            prefix_last=True,
        )
        hits = [getattr(hit, "session_id", None) for hit in result.hits]
    else:
        rows = reader.search_messages(
            query,
            source_filter=[source] if source else None,
            exclude_sources=None if source else exclude,
            limit=EXPORT_SEARCH_LIMIT,
        )
        hits = [row.get("session_id") for row in rows]
    return list(dict.fromkeys(h for h in hits if h))


def plan_export(
    reader: SessionDB,
    session_id: str | None,
    *,
    query: str | None,
    source: str | None,
    exclude_sources: list[str] | None,
    directory: Path,
    now: float,
) -> ExportPlan:
    """The scopes offered for an export started on ``session_id`` with the screen's state."""
    scopes: list[ExportScope] = []
    if session_id and reader.get_session(session_id) is not None:
        summary = reader.get_summary(session_id)
        label = (summary.label if summary else None) or session_id
        scopes.append(ExportScope("session", f"This session — {_one_line(label)[:48]}", session_id, 1, (session_id,)))
        root = reader.get_lineage_root(session_id)
        family = reader.get_descendants(root)
        scopes.append(
            ExportScope(
                "lineage",
                f"Whole lineage — {len(family)} session{'s' if len(family) != 1 else ''}, root {root}",
                f"lineage-{root}",
                len(family),
                tuple(family),
            )
        )
    if query and query.strip():
        text = _one_line(query)
        where = f" in {source}" if source else ""
        try:
            ids = _hit_session_ids(reader, query, source, exclude_sources)
        except Exception as exc:  # the search path reports its own problems
            scopes.append(
                ExportScope("search", f"Sessions matching “{text[:40]}”{where}", "search", 0, (),
                            unavailable=f"search failed: {exc}")
            )
        else:
            n = len(ids)
            scopes.append(
                ExportScope(
                    "search",
                    f"Sessions matching “{text[:40]}”{where} — {n} session{'s' if n != 1 else ''}",
                    f"search-{_slug(text) or 'query'}",
                    n,
                    tuple(ids),
                    unavailable=None if n else "no session matches this search",
                )
            )
    elif source:
        n = reader.session_count(source)
        scopes.append(
            ExportScope(
                "source",
                f"Every {source} session — {n}",
                _slug(source) or "source",
                n,
                None,
                source,
                unavailable=None if n else f"no {source} sessions",
            )
        )
    else:
        n = reader.session_count()
        scopes.append(
            ExportScope(
                "all",
                f"Every session — {n} (all sources)",
                "all",
                n,
                None,
                None,
                unavailable=None if n else "the database has no sessions",
            )
        )
    return ExportPlan(scopes, directory, file_stamp(now))


def resolve_export_path(text: str, directory: Path) -> Path:
    """The path a person typed: ``~`` expanded, relative paths inside the export directory."""
    path = Path(os.path.expanduser(text.strip()))
    return path if path.is_absolute() else directory / path


def check_destination(path: Path) -> str | None:
    """Why ``path`` cannot receive an export, or None. Checked again by the write itself."""
    if not path.name:
        return "Choose a file name."
    if path.is_dir():
        return f"{path} is a directory; choose a file name inside it."
    parent = path.parent
    if not parent.exists():
        return f"The folder {parent} does not exist."
    if not parent.is_dir():
        return f"{parent} is not a folder."
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"Cannot write to the folder {parent} (permission denied)."
    if path.exists() and not path.is_file():
        return f"{path} exists and is not a regular file."
    return None


class ExportCancelled(Exception):
    pass


class NothingExported(Exception):
    pass


def run_export(
    reader: SessionDB,
    scope: ExportScope,
    fmt: str,
    path: Path,
    *,
    progress: ProgressCallback | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> ExportOutcome:
    """Write the export atomically with owner-only permissions (no partial file on failure)."""
    problem = check_destination(path)
    if problem:
        return ExportOutcome(False, path, error=problem)
    count = 0

    def sessions() -> Iterator[dict]:
        nonlocal count
        ids = list(scope.session_ids) if scope.session_ids is not None else None
        for obj in iter_export(reader, scope.source, ids, progress):
            if cancelled():
                raise ExportCancelled()
            count += 1
            yield obj
        if count == 0:
            raise NothingExported()

    try:
        written = write_atomic(path, render_chunks(sessions(), fmt), mode=0o600)
    except ExportCancelled:
        return ExportOutcome(False, path, cancelled=True, error="Export cancelled; no file was written.")
    except NothingExported:
        return ExportOutcome(
            False, path, error="Nothing to export: the sessions no longer exist. No file was written."
        )
    except OSError as exc:
        return ExportOutcome(False, path, error=f"Cannot write {path}: {exc.strerror or exc}. No file was written.")
    except Exception as exc:
        return ExportOutcome(False, path, error=describe_write_error(exc, "No file was written."))
    return ExportOutcome(True, path, sessions=count, bytes=written)


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


# ---------------------------------------------------------------------------- the app side


class SessionActions:
    """Runs rename / delete / undo / export for one app: workers, modals, notifications."""

    def __init__(self, app: "HermesApp") -> None:
        self.app = app
        self.undo_stack = UndoStack()

    @property
    def sessions_dir(self) -> Path:
        return self.app.hermes_home / "sessions"

    # -------------------------------------------------------------- helpers

    def _say(self, text: str, *, severity: str = "information", timeout: float = 5) -> None:
        """A notification; titles and paths in it are data, so markup is off."""
        self.app.notify(inert_line(text), severity=severity, timeout=timeout, markup=False)  # type: ignore[arg-type]

    def _cannot_write(self, what: str) -> bool:
        reason = self.app.read_only_reason
        if reason:
            self._say(f"Cannot {what}: {reason}. Nothing was changed.", severity="error", timeout=6)
            return True
        return False

    def _run(self, fn: Callable[[], None], name: str) -> None:
        self.app.run_worker(fn, thread=True, exit_on_error=False, group="actions", name=name)

    def _refresh(self, select: str | None = None) -> None:
        screen = self.app._browser()
        if screen is None:
            return
        if select:
            screen.select_session(select)
        else:
            screen.refresh_data()

    # -------------------------------------------------------------- rename

    def rename(self, session_id: str) -> None:
        if self._cannot_write("rename"):
            return
        data = self.app.data

        def load() -> None:
            summary = data.summary(session_id)
            self.app.call_from_thread(self._open_rename, session_id, summary)

        self._run(load, "rename-load")

    def _open_rename(self, session_id: str, summary: Any) -> None:
        from .modals.rename import RenameModal

        if summary is None:
            self._say(f"Session {session_id} no longer exists.", severity="warning", timeout=4)
            self._refresh()
            return
        data = self.app.data

        def save(raw: str) -> RenameOutcome:
            return rename_session(data.writer, session_id, raw)

        def done(result: str | None) -> None:
            if result is None:
                return
            if result:
                self._say(f"Renamed {session_id} to “{result}”.", timeout=4)
            else:
                self._say(f"Title cleared for {session_id}.", timeout=4)
            self._refresh(select=session_id)

        self.app.push_screen(
            RenameModal(session_id, summary.title, label=summary.label, save=save), done
        )

    # -------------------------------------------------------------- delete

    def delete(self, session_id: str) -> None:
        if self._cannot_write("delete"):
            return
        data = self.app.data
        app = self.app

        def load() -> None:
            preview = preview_delete(
                data.reader, session_id, now=app.clock(), live_window_s=app.config.live_window_s
            )
            if preview is not None:
                preview.lane = app.lane_for(session_id)
            app.call_from_thread(self._open_delete, session_id, preview)

        self._run(load, "delete-preview")

    def _open_delete(self, session_id: str, preview: DeletePreview | None) -> None:
        from .modals.delete import ConfirmDeleteModal

        if preview is None:
            self._say(f"Session {session_id} no longer exists.", severity="warning", timeout=4)
            self._refresh()
            return

        def done(confirmed: bool | None) -> None:
            if confirmed:
                self._do_delete(preview)

        self.app.push_screen(ConfirmDeleteModal(preview, clock=self.app.clock), done)

    def _do_delete(self, preview: DeletePreview) -> None:
        data = self.app.data
        sessions_dir = self.sessions_dir

        def work() -> None:
            outcome = delete_with_snapshot(data.writer, preview.session_id, sessions_dir=sessions_dir)
            self.app.call_from_thread(self._deleted, preview, outcome)

        self._run(work, "delete")

    def _deleted(self, preview: DeletePreview, outcome: DeleteOutcome) -> None:
        if not outcome.ok or outcome.deleted is None:
            self._say(f"Delete failed: {outcome.error}", severity="error", timeout=8)
            self._refresh()
            return
        deleted = outcome.deleted
        self.undo_stack.push(deleted)
        n = len(deleted.message_rows)
        text = f"Deleted “{preview.label}” ({n} message{'s' if n != 1 else ''}"
        if deleted.child_ids:
            k = len(deleted.child_ids)
            text += f"; {k} child session{'s' if k != 1 else ''} orphaned"
        text += "). Press u to undo."
        if deleted.unsaved_files:
            text += f" {len(deleted.unsaved_files)} large file(s) cannot be brought back by undo."
        self._say(text, timeout=6)
        self._refresh()

    # -------------------------------------------------------------- undo

    def undo(self) -> None:
        if not self.undo_stack:
            self._say("Nothing to undo.", severity="information", timeout=3)
            return
        if self._cannot_write("undo"):
            return
        snapshot = self.undo_stack.pop()
        assert snapshot is not None
        data = self.app.data

        def work() -> None:
            report = undo_delete(data.writer, snapshot)
            self.app.call_from_thread(self._undone, snapshot, report)

        self._run(work, "undo")

    def _undone(self, snapshot: DeletedSession, report: UndoReport) -> None:
        if not report.restored:
            if report.retryable:
                self.undo_stack.push(snapshot)  # nothing changed: u can try again
            self._say(f"Undo failed: {report.summary()}", severity="error", timeout=8)
            return
        self._say(
            report.summary(),
            severity="information" if report.exact else "warning",
            timeout=6 if report.exact else 12,
        )
        self._refresh(select=snapshot.session_id)

    # -------------------------------------------------------------- export

    def export(self, session_id: str | None, *, query: str | None, source: str | None) -> None:
        from .config import default_export_dir

        app = self.app
        data = app.data
        screen = app._browser()
        exclude = screen.exclude_sources if screen is not None else None
        try:
            directory = default_export_dir(app.config)
        except Exception:
            directory = Path.home()

        def load() -> None:
            plan = plan_export(
                data.reader, session_id, query=query, source=source,
                exclude_sources=exclude, directory=directory, now=app.clock(),
            )
            app.call_from_thread(self._open_export, plan)

        self._run(load, "export-plan")

    def _open_export(self, plan: ExportPlan) -> None:
        from .modals.export import ExportModal

        data = self.app.data

        def runner(scope, fmt, path, progress, cancelled) -> ExportOutcome:
            return run_export(data.reader, scope, fmt, path, progress=progress, cancelled=cancelled)

        def done(outcome: ExportOutcome | None) -> None:
            if outcome is None or not outcome.ok:
                return
            n = outcome.sessions
            self._say(
                f"Exported {n} session{'s' if n != 1 else ''} ({human_size(outcome.bytes)}) "
                f"to {outcome.path}",
                timeout=8,
            )

        self.app.push_screen(ExportModal(plan, runner=runner), done)


def session_actions(app: "HermesApp") -> SessionActions:
    """The app's one :class:`SessionActions` (created on first use; holds the undo stack)."""
    actions = getattr(app, "_session_actions", None)
    if actions is None:
        actions = SessionActions(app)
        app._session_actions = actions  # type: ignore[attr-defined]
    return actions
