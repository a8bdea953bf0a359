"""A worker's result comes back to the event loop as a message: applied once, by the node it
was posted to, unless a newer request has made it stale; an error applying it is a notice."""

from __future__ import annotations

import threading
from pathlib import Path

from hermes_tui.messages import Generation, WorkerDone

from .conftest import SIZE, make_app, settle


async def test_a_result_posted_from_a_thread_to_the_screen_applies_once(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        applied: list[tuple[str, bool]] = []
        screen = app.screen

        def work() -> None:
            screen.post_message(WorkerDone(lambda value: applied.append(
                (value, threading.current_thread() is threading.main_thread())), "found"))

        screen.run_worker(work, thread=True)
        await settle(pilot)
        # Once (it does not bubble on to the app, which applies its own), on the loop's thread.
        assert applied == [("found", True)]


async def test_a_result_of_a_replaced_request_is_dropped(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        applied: list[str] = []
        requests = Generation()
        first, second = requests.next(), requests.next()
        app.screen.post_message(WorkerDone(applied.append, "second", stamp=second))
        app.screen.post_message(WorkerDone(applied.append, "first", stamp=first))
        app.post_message(WorkerDone(applied.append, "unstamped"))
        await settle(pilot)
        assert applied == ["second", "unstamped"]


async def test_an_error_applying_a_result_is_a_notice_not_a_crash(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)

        def broken() -> None:
            raise ValueError("the result did not fit")

        app.screen.post_message(WorkerDone(broken))
        await settle(pilot)
        assert app.is_running
        assert any("the result did not fit" in str(n.message) for n in app._notifications)
