"""Messages that workers post back to the UI thread.

Workers never touch widgets; they post one of these and the screen that owns the data updates
itself on the event loop. App-wide events (store changed, lock waits, access) are Signals in
:mod:`hermes_tui.context`, not messages.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message


class SearchFinished(Message):
    """Results for ``query``; the screen drops them if the query is no longer current.

    ``keep``: the same query re-run after another process committed — merged in place
    (BR-16) rather than shown from the top.
    """

    def __init__(self, query: str, view: Any, *, keep: bool = False, page: bool = False) -> None:
        super().__init__()
        self.query = query
        self.view = view
        self.keep = keep
        #: A later page of hits of the same query, to append (BR-20).
        self.page = page
