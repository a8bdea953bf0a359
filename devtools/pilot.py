"""Driving the app headless (``App.run_test``): wait for its work to settle before looking.

Shared by the screenshot script and the UI tests: a picture or an assertion taken while a
search or a load is still running sees a frame the person would not stop at."""

from __future__ import annotations


def busy_workers(app) -> list:
    """The app's and its screens' workers still running, the change watcher's left out (it
    runs for as long as the app does)."""
    busy = [w for w in app.workers if not w.is_finished and w.group != "watch"]
    for screen in app.screen_stack:
        busy += [w for w in screen.workers if not w.is_finished and w.group != "watch"]
    return busy


async def settle(pilot, rounds: int = 3, tries: int = 400) -> None:
    """Wait until no worker but the change watcher runs (up to ``tries`` looks 10 ms apart),
    then let the UI paint; ``rounds`` times, as one answer's paint may start more work."""
    for _ in range(rounds):
        for _ in range(tries):
            if not busy_workers(pilot.app):
                break
            await pilot.pause(0.01)
        await pilot.pause()
