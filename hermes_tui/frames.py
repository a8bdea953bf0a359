"""One frame for a keystroke and its answer.

Textual draws a frame as soon as anything changed and then at most 60 a second. A key typed
in the search field changes the field at once, so its echo was drawn at once -- and the frame
that could show the answer came no sooner than the next 60 Hz slot after it, while drawing the
echo took the interpreter from the search running beside it. :class:`FrameHold` keeps the
screen from drawing from the key until the answer is shown, or until ``limit`` has passed
(the echo is never later than that): echo and answer then come in one frame, the first after
the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .compat import begin_batch, check_refresh, end_batch

if TYPE_CHECKING:
    from textual.dom import DOMNode
    from textual.timer import Timer
    from textual.widget import Widget

#: The longest a key's echo waits for its answer: two frames at 60 Hz.
HOLD_LIMIT_S = 1 / 30


class FrameHold:
    """Holds the app's drawing (Textual's batch update) from :meth:`begin` to :meth:`release`,
    at most ``limit`` seconds. Both are idempotent; only the first ``begin`` of a hold sets
    its deadline, so keys typed while it holds do not lengthen it."""

    def __init__(self, node: "DOMNode", limit: float = HOLD_LIMIT_S) -> None:
        self._node = node
        self._limit = limit
        self._timer: "Timer | None" = None

    @property
    def held(self) -> bool:
        return self._timer is not None

    def begin(self) -> None:
        if self._timer is not None:
            return
        app = self._node.app
        # The counterpart of App.batch_update's context manager, ended by release().
        begin_batch(app)
        self._timer = self._node.set_timer(self._limit, self._expired, name="frame-hold")

    def release(self, *changed: "Widget") -> None:
        """End the hold. ``changed``: widgets just updated, whose repaint (or new layout) the
        screen must learn of before it draws -- a widget tells its screen only once its own
        queue is idle, which may be after the frame the release lets through, and then what
        changed would wait for the next 60 Hz slot."""
        timer = self._timer
        if timer is None:
            return
        timer.stop()
        for widget in changed:
            check_refresh(widget)  # what the widget's next idle would do
        self._end()

    def _expired(self) -> None:
        if self._timer is not None:
            self._end()

    def _end(self) -> None:
        self._timer = None
        app = self._node.app
        if end_batch(app) and app.screen_stack:
            # Wake the screen so that it draws now (from a timer, nothing else would). No
            # screen: the app is closing (the field is unmounted while it holds).
            app.screen.check_idle()
