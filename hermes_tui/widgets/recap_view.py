"""Widgets of the resume recap: the session header and the "Previous Conversation" card.

The card is ``hermes_tui.render.recap.render_recap_panel`` (RC-8) over the recap data of
``hermes_state.recap``, so glyphs, indents, dimming and the "... N earlier messages ..." line
are exactly the spec's. Its colours are the RC-8 defaults on dark themes; on light themes (where cornsilk text
would be unreadable) they are mapped to the Textual theme's colours, as RC-8 allows.
"""

from __future__ import annotations

from typing import Any, Callable

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from hermes_state.recap import Recap
from ..shown_time import stamp_and_relative as _when

from ..view_models import RecapData
from ..render.fields import Fields
from ..render.lanes import lane_rows
from ..render.recap import RecapTheme, render_recap_panel
from ..textsafe import inert_line
from ..legible import muted


class SessionHeader(Static):
    """Title, id, source, model, times, counts, lineage position and gateway lane."""

    def __init__(self, *, clock: Callable[[], float], id: str | None = None) -> None:
        super().__init__(Text("Loading…"), id=id)
        self.clock = clock
        self.data: RecapData | None = None

    def show(self, data: RecapData) -> None:
        self.data = data
        self.update(self.build(data))

    def build(self, data: RecapData) -> RenderableType:
        summary = data.summary
        if summary is None:
            return Text(f"Session {inert_line(data.requested_id)} no longer exists.", style="bold")
        now = self.clock()
        title = Text(inert_line(summary.title) or inert_line(summary.preview) or "(untitled)", style="bold")

        status = Text("live", style="bold") if summary.is_live else Text(inert_line(summary.status))
        calls = summary.tool_call_count
        messages = f"{summary.message_count:,}  ({calls:,} tool call{'' if calls == 1 else 's'})"
        tokens = f"{summary.input_tokens:,} in / {summary.output_tokens:,} out"
        lineage = f"#{data.position} of {data.chain_length}"
        rows: list[tuple[str, Any, str, Any]] = [
            ("id", Text(inert_line(summary.id)), "source", Text(inert_line(summary.source))),
            ("started", Text(_when(summary.started_at, now)), "model", Text(inert_line(summary.model) or "—")),
            ("active", Text(_when(summary.last_active, now)), "status", status),
            ("messages", Text(messages), "tokens", Text(tokens)),
        ]
        lineage_text = Text(lineage)
        if data.chain_length > 1:
            lineage_text.append(f"  (root {inert_line(data.chain[0])})", style=muted(self))
        notes = Text()
        if data.target_id != data.requested_id:
            notes.append(
                f"{inert_line(data.requested_id)} has no messages; showing {inert_line(data.target_id)}",
                style="italic",
            )
        if data.tip_id and data.tip_id != data.target_id:
            if notes:
                notes.append("\n")
            notes.append("continues after compression in ", style="italic")
            notes.append(inert_line(data.tip_id), style="bold")
            # An ended tip is where the chain stops, not a live session to resume into.
            notes.append(" (its last segment, ended)" if data.tip_ended else " (the live tip)", style="italic")
        parts: list[RenderableType] = [title, _Fields(rows, [("lineage", lineage_text)], muted(self))]
        if notes:
            parts.append(notes)
        if data.lane is not None:
            parts.append(self._lane(data.lane))
        return Group(*parts)

    def _lane(self, lane: Any) -> RenderableType:
        rows = [("gateway lane", Text(inert_line(getattr(lane, "session_key", "")), style="bold"))]
        rows += [(label, Text(inert_line(value))) for label, value in lane_rows(lane)]
        return Fields(rows, muted(self), gap=2)


