"""WorkspacePicker: narrow the list and the search to one workspace (``w``, BR-13).

A workspace is a session's git repository when the store knows it, else its working
directory. The picker lists each one with its conversation count (busiest first), "every
workspace" at the top and, when there are any, the conversations with no workspace (chats
from Telegram, Discord …). Typing narrows the list to the paths that contain what is typed, as
people have hundreds of checkouts. Returns a :class:`WorkspacePick`, or None when cancelled.
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

from hermes_state.listing import WorkspaceCount
from hermes_state.visibility import NO_WORKSPACE

from ..textsafe import home_path
from ..widgets.text_field import TextField

_ALL = "all"
_NONE = "none"


@dataclass(frozen=True)
class WorkspacePick:
    """The choice: ``workspace`` None for every workspace, ``NO_WORKSPACE`` for none known."""

    workspace: str | None


def workspace_label(workspace: str | None) -> str:
    """How the status line and the picker name a workspace filter."""
    if workspace is None:
        return "every workspace"
    if workspace == NO_WORKSPACE:
        return "no workspace"
    return home_path(workspace)


class WorkspacePicker(ModalScreen[WorkspacePick | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="workspace_cancel"),
        Binding("down", "move(1)", "Next", show=False),
        Binding("up", "move(-1)", "Previous", show=False),
        Binding("pagedown", "move(10)", "Page down", show=False),
        Binding("pageup", "move(-10)", "Page up", show=False),
    ]

    def __init__(self, counts: list[WorkspaceCount] | None, current: str | None) -> None:
        """``counts`` None: still being read; :meth:`set_counts` fills the list (the picker
        opens at once, so keys typed right after ``w`` land in it, not in the list below)."""
        super().__init__()
        self.counts = counts
        self.current = current
        self._by_id: dict[str, str | None] = {}
        #: Enter was pressed before the counts arrived: choose once they do.
        self._submit_pending = False

    def _options(self, needle: str) -> list[Option]:
        needle = needle.strip().lower()
        self._by_id = {}
        options: list[Option] = []
        named = [c for c in self.counts if c.workspace != NO_WORKSPACE]
        if not needle:
            total = sum(c.count for c in self.counts)
            options.append(Option(self._label("every workspace", total, self.current is None), id=_ALL))
            self._by_id[_ALL] = None
        for index, item in enumerate(named):
            shown = home_path(item.workspace)
            if needle and needle not in shown.lower() and needle not in item.workspace.lower():
                continue
            key = f"w{index}"
            self._by_id[key] = item.workspace
            options.append(Option(self._label(shown, item.count, item.workspace == self.current), id=key))
        loose = next((c for c in self.counts if c.workspace == NO_WORKSPACE), None)
        if loose is not None and (not needle or needle in "no workspace"):
            self._by_id[_NONE] = NO_WORKSPACE
            options.append(
                Option(self._label("no workspace", loose.count, self.current == NO_WORKSPACE,
                                   "chats and runs that name none"), id=_NONE)
            )
        return options

    @staticmethod
    def _label(name: str, count: int, chosen: bool, note: str = "") -> Text:
        text = Text("● " if chosen else "  ")
        text.append(f"{count:>7,}  ", style="dim" if not chosen else "")
        text.append(name, style="bold" if chosen else "")
        if note:
            text.append(f"  {note}", style="italic")
        return text

    def compose(self) -> ComposeResult:
        with Vertical(id="workspace-box", classes="modal-box"):
            yield Static(Text("Show conversations from one workspace (repository or directory)"),
                         classes="modal-heading")
            yield TextField(placeholder="type to narrow…", id="workspace-filter")
            yield OptionList(*self._options("") if self.counts else [], id="workspace-options")
            yield Static(Text("Counting conversations per workspace…"), id="workspace-none")

    def on_mount(self) -> None:
        box = self.query_one("#workspace-box")
        box.border_title = "Workspace"
        box.border_subtitle = "type to narrow · ↑↓ · Enter chooses · Esc cancels"
        self.query_one("#workspace-filter", Input).focus()
        self._show()

    def set_counts(self, counts: list[WorkspaceCount]) -> None:
        if not self.is_attached:
            return  # closed before the counts arrived
        self.counts = counts
        self._show()
        if self._submit_pending:
            self._submit_pending = False
            self._submitted()

    def _show(self) -> None:
        options = self.query_one(OptionList)
        note = self.query_one("#workspace-none", Static)
        if self.counts is None:
            options.display = False
            return
        if not self.counts:
            options.display = False
            note.update(Text("This store records no working directory (upstream added it at schema 16)."))
            return
        note.display = False
        options.display = True
        options.clear_options()
        options.add_options(self._options(self.query_one("#workspace-filter", Input).value))
        self._highlight_current()

    @property
    def _ready(self) -> bool:
        return bool(self.counts)

    def _highlight_current(self) -> None:
        options = self.query_one(OptionList)
        wanted = self.current
        for index, option in enumerate(options.options):
            if option.id in self._by_id and self._by_id[option.id] == wanted:
                options.highlighted = index
                return
        if options.option_count:
            options.highlighted = 0

    @on(Input.Changed, "#workspace-filter")
    def _narrow(self, event: Input.Changed) -> None:
        if not self._ready:
            return
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(self._options(event.value))
        if options.option_count:
            options.highlighted = 0

    @on(Input.Submitted, "#workspace-filter")
    def _submitted(self) -> None:
        if self.counts is not None and not self.counts:
            self.dismiss(None)
            return
        if not self._ready:
            self._submit_pending = self.counts is None
            return
        options = self.query_one(OptionList)
        if options.highlighted is not None and options.option_count:
            self._choose(options.get_option_at_index(options.highlighted).id)

    @on(OptionList.OptionSelected, "#workspace-options")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self._choose(event.option.id)

    def _choose(self, option_id: str | None) -> None:
        if option_id in self._by_id:
            self.dismiss(WorkspacePick(self._by_id[option_id]))

    def action_move(self, step: int) -> None:
        if not self._ready:
            return
        options = self.query_one(OptionList)
        if not options.option_count:
            return
        current = options.highlighted if options.highlighted is not None else 0
        options.highlighted = max(0, min(options.option_count - 1, current + step))

    def action_cancel(self) -> None:
        self.dismiss(None)
