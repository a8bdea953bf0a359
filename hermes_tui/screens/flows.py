"""Rename, delete, archive, pin, undo and export as flows a screen owns: ask, confirm, write, say.

:class:`SessionActions` belongs to one screen (the browser's): it opens the modals over it,
runs the store door in the screen's workers (so a failure takes the screen's error path) and
tells the person what happened in one plain-text line. After a write it asks the screen to
re-read what it shows (:class:`FlowsHost`).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from ..config import default_export_dir
from ..context import AppContext
from ..messages import WorkerDone
from ..operations import ArchiveChange, DeleteBatch, ExportOutcome, ExportPlan, RenameChange, human_size
from ..textsafe import inert_line
from ..widgets.text_field import drop_held_keys, hold_keys
from ..wording import counted

if TYPE_CHECKING:
    from textual.app import App

    from hermes_state.listing import ListQuery
    from textual.message import Message
    from textual.worker import Worker

    from hermes_state.trash import DeleteOutcome, DeletePreview, DeletedSession, UndoReport

# Each modal is imported when it is first opened, not with the browser: together ~18 ms of
# every start, before the first page (the export dialog's widgets the most).


#: The browser's quotes around a title in its notices (as “Deleted …” and “Renamed …”).
CURLY = ("“", "”")


class FlowsHost(Protocol):
    """What :class:`SessionActions` needs of the screen that owns it: the screen's context,
    app, notices and workers, and the hooks by which it re-reads what it shows."""

    ctx: AppContext

    @property
    def app(self) -> "App": ...

    def notify(self, message: str, *, severity: str = ..., timeout: float | None = ..., markup: bool = ...) -> None: ...

    def post_message(self, message: "Message") -> bool: ...

    def run_worker(self, work: Callable[[], object], *, group: str = ..., thread: bool = ...,
                   exit_on_error: bool = ...) -> "Worker": ...

    def after_write(self, select: str | None = None, since: int | None = None) -> None:
        """Re-read what the screen shows; ``select`` is the session to highlight, unless the
        reader moved from ``since`` (a :meth:`list_position`) meanwhile."""

    def list_position(self) -> int | None:
        """Where the reader is in the screen's list (None: no list)."""

    def search_text(self) -> str | None:
        """The search typed (None: none), which the export's "matching" scope starts from."""

    def marked_ids(self) -> list[str]:
        """Conversations marked with ``space`` (BR-14); an export offers them first."""

    def list_query(self) -> "ListQuery":
        """The screen's list as one query: its source and workspace (BR-13) narrow the
        export's scopes, its time window (BR-21) the "every conversation" one to what the
        list shows."""

    def after_batch(self) -> None:
        """A batch action on the marked conversations was carried out: clear the marks."""


