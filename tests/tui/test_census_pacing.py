"""The census (the list's length, the per-source counts, the pins: each a read of
every session row, ~0.4 s at 250k sessions) is spaced by what it costs, so a browser left
open beside a gateway that commits several times a second does not keep a core busy; the
user's own writes and filter changes are counted at once, and a commit still shows at once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hermes_tui.pacing import Pacer
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .test_live_reader import build_many, start_writer, wait_until


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_run_waits_nine_times_what_the_last_one_cost() -> None:
    clock = Clock()
    pacer = Pacer(clock=clock)
    assert pacer.wait() == 0.0, "the first run never waits"
    pacer.started()
    clock.now += 0.4
    pacer.finished()
    assert pacer.wait() == pytest.approx(3.6)
    clock.now += 3.0
    assert pacer.wait() == pytest.approx(0.6)
    assert pacer.wait(prompt=True) == 0.0, "a run the user asked for does not wait"
    clock.now += 0.6
    assert pacer.wait() == 0.0
    # A run may say what it cost where it ran (its answer may have waited to be handled).
    pacer.started()
    clock.now += 2.0
    pacer.finished(seconds=0.01)
    assert pacer.wait() == pytest.approx(0.09)


def test_the_share_of_a_core_is_what_the_ratio_says() -> None:
    clock = Clock()
    pacer = Pacer(idle_ratio=4.0, clock=clock)
    busy = 0.0
    for _ in range(100):  # a census wanted after every commit, each costing 0.5 s
        clock.now += pacer.wait()
        pacer.started()
        clock.now += 0.5
        busy += 0.5
        pacer.finished()
    assert busy / (clock.now - 1000.0) == pytest.approx(1 / 5, rel=0.01)
    with pytest.raises(ValueError):
        Pacer(idle_ratio=-1)


async def test_commits_wait_for_the_census_turn_own_writes_and_filters_do_not(tmp_path: Path) -> None:
    db = build_many(tmp_path / "state.db", sessions=20)
    app = make_app(db, watch=True)
    real_census = app.ctx.store.census
    censuses: list[dict] = []

    def census(**kwargs):
        censuses.append(kwargs)
        return real_census(**kwargs)

    app.ctx.store.census = census
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        lst = screen.query_one(SessionList)
        await wait_until(pilot, lambda: censuses and lst.total == 20)
        await settle(pilot)
        await wait_until(pilot, lambda: not screen.list_window.census_running)
        # The last census cost 1 s (a very large store): the next may start 9 s after it.
        clock = Clock()
        screen.list_window.census_pacer = Pacer(clock=clock)
        screen.list_window.census_pacer.started()
        clock.now += 1.0
        screen.list_window.census_pacer.finished()
        before = len(censuses)

        writer = start_writer(db, "sessions", "fig", 4, 0.05)
        writer.wait(timeout=30)
        assert writer.returncode == 0, writer.stderr.read().decode()
        # The commits show at once (the pages do not wait for the census)...
        await wait_until(pilot, lambda: all(
            lst.row(i) is not None and lst.row(i).id.startswith("20261118_0900") for i in range(4)))
        assert lst.total == 24
        await pilot.pause(0.5)
        # ...and the census they want waits its turn.
        assert len(censuses) == before and screen.list_window.census_due

        # The user's own write is counted at once.
        await pilot.press("p")
        await wait_until(pilot, lambda: len(censuses) > before)
        # It cost next to nothing on this small store: the turn of the one the commits owed
        # comes soon after it. (The pacer measures a census's cost in real seconds; on a
        # loaded machine that is not nothing, and this clock only moves when told: move it
        # past any such turn.)
        await wait_until(pilot, lambda: not screen.list_window.census_running)
        clock.now += 10.0
        await wait_until(pilot, lambda: not screen.list_window.census_running and not screen.list_window.census_due)
        await settle(pilot)
        # Make the census costly again, then change the filters: counted at once too.
        screen.list_window.census_pacer.started()
        clock.now += 1.0
        screen.list_window.census_pacer.finished()
        counted = len(censuses)
        await pilot.press("v")  # active -> archived
        await wait_until(pilot, lambda: len(censuses) == counted + 1)
        assert censuses[-1]["query"].view == "archived"

        # A census owed when its turn comes is taken then.
        await wait_until(pilot, lambda: not screen.list_window.census_running)
        owed = len(censuses)
        screen.list_window.census_pacer.started()
        clock.now += 0.2  # its turn 1.8 s (of this clock) after it
        screen.list_window.census_pacer.finished()
        writer = start_writer(db, "append", "20261118_090000_new00", 1, 0.0)
        writer.wait(timeout=30)
        await wait_until(pilot, lambda: screen.list_window.census_due)
        await pilot.pause(0.3)
        assert len(censuses) == owed
        clock.now += 10.0
        await wait_until(pilot, lambda: len(censuses) == owed + 1, timeout=20)
