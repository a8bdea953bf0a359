"""Search bar and search results.

``SearchInput`` is an ``Input`` that keeps every printable key as text (single-letter
actions never steal letters while it has focus) and forwards up/down/enter to the results.
``SearchResults`` lists hits grouped by conversation; each hit's snippet comes from the
store as plain text plus match spans, so highlighting never parses markers or markup.
"""

from __future__ import annotations

import functools
import time
from typing import Callable

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Span, Text
from textual.binding import Binding
from textual import events
from textual.events import Click
from textual.geometry import Size
from textual.reactive import Reactive, reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

from ..shown_time import relative as relative_time
from ..ellipsis import shown_snippet
from ..toolcall_snippet import compact_tool_calls

from ..compat import input_cursor_visible, input_suggestion, run_after_this_frame, scroll_update
from ..view_models import SearchView
from ..frames import FrameHold
from ..render.marks import marks
from ..render.reading import UNREAD_GLYPH
from ..textsafe import InertHighlighter, inert_line
from .intent import WidgetMessage
from .lines import cursor_strip, fast_text_strip
from .scrollbar import quick_vertical_scrollbar
from .bounded_input import BoundedInput
from .text_field import KeysFollowFocus, KeysInOrder


def new_matches_waiting(node) -> bool:
    """Whether the search pane of ``node``'s screen has new matches waiting."""
    results = node.screen.query(SearchResults)
    return bool(results) and results.first().waiting > 0


class SearchInput(BoundedInput, KeysInOrder, Input):
    """The query field. Esc clears it and hands focus back to the list."""

    #: Input sets its virtual size (the text's width, for horizontal scrolling) on every
    #: keystroke, and Widget's reactive asks for a layout of the whole screen when it changes
    #: (~10 ms at 160x48, once per key). The field's own size is fixed by CSS, so a repaint is
    #: enough: the scroll limits are computed from the virtual size when they are needed.
    virtual_size = Reactive(Size(0, 0), layout=False)

    BINDINGS = [
        Binding("escape", "clear_search", "Clear search", id="clear_search"),
        Binding("ctrl+n", "show_new", "New matches", id="show_new_matches"),
        Binding("down", "results_down", "Into the hits (as Tab)", show=False, id="next_hit"),
        Binding("up", "results_up", "Previous hit", show=False, id="previous_hit"),
        Binding("enter", "results_open", "Open hit", show=False, id="open_hit"),
        Binding("ctrl+o", "toggle_ranking", "Relevance / newest", id="search_ranking"),
    ]

    class Cleared(WidgetMessage):
        pass

    class Navigate(WidgetMessage):
        def __init__(self, widget, action: str) -> None:
            super().__init__(widget)
            self.action = action

    #: When the last key reached the field (``time.perf_counter()``), before the field handled
    #: it and echoed it: where a keystroke's latency starts (SearchAsYouType.latencies).
    key_at = 0.0

    def __init__(self, *args, hold_echo: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        #: With ``hold_echo``, a key that edits the text holds the screen's drawing (see
        #: :mod:`hermes_tui.frames`) until whoever searches for the new text releases it with
        #: its answer -- or says at once that no answer comes -- so that the key's echo and
        #: its answer are drawn in one frame. Unreleased, the hold ends by itself.
        self.frame_hold: FrameHold | None = FrameHold(self) if hold_echo else None

    def render_line(self, y: int) -> Strip:
        """The text line as ``Input.render_line`` draws it, built from two or three segments
        (the text before the cursor, the cursor's cell, the rest) instead of a Rich ``Text``
        rendered by the console (~0.3 ms of every keystroke's frame). A selection, a
        suggestion, a password, an empty field or another highlighter take Input's path."""
        value = self.value
        if (
            y != 0 or not value or self.password or not isinstance(self.highlighter, InertHighlighter)
            or not self.selection.is_empty or (input_suggestion(self) and self.has_focus)
        ):
            return super().render_line(y)
        plain = inert_line(value)  # (what InertHighlighter draws: one code point for one)
        cursor = self.cursor_position
        segments: list[Segment] = []
        if self.has_focus and input_cursor_visible(self):
            cursor_style = self.get_component_rich_style("input--cursor")
            if cursor == len(plain):
                plain += " "
            if cursor:
                segments.append(Segment(plain[:cursor]))
            segments.append(Segment(plain[cursor : cursor + 1], cursor_style))
            if cursor + 1 < len(plain):
                segments.append(Segment(plain[cursor + 1 :]))
        else:
            segments.append(Segment(plain))
        width = self.scrollable_content_region.width + 1
        scroll_x = self.scroll_offset.x
        strip = Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width)
        return strip.apply_style(self.rich_style)

    def on_key(self, event: events.Key) -> None:
        # Runs before Input's own key handler (a subclass's handler comes first).
        self.key_at = time.perf_counter()
        if self.frame_hold is not None and (event.is_printable or event.key in ("backspace", "delete")):
            self.frame_hold.begin()

    def release_echo(self, *changed) -> None:
        """Let the screen draw the field's echo with whatever changed since the key (the
        widgets ``changed`` just now: see :meth:`FrameHold.release`)."""
        if self.frame_hold is not None:
            self.frame_hold.release(*changed)

    def on_unmount(self) -> None:
        self.release_echo()

    def on_paste(self, event: events.Paste) -> None:
        """A pasted block is one query: its line breaks become spaces (Input keeps only the
        first line of a paste). Textual runs each class's own handler, this class's first:
        ``prevent_default`` keeps Input's from inserting the first line again after it."""
        event.prevent_default()
        if event.text:
            text = " ".join(event.text.split())
            selection = self.selection
            if selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *selection)
        event.stop()

    def action_show_new(self) -> None:
        self.post_message(SearchResults.ShowNew(self))

    def check_action(self, action: str, parameters) -> bool | None:
        # The key is in the footer only while new matches wait (see SearchResults.waiting).
        if action == "show_new":
            return new_matches_waiting(self)
        return True

    def action_clear_search(self) -> None:
        self.value = ""
        self.post_message(self.Cleared(self))

    def action_results_down(self) -> None:
        self.post_message(self.Navigate(self, "down"))

    def action_results_up(self) -> None:
        self.post_message(self.Navigate(self, "up"))

    def action_results_open(self) -> None:
        self.post_message(self.Navigate(self, "open"))

    def action_toggle_ranking(self) -> None:
        self.post_message(ToggleRanking(self))


