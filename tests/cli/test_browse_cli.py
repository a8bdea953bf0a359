"""``hermes sessions browse`` outside the UI: plain fallback, hand-off, demo (CLI-13, BR-6, BR-7)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB
from hermes_tui.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(path))
    monkeypatch.setenv("HERMES_SESSIONS_CONFIG_DIR", str(tmp_path / "config"))
    return path


def _fill(home: Path) -> None:
    db = SessionDB(home / "state.db")
    db.create_session("20250305_091523_a1b2c3", "cli")
    db.append_message("20250305_091523_a1b2c3", "user", "Help me refactor the auth module please")
    db.set_session_title("20250305_091523_a1b2c3", "refactoring auth")
    db.create_session("20250306_101500_f00d1234", "telegram")
    db.append_message("20250306_101500_f00d1234", "user", "x" * 80)
    db.create_session("20250307_101500_7001", "tool")
    db.close()


def _browse(monkeypatch, capsys, stdin: str, *extra: str):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["sessions", "browse", "--plain", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_br6_plain_list_layout_and_selection(home, monkeypatch, capsys, tmp_path) -> None:
    _fill(home)
    # Hermes Agent's `hermes` on PATH, so that the hint after the choice is the agent's command
    # (without one it says what to install instead).
    agent = tmp_path / "agent-bin" / "hermes"
    agent.parent.mkdir()
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    monkeypatch.setenv("PATH", f"{agent.parent}{os.pathsep}{os.environ['PATH']}")
    code, out, err = _browse(monkeypatch, capsys, "2\n")
    assert code == 0
    assert out == "20250305_091523_a1b2c3\n"  # BR-17: stdout carries only the id
    lines = err.splitlines()
    assert lines[1] == "  Browse sessions  (enter number to resume, q to cancel)"
    # Newest first, tool hidden, long labels cut to 47 + "...".
    assert lines[3].startswith("    1. " + "x" * 47 + "...  ")
    assert lines[3].endswith("  telegram")  # the source in full, as ``list`` prints it
    assert lines[4].startswith("    2. refactoring auth" + " " * 34 + "  ")
    assert "tool" not in err
    assert "Run: hermes --resume 20250305_091523_a1b2c3" in err


@pytest.mark.parametrize("answer", ["q\n", "\n", "quit\n", "exit\n", ""])
def test_br6_cancel_prints_cancelled_on_stderr_exit_130(home, monkeypatch, capsys, answer) -> None:
    _fill(home)
    code, out, err = _browse(monkeypatch, capsys, answer)
    assert code == 130  # BR-17, as fzf
    assert "Cancelled." in err
    assert out == ""


def test_br6_invalid_input_asks_again(home, monkeypatch, capsys) -> None:
    _fill(home)
    code, out, err = _browse(monkeypatch, capsys, "9\nabc\n1\n")
    assert code == 0
    assert "  Invalid selection. Enter 1-2 or q to cancel." in err
    assert "  Invalid input. Enter a number or q to cancel." in err
    assert out == "20250306_101500_f00d1234\n"


def test_cli13_source_flag_shows_tool_sessions(home, monkeypatch, capsys) -> None:
    _fill(home)
    code, out, _ = _browse(monkeypatch, capsys, "1\n", "--source", "tool")
    assert code == 0 and out == "20250307_101500_7001\n"


def test_cli13_empty_database_plain_prints_no_sessions(home, monkeypatch, capsys) -> None:
    SessionDB(home / "state.db").close()
    code, out, err = _browse(monkeypatch, capsys, "")
    assert (code, out, err) == (0, "", "No sessions found.\n")


def test_cli13_not_a_database_is_one_line(home, monkeypatch, capsys) -> None:
    (home / "state.db").write_bytes(os.urandom(4096))
    code, out, err = _browse(monkeypatch, capsys, "")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and err.startswith("Error: Could not open session database:")


def _run_cli(args: list[str], env: dict, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hermes_tui.cli", *args],
        input=stdin, capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
        start_new_session=True,  # no controlling terminal: the plain picker (BR-17)
    )


def _env(home: Path, config_dir: Path, **extra: str) -> dict:
    env = dict(os.environ)
    env.update(HERMES_HOME=str(home), HERMES_SESSIONS_CONFIG_DIR=str(config_dir), PYTHONPATH=str(REPO))
    env.update(extra)
    return env


def test_br7_resume_command_runs_in_place_with_id(home, tmp_path) -> None:
    _fill(home)
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text('resume_command: "echo resumed {id}"\n')
    proc = _run_cli(["sessions", "browse"], _env(home, config), "2\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["20250305_091523_a1b2c3", "resumed 20250305_091523_a1b2c3"]
    assert "Traceback" not in proc.stderr


def test_cli13_resume_command_pointing_at_this_browser_is_refused(home, tmp_path) -> None:
    _fill(home)
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text('resume_command: "hermes --resume {id}"\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "hermes"
    script.write_text("#!/bin/sh\n# console script of hermes_tui.cli\nexit 0\n")
    script.chmod(0o755)
    env = _env(home, config, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = _run_cli(["sessions", "browse"], env, "1\n")
    assert proc.returncode == 1
    assert "Not running resume_command" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_br7_no_terminal_falls_back_to_plain_list(home, tmp_path) -> None:
    _fill(home)
    proc = _run_cli(["sessions", "browse"], _env(home, tmp_path / "none"), "q\n")
    assert proc.returncode == 130
    assert proc.stdout == ""
    assert "Browse sessions" in proc.stderr and "Cancelled." in proc.stderr


def test_demo_hand_off_names_the_configured_resume_command_and_runs_nothing(home, tmp_path) -> None:
    """A demo session is not resumed (its store goes with the demo), and
    the hint names the person's resume_command, not a `hermes --resume` they never chose."""
    config = tmp_path / "config"
    config.mkdir()
    marker = tmp_path / "ran"
    (config / "config.yaml").write_text(f'resume_command: "touch {marker} {{id}}"\n')
    proc = _run_cli(["sessions", "browse", "--demo"], _env(home, config), "1\n")
    assert proc.returncode == 0, proc.stderr
    [chosen] = proc.stdout.splitlines()
    assert not marker.exists()
    last = proc.stderr.splitlines()[-1]
    assert "Demo session (its store goes with the demo): not resumed." in last  # (after the prompt)
    assert last.endswith(f"resume_command runs: touch {marker} {chosen}")
    assert "hermes --resume" not in proc.stderr and "Traceback" not in proc.stderr
