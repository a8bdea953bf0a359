"""Messages that workers post back to the UI thread.

Workers never touch widgets; they post one of these and the screen that owns the data updates
itself on the event loop. A result without a message class of its own comes back as a
:class:`WorkerDone` (and never through ``call_from_thread``, which would hold the worker's
thread until the event loop ran it). App-wide events (store changed, lock waits, access) are Signals in
:mod:`hermes_tui.context`, not messages.
"""

from __future__ import annotations

from typing import Any, Callable

from textual.message import Message


class SearchFinished(Message):
    """Results for ``query``; the screen drops them if the query is no longer current.

    ``keep``: the same query re-run after another process committed — merged in place
    (BR-16) rather than shown from the top.
    """

    def __init__(self, query: str, view: Any, *, keep: bool = False, page: bool = False,
                 exact: bool = False, asked: int | None = None) -> None:
        super().__init__()
        self.query = query
        self.view = view
        self.keep = keep
        #: A later page of hits of the same query, to append (BR-20).
        self.page = page
        #: The same query ranked over every match by conversation once typing paused (SR-18):
        #: shown only if the reader is still where the first answer left them.
        self.exact = exact
        #: Which search of the pane this answers (None: not numbered): an answer to a search
        #: asked again since (the order toggled, a refresh) is dropped, even of the same query.
        self.asked = asked


class Generation:
    """Numbers the requests of one kind that a node makes (the detail pane's loads, say):
    a result stamped with a number that is no longer :attr:`current` answers a request a
    newer one has replaced, and is dropped."""

    def __init__(self) -> None:
        self.current = 0

    def next(self) -> "Stamp":
        """A new request: the results of every earlier one are stale from now on."""
        self.current += 1
        return Stamp(self, self.current)


class Stamp:
    """The request a result answers (see :class:`Generation`)."""

    __slots__ = ("generation", "number")

    def __init__(self, generation: Generation, number: int) -> None:
        self.generation = generation
        self.number = number

    @property
    def stale(self) -> bool:
        return self.generation.current != self.number


class WorkerDone(Message, bubble=False):
    """A thread worker's result: ``apply(*args)``, run on the event loop by the node the
    worker posted it to (``post_message`` is thread-safe and never waits), unless its
    ``stamp`` has gone stale. The screens and the app hand it to :func:`apply_result`.

    No stamp: the result always applies -- a write's outcome (its undo, its notice) is
    never superseded by a later request. Handled by the node it is posted to, never by its
    parents (a screen's result bubbling on would be applied again by the app)."""

    def __init__(self, apply: Callable[..., object], *args: Any, stamp: Stamp | None = None) -> None:
        super().__init__()
        self.apply = apply
        self.args = args
        self.stamp = stamp


def apply_result(message: WorkerDone, failed: Callable[[Exception], None]) -> None:
    """Where every :class:`WorkerDone` is applied, or dropped when stale. An error applying
    it goes to ``failed`` (the error path of the worker that made it): applied in the
    worker, as results once were, it failed the worker and became a notice."""
    if message.stamp is not None and message.stamp.stale:
        return
    try:
        message.apply(*message.args)
    except Exception as exc:
        failed(exc)
