"""Upstream's ``...`` truncation marks, shown as the one ``…`` the rest of the UI uses.

A preview is upstream's (LI-3: 60 characters and ``...``) and an FTS snippet carries
``...`` where it was cut; the data stays as upstream has it, the screen shows ``…`` (a
preview cut after a full stop read ``....`` beside the list's own ``…``). Only the marks
upstream adds are changed: a preview's when it is exactly 60 characters and ``...``, a
snippet's at its two ends.
"""

from __future__ import annotations

#: LI-3: the preview is cut to this many characters before its ``...``.
PREVIEW_CUT = 60


def shown_preview(preview: str) -> str:
    if len(preview) == PREVIEW_CUT + 3 and preview.endswith("..."):
        return preview[:PREVIEW_CUT] + "…"
    return preview


def shown_snippet(snippet: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """``snippet`` with its end marks as ``…``, and its match spans moved to match."""
    if snippet.endswith("..."):
        snippet = snippet[:-3] + "…"
        spans = [(a, min(b, len(snippet))) for a, b in spans if a < len(snippet)]
    if snippet.startswith("..."):
        snippet = "…" + snippet[3:]
        spans = [(max(1, a - 2), b - 2) for a, b in spans if b - 2 > 1]
    return snippet, spans
