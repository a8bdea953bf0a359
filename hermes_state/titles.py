"""Session titles: sanitising and lineage numbering (SPEC §7, TI-1 … TI-6)."""

from __future__ import annotations

import re

MAX_TITLE_LENGTH = 100

# TI-1 step 2: ASCII control characters except tab, LF and CR (those become spaces later).
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# TI-1 step 3: invisible and format characters (zero-width, bidi controls, BOM, annotations).
_INVISIBLE_RE = re.compile("[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffc]")
_WHITESPACE_RE = re.compile(r"\s+")
_NUMBER_SUFFIX_RE = re.compile(r"^(.*) #(\d+)$", re.DOTALL)


def sanitize_title(title: str | None) -> str | None:
    """Clean a user-supplied title (TI-1).

    Removes control and invisible characters, folds whitespace runs to one space, strips.
    Returns None for a title that is empty after cleaning. Raises ``ValueError`` when the
    cleaned title is longer than ``MAX_TITLE_LENGTH`` code points.
    """
    if not title:
        return None
    cleaned = _CONTROL_RE.sub("", title)
    cleaned = _INVISIBLE_RE.sub("", cleaned)
    cleaned = _WHITESPACE_RE.sub(" ", cleaned).strip()
    if not cleaned:
        return None
    if len(cleaned) > MAX_TITLE_LENGTH:
        raise ValueError(f"Title too long ({len(cleaned)} chars, max {MAX_TITLE_LENGTH})")
    return cleaned


def split_number_suffix(title: str) -> tuple[str, int | None]:
    """``"name #3"`` → ``("name", 3)``; a title without ``" #<digits>"`` → ``(title, None)``."""
    match = _NUMBER_SUFFIX_RE.match(title)
    if match and match.group(2).isascii():
        return match.group(1), int(match.group(2))
    return title, None


def next_title_from(base: str, existing: list[str]) -> str:
    """TI-6 steps 3-4 given the titles that equal ``base`` or look like ``base #…``."""
    if not existing:
        return base
    highest = 1
    for title in existing:
        _, number = split_number_suffix(title)
        if number is not None and number > highest:
            highest = number
    return f"{base} #{highest + 1}"
