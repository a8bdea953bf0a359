"""Text fields whose editing keys act in the order they were typed.

A terminal delivers what was typed since its last read at once: a fast typist, a held-down
Backspace, any keys typed while the app is busy (a search running). Textual hands the letters
to the focused field at once, but the field's editing keys -- Backspace, Delete, Ctrl+U,
Ctrl+W, the arrows, Home, End -- are bindings, run only once the key has bubbled up through
every parent's message queue to the app: by then the letters typed after them are in.
"dockr", Backspace, "er" became "docke"; "ab", Ctrl+U, "xyz" became "". Here a key that is
not text is looked up in the bindings at once, from the field up (as the app would look it
up after the bubbling: the same chain, the same keymap), so it acts before the next letter.

Textual's own report: Textualize/textual#6605 (open, with a fix proposed in #6631); when a
pinned Textual runs a field's bindings inline itself, this mixin can go.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class KeysInOrder:
    """Mix in before :class:`~textual.widgets.Input`."""

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable:
            return  # Input's own handler, next in the MRO, inserts it
        # Textual 8.2.8 (pinned): App._check_bindings is what the app runs once the key has
        # bubbled up to it (non-priority bindings, focused widget first).
        if await self.app._check_bindings(event.key):  # type: ignore[attr-defined]
            event.stop()
            event.prevent_default()  # (Input's and Widget's handlers are not to see it again)


class TextField(KeysInOrder, Input):
    """An :class:`~textual.widgets.Input` whose editing keys act in order."""
