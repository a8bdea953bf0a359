"""Every Hermes profile's store, found as Hermes Agent finds them (PF-1).

Each Hermes profile is a ``HERMES_HOME`` of its own with its own ``state.db``: the *default*
profile is the Hermes root itself (``~/.hermes``) and every other one is a directory
``<root>/profiles/<name>/`` (``hermes -p NAME``; ``hermes profile use NAME`` makes one the
sticky default by writing its name to ``<root>/active_profile``). The rules below are
upstream's (``hermes_constants.get_default_hermes_root``, ``hermes_cli.profiles``,
``hermes_cli.main._apply_profile_override``), restated, so that ``hermes sessions`` reads the
store ``hermes`` itself would write:

* **The root.** ``HERMES_HOME`` unset: ``~/.hermes`` (plus ``$HERMES_DATA_DIR_SUFFIX``). Set
  to a path under that: the same ``~/.hermes`` (it is the root or one of its profiles). Set
  elsewhere (a container's ``/opt/data``): its grandparent when its parent is named
  ``profiles`` (it is a profile of that root), else itself.
* **Named profiles.** The directories in ``<root>/profiles`` whose name is a profile id
  (``[a-z0-9][a-z0-9_-]{0,63}``), but not ``default`` (that is the root) and not one deleted
  by ``hermes profile delete`` (which leaves ``profiles/.deleted/<name>`` behind).
* **The profile a run uses** when none is named: ``HERMES_HOME`` itself when its parent is
  named ``profiles``; else the sticky ``<root>/active_profile`` (a name, ``default`` or empty
  meaning the root) -- a sticky name that is not a profile (any more) is an error, as
  upstream's; else ``HERMES_HOME`` (or the root when it is unset).
* **A name given** is matched as upstream matches it: surrounding blanks dropped, lower case,
  ``Default`` is ``default``.

Nothing here opens a database: see :mod:`hermes_state.across_profiles` for that.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .paths import same_path

#: The default profile's name: the Hermes root itself, never ``profiles/default``.
DEFAULT = "default"
#: What a profile id may be (upstream's ``_PROFILE_ID_RE``).
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
#: The file holding the sticky profile's name, in the root.
ACTIVE_FILE = "active_profile"
#: Beside the profiles: ``.deleted/<name>`` marks a profile ``hermes profile delete`` removed.
TOMBSTONES = ".deleted"


class ProfileError(ValueError):
    """A profile name that names no profile here (one line, naming the known ones)."""


@dataclass(frozen=True)
class Profile:
    """One profile: its name and its ``HERMES_HOME``."""

    name: str
    home: Path

    @property
    def db_path(self) -> Path:
        return self.home / "state.db"

    @property
    def has_store(self) -> bool:
        """Its ``state.db`` is there (a profile made but never used has none)."""
        return self.db_path.exists() or self.db_path.is_symlink()


def native_home(environ: Mapping[str, str] | None = None) -> Path:
    """``~/.hermes`` plus ``$HERMES_DATA_DIR_SUFFIX`` (upstream's platform default)."""
    env = os.environ if environ is None else environ
    return Path.home() / (".hermes" + env.get("HERMES_DATA_DIR_SUFFIX", ""))


def hermes_root(environ: Mapping[str, str] | None = None) -> Path:
    """The Hermes root: the default profile's home, under which ``profiles/`` lives."""
    env = os.environ if environ is None else environ
    native = native_home(env)
    value = env.get("HERMES_HOME", "").strip()
    if not value:
        return native
    home = Path(value)
    try:
        home.resolve().relative_to(native.resolve())
        return native  # (the root itself, or a profile of it)
    except (ValueError, OSError, RuntimeError):
        pass
    return home.parent.parent if home.parent.name == "profiles" else home


def normalize(name: str) -> str:
    """A profile name as upstream reads one given by a person (``Work`` is ``work``)."""
    stripped = str(name).strip()
    if stripped.casefold() == DEFAULT:
        return DEFAULT
    return stripped.lower()


def _deleted(home: Path) -> bool:
    try:
        return (home.parent / TOMBSTONES / home.name).exists()
    except OSError:
        return False


@dataclass(frozen=True)
class Profiles:
    """The profiles of one Hermes root, found by :func:`discover`."""

    root: Path
    #: The default profile first, then the named ones by name.
    all: tuple[Profile, ...]
    #: The profile a run uses when none is named, or why there is none (the sticky file
    #: names a profile that is not there).
    current: Profile | None
    current_problem: str | None = None

    @property
    def names(self) -> list[str]:
        return [profile.name for profile in self.all]

    def known(self) -> str:
        """The profiles' names for a message: ``default, coder, work``."""
        return ", ".join(self.names)

    def named(self, name: str) -> Profile:
        """The profile ``name`` names; :class:`ProfileError` naming the known ones if none."""
        canon = normalize(name)
        for profile in self.all:
            if profile.name == canon:
                return profile
        shown = name.strip() or repr(name)
        raise ProfileError(f"no profile '{shown}' in {self.root}; profiles: {self.known()}")

    def chosen(self, name: str | None) -> Profile:
        """``name``'s profile, or (None) the one a run uses; :class:`ProfileError` if none."""
        if name is not None:
            return self.named(name)
        if self.current is None:
            raise ProfileError(self.current_problem or "no profile")
        return self.current

    def with_stores(self) -> list[Profile]:
        """The profiles that have a ``state.db`` (every one of them across profiles)."""
        return [profile for profile in self.all if profile.has_store]

    def owner_of(self, db_path: str | Path | None) -> Profile | None:
        """The profile whose store ``db_path`` is (as written, or once both are resolved):
        one of the root's, or the one a run uses (a ``HERMES_HOME`` outside them); None for
        the store of no profile here (another root's, one since deleted, or none given).
        What the trash needs to put a session back into the store it was deleted from."""
        if not db_path:
            return None
        path = Path(db_path)
        candidates = [*self.all, *([self.current] if self.current is not None else [])]
        # (written alike first: a symlinked profile must not take another one's store)
        for profile in candidates:
            if profile.db_path == path:
                return profile
        return next((profile for profile in candidates if same_path(profile.db_path, path)), None)


def discover(environ: Mapping[str, str] | None = None) -> Profiles:
    """Every profile of the root, and the one a run uses (see the module's rules)."""
    env = os.environ if environ is None else environ
    root = hermes_root(env)
    found = [Profile(DEFAULT, root)]
    try:
        entries = sorted(os.scandir(root / "profiles"), key=lambda entry: entry.name)
    except OSError:
        entries = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        home = Path(entry.path)
        if is_dir and entry.name != DEFAULT and NAME_RE.match(entry.name) and not _deleted(home):
            found.append(Profile(entry.name, home))
    current, problem = _current(env, root, found)
    return Profiles(root=root, all=tuple(found), current=current, current_problem=problem)


def _current(env: Mapping[str, str], root: Path, found: list[Profile]) -> tuple[Profile | None, str | None]:
    value = env.get("HERMES_HOME", "").strip()
    if value and Path(value).parent.name == "profiles":
        return _profile_at(Path(value), found), None
    sticky = read_active(root)
    if sticky is not None:
        for profile in found:
            if profile.name == sticky:
                return profile, None
        where = root / ACTIVE_FILE
        return None, (
            f"the active profile '{sticky}' ({where}) does not exist; "
            f"profiles: {', '.join(p.name for p in found)} (hermes profile use NAME changes it)"
        )
    if value:
        return _profile_at(Path(value), found), None
    return found[0], None


def _profile_at(home: Path, found: list[Profile]) -> Profile:
    """The profile whose home ``home`` is; a home outside the root is a profile of its own,
    named as upstream names it (``custom``)."""
    for profile in found:
        if same_path(profile.home, home):
            return profile
    return Profile(home.name if home.parent.name == "profiles" else "custom", home)


def read_active(root: Path) -> str | None:
    """The sticky profile's name from ``<root>/active_profile``; None for the default
    profile (no file, an empty one, ``default``, or one that cannot be read, as upstream)."""
    try:
        text = (root / ACTIVE_FILE).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    name = normalize(text) if text.strip() else DEFAULT
    return None if name == DEFAULT else name
