"""What every screen of the browser shares: its context, live refresh, and the error path.

* ``ctx`` (:class:`~hermes_tui.context.AppContext`) is handed to the screen when it is made.
* Live refresh: the screen subscribes to ``ctx.signals.store_changed``. Only a visible screen
  reacts (:meth:`store_changed`); a covered one remembers what it missed and catches up once
  when it is shown again — a busy gateway costs nothing for the screens below.
* Worker results: a worker of the screen posts what it found to the screen, as a message of
  its own or a :class:`~hermes_tui.messages.WorkerDone` (applied here, or dropped if stale).
* Errors: a worker of the screen that fails is turned into :class:`WorkerFailed`, which bubbles
  to the app's one error path (``Worker.StateChanged`` itself does not bubble); so is an error
  applying a worker's result.
"""

from __future__ import annotations

from textual import on
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from ..context import AppContext, StoreChange
from ..messages import WorkerDone, apply_result


class WorkerFailed(Message):
    """A worker raised: the app turns it into a one-line notice (or the unavailable screen)."""

    def __init__(self, error: BaseException, worker_name: str = "") -> None:
        super().__init__()
        self.error = error
        self.worker_name = worker_name


def merge_changes(a: StoreChange | None, b: StoreChange) -> StoreChange:
    if a is None:
        return b
    return StoreChange(database=a.database or b.database, lanes=a.lanes or b.lanes)


class HermesScreen(Screen):
    """Base of the browser's full screens."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self._missed: StoreChange | None = None

    def on_mount(self) -> None:
        self.ctx.signals.store_changed.subscribe(self, self._heard_change)

    def _heard_change(self, change: StoreChange) -> None:
        if not self.is_mounted:
            return
        if self.is_current:
            self.store_changed(change)
        else:
            self._missed = merge_changes(self._missed, change)

    def on_screen_resume(self) -> None:
        missed, self._missed = self._missed, None
        if missed is not None:
            self.store_changed(missed)

    def store_changed(self, change: StoreChange) -> None:
        """Re-read what is shown, keeping the reader's place (BR-16). Override."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.post_message(WorkerFailed(event.worker.error, event.worker.name))

    @on(WorkerDone)
    def _worker_done(self, message: WorkerDone) -> None:
        apply_result(message, lambda error: self.post_message(WorkerFailed(error)))

    def action_help(self) -> None:
        self.app.push_screen(self.ctx.screens.help(self))
