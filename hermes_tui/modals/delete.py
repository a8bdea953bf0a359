"""ConfirmDeleteModal: says exactly what a delete removes and touches before it happens."""

from __future__ import annotations

from typing import Callable

from rich.console import Group
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from ..shown_time import relative as relative_time, stamp_and_relative

from hermes_state.trash import TRASH_DAYS, DeletePreview, RelatedSession

from ..hints import restore_command
from ..render.lanes import lane_text
from ..textsafe import inert_line
from ..legible import muted
from ..wording import counted

#: Children listed by name; the rest are counted.
MAX_LISTED_CHILDREN = 8


def undo_and_trash_note(session_id: str | None = None, profile: str | None = None) -> str:
    """Both ways back: ``u`` while the browser is open, and the trash for TRASH_DAYS days after
    (a person who closed the browser must not believe the delete was final). ``session_id``
    is the session's own id and ``profile`` the profile whose store it is in, which the
    command names (PF-7) when the browser was given one."""
    restore = inert_line(restore_command(session_id, profile)) if session_id else (
        "hermes sessions trash, then restore")
    return (f"Press u afterwards to undo (while the browser stays open). "
            f"It is also kept in the trash for {TRASH_DAYS} days: {restore}")


def _related(item: RelatedSession, secondary: Style | str = "italic") -> Text:
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(inert_line(item.id), style="bold")
    line.append("  ")
    if item.title:
        line.append(inert_line(item.title))
    elif item.preview:
        line.append(inert_line(item.preview), style="italic")
    else:
        line.append("untitled", style=secondary)
    return line


class ConfirmModal(ModalScreen[bool]):
    """A yes/no question: True when confirmed. The subclass names its two buttons
    ``…-yes`` and ``…-no`` and binds its own keys to ``confirm`` and ``cancel`` (their ids
    are what a keymap remaps)."""

    @on(Button.Pressed)
    def _answered(self, event: Button.Pressed) -> None:
        event.stop()
        if (event.button.id or "").endswith("-yes"):
            self.action_confirm()
        elif (event.button.id or "").endswith("-no"):
            self.action_cancel()

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


class ConfirmDeleteModal(ConfirmModal):
    """True when the person confirms. Cancel has the focus, so Enter alone does not delete."""

    BINDINGS = [
        Binding("y", "confirm", "Delete", id="delete_confirm"),
        Binding("escape,n", "cancel", "Cancel", id="delete_cancel"),
    ]

    def __init__(self, preview: DeletePreview, *, clock: Callable[[], float],
                 named: tuple[str | None, str] | None = None) -> None:
        """``named``: ``(profile, the session's own id)`` that the restore command names
        (default: the preview's id, no profile)."""
        super().__init__()
        self.preview = preview
        self.clock = clock
        self.named = named or (None, preview.session_id)

    def compose(self) -> ComposeResult:
        p = self.preview
        with Vertical(id="delete-box", classes="modal-box"):
            yield Static(self._what(), id="delete-what")
            if p.live or p.lane is not None:
                yield Static(self._live_warning(), id="delete-live", classes="modal-warning")
            yield Static(self._orphans(), id="delete-orphans")
            if p.children:
                with VerticalScroll(id="delete-children"):
                    yield Static(self._children())
            yield Static(self._undo_note(), classes="modal-hint")
            with Horizontal(classes="modal-buttons"):
                yield Button("Delete", variant="error", id="delete-yes")
                yield Button("Cancel", variant="default", id="delete-no")

    def on_mount(self) -> None:
        box = self.query_one("#delete-box")
        box.border_title = "Delete session?"
        box.border_subtitle = "y delete · n / Esc cancel"
        self.query_one("#delete-no", Button).focus()

    # ------------------------------------------------------------------ text

    def _what(self) -> Group:
        p = self.preview
        title = Text()
        if p.title:
            title.append(inert_line(p.title), style="bold")
        else:
            title.append("untitled", style="bold italic")
            if p.preview:
                title.append("  ")
                title.append(inert_line(p.preview), style="italic")
        facts = Text()
        facts.append(inert_line(p.session_id))
        facts.append(f"  ·  {inert_line(p.source)}")
        facts.append(f"  ·  started {self._when(p.started_at)}")
        goes = Text()
        goes.append("Deletes ")
        goes.append(counted(p.message_count, "message"), style="bold")
        if p.delegates:
            goes.append(", its ")
            goes.append(counted(len(p.delegates), "delegate run"), style="bold")
            goes.append(f" ({counted(p.delegate_messages, 'message')})")
        goes.append(" and the session's transcript files.")
        parts: list = [title, facts, Text(""), goes]
        if p.parent is not None:
            parent = Text("Its parent stays: ", style=muted(self))
            parent.append_text(_related(p.parent, muted(self, italic=True)))
            parts.append(parent)
        return Group(*parts)

    def _orphans(self) -> Text:
        children = self.preview.children
        if not children:
            return Text("No child sessions.", style=muted(self))
        orphan = Text()
        orphan.append(counted(len(children), "child session"), style="bold")
        orphan.append(
            " will be orphaned (they stay, as roots; nothing cascades):"
            if len(children) != 1
            else " will be orphaned (it stays, as a root; nothing cascades):"
        )
        return orphan

    def _children(self) -> Group:
        children = self.preview.children
        lines = [Text("• ").append_text(_related(c, muted(self, italic=True))) for c in children[:MAX_LISTED_CHILDREN]]
        if len(children) > MAX_LISTED_CHILDREN:
            lines.append(Text(f"… and {len(children) - MAX_LISTED_CHILDREN} more", style=muted(self)))
        return Group(*lines)

    def _live_warning(self) -> Text:
        p = self.preview
        text = Text()
        if p.live:
            text.append("⚠ This session looks live: ", style="bold")
            text.append(
                f"not ended, last written {relative_time(p.last_active, now=self.clock())}. "
                "An agent may still be writing to it."
            )
        if p.lane is not None:
            if text:
                text.append("\n")
            text.append("⚠ A gateway chat lane points at this session", style="bold")
            where = lane_text(p.lane).description or p.lane.platform
            if where:
                text.append(f" ({inert_line(str(where))})")
            text.append("; sessions.json is left as it is.")
        return text

    def _undo_note(self) -> Text:
        profile, session_id = self.named
        return Text(undo_and_trash_note(session_id, profile))

    def _when(self, ts: float) -> str:
        return stamp_and_relative(ts, self.clock())
