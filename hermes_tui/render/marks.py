"""The words that mark a conversation which is not an ordinary active one (BR-11, BR-15; UC-3:
"marked wherever it still appears"): the same in the list, the search's conversations and its
title matches."""

from __future__ import annotations

from hermes_state.visibility import INTERNAL_SOURCES


def marks(*, archived: bool = False, hidden: bool = False, delegate: bool = False,
          source: str | None = None) -> list[str]:
    """``[archived]``, ``[hidden]``, ``[delegate]``, ``[internal]``: those that apply, in
    that order."""
    words = []
    if archived:
        words.append("[archived]")
    if hidden:
        words.append("[hidden]")
    if delegate:
        words.append("[delegate]")
    if source in INTERNAL_SOURCES:
        words.append("[internal]")
    return words
