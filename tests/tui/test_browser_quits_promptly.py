"""Quitting the browser while it still reads: the reads are interrupted, not waited for.

``q`` at once on a store whose first page takes seconds (a chain of 200,000 segments) waited
for the read-ahead of the first page to finish (3-5 s) before the terminal came back.
"""

from __future__ import annotations

from pathlib import Path

from bench.long_chain import build_chain
from hermes_state.listing import ListQuery, Order
from hermes_tui.data import FirstWindow


def test_a_browser_closed_while_its_first_page_is_read_ahead_interrupts_that_read(tmp_path: Path) -> None:
    path = build_chain(tmp_path / "state.db", 20_000).path
    first = FirstWindow(path, page_size=50, query=ListQuery(order=Order.ACTIVITY), cache_dir=None)
    first.opened.wait(30)
    first.close()
    assert first.done.is_set()
    assert first.pages == {}  # the page was not read to its end
    assert first.error is not None and "interrupt" in str(first.error)
