"""config.yaml's problems said by every command that reads the file, as the browser shows
them: real processes, a real store under a temporary ``HERMES_HOME`` and a real config file.
Each problem is one ``Warning:`` line on stderr, once a run; stdout is what it is with a sound
file (scripts parse it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hermes_state import SessionDB

REPO = Path(__file__).resolve().parents[2]

#: A misspelt setting and a value out of its range: both named by the browser's status line.
BROKEN = "show_reasonin: true\npage_size: 5\n"
UNKNOWN = "unknown setting 'show_reasonin'"
INVALID = "page_size: 5 is not valid"


def _home(base: Path) -> Path:
    home = base / "hermes"
    home.mkdir(parents=True)
    db = SessionDB(home / "state.db")
    try:
        for n in (1, 2):
            db.create_session(f"s{n}", "cli")
            db.append_message(f"s{n}", "user", f"hello number {n}")
    finally:
        db.close()
    return home


def hermes(base: Path, *args: str, config: str | None, stdin: str = ""):
    """``hermes sessions ARGS`` in its own session (no controlling terminal: the browser is
    the plain picker), with ``config`` as config.yaml (None: no file)."""
    config_dir = base / "config"
    config_dir.mkdir(exist_ok=True)
    if config is not None:
        (config_dir / "config.yaml").write_text(config)
    env = dict(os.environ)
    env.update(
        HERMES_HOME=str(base / "hermes"), HERMES_SESSIONS_CONFIG_DIR=str(config_dir),
        HERMES_SESSIONS_DATA_DIR=str(base / "data"), HERMES_SESSIONS_CACHE_DIR=str(base / "cache"),
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    env.pop("HERMES_SESSIONS_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", "sessions", *args], input=stdin,
        capture_output=True, text=True, cwd=REPO, env=env, timeout=120, start_new_session=True,
    )


def said_once(stderr: str, config_dir: Path) -> None:
    path = str(config_dir / "config.yaml")
    for problem in (UNKNOWN, INVALID):
        lines = [line for line in stderr.splitlines() if problem in line]
        assert len(lines) == 1, stderr
        assert lines[0].startswith("Warning: ") and path in lines[0], stderr
    assert "Traceback" not in stderr


def test_delete_says_each_problem_of_config_yaml_once_on_stderr_and_prints_the_same_stdout(tmp_path):
    sound, broken = tmp_path / "sound", tmp_path / "broken"
    _home(sound), _home(broken)
    # (asked first: its note on what else a delete touches reads live_window_s)
    expected = hermes(sound, "delete", "s1", config=None, stdin="y\n")
    assert expected.returncode == 0, expected.stderr
    result = hermes(broken, "delete", "s1", config=BROKEN, stdin="y\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected.stdout
    said_once(result.stderr, broken / "config")
    # (what a delete says besides is still said)
    assert "hermes sessions restore s1" in result.stderr


def test_the_plain_browser_says_the_problems_the_app_would_show_in_its_status_line(tmp_path):
    _home(tmp_path)
    result = hermes(tmp_path, "browse", "--plain", config=BROKEN, stdin="q\n")
    assert result.returncode == 130, result.stderr
    assert result.stdout == ""
    said_once(result.stderr, tmp_path / "config")


def test_the_plain_browser_across_profiles_says_them_too(tmp_path):
    home = _home(tmp_path)
    (home / "profiles" / "work").mkdir(parents=True)
    SessionDB(home / "profiles" / "work" / "state.db").close()
    result = hermes(tmp_path, "browse", "--all-profiles", "--plain", config=BROKEN, stdin="q\n")
    assert result.returncode == 130, result.stderr
    said_once(result.stderr, tmp_path / "config")


def test_a_sound_config_file_adds_nothing_to_stderr(tmp_path):
    _home(tmp_path)
    result = hermes(tmp_path, "delete", "s1", config="page_size: 50\n", stdin="y\n")
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr


def test_list_and_its_json_read_no_setting_and_stay_as_they_are_whatever_the_file_holds(tmp_path):
    _home(tmp_path)
    clean = hermes(tmp_path, "list", "--json", config=None)
    result = hermes(tmp_path, "list", "--json", config=BROKEN)
    assert result.returncode == 0 and result.stdout == clean.stdout and result.stderr == "", result.stderr
