"""Resume recap: the "Previous Conversation" card, as data (SPEC §12, RC-1..RC-10).

``build_recap`` is a pure function over the conversation dicts returned by
``SessionDB.get_messages_as_conversation`` (MS-5); it never touches the database.

This module holds the recap as *data* only (models, reasoning stripping, windowing). How it
looks — labels, indents, colours, the Rich panel (RC-8), the theme — is the UI's:
``hermes_tui.render.recap``. Entry texts here are the message text as stored (after RC-3..RC-5),
control characters included; the renderer makes them inert.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from .lenient_text import BLOB_TYPES, lenient_text

__all__ = [
    "RecapConfig",
    "RecapEntry",
    "Recap",
    "build_recap",
    "strip_reasoning",
]

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

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: RecapKind
    text: str


class Recap(BaseModel):
    """The recap as data: the kept window of entries plus how many were cut (RC-6)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    entries: list[RecapEntry]
    skipped: int = Field(default=0, ge=0)


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
    if isinstance(content, BLOB_TYPES):
        return lenient_text(content)  # a blob (nothing enforces the column's type)
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
