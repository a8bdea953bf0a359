"""HelpScreen: every key of the screen it was opened from, with the binding ids to remap."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", id="close_help"),
    ]

    def __init__(self, origin: Screen) -> None:
        super().__init__()
        self.origin = origin

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(self._table(), id="help-table")

    def _table(self) -> Table:
        table = Table(title="Keys", expand=True, show_edge=False, pad_edge=False)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("action")
        table.add_column("config id", style="dim", no_wrap=True)
        seen: set[tuple[str, str]] = set()
        rows: list[tuple[str, str, str]] = []
        nodes = [self.origin, *self.origin.query("*")]
        for node in nodes:
            for binding in getattr(node, "BINDINGS", []):
                if not isinstance(binding, Binding) or not binding.description:
                    continue
                key = (binding.action, binding.description)
                if key in seen:
                    continue
                seen.add(key)
                keys = self.app.get_key_display(binding)
                current = self.app._keymap.get(binding.id) if binding.id else None
                rows.append((current or binding.key, binding.description, binding.id or ""))
        for keys, description, binding_id in rows:
            table.add_row(Text(keys), Text(description), Text(binding_id))
        table.add_row(Text("ctrl+p"), Text("Command palette (every action)"), Text("command_palette"))
        table.caption = "Remap keys in config.yaml under `keymap:` (id: keys)."
        return table

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
