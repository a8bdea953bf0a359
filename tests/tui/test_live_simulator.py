"""The browser stays current while a real simulator process writes.

``hermes sessions simulate`` runs as its own process with several writers against the
database the browser has open: new sessions, titles and compression children must show up
in the list without a restart, and no writer may see an error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.widgets.session_list import SessionList

from .conftest import make_app, settle

REPO = Path(__file__).resolve().parents[2]


def _listed(db_path: Path, limit: int) -> list[tuple[str, str | None]]:
    db = SessionDB(db_path, read_only=True)
    try:
        return [(r["id"], r["title"]) for r in db.list_sessions_rich(exclude_sources=["tool"], limit=limit, order_by_last_active=True)]
    finally:
        db.close()


async def test_gw_browser_follows_a_real_simulator(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    db_path = home / "state.db"
    SessionDB(db_path).close()
    app = make_app(db_path, watch=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        assert lst.total == 0
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.Popen(
            [sys.executable, "-m", "hermes_tui.cli", "sessions", "simulate", "--home", str(home),
             "--writers", "3", "--duration", "6", "--rate", "25", "--seed", "11"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )
        seen_totals = set()
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            await pilot.pause(0.1)
            seen_totals.add(lst.total)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err.decode()
        assert b"errors 0" in out + err
        assert b"Traceback" not in err
        # The list grew while the simulator ran (live, not only at the end).
        assert len(seen_totals) > 2
        # Within a second of the last commit the browser shows exactly what the store lists:
        # new sessions, their titles, and compression chains at their newest tip.
        expected = _listed(db_path, 60)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            await settle(pilot)
            shown = [(lst.row(i).id, lst.row(i).title) for i in range(min(lst.total, 60)) if lst.row(i)]
            if shown == expected:
                break
            await pilot.pause(0.1)
        assert shown == expected
        assert any(title for _, title in shown)
        db = SessionDB(db_path, read_only=True)
        try:
            compressions = db._fetchone("SELECT COUNT(*) FROM sessions WHERE end_reason = 'compression'")[0]
        finally:
            db.close()
        if compressions:
            assert any(lst.row(i).lineage_root_id for i in range(min(lst.total, 60)) if lst.row(i))
