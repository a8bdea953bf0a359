"""Browser start-up probe, run as a fresh process by ``bench.ui_suite``.

``python -m bench.ui_probe DB SPAWNED_AT`` imports the app, opens the browser headless on DB
and prints one JSON line: seconds from SPAWNED_AT (the parent's ``time.time()`` just before
it started this process, so interpreter start-up and imports count) to the first page of
sessions painted, and the process's peak RSS in MB.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time


async def _probe(db_path: str, spawned_at: float) -> dict:
    from hermes_tui.app import build_app
    from hermes_tui.config import AppConfig
    from hermes_tui.widgets.session_list import SessionList

    app = build_app(db_path, config=AppConfig(animations="none"), watch=True)
    painted = None
    async with app.run_test(size=(160, 48)) as pilot:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            screen = app.screen
            lists = screen.query(SessionList)
            if lists and lists.first().loaded and lists.first().row(0) is not None:
                done = asyncio.get_running_loop().create_future()
                app.call_after_refresh(lambda: done.set_result(time.time()))
                painted = await done
                break
            await asyncio.sleep(0.002)
        rows = lists.first().total if lists else 0
        await pilot.pause(0.2)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "first_page_s": None if painted is None else painted - spawned_at,
        "rss_mb": rss_mb,
        "rows": rows,
    }


def main() -> None:
    db_path, spawned_at = sys.argv[1], float(sys.argv[2])
    print(json.dumps(asyncio.run(_probe(db_path, spawned_at))))


if __name__ == "__main__":
    main()
