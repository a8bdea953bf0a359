"""RenameModal: edit a session title; TI errors are shown inside the modal, which stays open."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from hermes_state.titles import MAX_TITLE_LENGTH

from ..operations import RenameOutcome, check_title
from ..textsafe import InertHighlighter, inert_line
from ..legible import muted
from ..widgets.text_field import TextField, hold_keys, release_held_keys_later


class RenameModal(ModalScreen[str | None]):
    """Dismisses with the stored title (``""`` when cleared), or None when cancelled.

    ``save(raw)`` is blocking (it writes through the store) and runs in a thread worker; a
    failed save leaves the modal open with the reason, and nothing changed.
    """

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="rename_cancel"),
    ]

    class Saved(Message):
        def __init__(self, outcome: RenameOutcome) -> None:
            super().__init__()
            self.outcome = outcome

    def __init__(
        self,
        session_id: str,
        title: str | None,
        *,
        label: str | None = None,
        save: Callable[[str, str | None], RenameOutcome],
    ) -> None:
        super().__init__()
        self.session_id = session_id
        self.current_title = title
        #: The title the person has seen: the rename is conditional on it still being so.
        self.seen_title = title
        self.label = label
        self.save = save
        self.saving = False
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="rename-box", classes="modal-box"):
            yield Static(self._heading(), classes="modal-heading")
            yield TextField(
                value=self.current_title or "",
                placeholder="untitled — type a title",
                id="rename-input",
                highlighter=InertHighlighter(),
                holds_keys_on_submit=True,
            )
            yield Static(id="rename-error", classes="modal-error")
            yield Static(id="rename-hint", classes="modal-hint")
            with Horizontal(classes="modal-buttons"):
                yield Button("Save", variant="primary", id="rename-save")
                yield Button("Cancel", id="rename-cancel")

    def on_mount(self) -> None:
        box = self.query_one("#rename-box")
        box.border_title = "Rename session"
        box.border_subtitle = "Enter saves · Esc cancels"
        field = self.query_one("#rename-input", Input)
        if self.app.animation_level == "none":
            field.cursor_blink = False
        field.focus()
        self._show_error(None)
        self._update_hint(field.value)

    def _heading(self) -> Text:
        text = Text()
        text.append("Session ", style=muted(self))
        text.append(inert_line(self.session_id), style="bold")
        if not self.current_title and self.label and self.label != self.session_id:
            text.append("\nuntitled · ", style=muted(self))
            text.append(inert_line(self.label), style="italic")
        return text

    # ------------------------------------------------------------------ feedback

    def _show_error(self, error: str | None) -> None:
        self.error = error
        widget = self.query_one("#rename-error", Static)
        widget.update(Text(inert_line(error), style="bold") if error else Text(""))
        widget.display = bool(error)

    def _update_hint(self, value: str) -> None:
        hint = Text()
        if self.saving:
            hint.append("Saving… (waiting for the database if another process holds it)")
        else:
            cleaned, problem = check_title(value)
            length = len(cleaned) if cleaned else 0
            if problem:
                hint.append(f"{problem}", style="bold")
            elif cleaned is None:
                hint.append("An empty title clears it.")
            else:
                hint.append(f"{length}/{MAX_TITLE_LENGTH} characters")
                if cleaned != value:
                    hint.append(" · spaces and invisible characters are cleaned", style=muted(self))
        self.query_one("#rename-hint", Static).update(hint)

    @on(Input.Changed, "#rename-input")
    def _changed(self, event: Input.Changed) -> None:
        self._update_hint(event.value)

    # ------------------------------------------------------------------ saving

    @on(Input.Submitted, "#rename-input")
    def _submitted(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#rename-save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#rename-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    def action_save(self) -> None:
        if self.saving:
            return
        raw = self.query_one("#rename-input", Input).value
        _cleaned, problem = check_title(raw)
        if problem:
            self._show_error(problem + " — nothing was changed.")
            release_held_keys_later(self.app)  # (the field stays: keys typed behind Enter too)
            return
        self._set_saving(True)
        self._save(raw)

    def _set_saving(self, saving: bool) -> None:
        self.saving = saving
        if saving:
            # Keys typed behind Enter are for what comes next: the list once saved, or the
            # field again if the save fails -- not a disabled field, nor Esc ignored.
            hold_keys(self.app)
        for widget in self.query("#rename-input, #rename-save, #rename-cancel"):
            widget.disabled = saving
        field = self.query_one("#rename-input", Input)
        self._update_hint(field.value)
        if not saving:
            field.focus()
            release_held_keys_later(self.app)

    @work(thread=True, group="rename-save", exclusive=True, exit_on_error=False)
    def _save(self, raw: str) -> None:
        try:
            outcome = self.save(raw, self.seen_title)
        except Exception as exc:  # save reports its own failures; this is a last resort
            outcome = RenameOutcome(False, error=f"{type(exc).__name__}: {exc}. Nothing was changed.")
        self.post_message(self.Saved(outcome))

    @on(Saved)
    def _saved(self, event: Saved) -> None:
        outcome = event.outcome
        if outcome.ok:
            self.saving = False
            self.dismiss(outcome.title or "")
            return
        self._set_saving(False)
        if outcome.changed:
            # Asked, not overwritten: the next Enter replaces the title now shown here.
            self.seen_title = outcome.current
        self._show_error(outcome.error)

    def action_cancel(self) -> None:
        if self.saving:
            return  # the write is in flight: its outcome must be reported, not dropped
        self.dismiss(None)
