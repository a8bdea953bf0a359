"""Rename and export as pure steps, and the outcomes the browser shows: no textual import.

Each function blocks (run it in a thread worker), takes the store it needs and returns a
plain outcome object; nothing here raises for anything a person can cause (duplicate titles,
locked databases, unwritable paths). Delete and undo live in :mod:`hermes_state.trash`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from rich.filesize import decimal

from hermes_state import SessionDB
from hermes_state.conversation import conversation_members
from hermes_state.errors import TitleChangedError, describe_write_error
from hermes_state.paths import write_atomic
from hermes_state.titles import sanitize_title
from hermes_state.listing import ListQuery
from .textsafe import home_path
from .wording import counted

if TYPE_CHECKING:  # (the trash and the export are imported when first used, not at start-up)
    from hermes_state.trash import DeletedSession

ProgressCallback = Callable[[int, int], None]

#: Deletes remembered for undo in one run of the app.
UNDO_DEPTH = 20
#: Message hits read to find the sessions matching a search (export scope).
EXPORT_SEARCH_LIMIT = 1000

# ---------------------------------------------------------------------------- rename


@dataclass(frozen=True)
class RenameOutcome:
    """What a rename did. ``ok`` with ``title`` None means the title was cleared.

    ``changed``: nothing was written because the title was no longer the one the person saw;
    ``current`` is what it is now."""

    ok: bool
    title: str | None = None
    error: str | None = None
    changed: bool = False
    current: str | None = None


def check_title(raw: str) -> tuple[str | None, str | None]:
    """``(cleaned, None)`` or ``(None, reason)`` per TI-1, without touching the database."""
    try:
        return sanitize_title(raw), None
    except ValueError as exc:
        return None, str(exc)


_UNCONDITIONAL = object()


def rename_session(
    writer: Callable[[], SessionDB], session_id: str, raw: str, *, expected: object = _UNCONDITIONAL
) -> RenameOutcome:
    """Sanitise and store a title (TI-1, TI-2); every failure leaves the database unchanged.

    ``expected``: the title the person saw (None: untitled); the rename is refused, with what
    the title is now, if it changed meanwhile."""
    cleaned, error = check_title(raw)
    if error:
        return RenameOutcome(False, error=error)
    try:
        if expected is _UNCONDITIONAL:
            updated = writer().set_session_title(session_id, raw)
        else:
            updated = writer().set_session_title(session_id, raw, expected=expected)
    except TitleChangedError as exc:
        now = f"“{exc.current}”" if exc.current else "untitled"
        return RenameOutcome(
            False, changed=True, current=exc.current,
            error=f"Someone else renamed it meanwhile: it is now {now}. Press Enter again to replace it.",
        )
    except ValueError as exc:  # duplicate (TI-2), raised inside the rolled-back transaction
        return RenameOutcome(False, error=str(exc))
    except Exception as exc:  # locked, read-only, closing …: rolled back by _execute_write
        return RenameOutcome(False, error=describe_write_error(exc))
    if not updated:
        return RenameOutcome(False, error=f"Session {session_id} no longer exists. Nothing was changed.")
    return RenameOutcome(True, title=cleaned)


@dataclass(frozen=True)
class ArchiveChange:
    """Conversations archived (or unarchived) together; undo sets them back (BR-11, BR-14)."""

    session_ids: tuple[str, ...]
    #: The value written: True for an archive, False for an unarchive.
    archived: bool
    labels: tuple[str, ...] = ()

    @property
    def verb(self) -> str:
        return "archived" if self.archived else "unarchived"

    @property
    def what(self) -> str:
        """What was changed, as a message names it: the one conversation's label, or a count."""
        n = len(self.session_ids)
        return f"“{self.labels[0]}”" if n == 1 and self.labels else f"{n} conversations"


@dataclass(frozen=True)
class RenameChange:
    """A title set or cleared in the browser; undo writes ``before`` back, but only while the
    title is still ``after`` (a rename by someone else meanwhile is not overwritten)."""

    session_id: str
    #: The title before the rename (None: untitled) and the one written (None: cleared).
    before: str | None
    after: str | None


@dataclass(frozen=True)
class DeleteBatch:
    """Several deletes made after one confirmation; one undo restores all (BR-14)."""

    snapshots: tuple[DeletedSession, ...]


