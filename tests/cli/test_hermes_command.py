"""The installed ``hermes`` and ``hermes-sessions`` scripts beside (or without) Hermes Agent.

Real processes through the console scripts pip installed into this environment, with PATH
chosen by each test: no Hermes Agent at all, an agent's ``hermes`` elsewhere on PATH (a real
executable that reports how it was called), another copy of ours, and a wrapper leading back
here. The real ``hermes-agent`` package, in throwaway environments and both install orders,
is ``test_beside_agent_install.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_state import SessionDB

BIN = Path(sys.executable).parent
HERMES = BIN / "hermes"
HERMES_SESSIONS = BIN / "hermes-sessions"

pytestmark = pytest.mark.skipif(
    not (HERMES.exists() and HERMES_SESSIONS.exists()),
    reason="the console scripts are not installed in this environment (pip install -e '.[test]')",
)

#: Stands for Hermes Agent's own `hermes` found on PATH: says how it was called, exits 7.
AGENT_SCRIPT = """#!/bin/sh
echo "agent got: $*"
exit 7
"""


@pytest.fixture
def home(tmp_path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    db = SessionDB(path / "state.db")
    db.create_session("20250305_091523_a1b2c3", "cli")
    db.append_message("20250305_091523_a1b2c3", "user", "Help me refactor the auth module please")
    db.set_session_title("20250305_091523_a1b2c3", "refactoring auth")
    db.close()
    return path


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def run(script: Path, *args: str, home: Path, path_dirs: list[Path], stdin: str = "") -> subprocess.CompletedProcess:
    """Run ``script`` with PATH made of ``path_dirs`` alone (plus /bin for the sh scripts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_SESSIONS_HANDOFFS")}
    env.update(HERMES_HOME=str(home), PATH=os.pathsep.join([*map(str, path_dirs), "/bin", "/usr/bin"]))
    return subprocess.run([str(script), *args], input=stdin, capture_output=True, text=True,
                          env=env, timeout=120)


def _no_other_hermes() -> None:
    for directory in ("/bin", "/usr/bin"):
        if shutil.which("hermes", path=directory):
            pytest.skip(f"a `hermes` in {directory} would be taken for Hermes Agent's")


def test_hermes_sessions_runs_the_session_actions_under_its_own_name(home):
    _no_other_hermes()
    listed = run(HERMES_SESSIONS, "list", home=home, path_dirs=[BIN])
    assert listed.returncode == 0 and listed.stderr == ""
    assert "refactoring auth" in listed.stdout
    # The same listing as `hermes sessions list`, byte for byte.
    assert run(HERMES, "sessions", "list", home=home, path_dirs=[BIN]).stdout == listed.stdout
    # Its usage names it as it was called.
    usage = run(HERMES_SESSIONS, "list", "--bogus", home=home, path_dirs=[BIN])
    assert usage.returncode == 2 and usage.stdout == ""
    assert usage.stderr.startswith("usage: hermes-sessions list")


def test_without_hermes_agent_other_commands_say_what_to_install(home):
    _no_other_hermes()
    for args in (["--resume", "20250305_091523_a1b2c3"], ["chat"], []):
        result = run(HERMES, *args, home=home, path_dirs=[BIN])
        assert result.returncode == 127, args
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1 and "pip install hermes-agent" in result.stderr
        assert "Traceback" not in result.stderr
    helped = run(HERMES, "--help", home=home, path_dirs=[BIN])
    assert helped.returncode == 0 and "hermes sessions" in helped.stdout
    assert "pip install hermes-agent" in helped.stdout
    # A typo of one of our actions is our usage error, not "install Hermes Agent".
    typo = run(HERMES, "sessions", "lsit", home=home, path_dirs=[BIN])
    assert typo.returncode == 2 and "invalid choice: 'lsit'" in typo.stderr
    # An action only the agent has is the agent's: what to install, not "invalid choice".
    for action in ("optimize", "repair"):
        theirs = run(HERMES, "sessions", action, home=home, path_dirs=[BIN])
        assert theirs.returncode == 127 and theirs.stdout == "", action
        assert "pip install hermes-agent" in theirs.stderr and "invalid choice" not in theirs.stderr


def test_other_commands_go_to_the_agents_hermes_on_path(home, tmp_path):
    agent_bin = tmp_path / "agent-bin"
    _executable(agent_bin / "hermes", AGENT_SCRIPT)
    dirs = [BIN, agent_bin]  # ours first: the case where ours shadows the agent's
    resumed = run(HERMES, "--resume", "20250305_091523_a1b2c3", home=home, path_dirs=dirs)
    assert (resumed.returncode, resumed.stdout) == (7, "agent got: --resume 20250305_091523_a1b2c3\n")
    # `sessions` stays ours, except an action only the agent has (upstream's `optimize`).
    ours = run(HERMES, "sessions", "list", home=home, path_dirs=dirs)
    assert ours.returncode == 0 and "refactoring auth" in ours.stdout
    theirs = run(HERMES, "sessions", "optimize", home=home, path_dirs=dirs)
    assert (theirs.returncode, theirs.stdout) == (7, "agent got: sessions optimize\n")


def test_another_copy_of_ours_on_path_is_not_taken_for_the_agent(home, tmp_path):
    _no_other_hermes()
    elsewhere = tmp_path / "other-env" / "bin"
    elsewhere.mkdir(parents=True)
    shutil.copy2(HERMES, elsewhere / "hermes")  # e.g. a pipx install of this project
    result = run(HERMES, "chat", home=home, path_dirs=[BIN, elsewhere])
    assert result.returncode == 127 and "pip install hermes-agent" in result.stderr


def test_a_wrapper_leading_back_here_stops_instead_of_looping(home, tmp_path):
    _no_other_hermes()
    wrapper_bin = tmp_path / "wrapper-bin"
    _executable(wrapper_bin / "hermes", f'#!/bin/sh\nexec "{HERMES}" "$@"\n')
    result = run(HERMES, "chat", home=home, path_dirs=[BIN, wrapper_bin])
    assert result.returncode == 127 and result.stdout == ""
    assert "leads back to this one" in result.stderr and "Traceback" not in result.stderr


def _fill_for_browse(home: Path, config: Path, resume_command: str | None) -> dict:
    config.mkdir(parents=True, exist_ok=True)
    if resume_command is not None:
        (config / "config.yaml").write_text(f'resume_command: "{resume_command}"\n')
    return {"HERMES_SESSIONS_CONFIG_DIR": str(config)}


def _browse(home: Path, config: Path, path_dirs: list[Path]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_SESSIONS_HANDOFFS")}
    env.update(HERMES_HOME=str(home), HERMES_SESSIONS_CONFIG_DIR=str(config),
               PATH=os.pathsep.join([*map(str, path_dirs), "/bin", "/usr/bin"]))
    return subprocess.run([str(HERMES_SESSIONS), "browse", "--plain"], input="1\n", capture_output=True,
                          text=True, env=env, timeout=120)


def test_the_resume_hint_says_hermes_resume_only_where_an_agent_can_run_it(home, tmp_path):
    _no_other_hermes()
    config = tmp_path / "config"
    _fill_for_browse(home, config, None)
    alone = _browse(home, config, [BIN])
    assert (alone.returncode, alone.stdout) == (0, "20250305_091523_a1b2c3\n")
    assert ("Resume it with Hermes Agent (not installed here: pip install hermes-agent"
            in alone.stderr)
    agent_bin = tmp_path / "agent-bin"
    _executable(agent_bin / "hermes", AGENT_SCRIPT)
    beside = _browse(home, config, [BIN, agent_bin])
    assert "Run: hermes --resume 20250305_091523_a1b2c3" in beside.stderr


def test_a_resume_command_through_our_hermes_reaches_the_agent(home, tmp_path):
    """``hermes --resume {id}`` where PATH's ``hermes`` is ours: not refused (it hands the
    command to the agent); ``hermes sessions browse`` would start this browser: refused."""
    config = tmp_path / "config"
    agent_bin = tmp_path / "agent-bin"
    _executable(agent_bin / "hermes", AGENT_SCRIPT)
    _fill_for_browse(home, config, "hermes --resume {id}")
    resumed = _browse(home, config, [BIN, agent_bin])
    assert resumed.returncode == 7, resumed.stderr
    assert resumed.stdout == "20250305_091523_a1b2c3\nagent got: --resume 20250305_091523_a1b2c3\n"
    _fill_for_browse(home, config, "hermes sessions browse")
    refused = _browse(home, config, [BIN, agent_bin])
    assert refused.returncode == 1 and "Not running resume_command" in refused.stderr
