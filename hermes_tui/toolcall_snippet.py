"""Tool calls in a search snippet, shown as ``⚙ name(args)`` instead of their raw JSON.

The search index holds an assistant message's text followed by its ``tool_calls`` JSON (v30),
so a hit on a tool's name or argument showed ``[{"id": "call_…", "type": "function",
"function": {"name": …, "arguments": "{\\"command\\": …`` — mostly noise around the two
things a person looks for. The snippet is data from the store and is only rewritten for
display; the match spans are moved with the text so the highlight stays on its words.
"""

from __future__ import annotations

import re

__all__ = ["compact_tool_calls"]

#: The start of one call, up to the opening quote of its arguments (id and type optional:
#: a snippet may start inside the list).
_CALL_HEAD = re.compile(
    r'\[?\{\s*(?:"id":\s*"[^"]*",\s*)?(?:"type":\s*"function",\s*)?"function":\s*\{\s*'
    r'"name":\s*"([^"\\]+)",\s*"arguments":\s*"'
)
#: The end of one call's arguments: the closing quote and the two braces (and the list's).
_CALL_TAIL = re.compile(r'"\s*\}\s*\}\s*\]?')
_ESCAPED_QUOTE = re.compile(r'\\"')


def _edits_of(text: str) -> list[tuple[int, int, str]]:
    edits: list[tuple[int, int, str]] = []
    position = 0
    while True:
        head = _CALL_HEAD.search(text, position)
        if head is None:
            break
        # (the name itself is kept, so a match on it stays highlighted)
        edits.append((head.start(), head.start(1), "⚙ "))
        edits.append((head.end(1), head.end(), "("))
        tail = _CALL_TAIL.search(text, head.end())
        args_end = tail.start() if tail else len(text)
        for quote in _ESCAPED_QUOTE.finditer(text, head.end(), args_end):
            edits.append((quote.start(), quote.end(), '"'))
        if tail is None:
            break
        edits.append((tail.start(), tail.end(), ")"))
        position = tail.end()
    return sorted(edits)


def compact_tool_calls(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with each tool call's JSON as ``⚙ name(args)``; ``spans`` moved to match (a
    span inside removed JSON keeps what is left of it, or goes)."""
    if '"function"' not in text:
        return text, spans
    edits = _edits_of(text)
    if not edits:
        return text, spans
    out: list[str] = []
    # new_at[i]: where old offset i lands in the new text.
    new_at = [0] * (len(text) + 1)
    cursor = 0
    length = 0
    for start, end, replacement in edits:
        for i in range(cursor, start):
            new_at[i] = length
            out.append(text[i])
            length += 1
        for i in range(start, end):
            new_at[i] = length
        out.append(replacement)
        length += len(replacement)
        cursor = end
    for i in range(cursor, len(text)):
        new_at[i] = length
        out.append(text[i])
        length += 1
    new_at[len(text)] = length
    moved = []
    for a, b in spans:
        na, nb = new_at[a], new_at[b] if b <= len(text) else length
        if na < nb:
            moved.append((na, nb))
    return "".join(out), moved
