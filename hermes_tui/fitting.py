"""A line made to fit its width: the first of its forms, longest first, that fits.

Textual cuts a title, a border's subtitle or a header at the edge, often in the middle of a
word ("· activ…"). Each line that can be said shorter lists its forms, longest first, and
shows the first that fits; the last is shown when none does (the widget may then still cut
it). A line of :class:`Part` s has its forms made for it: its parts shortened, then left out,
in the order they give way. Widths are terminal cells: a CJK character takes two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence, TypeVar

from rich.cells import cell_len
from rich.text import Text

#: Between the parts of a line.
SEPARATOR = " · "

Form = TypeVar("Form", str, Text)


def cells(form: str | Text) -> int:
    """The cells ``form`` takes on a terminal."""
    return form.cell_len if isinstance(form, Text) else cell_len(form)


def first_fitting(forms: Iterable[Form], width: int | None) -> Form:
    """The first of ``forms`` (longest first) within ``width`` cells, else the last. A
    ``width`` of None or below 1 is a widget not laid out yet: the first form, in full.

    ``forms`` is read only as far as the form chosen, so it may be made as it is read."""
    chosen: Form | None = None
    for chosen in forms:
        if width is None or width <= 0 or cells(chosen) <= width:
            break
    if chosen is None:
        raise ValueError("no form to choose from")
    return chosen


@dataclass(frozen=True)
class Part:
    """One part of a line, said in full where it fits, else ``short`` (if any), else left
    out (if ``droppable``): a part is never cut in the middle of a word. Parts of a higher
    ``gives_way`` give way (all shortened, then left out, from the end) before any part of a
    lower one is shortened."""

    text: str
    short: str | None = None
    droppable: bool = True
    gives_way: int = 0


def fit_parts(parts: Sequence[Part], width: int | None) -> str:
    """``parts`` joined, made to fit ``width`` cells by :func:`first_fitting`; a line that
    still does not fit, with every part that may give way given way, is cut by the widget."""
    return first_fitting(_giving_way(parts), width)


def _giving_way(parts: Sequence[Part]) -> Iterator[str]:
    """The line in full, then once more after each part gives way, in the order they do."""
    shown: list[str | None] = [part.text for part in parts]

    def line() -> str:
        return SEPARATOR.join(text for text in shown if text)

    yield line()
    for level in sorted({part.gives_way for part in parts}, reverse=True):
        from_the_end = [i for i in reversed(range(len(parts))) if parts[i].gives_way == level]
        for i in from_the_end:
            if parts[i].short is not None:
                shown[i] = parts[i].short
                yield line()
        for i in from_the_end:
            if parts[i].droppable:
                shown[i] = None
                yield line()
