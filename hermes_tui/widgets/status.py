"""StatusLine: database, counts, filter, liveness, any warning (lock waits, read-only) and
what the reader waits for (a ranking of the whole list)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ..fitting import SEPARATOR, Part, fit_parts


class StatusLine(Static):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.left = ""
        self.parts: list[Part] | None = None
        self.warning: str | None = None
        self.warning_severity = "warning"
        #: What is being done that the reader waits for (not a warning), or None.
        self.activity: str | None = None
        #: A problem that lasts as long as the app (config.yaml's), after any warning.
        self.notice: str | None = None

    def set_info(self, text: str | list[Part]) -> None:
        """The line's information: a string (cut at the edge) or parts that fit the width."""
        if isinstance(text, str):
            self.left, self.parts = text, None
        else:
            self.parts = list(text)
            self.left = SEPARATOR.join(p.text for p in self.parts)
        self._redraw()

    def set_warning(self, text: str | None, severity: str = "warning") -> None:
        self.warning = text
        self.warning_severity = severity
        self.set_class(bool(text), "-warning")
        self._redraw()

    def set_notice(self, text: str | None) -> None:
        self.notice = text
        self._redraw()

    def set_activity(self, text: str | None) -> None:
        self.activity = text
        self._redraw()

    def _redraw(self) -> None:
        self.refresh()

    def render(self) -> Text:
        # One line, cut with an ellipsis (app.tcss); a warning comes first, so that a narrow
        # terminal cuts the counts and filters, never the lock wait or the read-only notice.
        line = Text(no_wrap=True, overflow="ellipsis")
        if self.warning:
            line.append("⚠ ", style="bold")
            line.append(self.warning, style="bold")
            line.append(SEPARATOR)
        if self.notice:
            line.append("⚠ ", style="bold")
            line.append(self.notice)
            line.append(SEPARATOR)
        if self.activity:
            line.append(self.activity, style="italic")
            line.append(SEPARATOR)
        if self.parts is not None and self.size.width:
            lead = "" if line else " "
            # (at least 1 cell: no room left by the warnings is not "not laid out yet", which
            # would say every part in full)
            line.append(lead + fit_parts(self.parts, max(1, self.size.width - line.cell_len - len(lead))))
        else:
            line.append(self.left)
        return line