if TYPE_CHECKING:
    #: What ``u`` can take back.
    Undoable = DeletedSession | ArchiveChange | DeleteBatch | RenameChange


class UndoStack:
    """Deletes, archive changes and renames made in this run of the app, newest last (bounded)."""

    def __init__(self, limit: int = UNDO_DEPTH) -> None:
        self.limit = limit
        self._items: list[Undoable] = []

    def push(self, item: Undoable) -> None:
        self._items.append(item)
        del self._items[: max(0, len(self._items) - self.limit)]

    def pop(self) -> Undoable | None:
        return self._items.pop() if self._items else None

    def peek(self) -> Undoable | None:
        return self._items[-1] if self._items else None

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)


# ---------------------------------------------------------------------------- export


FORMAT_EXTENSIONS = {"jsonl": "jsonl", "md": "md", "html": "html"}
FORMAT_LABELS = {"jsonl": "JSONL (as upstream writes it)", "md": "Markdown transcript",
                 "html": "HTML page (opens offline in a browser)"}


@dataclass(frozen=True)
class ExportScope:
    """One choice of what to export."""

    key: str  # marked | session | lineage | search | listed | all
    label: str
    stem: str
    count: int
    session_ids: tuple[str, ...] | None = None  # None: every session (of ``source``), or ``listed``'s
    source: str | None = None
    #: Why this scope cannot be used (shown, and the choice is disabled).
    unavailable: str | None = None
    #: The list's conversations, each whole, chosen when the export runs (a long list: choosing
    #: every member took ~2 s at 50k sessions, too long to wait for before the dialog opens).
    listed: ListQuery | None = None
    #: The list's conversations this scope holds (``listed``; ``count`` is then its sessions,
    #: or the conversations again when they are chosen as the export runs).
    conversations: int | None = None


#: A list of at most this many conversations is chosen when the dialog opens (its label then
#: says how many sessions they hold); a longer one when the export runs.
EAGER_CONVERSATIONS = 2_000


def narrowed(listed: ListQuery) -> bool:
    """Does the list leave out conversations by more than the view (a source, a workspace, a
    time window or other fields, unread, statuses)? Then "the whole database" is not offered
    beside it: the filters on screen are not silently ignored."""
    return bool(listed.source or listed.workspace is not None or listed.narrow
                or listed.unread_only or listed.statuses)


def listed_scope(reader: SessionDB, listed: ListQuery) -> ExportScope:
    """"The list": every conversation the list shows under its filters, counted in the
    list's unit (conversations, each exported whole: its compressions, delegate runs)."""
    from hermes_state import listing
    from hermes_state.listing.select import choose

    parts = []
    if listed.source:
        parts.append(listed.source)
    if listed.workspace is not None:
        parts.append(f"in {home_path(listed.workspace)}" if listed.workspace else "with no workspace")
    if listed.narrow:
        parts.append("its time window" if listed.narrow.since is not None or listed.narrow.until is not None
                     else "its filters")
    what = f" ({', '.join(parts)})" if parts else ""
    stem = ("listed" if listed.narrow else f"workspace-{_slug(listed.workspace) or 'none'}"
            if listed.workspace is not None else _slug(listed.source) or "source" if listed.source else "list")
    k = listing.count_listed(reader.store, listed)
    # (short: one radio line of the export dialog, never wrapped, and "Every conversation in
    # the list — 410 conversations, 491 sessions" was cut at 80 columns)
    head = f"The list{what} — {counted(k, 'conversation')}"
    empty = None if k else "the list is empty"
    if k > EAGER_CONVERSATIONS:
        return ExportScope("listed", f"{head} (each whole)", stem, k, None, unavailable=empty,
                           listed=listed, conversations=k)
    ids = [sid for item in choose(reader.lister, listed) for sid in item.sessions]
    return ExportScope("listed", f"{head}, {counted(len(ids), 'session')}", stem, len(ids), tuple(ids),
                       unavailable=None if ids else "the list is empty", conversations=k)


