"""Delete with an exact snapshot, and undo: the store side of the browser's ``d`` and ``u``.

Delete takes its undo snapshot and deletes **in the same write transaction**: a gateway may be
appending to the session right now (the confirm modal warns about that), and a snapshot taken
in an earlier transaction could miss a message that the delete then removes. The statements
that delete are the store's own (EX-4, LI-14), and the session's files are removed after the
commit exactly as ``SessionDB.delete_session(id, sessions_dir=…)`` does.

Nothing here raises for what a person can cause (a lock, a read-only file, a session gone
meanwhile): every outcome is a plain object that says what happened in one line.
"""

from __future__ import annotations

import glob
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .db import SessionDB, _delete_sessions, _remove_session_files
from .errors import DatabaseError, describe_write_error, is_lock_error
from .paths import write_atomic

#: Files kept in memory so that undo can put them back (larger ones are reported instead).
MAX_SAVED_FILE_BYTES = 64 * 1024 * 1024


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