class ToggleRanking(WidgetMessage):
    """Order the search's conversations by relevance, or newest first, from now on (SR-18)."""


def _snippet_parts(snippet: str, spans: list, width: int | None) -> tuple[str, list[tuple[int, int]]]:
    """``snippet`` as one line and its match spans in it (see :func:`snippet_text`)."""
    plain = inert_line(snippet).rstrip()
    pairs = []
    for span in spans or []:
        start, end = (span[0], span[1]) if not hasattr(span, "start") else (span.start, span.end)
        if 0 <= start < end <= len(plain):
            pairs.append((start, end))
    plain, pairs = shown_snippet(plain, pairs)  # (upstream's "..." cut marks as "…")
    plain, pairs = compact_tool_calls(plain, pairs)  # (a tool call's JSON as name(args))
    if not (width and pairs and cell_len(plain[: pairs[0][1]]) > width - 4):
        return plain, pairs
    # Keep about a third of the line before the match (in cells: CJK is two wide).
    start = pairs[0][0]
    cut = start
    budget = width // 3
    while cut > 0 and budget > 0:
        cut -= 1
        budget -= cell_len(plain[cut])
    space = plain.find(" ", cut, start)
    if space != -1 and space - cut < 12:
        cut = space + 1
    if not cut:
        return plain, pairs
    offset = 1 - cut
    return "…" + plain[cut:], [(a + offset, b + offset) for a, b in pairs if a + offset >= 1]


def snippet_text(snippet: str, spans: list, match_style, width: int | None = None) -> Text:
    """One line of ``snippet`` with ``spans`` highlighted (content is never markup).

    When ``width`` is given and the first match would fall off the right edge, the start of
    the snippet is replaced by ``…`` so the match stays in view.
    """
    body, marks = _snippet_parts(snippet, spans, width)
    return Text(body, no_wrap=True, overflow="ellipsis", spans=[Span(a, b, match_style) for a, b in marks])


def _hit_text(role: str, when: str, snippet: str, spans: list, width: int, meta_style, match_style) -> Text:
    """A hit's line: role and time muted, then its snippet with the matches highlighted --
    one ``Text`` made from its string and spans at once (appending piece by piece cleaned
    and measured each piece again: most of the time of building an answer's rows)."""
    head = f"   {inert_line(role)[:9]:<9} {when:>10}  "
    body, marks = _snippet_parts(snippet, spans, width - cell_len(head))
    n = len(head)
    return Text(
        head + body, no_wrap=True, overflow="ellipsis",
        spans=[Span(3, n, meta_style), *(Span(n + a, n + b, match_style) for a, b in marks)],
    )


def _fold_text(rest: int, meta_style) -> Text:
    """The row that stands for a conversation's hits past the first few: how many, and that
    Enter opens the conversation at the next one (the transcript steps through them all)."""
    return Text(f"   ⋯ {rest} more {'hit' if rest == 1 else 'hits'} in this conversation · Enter opens it at the next",
                style=meta_style, no_wrap=True, overflow="ellipsis")


