"""Markdown transcripts of exported sessions (``export --format md`` / ``md-dir``).

Content is data: message text is written as it is (it is Markdown already, most of the time),
while tool calls, tool results and reasoning go in fenced blocks whose fence is longer than any
backtick run inside, so content can never close them; an answer cut off inside a code block
has its block closed after it. Rows the agent's chat does not show as turns are labelled as
the browser's transcript labels them (UC-3): scaffolding (``display_kind = 'hidden'``) and
compaction history (``compacted = 1``).

A conversation's compression lineage (``--lineage``) is one document: the segments root to
tip, each under a heading of its own (:func:`lineage_to_markdown`).

The standard library only (with :mod:`hermes_state.lenient_text`), as the export workers
need.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any

try:
    from .lenient_text import BLOB_TYPES, lenient_text
except ImportError:  # run by its path in an export worker (hermes_state.export_batch): no package
    from lenient_text import BLOB_TYPES, lenient_text  # type: ignore[no-redef]


def blob_text(value: Any) -> str:
    """A blob as text (``json.dumps``'s ``default``), as
    :func:`hermes_state.export_batch.blob_text` reads it: its UTF-8, U+FFFD for a bad byte."""
    if isinstance(value, BLOB_TYPES):
        return lenient_text(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")

_BACKTICK_RUN_RE = re.compile(r"`+")
_ROLE_HEADINGS = {
    "user": "User",
    "assistant": "Assistant",
    "system": "System",
    "tool": "Tool result",
}
_MULTIMODAL_PREFIX = "\x00json:"


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text`` (at least three).

    A fenced block closes only on a backtick run at least as long as its opening fence, so
    content containing ``````` cannot end the block early.
    """
    longest = max((len(m.group(0)) for m in _BACKTICK_RUN_RE.finditer(text)), default=0)
    return "`" * max(3, longest + 1)


def fenced(text: str, info: str = "") -> str:
    """``text`` in a fenced code block that its content cannot break."""
    fence = fence_for(text + info)
    body = text if text.endswith("\n") else text + "\n"
    return f"{fence}{info}\n{body}{fence}\n"


def format_timestamp(ts: Any) -> str:
    """``YYYY-MM-DD HH:MM:SS UTC`` (UTC so an export reads the same everywhere), or ``?``.

    Every message of an export has one: the date is made once per day (a table of the days
    seen), the time of day by arithmetic -- ``datetime.strftime`` per message was a tenth of a
    Markdown export's time. The second is the one ``datetime.fromtimestamp`` shows (its
    microseconds rounded half to even, which may carry into the next second)."""
    try:
        value = float(ts)
    except (TypeError, ValueError, OverflowError):
        return "?"
    if not 0.0 <= value < 253402300800.0:  # (before 1970 or after 9999: the general way)
        return _format_timestamp_slowly(value)
    whole, fraction = divmod(value, 1.0)
    seconds = int(whole) + (1 if round(fraction * 1e6) >= 1_000_000 else 0)
    day, rest = divmod(seconds, 86400)
    date = _DAYS.get(day)
    if date is None:
        if len(_DAYS) > 100_000:
            _DAYS.clear()
        date = _DAYS[day] = (_EPOCH + timedelta(days=day)).strftime("%Y-%m-%d")
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{date} {hours:02d}:{minutes:02d}:{secs:02d} UTC"


_DAYS: dict[int, str] = {}
_EPOCH = datetime(1970, 1, 1)


def _format_timestamp_slowly(value: float) -> str:
    try:
        return datetime.fromtimestamp(value, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (ValueError, OverflowError, OSError):
        return "?"


_FENCE_LINE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def close_open_fence(text: str) -> str:
    """``text`` plus a closing fence if it leaves a code fence open (CommonMark rules).

    Message text is written unescaped, but an answer cut off inside a code block must not
    turn the rest of the document into code: the open block is closed after the text.
    """
    open_fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE_LINE_RE.match(line)
        if not match:
            continue
        fence, rest = match.group(1), match.group(2)
        if open_fence is None:
            if fence[0] == "`" and "`" in rest:
                continue  # not an opener: a backtick fence's info string has no backticks
            open_fence = fence
        elif fence[0] == open_fence[0] and len(fence) >= len(open_fence) and not rest.strip():
            open_fence = None
    if open_fence is None:
        return text
    return text.rstrip("\n") + "\n" + open_fence + "\n"


def one_line(text: Any) -> str:
    """Any value as one line of text (runs of whitespace, newlines included, one space)."""
    return " ".join(_text(text).split())


def _text(value: Any) -> str:
    """Any stored value as text (a blob as its UTF-8, see :func:`blob_text`)."""
    return blob_text(value) if isinstance(value, (bytes, bytearray, memoryview)) else str(value)


def content_text(content: Any) -> str:
    """Message content as text; decodes upstream's ``"\\x00json:"`` multimodal encoding."""
    if content is None:
        return ""
    if isinstance(content, str) and content.startswith(_MULTIMODAL_PREFIX):
        try:
            parts = json.loads(content[len(_MULTIMODAL_PREFIX) :])
        except ValueError:
            return content[len(_MULTIMODAL_PREFIX) :]
        content = parts
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                pieces.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") in ("image_url", "image"):
                pieces.append("[image]")
            else:
                pieces.append(json.dumps(part, ensure_ascii=False, default=blob_text))
        return "\n\n".join(pieces)
    if isinstance(content, (bytes, bytearray, memoryview)):
        return blob_text(content)
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=blob_text)


def tool_call_parts(call: Any) -> tuple[str, str | None, str, str]:
    """``(name, call id, arguments, info)`` of one stored tool call: the arguments
    pretty-printed when they are JSON (``info`` is then ``"json"``), else as stored."""
    name = None
    arguments: Any = None
    if isinstance(call, dict):
        function = call.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            arguments = function.get("arguments")
        else:
            name = call.get("name")
            arguments = call.get("arguments", call.get("input"))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    if arguments is None and not isinstance(call, dict):
        arguments = call
    if isinstance(arguments, str):
        body, info = arguments, ""
    else:
        body, info = pretty_json(arguments), "json"
    label = one_line(name) if name else "unknown"
    call_id = call.get("id") if isinstance(call, dict) else None
    return label, (one_line(call_id) if call_id else None), body, info


_SCALARS = (str, int, float, bool, type(None))
_FLAT = json.JSONEncoder(ensure_ascii=False, default=blob_text)
_INDENTED = json.JSONEncoder(ensure_ascii=False, indent=2, default=blob_text)


def pretty_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, indent=2)``, exactly. Most tool arguments are
    one object of plain values: each is encoded by the C encoder and the lines joined here
    (``indent`` makes json use its Python encoder: a sixth of a Markdown export's time)."""
    if isinstance(value, dict) and value and all(
        type(key) is str and isinstance(item, _SCALARS) for key, item in value.items()
    ):
        encode = _FLAT.encode
        return "{\n" + ",\n".join(f"  {encode(key)}: {encode(item)}" for key, item in value.items()) + "\n}"
    return _INDENTED.encode(value)


def _render_tool_call(call: Any) -> str:
    """``**Tool call:** `name``` then the arguments, pretty-printed when they are JSON."""
    label, call_id, body, info = tool_call_parts(call)
    suffix = f" (id `{call_id}`)" if call_id else ""
    return f"**Tool call:** `{label}`{suffix}\n\n" + fenced(body, info)


def role_heading(msg: dict) -> str:
    """The heading of a message: its role (a tool result with its tool's name)."""
    role = _text(msg.get("role") or "unknown")
    heading = _ROLE_HEADINGS.get(role, one_line(role))
    if role == "tool" and msg.get("tool_name"):
        heading += f" — {one_line(msg['tool_name'])}"
    return heading


def message_notes(msg: dict) -> list[str]:
    """What a row the agent's chat does not show as a turn is, in the transcript's words
    (UC-3): scaffolding (``display_kind = 'hidden'``), compaction history (``compacted``)."""
    notes = []
    if msg.get("compacted"):
        notes.append("compaction history")
    if msg.get("display_kind") == "hidden":
        notes.append("scaffolding, not shown in chat")
    return notes


def render_message(msg: dict, level: int = 2) -> str:
    """One message as Markdown, under a heading of ``level``."""
    role = _text(msg.get("role") or "unknown")
    heading = role_heading(msg)
    notes = message_notes(msg)
    if notes:
        heading += f" ({'; '.join(notes)})"
    out = [f"{'#' * level} {heading}\n\n", f"*{format_timestamp(msg.get('timestamp'))}*\n\n"]
    text = content_text(msg.get("content"))
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if reasoning and role == "assistant":
        out.append("**Reasoning:**\n\n" + fenced(_text(reasoning), "text") + "\n")
    if role == "tool":
        if msg.get("tool_call_id"):
            out.append(f"Result of call `{one_line(msg['tool_call_id'])}`:\n\n")
        out.append(fenced(text) + "\n")
    elif text:
        out.append(close_open_fence(text).rstrip("\n") + "\n\n")
    tool_calls = msg.get("tool_calls")
    if tool_calls:
        calls = tool_calls if isinstance(tool_calls, list) else [tool_calls]
        for call in calls:
            out.append(_render_tool_call(call) + "\n")
    return "".join(out)


def session_facts(obj: dict) -> list[tuple[str, str]]:
    """``(label, value)`` pairs describing one session (values one line each; ids raw)."""
    facts = [
        ("Session", one_line(obj.get("id"))),
        # (an export across Hermes profiles says whose each session is; ids may collide)
        ("Profile", obj.get("profile")),
        ("Source", obj.get("source")),
        ("Model", obj.get("model")),
        ("Started", format_timestamp(obj.get("started_at"))),
    ]
    if obj.get("ended_at"):
        reason = f" ({one_line(obj['end_reason'])})" if obj.get("end_reason") else ""
        facts.append(("Ended", format_timestamp(obj["ended_at"]) + reason))
    if obj.get("parent_session_id"):
        facts.append(("Parent", one_line(obj["parent_session_id"])))
    facts.append(("Messages", str(len(obj.get("messages") or []))))
    return [(label, one_line(value)) for label, value in facts if value is not None and value != ""]


_ID_FACTS = ("Session", "Parent", "Conversation")


def _facts_lines(facts: list[tuple[str, str]]) -> list[str]:
    return [f"- **{label}:** {f'`{value}`' if label in _ID_FACTS else value}\n" for label, value in facts]


def session_to_markdown(obj: dict) -> str:
    """A readable transcript of one exported session (EX-1 dict with ``messages``).

    Content is data: nothing is escaped, but tool calls, tool results and reasoning are put in
    fenced blocks whose fence is longer than any backtick run inside, so they cannot be broken.
    """
    title = obj.get("title")
    lines = [f"# {one_line(title) if title else 'Untitled session'}\n\n"]
    lines.extend(_facts_lines(session_facts(obj)))
    lines.append("\n")
    for msg in obj.get("messages") or []:
        lines.append(render_message(msg))
    return "".join(lines)


def conversation_title(segments: list[dict]) -> str:
    """The title of a conversation: its newest segment's title, else the first one's, else
    ``Untitled session`` (a compression continuation usually carries the title numbered)."""
    for obj in reversed(segments):
        if obj.get("title"):
            return one_line(obj["title"])
    return "Untitled session"


def lineage_to_markdown(segments: list[dict]) -> str:
    """One document for a conversation's compression lineage, root to tip: the
    conversation's facts, then each segment under ``## Segment k of n`` with its own facts,
    its messages one level down (``### User``)."""
    if len(segments) == 1:
        return session_to_markdown(segments[0])
    first = segments[0]
    lines = [f"# {conversation_title(segments)}\n\n"]
    total = sum(len(obj.get("messages") or []) for obj in segments)
    lines.extend(_facts_lines([
        ("Conversation", one_line(first.get("id"))),
        ("Segments", str(len(segments))),
        ("Started", format_timestamp(first.get("started_at"))),
        ("Messages", str(total)),
    ]))
    lines.append("\n")
    for number, obj in enumerate(segments, 1):
        how = "" if number == 1 else " (continued after compression)"
        lines.append(f"## Segment {number} of {len(segments)}{how}\n\n")
        if obj.get("title"):
            lines.append(f"*{one_line(obj['title'])}*\n\n")
        lines.extend(_facts_lines(session_facts(obj)))
        lines.append("\n")
        for msg in obj.get("messages") or []:
            lines.append(render_message(msg, 3))
    return "".join(lines)


__all__ = [
    "close_open_fence",
    "content_text",
    "conversation_title",
    "fence_for",
    "fenced",
    "format_timestamp",
    "lineage_to_markdown",
    "message_notes",
    "one_line",
    "render_message",
    "role_heading",
    "session_facts",
    "session_to_markdown",
    "tool_call_parts",
]
