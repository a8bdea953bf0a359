"""Lineage tree screen (LI-1 edge kinds, LI-7 live tip, LI-13 tree)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.screens.browser import BrowserScreen
from hermes_tui.screens.lineage import LineageScreen
from hermes_tui.screens.recap import RecapScreen
from hermes_tui.screens.transcript import TranscriptScreen
from hermes_tui.widgets.lineage_tree import CAME_FROM, CYCLE, LIVE_TIP, BROKEN_PARENT, LineageTree
from hermes_tui.widgets.session_list import SessionList

from .conftest import SIZE, make_app, settle
from .dataset import DAY, HOUR, NOW

ROOT = Path(__file__).resolve().parents[2]

# ----------------------------------------------------------------------------- a family

#: The original conversation, ended with /branch.
P = "20261110_090000_p0a1"
#: The branch, later compressed twice: A → B → C is a 3-segment compression chain.
A = "20261110_110000_a1b2"
B = "20261115_080000_b2c3"
C = "20261118_060000_c3d4"
#: A subagent started while B was live.
D = "20261116_120000_d4e5"


def add_session(
    db: SessionDB,
    sid: str,
    *,
    title: str | None,
    started: float,
    ended: float | None = None,
    reason: str | None = None,
    parent: str | None = None,
    source: str = "cli",
    messages: list[tuple[str, str]] = (),
) -> None:
    """A session through the real API, then its timestamps pinned relative to NOW."""
    db.create_session(sid, source, model="claude-sonnet-4", parent_session_id=parent)
    for index, (role, content) in enumerate(messages):
        mid = db.append_message(sid, role, content)
        stamp = started + 60 * (index + 1)
        db._execute_write(
            lambda c, mid=mid, stamp=stamp: c.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (stamp, mid))
        )
    if title:
        db.set_session_title(sid, title)
    db._execute_write(
        lambda c: c.execute(
            "UPDATE sessions SET started_at = ?, ended_at = ?, end_reason = ? WHERE id = ?",
            (started, ended, reason, sid),
        )
    )


def build_family_db(path: Path) -> Path:
    db = SessionDB(path)
    try:
        add_session(db, P, title="kyoto research", started=NOW - 8 * DAY, ended=NOW - 8 * DAY + HOUR,
                    reason="branched",
                    messages=[("user", "Compare ryokan in Kyoto"), ("assistant", "Here are three options."),
                              ("user", "Branch this: focus on budget")])
        add_session(db, A, title="kyoto budget", parent=P, started=NOW - 8 * DAY + 2 * HOUR,
                    ended=NOW - 3 * DAY - HOUR, reason="compression",
                    messages=[("user", "Budget ryokan only"), ("assistant", "Two under 15,000 yen."),
                              ("user", "Add transport"), ("assistant", "JR pass is not worth it.")])
        add_session(db, B, title="kyoto budget #2", parent=A, started=NOW - 3 * DAY - 50 * 60,
                    ended=NOW - 2 * HOUR, reason="compression",
                    messages=[("user", "[summary of earlier turns]"), ("assistant", "Continuing."),
                              ("user", "Check hotel prices for May")])
        add_session(db, D, title="subagent: hotel prices", parent=B, started=NOW - 2 * DAY,
                    ended=NOW - 2 * DAY + 600, reason="completed", source="tool",
                    messages=[("user", "Find hotel prices"), ("assistant", "Median 12,400 yen.")])
        add_session(db, C, title="kyoto budget #3", parent=B, started=NOW - 2 * HOUR + 60,
                    messages=[("user", "[summary]"), ("assistant", "Where were we?")])
    finally:
        db.close()
    return path


def labels(tree: LineageTree) -> dict[str, str]:
    """Session id → the plain text of its tree label."""
    out = {}
    nodes = [tree.root]
    while nodes:
        node = nodes.pop()
        if node.data is not None:
            out[node.data.id] = node.label.plain
        nodes.extend(node.children)
    return out


async def open_lineage(pilot, session_id: str) -> LineageScreen:
    pilot.app.push_screen(pilot.app.ctx.screens.lineage(session_id))
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, LineageScreen)
    return screen


# ----------------------------------------------------------------------------- behaviour


async def test_li13_l_on_list_opens_family_on_current_node(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        lst = app.screen.query_one(SessionList)
        while lst.current.id != "20261117_100000_e5f6a7b8":
            await pilot.press("j")
            await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LineageScreen)
        tree = screen.query_one(LineageTree)
        assert tree.root.data.id == "20261117_090000_d4e5f6a7"  # the root of the chain
        assert tree.highlighted.id == "20261117_100000_e5f6a7b8"  # opens on where we came from
        text = labels(tree)
        tip = text["20261117_100000_e5f6a7b8"]
        assert "travel plans #2" in tip and LIVE_TIP in tip and CAME_FROM in tip
        assert "⟳ compression" in tip and "2 msgs" in tip and "live" in tip
        root = text["20261117_090000_d4e5f6a7"]
        assert "ended: compression" in root and LIVE_TIP not in root and CAME_FROM not in root
        # Time span with the injected clock: started 23h ago, last message 22h ago.
        assert "23h ago → 22h ago" in root
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, BrowserScreen)


async def test_li1_edge_kinds_live_tip_and_came_from_in_family(tmp_path: Path) -> None:
    path = build_family_db(tmp_path / "state.db")
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, B)
        tree = screen.query_one(LineageTree)
        assert tree.root.data.id == P
        assert tree.highlighted.id == B
        text = labels(tree)
        assert set(text) == {P, A, B, C, D}
        assert text[P].startswith("◉ root") and "ended: branched" in text[P]
        assert text[A].startswith("↱ branch") and "ended: compression" in text[A]
        assert text[B].startswith("⟳ compression") and CAME_FROM in text[B]
        assert text[C].startswith("⟳ compression") and LIVE_TIP in text[C] and "live" in text[C]
        assert text[D].startswith("⇢ delegate") and "ended: completed" in text[D]
        # Only the live end of the compression chain is the tip; only B is "came from".
        assert sum(LIVE_TIP in t for t in text.values()) == 1
        assert sum(CAME_FROM in t for t in text.values()) == 1
        # Each label carries id, message count and span (relative to the injected clock).
        # (a span whose ends read the same is shown once)
        assert B in text[B] and "3 msgs · 3d ago · ended" in text[B]
        assert "2 msgs · 1h ago · live" in text[C]
        # The header counts the family.
        header = str(screen.query_one("#lineage-header").render())
        assert "5 sessions" in header and "2 compression" in header and "1 branch" in header
        assert "1 delegate" in header


async def test_li13_enter_on_node_opens_its_recap_and_t_its_transcript(tmp_path: Path) -> None:
    path = build_family_db(tmp_path / "state.db")
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, C)
        tree = screen.query_one(LineageTree)
        assert tree.highlighted.id == C
        await pilot.press("up")  # D (delegate, started before C) sits above C under B
        await settle(pilot)
        assert tree.highlighted.id == D
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RecapScreen)
        assert app.screen.session_id == D
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen) and app.screen.session_id == D


COMPRESS_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from hermes_state import SessionDB
db = SessionDB(sys.argv[2])
db.end_session(sys.argv[3], "compression")
db.create_session(sys.argv[4], "discord", parent_session_id=sys.argv[3])
db.append_message(sys.argv[4], "user", "continued after a second compression")
db.close()
"""


