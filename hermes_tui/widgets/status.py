"""StatusLine: database, counts, filter, liveness, any warning (lock waits, read-only) and
what the reader waits for (a ranking of the whole list)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class StatusLine(Static):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.left = ""
        self.warning: str | None = None
        self.warning_severity = "warning"
        #: What is being done that the reader waits for (not a warning), or None.
        self.activity: str | None = None
        #: A problem that lasts as long as the app (config.yaml's), after any warning.
        self.notice: str | None = None

    def set_info(self, text: str) -> None:
        self.left = text
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
        # One line, cut with an ellipsis (app.tcss); a warning comes first, so that a narrow
        # terminal cuts the counts and filters, never the lock wait or the read-only notice.
        line = Text(no_wrap=True, overflow="ellipsis")
        if self.warning:
            line.append("⚠ ", style="bold")
            line.append(self.warning, style="bold")
            line.append("  ·  ")
        if self.notice:
            line.append("⚠ ", style="bold")
            line.append(self.notice)
            line.append("  ·  ")
        if self.activity:
            line.append(self.activity, style="italic")
            line.append("  ·  ")
        line.append(self.left)
        self.update(line)
