"""Very large messages in the transcript: laid out once, drawn a line at a time, searched in
bounded steps.

A 50 MB message (a pasted log, a tool's dump) is ~600,000 display lines. The view used to
build a styled ``Text`` for every line of a message as soon as one of them was on screen, and
again to find the line of its first match: 1.8 GB, and 20 s in which Esc did nothing. Here a
block's layout is three compact arrays (piece, start, end of each display line: ~20 bytes a
line), a line's ``Text`` is made when it is drawn, and a match is looked for a window at a time
(:data:`SEARCH_STEP` characters), so a search can be abandoned between windows.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from typing import Callable, Iterator

#: A block with more display lines than this is drawn line by line.
LAZY_LINES = 2_000
#: Characters looked at in one step of a search (a step is one regex call).
SEARCH_STEP = 1 << 20
#: Overlap of consecutive windows: a match longer than this across a window's edge may be missed.
OVERLAP = 4_096
#: Characters on either side of a drawn line looked at for its highlights.
MARGIN = 512


class Layout:
    """The display lines of one block: for each, the index of its piece and its ``start`` /
    ``end`` in the piece's text (``-1`` for a piece drawn as one line)."""

    __slots__ = ("pieces", "piece_of", "starts", "ends")

    def __init__(self, pieces: list) -> None:
        self.pieces = pieces
        self.piece_of = array("i")
        self.starts = array("q")
        self.ends = array("q")

    def add(self, piece: int, start: int, end: int) -> None:
        self.piece_of.append(piece)
        self.starts.append(start)
        self.ends.append(end)

    def __len__(self) -> int:
        return len(self.piece_of)

    def line_at(self, piece: int, offset: int) -> int:
        """The display line of ``piece`` holding character ``offset`` of its text."""
        first = _first_line_of(self.piece_of, piece)
        last = first
        while last < len(self.piece_of) and self.piece_of[last] == piece:
            last += 1
        if self.starts[first] < 0:
            return first
        return max(first, bisect_right(self.starts, offset, first, last) - 1)


def _first_line_of(piece_of: array, piece: int) -> int:
    # Pieces come in order: the first line of ``piece`` is where the numbers reach it.
    return bisect_right(piece_of, piece - 1)


def first_match(pattern: re.Pattern[str], text: str, *, cancelled: Callable[[], bool] = lambda: False,
                start: int = 0) -> tuple[int, int] | None:
    """The first match of ``pattern`` in ``text`` at or after ``start``, looked for one window
    of :data:`SEARCH_STEP` characters at a time (``cancelled`` asked between windows: True
    abandons the search, None is returned). A window's regex sees the text before it (``pos``)
    but not after it, so a match ending in its last :data:`OVERLAP` characters (perhaps a word
    cut short) is only taken from the next window."""
    length = len(text)
    position = start
    while position < length:
        if cancelled():
            return None
        stop = min(length, position + SEARCH_STEP + OVERLAP)
        for match in pattern.finditer(text, position, stop):
            if match.end() == match.start():
                continue
            if stop < length and match.end() > position + SEARCH_STEP:
                break  # near the window's end: the next window decides
            return match.start(), match.end()
        position += SEARCH_STEP
    return None


def spans_near(pattern: re.Pattern[str] | None, text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Match spans of ``pattern`` within ``text[start:end]`` (offsets in ``text``), looked for
    in a window :data:`MARGIN` characters wider on each side."""
    if pattern is None or start >= end:
        return []
    lo, hi = max(0, start - MARGIN), min(len(text), end + MARGIN)
    out = []
    for match in pattern.finditer(text, lo, hi):
        s, e = match.span()
        if e <= s or e <= start or s >= end:
            continue
        if hi < len(text) and e > hi - MARGIN // 2 and e > end:
            continue
        out.append((max(s, start), min(e, end)))
    return out


def iter_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, line)`` of each line of ``text``, one copy at a time (``split`` made the
    list of every line of a 50 MB message at once)."""
    start = 0
    while True:
        newline = text.find("\n", start)
        if newline < 0:
            yield start, text[start:]
            return
        yield start, text[start:newline]
        start = newline + 1
