"""The ``hermes`` command this project installs: ``hermes sessions …`` here, the rest to Hermes Agent.

``hermes`` is Hermes Agent's own command (``hermes``, ``hermes --resume ID``, ``hermes chat``,
``hermes gateway`` …). Our commands live under ``hermes sessions`` and, under a name that
collides with nothing, ``hermes-sessions``. This script keeps the ``sessions`` command and hands
every other one to the agent (:mod:`hermes_tui.agent` finds it), so that whichever of the two
``hermes`` scripts a person's PATH (or pip's last install into a shared environment) lands on,
the agent's commands still work. With no agent anywhere it says on stderr what to install and
exits 127 (the shell's "command not found").

``hermes sessions ACTION`` where ACTION is one the agent has and we do not (upstream's
``optimize``, ``repair``) goes to the agent too when there is one.
"""

from __future__ import annotations

import sys

from .agent import INSTALL_HINT, MAX_HANDOFFS, NOT_INSTALLED, find_agent, handoffs, run_agent


#: ``hermes sessions`` actions Hermes Agent has and this program does not (upstream's
#: storage maintenance): with no agent they are said to need it, not taken for a typo.
AGENT_ACTIONS = ("optimize", "optimize-storage", "repair")


def _own_actions() -> set[str]:
    from .cli import SESSION_ACTIONS

    return set(SESSION_ACTIONS)


def _ours(args: list[str]) -> bool:
    """``hermes sessions …`` is ours, unless it names an action only the agent has."""
    if not args or args[0] != "sessions":
        return False
    if len(args) < 2 or args[1].startswith("-"):
        return True
    return args[1] in _own_actions()


_HELP = """\
usage: hermes sessions ACTION [options]      (hermes sessions --help lists the actions)

This `hermes` comes with Hermes Sessions, which provides `hermes sessions …` (also installed
as `hermes-sessions …`). Every other command (`hermes`, `hermes --resume ID`, `hermes chat`,
…) is Hermes Agent's, and Hermes Agent is not installed here:
  {hint}
"""


def _profile_moved(args: list[str]) -> list[str]:
    """``hermes -p NAME sessions ACTION …`` (Hermes Agent's way to choose a profile, before
    the command) is ``hermes sessions ACTION … --profile NAME`` here, for our actions (PF-2);
    anything else is left as it is."""
    if len(args) >= 3 and args[0] in ("-p", "--profile"):
        name, rest = args[1], args[2:]
    elif len(args) >= 2 and args[0].startswith("--profile="):
        name, rest = args[0].split("=", 1)[1], args[1:]
    else:
        return args
    if len(rest) >= 2 and rest[0] == "sessions" and not rest[1].startswith("-") and rest[1] in _own_actions():
        return [*rest, "--profile", name]
    return args


def main(argv: list[str] | None = None) -> int:
    """The ``hermes`` console script."""
    args = _profile_moved(list(sys.argv[1:] if argv is None else argv))
    if _ours(args):
        from .cli import main as sessions_main

        return sessions_main(args)
    if args and args[0] == "sessions":
        # An action we do not have: the agent's if there is one, else our own usage error
        # (a typo of one of ours must not read "install Hermes Agent").
        agent = find_agent()
        if agent is None:
            if len(args) >= 2 and args[1] in AGENT_ACTIONS:
                print(f"hermes: `hermes sessions {args[1]}` is Hermes Agent's, and Hermes Agent is not "
                      f"installed here. Install it: {INSTALL_HINT}", file=sys.stderr)
                return NOT_INSTALLED
            from .cli import main as sessions_main

            return sessions_main(args)
        return run_agent(agent, args)
    if handoffs() >= MAX_HANDOFFS:
        print(
            f"hermes: handed on {MAX_HANDOFFS} times without reaching Hermes Agent: a `hermes` on "
            "PATH leads back to this one. Check PATH, or install Hermes Agent here.",
            file=sys.stderr,
        )
        return NOT_INSTALLED
    agent = find_agent()
    if agent is not None:
        return run_agent(agent, args)
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(_HELP.format(hint=INSTALL_HINT))
        return 0
    what = f"`hermes {args[0]}`" if args else "`hermes`"
    print(
        f"hermes: {what} is a Hermes Agent command, and Hermes Agent is not installed here "
        f"(this `hermes` only runs `hermes sessions …`). Install it: {INSTALL_HINT}",
        file=sys.stderr,
    )
    return NOT_INSTALLED


if __name__ == "__main__":
    raise SystemExit(main())
