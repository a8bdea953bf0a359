"""Delete with an exact snapshot, and undo: the store side of the browser's ``d`` and ``u``.

Delete takes its undo snapshot and deletes **in the same write transaction**: a gateway may be
appending to the session right now (the confirm modal warns about that), and a snapshot taken
in an earlier transaction could miss a message that the delete then removes. The statements
that delete are the store's own (EX-4, LI-14), and the session's files are removed after the
commit exactly as :func:`hermes_state.deletion.delete_session` removes them.

Every function takes a :class:`~hermes_state.store.Store` or an object holding one (a
``SessionDB``: :data:`~hermes_state.store.StoreLike`), or a callable giving one (the writer is
opened only when a delete or an undo runs).

Nothing here raises for what a person can cause (a lock, a read-only file, a session gone
meanwhile): every outcome is a plain object that says what happened in one line.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import json
import os
import re
import secrets
import sqlite3
import stat as stat_module
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from .deletion import delegate_descendants, delete_session_rows, dependent_tables, remove_session_files
from .errors import describe_write_error
from .paths import default_trash_dir, same_path, sessions_dir, write_atomic
from .store import Store, StoreLike, store_of

#: Files kept in memory so that undo can put them back (larger ones are reported instead).
MAX_SAVED_FILE_BYTES = 64 * 1024 * 1024
#: How long a deleted session stays restorable from the trash on disk.
TRASH_DAYS = 7
TRASH_FORMAT = "hermes-sessions-trash/1"


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
    #: Children (of the session or of a delegate run deleted with it) that are not delegate
    #: runs: their parent link is cleared (LI-14), they are not deleted.
    children: list[RelatedSession] = field(default_factory=list)
    #: Delegate (sub-agent) runs deleted with it (UC-5), and how many messages they hold.
    delegates: list[RelatedSession] = field(default_factory=list)
    delegate_messages: int = 0
    #: The parent, which stays.
    parent: RelatedSession | None = None
    #: Not ended and written within the live window.
    live: bool = False
    #: A gateway chat lane that points at this session (None if none).
    lane: Any = None

    @property
    def label(self) -> str:
        return self.title or self.preview or self.session_id




def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def preview_delete(
    reader: StoreLike, session_id: str, *, now: float, live_window_s: float
) -> DeletePreview | None:
    """What deleting ``session_id`` would do; None if it does not exist."""
    store = store_of(reader)
    first_user = store.rules.preview_sql(width=80)

    def read(conn: sqlite3.Connection) -> DeletePreview | None:
        row = conn.execute(
            f"SELECT s.id, s.title, s.source, s.started_at, s.ended_at, s.parent_session_id, "
            f"{first_user} AS first_user, "
            "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) AS n, "
            "(SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id) AS last_ts "
            "FROM sessions s WHERE s.id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        # UC-5: delegate runs go with it (as the delete takes them); every other child of
        # the session or of those runs is orphaned.
        companions = delegate_descendants(conn, [session_id])
        going = [session_id, *companions]
        marks = ",".join("?" for _ in going)

        def related(where: str, params: list) -> list[RelatedSession]:
            return [
                RelatedSession(r["id"], r["title"], _one_line(r["first_user"]))
                for r in conn.execute(
                    f"SELECT s.id, s.title, {first_user} AS first_user FROM sessions s "
                    f"WHERE {where} ORDER BY s.started_at, s.id",
                    params,
                )
            ]

        children = related(f"s.parent_session_id IN ({marks}) AND s.id NOT IN ({marks})", going + going)
        delegates: list[RelatedSession] = []
        delegate_messages = 0
        if companions:
            runs = ",".join("?" for _ in companions)
            delegates = related(f"s.id IN ({runs})", companions)
            delegate_messages = conn.execute(
                f"SELECT COUNT(*) FROM messages WHERE session_id IN ({runs})", companions,
            ).fetchone()[0]
        parent = None
        parent_id = row["parent_session_id"]
        if parent_id and parent_id != session_id:
            parent = next(iter(related("s.id = ?", [parent_id])), None)
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
            delegates=delegates,
            delegate_messages=int(delegate_messages),
            parent=parent,
            live=live,
        )

    return store.read(read)


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
    #: The copy kept in the trash on disk (removed once the session is restored).
    trash_path: Path | None = None
    deleted_at: float = 0.0
    #: Delegate runs deleted with it (UC-5), rows in ``session_columns`` order, parents first;
    #: their messages are in ``message_rows`` too.
    companion_rows: list[tuple] = field(default_factory=list)
    #: ``(child, parent)``: every link the delete cleared (children of the session or of a
    #: companion that were orphaned, not deleted).
    child_links: list[tuple[str, str]] = field(default_factory=list)
    #: Rows of other tables that went with the sessions: table -> (columns, rows). Includes
    #: ``system_prompts`` rows nobody referenced any more.
    other_rows: dict[str, tuple[list[str], list[tuple]]] = field(default_factory=dict)

    @property
    def session_ids(self) -> list[str]:
        index = self.session_columns.index("id")
        return [self.session_id] + [row[index] for row in self.companion_rows]

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
    if "\x00" in session_id:
        return []  # no file is named with a NUL (and os.* raise ValueError for one)
    paths = [directory / f"{session_id}.json", directory / f"{session_id}.jsonl"]
    try:
        paths += sorted(
            p for p in directory.glob(f"request_dump_{glob.escape(session_id)}_*.json") if p.is_file()
        )
    except OSError:
        pass
    return paths


#: A session id that can start a trash entry's file name as it is.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@+=-]{0,119}")


def _entry_stem(session_id: str) -> str:
    """The start of the file name of ``session_id``'s trash entry: the id itself when it is
    an ordinary name, else a digest of it. Another writer (or an import) may store an id
    holding a NUL (no file can be named with one), a ``/`` or terminal controls; the name is
    only a label -- the entry's content says which session it holds."""
    if _PLAIN_NAME.fullmatch(session_id):
        return session_id
    return "id-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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