def scope_session_ids(reader: SessionDB, scope: ExportScope) -> list[str] | None:
    """The sessions ``scope`` writes (None: every session, of its source if it has one)."""
    if scope.session_ids is not None:
        return list(scope.session_ids)
    if scope.listed is not None:
        from hermes_state.listing.select import choose

        return [sid for item in choose(reader.lister, scope.listed) for sid in item.sessions]
    return None


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


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def _slug(text: str, limit: int = 32) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return slug[:limit].strip("-")


def file_stamp(now: float) -> str:
    return datetime.fromtimestamp(now).strftime("%Y%m%d-%H%M%S")


def _hit_session_ids(reader: SessionDB, query: str, listed: ListQuery, now: float | None = None) -> list[str]:
    """Sessions of the messages matching ``query`` under the list's source and workspace
    filters, in hit order (first hit first); with a time window (the list's ``narrow``, and
    the query's own ``after:`` / ``before:`` terms, BR-21) only those whose conversation was
    last active in it, as the search pane shows."""
    from hermes_state.timewindow import windowed

    # (a term that cannot be read is left out, as the search pane leaves it out)
    read = windowed(query, listed.narrow, now)
    query, narrow = read.text, read.narrow
    ids = _hits(reader, query, listed)
    if not narrow or not ids:
        return ids
    from hermes_state.conversation import conversation_roots
    from hermes_state.listing.narrow import narrowed_ids

    store = reader.store
    roots = conversation_roots(store, ids)
    kept = store.read(lambda conn: narrowed_ids(conn, narrow, store.rules, store.has_session_column,
                                                sorted(set(roots.values()))))
    return [sid for sid in ids if roots.get(sid, sid) in kept]


def _hits(reader: SessionDB, query: str, listed: ListQuery) -> list[str]:
    """The sessions of the hits the search pane shows for ``listed`` (the same scope: its
    source, workspace and hidden rows; the view plays no part, as in the pane)."""
    search = getattr(reader, "search", None)
    if search is not None:
        result = search(query, listed, limit=EXPORT_SEARCH_LIMIT, prefix_last=True)
        hits = [getattr(hit, "session_id", None) for hit in result.hits]
    else:
        source = listed.source
        rows = reader.search_messages(
            query,
            source_filter=[source] if source else None,
            exclude_sources=None if source else (list(listed.exclude_sources) or None),
            limit=EXPORT_SEARCH_LIMIT,
        )
        hits = [row.get("session_id") for row in rows]
    return list(dict.fromkeys(h for h in hits if h))


def plan_export(
    reader: SessionDB,
    session_id: str | None,
    *,
    query: str | None,
    listed: ListQuery = ListQuery(),
    directory: Path,
    now: float,
    marked: list[str] | None = None,
) -> ExportPlan:
    """The scopes offered for an export started on ``session_id`` with the screen's state:
    ``query`` the search typed, ``listed`` the screen's list.

    ``marked`` conversations (BR-14) come first, each with its whole lineage; the list's
    source and workspace narrow the search's scope and the "every session" one (BR-13); a
    time window on the list (BR-21) makes that scope the conversations it lists, each whole.
    """
    source = listed.source
    scopes: list[ExportScope] = []
    if marked:
        family: list[str] = []
        for marked_id in marked:
            if reader.get_session(marked_id) is None:
                continue
            for member in conversation_members(reader.store, marked_id):
                if member not in family:
                    family.append(member)
        k = len(marked)
        scopes.append(
            ExportScope(
                "marked",
                f"Marked — {k} conversation{'s' if k != 1 else ''}, {len(family)} session{'s' if len(family) != 1 else ''}",
                "marked",
                len(family),
                tuple(family),
                unavailable=None if family else "the marked conversations no longer exist",
            )
        )
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
            ids = _hit_session_ids(reader, query, listed, now)
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
    else:
        scopes.append(listed_scope(reader, listed))
        if not narrowed(listed):
            n = sum(reader.source_counts().values())  # every session, as the export writes them
            scopes.append(
                ExportScope(
                    "all",
                    f"The whole database — {counted(n, 'session')}, hidden ones too",
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
    from hermes_state.export import iter_export, render_chunks

    problem = check_destination(path)
    if problem:
        return ExportOutcome(False, path, error=problem)
    count = 0

    def sessions() -> Iterator[dict]:
        nonlocal count
        ids = scope_session_ids(reader, scope)
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
    """A byte count as people read it (``1.2 MB``)."""
    return decimal(n)
