"""ProfilePicker: narrow the list, the search and the counts to one Hermes profile (``P``),
each profile with its count under the other filters (PF-6). Returns the chosen profile,
``""`` for every profile, or None when cancelled."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets.option_list import Option

from ..textsafe import inert_line
from .counted_picker import CountedPicker


class ProfilePicker(CountedPicker):
    BINDINGS = [Binding("escape,q", "cancel", "Cancel", id="profile_cancel")]
    BOX_ID, OPTIONS_ID = "profile-box", "profile-options"
    TITLE, HEADING = "Profile", "Show conversations of"

    def __init__(self, names: list[str], counts: dict[str, int] | None, current: str | None,
                 left_out: dict[str, str] | None = None) -> None:
        """``counts`` None: not counted yet; :meth:`set_counts` fills them in. ``left_out``:
        profiles whose store could not be read, shown (disabled) with why."""
        super().__init__(current)
        self.names = names
        self.counts = counts
        self.left_out = dict(left_out or {})

    def options(self) -> list[Option]:
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

    def set_counts(self, counts: dict[str, int], left_out: dict[str, str] | None = None) -> None:
        if not self.is_attached:
            return  # closed before the counts arrived
        self.counts = counts
        if left_out is not None:
            self.left_out = dict(left_out)
            self.names = [name for name in self.names if name not in self.left_out]
        self.refill()
