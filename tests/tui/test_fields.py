"""The detail pane's label / value lines (render/fields.py): no value folded mid-word where a
line of its own holds it; prose wraps at words beside its label."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from hermes_tui.render.fields import Fields

ROWS = [
    ("id", Text("20260921_140000_r1")),
    ("model", Text("anthropic/claude-sonnet-4.6")),
    ("status", Text("live")),
    ("current", Text("yes (the lane's live session)")),
]


def lines(width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(Fields(ROWS, "dim"))
    return [line.rstrip() for line in console.file.getvalue().splitlines()]


def test_wide_every_field_beside_its_label_as_a_grid() -> None:
    assert lines(60) == [
        "id      20260921_140000_r1",
        "model   anthropic/claude-sonnet-4.6",
        "status  live",
        "current yes (the lane's live session)",
    ]


def test_narrow_a_long_word_goes_under_its_label_prose_wraps_beside_it() -> None:
    assert lines(24) == [
        "id",
        "  20260921_140000_r1",
        "model",
        # longer than the indented line: from the left edge, broken after its "/" (not
        # folded mid-name)
        "anthropic/",
        "claude-sonnet-4.6",
        "status  live",
        "current yes (the lane's",
        "        live session)",
    ]
