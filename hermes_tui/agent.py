"""Where Hermes Agent's own ``hermes`` is, and running it (for :mod:`hermes_tui.hermes_shim`).

1. Hermes Agent installed in this same environment (the ``hermes-agent`` distribution): its
   ``hermes`` entry point, started in a fresh interpreter. Fresh, because this process has
   imported our packages (``hermes_state`` above all, a name the agent's own module has too)
   and changed pydantic's plugin loader: the agent must start as its own script would.
2. Else another ``hermes`` on PATH that is not one of ours (pipx, ``uv tool`` or the agent's
   installer put one there), run in place of this process.

Never into ourselves: a candidate on PATH whose script is one of ours is skipped, and each
hand-off through PATH counts itself in ``HERMES_SESSIONS_HANDOFFS`` so that a wrapper script
leading back here stops after a few rounds instead of looping. The browser asks here too,
for its resume hint and for which resume commands would start it again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: The package index name of Hermes Agent, and the name of its command.
AGENT_DISTRIBUTION = "hermes-agent"
AGENT_SCRIPT = "hermes"
#: What to tell a person who has no Hermes Agent.
INSTALL_HINT = "pip install hermes-agent (or pipx install hermes-agent, or uv tool install hermes-agent)"
#: Counts hand-offs through PATH; past MAX_HANDOFFS something leads back here.
HANDOFFS_ENV = "HERMES_SESSIONS_HANDOFFS"
MAX_HANDOFFS = 8
#: Exit status when the agent's command cannot be run (the shell's "command not found").
NOT_INSTALLED = 127

# A console script names the module it runs; ours all live in hermes_tui. The shim's own name
# tells a `hermes` that forwards to the agent from one that only runs our sessions commands.
_OWN_MARK = b"hermes_tui"
_SHIM_MARK = b"hermes_tui.hermes_shim"

# Run in the fresh interpreter: load the agent's entry point as its console script would.
# sys.path[0] is what a console script has (its bin directory), not the current directory that
# `-c` would put there; argv[0] is the `hermes` the person ran, so that an agent re-running
# itself comes back through this script to itself.
_LAUNCH = (
    "import sys\n"
    "from importlib.metadata import EntryPoint\n"
    "sys.path[0] = sys.argv.pop(1)\n"
    "entry = EntryPoint(name='hermes', value=sys.argv.pop(1), group='console_scripts')\n"
    "sys.argv[0] = sys.argv.pop(1)\n"
    "sys.exit(entry.load()())\n"
)


@dataclass(frozen=True)
class Agent:
    """How to start Hermes Agent's ``hermes``: the argv before the person's arguments."""

    command: tuple[str, ...]
    #: Where it was found, for messages: "this environment" or the script's path.
    where: str


def script_kind(path: str | os.PathLike[str] | None) -> str | None:
    """``"shim"`` for this script, ``"sessions"`` for another of ours, ``None`` for anything
    else (the agent's, a wrapper, a file that cannot be read)."""
    if not path:
        return None
    try:
        head = Path(path).resolve().read_bytes()[:4096]
    except (OSError, RuntimeError, ValueError):
        return None
    if _SHIM_MARK in head:
        return "shim"
    if _OWN_MARK in head:
        return "sessions"
    return None


def _same_environment_agent() -> Agent | None:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(AGENT_DISTRIBUTION)
    except PackageNotFoundError:
        return None
    for entry in dist.entry_points:
        if entry.group == "console_scripts" and entry.name == AGENT_SCRIPT:
            bin_dir = str(Path(sys.executable).parent)
            argv0 = sys.argv[0] if sys.argv and sys.argv[0] else AGENT_SCRIPT
            return Agent((sys.executable, "-c", _LAUNCH, bin_dir, entry.value, argv0), "this environment")
    return None


def _path_agent() -> Agent | None:
    me = _resolved(sys.argv[0]) if sys.argv and sys.argv[0] else None
    for directory in os.get_exec_path():
        found = shutil.which(AGENT_SCRIPT, path=directory) if directory else None
        if found is None:
            continue
        if me is not None and _resolved(found) == me:
            continue
        if script_kind(found) is not None:
            continue  # ours (another install of this project): running it would come back
        return Agent((found,), found)
    return None


def _resolved(path: str) -> Path | None:
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError, ValueError):
        return None


def find_agent() -> Agent | None:
    """Hermes Agent's ``hermes``: in this environment first, else on PATH; ``None`` if neither."""
    return _same_environment_agent() or _path_agent()


def resume_hint(session_id: str, profile: str | None = None) -> str:
    """What to run to resume ``session_id``, said truthfully: the agent's command when there is
    an agent to run it, else what to install first. The command names ``profile`` (``-p
    NAME``: the session is in that profile's store, PF-7); the id is quoted for a shell: an id
    with a control in it shows it as ``\\x1b`` inside ``$'…'``, and the shell makes the exact
    id of what is printed (hermes_state.inert_text.shell_quote)."""
    from .hints import resume_command

    command = resume_command(session_id, profile)
    if find_agent() is not None:
        return f"Run: {command}"
    return f"Resume it with Hermes Agent (not installed here: {INSTALL_HINT}): {command}"


def _agent_environment() -> dict[str, str]:
    """This process's environment, less what importing our package set for ourselves."""
    env = dict(os.environ)
    import hermes_tui

    for name in getattr(hermes_tui, "ENV_SET_HERE", ()):
        env.pop(name, None)
    return env


def run_agent(agent: Agent, args: list[str]) -> int:
    """Run the agent with ``args`` in place of this process (on POSIX it never returns)."""
    env = _agent_environment()
    if agent.where != "this environment":
        env[HANDOFFS_ENV] = str(handoffs() + 1)
    argv = [*agent.command, *args]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if os.name == "posix":
            os.execve(argv[0], argv, env)
        return subprocess.call(argv, env=env)
    except OSError as exc:
        print(f"hermes: cannot run Hermes Agent ({agent.where}): {exc.strerror or exc}", file=sys.stderr)
        return NOT_INSTALLED


def handoffs() -> int:
    try:
        return max(0, int(os.environ.get(HANDOFFS_ENV, "0")))
    except ValueError:
        return 0