def _note_row(note: str, meta_style) -> "_Row":
    """A note of the answer on a line of its own, never a hit (not selectable)."""
    return _Row(Text(f"   {inert_line(note)}", style=meta_style, no_wrap=True, overflow="ellipsis"), None)


def _group_text(label: str, source: str, count: int, tags: tuple[str, ...], group_style, meta_style,
                across: int = 0, width: int | None = None) -> Text:
    """A conversation's header line: what marks it (``[archived]``…), its name, its source
    and how many hits it holds -- or, found across messages, how many hold the words. A long
    name is cut (``…``) to leave the source and the count in view: at the pane's edge they
    were what got cut."""
    header = Text(no_wrap=True, overflow="ellipsis")
    header.append(" ▌ ", style=group_style)
    for tag in tags:
        header.append(f"{tag} ", style=meta_style)
    hits = f"{across} messages hold these words" if across else f"{count} {'hit' if count == 1 else 'hits'}"
    meta = f"  {inert_line(source)} · {hits}"
    name = Text(inert_line(label), style=group_style)
    if width is not None:
        room = width - header.cell_len - cell_len(meta)
        if name.cell_len > room:
            name.truncate(max(room, 8), overflow="ellipsis")
    header.append_text(name)
    header.append(meta, style=meta_style)
    return header


class _Row:
    """One line of the results: a header (no target) or a selectable hit / session.

    A row made with ``build`` makes its ``Text`` the first time it is asked for: an answer's
    rows below the pane's height are drawn only if the cursor goes there. ``key`` says what
    the row shows (rows with equal keys draw the same line at one width and theme)."""

    __slots__ = ("_text", "_build", "key", "target", "strip", "drawn", "strip_key")

    def __init__(
        self, text: Text | None, target: tuple[str, int | None] | None,
        key: tuple | None = None, build: Callable[[], Text] | None = None,
    ) -> None:
        self._text = text
        self._build = build
        self.key = key
        self.target = target
        self.strip: Strip | None = None
        self.drawn: Strip | None = None  # (the strip on the widget's style)
        self.strip_key: tuple | None = None

    @property
    def text(self) -> Text:
        if self._text is None:
            self._text = self._build()
            self._build = None
        return self._text

    def same_line(self, other: "_Row") -> bool:
        """Whether ``other`` draws as this row does (same width and theme)."""
        if self is other:
            return True
        if self.key is not None and other.key is not None:
            return self.key == other.key
        return self.text == other.text


