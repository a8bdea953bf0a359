"""Resume recap: the "Previous Conversation" card, as data (SPEC §12, RC-1..RC-10).

``build_recap`` is a pure function over the conversation dicts returned by
``SessionDB.get_messages_as_conversation`` (MS-5); it never touches the database.
The Rich renderers at the bottom (RC-8) are shared by the CLI and the TUI. They depend
on Rich only — this module must never import textual (hermes_state is UI-free).

Rendering safety: message text is untrusted. It is appended to ``rich.text.Text`` as
data, never formatted into a markup string, so ``[bold]`` or ``[@click=app.quit]`` shows
up literally. Terminal control characters are made inert before display (see
``_make_inert``): ESC and the other C0 controls except ``\\n``/``\\t``, DEL and the C1
range are replaced by ``cat -v``-style caret notation (ESC -> ``^[``, DEL -> ``^?``,
CSI U+009B -> ``M-^[``). We chose caret notation over U+FFFD because it is plain ASCII
(one cell per character in every terminal) and still tells the reader *which* control
character the message contained. Bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E/F,
U+061C), which reorder the text a reader sees, become U+FFFD.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rich.errors import StyleSyntaxError
from rich.panel import Panel
from rich.style import Style
from rich.text import Text

__all__ = [
    "RecapConfig",
    "RecapEntry",
    "Recap",
    "RecapTheme",
    "build_recap",
    "strip_reasoning",
    "render_recap_text",
    "render_recap_panel",
    "RECAP_TITLE",
]

RECAP_TITLE = "Previous Conversation"

RecapKind = Literal["user", "assistant", "assistant_last"]


# --------------------------------------------------------------------------- models


class RecapConfig(BaseModel):
    """Recap settings (RC-9 mode, RC-10 limits). Defaults reproduce upstream."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["full", "minimal"] = "full"
    exchanges: int = Field(default=10, ge=1)
    user_chars: int = Field(default=300, ge=1)
    assistant_chars: int = Field(default=200, ge=1)
    assistant_lines: int = Field(default=3, ge=1)
    skip_tool_only: bool = False


class RecapEntry(BaseModel):
    """One displayable line group of the recap (RC-1)."""

    model_config = ConfigDict(frozen=True)

    kind: RecapKind
    text: str


class Recap(BaseModel):
    """The recap as data: the kept window of entries plus how many were cut (RC-6)."""

    model_config = ConfigDict(frozen=True)

    entries: list[RecapEntry]
    skipped: int = Field(default=0, ge=0)


