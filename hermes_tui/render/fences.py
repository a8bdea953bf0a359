"""Markdown code fences in a message, found so the transcript can show the code as a block.

Messages are Markdown, and an answer with code showed its ```` ``` ```` lines raw around it.
Only fences are recognised (CommonMark's rule: a line of three or more backticks or tildes,
indented at most three spaces, closed by a line of the same character at least as long; an
unclosed fence runs to the end). Everything stays plain text: the code is user content,
shown inert, never parsed as markup.
"""

from __future__ import annotations

import re

__all__ = ["split_fences"]

_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")


def split_fences(body: str) -> list[tuple[str, str, str]]:
    """``body`` as ``(kind, text, language)`` parts in order: ``("text", …, "")`` and
    ``("code", code without its fence lines, language or "")``. Without a fence: one text
    part (or none for an empty body)."""
    if "```" not in body and "~~~" not in body:
        return [("text", body, "")] if body else []
    parts: list[tuple[str, str, str]] = []
    text: list[str] = []
    code: list[str] = []
    fence: str | None = None
    language = ""
    for line in body.split("\n"):
        if fence is None:
            opened = _OPEN.match(line)
            if opened and not (opened.group(1)[0] == "`" and "`" in line.strip()[len(opened.group(1)):]):
                if text:
                    parts.append(("text", "\n".join(text), ""))
                    text = []
                fence, language, code = opened.group(1), opened.group(2), []
            else:
                text.append(line)
            continue
        stripped = line.strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence) and len(line) - len(line.lstrip(" ")) <= 3:
            parts.append(("code", "\n".join(code), language))
            fence = None
            continue
        code.append(line)
    if fence is not None:
        parts.append(("code", "\n".join(code), language))
    elif text:
        parts.append(("text", "\n".join(text), ""))
    # (blank lines around a fence are the text's own; an empty text part says nothing)
    return [(kind, t.strip("\n") if kind == "text" else t, lang) for kind, t, lang in parts
            if kind == "code" or t.strip()]