class _Fields:
    """The header's fields: ``pairs`` in two pairs of columns when they fit the width side by
    side, else one field to a line in the same reading order (:class:`Fields`: beside its
    label, or under it when a word would not fit); ``wide`` fields (a value too long to
    share a line) one to a line under them. At 80 columns the two pairs folded a model id
    and the lineage's root id mid-word."""

    def __init__(self, pairs: list[tuple[str, Any, str, Any]], wide: list[tuple[str, Any]],
                 label_style: Any) -> None:
        self.pairs = pairs
        self.wide = wide
        self.label_style = label_style
        labels = [left for left, _l, _r, _v in pairs] + [label for label, _v in wide]
        self.label_width = max(map(len, labels), default=0)

    def _side_by_side(self) -> Table:
        grid = Table.grid(padding=(0, 2))
        for index in range(2):
            # (the first label column as wide as every label: the fields under it align)
            grid.add_column(style=self.label_style, no_wrap=True,
                            min_width=self.label_width if index == 0 else None)
            grid.add_column(overflow="fold")
        for row in self.pairs:
            grid.add_row(*row)
        return grid

    def _one_a_line(self) -> Fields:
        rows = []
        for left, lvalue, right, rvalue in self.pairs:
            rows += [(left, lvalue), (right, rvalue)]
        return Fields(rows + self.wide, self.label_style, gap=2)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        side_by_side = self._side_by_side()
        if Measurement.get(console, options.update(width=10_000), side_by_side).maximum > options.max_width:
            yield self._one_a_line()
            return
        yield side_by_side
        if self.wide:
            yield Fields(self.wide, self.label_style, gap=2, label_width=self.label_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        narrow = Measurement.get(console, options, self._one_a_line())
        wide = Measurement.get(console, options, self._side_by_side())
        return Measurement(narrow.minimum, max(narrow.maximum, wide.maximum))


#: How much of the last reply the card draws. RC-7 keeps the last reply whole (as data:
#: ``RecapView.recap``); drawing a megabyte-long answer would take the card seconds to lay
#: out on every refresh, so beyond this the card ends with a pointer to the transcript.
CARD_MAX_LINES = 200
CARD_MAX_CHARS = 20_000


def bounded_for_card(recap: Recap) -> Recap:
    """``recap`` with an oversized ``assistant_last`` text cut for display (see above)."""
    entries = []
    for entry in recap.entries:
        text = entry.text
        if entry.kind == "assistant_last" and (
            len(text) > CARD_MAX_CHARS or text.count("\n") >= CARD_MAX_LINES
        ):
            shown = "\n".join(text[:CARD_MAX_CHARS].split("\n")[:CARD_MAX_LINES])
            rest = len(text) - len(shown)
            text = f"{shown}\n… {rest:,} more characters of this reply — t opens the transcript"
            entry = entry.model_copy(update={"text": text})
        entries.append(entry)
    return recap.model_copy(update={"entries": entries})


class RecapView(Static):
    """The "Previous Conversation" card (RC-8), or a one-line reason why there is none."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.recap: Recap | None = None

    def show(self, recap: Recap | None, *, minimal: bool, theme: RecapTheme) -> None:
        # (minimal: the recap holds the last exchange alone, read so by the store door)
        self.recap = recap
        self.display = True
        if recap is None:
            self.update(Text("  No messages yet — nothing to recap.", style=muted(self, italic=True)))
        else:
            self.update(render_recap_panel(bounded_for_card(recap), theme))


def recap_theme_for(app_theme: Any, variables: dict[str, str] | None = None) -> RecapTheme:
    """The RC-8 palette on dark themes; the Textual theme's colours on light ones, with the
    legible ``$hs-*`` colours (BR-18) for user, assistant and earlier messages."""
    legible = {k: ("default" if str(v).startswith("ansi_") else v) for k, v in (variables or {}).items()}
    if getattr(app_theme, "name", "").startswith("ansi"):
        # The terminal's own colours: no hex palette is legible on a background we cannot see.
        return RecapTheme(user="default", assistant="default", border="default", text="default",
                          earlier="default")
    if app_theme is None or getattr(app_theme, "dark", True):
        # RC-8's palette, but earlier messages in a legible muted colour rather than
        # ``dim``, which takes goldenrod under 4.5:1 on dark grey (BR-18).
        return RecapTheme(earlier=legible.get("hs-muted") or "dim")
    try:
        return RecapTheme(
            user=legible.get("hs-user") or app_theme.warning or RecapTheme().user,
            assistant=legible.get("hs-assistant") or app_theme.success or RecapTheme().assistant,
            border=app_theme.secondary or app_theme.primary,
            text=app_theme.foreground or "default",
            earlier=legible.get("hs-muted") or "dim",
        )
    except Exception:  # a theme colour Rich cannot parse: keep the spec's palette
        return RecapTheme()
