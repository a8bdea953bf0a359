"""DetailPane: everything about the highlighted session, built from data (never markup)."""

from __future__ import annotations

from typing import Any, Callable

from rich.console import Group
from rich.text import Text
from textual.widget import Widget

from hermes_state.models import SessionSummary
from ..shown_time import seconds_to_next_minute, stamp_and_relative as _when

from ..ellipsis import shown_preview
from ..render.fields import Fields
from ..render.lanes import lane_rows
from ..render.reading import STATUS_REASONS, UNREAD_GLYPH, status_word
from ..textsafe import home_path, inert_line
from ..legible import muted, text_style




def _tokens(n: int) -> str:
    return f"{n:,}"


class DetailPane(Widget):
    """Details of one session; ``lane`` (a gateway LaneInfo) is shown when known.

    Its size comes from the stylesheet, never from its content, so showing another
    session repaints this pane only instead of laying out the whole screen (the pane
    changes on every keystroke of a search).
    """

    def __init__(self, *, clock: Callable[[], float], id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.summary: SessionSummary | None = None
        self.lane: Any = None
        self._renderable: Any = Text("")

    #: Seconds between rebuilds that move the shown times on (see SessionList.TIME_TICK_S).
    TIME_TICK_S = 60.0

    def on_mount(self) -> None:
        self.update(self.build())
        # On the minute (shown_time): every pane then moves its times on together.
        self.set_timer(min(seconds_to_next_minute(self.clock()), self.TIME_TICK_S),
                       lambda: self.set_interval(self.TIME_TICK_S, self._times_moved_on, name="shown-times"))

    def _times_moved_on(self) -> None:
        if self.summary is not None:
            self.update(self.build())  # (a millisecond or two, twice a minute)

    def update(self, renderable: Any) -> None:
        self._renderable = renderable
        self._built_theme = self.app.theme
        self.refresh()

    def render(self) -> Any:
        return self._renderable

    def show(self, summary: SessionSummary | None, lane: Any = None) -> None:
        if summary == self.summary and lane == self.lane and summary is not None:
            # Typing a query highlights the same first hit answer after answer: rebuilding
            # and repainting the same details cost ~5 ms of each keystroke.
            return
        self.summary = summary
        self.lane = lane
        self.update(self.build())

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # A theme change: the details were built in the old colours (other style updates,
        # focus or hover, change nothing here and must not rebuild).
        if self.is_mounted and getattr(self, "_built_theme", None) not in (None, self.app.theme):
            self.update(self.build())

    def build(self):
        summary = self.summary
        if summary is None:
            return Text("No session selected.", style=muted(self))
        now = self.clock()
        if summary.title:
            title = Text(inert_line(summary.title), style="bold")
        else:
            title = Text("untitled", style=muted(self, italic=True))
        rows: list[tuple[str, Text]] = []

        def row(label: str, value: str | Text) -> None:
            rows.append((label, value if isinstance(value, Text) else Text(value)))

        # A compression chain's row mixes two sessions (LI-5): the tip's id, status, activity,
        # counts and model; the root's start, source and tokens. Each value says whose.
        chained = bool(summary.lineage_root_id)
        whose_style = muted(self)

        def of(value: str, whose: str) -> Text:
            text = Text(value)
            if chained:
                text.append(f"  · {whose}", style=whose_style)
            return text

        row("id", of(inert_line(summary.id), "latest segment"))
        if chained:
            row("root", inert_line(summary.lineage_root_id))
        row("source", inert_line(summary.shown_source))  # v30: created→current where it moved
        if summary.model:
            row("model", inert_line(summary.model))
        live = text_style(self, "hs-success") if summary.is_live else ""
        row("status", Text(inert_line(summary.status), style=live))
        if summary.lifecycle:
            row("lifecycle", f"{status_word(summary.lifecycle)} — {STATUS_REASONS.get(summary.lifecycle, '')}")
        if summary.unread:
            row("read", Text(f"{UNREAD_GLYPH} unread: activity since it was last read", style=text_style(self, "hs-accent")))
        elif summary.last_read_at:
            row("read", _when(summary.last_read_at, now))
        row("started", of(_when(summary.started_at, now), "root"))
        row("active", _when(summary.last_active, now))
        calls = summary.tool_call_count
        row("messages", of(f"{summary.message_count}  ({calls} tool call{'' if calls == 1 else 's'})", "latest segment"))
        if summary.input_tokens or summary.output_tokens:
            row("tokens", of(f"{_tokens(summary.input_tokens)} in / {_tokens(summary.output_tokens)} out", "root"))
        if summary.estimated_cost_usd:
            row("cost", of(f"${summary.estimated_cost_usd:.4f}", "root"))
        # BR-13: the workspace, when the store knows it (v16 cwd; v30 git repository and branch).
        if summary.cwd:
            row("cwd", home_path(summary.cwd))
        if summary.git_repo_root:
            repo = home_path(summary.git_repo_root)
            row("git", f"{repo} @ {inert_line(summary.git_branch)}" if summary.git_branch else repo)
        elif summary.git_branch:
            row("branch", inert_line(summary.git_branch))
        parts: list[Any] = [title, Fields(rows, muted(self))]
        if self.lane is not None:
            parts.append(Text(""))
            parts.append(self._lane_block(self.lane))
        if summary.preview:
            parts.append(Text(""))
            parts.append(Text(shown_preview(inert_line(summary.preview)), style="italic"))
        return Group(*parts)

    def _lane_block(self, lane: Any):
        rows = [("lane", Text(inert_line(getattr(lane, "session_key", "")))),
                ("current", Text("yes (the lane's live session)"))]
        rows += [(label, Text(inert_line(value))) for label, value in lane_rows(lane)]
        return Group(Text("Gateway lane", style="bold"), Fields(rows, muted(self)))
