"""App-wide messages: what workers post back to the UI thread.

Workers never touch widgets; they post one of these and the screen that owns the data
updates itself on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message


class DataChanged(Message):
    """Another process committed to the database (or the gateway index changed)."""

    def __init__(self, database: bool, lanes: bool) -> None:
        super().__init__()
        self.database = database
        self.lanes = lanes


class StoreStatus(Message):
    """A condition the status line should show (None clears it)."""

    def __init__(self, text: str | None, severity: str = "warning") -> None:
        super().__init__()
        self.text = text
        self.severity = severity


@dataclass
class PageData:
    """One slice of the session list, answering a specific request."""

    generation: int
    offset: int
    rows: list[Any]
    total: int
    source_counts: dict[str, int] = field(default_factory=dict)


class PageLoaded(Message):
    def __init__(self, page: PageData) -> None:
        super().__init__()
        self.page = page


class SearchFinished(Message):
    """Results for ``query``; the screen drops them if the query is no longer current."""

    def __init__(self, query: str, view: Any) -> None:
        super().__init__()
        self.query = query
        self.view = view
