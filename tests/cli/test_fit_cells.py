"""fit_cells: listing columns cut and padded in terminal cells; plain ASCII takes a short way
(one cell a character) that must give exactly what measuring with Rich gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len, set_cell_size

from hermes_tui.textsafe import fit_cells


def measured(text: str, width: int, pad: int | None, ellipsis: str = "…") -> str:
    """The cut and the padding measured with Rich, character by character."""
    if cell_len(text) > width:
        text = set_cell_size(text, max(0, width - cell_len(ellipsis))).rstrip() + ellipsis
        if cell_len(text) > width:
            text = set_cell_size(text, width)
    if pad is not None:
        text += " " * max(0, pad - cell_len(text))
    return text


@settings(max_examples=600, deadline=None)
@given(
    text=st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80)
    | st.text(max_size=40),
    width=st.integers(0, 60),
    extra=st.one_of(st.none(), st.integers(0, 8)),
)
def test_fit_cells_gives_what_measuring_each_cell_gives(text: str, width: int, extra: int | None) -> None:
    pad = None if extra is None else width + extra - 4
    assert fit_cells(text, width, pad) == measured(text, width, pad)


def test_fit_cells_counts_cells_not_code_points() -> None:
    assert fit_cells("数据库迁移计划", 9) == "数据库迁…"
    assert fit_cells("docker compose up", 10, 12) == "docker co…  "
    assert fit_cells("ok", 5, 6) == "ok    "
