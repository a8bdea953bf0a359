"""The footers of the screens: the keys that matter, drawn cheaply.

Textual's footer recomposes -- a dozen widgets mounted and styled -- every time the screen says
its bindings changed, which it says on every focus change and several times while the app
starts, mostly with the same keys; and each key it makes restyles itself twice on mount (its
``compact`` flag starts True and is then bound to the footer's False). At start-up that was a
third of the event loop's work before the first page was painted. :class:`KeyFooter` shows
the same keys, the same way, but recomposes only when what it shows would change and makes
each key with its final classes.

:class:`TieredFooter` (the browser's) also fits the terminal's width: Textual's footer
cuts what does not fit, so at 80 columns "Quit" and "Help" fell off the end. Each key here has
a tier; the screen says how wide it is (classes ``-narrow`` below 110 columns, ``-medium``
below 160) and the stylesheet hides the tiers that do not fit. Every key stays in the help
screen and the command palette.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from ..compat import FooterKey, footer_bindings_ready, mark_footer_bindings_ready


class KeyFooter(Footer):
    """Textual's footer for bindings without groups, recomposed only when its keys change."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        #: What the keys composed last show (see :meth:`_shown`); None before the first.
        self._composed: tuple | None = None
        #: A recompose is scheduled (it reads the bindings of its own moment).
        self._recompose_due = False

    def _entries(self) -> list[tuple]:
        """``(binding, enabled, tooltip)`` of each key shown, in order (one per action; the
        command palette's last, on the right)."""
        if not footer_bindings_ready(self):
            return []
        app = self.app
        active = self.screen.active_bindings
        entries: dict[str, tuple] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in entries:
                entries[binding.action] = (binding, enabled, tooltip)
        shown = list(entries.values())
        if self.show_command_palette and app.ENABLE_COMMAND_PALETTE:
            palette = active.get(app.COMMAND_PALETTE_BINDING)
            if palette is not None:
                _node, binding, enabled, tooltip = palette
                shown.append((binding, enabled, binding.tooltip or binding.description, "-command-palette"))
        return shown

    def _shown(self, entries: list[tuple]) -> tuple:
        app = self.app
        return (self.compact, tuple(
            (entry[0].key, app.get_key_display(entry[0]), entry[0].description, entry[0].action, *entry[1:])
            for entry in entries
        ))

    def bindings_changed(self, screen: Screen) -> None:
        mark_footer_bindings_ready(self)
        if not screen.app.app_focus:
            return
        if (
            self.is_attached and screen is self.screen and not self._recompose_due
            and self._shown(self._entries()) != self._composed
        ):
            self._recompose_due = True
            self.call_after_refresh(self.recompose)

    def key_classes(self, binding) -> str:
        """Extra CSS classes of the key for ``binding`` (none here)."""
        return ""

    def compose(self) -> ComposeResult:
        self._recompose_due = False
        entries = self._entries()
        self._composed = self._shown(entries) if self.is_attached else None
        app = self.app
        for binding, enabled, tooltip, *palette in entries:
            classes = " ".join(filter(None, [*palette, self.key_classes(binding)]))
            key = FooterKey(
                binding.key, app.get_key_display(binding), binding.description, binding.action,
                disabled=not enabled, tooltip=tooltip or "", classes=classes,
            )
            # Born with its final style: a key that mounts compact and is then made wide
            # restyles itself twice. (Textual binds every key but the palette's to the
            # footer's ``compact``; the palette's stays compact.)
            compact = True if palette else self.compact
            key.set_reactive(FooterKey.compact, compact)
            if compact:
                key.add_class("-compact", update=False)
            yield key


class TieredFooter(KeyFooter):
    """A footer whose keys carry ``-tier1`` / ``-tier2`` / ``-narrow-only`` classes."""

    def __init__(self, tiers: dict[str, int], narrow_only: set[str] = frozenset(), **kwargs) -> None:
        super().__init__(**kwargs)
        self.tiers = tiers
        self.narrow_only = set(narrow_only)

    def key_classes(self, binding) -> str:
        tier = self.tiers.get(binding.action, 0)
        return " ".join(filter(None, [
            f"-tier{tier}" if tier else "", "-narrow-only" if binding.action in self.narrow_only else "",
        ]))
