"""ProfilePicker: narrow the list, the search and the counts to one Hermes profile (``P``),
each profile with its count under the other filters (PF-6). Returns the chosen profile,
``""`` for every profile, or None when cancelled."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..textsafe import inert_line


class ProfilePicker(ModalScreen[str | None]):
    BINDINGS = [Binding("escape,q", "cancel", "Cancel", id="profile_cancel")]

    def __init__(self, names: list[str], counts: dict[str, int] | None, current: str | None,
                 left_out: dict[str, str] | None = None) -> None:
        """``counts`` None: not counted yet; :meth:`set_counts` fills them in. ``left_out``:
        profiles whose store could not be read, shown (disabled) with why."""
        super().__init__()
        self.names = names
        self.counts = counts
        self.current = current
        self.left_out = dict(left_out or {})

    def _options(self) -> list[Option]:
        counts = self.counts
        total = sum(counts.get(name, 0) for name in self.names) if counts is not None else None
        options = [Option(self._label("all profiles", total, self.current is None), id="")]
        for name in self.names:
            count = counts.get(name, 0) if counts is not None else None
            options.append(Option(self._label(name, count, name == self.current), id=name))
        for name, line in self.left_out.items():
            label = Text("  ")
            label.append(f"{inert_line(name):<20}", style="dim")
            label.append("  left out: cannot be read", style="italic")
            options.append(Option(label, id=f"\x00{name}", disabled=True))
        return options

    @staticmethod
    def _label(name: str, count: int | None, chosen: bool) -> Text:
        text = Text("● " if chosen else "  ")
        text.append(f"{inert_line(name):<20}", style="bold" if chosen else "")
        text.append(f"{count:>8,}" if count is not None else f"{'…':>8}")
        return text

    def compose(self) -> ComposeResult:
        with Vertical(id="profile-box", classes="modal-box"):
            yield Static(Text("Show conversations of"), classes="modal-heading")
            yield OptionList(*self._options(), id="profile-options")

    def on_mount(self) -> None:
        box = self.query_one("#profile-box")
        box.border_title = "Profile"
        box.border_subtitle = "Enter chooses · Esc cancels"
        self._highlight_current()
        self.query_one(OptionList).focus()

    def set_counts(self, counts: dict[str, int], left_out: dict[str, str] | None = None) -> None:
        if not self.is_attached:
            return  # closed before the counts arrived
        self.counts = counts
        if left_out is not None:
            self.left_out = dict(left_out)
            self.names = [name for name in self.names if name not in self.left_out]
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(self._options())
        self._highlight_current()

    def _highlight_current(self) -> None:
        options = self.query_one(OptionList)
        wanted = self.current or ""
        for index, option in enumerate(options.options):
            if option.id == wanted:
                options.highlighted = index
                return

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id or "")

    def action_cancel(self) -> None:
        self.dismiss(None)
