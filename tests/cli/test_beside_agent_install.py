"""Installed beside the real Hermes Agent (``hermes-agent`` from the package index), in throwaway
environments: the agent's own commands keep working whichever is installed first.

* one environment, agent first then ours: pip leaves our ``hermes`` in ``bin`` (the later install
  wins the name); it runs ``hermes sessions`` and hands everything else to the agent;
* one environment, ours first then the agent: the agent's ``hermes`` is in ``bin``; ours is
  ``hermes-sessions``;
* separate environments (pipx, ``uv tool``): our ``hermes`` first on PATH hands the agent's
  commands to the agent's ``hermes`` further down PATH.

In the shared environment both packages install an importable ``hermes_state`` (the agent's a
module, ours a package, which Python prefers): the agent's programs must still get theirs.
Slow (three environments, the agent's dependencies among them), and run by CI with the rest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(argv: list, *, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> dict[str, Path]:
    """The real hermes-agent wheel from the index and our wheel built from this tree."""
    where = tmp_path_factory.mktemp("wheels")
    fetched = _run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", where / "agent",
                    "hermes-agent"])
    if fetched.returncode != 0:
        pytest.skip(f"hermes-agent cannot be fetched here: {fetched.stderr.strip()[-300:]}")
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", where / "ours", REPO])
    assert built.returncode == 0, built.stderr[-2000:]
    (agent,) = (where / "agent").glob("hermes_agent-*.whl")
    (ours,) = (where / "ours").glob("hermes_sessions-*.whl")
    return {"agent": agent, "ours": ours}


def _venv(path: Path, *wheels: Path) -> Path:
    """A new virtual environment with ``wheels`` installed one after the other."""
    made = _run([sys.executable, "-m", "venv", path])
    assert made.returncode == 0, made.stderr
    for wheel in wheels:
        installed = _run([path / "bin" / "python", "-m", "pip", "install", "--quiet", wheel])
        assert installed.returncode == 0, installed.stderr[-3000:]
    return path / "bin"


@pytest.fixture(scope="module")
def user_env(tmp_path_factory) -> dict[str, str]:
    """A person's environment: their own HOME and HERMES_HOME, nothing of this checkout."""
    home = tmp_path_factory.mktemp("user")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "HERMES_SESSIONS_HANDOFFS")}
    env.update(HOME=str(home), HERMES_HOME=str(home / ".hermes"))
    return env


def _with_path(env: dict, *bins: Path) -> dict:
    return dict(env, PATH=os.pathsep.join([*map(str, bins), "/usr/bin", "/bin"]))


def _agents_commands_work(bin_dir: Path, env: dict) -> None:
    env = _with_path(env, bin_dir)
    python = bin_dir / "python"
    which = _run([python, "-c", "import hermes_state; print(hermes_state.__file__)"], env=env)
    assert which.returncode == 0, which.stderr
    assert which.stdout.strip().endswith("hermes_state.py"), "the agent must import its own store"
    # The agent's own session command (0.19 failed here with ImportError: workspace_key).
    listed = _run([python, "-m", "hermes_cli.main", "sessions", "list"], env=env)
    assert listed.returncode == 0 and "Traceback" not in listed.stdout + listed.stderr, listed.stderr[-2000:]
    # `hermes` itself, whichever script pip left in bin: the agent answers.
    helped = _run([bin_dir / "hermes", "--help"], env=env)
    assert helped.returncode == 0 and "Hermes Agent" in helped.stdout, helped.stderr[-2000:]
    # Ours, under the name nothing else installs.
    ours = _run([bin_dir / "hermes-sessions", "stats"], env=env)
    assert ours.returncode == 0 and ours.stdout.startswith("Total sessions: "), ours.stderr[-2000:]


def _whose_hermes_sessions(bin_dir: Path, env: dict) -> str:
    helped = _run([bin_dir / "hermes", "sessions", "--help"], env=_with_path(env, bin_dir))
    assert helped.returncode == 0, helped.stderr[-2000:]
    return "ours" if "restore" in helped.stdout else "agent's"


def test_agent_first_then_ours_in_one_environment(packages, user_env, tmp_path):
    bin_dir = _venv(tmp_path / "venv", packages["agent"], packages["ours"])
    _agents_commands_work(bin_dir, user_env)
    assert _whose_hermes_sessions(bin_dir, user_env) == "ours"


def test_ours_first_then_the_agent_in_one_environment(packages, user_env, tmp_path):
    bin_dir = _venv(tmp_path / "venv", packages["ours"], packages["agent"])
    _agents_commands_work(bin_dir, user_env)
    assert _whose_hermes_sessions(bin_dir, user_env) == "agent's"


def test_separate_environments_ours_first_on_path(packages, user_env, tmp_path):
    agent_bin = _venv(tmp_path / "agent-venv", packages["agent"])
    ours_bin = _venv(tmp_path / "ours-venv", packages["ours"])
    env = _with_path(user_env, ours_bin, agent_bin)
    helped = _run([ours_bin / "hermes", "--help"], env=env)
    assert helped.returncode == 0 and "Hermes Agent" in helped.stdout, helped.stderr[-2000:]
    assert _run([ours_bin / "hermes", "sessions", "list"], env=env).returncode == 0
    agents = _run([agent_bin / "hermes", "sessions", "list"], env=env)
    assert agents.returncode == 0 and "Traceback" not in agents.stderr, agents.stderr[-2000:]