def _dependent_rows(conn: sqlite3.Connection, ids: list[str]) -> dict[str, tuple[list[str], list[tuple]]]:
    """The rows of other tables a delete of ``ids`` removes (UC-5), to put back on undo."""
    marks = ",".join("?" for _ in ids)
    found: dict[str, tuple[list[str], list[tuple]]] = {}
    for table, column in dependent_tables(conn):
        cur = conn.execute(f"SELECT * FROM {table} WHERE {column} IN ({marks})", ids)
        rows = [tuple(r) for r in cur.fetchall()]
        if rows:
            found[table] = ([d[0] for d in cur.description], rows)
    columns = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    has_prompts = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'system_prompts'"
    ).fetchone()
    if has_prompts and "system_prompt_hash" in columns:
        cur = conn.execute(
            f"SELECT * FROM system_prompts WHERE hash IN (SELECT system_prompt_hash FROM sessions "
            f"WHERE id IN ({marks})) AND NOT EXISTS (SELECT 1 FROM sessions o WHERE "
            f"o.system_prompt_hash = system_prompts.hash AND o.id NOT IN ({marks}))",
            ids + ids,
        )
        rows = [tuple(r) for r in cur.fetchall()]
        if rows:
            found["system_prompts"] = ([d[0] for d in cur.description], rows)
    return found


