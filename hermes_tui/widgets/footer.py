"""The footer of the browser: the keys that fit the terminal's width (item 5).

Textual's footer lists every shown binding and cuts what does not fit, so at 80 columns
"Quit" and "Help" fell off the end. Each key here has a tier; the screen says how wide it is
(classes ``-narrow`` below 110 columns, ``-medium`` below 160) and the stylesheet hides the
tiers that do not fit. Every key stays in the help screen and the command palette.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class TieredFooter(Footer):
    """A footer whose keys carry ``-tier1`` / ``-tier2`` / ``-narrow-only`` classes."""

    def __init__(self, tiers: dict[str, int], narrow_only: set[str] = frozenset(), **kwargs) -> None:
        super().__init__(**kwargs)
        self.tiers = tiers
        self.narrow_only = set(narrow_only)

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                action = widget.action
                tier = self.tiers.get(action, 0)
                if tier:
                    widget.add_class(f"-tier{tier}")
                if action in self.narrow_only:
                    widget.add_class("-narrow-only")
            yield widget
