"""Read and unread in the browser: the part of
:class:`~hermes_tui.screens.browser.BrowserScreen` that marks conversations read or unread
(upstream's ``last_read_at`` watermark: ``m`` / ``M``, and opening a transcript or a recap,
as upstream's desktop does, unless the config's ``mark_read_on_open`` is off) and the order
of the status filter (``S``).

Writes run in thread workers and come back as :class:`~hermes_tui.messages.WorkerDone`. A
store without the column is never opened for writing: the keys say, once per press, that
unread is not tracked there; opening a conversation says nothing (nobody asked to mark it).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable

from hermes_state.lifecycle import STATUSES

from ..context import StoreChange
from ..messages import WorkerDone
from ..render.reading import status_word
from ..textsafe import inert_line

if TYPE_CHECKING:
    from .base import HermesScreen
    from .browser import BrowserScreen


def next_status(current: str | None) -> str | None:
    """The status filter after ``current``: every status (None), then each in turn."""
    order: list[str | None] = [None, *STATUSES]
    return order[(order.index(current) + 1) % len(order)] if current in order else None


def mark_opened(screen: "HermesScreen", session_id: str | None) -> None:
    """A transcript or a recap was opened from a screen other than the browser's (the
    lineage tree): mark it read as :meth:`Reading.opened` does, and tell every screen the
    store changed (the browser beneath reads its rows again when it is shown)."""
    ctx = screen.ctx
    if session_id is None or not ctx.config.mark_read_on_open or ctx.access.read_only_reason:
        return

    def work() -> None:
        store = ctx.store
        if not store.unread_problem(session_id) and store.set_read(session_id, True):
            screen.post_message(WorkerDone(ctx.signals.store_changed.publish, StoreChange(database=True)))

    screen.run_worker(work, group="reading", thread=True, exit_on_error=False)


class Reading:
    """Owned by one :class:`BrowserScreen`; its workers are the screen's."""

    def __init__(self, screen: "BrowserScreen") -> None:
        self.screen = screen

    def _in_worker(self, work: Callable[[], None]) -> None:
        self.screen.run_worker(work, group="reading", thread=True, exit_on_error=False)

    def _from_worker(self, apply: Callable[..., object], *args: object) -> None:
        self.screen.post_message(WorkerDone(apply, *args))

    def _warn(self, text: str) -> None:
        self._say(text, severity="warning")

    def _say(self, text: str, *, severity: str = "information", timeout: float = 4) -> None:
        self.screen.notify(inert_line(text), severity=severity, timeout=timeout, markup=False)

    def mark(self, session_id: str | None, *, read: bool) -> None:
        """``m`` / ``M``: mark the conversation of ``session_id`` read or unread."""
        if session_id is None:
            return
        reason = self.screen.ctx.access.read_only_reason
        if reason:
            self._say(f"Cannot mark it {'read' if read else 'unread'}: {reason}. Nothing was changed.",
                      severity="error", timeout=6)
            return
        self._in_worker(partial(self._mark, session_id, read))

    def _mark(self, session_id: str, read: bool) -> None:
        store = self.screen.ctx.store
        problem = store.unread_problem(session_id)
        if problem:
            self._from_worker(self._warn, f"Nothing was changed: {problem}.")
            return
        found = store.set_read(session_id, read)
        self._from_worker(self._marked, session_id, read, found)

    def _marked(self, session_id: str, read: bool, found: bool) -> None:
        if not found:
            self._say("That session is gone.", severity="warning")
            return
        self._say(f"Marked {'read' if read else 'unread'}.", timeout=3)
        self.screen.after_write()

    def opened(self, session_id: str | None) -> None:
        """A transcript or a recap was opened: mark it read, if the config says so and the
        store keeps read state (silently otherwise)."""
        screen = self.screen
        if session_id is None or not screen.ctx.config.mark_read_on_open or screen.ctx.access.read_only_reason:
            return
        self._in_worker(partial(self._opened, session_id))

    def _opened(self, session_id: str) -> None:
        store = self.screen.ctx.store
        if store.unread_problem(session_id):
            return
        if store.set_read(session_id, True):
            self._from_worker(self.screen.after_write)

    def say_if_not_tracked(self) -> None:
        """After ``U``: on a store without read state, say why the list is empty."""
        if self.screen.unread_only:
            self._in_worker(self._check_tracked)

    def _check_tracked(self) -> None:
        problem = self.screen.ctx.store.unread_problem()
        if problem:
            self._from_worker(self._warn, f"{problem[0].upper()}{problem[1:]}: nothing is unread here.")


__all__ = ["Reading", "mark_opened", "next_status", "status_word"]
