"""The "Previous Conversation" card drawn from a :class:`~hermes_state.recap.Recap` (RC-8).

The recap itself is data built in ``hermes_state.recap``; everything a person sees of it —
labels, indents, dimming, colours (:class:`RecapTheme`), the Rich panel — lives here, in the
UI. Rich only, no textual: the renderers are plain functions, usable (and tested) without an
app, and ``widgets/recap_view.py`` puts the panel on screen.

Rendering safety: message text is untrusted. It is appended to ``rich.text.Text`` as
data, never formatted into a markup string, so ``[bold]`` or ``[@click=app.quit]`` shows
up literally. Terminal control characters are made inert by the one table every screen
uses (:func:`hermes_state.inert_text.inert_block`): ESC is
``␛``, BEL ``␇``, NUL ``␀``, DEL ``␡``, a C1 or bidi control ``�``, tab and a lone CR one
space each -- what the transcript, the list and the recap's own header show for the same
text. (Not ``cat -v``'s caret notation: ``^[`` reads like text, and a message may hold it.)
"""

from __future__ import annotations

import re
from typing import Optional

from pydantic import BaseModel, ConfigDict, field_validator
from rich.errors import StyleSyntaxError
from rich.panel import Panel
from rich.style import Style
from rich.cells import cell_len
from rich.text import Text

from hermes_state.inert_text import inert_block
from hermes_state.recap import Recap

__all__ = [
    "RECAP_TITLE",
    "RecapTheme",
    "render_recap_text",
    "render_recap_panel",
]

RECAP_TITLE = "Previous Conversation"


class RecapTheme(BaseModel):
    """Colours for the rendered recap (RC-8 defaults). Any Rich style string is accepted."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    user: str = "#DAA520"  # goldenrod
    assistant: str = "#8FBC8F"  # dark sea green
    border: str = "#8B8682"
    text: str = "#FFF8DC"
    #: Earlier messages: RC-8's ``dim`` on dark themes; on light ones a colour that keeps
    #: 4.5:1 (``dim`` halves the contrast there, BR-18).
    earlier: str = "dim"

    @field_validator("user", "assistant", "border", "text", "earlier")
    @classmethod
    def _valid_style(cls, value: str) -> str:
        # Fail at configuration time, not in the middle of drawing a screen.
        try:
            Style.parse(value)
        except StyleSyntaxError as error:
            raise ValueError(f"not a Rich style/colour: {value!r} ({error})") from None
        return value


_USER_LABEL = "  ● You: "
_ASSISTANT_LABEL = "  ◆ Hermes: "
_USER_INDENT = " " * 9
_ASSISTANT_INDENT = " " * 12

def _make_inert(text: str) -> str:
    """Message text as every screen shows it (see module docstring); a CRLF line end is a
    line end, as the recap's lines are laid out here."""
    return inert_block(text.replace("\r\n", "\n"))


def _wrapped_rows(body: Text, width: Optional[int]) -> list[Text]:
    """Split a body into display rows: at explicit newlines, and at ``width`` if given."""
    if width is None:
        return body.split("\n", allow_blank=True) if body.plain else []
    if not body.plain:
        return []
    if _CJK.search(body.plain):
        return _wrapped_cjk(body, max(1, width))
    rows = list(body.wrap(_wrap_console(), max(1, width), overflow="fold"))
    for row in rows:
        row.rstrip()  # word wrapping leaves the breaking space at the end of a row
    return rows


#: Scripts written without spaces between words: a line may break between any two of these
#: characters (Rich wraps at spaces only, so a Chinese or Japanese sentence jumped whole to
#: the next row, leaving the row before it half empty, then was folded).
_CJK_CHARS = "\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
_CJK = re.compile(f"[{_CJK_CHARS}]")
_UNITS = re.compile(f"[{_CJK_CHARS}]\\s*|[^\\s{_CJK_CHARS}]+\\s*|\\s+")


