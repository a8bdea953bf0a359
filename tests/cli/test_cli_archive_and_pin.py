"""Archive / unarchive / pin / unpin from the command line (CLI-17), on upstream's own stores:
the whole lineage, pinned first, ambiguous prefixes and empty ids, list --archived."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.listing.pins import pinned_in_file
from hermes_tui.cli import main


@pytest.fixture
def home(shared_fixtures_dir: Path, tmp_path: Path, monkeypatch):
    def make(name: str) -> Path:
        home = tmp_path / name.replace(".db", "")
        home.mkdir()
        shutil.copyfile(shared_fixtures_dir / name, home / "state.db")
        monkeypatch.setenv("HERMES_HOME", str(home))
        return home

    return make


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["sessions", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def listed(capsys, *flags: str) -> list[str]:
    code, out, _ = run(capsys, "list", "--limit", "100", *flags)
    assert code == 0
    return [line.split()[-1].split("_")[-1] for line in out.splitlines()[2:]]


def test_cli17_archive_whole_lineage_then_unarchive(capsys, home):
    path = home("upstream_v30.db") / "state.db"
    code, out, err = run(capsys, "archive", "20260921_122000_c3")
    assert (code, err) == (0, "") and "Archived '20260921_122000_c3'." in out
    db = SessionDB(path, read_only=True)
    try:
        archived = {r[0][-2:] for r in db._fetchall("SELECT id FROM sessions WHERE archived = 1")}
        assert archived == {"a1", "c1", "c2", "c3"}
        assert db._fetchone("SELECT version FROM schema_version")[0] == 30
    finally:
        db.close()
    assert "c3" not in listed(capsys) and "c3" in listed(capsys, "--archived")
    assert run(capsys, "unarchive", "20260921_120000_c1")[0] == 0
    assert "c3" in listed(capsys)


def test_cli17_pinned_first_in_list_column_or_settings_file(capsys, home):
    home("upstream_v30.db")
    assert run(capsys, "pin", "20260921_163000_cr")[0] == 0
    assert listed(capsys)[:2] == ["cr", "r1"]  # both pinned, newest first
    assert run(capsys, "unpin", "20260921_140000_r1", "20260921_163000_cr")[0] == 0
    assert listed(capsys)[0] == "cr" and "r1" in listed(capsys)[1:]
    # A v16 store has no pinned column: the pin lives in our settings file, the store is untouched.
    path = home("upstream_v16.db") / "state.db"
    before = path.read_bytes()
    assert run(capsys, "pin", "20260528_160000_gg0001")[0] == 0
    assert path.read_bytes() == before
    assert "20260528_160000_gg0001" in pinned_in_file(path)
    assert listed(capsys)[0] == "gg0001"


def test_cli17_ambiguous_prefix_says_how_many_and_changes_nothing(capsys, home):
    path = home("upstream_v30.db") / "state.db"
    before = path.read_bytes()
    code, out, err = run(capsys, "archive", "20260921_12")
    assert code == 1
    assert "is ambiguous: 3 sessions match" in out + err
    code, out, err = run(capsys, "pin", "no_such_session")
    assert code == 1 and "not found" in out + err
    assert path.read_bytes() == before


def test_cli17_empty_id_is_an_error_never_every_session(capsys, home):
    path = home("upstream_v30.db") / "state.db"
    before = path.read_bytes()
    for verb in ("archive", "unarchive", "pin", "unpin"):
        code, out, err = run(capsys, verb, "")
        assert code == 2 and "empty session id" in out + err and "Traceback" not in out + err
    assert path.read_bytes() == before


def test_cli17_archive_brings_an_old_store_to_16_first(capsys, home):
    path = home("upstream_v11.db") / "state.db"
    code, out, err = run(capsys, "archive", "20260102_090000_a1a1a1")
    assert code == 0 and "Archived" in out, err
    db = SessionDB(path, read_only=True)
    try:
        assert db.opened_version == 16
        assert db._fetchone("SELECT archived FROM sessions WHERE id = '20260102_090000_a1a1a1'")[0] == 1
    finally:
        db.close()


@pytest.mark.parametrize("name", ["upstream_v30.db", "upstream_v16.db"])
def test_stats_total_is_every_session_its_source_lines_count(capsys, home, name):
    """A store with archived and hidden sessions: the total and the per-source lines count the
    same sessions (every row the store holds), so the lines add up to the total."""
    path = home(name) / "state.db"
    code, out, err = run(capsys, "stats")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    total = int(lines[0].removeprefix("Total sessions: "))
    per_source = [int(line.split(": ")[1].split()[0]) for line in lines if line.startswith("  ")]
    db = SessionDB(path, read_only=True)
    try:
        rows = db._fetchone("SELECT COUNT(*) FROM sessions")[0]
        hidden_or_archived = db._fetchone(
            "SELECT COUNT(*) FROM sessions WHERE archived = 1"
            + (" OR hidden = 1" if name == "upstream_v30.db" else "")
        )[0]
    finally:
        db.close()
    assert hidden_or_archived > 0  # the case this test is about
    assert total == sum(per_source) == rows


def test_an_empty_list_over_archived_conversations_says_where_they_are(capsys, home):
    home("upstream_v30.db")  # whatsapp: one session, archived
    code, out, err = run(capsys, "list", "--source", "whatsapp")
    assert (code, out) == (0, "No sessions found.\n")  # CLI-3's line, exactly
    assert err == "(1 archived: hermes sessions list --source whatsapp --archived)\n"
    code, out, err = run(capsys, "list", "--source", "matrix")
    # (no session has that source at all: a warning naming the ones there are, no archive hint)
    assert (code, out) == (0, "No sessions found.\n")
    assert err == ("Warning: no session has source 'matrix'; sources in this store: "
                   "cli, cron, discord, kanban, subagent, telegram, whatsapp\n")
    assert "taxes 2025" in run(capsys, "list", "--source", "whatsapp", "--archived")[1]