class SessionActions:
    """The flows of one screen (see the module's docstring)."""

    def __init__(self, host: FlowsHost) -> None:
        self.host = host
        self.ctx = host.ctx

    @property
    def app(self) -> "App":
        return self.host.app

    # -------------------------------------------------------------- helpers

    def _in_worker(self, work: Callable[..., object], *args: object) -> None:
        """Run ``work(*args)`` in a thread worker of the screen (its failure takes the
        screen's error path)."""
        self.host.run_worker(partial(work, *args), group="flow", thread=True, exit_on_error=False)

    def _from_worker(self, apply: Callable[..., object], *args: object) -> None:
        """From a flow's worker: ``apply(*args)`` on the event loop (see WorkerDone), by the
        screen. A flow's outcome is never stale: its undo and its notice always apply."""
        self.host.post_message(WorkerDone(apply, *args))

    def say(self, text: str, *, severity: str = "information", timeout: float = 5) -> None:
        """A notification; titles and paths in it are data, so markup is off."""
        self.host.notify(inert_line(text), severity=severity, timeout=timeout, markup=False)

    def cannot_write(self, what: str) -> bool:
        reason = self.ctx.access.read_only_reason
        if reason:
            self.say(f"Cannot {what}: {reason}. Nothing was changed.", severity="error", timeout=6)
            return True
        return False

    # -------------------------------------------------------------- rename

    def start_rename(self, session_id: str) -> None:
        if not self.cannot_write("rename"):
            hold_keys(self.app)  # (what is typed behind "r" is the new title)
            self._in_worker(self._load_rename, session_id)

    def _load_rename(self, session_id: str) -> None:
        summary = self.ctx.store.summary(session_id)
        self._from_worker(self._open_rename, session_id, summary)

    def _open_rename(self, session_id: str, summary) -> None:
        if summary is None:
            drop_held_keys(self.app)
            self.say(f"Session {session_id} no longer exists.", severity="warning", timeout=4)
            self.host.after_write()
            return
        from ..modals.rename import RenameModal

        store = self.ctx.store
        position = self.host.list_position()  # (the keys typed behind Enter may move from there)

        def done(result: str | None) -> None:
            if result is None:
                return
            # Undoable like a delete: a title typed over (or cleared) by mistake is not lost.
            self.ctx.undo.push(RenameChange(session_id, summary.title, result or None))
            if result:
                self.say(f"Renamed {session_id} to “{result}”. Press u to undo.", timeout=4)
            else:
                self.say(f"Title cleared for {session_id}. Press u to undo.", timeout=4)
            self.host.after_write(select=session_id, since=position)

        self.app.push_screen(
            RenameModal(session_id, summary.title, label=summary.label,
                        save=lambda raw, expected: store.rename(session_id, raw, expected=expected)),
            done,
        )

    # -------------------------------------------------------------- delete

    def start_delete(self, session_id: str) -> None:
        if not self.cannot_write("delete"):
            hold_keys(self.app)  # (for the dialog: never the list's keys meanwhile)
            self._in_worker(self._load_delete, session_id)

    def _load_delete(self, session_id: str) -> None:
        ctx = self.ctx
        preview = ctx.store.delete_preview(session_id, now=ctx.clock(), live_window_s=ctx.config.live_window_s)
        if preview is not None:
            preview.lane = ctx.lanes.lane_for(session_id)
        self._from_worker(self._open_delete, session_id, preview)

    def _open_delete(self, session_id: str, preview: DeletePreview | None) -> None:
        if preview is None:
            drop_held_keys(self.app)
            self.say(f"Session {session_id} no longer exists.", severity="warning", timeout=4)
            self.host.after_write()
            return
        from ..modals.delete import ConfirmDeleteModal

        def done(confirmed: bool | None) -> None:
            if confirmed:
                self._in_worker(self._delete, preview)

        # (the restore command it prints names the session's own id and its profile: across
        # profiles the row's id is profile:id, which no command takes, PF-7)
        named = self.ctx.store.for_commands(session_id)
        self.app.push_screen(ConfirmDeleteModal(preview, clock=self.ctx.clock, named=named), done)

    def _delete(self, preview: DeletePreview) -> None:
        outcome = self.ctx.store.delete(preview.session_id, sessions_dir=self.ctx.sessions_dir)
        self._from_worker(self._deleted, preview, outcome)

    def _deleted(self, preview: DeletePreview, outcome: DeleteOutcome) -> None:
        if not outcome.ok or outcome.deleted is None:
            self.say(f"Delete failed: {outcome.error}", severity="error", timeout=8)
            self.host.after_write()
            return
        deleted = outcome.deleted
        self.ctx.undo.push(deleted)
        n = len(deleted.message_rows)
        text = f"Deleted “{preview.label}” ({n} message{'s' if n != 1 else ''}"
        if deleted.companion_rows:
            d = len(deleted.companion_rows)
            text += f", with {d} delegate run{'s' if d != 1 else ''}"
        if deleted.child_ids:
            k = len(deleted.child_ids)
            text += f"; {k} child session{'s' if k != 1 else ''} orphaned"
        text += "). Press u to undo."
        if deleted.unsaved_files:
            text += f" {len(deleted.unsaved_files)} large file(s) cannot be brought back by undo."
        self.say(text, timeout=6)
        self.host.after_write()

    # -------------------------------------------------------------- several at once (BR-14)

    def start_batch(self, verb: str, rows: list) -> None:
        """Archive, unarchive or delete every marked conversation after one confirmation."""
        if not rows or self.cannot_write(verb):
            return
        note = ""
        live = sum(1 for row in rows if row.is_live)
        if verb == "delete":
            messages = sum(row.message_count for row in rows)
            note = f"Deletes {counted(messages, 'message')} and their transcript files,"
            note += " with any delegate (sub-agent) runs of theirs; their other child sessions stay, as roots."
            if live:
                note += f" ⚠ {live} of them look{'s' if live == 1 else ''} live: an agent may still be writing."
        else:
            note = "Each conversation's whole compression lineage is " + ("archived." if verb == "archive" else "unarchived.")

        def done(confirmed: bool | None) -> None:
            if not confirmed:
                return
            self.host.after_batch()
            ids = [row.id for row in rows]
            if verb == "delete":
                self._in_worker(self._delete_many, ids)
            else:
                self._in_worker(self._archive, ids, verb == "archive")

        from ..modals.confirm_batch import ConfirmBatchModal

        self.app.push_screen(ConfirmBatchModal(verb, list(rows), note=note), done)

    def _delete_many(self, session_ids: list[str]) -> None:
        store = self.ctx.store
        snapshots: list[DeletedSession] = []
        failed: list[tuple[str, str]] = []
        for session_id in session_ids:
            outcome = store.delete(session_id, sessions_dir=self.ctx.sessions_dir)
            if outcome.ok and outcome.deleted is not None:
                snapshots.append(outcome.deleted)
            else:
                failed.append((session_id, outcome.error or "not deleted"))
        self._from_worker(self._deleted_many, snapshots, failed)

    def _deleted_many(self, snapshots: list[DeletedSession], failed: list[tuple[str, str]]) -> None:
        if snapshots:
            self.ctx.undo.push(DeleteBatch(tuple(snapshots)))
        n = len(snapshots)
        messages = sum(len(s.message_rows) for s in snapshots)
        runs = sum(len(s.companion_rows) for s in snapshots)
        with_runs = f", with {runs} delegate run{'s' if runs != 1 else ''}" if runs else ""
        text = (f"Deleted {n} conversation{'s' if n != 1 else ''} "
                f"({counted(messages, 'message')}{with_runs}).")
        if failed:
            text += f" {len(failed)} could not be deleted ({failed[0][0]}: {failed[0][1]})."
        if snapshots:
            text += " Press u to undo all."
        self.say(text, severity="error" if failed and not snapshots else ("warning" if failed else "information"),
                 timeout=8)
        self.host.after_write()

    # -------------------------------------------------------------- undo

    def start_undo(self) -> None:
        if not self.ctx.undo:
            self.say("Nothing to undo.", timeout=3)
            return
        if self.cannot_write("undo"):
            return
        item = self.ctx.undo.pop()
        if isinstance(item, ArchiveChange):
            self._in_worker(self._undo_archive, item)
        elif isinstance(item, DeleteBatch):
            self._in_worker(self._undo_batch, item)
        elif isinstance(item, RenameChange):
            self._in_worker(self._undo_rename, item)
        elif item is not None:
            self._in_worker(self._undo, item)

    def _undo(self, snapshot: DeletedSession) -> None:
        try:
            report = self.ctx.store.undo(snapshot)
        except BaseException:
            # Nothing was restored: keep the snapshot so u can try again.
            self._from_worker(self.ctx.undo.push, snapshot)
            raise
        self._from_worker(self._undone, snapshot, report)

    def _undone(self, snapshot: DeletedSession, report: UndoReport) -> None:
        if report.ghost:
            # The session is there as the snapshot has it: nothing is left to undo.
            self.say(report.summary(CURLY), severity="warning", timeout=10)
            self.host.after_write(select=snapshot.session_id)
            return
        if not report.restored:
            # Nothing changed, whatever the error: the snapshot stays for another try.
            self.ctx.undo.push(snapshot)
            kept = snapshot.trash_path is not None and snapshot.trash_path.exists()
            where = f" It is also kept in {snapshot.trash_path.parent}." if kept else ""
            self.say(f"Undo failed: {report.summary(CURLY)} Press u to try again.{where}", severity="error", timeout=10)
            return
        self.say(
            report.summary(CURLY),
            severity="information" if report.exact else "warning",
            timeout=6 if report.exact else 12,
        )
        self.host.after_write(select=snapshot.session_id)

    def _undo_batch(self, batch: DeleteBatch) -> None:
        """Restore every session of a batch delete, newest delete first."""
        restored: list[DeletedSession] = []
        failed: list[tuple[DeletedSession, str]] = []
        for snapshot in reversed(batch.snapshots):
            try:
                report = self.ctx.store.undo(snapshot)
            except Exception as exc:  # the rest are still tried; the failures stay undoable
                failed.append((snapshot, str(exc)))
                continue
            if report.restored:
                restored.append(snapshot)
            else:
                failed.append((snapshot, report.summary(CURLY)))
        self._from_worker(self._batch_undone, batch, restored, failed)

    def _batch_undone(self, batch: DeleteBatch, restored: list, failed: list) -> None:
        if failed:
            self.ctx.undo.push(DeleteBatch(tuple(s for s, _ in failed)))
            self.say(
                f"Restored {len(restored)} of {len(batch.snapshots)} sessions; "
                f"{len(failed)} failed ({failed[0][1]}). Press u to try again.",
                severity="error", timeout=10,
            )
        else:
            n = len(restored)
            self.say(f"Restored {n} session{'s' if n != 1 else ''}.", timeout=6)
        self.host.after_write(select=batch.snapshots[0].session_id if restored else None)

    def _undo_archive(self, change: ArchiveChange) -> None:
        try:
            for session_id in change.session_ids:
                self.ctx.store.set_archived(session_id, not change.archived)
        except BaseException:
            self._from_worker(self.ctx.undo.push, change)
            raise
        self._from_worker(self._archive_undone, change)

    def _archive_undone(self, change: ArchiveChange) -> None:
        self.say(f"Undone: {change.what} {'unarchived' if change.archived else 'archived'} again.", timeout=5)
        self.host.after_write(select=change.session_ids[0])

    def _undo_rename(self, change: RenameChange) -> None:
        outcome = self.ctx.store.rename(change.session_id, change.before or "", expected=change.after)
        self._from_worker(self._rename_undone, change, outcome)

    def _rename_undone(self, change: RenameChange, outcome) -> None:
        if not outcome.ok:
            # Nothing was written: a title changed since, or taken by another session, is kept.
            if outcome.changed:
                now = f"“{outcome.current}”" if outcome.current else "untitled"
                why = f"it was renamed again meanwhile and is now {now}."
            else:
                why = (outcome.error or "").removesuffix(" Nothing was changed.")
            self.say(f"Undo failed: {why} Nothing was changed.", severity="error", timeout=10)
            self.host.after_write(select=change.session_id)
            return
        if change.before:
            self.say(f"Undone: {change.session_id} is “{change.before}” again.", timeout=5)
        else:
            self.say(f"Undone: {change.session_id} is untitled again.", timeout=5)
        self.host.after_write(select=change.session_id)

    # -------------------------------------------------------------- archive, pin

    def start_archive(self, session_ids: list[str]) -> None:
        """Archive the conversations, or unarchive them when the first one is archived
        (BR-11); several (marked) ones go through :meth:`start_batch` (BR-14)."""
        if session_ids and not self.cannot_write("archive"):
            self._in_worker(self._archive, list(session_ids))

    def _archive(self, session_ids: list[str], archived: bool | None = None) -> None:
        store = self.ctx.store
        reason = store.archive_unavailable()
        if reason:
            text = f"Cannot archive: {reason}. Nothing was changed."
            self._from_worker(partial(self.say, text, severity="warning", timeout=8))
            return
        summaries = [s for sid in session_ids if (s := store.summary(sid)) is not None]
        if not summaries:
            self._from_worker(self._gone, session_ids[0])
            return
        if archived is None:
            archived = not summaries[0].archived
        done = []
        for summary in summaries:
            store.set_archived(summary.id, archived)
            done.append(summary)
        change = ArchiveChange(
            tuple(s.id for s in done), archived, tuple(s.label for s in done)
        )
        self._from_worker(self._archived, change)

    def _gone(self, session_id: str) -> None:
        self.say(f"Session {session_id} no longer exists.", severity="warning", timeout=4)
        self.host.after_write()

    def _archived(self, change: ArchiveChange) -> None:
        self.ctx.undo.push(change)
        self.say(f"{change.verb.capitalize()} {change.what}. Press u to undo.", timeout=5)
        self.after_archive(change)

    def after_archive(self, change: ArchiveChange) -> None:
        """Re-read after an archive change (override to keep the cursor's place)."""
        self.host.after_write()

    def start_pin(self, session_id: str) -> None:
        """Pin or unpin (BR-12); pins of stores without the column go to our settings file."""
        self._in_worker(self._pin, session_id)

    def _pin(self, session_id: str) -> None:
        store = self.ctx.store
        summary = store.summary(session_id)
        if summary is None:
            self._from_worker(self._gone, session_id)
            return
        pinned = not summary.pinned
        if self.ctx.access.read_only_reason and store.read(lambda db: db.capabilities.has_pinned):
            # The pin is a write to the store itself (v30 column); the settings file is not.
            self._from_worker(self.cannot_write, "pin")
            return
        store.set_pinned(session_id, pinned)
        self._from_worker(self._pinned, summary, pinned)

    def _pinned(self, summary, pinned: bool) -> None:
        self.say(f"{'Pinned' if pinned else 'Unpinned'} “{summary.label}”.", timeout=4)
        self.host.after_write(select=summary.lineage_root_id or summary.id)

    # -------------------------------------------------------------- export

    def start_export(self, session_id: str | None) -> None:
        try:
            directory = default_export_dir(self.ctx.config)
        except Exception:
            directory = Path.home()
        hold_keys(self.app)  # (for the dialog: never the list's keys meanwhile)
        self._in_worker(self._plan_export, session_id, directory)

    def _plan_export(self, session_id: str | None, directory: Path) -> None:
        plan = self.ctx.store.plan_export(
            session_id, query=self.host.search_text(), listed=self.host.list_query(),
            directory=directory, now=self.ctx.clock(), marked=self.host.marked_ids(),
        )
        self._from_worker(self._open_export, plan)

    def _open_export(self, plan: ExportPlan) -> None:
        from ..modals.export import ExportModal

        store = self.ctx.store

        def runner(scope, fmt, path, progress, cancelled) -> ExportOutcome:
            return store.run_export(scope, fmt, path, progress=progress, cancelled=cancelled)

        def done(outcome: ExportOutcome | None) -> None:
            if outcome is None or not outcome.ok:
                return
            n = outcome.sessions
            self.say(
                f"Exported {n} session{'s' if n != 1 else ''} ({human_size(outcome.bytes)}) to {outcome.path}",
                timeout=8,
            )

        self.app.push_screen(ExportModal(plan, runner=runner), done)
