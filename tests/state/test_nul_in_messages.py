"""A NUL in a message cuts neither the list's preview nor a search's snippet:
SQLite's C string functions stop at a NUL, and the text after one was once lost from both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hermes_state import SessionDB
from hermes_state.listing import ListQuery

REPO = Path(__file__).resolve().parents[2]


def _store(path: Path) -> None:
    db = SessionDB(path)
    db.create_session("nul-1", "cli")
    db.append_message("nul-1", "user", "before\x00after the nul zebraword here")
    db.append_message("nul-1", "assistant", "reply with quaggaword\x00 and the tail after it")
    db.close()


def test_the_preview_and_the_snippet_keep_the_text_after_a_nul(tmp_path: Path) -> None:
    _store(tmp_path / "state.db")
    db = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        (row,) = db.list_summaries(ListQuery(), limit=5)
        assert "after the nul zebraword" in row.preview
        assert "after the nul" in db.list_sessions_rich(limit=5)[0]["preview"]
        (hit,) = db.search("quaggaword").hits
        assert "and the tail after it" in hit.snippet
        (hit,) = db.search("zebraword").hits
        assert hit.snippet.startswith("before") and "after the nul zebraword" in hit.snippet
    finally:
        db.close()


def test_the_command_line_list_shows_the_text_after_a_nul_and_no_raw_nul(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _store(home / "state.db")
    done = subprocess.run(
        [sys.executable, "-c", "from hermes_tui.cli import sessions_main as m; raise SystemExit(m(['list']))"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
        env={"HERMES_HOME": str(home), "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "COLUMNS": "160"},
    )
    assert done.returncode == 0, done.stderr
    assert "after the nul" in done.stdout
    assert "\x00" not in done.stdout
