"""Make user content inert and legible before it reaches the terminal.

Message text and titles are data. Besides never interpolating them into markup (we build
``rich.text.Text`` from them), control characters must not reach the terminal: an ESC starts
an ANSI or OSC sequence (colours, title changes, OSC 52 clipboard writes), and bidi overrides
can make text read differently from what it is. Each dangerous code point is replaced by one
visible character, so lengths (and match spans computed on the original) stay valid.
"""

from __future__ import annotations

import re

_C0_PICTURES = {cp: chr(0x2400 + cp) for cp in range(0x20)}  # ␀ … ␟
_C0_PICTURES[0x7F] = "\u2421"  # ␡
_REPLACEMENT = "\ufffd"

_TABLE: dict[int, str] = dict(_C0_PICTURES)
for cp in range(0x80, 0xA0):  # C1 controls (CSI, OSC, ST … as single bytes)
    _TABLE[cp] = _REPLACEMENT
for cp in list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A)) + [0x200E, 0x200F, 0x061C]:
    _TABLE[cp] = _REPLACEMENT  # bidi embeddings, overrides, isolates and marks

_SINGLE_LINE = dict(_TABLE)
_SINGLE_LINE[0x0A] = " "
_SINGLE_LINE[0x0D] = " "
_SINGLE_LINE[0x09] = " "

_MULTI_LINE = dict(_TABLE)
_MULTI_LINE[0x0A] = "\n"  # keep line structure
_MULTI_LINE[0x09] = " "  # one space: keeps match span offsets valid
_MULTI_LINE[0x0D] = " "

_UNSAFE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def inert_line(text: str | None) -> str:
    """One line of display text: newlines and tabs become spaces, controls visible."""
    if not text:
        return ""
    return text.translate(_SINGLE_LINE)


def inert_block(text: str | None) -> str:
    """Multi-line display text: newlines kept, every other control made visible."""
    if not text:
        return ""
    return text.translate(_MULTI_LINE)


def has_unsafe(text: str) -> bool:
    return bool(_UNSAFE_RE.search(text))


class InertHighlighter:
    """A Rich highlighter for ``Input`` widgets: shows the value through :func:`inert_line`.

    An ``Input`` holding a title (TI-1 keeps C1 controls and bidi overrides) or pasted text
    would otherwise draw those code points raw. The value itself is unchanged — only what is
    drawn — and one code point maps to one, so cursor positions stay valid.
    """

    def __call__(self, text):
        from rich.text import Text

        if isinstance(text, str):
            text = Text(text)
        out = text.copy()
        if has_unsafe(out.plain):
            out.plain = inert_line(out.plain)
        return out


def fit_cells(text: str, width: int, pad: int | None = None, ellipsis: str = "…") -> str:
    """``text`` cut to ``width`` terminal cells (ending in ``ellipsis`` when cut), then padded
    with spaces to ``pad`` cells. Cells, not code points: a CJK character takes two, so
    columns line up whatever the script."""
    if text.isascii() and text.isprintable() and ellipsis == "…":
        # One cell a character (and "…" one): as Rich measures it, without its ~40 us a call,
        # most of a long listing's time.
        if len(text) > width:
            text = text[:max(0, width - 1)].rstrip() + ellipsis
            if len(text) > width:  # (width 0)
                text = ""
        return text + " " * max(0, pad - len(text)) if pad is not None else text
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) > width:
        text = set_cell_size(text, max(0, width - cell_len(ellipsis))).rstrip() + ellipsis
        if cell_len(text) > width:  # a wide character could not be halved
            text = set_cell_size(text, width)
    if pad is not None:
        text += " " * max(0, pad - cell_len(text))
    return text


def home_path(path: str) -> str:
    """A path as people read it: the home directory as ``~`` (the path is data: made inert)."""
    import os

    text = inert_line(path)
    home = os.path.expanduser("~")
    if home and home != "/" and (text == home or text.startswith(home + "/")):
        return "~" + text[len(home):]
    return text
