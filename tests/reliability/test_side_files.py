"""The files beside the store -- pins.json, the recency cache, config.yaml -- are as safe as
the store: parallel pins all kept, foreign keys kept, another
process's pin seen by an open browser, and a FIFO, a device or a symlink at their paths
never hangs, exhausts memory or is replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_state.listing.pins import pins_path
from hermes_state.paths import SideFileError, read_side_file

CLI = [sys.executable, "-m", "hermes_tui.cli"]


def hermes(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, HERMES_HOME=str(home))
    return subprocess.run([*CLI, "sessions", *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def v16_home(tmp_path: Path) -> Path:
    """A store without a ``pinned`` column: its pins live in pins.json."""
    home = tmp_path / "home"
    home.mkdir()
    db = SessionDB(home / "state.db")
    try:
        assert not db.capabilities.has_pinned
        for n in range(30):
            db.create_session(f"s{n:02d}", "cli")
            db.append_message(f"s{n:02d}", "user", f"question {n}")
    finally:
        db.close()
    return home


def test_thirty_parallel_pins_are_all_kept(v16_home: Path) -> None:
    env = dict(os.environ, HERMES_HOME=str(v16_home))
    procs = [
        subprocess.Popen([*CLI, "sessions", "pin", f"s{n:02d}"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for n in range(30)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, (out, err)
    data = json.loads(pins_path().read_text())
    (ids,) = data.values()
    assert sorted(ids) == [f"s{n:02d}" for n in range(30)]


def test_a_pins_key_of_another_shape_is_kept(v16_home: Path) -> None:
    pins_path().parent.mkdir(parents=True, exist_ok=True)
    foreign = {"/elsewhere/state.db": {"ids": ["x"], "note": "a newer version's shape"}, "version": 3}
    pins_path().write_text(json.dumps(foreign))
    assert hermes(v16_home, "pin", "s01").returncode == 0
    data = json.loads(pins_path().read_text())
    assert data["/elsewhere/state.db"] == foreign["/elsewhere/state.db"] and data["version"] == 3
    assert data[str((v16_home / "state.db").resolve())] == ["s01"]


def test_a_damaged_pins_file_is_named_and_left_as_it_is(v16_home: Path) -> None:
    pins_path().parent.mkdir(parents=True, exist_ok=True)
    pins_path().write_bytes(b"{not json")
    result = hermes(v16_home, "pin", "s01")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and str(pins_path()) in result.stderr
    assert "not valid JSON" in result.stderr and "Traceback" not in result.stderr
    assert pins_path().read_bytes() == b"{not json"


def test_a_pin_made_by_another_process_shows_in_an_open_reader(v16_home: Path) -> None:
    reader = SessionDB(v16_home / "state.db", read_only=True)
    try:
        assert reader.lister.pinned_ids_known() == frozenset()
        assert hermes(v16_home, "pin", "s07").returncode == 0
        assert "s07" in reader.lister.pinned_ids_known()
    finally:
        reader.close()


def test_the_change_watcher_reports_another_process_pin(v16_home: Path) -> None:
    from hermes_state.watch import ChangeWatcher

    watcher = ChangeWatcher(v16_home / "state.db")
    try:
        assert not watcher.poll()
        assert hermes(v16_home, "pin", "s03").returncode == 0
        assert watcher.poll().database
        assert not watcher.poll()
    finally:
        watcher.close()


# ------------------------------------------------------------------ FIFOs, devices, links


def test_read_side_file_refuses_a_fifo_and_a_device_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pins.json"
    os.mkfifo(fifo)
    with pytest.raises(SideFileError, match="is a FIFO"):
        read_side_file(fifo)
    with pytest.raises(SideFileError, match="is a device"):
        read_side_file("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_fifo_or_device_at_the_recency_cache_is_a_cache_not_there(v16_home: Path, tmp_path: Path, kind: str) -> None:
    from hermes_state.listing.recency import cache_file

    db_path = v16_home / "state.db"
    cached = cache_file(db_path, tmp_path / "cache")
    cached.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(cached)
    else:
        cached.symlink_to("/dev/zero")
    reader = SessionDB(db_path, read_only=True)
    try:
        reader.recency_cache = cached
        rows = reader.list_sessions_rich(limit=5, order_by_last_active=True)
        assert [r["id"] for r in rows] == ["s29", "s28", "s27", "s26", "s25"]
    finally:
        reader.close()


@pytest.mark.parametrize("which", ["pins", "config"])
def test_a_fifo_beside_the_store_never_hangs_list_or_pin(v16_home: Path, which: str) -> None:
    data_dir = Path(os.environ["HERMES_SESSIONS_DATA_DIR"])
    config_dir = Path(os.environ["HERMES_SESSIONS_CONFIG_DIR"])
    cache_dir = Path(os.environ["HERMES_SESSIONS_CACHE_DIR"])
    for d in (data_dir, config_dir, cache_dir):
        d.mkdir(parents=True, exist_ok=True)
    if which == "pins":
        os.mkfifo(pins_path())
    else:
        os.mkfifo(config_dir / "config.yaml")
    listed = hermes(v16_home, "list", timeout=60)
    assert listed.returncode == 0 and "s29" in listed.stdout, listed.stderr
    pinned = hermes(v16_home, "pin", "s02", timeout=60)
    assert "Traceback" not in pinned.stderr
    if which == "pins":
        assert pinned.returncode == 1
        assert pinned.stderr == f"Error: {pins_path()} is a FIFO, not a regular file; it was left as it is\n"
    else:
        assert pinned.returncode == 0, pinned.stderr


def test_theme_change_keeps_a_symlinked_config_a_symlink(tmp_path: Path) -> None:
    from hermes_tui.config import save_setting

    dotfiles = tmp_path / "dotfiles" / "hermes-sessions.yaml"
    dotfiles.parent.mkdir()
    dotfiles.write_text("# my settings\nanimations: none\n")
    os.chmod(dotfiles, 0o640)
    link = tmp_path / "config" / "config.yaml"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    assert save_setting("theme", "gruvbox", path=link) is None
    assert link.is_symlink() and link.resolve() == dotfiles.resolve()
    assert dotfiles.read_text() == '# my settings\nanimations: none\ntheme: "gruvbox"\n'
    assert (dotfiles.stat().st_mode & 0o777) == 0o640


def test_theme_change_with_a_fifo_config_says_so_and_does_not_hang(tmp_path: Path) -> None:
    from hermes_tui.config import load_config, save_setting

    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    problem = save_setting("theme", "nord", path=fifo)
    assert problem == f"{fifo} is a FIFO, not a regular file; it was left as it is"
    config, problems = load_config(fifo)
    assert problems == [problem]
    assert fifo.exists() and not fifo.is_file()