class RecapTheme(BaseModel):
    """Colours for the rendered recap (RC-8 defaults). Any Rich style string is accepted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    user: str = "#DAA520"  # goldenrod
    assistant: str = "#8FBC8F"  # dark sea green
    border: str = "#8B8682"
    text: str = "#FFF8DC"

    @field_validator("user", "assistant", "border", "text")
    @classmethod
    def _valid_style(cls, value: str) -> str:
        # Fail at configuration time, not in the middle of drawing a screen.
        try:
            Style.parse(value)
        except StyleSyntaxError as error:
            raise ValueError(f"not a Rich style/colour: {value!r} ({error})") from None
        return value


# ------------------------------------------------------------- reasoning stripping (RC-5)

_REASONING_TAGS = ("REASONING_SCRATCHPAD", "think", "thinking", "reasoning", "thought")
_TOOL_MARKUP_TAGS = ("tool_call", "tool_calls", "tool_result", "function_call", "function_calls")

_FLAGS = re.IGNORECASE | re.DOTALL


def _open(tag: str) -> str:
    # `<tag>` or `<tag attr=...>`; `(?:\s[^>]*)?` keeps `<think>` from matching `<thinking>`.
    return rf"<{tag}(?:\s[^>]*)?>"


_REASONING_PATTERNS = [
    (
        re.compile(rf"{_open(tag)}.*?</{tag}\s*>\s*", _FLAGS),  # closed pair + trailing ws
        re.compile(rf"{_open(tag)}.*\Z", _FLAGS),  # unterminated: drop the rest
        re.compile(rf"</{tag}\s*>\s*", _FLAGS),  # orphan closer + trailing ws
    )
    for tag in _REASONING_TAGS
]

_TOOL_PAIR_PATTERNS = [
    re.compile(rf"{_open(tag)}.*?</{tag}\s*>\s*", _FLAGS) for tag in _TOOL_MARKUP_TAGS
]

# `<function name=...>...</function>` only where a leaked call plausibly starts: at the start
# of a line or right after sentence punctuation. The prefix is captured and put back so
# "Done. <function ...>...</function> Next" keeps its space.
_FUNCTION_BLOCK = re.compile(
    r"(^[ \t]*|[.!?:][ \t]*)<function\s+name\s*=[^>]*>.*?</function\s*>\s*",
    _FLAGS | re.MULTILINE,
)

# Unlike orphan reasoning closers, RC-5 does not say the whitespace after a stray tool
# closer goes, so it stays.
_STRAY_TOOL_CLOSERS = re.compile(
    r"</(?:%s|function)\s*>" % "|".join(_TOOL_MARKUP_TAGS), re.IGNORECASE
)


def strip_reasoning(text: str) -> str:
    """Remove reasoning blocks and leaked tool-call markup from assistant text (RC-5).

    For each reasoning tag (REASONING_SCRATCHPAD, think, thinking, reasoning, thought;
    case-insensitive), in that order: closed pairs go with the whitespace after them, then
    an unterminated opening tag and everything after it, then orphan closing tags with the
    whitespace after them. Then leaked tool-call blocks (tool_call, tool_calls, tool_result,
    function_call, function_calls — closed pairs only, as with reasoning), ``<function
    name=...>`` blocks at a line start or after ``. ! ? :``, and stray closing tags of all of
    those. The result is *not* stripped; callers strip.

    >>> strip_reasoning("<think>plan</think>Answer")
    'Answer'
    >>> strip_reasoning("ok</think> done")
    'okdone'
    """
    if not text:
        return ""
    for pair, unterminated, orphan in _REASONING_PATTERNS:
        text = pair.sub("", text)
        text = unterminated.sub("", text)
        text = orphan.sub("", text)
    for pair in _TOOL_PAIR_PATTERNS:
        text = pair.sub("", text)
    text = _FUNCTION_BLOCK.sub(r"\1", text)
    text = _STRAY_TOOL_CLOSERS.sub("", text)
    return text


# ------------------------------------------------------------------ building (RC-1..RC-7)

_JSON_CONTENT_PREFIX = "\x00json:"
_IMAGE_PART_TYPES = frozenset({"image_url", "input_image", "image"})


def _content_text(content: Any) -> str:
    """Message content as display text (RC-3): None -> "", multimodal list -> joined parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        # Newer upstream stores multimodal content as "\x00json:" + JSON (MS-1); decode it
        # when it is well-formed, otherwise show the string as it is.
        if content.startswith(_JSON_CONTENT_PREFIX):
            try:
                decoded = json.loads(content[len(_JSON_CONTENT_PREFIX):])
            except ValueError:
                return content
            if isinstance(decoded, list):
                return _parts_text(decoded)
            if isinstance(decoded, str):
                return decoded
        return content
    if isinstance(content, list):
        return _parts_text(content)
    return str(content)


def _parts_text(parts: list[Any]) -> str:
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, str):
            piece = part
        elif isinstance(part, dict):
            if part.get("type") in _IMAGE_PART_TYPES:
                piece = "[image]"
            else:
                text = part.get("text")
                piece = text if isinstance(text, str) else ""
        else:
            piece = ""
        if piece:
            pieces.append(piece)
    return " ".join(pieces)


def _tool_summary(tool_calls: Any) -> str:
    """``[n tool call(s): names]`` (RC-4 step 3), or "" when there are no calls."""
    if not tool_calls:
        return ""
    calls = tool_calls if isinstance(tool_calls, list) else [tool_calls]
    names: list[str] = []
    for call in calls:
        name = None
        if isinstance(call, dict):
            function = call.get("function")
            if isinstance(function, dict):
                name = function.get("name")
            if not name:
                # Tolerate the flat `{"name": ...}` shape some providers emit.
                name = call.get("name")
        name = name if isinstance(name, str) and name else "unknown"
        if name not in names:
            names.append(name)
    n = len(calls)
    names_str = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    noun = "tool call" if n == 1 else "tool calls"
    return f"[{n} {noun}: {names_str}]"


def _truncate_chars(text: str, limit: int) -> str:
    return text[:limit] + "..." if len(text) > limit else text


def _join(*pieces: str) -> str:
    return " ".join(piece for piece in pieces if piece)


class _Draft:
    """An entry before windowing; assistants keep their untruncated text for RC-7."""

    __slots__ = ("kind", "text", "full_text", "tool_only")

    def __init__(self, kind: str, text: str, full_text: str = "", tool_only: bool = False):
        self.kind = kind
        self.text = text
        self.full_text = full_text
        self.tool_only = tool_only


def _user_draft(message: dict, config: RecapConfig) -> _Draft:
    text = _content_text(message.get("content"))
    return _Draft("user", _truncate_chars(text, config.user_chars))


