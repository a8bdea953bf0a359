"""A session's preview: its first user message, without injected memory context.

Shared by the list (every row's preview) and by the session dicts of upstream's API, so a
row reads the same wherever it is shown.
"""

from __future__ import annotations

import re


# MS-6: memory-context scrubbing.
MEMORY_BLOCK_RE = re.compile(
    r"<\s*memory-context\s*>.*?<\s*/\s*memory-context\s*>", re.IGNORECASE | re.DOTALL
)


MEMORY_NOTE_RE = re.compile(
    r"\[System note:\s*The following is recalled memory context,\s*NOT new user input\."
    r"\s*Treat as informational background data\.\]\s*",
    re.IGNORECASE,
)


MEMORY_TAG_RE = re.compile(r"<\s*/?\s*memory-context\s*>", re.IGNORECASE)


def scrub_memory_context(text: str) -> str:
    """Remove injected memory-context blocks, notes and stray tags (MS-6)."""
    text = MEMORY_BLOCK_RE.sub("", text)
    text = MEMORY_NOTE_RE.sub("", text)
    return MEMORY_TAG_RE.sub("", text)


def compute_preview(first_user_content: str | None) -> str:
    """LI-3: the list preview from the first user message's text."""
    if first_user_content is None:
        return ""
    window = first_user_content.replace("\n", " ").replace("\r", " ")[:63]
    raw = window.strip()
    if not raw:
        return ""
    return raw[:60] + ("..." if len(raw) > 60 else "")