def delete_with_snapshot(
    writer: Callable[[], StoreLike],
    session_id: str,
    *,
    sessions_dir: Path | None,
    trash: Path | None = None,
    now: Callable[[], float] = time.time,
    reraise: bool = False,
) -> DeleteOutcome:
    """Delete a session (EX-4, LI-14) and return an exact snapshot for :func:`undo_delete`.

    With ``trash`` (a directory), the snapshot is also written there -- inside the deleting
    transaction, before it commits -- so ``hermes sessions restore`` can bring the session
    back for :data:`TRASH_DAYS` days even if this process dies right after the delete.
    A failure is an outcome with a sentence for the browser; ``reraise``: the exception
    itself (nothing deleted, no trash file left), for a caller that words errors its own way.
    """
    files, unsaved = _save_files(sessions_dir, session_id)
    trash_path = trash / f"{_entry_stem(session_id)}.{secrets.token_hex(4)}.json" if trash is not None else None

    def do(conn: sqlite3.Connection) -> DeletedSession | None:
        cur = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,))
        row = cur.fetchone()
        if row is None:
            return None
        session_columns = [d[0] for d in cur.description]
        # UC-5: delegate runs go with their parent; the snapshot holds them all.
        companions = delegate_descendants(conn, [session_id])
        ids = [session_id] + companions
        marks = ",".join("?" for _ in ids)
        by_id = {r["id"]: tuple(r) for r in conn.execute(f"SELECT * FROM sessions WHERE id IN ({marks})", ids)}
        mcur = conn.execute(f"SELECT * FROM messages WHERE session_id IN ({marks}) ORDER BY id", ids)
        message_rows = [tuple(r) for r in mcur.fetchall()]
        message_columns = [d[0] for d in mcur.description]
        child_links = [
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT id, parent_session_id FROM sessions WHERE parent_session_id IN ({marks}) "
                f"AND id NOT IN ({marks}) ORDER BY id",
                ids + ids,
            )
        ]
        other_rows = _dependent_rows(conn, ids)
        title = row["title"]
        snapshot = DeletedSession(
            session_id=session_id,
            label=title or session_id,
            session_columns=session_columns,
            session_row=tuple(row),
            message_columns=message_columns,
            message_rows=message_rows,
            child_ids=[child for child, parent in child_links if parent == session_id],
            deleted_at=now(),
            companion_rows=[by_id[sid] for sid in companions if sid in by_id],
            child_links=child_links,
            other_rows=other_rows,
        )
        if trash_path is not None:
            snapshot.files = files
            write_trash(trash_path, snapshot, database=store.path)
            snapshot.trash_path = trash_path
        delete_session_rows(conn, ids)
        return snapshot

    try:
        store = store_of(writer())
        deleted = store.write(do)
    except Exception as exc:
        if trash_path is not None:
            trash_path.unlink(missing_ok=True)  # the delete did not happen
        if reraise:
            raise
        return DeleteOutcome(False, error=describe_write_error(exc, "Nothing was deleted."))
    if deleted is None:
        return DeleteOutcome(False, error=f"Session {session_id} no longer exists.")
    if sessions_dir is not None:
        remove_session_files(sessions_dir, deleted.session_ids)
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
    #: Delegate runs restored with it, and those whose id was taken meanwhile (left alone).
    companions_restored: list[str] = field(default_factory=list)
    companions_skipped: list[str] = field(default_factory=list)
    #: ``(child_id, new_parent_id)``: a child got another parent meanwhile; left alone.
    children_moved: list[tuple[str, str]] = field(default_factory=list)
    files_restored: list[Path] = field(default_factory=list)
    files_failed: list[tuple[Path, str]] = field(default_factory=list)
    #: Nothing to undo: the session is in the store as the snapshot has it (the delete never
    #: committed, or another command restored it meanwhile).
    ghost: bool = False

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
        for companion in self.companions_skipped:
            out.append(f"delegate run {companion} exists again and was left as it is")
        for path, reason in self.files_failed:
            out.append(f"file {path.name} was not restored ({reason})")
        return out

    def summary(self, quotes: tuple[str, str] = ("'", "'")) -> str:
        """One line for a person; the title between ``quotes`` (the command line's straight
        ones by default, the browser's curly ones as its other notices)."""
        if not self.restored:
            return self.error or "Nothing was restored."
        n = self.messages
        text = f"Restored {quotes[0]}{self.label}{quotes[1]} with {n} message{'s' if n != 1 else ''}"
        if self.companions_restored:
            d = len(self.companions_restored)
            text += f", {d} delegate run{'s' if d != 1 else ''}"
        if self.children_relinked:
            k = len(self.children_relinked)
            text += f" and re-linked {k} child session{'s' if k != 1 else ''}"
        problems = self.problems()
        if problems:
            return text + ". Could not restore: " + "; ".join(problems) + "."
        return text + "."


class _IdTaken(Exception):
    pass


