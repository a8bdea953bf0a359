"""The commands this program prints for a person to run later (PF-7): resume a session in
Hermes Agent, bring one back from the trash, look in the trash, list again.

A session lives in one profile's store, and a command typed later runs in the profile Hermes
chooses then (``HERMES_HOME``, else the sticky ``hermes profile use``, else ``~/.hermes``),
which need not be the one the session is in. So a command for a session of a profile that
was named (``--profile``, a row of ``--all-profiles``) or is not the default one names it,
as Hermes Agent's own command line takes it and ours too: ``hermes -p NAME …``. Ids and
names are quoted for a shell (``shell_quote``: an id holding a control shows it as ``\\x1b``
inside ``$'…'``, and the shell still makes the exact id of it).
"""

from __future__ import annotations

from hermes_state.inert_text import shell_quote


def _profile_words(profile: str | None) -> str:
    return f"-p {shell_quote(profile)} " if profile else ""


def resume_command(session_id: str, profile: str | None = None) -> str:
    """``hermes [-p NAME] --resume ID``: Hermes Agent resuming the session in its profile."""
    return f"hermes {_profile_words(profile)}--resume {shell_quote(session_id)}"


def restore_command(session_id: str, profile: str | None = None) -> str:
    """``hermes sessions restore [-p NAME] ID``: the session back into its profile's store."""
    return f"hermes sessions restore {_profile_words(profile)}{shell_quote(session_id)}"


def trash_command(profile: str | None = None) -> str:
    """``hermes sessions trash [-p NAME]``: what a profile has in the trash."""
    return f"hermes sessions trash{' -p ' + shell_quote(profile) if profile else ''}"


def list_command(options: str = "", profile: str | None = None, *, all_profiles: bool = False) -> str:
    """``hermes sessions list [-p NAME | --all-profiles] OPTIONS``: the list again, of the
    profile the run read (or of every profile); ``options`` as they are to be typed (words
    of a person's input already quoted)."""
    scope = "--all-profiles " if all_profiles else _profile_words(profile)
    return f"hermes sessions list {scope}{options}".rstrip()
