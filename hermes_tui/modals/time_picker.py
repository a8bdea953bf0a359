"""TimePicker: narrow the list, its counts and the search to a time window (``T``, BR-21).

The window is a conversation's last activity (what the list's time column shows by last
activity): "Last 7 days" keeps the conversations someone spoke in this week, however long
ago they began. Each preset shows how many conversations the list would have under the other
filters; the counts are read in the background (each is a look at every conversation's
last activity) and the picker can be used before they arrive. A window of one's own is typed
in the field (``3d``, ``2026-10-01``, ``2026-10-01..2026-10-15``; see
:func:`hermes_state.timewindow.parse_window`); what cannot be read is said under it and the
picker stays open. Returns a :class:`TimePick`, or None when cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from hermes_state.timewindow import PRESETS, TimeParseError, parse_window

from ..textsafe import inert_line
from ..widgets.text_field import TextField


@dataclass(frozen=True)
class TimePick:
    """The choice: a preset's key (``any`` for no window), or ``custom`` with the window
    typed (``since`` / ``until``) and its text."""

    key: str
    since: float | None = None
    until: float | None = None
    text: str = ""


#: How the status line names each preset's window.
PHRASES = {"any": "any time", "today": "last active today", "7d": "last active within 7 days",
           "30d": "last active within 30 days", "year": "last active this year"}


def time_label(key: str, text: str = "") -> str:
    """How the status line names a time filter (``any``: "any time"; a typed window by
    what was typed)."""
    if key == "custom":
        return f"last active {inert_line(text)}"
    return PHRASES.get(key, key)


class TimePicker(ModalScreen[TimePick | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="time_cancel"),
        Binding("down", "move(1)", "Next", show=False),
        Binding("up", "move(-1)", "Previous", show=False),
    ]

    def __init__(self, current: str, counts: dict[str, int] | None = None, *, clock=None) -> None:
        """``counts`` (preset key → conversations) None: still being read; :meth:`set_counts`
        shows them. ``clock``: what "now" is for a typed window (the app's)."""
        super().__init__()
        self.current = current
        self.counts = counts
        self.clock = clock

    def _options(self) -> list[Option]:
        return [Option(self._label(p.label, p.key), id=p.key) for p in PRESETS]

    def _label(self, name: str, key: str) -> Text:
        chosen = key == self.current
        text = Text("● " if chosen else "  ")
        text.append(f"{name:<16}", style="bold" if chosen else "")
        if self.counts is None:
            text.append("       …", style="dim")
        elif key in self.counts:
            text.append(f"{self.counts[key]:>8,}", style="" if chosen else "dim")
        return text

    def compose(self) -> ComposeResult:
        with Vertical(id="time-box", classes="modal-box"):
            yield Static(Text("Show conversations last active"), classes="modal-heading")
            yield OptionList(*self._options(), id="time-options")
            yield TextField(placeholder="or type 3d, 2026-10-01 or 2026-10-01..2026-10-15", id="time-custom")
            yield Static(Text(""), id="time-problem")

    def on_mount(self) -> None:
        box = self.query_one("#time-box")
        box.border_title = "Time"
        box.border_subtitle = "↑↓ · Enter chooses · Esc cancels"
        options = self.query_one(OptionList)
        options.highlighted = next((i for i, p in enumerate(PRESETS) if p.key == self.current), 0)
        # The field has the focus (as the workspace picker's): a window can be typed at once,
        # and the arrows still move through the presets.
        self.query_one("#time-custom", Input).focus()

    def set_counts(self, counts: dict[str, int]) -> None:
        if not self.is_attached:
            return  # closed before the counts arrived
        self.counts = counts
        options = self.query_one(OptionList)
        highlighted = options.highlighted
        options.clear_options()
        options.add_options(self._options())
        options.highlighted = highlighted

    @on(OptionList.OptionSelected, "#time-options")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(TimePick(event.option.id or "any"))

    @on(Input.Submitted, "#time-custom")
    def _submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            options = self.query_one(OptionList)
            if options.highlighted is not None:
                self.dismiss(TimePick(options.get_option_at_index(options.highlighted).id or "any"))
            return
        now = self.clock() if self.clock is not None else None
        try:
            since, until = parse_window(text, now)
        except TimeParseError as exc:
            self.query_one("#time-problem", Static).update(Text(str(exc)))
            return
        self.dismiss(TimePick("custom", since, until, text))

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        current = options.highlighted if options.highlighted is not None else 0
        options.highlighted = max(0, min(options.option_count - 1, current + step))

    def action_cancel(self) -> None:
        self.dismiss(None)
