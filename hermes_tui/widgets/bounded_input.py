"""Query fields hold at most :data:`MAX_QUERY_CHARS` characters.

105,000 characters typed into the search field one key at a time (a paste without bracketed
paste: the terminal sends it as keys) made a 105,000-character query, re-highlighted and
searched for again and again: 2.3 GB, and no answer after 150 s. No query a person means is
that long, so the field keeps the first :data:`MAX_QUERY_CHARS` characters of what is typed or
pasted into it -- a paste is cut, not refused whole -- and says once, in a notification, that
the rest was not taken. At the limit a key changes nothing, so no search starts for it.
"""

from __future__ import annotations

import time

#: The longest query a field takes.
MAX_QUERY_CHARS = 1_000
#: The notification is repeated at most this often while keys keep arriving at the limit.
NOTIFY_EVERY_S = 5.0

LIMIT_MESSAGE = f"A query is at most {MAX_QUERY_CHARS:,} characters: the rest of what was typed was left out."


class BoundedInput:
    """Mixin for an :class:`~textual.widgets.Input`: ``max_length`` defaults to
    :data:`MAX_QUERY_CHARS`, and text beyond it is cut rather than refused."""

    _told_at = float("-inf")

    def __init__(self, *args, max_length: int = MAX_QUERY_CHARS, **kwargs) -> None:
        super().__init__(*args, max_length=max_length, **kwargs)

    def replace(self, text: str, start: int, end: int) -> None:
        limit = self.max_length
        cut = False
        if limit:
            value = self.value
            start_, end_ = sorted((max(0, start), min(len(value), end)))
            room = limit - (len(value) - (end_ - start_))
            if len(text) > room:
                text, cut = text[:max(0, room)], True
        if text or end != start:
            super().replace(text, start, end)
        if cut:
            self.restricted()

    def restricted(self) -> None:
        now = time.monotonic()
        if now - self._told_at >= NOTIFY_EVERY_S:
            self._told_at = now
            self.notify(LIMIT_MESSAGE, severity="warning", timeout=4, markup=False)
