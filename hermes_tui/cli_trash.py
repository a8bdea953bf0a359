"""``hermes sessions trash`` and ``hermes sessions restore``: deleted sessions, kept 7 days.

A session deleted in the browser or by ``hermes sessions delete`` is also written to the trash
under the user data directory (owner-only) inside the deleting transaction, so it can be brought
back here even when the browser was killed between the delete and its undo.

The trash is one per user, the stores one per Hermes profile, and session ids collide across
profiles (PF-7). Each entry records the store it was deleted from, and a restore puts it back
there and nowhere else: into the profile that store is, whichever profile the run would use
(``--profile`` chooses among the entries of one id deleted from several profiles, and names
the profile for an entry whose store is no profile's here); what cannot be decided is refused
with the command that restores it. ``trash`` lists every profile's entries, each with the
profile it goes back into; ``trash --profile NAME`` that profile's alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hermes_state import open_store
from hermes_state.errors import DatabaseError
from hermes_state.inert_text import shell_quote
from hermes_state.paths import default_db_path, same_path
from hermes_state.profiles import Profile, Profiles, discover
from hermes_state.timefmt import relative_time
from hermes_state.trash import TRASH_DAYS, default_trash_dir, list_trash, read_trash, undo_delete

from . import cli_profiles
from .hints import restore_command
from .textsafe import inert_line as inert


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return 1


def add_trash(sub) -> None:
    parser = sub.add_parser("trash", help=f"list sessions deleted (here or in the browser), kept {TRASH_DAYS} days, "
                            "each with the profile it goes back into")
    parser.add_argument("--json", action="store_true", help="one JSON document (see README, JSON output)")
    # (every profile's entries: a sticky `hermes profile use` naming a profile since deleted
    # does not stop it; see _store_path)
    parser.set_defaults(run=cmd_trash, runs_without_profile=True)


def add_restore(sub) -> None:
    parser = sub.add_parser("restore", help="bring back a session from the trash, into the store it was deleted from")
    parser.add_argument("session_id", metavar="SESSION_ID",
                        help="full id or unique prefix, or an ENTRY name (see: hermes sessions trash)")
    parser.add_argument("--yes", "-y", action="store_true",
                        help="restore a large session into a store being written without asking")
    # (each entry goes back into the store it records, whatever profile the run would use)
    parser.set_defaults(run=cmd_restore, runs_without_profile=True)


#: A restore is one transaction, and every writer waits for it: Hermes gives a write up after
#: about 16 s (15 attempts, each waiting up to 1 s for the lock plus 20-150 ms between them).
#: Restoring 100,000 messages held the lock 44 s; from this many messages on, a restore into a
#: store written recently says so and asks first.
RESTORE_LOCK_WARN_MESSAGES = 20_000


def _large_restore_agreed(db, snapshot, assume_yes: bool) -> bool:
    """False when the user declines a restore long enough to make live writers give up."""
    messages = len(snapshot.message_rows)
    if messages < RESTORE_LOCK_WARN_MESSAGES or assume_yes:
        return True
    from . import cli_config
    from .cli_prompt import confirm

    config = cli_config.config()
    last = db.last_write_at()
    now = time.time()
    if last is None or now - last > config.live_window_s:
        return True
    print(
        f"⚠ This store was written {relative_time(last, now=now)}: an agent or a gateway may be "
        f"writing to it. Restoring {messages:,} messages is one transaction; writers wait until "
        "it is done, and Hermes gives a write up after about 16 s.",
        file=sys.stderr,
    )
    return confirm("Restore now anyway? [y/N] ")


def cmd_trash(args: argparse.Namespace) -> int:
    directory = default_trash_dir()
    profiles = discover()
    entries = list_trash(directory)
    owners = {entry.path: profiles.owner_of(entry.database) for entry in entries if not entry.problem}
    named = _named_profile(args, profiles)
    if named is not None:
        # One profile's trash: the entries deleted from its store (and the damaged ones, which
        # say no store: nothing sits in the trash unseen).
        entries = [e for e in entries if e.problem or owners.get(e.path) == named]
    here = _store_path(args)
    if getattr(args, "json", False):
        return _trash_json(entries, owners, directory, here)
    if not entries:
        if named is not None:
            print(f"Nothing deleted from profile '{inert(named.name)}' is in the trash ({directory}).")
        else:
            print(f"The trash is empty ({directory}).")
        return 0
    now = time.time()
    # The trash is one per user, the stores one per profile: each entry goes back into the
    # store it was deleted from (PF-7), and its profile is shown whenever any entry's is not
    # the run's own.
    current = profiles.owner_of(here)
    usable = [e for e in entries if not e.problem]
    with_profile = any(owners[e.path] != current for e in usable)
    head = cli_profiles.PROFILE_HEAD if with_profile else ""
    print(f"{'Deleted':<12} {'Msgs':>5}  {'Source':<10} {head}{'Session':<32} Title")
    print("\u2500" * (90 + (cli_profiles.PROFILE_WIDTH + 1 if with_profile else 0)))
    repeated = _repeated_ids(entries)
    elsewhere: list[str] = []  # stores of no profile here, each named once below
    for entry in usable:
        when = relative_time(entry.deleted_at, now=now)
        owner = owners[entry.path]
        if owner is None and entry.database not in elsewhere:
            elsewhere.append(entry.database)
        cell = cli_profiles.profile_cell(owner.name if owner is not None else "?") if with_profile else ""
        print(f"{when:<12} {entry.messages:>5}  {inert(entry.source or '')[:10]:<10} {cell}"
              f"{inert(entry.session_id):<32} {inert(entry.label)}")
        if entry.session_id in repeated:
            # Deleted more than once: each delete is its own entry, chosen by its name.
            print(f"{'':<12} {'':>5}  {'':<10} {' ' * len(head)}entry {inert(entry.name)}")
    for entry in entries:
        if entry.problem:
            when = relative_time(entry.deleted_at, now=now)
            print(f"{when:<12} {'?':>5}  {'':<10} {' ' * len(head)}{inert(entry.path.name):<32} "
                  f"cannot be restored: {inert(entry.problem)}")
    if elsewhere:
        print()
        for database in elsewhere:
            print(f"? {_no_profile_here(database, profiles, 'SESSION_ID')}")
    spread = _in_several_profiles(usable, owners)
    print(f"\nKept {TRASH_DAYS} days in {directory}. Restore with: hermes sessions restore SESSION_ID "
          "(back into the profile it was deleted from"
          + ("; add -p PROFILE for an id deleted from several" if spread else "")
          + ("; or ENTRY, for one of several deletes of a session" if repeated else "") + ")")
    return 0


def _trash_json(entries: list, owners: dict, directory: Path, here: Path | None) -> int:
    from .cli_json import write_document

    write_document("trash", "entries", (
        {
            "session_id": entry.session_id,
            # (what `restore` takes to choose this entry among several deletes of a session)
            "entry": entry.name,
            "label": entry.label,
            "source": entry.source,
            "messages": entry.messages,
            "deleted_at": entry.deleted_at,
            "expires_at": entry.deleted_at + TRASH_DAYS * 86400,
            "database": entry.database or None,
            # (the profile whose store it was deleted from: where `restore` puts it back)
            "profile": owners[entry.path].name if owners.get(entry.path) is not None else None,
            "other_store": bool(entry.database) and not same_path(entry.database, here),
            "problem": entry.problem,
        }
        for entry in entries
    ), directory=str(directory), kept_days=TRASH_DAYS)
    return 0


def _named_profile(args: argparse.Namespace, profiles: Profiles) -> Profile | None:
    """The profile ``--profile`` names (``main`` checked the name), or None."""
    name = getattr(args, "profile", None)
    return profiles.named(name) if name is not None else None


def _in_several_profiles(entries, owners: dict) -> set[str]:
    """The ids of sessions in the trash from more than one store."""
    stores: dict[str, set] = {}
    for entry in entries:
        owner = owners[entry.path]
        stores.setdefault(entry.session_id, set()).add(owner.name if owner is not None else entry.database)
    return {sid for sid, where in stores.items() if len(where) > 1}


def _no_profile_here(database: str, profiles: Profiles, session_id: str) -> str:
    """What to run for an entry deleted from a store of no profile of this root (another
    root's, a profile deleted since, or one the entry does not record): the command that
    restores it where it was deleted from, where that is still there, else into a profile."""
    into = f"into a profile: {restore_command(session_id, 'NAME')}"
    if not database:
        return f"The trash entry does not say which store it was deleted from. To restore it {into}."
    home = Path(database).parent
    root = inert(str(profiles.root))
    if _is_dir(home):
        there = f"HERMES_HOME={shell_quote(str(home))} {restore_command(session_id)}"
        return (f"Deleted from {inert(database)}, the store of no profile under {root}. To put it back "
                f"there: {inert(there)}; {into}.")
    return f"Deleted from {inert(database)}, which is gone and was no profile's under {root}. To restore it {into}."


def _store_path(args: argparse.Namespace) -> Path | None:
    """The store of the run's profile (``--profile``, else the one Hermes runs in); None when
    the run has none (the sticky ``active_profile`` names a profile that is gone): then every
    entry is of another store than the run's, and its profile is named."""
    if getattr(args, "no_run_profile", None):
        return None
    return getattr(args, "store_path", None) or default_db_path()


def _repeated_ids(entries) -> set[str]:
    seen: set[str] = set()
    repeated: set[str] = set()
    for entry in entries:
        if entry.problem:
            continue
        (repeated if entry.session_id in seen else seen).add(entry.session_id)
    return repeated


def cmd_restore(args: argparse.Namespace) -> int:
    wanted = args.session_id.strip()
    if not wanted:
        return _fail("Error: give a session id (an empty id matches nothing).")
    entries = list_trash(default_trash_dir())
    # An entry's own name (as `trash` prints it for a session deleted more than once, or its
    # file name) chooses that entry; otherwise the id (or a unique prefix) chooses the newest.
    named = [e for e in entries if wanted in (e.name, e.path.name)]
    # An entry that cannot be read is known only by its file name, which starts with the id.
    named = named or [e for e in entries if e.problem and e.path.name.startswith(wanted + ".")]
    usable = [e for e in entries if not e.problem]
    exact = [e for e in usable if e.session_id == wanted]
    matches = named or exact or [e for e in usable if e.session_id.startswith(wanted)]
    if not matches:
        return _fail(f"No session '{inert(wanted)}' in the trash (see: hermes sessions trash).")
    if len({e.session_id for e in matches}) > 1:
        return _fail(f"'{inert(wanted)}' is ambiguous: {len(matches)} sessions in the trash start with it.")
    if matches[0].problem:
        entry = matches[0]
        return _fail(f"Error: trash entry {inert(entry.path.name)} cannot be restored: {inert(entry.problem)}.")
    profiles = discover()
    owners = {e.path: profiles.owner_of(e.database) for e in matches}
    shown = wanted if named else matches[0].session_id  # (what the commands said below name)
    chosen = _where_back(matches, owners, _named_profile(args, profiles), profiles, shown)
    if isinstance(chosen, str):
        return _fail(chosen)
    matches, target = chosen
    entry = matches[0]  # newest first: the latest delete of that session from that store
    older = [e for e in matches[1:] if e.session_id == entry.session_id] if not named else []
    try:
        snapshot = read_trash(entry.path)
    except ValueError as exc:
        return _fail(f"Error: {inert(str(exc))}")
    try:
        db = open_store(target.db_path, "write")
    except DatabaseError as exc:
        return _fail(f"Error: Could not open session database: {inert(str(exc))}")
    try:
        if owners[entry.path] is None:
            # (chosen by --profile: the store it was deleted from is no profile's here)
            print(f"(deleted from {inert(entry.database or 'a store the entry does not record')}; restoring "
                  f"into profile '{inert(target.name)}' ({inert(str(db.db_path))}), as --profile says)",
                  file=sys.stderr)
        elif not same_path(target.db_path, _store_path(args)):
            print(f"(into profile '{inert(target.name)}', whose store it was deleted from: "
                  f"{inert(str(db.db_path))})", file=sys.stderr)
        if not _large_restore_agreed(db, snapshot, getattr(args, "yes", False)):
            print("Cancelled; it stays in the trash.", file=sys.stderr)
            return 1
        report = undo_delete(lambda: db, snapshot)
    finally:
        db.close()
    if report.ghost:
        return _fail(f"Error: {inert(report.summary())} The stale trash entry was removed.")
    if not report.restored:
        return _fail(f"Error: {inert(report.summary())} It stays in the trash.")
    print(inert(report.summary()))
    if older:
        names = ", ".join(inert(e.name) for e in older)
        print(f"{len(older)} older delete{'s' if len(older) != 1 else ''} of this session "
              f"{'are' if len(older) != 1 else 'is'} still in the trash: {names} "
              "(hermes sessions restore ENTRY, once this one is deleted or renamed)", file=sys.stderr)
    return 0


def _where_back(matches: list, owners: dict, named: Profile | None, profiles: Profiles,
                shown: str) -> tuple[list, Profile] | str:
    """The entries to restore from (newest first) and the profile whose store they go back
    into, or the one line that refuses (PF-7). A session goes back into the store it was
    deleted from: without ``--profile``, the profile that store is (refused when that is no
    profile here, or when the id was deleted from several, naming the command for each);
    with it, only an entry deleted from that profile's store -- or, from a store of no
    profile here, into it as asked. Never into another profile's store than its own."""
    if named is not None:
        own = [e for e in matches if owners[e.path] == named]
        if own:
            return own, named
        nowhere = [e for e in matches if owners[e.path] is None]
        if nowhere:
            return nowhere, named
        others = _profiles_of(matches, owners)
        return (f"'{inert(shown)}' was deleted from profile {', '.join(repr(n) for n in others)}, not "
                f"'{inert(named.name)}', and goes back only into the store it was deleted from: "
                + "; ".join(inert(restore_command(shown, n)) for n in others))
    stores = []
    for entry in matches:
        key = owners[entry.path] or entry.database
        if key not in stores:
            stores.append(key)
    if len(stores) == 1:
        owner = owners[matches[0].path]
        if owner is None:
            return f"Not restored: {_no_profile_here(matches[0].database, profiles, shown)}"
        return matches, owner
    commands = [inert(restore_command(shown, n)) for n in _profiles_of(matches, owners)]
    seen: set[str] = set()
    for entry in matches:
        if owners[entry.path] is not None or entry.database in seen:
            continue
        seen.add(entry.database)
        # (by its entry's name: under another HERMES_HOME this root's profiles are no profile's
        # stores, and the id alone would be as ambiguous there)
        home = Path(entry.database).parent if entry.database else None
        if home is not None and _is_dir(home):
            commands.append(inert(f"HERMES_HOME={shell_quote(str(home))} {restore_command(entry.name)}"))
        else:
            commands.append(inert(restore_command(entry.name, "NAME")) + " (into a profile: the store it was deleted from is gone or not recorded)")
    return (f"'{inert(shown)}' was deleted from {len(stores)} stores: say which one it goes back into: "
            + "; ".join(commands))


def _is_dir(path: Path) -> bool:
    """``path`` is a directory (an entry's recorded store is data: a path that cannot be
    looked at is no home to restore into)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _profiles_of(entries: list, owners: dict) -> list[str]:
    names: list[str] = []
    for entry in entries:
        owner = owners[entry.path]
        if owner is not None and owner.name not in names:
            names.append(owner.name)
    return names
