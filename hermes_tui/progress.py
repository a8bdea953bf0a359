"""The CLI's one progress bar (``rich.progress`` on stderr), shared by ``export`` and ``generate``."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

#: ``update(done, total=None)``: how far the work is (``total`` when it became known).
ProgressUpdate = Callable[..., None]


@contextmanager
def progress_bar(
    label: str, unit: str, total: Optional[int] = None, *, transient: bool = False, terminal_only: bool = False
) -> Iterator[ProgressUpdate]:
    """A bar on stderr while the block runs; yields the ``update(done, total)`` callback.

    ``transient``: the bar is erased at the end (else it stays, and its line is ended, so
    what is printed next starts on a line of its own). ``terminal_only``: draw nothing when
    stderr is not a terminal (a pipe or a log gets no bar at all).
    """
    console = Console(stderr=True)
    if terminal_only and not console.is_terminal:
        yield lambda *_args, **_kwargs: None
        return
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=transient) as progress:
        task = progress.add_task(label, total=total)

        def update(done: int, new_total: Optional[int] = None, *_: Any) -> None:
            progress.update(task, completed=done, total=new_total or total)

        yield update
