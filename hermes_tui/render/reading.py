"""How a row shows its read state and how its conversation ended: one glyph each, the same
in the list, the search pane and the help's legend.

``●`` live / ``○`` ended keep their column; the lifecycle glyph follows it (blank for the
ordinary "done", so the rows that ended otherwise stand out), and ``◆`` marks an unread
conversation before its title, as ``★`` marks a pinned one.
"""

from __future__ import annotations

from hermes_state.lifecycle import COMPLETE, EMPTY, ERROR, INTERRUPTED, TAGS

#: The lifecycle glyph after ``●``/``○`` (one cell each).
STATUS_GLYPHS = {COMPLETE: " ", INTERRUPTED: "…", ERROR: "!", EMPTY: "∅"}

#: Before the title of a conversation with activity since it was last read.
UNREAD_GLYPH = "◆"

#: What each status is called to a person (upstream's picker says done/intr/err/empty).
STATUS_WORDS = {
    COMPLETE: "done",
    INTERRUPTED: "interrupted",
    ERROR: "error",
    EMPTY: "empty",
}

#: Why, in the detail pane.
STATUS_REASONS = {
    COMPLETE: "ends on a reply",
    INTERRUPTED: "ends waiting for an answer",
    ERROR: "its last turn failed",
    EMPTY: "no message",
}


def status_glyph(status: str | None) -> str:
    return STATUS_GLYPHS.get(status or "", " ")


def status_word(status: str | None) -> str:
    return STATUS_WORDS.get(status or "", TAGS.get(status or "", "unknown"))


def legend() -> list[tuple[str, str]]:
    """``(glyph, meaning)`` of every mark a list row can show, in the order drawn."""
    return [
        ("●", "live session"),
        ("○", "ended session"),
        ("(blank)", "done: its last message is a reply"),
        (STATUS_GLYPHS[INTERRUPTED], "interrupted: its last message waits for an answer"),
        (STATUS_GLYPHS[ERROR], "error: its last turn failed"),
        (STATUS_GLYPHS[EMPTY], "empty: no message"),
        (UNREAD_GLYPH, "unread: activity since it was last read (stores of upstream v30)"),
        ("★", "pinned"),
        ("✓", "marked (space)"),
    ]