def undo_delete(writer: Callable[[], StoreLike], snapshot: DeletedSession) -> UndoReport:
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
        # Prompts first: sessions reference them (a foreign key).
        if "system_prompts" in snapshot.other_rows:
            _insert_rows(conn, "system_prompts", *snapshot.other_rows["system_prompts"])
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
        # Delegate runs deleted with it, parents before their own delegates.
        id_at = snapshot.session_columns.index("id")
        for row in snapshot.companion_rows:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (row[id_at],)).fetchone():
                rep.companions_skipped.append(row[id_at])
                continue
            _insert_rows(conn, "sessions", snapshot.session_columns, [row], ignore=False)
            rep.companions_restored.append(row[id_at])

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

        for table, (columns, rows) in snapshot.other_rows.items():
            if table != "system_prompts":
                _insert_rows(conn, table, columns, rows)
        links = snapshot.child_links or [(child, sid) for child in snapshot.child_ids]
        for child, parent in links:
            crow = conn.execute(
                "SELECT parent_session_id FROM sessions WHERE id = ?", (child,)
            ).fetchone()
            if crow is None:
                rep.children_missing.append(child)
            elif crow[0] is None:
                conn.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (parent, child))
                rep.children_relinked.append(child)
            else:
                rep.children_moved.append((child, crow[0]))
        rep.restored = True
        return rep

    # Whatever goes wrong, nothing was restored and the snapshot is intact: it can be retried.
    report.retryable = True
    try:
        report = store_of(writer()).write(do)
    except _IdTaken:
        if _still_there(store_of(writer()), snapshot):
            report.ghost = True
            if snapshot.trash_path is not None and not os.path.lexists(snapshot.trash_path):
                # Another command (``hermes sessions restore``) brought it back meanwhile.
                report.error = f"Session {snapshot.session_id} is back already (restored by another command)."
                return report
            # A kill between writing this entry and the delete's commit rolled the delete
            # back: the session was never gone, and the entry is a ghost of it.
            report.error = (
                f"Session {snapshot.session_id} is still in the store: the delete that left this "
                "trash entry did not complete, so there is nothing to restore."
            )
            if snapshot.trash_path is not None:
                snapshot.trash_path.unlink(missing_ok=True)
            return report
        report.error = (
            f"A session with id {snapshot.session_id} exists again (created after the delete); "
            "nothing was restored."
        )
        return report
    except Exception as exc:
        report.error = describe_write_error(exc, "Nothing was restored.")
        return report
    # An undo in the same run knows where the files were; an entry read from the trash is
    # restored into the store's own sessions directory.
    own = snapshot.sessions_dir if snapshot.sessions_dir is not None else sessions_dir(store_of(writer()).path.parent)
    _restore_files(snapshot, report, own)
    if report.parent_missing and snapshot.trash_path is not None:
        _leave_link_for_parent(snapshot.trash_path.parent, snapshot.session_id, report.parent_missing,
                               store_of(writer()).path)
    if snapshot.trash_path is not None:
        snapshot.trash_path.unlink(missing_ok=True)  # restored: no longer in the trash
    return report


def _leave_link_for_parent(directory: Path, child: str, parent: str, database: Path) -> None:
    """A child restored while its parent is still in the trash comes back as a root; the
    parent's entry learns the link, so restoring the parent later puts it back (restoring a
    child, then its parent, once left the two apart for good). Only the entry of the parent
    deleted from the child's own store (``database``): the trash is one per user, ids collide
    across Hermes profiles, and the same id's entry of another profile restored later would
    re-link a session of that profile. Best effort: an entry that cannot be rewritten only
    keeps the old behaviour."""
    for entry in list_trash(directory):
        if entry.problem or entry.session_id != parent or not same_path(entry.database, database):
            continue
        try:
            document = json.loads(_read_entry(entry.path))
            links = document.setdefault("child_links", [])
            if [child, parent] in links:
                continue
            links.append([child, parent])
            write_atomic(entry.path, [json.dumps(document, ensure_ascii=False)], mode=0o600)
        except (OSError, ValueError, TypeError, AttributeError):
            continue


def _still_there(store: Store, snapshot: DeletedSession) -> bool:
    """The session of ``snapshot`` is in the store as it was when the entry was written (same
    start, same messages): the delete never committed."""
    started = snapshot.column("started_at")

    def read(conn: sqlite3.Connection) -> bool:
        row = conn.execute("SELECT started_at FROM sessions WHERE id = ?", (snapshot.session_id,)).fetchone()
        if row is None or row[0] != started:
            return False
        count = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (snapshot.session_id,)).fetchone()[0]
        own = sum(1 for r in snapshot.message_rows if _message_session(snapshot, r) == snapshot.session_id)
        return count == own

    try:
        return bool(store.read(read))
    except sqlite3.Error:
        return False


def _message_session(snapshot: DeletedSession, row: tuple) -> Any:
    try:
        return row[snapshot.message_columns.index("session_id")]
    except ValueError:
        return None


def _session_file_names(session_id: str) -> Callable[[str], bool]:
    """Whether a file name is one EX-4 removes for ``session_id`` (and so may write back)."""
    exact = {f"{session_id}.json", f"{session_id}.jsonl"}
    prefix = f"request_dump_{session_id}_"
    return lambda name: name in exact or (name.startswith(prefix) and name.endswith(".json") and "/" not in name)


