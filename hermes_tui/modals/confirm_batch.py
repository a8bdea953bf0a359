"""ConfirmBatchModal: one confirmation for an action on every marked conversation (BR-14).

Says what will happen to how many and names the first few, so a stray ``space`` is seen
before anything is written. Cancel has the focus, so Enter alone does nothing.
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from hermes_state.models import SessionSummary
from hermes_state.trash import TRASH_DAYS

from ..legible import muted
from .delete import ConfirmModal
from ..textsafe import inert_line

#: Conversations named in the confirmation; the rest are counted.
NAMED = 5


class ConfirmBatchModal(ConfirmModal):
    """True when the person confirms ``verb`` (``archive``, ``unarchive``, ``delete``)."""

    BINDINGS = [
        Binding("y", "confirm", "Confirm", id="batch_confirm"),
        Binding("escape,n", "cancel", "Cancel", id="batch_cancel"),
    ]

    def __init__(self, verb: str, rows: list[SessionSummary], *, note: str = "") -> None:
        super().__init__()
        self.verb = verb
        self.rows = rows
        self.note = note

    def _what(self) -> Group:
        n = len(self.rows)
        head = Text()
        head.append(f"{self.verb.capitalize()} ")
        head.append(f"{n} conversation{'s' if n != 1 else ''}", style="bold")
        head.append(":")
        lines: list = [head]
        for row in self.rows[:NAMED]:
            line = Text("• ", no_wrap=True, overflow="ellipsis")
            if row.title:
                line.append(inert_line(row.title), style="bold")
            else:
                line.append(inert_line(row.preview) or "untitled", style="italic")
            line.append(f"  ·  {inert_line(row.id)}", style=muted(self))
            lines.append(line)
        if n > NAMED:
            lines.append(Text(f"… and {n - NAMED} more", style=muted(self)))
        if self.note:
            lines.append(Text(""))
            lines.append(Text(self.note))
        lines.append(Text(""))
        lines.append(Text("Press u afterwards to undo all of them at once (while the browser stays open)."))
        if self.verb == "delete":
            lines.append(Text(f"Each is also kept in the trash for {TRASH_DAYS} days: hermes sessions trash, then restore."))
        return Group(*lines)

    def compose(self) -> ComposeResult:
        with Vertical(id="batch-box", classes="modal-box -delete" if self.verb == "delete" else "modal-box"):
            yield Static(self._what(), id="batch-what")
            with Horizontal(classes="modal-buttons"):
                yield Button(self.verb.capitalize(), variant="error" if self.verb == "delete" else "primary",
                             id="batch-yes")
                yield Button("Cancel", variant="default", id="batch-no")

    def on_mount(self) -> None:
        box = self.query_one("#batch-box")
        n = len(self.rows)
        box.border_title = f"{self.verb.capitalize()} {n} marked conversation{'s' if n != 1 else ''}?"
        box.border_subtitle = f"y {self.verb} · n / Esc cancel"
        self.query_one("#batch-no", Button).focus()
