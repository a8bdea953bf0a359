"""CountedPicker: the shape the list's filter pickers share (the source picker ``s``, the
profile picker ``P``): a heading over one list of choices, each with its count, the one in
force highlighted, counts filled in when they arrive. Returns the chosen option's id, ``""``
for "every one", or None when cancelled."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


class CountedPicker(ModalScreen[str | None]):
    """A subclass sets its ids, title and heading, and builds its :meth:`options`."""

    #: The box's and the list's ids (the stylesheet and the tests know them).
    BOX_ID = ""
    OPTIONS_ID = ""
    #: The box's border title and the heading over the list.
    TITLE = ""
    HEADING = ""

    def __init__(self, current: str | None) -> None:
        super().__init__()
        #: The choice in force (None: every one, the option of id ``""``).
        self.current = current

    def options(self) -> list[Option]:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        with Vertical(id=self.BOX_ID, classes="modal-box"):
            yield Static(Text(self.HEADING), classes="modal-heading")
            yield OptionList(*self.options(), id=self.OPTIONS_ID)

    def on_mount(self) -> None:
        box = self.query_one(f"#{self.BOX_ID}")
        box.border_title = self.TITLE
        box.border_subtitle = "Enter chooses · Esc cancels"
        self._fit_height(self.app.size.height)
        self._highlight_current()
        self.query_one(OptionList).focus()

    def _fit_height(self, rows: int) -> None:
        """The list gets the rows the box has left under its heading: at 80×24 the box
        scrolled to the highlight instead, hiding the heading."""
        # 80% of the screen (the box's max-height), less borders, heading and its margin.
        self.query_one(OptionList).styles.max_height = max(3, min(20, int(rows * 0.8) - 4))

    def on_resize(self, event) -> None:
        self._fit_height(self.app.size.height)

    def refill(self) -> None:
        """Show the options again (their counts arrived), the one in force highlighted. A
        picker closed before they arrived is left alone."""
        if not self.is_attached:
            return
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(self.options())
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
