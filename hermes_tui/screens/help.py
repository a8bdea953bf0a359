"""HelpScreen: every key of the browser, grouped by screen, as a person types them (item 6).

The same key means different things on different screens (``enter`` opens a recap from the
list, resumes from the recap, expands a tool call in a transcript), so the keys are listed
per screen, the one the help was opened from first. Keys are shown as typed (``/``, ``?``,
``Enter``, ``↑``), with the binding id to remap them and the real path of ``config.yaml``.
Only this app's bindings are listed: Textual's own scrolling rows are not keys to learn.
"""

from __future__ import annotations

from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from ..config import config_path
from ..legible import muted, text_style
from ..modals.delete import ConfirmDeleteModal
from ..modals.export import ExportModal
from ..modals.rename import RenameModal
from ..widgets.lineage_tree import LineageTree
from ..widgets.search import SearchInput, SearchResults
from ..widgets.session_list import SessionList
from ..widgets.transcript_view import TranscriptView

#: Names of keys as a person reads them on a keyboard.
KEY_NAMES = {
    "enter": "Enter", "escape": "Esc", "space": "Space", "tab": "Tab", "backspace": "Backspace",
    "delete": "Del", "up": "↑", "down": "↓", "left": "←", "right": "→", "home": "Home",
    "end": "End", "pageup": "PgUp", "pagedown": "PgDn", "slash": "/", "question_mark": "?",
}


def key_label(key: str) -> str:
    """``ctrl+p`` → ``Ctrl+P``, ``question_mark`` → ``?``, ``N`` → ``N`` (shift is the case)."""
    parts = key.split("+")
    *mods, last = parts
    name = KEY_NAMES.get(last)
    if name is None:
        name = last.upper() if mods and len(last) == 1 else last
        if len(last) > 1 and last.startswith("f") and last[1:].isdigit():
            name = last.upper()
    return "+".join([m.capitalize() for m in mods] + [name])


def keys_label(keys: str) -> str:
    return " / ".join(key_label(k.strip()) for k in keys.split(",") if k.strip())


def _sections() -> list[tuple[str, list[type]]]:
    # Imported here: the screens' modules are not needed until help is opened, and the
    # browser screen imports the modals (flows) that this module lists.
    from .browser import BrowserScreen
    from .lineage import LineageScreen
    from .recap import RecapScreen
    from .transcript import TranscriptScreen

    return [
        ("Session list", [BrowserScreen, SessionList]),
        ("Search (after /)", [SearchInput, SearchResults]),
        ("Recap", [RecapScreen]),
        ("Transcript", [TranscriptScreen, TranscriptView]),
        ("Lineage", [LineageScreen, LineageTree]),
        ("Rename, delete and export dialogs", [RenameModal, ConfirmDeleteModal, ExportModal]),
    ]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", id="close_help"),
    ]

    def __init__(self, origin: Screen) -> None:
        super().__init__()
        self.origin = origin

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(self.render_help(), id="help-table")

    def sections(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        """``(title, [(keys as typed, what it does, binding id)])`` per screen; the screen
        help was opened from first."""
        keymap = getattr(self.app, "_keymap", {}) or {}
        out: list[tuple[str, list[tuple[str, str, str]]]] = []
        for title, classes in _sections():
            rows: list[tuple[str, str, str]] = []
            seen: set[str] = set()
            for cls in classes:
                for binding in cls.BINDINGS:
                    if not isinstance(binding, Binding) or not binding.description:
                        continue
                    if binding.action in seen:
                        continue
                    seen.add(binding.action)
                    keys = keymap.get(binding.id) if binding.id else None
                    rows.append((keys_label(keys or binding.key), binding.description, binding.id or ""))
            first = type(self.origin) in classes
            out.insert(0 if first else len(out), (title, rows))
        out.append(("Everywhere", [("Ctrl+P", "Command palette (every action)", "command_palette")]))
        return out

    def render_help(self) -> Group:
        parts: list = [Text("Keys", style="bold")]
        muted_style = muted(self)
        for title, rows in self.sections():
            table = Table(
                title=title, title_justify="left", title_style=text_style(self, "hs-accent") + Style(bold=True),
                expand=True, show_edge=False, pad_edge=False, show_header=False, box=None,
            )
            table.add_column("key", style="bold", no_wrap=True, min_width=12)
            table.add_column("action", ratio=1)
            table.add_column("config id", style=muted_style, no_wrap=True)
            for keys, description, binding_id in rows:
                table.add_row(Text(keys), Text(description), Text(binding_id))
            parts += [Text(""), table]
        parts += [
            Text(""),
            Text.assemble(
                ("Remap keys in ", muted_style), (str(config_path()), "bold"),
                (" under keymap: — binding id: keys, e.g. ", muted_style), ('copy_id: "c"', "bold"),
            ),
        ]
        return Group(*parts)

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