def _restore_files(snapshot: DeletedSession, report: UndoReport, sessions: Path) -> None:
    """Write back the session files kept with the snapshot -- only into the store's own
    sessions directory, only under the names a delete removes for these sessions, and never
    with set-id bits: a trash entry is data, whoever wrote it (a crafted entry once made a
    restore as root write an arbitrary path with mode 4777)."""
    try:
        allowed_dir = sessions.resolve()
    except OSError:
        allowed_dir = sessions
    names = [_session_file_names(sid) for sid in snapshot.session_ids]
    for saved in snapshot.files:
        try:
            where = saved.path.parent.resolve()
        except OSError:
            where = None
        if where != allowed_dir or not any(ok(saved.path.name) for ok in names):
            report.files_failed.append((saved.path, "not a file of this store's sessions; not written"))
            continue
        target = allowed_dir / saved.path.name
        if os.path.lexists(target):
            report.files_failed.append((saved.path, "a file with that name exists again"))
            continue
        try:
            write_atomic(target, [saved.data], mode=saved.mode & 0o666)
            os.utime(target, (saved.mtime, saved.mtime))
        except OSError as exc:
            report.files_failed.append((saved.path, exc.strerror or str(exc)))
            continue
        report.files_restored.append(saved.path)
    for path in snapshot.unsaved_files:
        report.files_failed.append((path, "too large to keep for undo"))


def _insert_rows(
    conn: sqlite3.Connection, table: str, columns: list[str], rows: list[tuple], *, ignore: bool = True
) -> None:
    """Insert ``rows`` (in ``columns`` order) with the columns the table still has."""
    current = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    keep = [i for i, name in enumerate(columns) if name in current]
    if not keep:
        return
    names = ", ".join(_quote(columns[i]) for i in keep)
    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    sql = f"{verb} INTO {table} ({names}) VALUES ({', '.join('?' for _ in keep)})"
    for row in rows:
        conn.execute(sql, [row[i] for i in keep])


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ---------------------------------------------------------------------------- the trash on disk


def _encode(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$b64": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$b64"}:
        return base64.b64decode(value["$b64"])
    return value


def write_trash(path: Path, snapshot: DeletedSession, *, database: Path) -> Path:
    """Keep ``snapshot`` at ``path`` (owner-only, written atomically) and return the path.

    The file holds the rows exactly (every column, BLOBs as base64), the children whose
    link the delete cleared, the session files kept for undo, and where it was deleted from.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.parent.is_symlink():
        # Owner-only, but never through a link: a symlinked trash directory once had its
        # target (whatever it was) chmodded. The entries themselves are 0600 either way.
        try:
            os.chmod(path.parent, 0o700)
        except OSError:
            pass
    document = {
        "format": TRASH_FORMAT,
        "deleted_at": snapshot.deleted_at,
        "database": str(database),
        "session_id": snapshot.session_id,
        "label": snapshot.label,
        "source": snapshot.column("source"),
        "session": {"columns": snapshot.session_columns, "row": [_encode(v) for v in snapshot.session_row]},
        "messages": {
            "columns": snapshot.message_columns,
            "rows": [[_encode(v) for v in row] for row in snapshot.message_rows],
        },
        "child_ids": snapshot.child_ids,
        "companions": [[_encode(v) for v in row] for row in snapshot.companion_rows],
        "child_links": [list(link) for link in snapshot.child_links],
        "other_rows": {
            table: {"columns": columns, "rows": [[_encode(v) for v in row] for row in rows]}
            for table, (columns, rows) in snapshot.other_rows.items()
        },
        "files": [
            {"path": str(f.path), "mode": f.mode, "mtime": f.mtime, "data": _encode(f.data)}
            for f in snapshot.files
        ],
    }
    write_atomic(path, [json.dumps(document, ensure_ascii=False)], mode=0o600)
    return path


def read_trash(path: Path) -> DeletedSession:
    """The snapshot kept at ``path`` (raises ``ValueError`` for a file that is not one)."""
    distrust = _untrusted(Path(path))
    if distrust:
        raise ValueError(f"{path} is not restored: {distrust}")
    try:
        document = json.loads(_read_entry(Path(path)))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} cannot be read as a trash entry ({_reason(exc)})") from exc
    if not isinstance(document, dict) or document.get("format") != TRASH_FORMAT:
        raise ValueError(f"{path} is not a trash entry of this program")
    try:
        session = document["session"]
        messages = document["messages"]
        snapshot = DeletedSession(
            session_id=str(document["session_id"]),
            label=str(document.get("label") or document["session_id"]),
            session_columns=list(session["columns"]),
            session_row=tuple(_decode(v) for v in session["row"]),
            message_columns=list(messages["columns"]),
            message_rows=[tuple(_decode(v) for v in row) for row in messages["rows"]],
            child_ids=[str(c) for c in document.get("child_ids") or []],
            files=[
                SavedFile(Path(f["path"]), _decode(f["data"]), int(f["mode"]), float(f["mtime"]))
                for f in document.get("files") or []
            ],
            trash_path=Path(path),
            deleted_at=float(document.get("deleted_at") or 0.0),
            companion_rows=[tuple(_decode(v) for v in row) for row in document.get("companions") or []],
            child_links=[(str(c), str(p)) for c, p in document.get("child_links") or []],
            other_rows={
                str(table): (list(part["columns"]), [tuple(_decode(v) for v in row) for row in part["rows"]])
                for table, part in (document.get("other_rows") or {}).items()
            },
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} is a damaged trash entry ({exc})") from exc
    return snapshot


@dataclass(frozen=True)
class TrashEntry:
    """One deleted session kept in the trash (what ``hermes sessions trash`` lists)."""

    path: Path
    session_id: str
    label: str
    source: str | None
    messages: int
    deleted_at: float
    database: str
    #: Why this entry cannot be restored (damaged, a link, not the user's), or None.
    problem: str | None = None

    @property
    def name(self) -> str:
        """The entry's own name (its file name without ``.json``): unique, for choosing one
        of several entries of the same session."""
        return self.path.name[: -len(".json")] if self.path.name.endswith(".json") else self.path.name


#: A trash entry is a few MB at most (the session files it keeps are capped); a file far
#: larger at an entry's name is not ours to read into memory.
MAX_ENTRY_BYTES = 2 * 1024 * 1024 * 1024


def _untrusted(path: Path) -> str | None:
    """Why an entry is not to be trusted, or None: only the user's own regular files are."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return _reason(exc)
    if stat_module.S_ISLNK(st.st_mode):
        return "it is a symbolic link (not followed)"
    if not stat_module.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"it belongs to another user (uid {st.st_uid})"
    return None


