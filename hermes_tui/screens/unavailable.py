"""UnavailableScreen: the database cannot be opened — say why in one line, never a traceback.

Shown over the browser when the reader cannot open the file (missing, empty, not SQLite,
corrupt, HERMES_HOME is a file, …). It retries by itself when the file changes (the app's
change watcher) and on ``r``; ``q`` quits with exit status 1 and the reason.
"""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from ..widgets.footer import KeyFooter

from ..textsafe import inert_line
from ..legible import muted


class UnavailableScreen(Screen[None]):

    BINDINGS = [
        Binding("r", "retry", "Retry", id="unavailable_retry"),
        Binding("q,escape", "quit", "Quit", id="unavailable_quit"),
    ]

    def __init__(self, reason: str, *, retry: Callable[[], object]) -> None:
        super().__init__()
        self.reason = reason
        self.retry = retry

    def compose(self) -> ComposeResult:
        with Vertical(id="unavailable-box"):
            yield Static(Text("Cannot open the session database", style="bold"), id="unavailable-title")
            yield Static(self._reason_text(), id="unavailable-reason")
            yield Static(
                Text("r retries now · q quits · it is retried when the file changes", style=muted(self)),
                id="unavailable-hint",
            )
        yield KeyFooter()

    def _reason_text(self) -> Text:
        return Text(inert_line(self.reason))

    def set_reason(self, reason: str) -> None:
        self.reason = reason
        if self.is_mounted:
            self.query_one("#unavailable-reason", Static).update(self._reason_text())

    def action_retry(self) -> None:
        self.retry()

    def action_quit(self) -> None:
        self.app.exit(None, return_code=1, message=Text(f"Error: {inert_line(self.reason)}"))