def _assistant_draft(message: dict, config: RecapConfig) -> Optional[_Draft]:
    full = strip_reasoning(_content_text(message.get("content"))).strip()
    short = full
    if short:
        lines = short.split("\n")
        if len(lines) > config.assistant_lines:
            short = "\n".join(lines[: config.assistant_lines]) + " ..."
        short = _truncate_chars(short, config.assistant_chars)
    summary = _tool_summary(message.get("tool_calls"))
    if not short and not summary:
        return None  # reasoning-only (or empty) message: nothing to show
    return _Draft(
        "assistant",
        _join(short, summary),
        full_text=_join(full, summary),
        tool_only=not short,
    )


def build_recap(
    conversation: list[dict], config: Optional[RecapConfig] = None
) -> Optional[Recap]:
    """Build the resume recap from a replayable conversation (RC-1..RC-7, RC-9, RC-10).

    ``conversation`` is the list from ``get_messages_as_conversation`` (MS-5); rows with
    role ``session_meta``, ``system``, ``tool`` or any role other than ``user`` /
    ``assistant`` are ignored, as is anything that is not a dict.

    Returns ``None`` — meaning "draw no panel" — in two cases:

    * ``config.mode == "minimal"`` (RC-9);
    * there is no history to show, i.e. the conversation yields no displayable entry
      (empty, or only system/tool/reasoning-only rows). We return ``None`` rather than an
      empty ``Recap`` so that every caller gets "no history -> no panel" (RC-9) for free
      instead of having to remember to test ``entries``.

    Otherwise the last ``2 * config.exchanges`` entries are kept, ``skipped`` counts the
    displayable entries cut before them, and the conversation's last assistant entry, if
    kept, becomes ``assistant_last`` with its untruncated text (RC-7).
    """
    config = config or RecapConfig()
    if config.mode == "minimal":
        return None

    drafts: list[_Draft] = []
    for message in conversation or ():
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "user":
            drafts.append(_user_draft(message, config))
        elif role == "assistant":
            draft = _assistant_draft(message, config)
            if draft is None:
                continue
            if config.skip_tool_only and draft.tool_only:
                continue
            drafts.append(draft)
        # session_meta, system, tool and unknown roles carry nothing to recap (RC-1, RC-2)

    if not drafts:
        return None

    window = config.exchanges * 2
    skipped = max(0, len(drafts) - window)

    last_assistant = None
    for index in range(len(drafts) - 1, -1, -1):
        if drafts[index].kind == "assistant":
            last_assistant = index
            break

    entries: list[RecapEntry] = []
    for index in range(skipped, len(drafts)):
        draft = drafts[index]
        if index == last_assistant:
            entries.append(RecapEntry(kind="assistant_last", text=draft.full_text))
        else:
            entries.append(RecapEntry(kind=draft.kind, text=draft.text))
    return Recap(entries=entries, skipped=skipped)


# --------------------------------------------------------------------------- rendering (RC-8)

_USER_LABEL = "  ● You: "
_ASSISTANT_LABEL = "  ◆ Hermes: "
_USER_INDENT = " " * 9
_ASSISTANT_INDENT = " " * 12

# C0 controls except \t and \n, DEL, and the C1 block.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Bidi embeddings, overrides, isolates and marks: they reorder what the reader sees
# (``evil\u202egnp.exe`` reads as ``evilexe.png``). Shown as U+FFFD, one cell each.
_BIDI_CHARS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _caret(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    return "M-^" + chr(code - 0x80 + 0x40)  # C1, as `cat -v` shows it


def _make_inert(text: str) -> str:
    """Make terminal control characters visible and harmless (see module docstring)."""
    return _BIDI_CHARS.sub("\ufffd", _CONTROL_CHARS.sub(_caret, text.replace("\r\n", "\n")))


def _wrapped_rows(body: Text, width: Optional[int]) -> list[Text]:
    """Split a body into display rows: at explicit newlines, and at ``width`` if given."""
    if width is None:
        return body.split("\n", allow_blank=True) if body.plain else []
    if not body.plain:
        return []
    rows = list(body.wrap(_wrap_console(), max(1, width), overflow="fold"))
    for row in rows:
        row.rstrip()  # word wrapping leaves the breaking space at the end of a row
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
        out.append(f"  ... {recap.skipped} earlier messages ...\n\n", style="dim italic")

    for position, entry in enumerate(recap.entries):
        if position:
            out.append("\n")
        if entry.kind == "user":
            label, indent, colour = _USER_LABEL, _USER_INDENT, theme.user
        else:
            label, indent, colour = _ASSISTANT_LABEL, _ASSISTANT_INDENT, theme.assistant
        last = entry.kind == "assistant_last"
        out.append(label, style=f"bold {colour}" if last else f"dim {colour}")
        body_style = "" if last else "dim"
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
