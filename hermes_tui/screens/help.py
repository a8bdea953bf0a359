"""HelpScreen: every key of the browser, grouped by screen, as a person types them.

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
from ..compat import keymap as _keymap
from ..keys import sections as _sections
from ..keys import APP_BINDINGS, DIALOG_NAMES, NO_KEY, keys_label, shadowed_keys, working_keys_label
from ..legible import muted, text_style
from ..render.reading import legend
from ..textsafe import inert_line


#: What each of the app's own keys (:data:`~hermes_tui.keys.APP_BINDINGS`) does, as the help
#: says it.
EVERYWHERE = {
    "command_palette": "Command palette (every action)",
    "cancel": "Quit without choosing (exit status 130)",
}


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", id="close_help"),
    ]

    def __init__(self, origin: Screen, problems: list[str] | tuple[str, ...] = ()) -> None:
        super().__init__()
        self.origin = origin
        #: config.yaml's problems, listed first until they are fixed.
        self.problems = list(problems)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(self.render_help(), id="help-table")

    def sections(self) -> list[tuple[str, list[tuple[str, str, str]]]]:
        """``(title, [(keys as typed, what it does, binding id)])`` per screen; the screen
        help was opened from first."""
        out: list[tuple[str, list[tuple[str, str, str]]]] = []
        keymap = dict(_keymap(self.app))
        # A key the keymap gives to two bindings runs one of them: the other is listed
        # without it, as the problem at the top says.
        shadowed = shadowed_keys(keymap)
        for title, classes in _sections():
            rows: list[tuple[str, str, str]] = []
            # An action is listed once per id: a second binding of it with an id of its own
            # (the hits' Ctrl+O, results_ranking, beside the field's search_ranking) is one
            # more id to rebind, named in the action's row below.
            seen: set[tuple[str, str | None]] = set()
            # The dialogs' section: each dialog's keys that have an id, named by the dialog
            # (every dialog has its own Cancel, each to remap on its own).
            dialogs = title.startswith("Rename")
            for cls in classes:
                if dialogs:
                    seen = set()
                for binding in cls.BINDINGS:
                    if not isinstance(binding, Binding) or not binding.description:
                        continue
                    again = (binding.action, None) in seen and (binding.action, binding.id or None) in seen
                    if again or (dialogs and not binding.id):
                        continue
                    seen |= {(binding.action, None), (binding.action, binding.id or None)}
                    keys = working_keys_label(keymap, shadowed, title, cls, binding)
                    if dialogs:
                        rows.append((keys, f"{DIALOG_NAMES[cls.__name__]}: {binding.description}", binding.id))
                        continue
                    same = next((i for i, row in enumerate(rows) if row[1] == binding.description), None)
                    if same is not None:
                        # One meaning, two bindings (the search field's and the results' Enter
                        # both open the hit): one row, with both keys and both ids to remap.
                        was_keys, what, ids = rows[same]
                        more = [k for k in keys.split(" / ") if k not in was_keys.split(" / ")]
                        merged = [k for k in [*was_keys.split(" / "), *more] if k != NO_KEY]
                        rows[same] = (" / ".join(merged) or NO_KEY, what,
                                      f"{ids}, {binding.id}" if binding.id else ids)
                        continue
                    rows.append((keys, binding.description, binding.id or ""))
            first = type(self.origin) in classes
            out.insert(0 if first else len(out), (title, rows))
        # The app's own keys, as the keymap has them (a remapped palette listed under Ctrl+P
        # was not found).
        out.append(("Everywhere", [(keys_label(keymap.get(b.id, b.key)) or NO_KEY, EVERYWHERE[b.id], b.id)
                                   for b in APP_BINDINGS]))
        return out

    def render_help(self) -> Group:
        parts: list = []
        muted_style = muted(self)
        if self.problems:
            parts.append(Text("Problems in config.yaml (fix them and start again)", style="bold"))
            for problem in self.problems:
                parts.append(Text.assemble("⚠ ", inert_line(problem)))
            parts.append(Text(""))
        parts.append(Text("Keys", style="bold"))
        sections = self.sections()
        # One width per column for every section, so the ids line up down the whole screen.
        key_width = max([12] + [len(keys) for _t, rows in sections for keys, _w, _i in rows])
        # As wide as the longest id: a row naming two ids wider than that together (the
        # rankings' "search_ranking, results_ranking") takes two lines, not every row's room.
        id_width = max([0] + [len(one) for _t, rows in sections for _k, _w, ids in rows for one in ids.split(", ")])
        for title, rows in sections:
            table = Table(
                title=title, title_justify="left", title_style=text_style(self, "hs-accent") + Style(bold=True),
                expand=True, show_edge=False, pad_edge=False, show_header=False, box=None,
            )
            table.add_column("key", style="bold", no_wrap=True, width=key_width)
            table.add_column("action", ratio=1)
            table.add_column("config id", style=muted_style, width=id_width)
            for keys, description, binding_id in rows:
                table.add_row(Text(keys), Text(description), Text(binding_id))
            parts += [Text(""), table]
        # What the list's rows show before their titles (one cell each).
        marks = Table(
            title="Marks in the session list", title_justify="left",
            title_style=text_style(self, "hs-accent") + Style(bold=True),
            expand=True, show_edge=False, pad_edge=False, show_header=False, box=None,
        )
        marks.add_column("mark", style="bold", no_wrap=True, min_width=12)
        marks.add_column("meaning", ratio=1)
        for glyph, meaning in legend():
            marks.add_row(Text(glyph), Text(meaning))
        parts += [Text(""), marks]
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
