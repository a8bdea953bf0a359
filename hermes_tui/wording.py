"""How a count is said in what a person reads (CLI lines, dialogs): one helper, so every
count reads alike (``1 session``, ``2,048 sessions``)."""

from __future__ import annotations


def counted(n: int, word: str, words: str | None = None) -> str:
    """``n`` and its noun, the noun plural unless ``n`` is one (``words``: a plural that is
    not ``word`` + s), thousands grouped."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"