def _read_entry(path: Path) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat_module.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            raise OSError(f"{path} is not a trash entry of a plausible size")
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read()
    finally:
        os.close(fd)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON at byte {exc.pos}"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(exc)


def list_trash(directory: Path | None = None, *, now: float | None = None) -> list[TrashEntry]:
    """Every entry, newest first -- damaged and untrusted ones too, each with its problem, so
    nothing sits in the trash unseen. The user's own entries older than :data:`TRASH_DAYS`
    days are removed."""
    directory = directory if directory is not None else default_trash_dir()
    now = time.time() if now is None else now
    entries: list[TrashEntry] = []
    for path in _trash_files(directory):
        stem = path.name[: -len(".json")]
        try:
            mtime = os.lstat(path).st_mtime
        except OSError:
            continue
        problem = _untrusted(path)
        document: Any = None
        if problem is None:
            try:
                document = json.loads(_read_entry(path))
                if not isinstance(document, dict) or document.get("format") != TRASH_FORMAT:
                    problem = "damaged: not a trash entry of this program"
                deleted_at = float((document or {}).get("deleted_at") or mtime) if isinstance(document, dict) else mtime
            except (OSError, ValueError, TypeError) as exc:
                problem = f"damaged: {_reason(exc)}"
                deleted_at = mtime
        else:
            deleted_at = mtime
        if problem is None and now - deleted_at > TRASH_DAYS * 86400:
            path.unlink(missing_ok=True)
            continue
        if problem is not None or not isinstance(document, dict):
            entries.append(TrashEntry(path=path, session_id=stem, label="", source=None, messages=0,
                                      deleted_at=deleted_at, database="", problem=problem))
            continue
        try:
            messages = len((document.get("messages") or {}).get("rows") or [])
        except (AttributeError, TypeError):
            messages = 0
        entries.append(TrashEntry(
            path=path,
            session_id=str(document.get("session_id")),
            label=str(document.get("label") or document.get("session_id")),
            source=document.get("source") if isinstance(document.get("source"), str) else None,
            messages=messages,
            deleted_at=deleted_at,
            database=str(document.get("database") or ""),
        ))
    entries.sort(key=lambda e: -e.deleted_at)
    return entries


def _trash_files(directory: Path) -> Iterator[Path]:
    """Every ``*.json`` name in the trash directory (links and odd files included: the caller
    says what is wrong with them); temp files of writes in progress are not entries."""
    try:
        names = sorted(
            entry.name for entry in os.scandir(directory)
            if entry.name.endswith(".json") and not entry.name.startswith(".")
        )
    except OSError:
        return
    for name in names:
        yield Path(directory) / name