def _wrapped_cjk(body: Text, width: int) -> list[Text]:
    """Rows of ``body`` (explicit newlines kept) no wider than ``width`` cells, broken at
    spaces or between two CJK characters; a word wider than a row is folded."""
    rows: list[Text] = []
    for line in body.split("\n", allow_blank=True):
        plain = line.plain
        breaks: list[int] = []
        used = 0
        for unit in _UNITS.finditer(plain):
            start, text = unit.start(), unit.group()
            word = text.rstrip()
            need = cell_len(word)
            if used and used + need > width:
                breaks.append(start)
                used = 0
            while need > width:  # fold a word wider than a row
                cut, cells = start, 0
                while cut < start + len(word) and cells + cell_len(plain[cut]) <= width:
                    cells += cell_len(plain[cut])
                    cut += 1
                cut = max(cut, start + 1)
                breaks.append(cut)
                word, start = plain[cut:start + len(word)], cut
                need = cell_len(word)
            used += cell_len(plain[start:unit.end()])
        pieces = line.divide(breaks) if breaks else [line]
        for piece in pieces:
            piece.rstrip()
            rows.append(piece)
    return rows


_WRAP_CONSOLE = None


def _wrap_console():
    # Text.wrap wants a Console only for justification, which we do not use; one quiet
    # instance is enough and is created on first use, not at import time.
    global _WRAP_CONSOLE
    if _WRAP_CONSOLE is None:
        import io

        from rich.console import Console

        _WRAP_CONSOLE = Console(file=io.StringIO(), color_system=None, width=80)
    return _WRAP_CONSOLE


def render_recap_text(
    recap: Recap, theme: Optional[RecapTheme] = None, *, width: Optional[int] = None
) -> Text:
    """The recap body as a Rich ``Text`` (RC-8), built from data, never from markup.

    Layout: optional ``  ... N earlier messages ...`` line plus a blank line (dim
    italic); then one block per entry, label then text, continuation lines indented
    under the text (9 spaces for users, 12 for assistants), no blank line between
    entries. Everything is dim except the ``assistant_last`` entry, whose label is bold
    and whose text has normal weight.

    ``width`` (cells available for the whole line) makes the text pre-wrap long lines
    so that wrapped rows also hang under the text column instead of falling back to
    column 0; without it only explicit newlines are indented and the consumer wraps.
    """
    theme = theme or RecapTheme()
    out = Text(style=theme.text, end="")

    if recap.skipped > 0:
        out.append(f"  ... {recap.skipped} earlier messages ...\n\n", style=f"{theme.earlier} italic")

    for position, entry in enumerate(recap.entries):
        if position:
            out.append("\n")
        if entry.kind == "user":
            label, indent, colour = _USER_LABEL, _USER_INDENT, theme.user
        else:
            label, indent, colour = _ASSISTANT_LABEL, _ASSISTANT_INDENT, theme.assistant
        last = entry.kind == "assistant_last"
        out.append(label, style=f"bold {colour}" if last else (f"dim {colour}" if theme.earlier == "dim" else colour))
        body_style = "" if last else theme.earlier
        body = Text(_make_inert(entry.text), style=body_style, end="")
        rows = _wrapped_rows(body, None if width is None else width - len(indent))
        for row_no, row in enumerate(rows):
            if row_no:
                out.append("\n")
                out.append(indent, style=body_style)
            out.append_text(row)
    return out


class _RecapBody:
    """Panel content that wraps to the width it is given, keeping the hanging indent."""

    def __init__(self, recap: Recap, theme: RecapTheme) -> None:
        self.recap = recap
        self.theme = theme

    def __rich_console__(self, console, options):
        yield render_recap_text(self.recap, self.theme, width=options.max_width)

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement.get(console, options, render_recap_text(self.recap, self.theme))


def render_recap_panel(recap: Recap, theme: Optional[RecapTheme] = None) -> Panel:
    """The recap as a Rich ``Panel`` titled ``Previous Conversation`` (RC-8)."""
    theme = theme or RecapTheme()
    return Panel(
        _RecapBody(recap, theme),
        title=Text(RECAP_TITLE, style=f"bold {theme.text}"),
        border_style=theme.border,
        style=theme.text,
    )
