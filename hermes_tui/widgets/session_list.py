"""SessionList: a virtual, paged list of conversations.

The list knows how many rows there are (``total``) but holds only the pages it has been
given. Drawing a row that is not loaded yet posts :class:`SessionList.NeedPage` once; the
screen loads that page in a worker and hands it back with :meth:`set_page`. Opening a
database of 50,000 sessions therefore reads one page, not 50,000 rows.
"""

from __future__ import annotations

from typing import Callable

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.events import Click
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hermes_state.models import SessionSummary
from ..shown_time import relative as relative_time, seconds_to_next_minute
from ..ellipsis import shown_preview

from ..render.marks import marks
from ..render.reading import UNREAD_GLYPH, status_glyph
from ..textsafe import fit_cells, inert_line
from .intent import WidgetMessage
from .lines import StyleOncePerRepaint, cursor_strip, fast_text_strip
from .scrollbar import quick_vertical_scrollbar
from .text_field import KeysFollowFocus


class SessionList(KeysFollowFocus, StyleOncePerRepaint, ScrollView, can_focus=True):
    """The browser's list of conversations (one row each, newest first)."""

    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False, id="cursor_up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="cursor_down"),
        Binding("home,g", "cursor_home", "First", show=False, id="cursor_first"),
        Binding("end,G", "cursor_end", "Last", show=False, id="cursor_last"),
        Binding("pageup", "page_up", "Page up", show=False, id="page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="page_down"),
        Binding("enter", "select", "Open", id="open"),
    ]

    COMPONENT_CLASSES = {
        "session-list--cursor",
        "session-list--title",
        "session-list--preview",
        "session-list--meta",
        "session-list--live",
        "session-list--ended",
        "session-list--placeholder",
        "session-list--pin",
        "session-list--tag",
        "session-list--mark",
        "session-list--lifecycle",
        "session-list--unread",
    }

    DEFAULT_CSS = """
    SessionList { height: 1fr; overflow-x: hidden; }
    """

    cursor: reactive[int] = reactive(0, always_update=True)
    #: Seconds between redraws that move the shown times on ("just now" -> "1m ago") when
    #: nothing else redraws the list (a store nobody writes); unchanged rows are kept, so a
    #: redraw costs ~0.6 ms.
    TIME_TICK_S = 60.0

    class NeedPage(WidgetMessage):
        """Rows from ``offset`` are needed to draw the list."""

        def __init__(self, widget: "SessionList", offset: int) -> None:
            super().__init__(widget)
            self.offset = offset

    class Highlighted(WidgetMessage):
        def __init__(self, widget: "SessionList", summary: SessionSummary | None) -> None:
            super().__init__(widget)
            self.summary = summary

    class Selected(WidgetMessage):
        def __init__(self, widget: "SessionList", summary: SessionSummary) -> None:
            super().__init__(widget)
            self.summary = summary

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        page_size: int = 100,
        empty_text: str = "No sessions yet.",
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.page_size = page_size
        self.total = 0
        self.loaded = False
        self.empty_text = empty_text
        self._rows: dict[int, SessionSummary] = {}
        #: Rows as drawn, by all that their drawing depends on (see render_line).
        self._drawn: LRUCache[tuple, Strip] = LRUCache(maxsize=512)
        self._requested: set[int] = set()
        #: ``total`` is only what is known so far ("N+ conversations (counting…)").
        self.counting = False
        #: End was pressed while counting or loading: the cursor goes to the end once known.
        self._wants_end = False
        self._last_highlighted: SessionSummary | None = None
        #: The time each row shows: the one the list is sorted on (BR-10).
        self.time_field = "last_active"
        #: The archived view (BR-11): every row there is archived, so none is marked so.
        self.archived_view = False
        #: Rows marked with ``space`` (BR-14), by session id, in the order they were marked.
        self.marked: dict[str, SessionSummary] = {}

    @property
    def vertical_scrollbar(self):
        """Drawn straight to strips: see QuickScrollBar."""
        return quick_vertical_scrollbar(self)

    # ------------------------------------------------------------------ data

    def page_of(self, index: int) -> int:
        return (index // self.page_size) * self.page_size

    def set_total(self, total: int) -> None:
        self.total = max(0, total)
        self.loaded = True
        self.virtual_size = Size(self.scrollable_content_region.width, self.total)
        if self.cursor >= self.total:
            self.cursor = max(0, self.total - 1)
        self.refresh()

    def set_page(self, offset: int, rows: list[SessionSummary]) -> None:
        for index in range(offset, offset + self.page_size):
            self._rows.pop(index, None)
        for index, row in enumerate(rows, start=offset):
            self._rows[index] = row
        self._requested.discard(offset)
        self.refresh()
        self.announce()

    def invalidate(self) -> None:
        """Forget loaded rows (keep showing them until replacements arrive)."""
        self._requested.clear()

    def clear_rows(self) -> None:
        self._rows.clear()
        self._requested.clear()
        self.refresh()

    def reset(self) -> None:
        """Another list (other filters, another order): nothing of this one is known, not its
        rows and not its length ("loading…" until its first window, not the old count)."""
        self.clear_rows()  # (which asks for the repaint)
        self.total = 0
        self.loaded = False
        self.virtual_size = Size(self.scrollable_content_region.width, 0)
        self.move_to(0)

    def row(self, index: int) -> SessionSummary | None:
        return self._rows.get(index)

    @property
    def current(self) -> SessionSummary | None:
        return self._rows.get(self.cursor)

    def index_of_key(self, key: str, *, key_of: Callable[[SessionSummary], str]) -> int | None:
        """The loaded row whose ``key_of(row)`` or id is ``key``."""
        for index in sorted(self._rows):
            row = self._rows[index]
            if key in (key_of(row), row.id):
                return index
        return None

    def keep_at(self, index: int, screen_row: int) -> None:
        """Put the cursor on ``index`` and scroll so it sits on ``screen_row`` of the view."""
        if self.total == 0:
            self.cursor = 0
            return
        index = max(0, min(self.total - 1, index))
        height = self.scrollable_content_region.height or 1
        screen_row = max(0, min(height - 1, screen_row))
        self.scroll_to(y=max(0, index - screen_row), animate=False, immediate=True)
        self.cursor = index

    def index_of(self, session_id: str) -> int | None:
        for index, row in self._rows.items():
            if row.id == session_id or row.lineage_root_id == session_id:
                return index
        return None

    def loaded_pages_near(self, index: int, radius: int = 1) -> list[int]:
        first = self.page_of(index)
        pages = [first + k * self.page_size for k in range(-radius, radius + 1)]
        return [p for p in pages if 0 <= p < max(self.total, 1)]

    def _request(self, offset: int) -> None:
        if offset not in self._requested:
            self._requested.add(offset)
            self.post_message(self.NeedPage(self, offset))

    # ------------------------------------------------------------------ marks (BR-14)

    def toggle_mark(self) -> bool | None:
        """Mark or unmark the highlighted row; True when it is now marked (None: no row)."""
        row = self.current
        if row is None:
            return None
        if row.id in self.marked:
            del self.marked[row.id]
            marked = False
        else:
            self.marked[row.id] = row
            marked = True
        self.refresh()
        return marked

    def clear_marks(self) -> None:
        if self.marked:
            self.marked.clear()
            self.refresh()

    def forget_marks(self, session_ids) -> None:
        """Drop marks of rows that are gone (deleted, or left the view)."""
        for session_id in list(session_ids):
            self.marked.pop(session_id, None)
        self.refresh()

    # ------------------------------------------------------------------ cursor

    def watch_cursor(self, old: int, new: int) -> None:
        self._scroll_to_cursor()
        self.refresh()
        self.announce()

    def announce(self) -> None:
        """Tell the screen the highlighted row, when it or what is known of it changed.

        Compared by value, not by id: after a rename or a new message the same session is
        announced again, so the detail pane always shows the highlighted row as it is now.
        """
        row = self.current
        if row != self._last_highlighted:
            self._last_highlighted = row
            self.post_message(self.Highlighted(self, row))

    def _scroll_to_cursor(self) -> None:
        height = self.scrollable_content_region.height or 1
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def set_counting(self, counting: bool) -> None:
        """Whether ``total`` is still a lower bound; once counted, an End pressed meanwhile
        takes the cursor to the real end (not to the end of what was known then)."""
        self.counting = counting
        if not counting and self._wants_end and self.loaded:
            self._wants_end = False
            self.move_to(self.total - 1)

    def move_to(self, index: int) -> None:
        self._wants_end = False  # (any move but End's own: the reader went elsewhere)
        if self.total == 0:
            self.cursor = 0
            return
        self.cursor = max(0, min(self.total - 1, index))

    def action_cursor_up(self) -> None:
        self.move_to(self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_to(self.cursor + 1)

    def action_cursor_home(self) -> None:
        self.move_to(0)

    def action_cursor_end(self) -> None:
        self.move_to(self.total - 1)
        # Still counting, or not even loaded (another order or filter being read: End
        # pressed right after ``o`` was lost): the end once it is known.
        self._wants_end = self.counting or not self.loaded

    def action_page_up(self) -> None:
        self.move_to(self.cursor - max(1, self.scrollable_content_region.height - 1))

    def action_page_down(self) -> None:
        self.move_to(self.cursor + max(1, self.scrollable_content_region.height - 1))

    def action_select(self) -> None:
        row = self.current
        if row is not None:
            self.post_message(self.Selected(self, row))

    def on_click(self, event: Click) -> None:
        index = event.y + self.scroll_offset.y
        if 0 <= index < self.total:
            if index == self.cursor and event.chain >= 2:
                self.action_select()
            self.move_to(index)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.scrollable_content_region.width, self.total)

    def on_mount(self) -> None:
        # On the minute (shown_time): every pane then moves its times on together.
        self.set_timer(min(seconds_to_next_minute(self.clock()), self.TIME_TICK_S),
                       lambda: self.set_interval(self.TIME_TICK_S, self.refresh, name="shown-times"))

    # ------------------------------------------------------------------ drawing

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        index = self.scroll_offset.y + y
        base = self.base_style
        if self.loaded and self.total == 0:
            # The empty state's sentence, wrapped to the pane from its second line.
            placeholder = self._part("placeholder")
            lines = Text(self.empty_text, style=placeholder).wrap(self.app.console, max(8, width - 3))
            if 1 <= y <= len(lines):
                return self._strip(Text("  ", style=placeholder) + lines[y - 1], width, base)
            return Strip.blank(width, base)
        if index >= self.total:
            return Strip.blank(width, base)
        row = self._rows.get(index)
        if row is None:
            self._request(self.page_of(index))
            text = Text("  …", style=self._part("placeholder"))
            return self._strip(text, width, base)
        under_cursor = index == self.cursor
        when = relative_time(self._row_time(row), now=self.clock())
        # A row is drawn again only when something it shows changed: each live refresh
        # (a gateway commits several times a second) and each step of a scroll redraws
        # every line, ~0.3 ms a line from scratch (41 lines: 11 ms of the main thread).
        key = (
            row, width, base, under_cursor, under_cursor and self.has_focus, row.id in self.marked,
            self.time_field, when, self.archived_view,
        )
        strip = self._drawn.get(key)
        if strip is not None:
            return strip
        text = self.render_row(row, width, under_cursor, when=when)
        if under_cursor:
            cursor_style = self.get_component_rich_style("session-list--cursor")
            if not self.has_focus:
                cursor_style = cursor_style + Style(dim=False)
            style = base + cursor_style
            strip = cursor_strip(self._strip(text, width, style), style)
        else:
            strip = self._strip(text, width, base)
        self._drawn[key] = strip
        return strip

    def notify_style_update(self) -> None:
        self._drawn.clear()  # the theme or the styles changed: every row draws anew
        super().notify_style_update()

    def _row_time(self, row: SessionSummary) -> float:
        """The time a row shows: the one the list is sorted on (BR-10)."""
        return row.started_at if self.time_field == "started_at" else (row.last_active or row.started_at)

    def _strip(self, text: Text, width: int, style: Style) -> Strip:
        # A row's parts follow one another (no overlapping spans): drawn from its spans, as
        # the search pane's lines are, without Rich's per-character style runs (~40 us of
        # ~180 a line; the first page's frame at start-up draws 41 of them from cold caches).
        return fast_text_strip(text, width, self.app.console).apply_style(style)

    def _part(self, name: str) -> Style:
        """A component's own style only, so the row background (cursor) shows through."""
        return self.get_component_rich_style(f"session-list--{name}", partial=True)

    @staticmethod
    def row_tags(row: SessionSummary) -> list[str]:
        """Words marking a row that is not an ordinary active conversation (BR-11, BR-15)."""
        return marks(archived=row.archived, hidden=row.hidden, delegate=row.delegate, source=row.source)

    def render_row(
        self, row: SessionSummary, width: int, under_cursor: bool = False, when: str | None = None,
    ) -> Text:
        """One row: status, label (title or preview) with the preview, meta columns; ``when``
        is the time shown, when the caller has worked it out already."""
        if when is None:
            when = relative_time(self._row_time(row), now=self.clock())
        count = f"{row.message_count} msg" if row.message_count == 1 else f"{row.message_count} msgs"
        shown = row.shown_source
        if shown == row.source:
            source = f"{inert_line(row.source)[:10]:<10}"
        else:  # v30: "created→current" (it moved platforms), cut to the column with an ellipsis
            source = fit_cells(inert_line(shown), 10, 10)
        meta = f" {source} {count:>9} {when:>10} "
        gap = ""
        if row.profile is not None:  # (rows of several Hermes profiles shown together: PF-5)
            # The gap before the profile is drawn apart from it, in the row's own style: as
            # the first cells of the meta's run it was lost where a run's leading blanks are
            # (an SVG's text: the README's screenshot showed "do…default").
            gap, meta = "  ", f"{inert_line(row.profile)[:10]:<10}{meta}"
        live = row.is_live
        glyph = Text("●" if live else "○", style=self._part("live" if live else "ended"))
        # How it ended, after live/ended (blank when done: the others stand out).
        glyph.append(f"{status_glyph(row.lifecycle)} ", style=self._part("lifecycle"))
        label_width = max(8, width - len(gap) - len(meta) - 4)
        body = Text(no_wrap=True, overflow="ellipsis")
        unread = row.unread
        if row.title:
            body.append(inert_line(row.title), style=self._part("title"))
            if row.preview:
                body.append("  ")
                body.append(shown_preview(inert_line(row.preview)), style=self._part("preview"))
        else:
            body.append(
                shown_preview(inert_line(row.preview)) or inert_line(row.id),
                style=self._part("preview"),
            )
        tags = [t for t in self.row_tags(row) if not (self.archived_view and t == "[archived]")]
        tag_text = Text(no_wrap=True)
        if unread:
            tag_text.append(f"{UNREAD_GLYPH} ", style=self._part("unread"))
        if row.pinned:
            tag_text.append("★ ", style=self._part("pin"))
        for tag in tags:
            tag_text.append(f"{tag} ", style=self._part("tag"))
        body.truncate(max(8, label_width - tag_text.cell_len), overflow="ellipsis", pad=True)
        if row.id in self.marked:
            # On the cursor row the mark takes the cursor's colours (accent on accent is invisible).
            line = Text("✓", style=Style(bold=True) if under_cursor else self._part("mark"), no_wrap=True)
        else:
            line = Text(" ", no_wrap=True)
        line.append_text(glyph)
        line.append_text(tag_text)
        line.append_text(body)
        line.append(gap)
        line.append(meta, style=self._part("meta"))
        return line
