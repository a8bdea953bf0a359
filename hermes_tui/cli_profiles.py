"""``--profile NAME`` and ``--all-profiles`` for ``hermes sessions`` (PF-1..PF-4).

Which store an action reads or writes is decided here, by Hermes Agent's own rules
(:mod:`hermes_state.profiles`): ``--profile NAME`` is that profile's ``state.db``; with
neither option, the profile ``hermes`` itself would run in (``HERMES_HOME``, else the sticky
``hermes profile use``, else ``~/.hermes``). ``--all-profiles`` reads every profile's store
at once: each is opened on its own (:func:`open_across`), one that cannot be read is named in
one line on stderr and left out, and the others are listed, counted and exported as one.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from hermes_state.across_profiles import LeftOut, Opened, open_each
from hermes_state.profiles import DEFAULT, Profile, ProfileError, Profiles, discover

from .textsafe import fit_cells, inert_line

__all__ = [
    "ProfileError", "add_profile_options", "across", "chosen_profile", "open_across", "NoProfileStore",
    "profile_cell", "PROFILE_HEAD", "named_in_commands",
]

#: The profile column of a listing across profiles (cells, with the space after it).
PROFILE_WIDTH = 12
PROFILE_HEAD = f"{'Profile':<{PROFILE_WIDTH}} "


class NoProfileStore(Exception):
    """Across profiles, no store could be read (each left-out one was already named)."""


def add_profile_options(parser: argparse.ArgumentParser, *, across_too: bool, help: str | None = None) -> None:
    """``--profile NAME`` (every action that opens a store), and ``--all-profiles`` (the
    ones that read: ``list``, ``browse``, ``export``, ``stats``), never both at once;
    ``help``: what ``--profile`` means to an action that reads it its own way (the trash)."""
    target = parser.add_mutually_exclusive_group() if across_too else parser
    target.add_argument(
        "--profile", "-p", metavar="NAME",
        help=help or "the store of this Hermes profile (default: the profile hermes runs in: "
        "HERMES_HOME, else the one 'hermes profile use' chose, else ~/.hermes)",
    )
    if across_too:
        target.add_argument(
            "--all-profiles", action="store_true",
            help="every Hermes profile's store at once (rows say which profile they are in)",
        )


def across(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "all_profiles", False))


def chosen_profile(args: argparse.Namespace, profiles: Profiles | None = None) -> Profile:
    """The profile whose store this run opens; :class:`ProfileError` (one line naming the
    profiles there are) for a name that is none of them."""
    return (profiles or discover()).chosen(getattr(args, "profile", None))


@contextmanager
def open_across(opener: Callable[[Profile], Any], warn: Callable[[str], None]) -> Iterator[tuple[list[Opened], list[LeftOut]]]:
    """Every profile's store that opens (the default profile first, then by name), each
    left-out one named by ``warn`` in one line; all closed on the way out.
    :class:`NoProfileStore` when none opens."""
    profiles = discover()
    with_stores = profiles.with_stores()
    if not with_stores:
        raise NoProfileStore(
            f"no profile under {profiles.root} has a session database (profiles: {profiles.known()})")
    opened, left = open_each(with_stores, opener)
    for item in left:
        warn(f"Warning: {inert_line(item.line())}")
    for item in opened:  # (a store newer than this program knows: read, never written)
        for warning in getattr(item.store, "warnings", ()):
            warn(f"Warning: profile '{inert_line(item.profile.name)}': {inert_line(warning)}")
    try:
        if not opened:
            raise NoProfileStore("no profile's session database could be read")
        yield opened, left
    finally:
        for item in opened:
            try:
                item.store.close()
            except Exception:
                pass


def profile_cell(name: str) -> str:
    """A profile's name in the profile column (terminal-safe, cut to its width)."""
    return f"{fit_cells(inert_line(name), PROFILE_WIDTH - 2, PROFILE_WIDTH)} "


def warn(line: str) -> None:
    print(line, file=sys.stderr)


def home_of(args: argparse.Namespace) -> Path:
    return chosen_profile(args).home


def named_in_commands(args: argparse.Namespace) -> Profile | None:
    """The run's profile when a command printed for a person must name it (PF-7:
    ``hermes -p NAME …``): one named with ``--profile``, or one the run uses that is not the
    default (a sticky ``hermes profile use``, a ``HERMES_HOME`` inside ``profiles/``), since a
    command typed later may run where Hermes chooses then. None for the default profile named
    by nothing, and for a home that is no profile of the root (no ``-p`` reaches it)."""
    profiles = discover()
    profile = profiles.chosen(getattr(args, "profile", None))
    if profile.name not in profiles.names:
        return None
    if getattr(args, "profile", None) is None and profile.name == DEFAULT:
        return None
    return profile
