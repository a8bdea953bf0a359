"""TranscriptView: every message of a session in one virtual, line-based scroll view.

Design (so a 5,000-message session opens at once):

* No widget per message. The view is a :class:`~textual.scroll_view.ScrollView` that draws
  only the lines on screen (``render_line``).
* Each message is a *block* of display lines. Its height is computed from plain strings with
  a small word-wrapper (:func:`wrap_offsets`), which is cheap; the styled lines (rich ``Text``
  with role styles and match highlights) are built only when a block is drawn, and kept in a
  small LRU cache. Because both use the same wrapper on the same strings, the height always
  equals the number of drawn lines.
* Heights are recomputed when the width changes or a block is expanded/collapsed (one block)
  or everything is toggled (all blocks; still only string arithmetic).

Content is data: every string goes through :func:`~hermes_tui.textsafe.inert_block` /
``inert_line`` (which keep string lengths, so match spans found on the text stay valid) and is
appended to ``Text`` objects, never parsed as markup.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate
from typing import Callable, Iterator, Sequence

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.events import Click
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from hermes_state.models import Message, tool_call_name
from hermes_state.query import highlight_pattern, highlight_terms
from ..shown_time import relative as relative_time, repeats_date
from ..render.fences import split_fences

from .intent import WidgetMessage
from ..textsafe import inert_block, inert_line
from .lines import StyleOncePerRepaint, text_strip
from .text_field import KeysFollowFocus
from .transcript_lines import LAZY_LINES, Layout, first_match, iter_lines, spans_near

# ---------------------------------------------------------------------------- text helpers

_JSON_PREFIX = "\x00json:"
_WORD_RE = re.compile(r"\s*\S+\s*|\s+")


def query_terms(query: str | None) -> list[str]:
    """The terms of a search query that its hits have matched, as the one query parser
    reads them (:func:`hermes_state.query.highlight_terms`): words, prefixes, phrases --
    never an excluded (``NOT``) word."""
    return [term.rstrip("*") for _kind, term in highlight_terms(query)]


def match_pattern(query: str | None) -> re.Pattern[str] | None:
    """What to highlight for ``query`` (:func:`hermes_state.query.highlight_pattern`: whole
    words, a word being typed as a prefix, phrases, CJK substrings), or None."""
    return highlight_pattern(query)


def match_spans(pattern: re.Pattern[str] | None, text: str) -> list[tuple[int, int]]:
    if pattern is None or not text:
        return []
    return [(m.start(), m.end()) for m in pattern.finditer(text) if m.end() > m.start()]


def wrap_offsets(text: str, width: int) -> list[tuple[int, int]]:
    """Display lines of ``text`` as ``(start, end)`` offsets: split at newlines, then word
    wrapped to ``width`` cells, words longer than a line folded. Never returns an empty list.

    ASCII lines (one cell per character) take a fast path that only looks for spaces; other
    lines are measured in terminal cells (CJK characters take two).
    """
    return list(iter_wrap_offsets(text, width))


def iter_wrap_offsets(text: str, width: int) -> Iterator[tuple[int, int]]:
    """:func:`wrap_offsets`, one display line at a time (a 50 MB message has ~600,000)."""
    width = max(1, width)
    out: list[tuple[int, int]] = []
    for start, line in iter_lines(text):
        length = len(line)
        if length <= width and (line.isascii() or cell_len(line) <= width):
            yield start, start + length
            continue
        if line.isascii():
            _wrap_ascii(line, start, width, out)
        else:
            _wrap_line(line, start, width, out)
        yield from out
        out.clear()


def _wrap_ascii(line: str, base: int, width: int, out: list[tuple[int, int]]) -> None:
    """Greedy word wrap of an ASCII line: break at the last space that fits, else fold.
    Spaces at a break stay at the end of the line they follow (cropped when drawn)."""
    position = 0
    length = len(line)
    while length - position > width:
        limit = position + width
        cut = line.rfind(" ", position + 1, limit + 1)
        if cut <= position:
            cut = limit  # no space to break at: fold the word
        else:
            cut += 1  # keep the space on this line
            while cut < length and line[cut] == " ":
                cut += 1
        out.append((base + position, base + cut))
        position = cut
    if position < length:
        out.append((base + position, base + length))


def _wrap_line(line: str, base: int, width: int, out: list[tuple[int, int]]) -> None:
    line_start = 0  # offset in `line` of the current display line
    used = 0  # cells used on the current display line
    for match in _WORD_RE.finditer(line):
        word = match.group()
        word_start = match.start()
        visible = cell_len(word.rstrip())
        if used + visible <= width:
            used += cell_len(word)
            continue
        if used and visible <= width:
            out.append((base + line_start, base + word_start))
            line_start = word_start
            used = cell_len(word)
            continue
        # A word longer than the line (or at the start of one): fold it by cells.
        if used:
            out.append((base + line_start, base + word_start))
            line_start = word_start
            used = 0
        position = word_start
        for char in word:
            w = cell_len(char)
            if used + w > width and used:
                if char.isspace():
                    used += w  # trailing spaces stay on the line; they are cropped when drawn
                    position += 1
                    continue
                out.append((base + line_start, base + position))
                line_start = position
                used = 0
            used += w
            position += 1
    out.append((base + line_start, base + len(line)))


def content_text(content: str | None) -> str:
    """Stored content as display text (multimodal ``\\x00json:`` content decoded)."""
    if not content:
        return ""
    if content.startswith(_JSON_PREFIX):
        try:
            parts = json.loads(content[len(_JSON_PREFIX):])
        except ValueError:
            return content
        if isinstance(parts, str):
            return parts
        if isinstance(parts, list):
            pieces = []
            for part in parts:
                if isinstance(part, str):
                    pieces.append(part)
                elif isinstance(part, dict):
                    if part.get("type") in ("image_url", "input_image", "image"):
                        pieces.append("[image]")
                    elif isinstance(part.get("text"), str):
                        pieces.append(part["text"])
            return " ".join(p for p in pieces if p)
    return content


def _calls(message: Message) -> list[dict]:
    return message.tool_call_list


def _raw_arguments(call: dict) -> str:
    fn = call.get("function")
    args = fn.get("arguments") if isinstance(fn, dict) else call.get("arguments")
    if args is None:
        return ""
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(args)


def pretty_arguments(raw: str) -> str:
    """Tool-call arguments for display: JSON pretty-printed, anything else as it is."""
    if not raw:
        return ""
    try:
        decoded = json.loads(raw)
    except ValueError:
        return raw
    try:
        return json.dumps(decoded, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return raw


#: Columns before every line: the cursor bar.
GUTTER = 1

ROLE_NAMES = {"user": "You", "assistant": "Hermes", "tool": "Tool", "system": "System"}
ROLE_GLYPHS = {"user": "●", "assistant": "◆", "tool": "⚙", "system": "■"}


# ---------------------------------------------------------------------------- blocks

@dataclass
class Piece:
    """A run of display lines of one block: ``kind`` picks the style, ``wrap`` says whether
    the text is word-wrapped (else it is one line, cut with an ellipsis)."""

    kind: str
    text: str
    indent: int
    wrap: bool = True
    searchable: bool = True


@dataclass
class Call:
    name: str
    call_id: str
    raw: str  # arguments as stored (usually one line of JSON)
    _pretty: str | None = None

    @property
    def pretty(self) -> str:
        """Arguments pretty-printed (computed on first use: only expanded calls need it)."""
        if self._pretty is None:
            self._pretty = inert_block(pretty_arguments(self.raw))
        return self._pretty


@dataclass
class Entry:
    """One message with the display text derived from it (computed once)."""

    message: Message
    body: str
    reasoning: str
    calls: list[Call]
    has_match: bool = False
    #: The match is only in text that is collapsed by default (tool result or arguments).
    match_collapsed_only: bool = False

    @property
    def collapsible(self) -> bool:
        return self.message.role == "tool" or bool(self.calls)


# What inert_block would change (everything it maps except "\n"): most messages have none of
# it, and a regex search is much cheaper than translating every character.
_NEEDS_INERT = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _block(text: str | None) -> str:
    if not text:
        return ""
    return inert_block(text) if _NEEDS_INERT.search(text) else text


def make_entry(message: Message, pattern: re.Pattern[str] | None) -> Entry:
    body = _block(content_text(message.content))
    reasoning = ""
    if message.role == "assistant":
        reasoning = _block(message.reasoning or message.reasoning_content or "")
    calls = []
    for call in _calls(message):
        call_id = call.get("id")
        calls.append(Call(
            name=inert_line(tool_call_name(call)),
            call_id=inert_line(call_id if isinstance(call_id, str) else ""),
            raw=inert_line(_raw_arguments(call)),
        ))
    entry = Entry(message=message, body=body, reasoning=reasoning, calls=calls)
    if pattern is not None:
        entry.has_match, entry.match_collapsed_only = match_flags(entry, pattern)
    return entry


def match_flags(entry: Entry, pattern: re.Pattern[str],
                cancelled: Callable[[], bool] = lambda: False) -> tuple[bool, bool]:
    """``(has_match, match_collapsed_only)`` of ``entry`` for ``pattern``; the body looked at a
    window at a time (``cancelled`` asked between windows: a 50 MB message is searched in
    steps a person can interrupt)."""
    message = entry.message
    in_body = first_match(pattern, entry.body, cancelled=cancelled) is not None
    in_args = any(
        pattern.search(call.name)
        or pattern.search(call.raw)
        or ("\\u" in call.raw and pattern.search(call.pretty))
        for call in entry.calls
    )
    if message.role == "tool":
        return in_body, in_body
    return in_body or in_args, in_args and not in_body


# ---------------------------------------------------------------------------- the view

class TranscriptView(KeysFollowFocus, StyleOncePerRepaint, ScrollView, can_focus=True):
    """A session's messages; a cursor marks the focused message."""

    BINDINGS = [
        Binding("down,j", "next_message", "Next message", show=False, id="transcript_next_message"),
        Binding("up,k", "previous_message", "Previous message", show=False, id="transcript_previous_message"),
        Binding("home,g", "first_message", "First message", show=False, id="transcript_first"),
        Binding("end,G", "last_message", "Last message", show=False, id="transcript_last"),
        Binding("pageup", "page_up", "Page up", show=False, id="transcript_page_up"),
        Binding("pagedown,space", "page_down", "Page down", show=False, id="transcript_page_down"),
    ]

    COMPONENT_CLASSES = {
        "transcript--cursor",
        "transcript--user",
        "transcript--assistant",
        "transcript--tool",
        "transcript--system",
        "transcript--other",
        "transcript--meta",
        "transcript--body",
        "transcript--reasoning",
        "transcript--summary",
        "transcript--call",
        "transcript--args",
        "transcript--code",
        "transcript--code-label",
        "transcript--match",
        "transcript--placeholder",
    }

    DEFAULT_CSS = """
    TranscriptView { height: 1fr; overflow-x: hidden; scrollbar-gutter: stable; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    class CursorMoved(WidgetMessage):
        """The focused message changed (``index`` into the messages)."""

        def __init__(self, widget: "TranscriptView", index: int) -> None:
            super().__init__(widget)
            self.index = index

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        show_reasoning: bool = False,
        query: str | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.show_reasoning = show_reasoning
        self.terms = query_terms(query)
        self.pattern = match_pattern(query)
        self.entries: list[Entry] | None = None
        self.expanded: set[int] = set()  # message ids
        self.match_indices: list[int] = []
        self.placeholder = "Loading transcript…"
        self._width = 0
        self._heights: list[int] = []
        self._offsets: list[int] = [0]
        #: Styled lines of the messages drawn lately (a long transcript is drawn by screenfuls).
        self._lines: LRUCache[int, list[Text]] = LRUCache(maxsize=400)
        #: Large blocks (more than LAZY_LINES lines): their layouts, and their lines drawn lately.
        self._layouts: LRUCache[int, Layout] = LRUCache(maxsize=4)
        self._large_lines: LRUCache[tuple[int, int], Text] = LRUCache(maxsize=1_000)
        self._index_by_id: dict[int, int] = {}

    # ------------------------------------------------------------------ data

    def set_messages(self, messages: Sequence[Message], *, keep: int | None = None, follow: bool = False) -> None:
        """Show ``messages``; keep the cursor on message id ``keep`` if given."""
        self.set_entries([make_entry(m, self.pattern) for m in messages], keep=keep, follow=follow)

    def set_entries(self, entries: list[Entry], *, keep: int | None = None, follow: bool = False) -> None:
        """Show prepared entries (``make_entry`` with this view's ``pattern``; a worker can
        build them off the event loop)."""
        self.entries = entries
        self._index_by_id = {entry.message.id: i for i, entry in enumerate(self.entries)}
        self.match_indices = [i for i, e in enumerate(self.entries) if e.has_match]
        live_ids = set(self._index_by_id)
        self.expanded &= live_ids
        self._relayout()
        index = self._index_by_id.get(keep) if keep is not None else None
        if follow and self.entries:
            index = len(self.entries) - 1
        self.set_reactive(TranscriptView.cursor, max(0, min(index or 0, len(self.entries) - 1)))
        if follow:
            self.scroll_to(y=self.max_scroll_y_for_total, animate=False, immediate=True, force=True)
        self.refresh()
        self.post_message(self.CursorMoved(self, self.cursor))

    def set_query(self, query: str | None) -> None:
        """Search this conversation for ``query`` (BR-19): every match is highlighted and
        ``n``/``N`` move between the messages that have one."""
        self.terms = query_terms(query)
        self.pattern = match_pattern(query)
        if self.entries is None:
            return
        entries = [make_entry(entry.message, self.pattern) for entry in self.entries]
        keep = self.current.id if self.current else None
        self.set_entries(entries, keep=keep)

    def apply_matches(self, query: str | None, flags: Sequence[tuple[bool, bool]]) -> None:
        """Show the matches of ``query`` found off the event loop (``flags``: one
        :func:`match_flags` per entry, in order): the layout does not change, so nothing is
        laid out again -- only the highlights are redrawn."""
        self.terms = query_terms(query)
        self.pattern = match_pattern(query)
        if self.entries is None:
            return
        for entry, (has_match, collapsed_only) in zip(self.entries, flags):
            entry.has_match, entry.match_collapsed_only = has_match, collapsed_only
        self.match_indices = [i for i, e in enumerate(self.entries) if e.has_match]
        self._lines.clear()
        self._large_lines.clear()
        self.refresh()

    def show_placeholder(self, text: str) -> None:
        self.entries = None
        self.placeholder = text
        self.virtual_size = Size(self._content_width(), 0)
        self.refresh()

    def index_of(self, message_id: int) -> int | None:
        return self._index_by_id.get(message_id)

    @property
    def current(self) -> Message | None:
        if not self.entries:
            return None
        return self.entries[self.cursor].message

    @property
    def total_lines(self) -> int:
        return self._offsets[-1]

    @property
    def max_scroll_y_for_total(self) -> int:
        return max(0, self.total_lines - (self.scrollable_content_region.height or self.size.height))

    def block_range(self, index: int) -> tuple[int, int]:
        """First line and line count of message ``index``."""
        return self._offsets[index], self._heights[index]

    def is_visible(self, index: int) -> bool:
        """Some line of message ``index`` is on screen."""
        if not self.entries or not (0 <= index < len(self.entries)):
            return False
        top = self.scroll_offset.y
        height = self.scrollable_content_region.height or self.size.height
        start, count = self.block_range(index)
        return start < top + height and start + count > top

    # ------------------------------------------------------------------ layout

    def _content_width(self) -> int:
        return max(10, self.scrollable_content_region.width or self.size.width or 80)

    def _pieces(self, index: int) -> list[Piece]:
        entry = self.entries[index]  # type: ignore[index]
        message = entry.message
        expanded = message.id in self.expanded
        pieces: list[Piece] = [Piece("header", "", 1, wrap=False, searchable=False)]
        if message.role == "tool":
            if not expanded:
                first = entry.body.lstrip()[:300].split("\n", 1)[0].strip()
                pieces[0] = Piece("header", first, 1, wrap=False)
            elif entry.body:
                pieces.append(Piece("body", entry.body, 3))
        else:
            if entry.reasoning and self.show_reasoning:
                # Labelled, so shown reasoning is not read as the reply.
                pieces.append(Piece("reasoning", "Reasoning:", 3, wrap=False, searchable=False))
                pieces.append(Piece("reasoning", entry.reasoning, 3))
            for kind, text, language in split_fences(entry.body or ""):
                if kind == "text":
                    pieces.append(Piece("body", text, 3))
                    continue
                # A fenced block: its language above it, the code indented under it in its
                # own colours, without the ``` lines.
                pieces.append(Piece("code-label", f"╭ {language or 'code'}", 3, wrap=False, searchable=False))
                pieces.append(Piece("code", text or " ", 5))
            if entry.calls:
                if expanded:
                    for call in entry.calls:
                        label = f"▾ {call.name}" + (f"  ({call.call_id})" if call.call_id else "")
                        pieces.append(Piece("call", label, 3, wrap=False))
                        if call.pretty:
                            pieces.append(Piece("args", call.pretty, 5))
                else:
                    names: list[str] = []
                    for call in entry.calls:
                        if call.name not in names:
                            names.append(call.name)
                    count = len(entry.calls)
                    noun = "tool call" if count == 1 else "tool calls"
                    label = f"▸ {count} {noun}: {', '.join(names)}"
                    if entry.calls[0].raw:
                        label += f"  {entry.calls[0].raw[:300]}"
                    pieces.append(Piece("summary", label, 3, wrap=False))
        pieces.append(Piece("blank", "", 0, wrap=False, searchable=False))
        return pieces

    def _height(self, index: int, width: int) -> int:
        height = 0
        for piece in self._pieces(index):
            if piece.wrap:
                height += sum(1 for _ in iter_wrap_offsets(piece.text, width - GUTTER - piece.indent))
            else:
                height += 1
        return height

    def _layout(self, index: int) -> Layout:
        """The display lines of a large block (``transcript_lines``), kept for a few blocks."""
        layout = self._layouts.get(index)
        if layout is None:
            layout = Layout(self._pieces(index))
            for number, piece in enumerate(layout.pieces):
                if piece.wrap and piece.kind not in ("header", "blank"):
                    for start, end in iter_wrap_offsets(piece.text, self._width - GUTTER - piece.indent):
                        layout.add(number, start, end)
                else:
                    layout.add(number, -1, -1)
            self._layouts.set(index, layout)
        return layout

    def is_large(self, index: int) -> bool:
        """Block ``index`` is drawn a line at a time, never whole."""
        return 0 <= index < len(self._heights) and self._heights[index] > LAZY_LINES

    def line_text(self, index: int, within: int) -> Text:
        """Display line ``within`` of block ``index``, styled."""
        if not self.is_large(index):
            lines = self.block_lines(index)
            return lines[within] if within < len(lines) else Text("")
        key = (index, within)
        cached = self._large_lines.get(key)
        if cached is not None:
            return cached
        layout = self._layout(index)
        if within >= len(layout):
            return Text("")
        piece = layout.pieces[layout.piece_of[within]]
        start, end = layout.starts[within], layout.ends[within]
        entry = self.entries[index]  # type: ignore[index]
        if piece.kind == "header":
            line = self._header(entry, piece.text, entry.message.id in self.expanded)
        elif piece.kind == "blank":
            line = Text("", end="")
        elif start < 0:
            line = Text(" " * piece.indent, no_wrap=True, overflow="ellipsis", end="")
            body = Text(piece.text, style=self._style(piece.kind), end="")
            if piece.searchable:
                self._highlight(body)
            line.append_text(body)
        else:
            body = Text(piece.text[start:end].rstrip(" "), style=self._style(piece.kind), end="")
            if piece.searchable:
                spans = spans_near(self.pattern, piece.text, start, end)
                if spans:
                    style = self._style("match")
                    for s, e in spans:
                        body.stylize(style, s - start, min(e, start + len(body.plain)) - start)
            line = Text(" " * piece.indent, end="")
            line.append_text(body)
        self._large_lines.set(key, line)
        return line

    def notify_style_update(self) -> None:
        """The theme (or any rule) changed: cached lines carry the old colours."""
        super().notify_style_update()
        lines = getattr(self, "_lines", None)
        if lines is not None:
            lines.clear()
            self._large_lines.clear()
            self.refresh()

    def _relayout(self) -> None:
        width = self._content_width()
        self._width = width
        self._lines.clear()
        self._layouts.clear()
        self._large_lines.clear()
        entries = self.entries or []
        self._heights = [self._height(i, width) for i in range(len(entries))]
        self._offsets = [0, *accumulate(self._heights)]
        self.virtual_size = Size(width, self._offsets[-1])

    def _relayout_one(self, index: int) -> None:
        self._lines.discard(index)
        self._layouts.discard(index)
        self._large_lines.clear()
        self._heights[index] = self._height(index, self._width)
        self._offsets = [0, *accumulate(self._heights)]
        self.virtual_size = Size(self._width, self._offsets[-1])

    def on_resize(self) -> None:
        if self.entries is not None and self._content_width() != self._width:
            anchor = self.cursor
            self._relayout()
            if self.is_visible(anchor) is False:
                self.scroll_to_message(anchor)
        elif self.entries is None:
            self.virtual_size = Size(self._content_width(), 0)

    # ------------------------------------------------------------------ drawing

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"transcript--{name}", partial=True)

    def _role_class(self, role: str) -> str:
        return role if role in ("user", "assistant", "tool", "system") else "other"

    def _header(self, entry: Entry, summary: str, expanded: bool) -> Text:
        message = entry.message
        role = message.role
        role_style = self._style(self._role_class(role))
        meta = self._style("meta")
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        glyph = ROLE_GLYPHS.get(role, "○")
        if entry.collapsible and role == "tool":
            text.append("▾ " if expanded else "▸ ", style=role_style)
        text.append(f"{glyph} ", style=role_style)
        name = ROLE_NAMES.get(role) or inert_line(role)
        if role == "tool":
            tool = inert_line(message.tool_name) or "result"
            name = f"{tool} result"
        text.append(name, style=role_style + Style(bold=True))
        when = _clock_time(message.timestamp)
        relative = relative_time(message.timestamp, now=self.clock())
        details = [when] if repeats_date(relative, when) else [when, relative]
        if message.token_count:
            details.append(f"{message.token_count:,} tokens")
        if role == "tool" and not expanded:
            lines = entry.body.count("\n") + 1 if entry.body else 0
            details.append(f"{lines} line{'s' if lines != 1 else ''}")
        if entry.reasoning and not self.show_reasoning:
            details.append("reasoning hidden")
        # UC-3: rows the agent's chat does not show as turns are said to be what they are.
        if message.compacted:
            details.append("compaction history")
        if message.display_kind == "hidden":
            details.append("scaffolding, not shown in chat")
        text.append("  " + " · ".join(details), style=meta)
        text.append(f"  #{message.id}", style=meta)
        if summary:
            text.append("  ")
            piece = Text(summary, style=self._style("summary"), end="")
            self._highlight(piece)
            text.append_text(piece)
        return text

    def _highlight(self, text: Text) -> bool:
        spans = match_spans(self.pattern, text.plain)
        if spans:
            style = self._style("match")
            for start, end in spans:
                text.stylize(style, start, end)
        return bool(spans)

    def block_lines(self, index: int) -> list[Text]:
        """The styled display lines of message ``index`` (cached)."""
        cached = self._lines.get(index)
        if cached is not None:
            return cached
        entry = self.entries[index]  # type: ignore[index]
        expanded = entry.message.id in self.expanded
        width = self._width
        lines: list[Text] = []
        for piece in self._pieces(index):
            pad = " " * piece.indent
            if piece.kind == "header":
                lines.append(self._header(entry, piece.text, expanded))
                continue
            if piece.kind == "blank":
                lines.append(Text("", end=""))
                continue
            style = self._style(piece.kind)
            if not piece.wrap:
                line = Text(pad, no_wrap=True, overflow="ellipsis", end="")
                body = Text(piece.text, style=style, end="")
                if piece.searchable:
                    self._highlight(body)
                line.append_text(body)
                lines.append(line)
                continue
            # One Text per display line, cut from the string: slicing one big Text per line
            # costs O(length) each, i.e. minutes for a 1 MB message wrapped to ~10k lines.
            spans = match_spans(self.pattern, piece.text) if piece.searchable else []
            match_style = self._style("match") if spans else None
            first = 0  # the first span that may still touch a later line
            for start, end in wrap_offsets(piece.text, width - GUTTER - piece.indent):
                # The spaces after the last word belong to this line but may lie past the
                # edge: drawn, they would make the row too long and its last letter would be
                # cut for an ellipsis ("13 matche…"). The visible text always fits.
                body = Text(piece.text[start:end].rstrip(" "), style=style, end="")
                while first < len(spans) and spans[first][1] <= start:
                    first += 1
                k = first
                while k < len(spans) and spans[k][0] < end:
                    body.stylize(match_style, max(spans[k][0], start) - start, min(spans[k][1], end) - start)
                    k += 1
                line = Text(pad, end="")
                line.append_text(body)
                lines.append(line)
        self._lines.set(index, lines)
        return lines

    def render_line(self, y: int) -> Strip:
        width = self._content_width()
        base = self.base_style
        if self.entries is None or not self.entries:
            if y == 1:
                text = Text("  " + (self.placeholder if self.entries is None else "No messages in this session."),
                            style=self._style("placeholder"))
                return self._strip(text, width, base)
            return Strip.blank(width, base)
        line_no = self.scroll_offset.y + y
        if line_no >= self._offsets[-1]:
            return Strip.blank(width, base)
        index = bisect_right(self._offsets, line_no) - 1
        within = line_no - self._offsets[index]
        text = self.line_text(index, within)
        on_cursor = index == self.cursor and within < self._heights[index] - 1  # not the blank separator
        gutter = Text("▌" if on_cursor else " ", style=self._style("cursor") if on_cursor else "", end="")
        style = base
        row = Text(no_wrap=True, overflow="crop", end="")
        row.append_text(gutter)
        row.append_text(text)
        return self._strip(row, width, style)

    def _strip(self, text: Text, width: int, style: Style) -> Strip:
        return text_strip(text, width, self.app.console, style)

    # ------------------------------------------------------------------ cursor and scrolling

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self.post_message(self.CursorMoved(self, new))

    def move_to(self, index: int, *, anchor: str = "nearest") -> None:
        if not self.entries:
            return
        index = max(0, min(len(self.entries) - 1, index))
        self.cursor = index
        self.scroll_to_message(index, anchor=anchor)

    def scroll_to_message(self, index: int, *, anchor: str = "nearest", line: int = 0) -> None:
        """Bring message ``index`` (its ``line``-th display line) into view.

        ``anchor="nearest"`` scrolls as little as possible; ``"top"`` puts the message a
        quarter down the view (used when jumping to a search hit) — or, when the message is
        too tall for that, its ``line`` a quarter down, without scrolling past its start.
        """
        if not self.entries:
            return
        height = self.scrollable_content_region.height or self.size.height or 1
        start, count = self.block_range(index)
        target = start + min(line, max(0, count - 1))
        top = self.scroll_offset.y
        if anchor == "top":
            margin = height // 4
            if count <= height - margin:
                y = start - margin
            else:
                y = max(start, target - margin)
        elif target < top:
            y = target
        elif start + min(count, height) > top + height:
            y = start + min(count, height) - height
        else:
            return
        self.scroll_to(y=max(0, y), animate=False, immediate=True, force=True)

    def first_match_line(self, index: int) -> int:
        """Display line (within the block) of the first highlighted match, else 0."""
        if self.pattern is None:
            return 0
        if self.is_large(index):
            # The first match's offset, then its line: no line of the block is drawn for it.
            layout = self._layout(index)
            for number, piece in enumerate(layout.pieces):
                if not piece.searchable or not piece.text:
                    continue
                found = first_match(self.pattern, piece.text)
                if found is not None:
                    return layout.line_at(number, found[0])
            return 0
        for number, line in enumerate(self.block_lines(index)):
            if match_spans(self.pattern, line.plain):
                return number
        return 0

    def action_next_message(self) -> None:
        self.move_to(self.cursor + 1)

    def action_previous_message(self) -> None:
        self.move_to(self.cursor - 1)

    def action_first_message(self) -> None:
        self.move_to(0)

    def action_last_message(self) -> None:
        if self.entries:
            self.move_to(len(self.entries) - 1)
            self.scroll_to(y=self.max_scroll_y_for_total, animate=False, immediate=True, force=True)

    def _page(self, direction: int) -> None:
        if not self.entries:
            return
        height = self.scrollable_content_region.height or 1
        y = max(0, min(self.max_scroll_y_for_total, self.scroll_offset.y + direction * max(1, height - 1)))
        self.scroll_to(y=y, animate=False, immediate=True, force=True)
        index = bisect_right(self._offsets, y) - 1
        if direction > 0 and y >= self.max_scroll_y_for_total:
            index = len(self.entries) - 1
        self.cursor = max(0, min(len(self.entries) - 1, index))

    def action_page_up(self) -> None:
        self._page(-1)

    def action_page_down(self) -> None:
        self._page(1)

    def on_click(self, event: Click) -> None:
        if not self.entries:
            return
        line_no = self.scroll_offset.y + event.y
        if 0 <= line_no < self.total_lines:
            index = bisect_right(self._offsets, line_no) - 1
            if index == self.cursor and event.chain >= 2:
                self.toggle(index)
            self.cursor = index

    # ------------------------------------------------------------------ expand / reasoning / matches

    def toggle(self, index: int | None = None) -> bool:
        """Expand or collapse the tool calls/result of a message; False if it has none."""
        if not self.entries:
            return False
        index = self.cursor if index is None else index
        entry = self.entries[index]
        if not entry.collapsible:
            return False
        self.expanded ^= {entry.message.id}
        self._relayout_one(index)
        self.scroll_to_message(index)
        self.refresh()
        return True

    def expand(self, index: int) -> None:
        entry = self.entries[index]  # type: ignore[index]
        if entry.collapsible and entry.message.id not in self.expanded:
            self.expanded.add(entry.message.id)
            self._relayout_one(index)

    def toggle_all(self) -> bool:
        """Expand every collapsible message, or collapse them all if all are expanded.

        Returns True when the result is "all expanded".
        """
        if not self.entries:
            return False
        collapsible = {e.message.id for e in self.entries if e.collapsible}
        expand = not collapsible <= self.expanded
        self.expanded = collapsible if expand else set()
        self._keep_cursor_while(self._relayout)
        return expand

    def set_show_reasoning(self, show: bool) -> None:
        self.show_reasoning = show
        if self.entries is not None:
            self._keep_cursor_while(self._relayout)

    def _keep_cursor_while(self, change: Callable[[], None]) -> None:
        index = self.cursor
        start, _count = self.block_range(index) if self.entries else (0, 0)
        screen_row = start - self.scroll_offset.y
        change()
        if self.entries:
            start, _count = self.block_range(index)
            self.scroll_to(y=max(0, start - max(0, screen_row)), animate=False, immediate=True, force=True)
        self.refresh()

    def jump_to_match(self, direction: int) -> tuple[int, int] | None:
        """Move the cursor to the next (``1``) or previous (``-1``) message with a match.

        Wraps around. Returns ``(position, count)`` (1-based) or None without matches.
        """
        if not self.match_indices or not self.entries:
            return None
        matches = self.match_indices
        if direction > 0:
            position = bisect_right(matches, self.cursor)
            if position >= len(matches):
                position = 0
        else:
            position = bisect_right(matches, self.cursor - 1) - 1
            if position < 0:
                position = len(matches) - 1
        self.focus_match(matches[position])
        return position + 1, len(matches)

    def focus_match(self, index: int) -> None:
        """Put the cursor on message ``index`` and show its first match."""
        entry = self.entries[index]  # type: ignore[index]
        if entry.match_collapsed_only:
            self.expand(index)
        self.cursor = index
        self.scroll_to_message(index, anchor="top", line=self.first_match_line(index))

    def match_position(self) -> int | None:
        """1-based number of the match at the cursor, if the cursor is on one."""
        try:
            return self.match_indices.index(self.cursor) + 1
        except ValueError:
            return None


def _clock_time(ts: float | None) -> str:
    if not ts:
        return "?"
    try:
        return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return "?"