class SearchResults(KeysFollowFocus, ScrollView, can_focus=True):
    """Hits grouped by conversation, with title/id matches first.

    A virtual list like ``SessionList``: rows are built as ``Text`` once per answer and
    only the visible ones are turned into strips, so painting a fresh answer costs the
    same whether it holds 5 hits or 60.
    """

    BINDINGS = [
        Binding("escape", "back", "Back to list", id="results_back"),
        Binding("ctrl+n", "show_new", "New matches", id="show_new_matches"),
        Binding("up,k", "cursor_up", "Previous hit", show=False, id="results_up"),
        Binding("down,j", "cursor_down", "Next hit", show=False, id="results_down"),
        # The list's moving keys, for the hits (README): without them Home, End and the page
        # keys fell through to ScrollView's, which scrolled the pane and left the cursor -- and
        # so the detail pane and the hit the next `j` started from -- where it was.
        Binding("home,g", "cursor_first", "First hit", show=False, id="results_first"),
        Binding("end,G", "cursor_last", "Last hit loaded", show=False, id="results_last"),
        Binding("pageup", "cursor_page_up", "Page up", show=False, id="results_page_up"),
        Binding("pagedown", "cursor_page_down", "Page down", show=False, id="results_page_down"),
        Binding("enter", "select", "Open hit", show=False, id="results_open"),
        Binding("ctrl+o", "toggle_ranking", "Relevance / newest", id="results_ranking"),
    ]

    COMPONENT_CLASSES = {
        "search-results--cursor",
        "search-results--match",
        "search-results--group",
        "search-results--meta",
    }

    DEFAULT_CSS = """
    SearchResults { overflow-x: hidden; }
    """

    #: The highlighted row; watch_cursor repaints (show: only the lines that changed).
    cursor: reactive[int | None] = reactive(None, always_update=True, repaint=False)

    class Chosen(WidgetMessage):
        """A hit (``message_id`` set) or a session (title/id match) was chosen."""

        def __init__(self, widget, session_id: str, message_id: int | None, query: str) -> None:
            super().__init__(widget)
            self.session_id = session_id
            self.message_id = message_id
            self.query = query

    class Back(WidgetMessage):
        pass

    class ShowNew(WidgetMessage):
        """Show the answer with the new matches that wait (see :attr:`waiting`)."""

    class HitHighlighted(WidgetMessage):
        def __init__(self, widget, session_id: str | None) -> None:
            super().__init__(widget)
            self.session_id = session_id

    class NeedMore(WidgetMessage):
        """The cursor is near the last hit and the answer may go on: load the next page
        (BR-20); ``offset`` is how many hits are shown."""

        def __init__(self, widget, query: str, offset: int) -> None:
            super().__init__(widget)
            self.query = query
            self.offset = offset

    #: Hits from the end at which the next page is asked for.
    MORE_AHEAD = 3
    #: A conversation's hits shown before the rest fold into one row (standing for the next
    #: hit): a common word's 84 hits of one conversation filled the pane, and the next
    #: conversation -- the one looked for, maybe -- was 84 rows down. One hit more than this
    #: is shown whole (a row for one hit saves nothing).
    FOLD_AFTER = 3
    #: Seconds an answer that does not fill the pane stands before its next page is read.
    FILL_AFTER_S = 0.25

    def __init__(self, *, clock: Callable[[], float], id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.view: SearchView | None = None
        self._rows: list[_Row] = []
        #: The rows of the last answer by what they show: while a word is typed, the next
        #: answer often holds the same hits (dock*, docke*, docker mark the same tokens), and
        #: a row reused keeps the strip it was drawn as (half the answers' rows and strips).
        self._reuse: dict[tuple, _Row] = {}
        self._reuse_for: tuple | None = None
        #: A next page was asked for and has not arrived yet.
        self.loading_more = False
        #: Set while an answer that does not fill the pane waits to have its next page read.
        self._fill_timer = None
        #: ``time.perf_counter()`` stamps of the last answer shown (bench: keystroke → painted
        #: phases): ``show`` / ``built`` around :meth:`show`, ``render`` / ``rendered`` around
        #: the first repaint of this widget after it.
        self.stamps: dict[str, float] = {}
        #: Called once the frame that first draws the answer shown last is written.
        self._after_paint: list[Callable[[], None]] = []
        #: While :meth:`show` replaces the rows it repaints what changed itself (the cursor and
        #: the virtual size would each repaint every line).
        self._showing = False
        #: (row width, row styles, height) the rows on screen were drawn for.
        self._drawn_for: tuple | None = None
        #: (width, widget style, console) while render_lines runs.
        self._drawing: tuple | None = None
        #: The last line of the guide shown while the field is empty (None: no guide shown).
        self._guide: str | None = None
        #: New matches of the query that another process's commits brought and that wait to be
        #: shown: the rows on screen hold still meanwhile (see :mod:`hermes_tui.search_hold`).
        self.waiting = 0

    def set_waiting(self, count: int) -> None:
        if count != self.waiting:
            self.waiting = count
            self.screen.refresh_bindings()  # (the key shows in the footer while some wait)

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "show_new":
            return self.waiting > 0
        return True

    def action_show_new(self) -> None:
        self.post_message(self.ShowNew(self))

    def highlight_first(self, targets) -> None:
        """Put the cursor on the first row that points at one of ``targets`` (scrolled into
        view), if any."""
        wanted = set(targets)
        index = next((i for i, row in enumerate(self._rows) if row.target in wanted), None)
        if index is not None:
            self.cursor = index

    @property
    def awaiting_paint(self) -> bool:
        """The answer shown last has not been drawn yet."""
        return "built" in self.stamps and "rendered" not in self.stamps

    def after_paint(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after the frame that first draws the answer just shown (the
        frame this widget is next rendered in, once the screen has written it), or after the
        next refresh when it is drawn already. Not ``call_after_refresh`` at :meth:`show`:
        that may run before the screen has learnt that this widget changed, so before the
        answer is drawn -- work meant for the next frame landed in the answer's."""
        if self.awaiting_paint:
            self._after_paint.append(callback)
        else:
            self.call_after_refresh(callback)

    @property
    def option_count(self) -> int:
        """Number of lines (headers included)."""
        return len(self._rows)

    def action_back(self) -> None:
        self.post_message(self.Back(self))

    def _style(self, name: str):
        return self.get_component_rich_style(f"search-results--{name}", partial=True)

    @property
    def vertical_scrollbar(self):
        """Drawn straight to strips (a fresh answer's frame redraws it): see QuickScrollBar."""
        return quick_vertical_scrollbar(self)

    def _width(self) -> int:
        # The pane may not be laid out yet (it was hidden): size from its container, less
        # a scrollbar.
        if self.scrollable_content_region.width:
            return self.scrollable_content_region.width
        container = self.parent.content_region.width if self.parent else self.size.width
        return max(20, container - 1)

    def show(self, view: SearchView, *, keep: bool = False) -> None:
        """Replace the rows with the answer ``view``.

        ``keep`` (a refresh of the same query, BR-16): the highlighted hit stays highlighted
        and on the same screen row; when it is gone, the cursor keeps its row.
        """
        stamps = {"show": time.perf_counter()}
        self._after_paint = []  # what waited for the previous answer's frame is moot
        if not keep:
            self.loading_more = False
        previous = self.target_of_highlighted() if keep else None
        screen_row = (self.cursor - self.scroll_offset.y) if (keep and self.cursor is not None) else 0
        old_cursor = self.cursor if keep else None
        drawn = (self._rows, self.scroll_offset.y, self.cursor)
        self.view = view
        self._guide = None
        width = self._width() - 1
        self._showing = True
        try:
            rows = self._build_rows(view, width)
            self._rows = rows
            laid_out = self._set_virtual_size(Size(width, len(rows)))
            selectable = [i for i, row in enumerate(rows) if row.target]
            cursor = selectable[0] if selectable else None
            if keep and selectable:
                same = next((i for i in selectable if rows[i].target == previous), None)
                if same is not None:
                    cursor = same
                elif old_cursor is not None:
                    cursor = min(selectable, key=lambda i: (abs(i - old_cursor), i))
            top = max(0, cursor - screen_row) if (keep and cursor is not None) else 0
            self.scroll_to(y=top, animate=False, immediate=True)
            self.cursor = cursor  # announces the hit, so the detail pane re-reads it too
        finally:
            self._showing = False
        geometry = (width, self._styles_key, self.scrollable_content_region.height)
        if laid_out or geometry != self._drawn_for:
            self._drawn_for = geometry
            self.refresh()
        else:
            self._refresh_changed_lines(*drawn)
        stamps["built"] = time.perf_counter()
        self.stamps = stamps
        if view.more and self.cursor is None and not self.loading_more:
            # Every hit of the pages read was of a conversation the list's filters (a time
            # window, unread only, a status) leave out: the next page is read at once, as the
            # cursor would ask for it next to the last hit.
            self._read_next_page(view)
        elif view.more and self._fill_timer is None and len(self._rows) < self.scrollable_content_region.height:
            # The pages read do not fill the pane (a page of 40 hits may be one conversation's,
            # folded into a few rows): the next page is read once this answer has stood a
            # moment -- not at once, where it would take the time of the next key typed.
            self._fill_timer = self.set_timer(self.FILL_AFTER_S, self._fill)

    def _fill(self) -> None:
        """The next page of the answer shown, if it still does not fill the pane."""
        self._fill_timer = None
        view = self.view
        if (view is not None and view.more and not self.loading_more
                and len(self._rows) < self.scrollable_content_region.height):
            self._read_next_page(view)

    def _read_next_page(self, view: SearchView) -> None:
        """Ask for the page after ``view``'s (once: until it arrives, ``loading_more``)."""
        self.loading_more = True
        self.post_message(self.NeedMore(self, view.query, view.next_offset))

    def _refresh_changed_lines(self, old_rows: list, old_top: int, old_cursor: int | None) -> None:
        """Repaint only the lines on screen that the new rows change: while a word is typed
        the next answer often shows the same hits (a frame then draws a few lines, not the
        pane's ~45), and the lines it would repaint unchanged cost the most of the answer's
        frame. At least one line is repainted, so that the answer has a frame of its own
        (its stamps, :meth:`after_paint`)."""
        rows, top, cursor = self._rows, self.scroll_offset.y, self.cursor
        height = self.scrollable_content_region.height
        changed: list[int] = []
        for y in range(height):
            old_index, new_index = old_top + y, top + y
            old = old_rows[old_index] if old_index < len(old_rows) else None
            new = rows[new_index] if new_index < len(rows) else None
            if (old_index == old_cursor) != (new_index == cursor) or not (
                old is new or (old is not None and new is not None and old.same_line(new))
            ):
                changed.append(y)
        if not changed:
            changed = [(cursor - top) if cursor is not None and 0 <= cursor - top < height else 0]
        start = previous = changed[0]
        for y in changed[1:] + [None]:
            if y is not None and y == previous + 1:
                previous = y
                continue
            self.refresh_lines(top + start, previous - start + 1)
            if y is not None:
                start = previous = y

    def _set_virtual_size(self, size: Size) -> bool:
        """A new answer's size without a layout of the whole screen: a layout per answer cost
        ~10 ms of every keystroke. The vertical scrollbar is always shown (CSS), so the pane's
        geometry does not depend on the number of rows; only before the first layout (no
        height yet) or at a new width is the reactive set the ordinary way."""
        old = self.virtual_size
        if not self.scrollable_content_region.height or old == size or old.width != size.width:
            changed = old != size
            self.virtual_size = size
            return changed
        self.set_reactive(SearchResults.virtual_size, size)
        scroll_update(self, size)
        if not self._showing:  # (show repaints what changed)
            self.refresh()
        return False

    def _build_rows(self, view: SearchView, width: int) -> list[_Row]:
        """The lines of ``view`` as ``Text``, in the theme's colours of now."""
        styles = self._styles_key = self._row_styles()
        match_style, group_style, meta_style = styles
        if self._reuse_for != (styles, width):
            self._reuse = {}
            self._reuse_for = (styles, width)
        previous, reuse = self._reuse, {}
        self._reuse = reuse
        now = self.clock()
        rows: list[_Row] = []
        if view.title_matches:
            header = Text(no_wrap=True)
            header.append(" ▌ ", style=group_style)
            header.append("Sessions by title or id", style=group_style)
            rows.append(_Row(header, None))
            for summary in view.title_matches:
                line = Text("   ", no_wrap=True, overflow="ellipsis")
                if summary.unread:
                    line.append(f"{UNREAD_GLYPH} ", style=group_style)
                for tag in marks(archived=summary.archived, hidden=summary.hidden, delegate=summary.delegate,
                                 source=summary.source):
                    line.append(f"{tag} ", style=meta_style)
                line.append(inert_line(summary.label), style="bold")
                line.append(f"  {inert_line(summary.id)}  {inert_line(summary.source)}  "
                            f"{relative_time(summary.last_active, now=now)}", style=meta_style)
                rows.append(_Row(line, (summary.id, None)))
        if view.note and view.groups:
            # Said before the hits, on a line of its own, not in a subtitle the pane cuts:
            # `the se` -- the message hits are those of `the` (the title/id match above is the
            # whole query's) --, or how far words were looked for across messages.
            rows.append(_note_row(view.note, meta_style))
        for group in view.groups:
            # A conversation's header, as its hits' lines, is built once while it stays the
            # same (consecutive answers mostly show the same conversations).
            tags = ((UNREAD_GLYPH,) if group.unread else ()) + tuple(
                marks(archived=group.archived, hidden=group.hidden, source=group.source))
            head_key = ("group", group.label, group.source, group.count, tags, group.across)
            row = previous.get(head_key)
            if row is None:
                row = _Row(None, None, head_key, functools.partial(
                    _group_text, group.label, group.source, group.count, tags, group_style, meta_style,
                    group.across, width))
            elif row in rows:
                row = _Row(None, None, head_key, row._build or (lambda text=row.text: text))  # (a row each)
            reuse[head_key] = row
            rows.append(row)
            hits = group.hits
            folded = len(hits) > self.FOLD_AFTER + 1
            for hit in hits[:self.FOLD_AFTER] if folded else hits:
                when = relative_time(hit.timestamp, now=now)
                spans = tuple(map(tuple, hit.spans or ()))
                key = (hit.session_id, hit.id, hit.role, when, hit.snippet, spans)
                row = previous.get(key)
                if row is None:
                    row = _Row(None, (hit.session_id, hit.id), key, functools.partial(
                        _hit_text, hit.role, when, hit.snippet, spans, width, meta_style, match_style))
                reuse[key] = row
                rows.append(row)
            if folded:
                after = hits[self.FOLD_AFTER]
                rest = len(hits) - self.FOLD_AFTER
                rows.append(_Row(None, (after.session_id, after.id), ("fold", after.session_id, after.id, rest),
                                 functools.partial(_fold_text, rest, meta_style)))
        if not rows and view.more:
            rows.append(_Row(Text("   No hits in the pages read so far: reading on…", style=meta_style), None))
        elif not rows:
            # BR-20: an empty answer says so in the pane, with the reason when there is one.
            # Messages matched whose conversations the list's filters then left out: not "no
            # message matches", but which filters (SR-19).
            said = ("   No conversation the filters keep matches " if view.filtered_out
                    else "   No message, title or id matches ")
            line = Text(said, no_wrap=True, overflow="ellipsis")
            line.append(f"“{inert_line(view.query)}”", style="bold")
            rows.append(_Row(line, None))
            if view.filtered_out:
                from hermes_state.search.found import dropped_note

                rows.append(_note_row(dropped_note(len(view.filtered_out), view.filters_on), meta_style))
            if view.note:
                # Its own line: the reason must not be the part an 80-column pane cuts off.
                rows.append(_note_row(view.note, meta_style))
        elif view.more:
            rows.append(_Row(Text("   … more hits load as you move down", style=meta_style), None))
        return rows

    def _row_styles(self) -> tuple:
        return self._style("match"), self._style("group"), self._style("meta")

    #: What the pane says while the field has focus and no text: how to search.
    GUIDE = (
        ("docker compose", "every word, in one message or across a conversation"),
        ('"exact phrase"', "these words, side by side"),
        ("deploy OR rollback", "either word"),
        ("docker NOT compose", "the first word without the second"),
        ("kube*", "any word that starts so"),
    )

    def show_guide(self, keys: str) -> None:
        """The pane of an empty, focused field: the query language by example, and ``keys``
        (what moves through the hits and back) -- no hits, no cursor. The pane opens when
        the field takes focus, so that the first key does not also open it (a layout and
        the whole pane drawn in that key's frame: ~7 ms of every query's first key)."""
        self.view = None
        self._guide = keys
        self.stamps = {}
        self._after_paint = []
        rows = self._guide_rows(keys)
        self._rows = rows
        self._drawn_for = None
        self.virtual_size = Size(self._width() - 1, len(rows))
        self.scroll_to(y=0, animate=False, immediate=True)
        self.cursor = None
        self.refresh()

    def _guide_rows(self, keys: str) -> list[_Row]:
        _match_style, group_style, meta_style = self._styles_key = self._row_styles()
        header = Text(no_wrap=True, overflow="ellipsis")
        header.append(" ▌ ", style=group_style)
        header.append("Search every message, title and id", style=group_style)
        rows = [_Row(header, None), _Row(Text(""), None)]
        column = max(len(example) for example, _ in self.GUIDE) + 3
        for example, meaning in self.GUIDE:
            line = Text("   ", no_wrap=True, overflow="ellipsis")
            line.append(example, style="bold")
            line.append(" " * (column - len(example)))
            line.append(meaning, style=meta_style)
            rows.append(_Row(line, None))
        rows.append(_Row(Text(""), None))
        rows.append(_Row(Text(f"   {keys}", style=meta_style, no_wrap=True, overflow="ellipsis"), None))
        return rows

    @property
    def showing_guide(self) -> bool:
        return self._guide is not None

    def clear_results(self) -> None:
        self.view = None
        self._guide = None
        self._rows = []
        self.virtual_size = Size(self._width() - 1, 0)
        self.cursor = None
        self.refresh()

    # ------------------------------------------------------------------ cursor

    def watch_cursor(self, cursor: int | None) -> None:
        if cursor is not None:
            height = self.scrollable_content_region.height or 1
            top = self.scroll_offset.y
            if cursor < top:
                self.scroll_to(y=max(0, cursor - 1), animate=False)
            elif cursor >= top + height:
                self.scroll_to(y=cursor - height + 1, animate=False)
        if not self._showing:  # (show repaints what changed)
            self.refresh()
        target = self.target_of_highlighted()
        self.post_message(self.HitHighlighted(self, target[0] if target else None))
        view = self.view
        if (
            cursor is not None and view is not None and view.more and not self.loading_more
            and cursor >= len(self._rows) - 1 - self.MORE_AHEAD
        ):
            self._read_next_page(view)

    def at_first_hit(self) -> bool:
        """No hit is highlighted but the first (the reader has not moved into the answer)."""
        first = next((i for i, row in enumerate(self._rows) if row.target), None)
        return self.cursor == first

    def append(self, page: SearchView) -> None:
        """The next page of the same answer: merged in place (cursor and scroll kept)."""
        self.loading_more = False
        if self.view is None or page.query != self.view.query:
            return
        self.show(self.view.merged(page), keep=True)

    def _step(self, delta: int) -> None:
        if self.cursor is None:
            return
        index = self.cursor + delta
        while 0 <= index < len(self._rows):
            if self._rows[index].target:
                self.cursor = index
                return
            index += delta

    def _move_to(self, index: int, delta: int) -> None:
        """Put the cursor on the hit at row ``index`` (kept inside the rows) or, where that row
        is a header or a note, on the nearest hit past it in the direction ``delta`` -- before
        it when none is (the rows end with a note). Setting the cursor scrolls it into view,
        announces the hit (the detail pane) and, near the last hit read, asks for the next
        page, as :meth:`_step` does."""
        if self.cursor is None or not self._rows:
            return
        index = max(0, min(len(self._rows) - 1, index))
        for step in (delta, -delta):
            at = index
            while 0 <= at < len(self._rows):
                if self._rows[at].target:
                    self.cursor = at
                    return
                at += step

    def _page(self) -> int:
        return max(1, (self.scrollable_content_region.height or 1) - 1)

    def action_cursor_down(self) -> None:
        self._step(1)

    def action_cursor_up(self) -> None:
        self._step(-1)

    def action_cursor_first(self) -> None:
        self._move_to(0, 1)
        if self.cursor is not None and self.cursor < (self.scrollable_content_region.height or 1):
            # The headers above the first hit ("Sessions by title or id", a note) in view too.
            self.scroll_to(y=0, animate=False)

    def action_cursor_last(self) -> None:
        # The last hit read so far: when more may follow, the cursor there asks for the next
        # page (watch_cursor), which is appended below it, as moving down with `j` does.
        self._move_to(len(self._rows) - 1, -1)

    def action_cursor_page_up(self) -> None:
        # (not ``action_page_up``: that is Widget's own, which scrolls without the cursor)
        if self.cursor is not None:
            self._move_to(self.cursor - self._page(), -1)

    def action_cursor_page_down(self) -> None:
        if self.cursor is not None:
            self._move_to(self.cursor + self._page(), 1)

    def action_select(self) -> None:
        self.choose_highlighted()

    def action_toggle_ranking(self) -> None:
        self.post_message(ToggleRanking(self))

    def on_click(self, event: Click) -> None:
        index = event.y + self.scroll_offset.y
        if 0 <= index < len(self._rows) and self._rows[index].target:
            if index == self.cursor and event.chain >= 2:
                self.choose_highlighted()
            self.cursor = index

    def choose_highlighted(self) -> None:
        target = self.target_of_highlighted()
        if target and self.view is not None:
            self.post_message(self.Chosen(self, target[0], target[1], self.view.query))

    def conversation_of_highlighted(self) -> str | None:
        """The conversation (its root, as the list keys its rows) of the highlighted row."""
        target, view = self.target_of_highlighted(), self.view
        if target is None or view is None:
            return None
        session_id, message_id = target
        if message_id is None:
            # A title match: its conversation as the door found it (a segment of a chain that
            # is not its tip is the chain's row; its own id names no row of the list).
            if session_id in view.title_roots:
                return view.title_roots[session_id]
            summary = next((s for s in view.title_matches if s.id == session_id), None)
            return (summary.lineage_root_id or summary.id) if summary is not None else session_id
        for group in view.groups:
            if any(hit.session_id == session_id and hit.id == message_id for hit in group.hits):
                return group.root_id
        return session_id

    def target_of_highlighted(self) -> tuple[str, int | None] | None:
        if self.cursor is None or not 0 <= self.cursor < len(self._rows):
            return None
        return self._rows[self.cursor].target

    # ------------------------------------------------------------------ drawing

    def render_lines(self, crop):
        first = "render" not in self.stamps and "built" in self.stamps
        if first:
            self.stamps["render"] = time.perf_counter()
        # The widget's style (and width) is resolved once per repaint, not once per line:
        # computing it walks the CSS cascade and showed up as a quarter of the repaint time.
        base = self.rich_style
        self._drawing = (self.scrollable_content_region.width or self.size.width, base, self.app.console)
        if self.view is not None and self._row_styles() != self._styles_key:
            # The theme changed: the rows carry the old colours. Same answer, same rows,
            # so the cursor and the scroll offset are untouched.
            self._rows = self._build_rows(self.view, self._width() - 1)
        elif self._guide is not None and self._row_styles() != self._styles_key:
            self._rows = self._guide_rows(self._guide)
        self._cursor_style = base + self.get_component_rich_style("search-results--cursor")
        try:
            lines = super().render_lines(crop)
        finally:
            self._drawing = None
        if first:
            self.stamps["rendered"] = time.perf_counter()
            callbacks, self._after_paint = self._after_paint, []
            for callback in callbacks:
                # Onto the screen's list of what runs after a refresh, now: the frame being
                # drawn runs it once written. (call_after_refresh posts a message that reaches
                # the screen after this frame -- the list then waits for the next refresh,
                # which the results' scrollbar, resized by this frame, asks for a slot later.)
                run_after_this_frame(self.screen, callback, self)
        return lines

    def render_line(self, y: int) -> Strip:
        drawing = self._drawing
        if drawing is None:  # (a line asked for outside render_lines: resolved for it alone)
            drawing = (self.scrollable_content_region.width or self.size.width, self.rich_style, self.app.console)
        width, base, console = drawing
        index = self.scroll_offset.y + y
        if not 0 <= index < len(self._rows):
            return Strip.blank(width, base)
        row = self._rows[index]
        key = (width, base)
        if row.strip_key != key:
            # Drawn once per answer and width; moving the cursor only restyles two rows. The
            # strip on the widget's style is kept too: the same strip each repaint.
            row.strip = fast_text_strip(row.text, width, console)
            row.drawn = row.strip.apply_style(base)
            row.strip_key = key
        if index == self.cursor and hasattr(self, "_cursor_style"):
            return cursor_strip(row.strip, self._cursor_style)
        return row.drawn
