"""ExportModal: scope, format and path; a progress bar while writing; errors stay in the modal."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, ProgressBar, RadioButton, RadioSet, Static

from ..operations import (
    FORMAT_EXTENSIONS,
    FORMAT_LABELS,
    ExportOutcome,
    ExportPlan,
    ExportScope,
    check_destination,
    resolve_export_path,
)
from ..textsafe import InertHighlighter, inert_line
from ..legible import muted
from ..widgets.text_field import TextField

#: ``runner(scope, fmt, path, progress, cancelled) -> ExportOutcome`` (blocking).
ExportRunner = Callable[
    [ExportScope, str, Path, Callable[[int, int], None], Callable[[], bool]], ExportOutcome
]

#: (``md-dir`` is the command line's: a directory is not what this dialog's path names.)
FORMATS = ("jsonl", "md", "html")


class ExportModal(ModalScreen[ExportOutcome | None]):
    """Dismisses with the finished export's outcome, or None when closed without exporting."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="export_cancel"),
        Binding("ctrl+s", "export", "Export", id="export_run"),
    ]

    class Progress(Message):
        def __init__(self, done: int, total: int) -> None:
            super().__init__()
            self.done = done
            self.total = total

    class Finished(Message):
        def __init__(self, outcome: ExportOutcome) -> None:
            super().__init__()
            self.outcome = outcome

    def __init__(self, plan: ExportPlan, *, runner: ExportRunner) -> None:
        super().__init__()
        self.plan = plan
        self.runner = runner
        self.scopes = [s for s in plan.scopes if s.unavailable is None]
        self.unavailable = [s for s in plan.scopes if s.unavailable is not None]
        self.scope: ExportScope | None = self.scopes[0] if self.scopes else None
        self.fmt = "jsonl"
        self.running = False
        self._cancel_requested = False
        self._auto_path = self._default_path_text()
        self._confirmed_overwrite: Path | None = None
        #: The path text an error or warning was about (editing it clears the message).
        self._error_value: str | None = None

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box", classes="modal-box"):
            yield Static("Scope", classes="modal-label")
            with RadioSet(id="export-scope"):
                for index, scope in enumerate(self.scopes):
                    yield RadioButton(Text(inert_line(scope.label)), value=index == 0)
            for scope in self.unavailable:
                note = Text(f"  {inert_line(scope.label)}: ", style=muted(self))
                note.append(inert_line(scope.unavailable), style=muted(self, italic=True))
                yield Static(note, classes="modal-note")
            yield Static("Format", classes="modal-label")
            with RadioSet(id="export-format"):
                for fmt in FORMATS:
                    yield RadioButton(Text(FORMAT_LABELS[fmt]), value=fmt == self.fmt)
            yield Static("File", classes="modal-label")
            yield TextField(value=self._auto_path, id="export-path", highlighter=InertHighlighter())
            yield Static(id="export-error", classes="modal-error")
            yield ProgressBar(total=None, show_eta=False, id="export-progress")
            yield Static(id="export-hint", classes="modal-hint")
            with Horizontal(classes="modal-buttons"):
                yield Button("Export", variant="primary", id="export-go")
                yield Button("Cancel", id="export-close")

    def on_mount(self) -> None:
        box = self.query_one("#export-box")
        box.border_title = "Export"
        # Enter on a radio button only selects it: say which keys export.
        box.border_subtitle = "Ctrl+S exports · Space selects · Tab moves · Esc closes"
        self._fit_height(self.app.size.height)
        field = self.query_one("#export-path", Input)
        if self.app.animation_level == "none":
            field.cursor_blink = False
        self.query_one("#export-progress").display = False
        self._show_error(None)
        self._hint()
        go = self.query_one("#export-go", Button)
        if self.scope is None:
            go.disabled = True
            self._show_error("Nothing to export here.", value=self._auto_path)
            self.query_one("#export-close", Button).focus()
        else:
            go.focus()

    #: Below this many rows the dialog drops its spacing and uses one-line buttons: at 80×24
    #: it scrolled to its buttons, hiding its title's first lines ("Scope" and the first scope).
    SHORT_ROWS = 30

    def _fit_height(self, rows: int) -> None:
        short = rows < self.SHORT_ROWS
        self.query_one("#export-box").set_class(short, "-short")
        for button in self.query(Button):
            button.compact = short

    def on_resize(self, event) -> None:
        self._fit_height(self.app.size.height)

    # ------------------------------------------------------------------ choices

    def _default_path_text(self) -> str:
        if self.scope is None:
            return str(self.plan.directory)
        return str(self.plan.default_path(self.scope, self.fmt))

    @on(RadioSet.Changed, "#export-scope")
    def _scope_changed(self, event: RadioSet.Changed) -> None:
        self.scope = self.scopes[event.index]
        self._refresh_path()

    @on(RadioSet.Changed, "#export-format")
    def _format_changed(self, event: RadioSet.Changed) -> None:
        self.fmt = FORMATS[event.index]
        self._refresh_path()

    def _refresh_path(self) -> None:
        """Follow the choices while the path is the default; else only fix the extension."""
        field = self.query_one("#export-path", Input)
        current = field.value
        auto = self._default_path_text()
        if current == self._auto_path:
            field.value = auto
        else:
            for ext in FORMAT_EXTENSIONS.values():
                if current.endswith("." + ext):
                    field.value = current[: -len(ext)] + FORMAT_EXTENSIONS[self.fmt]
                    break
        self._auto_path = auto
        self._confirmed_overwrite = None
        self._show_error(None)

    @on(Input.Changed, "#export-path")
    def _path_changed(self, event: Input.Changed) -> None:
        # The overwrite confirmation belongs to one path: compared in action_export, so a
        # late Changed event cannot cancel it.
        if not self.running and event.value != self._error_value:
            self._show_error(None)

    # ------------------------------------------------------------------ feedback

    def _show_error(self, error: str | None, *, warning: bool = False, value: str | None = None) -> None:
        self._error_value = value if error else None
        widget = self.query_one("#export-error", Static)
        widget.update(Text(inert_line(error), style="bold") if error else Text(""))
        widget.display = bool(error)
        widget.set_class(warning, "-warning")

    def _hint(self, text: str | None = None) -> None:
        hint = Text(
            text
            or "Written atomically; only you can read the file (mode 0600). "
            f"A relative path is saved in {inert_line(str(self.plan.directory))}."
        )
        self.query_one("#export-hint", Static).update(hint)

    # ------------------------------------------------------------------ running

    @on(Input.Submitted, "#export-path")
    def _submitted(self) -> None:
        self.action_export()

    @on(Button.Pressed, "#export-go")
    def _go(self) -> None:
        self.action_export()

    @on(Button.Pressed, "#export-close")
    def _close(self) -> None:
        self.action_cancel()

    def action_export(self) -> None:
        if self.running or self.scope is None:
            return
        text = self.query_one("#export-path", Input).value
        if not text.strip():
            self._show_error("Choose a file name.", value=text)
            return
        path = resolve_export_path(text, self.plan.directory)
        problem = check_destination(path)
        if problem:
            self._show_error(problem, value=text)
            return
        if path.exists() and self._confirmed_overwrite != path:
            self._confirmed_overwrite = path
            self._show_error(f"{path} exists — press Export again to replace it.", warning=True, value=text)
            return
        self._start(self.scope, self.fmt, path)

    def _start(self, scope: ExportScope, fmt: str, path: Path) -> None:
        self.running = True
        self._cancel_requested = False
        self._show_error(None)
        for widget in self.query("RadioSet, Input, #export-go"):
            widget.disabled = True
        bar = self.query_one("#export-progress", ProgressBar)
        bar.update(total=max(1, scope.count), progress=0)
        bar.display = True
        self._hint(f"Exporting {scope.count} session{'s' if scope.count != 1 else ''}… Esc cancels.")
        self._export(scope, fmt, path)

    @work(thread=True, group="export-run", exclusive=True, exit_on_error=False)
    def _export(self, scope: ExportScope, fmt: str, path: Path) -> None:
        last = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if done == 0 or done >= total or now - last >= 0.05:
                last = now
                self.post_message(self.Progress(done, total))

        try:
            outcome = self.runner(scope, fmt, path, progress, lambda: self._cancel_requested)
        except Exception as exc:  # the runner reports its own failures; this is a last resort
            outcome = ExportOutcome(False, path, error=f"{type(exc).__name__}: {exc}")
        self.post_message(self.Finished(outcome))

    @on(Progress)
    def _progress(self, event: Progress) -> None:
        self.query_one("#export-progress", ProgressBar).update(
            total=max(1, event.total), progress=event.done
        )

    @on(Finished)
    def _finished(self, event: Finished) -> None:
        outcome = event.outcome
        self.running = False
        if outcome.ok:
            self.dismiss(outcome)
            return
        for widget in self.query("RadioSet, Input, #export-go"):
            widget.disabled = False
        self.query_one("#export-progress").display = False
        self._hint()
        self._show_error(
            outcome.error or "The export failed; no file was written.",
            value=self.query_one("#export-path", Input).value,
        )
        self.query_one("#export-path", Input).focus()

    def action_cancel(self) -> None:
        if self.running:
            self._cancel_requested = True
            self._hint("Cancelling… (no partial file is left behind)")
            return
        self.dismiss(None)
