"""Project commands: ``hermes sessions generate`` and ``hermes sessions simulate``."""

from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB
from hermes_tui.cli import main


def test_generate_builds_a_deterministic_corpus(tmp_path: Path, capsys) -> None:
    homes = [tmp_path / "a", tmp_path / "b"]
    for home in homes:
        code = main(["sessions", "generate", "--size", "600", "--seed", "3", "--now", "1794988800", "--home", str(home)])
        assert code == 0
    dumps = []
    for home in homes:
        db = SessionDB(home / "state.db", read_only=True)
        assert db.message_count() == 600
        dumps.append([tuple(r) for r in db._fetchall("SELECT session_id, role, content, timestamp FROM messages ORDER BY id")])
        db.close()
    assert dumps[0] == dumps[1]
    # A second run refuses to overwrite without --overwrite.
    assert main(["sessions", "generate", "--size", "600", "--home", str(homes[0])]) == 1


def test_generate_usage_error_exits_2(tmp_path: Path) -> None:
    assert main(["sessions", "generate", "--size", "lots", "--home", str(tmp_path)]) == 2


def test_simulate_writes_sessions_and_reports(tmp_path: Path, capsys) -> None:
    # A known number of events, not a time: a second and a half may hold none on a loaded machine.
    code = main(["sessions", "simulate", "--home", str(tmp_path), "--writers", "1",
                 "--events", "30", "--rate", "0", "--seed", "2"])
    out = capsys.readouterr()
    assert code == 0, out
    db = SessionDB(tmp_path / "state.db", read_only=True)
    try:
        assert db.session_count() > 0 and db.message_count() > 0
    finally:
        db.close()
    assert "errors 0" in out.out + out.err