async def test_li7_live_refresh_shows_new_compression_child(fixed_db: Path) -> None:
    """A gateway (a real second process) compresses the live tip: the new child appears."""
    tip, new = "20261117_100000_e5f6a7b8", "20261126_000000_f7a8b9"
    app = make_app(fixed_db, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, tip)
        tree = screen.query_one(LineageTree)
        assert set(labels(tree)) == {"20261117_090000_d4e5f6a7", tip}
        proc = subprocess.run(
            [sys.executable, "-c", COMPRESS_SCRIPT, str(ROOT), str(fixed_db), tip, new],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and new not in labels(tree):
            await pilot.pause(0.05)
        await settle(pilot)
        text = labels(tree)
        assert new in text, "the new compression child did not appear"
        assert app.screen is screen  # refreshed in place, not reopened
        assert LIVE_TIP in text[new] and "⟳ compression" in text[new]
        assert LIVE_TIP not in text[tip] and "ended: compression" in text[tip]
        assert tree.highlighted.id == tip  # the cursor stayed on the same session
        assert CAME_FROM in text[tip]


def _raw(path: Path, *statements: tuple[str, tuple]) -> None:
    """Damage the database with raw SQL (foreign keys off), as a broken store might be."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA foreign_keys=OFF")
    for sql, params in statements:
        conn.execute(sql, params)
    conn.commit()
    conn.close()


async def test_li1_broken_parent_renders_marker_not_exception(tmp_path: Path) -> None:
    path = build_family_db(tmp_path / "state.db")
    _raw(path, ("UPDATE sessions SET parent_session_id = ? WHERE id = ?", ("gone_session", A)))
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, C)
        tree = screen.query_one(LineageTree)
        assert tree.root.data.id == A  # a broken link is treated like a root (LI-1)
        text = labels(tree)
        assert f"{BROKEN_PARENT} (gone_session)" in text[A]
        assert set(text) == {A, B, C, D}
        header = str(screen.query_one("#lineage-header").render())
        assert "broken chain" in header


async def test_li10_parent_cycle_renders_marker_not_exception(tmp_path: Path) -> None:
    path = build_family_db(tmp_path / "state.db")
    # P's parent becomes C: P → A → B → C → P is a loop.
    _raw(path, ("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (C, P)))
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, B)
        tree = screen.query_one(LineageTree)
        text = labels(tree)
        assert set(text) == {P, A, B, C, D}
        assert any(CYCLE in t for t in text.values())
        assert tree.highlighted.id == B
        assert "broken chain" in str(screen.query_one("#lineage-header").render())


async def test_li13_unknown_session_says_not_found(fixed_db: Path) -> None:
    app = make_app(fixed_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_lineage(pilot, "no_such_session")
        assert "not found" in str(screen.query_one("#lineage-header").render())
        await pilot.press("enter")  # nothing to open; must not fail
        await settle(pilot)
        assert app.screen is screen


# ----------------------------------------------------------------------------- snapshot


def test_snapshot_lineage_compression_chain_branch_delegate(tmp_path: Path, snap_compare) -> None:
    path = build_family_db(tmp_path / "state.db")

    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(pilot.app.ctx.screens.lineage(B))
        await settle(pilot)

    assert snap_compare(make_app(path), terminal_size=(120, 32), run_before=run_before)
