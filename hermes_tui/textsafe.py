"""Make user content inert and legible before it reaches the terminal.

Message text and titles are data. Besides never interpolating them into markup (we build
``rich.text.Text`` from them), control characters must not reach the terminal: an ESC starts
an ANSI or OSC sequence (colours, title changes, OSC 52 clipboard writes), and bidi overrides
can make text read differently from what it is. Each dangerous code point is replaced by one
visible character, so lengths (and match spans computed on the original) stay valid.
"""

from __future__ import annotations

# The list of dangerous code points and what each becomes is hermes_state's, shared with the
# CLI and the exports: one table, so a screen and a command never disagree.
from hermes_state.inert_text import has_unsafe, inert_block, inert_line

__all__ = ["InertHighlighter", "fit_cells", "has_unsafe", "home_path", "inert_block", "inert_line"]


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
