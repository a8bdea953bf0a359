"""``hermes sessions trash`` and ``hermes sessions restore``: deleted sessions, kept 7 days.

A session deleted in the browser or by ``hermes sessions delete`` is also written to the trash
under the user data directory (owner-only) inside the deleting transaction, so it can be brought
back here even when the browser was killed between the delete and its undo.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hermes_state import open_store
from hermes_state.errors import DatabaseError
from hermes_state.paths import default_db_path
from hermes_state.timefmt import relative_time
from hermes_state.trash import TRASH_DAYS, default_trash_dir, list_trash, read_trash, undo_delete

from .textsafe import inert_line as inert


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return 1


def add_trash(sub) -> None:
    parser = sub.add_parser("trash", help=f"list sessions deleted (here or in the browser), kept {TRASH_DAYS} days")
    parser.add_argument("--json", action="store_true", help="one JSON document (see README, JSON output)")
    parser.set_defaults(run=cmd_trash)


def add_restore(sub) -> None:
    parser = sub.add_parser("restore", help="bring back a session from the trash")
    parser.add_argument("session_id", metavar="SESSION_ID",
                        help="full id or unique prefix, or an ENTRY name (see: hermes sessions trash)")
    parser.add_argument("--yes", "-y", action="store_true",
                        help="restore a large session into a store being written without asking")
    parser.set_defaults(run=cmd_restore)


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
    from .cli_prompt import confirm
    from .config import load_config

    config, _problems = load_config()
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
    entries = list_trash(directory)
    if getattr(args, "json", False):
        return _trash_json(entries, directory, _store_path(args))
    if not entries:
        print(f"The trash is empty ({directory}).")
        return 0
    now = time.time()
    here = _store_path(args)
    # The trash is one per user, the stores many (a HERMES_HOME per profile): an entry deleted
    # from another store is marked, since restore puts it into this one.
    elsewhere: list[str] = []
    print(f"{'Deleted':<12} {'Msgs':>5}  {'Source':<10} {'Session':<32} Title")
    print("\u2500" * 90)
    repeated = _repeated_ids(entries)
    damaged = [e for e in entries if e.problem]
    for entry in entries:
        when = relative_time(entry.deleted_at, now=now)
        if entry.problem:
            continue
        other = bool(entry.database) and not _same_path(entry.database, here)
        if other and entry.database not in elsewhere:
            elsewhere.append(entry.database)
        print(f"{when:<12} {entry.messages:>5}  {inert(entry.source or '')[:10]:<10} "
              f"{inert(entry.session_id):<32} {inert(entry.label)}{' *' if other else ''}")
        if entry.session_id in repeated:
            # Deleted more than once: each delete is its own entry, chosen by its name.
            print(f"{'':<12} {'':>5}  {'':<10} entry {inert(entry.name)}")
    for entry in damaged:
        when = relative_time(entry.deleted_at, now=now)
        print(f"{when:<12} {'?':>5}  {'':<10} {inert(entry.path.name):<32} cannot be restored: {inert(entry.problem)}")
    if elsewhere:
        print(f"\n* deleted from another store ({', '.join(inert(p) for p in elsewhere)}); "
              f"restore puts it into {inert(str(here))}")
    print(f"\nKept {TRASH_DAYS} days in {directory}. Restore with: hermes sessions restore SESSION_ID"
          + (" (or ENTRY, for one of several deletes of a session)" if repeated else ""))
    return 0


def _trash_json(entries: list, directory: Path, here: Path) -> int:
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
            "other_store": bool(entry.database) and not _same_path(entry.database, here),
            "problem": entry.problem,
        }
        for entry in entries
    ), directory=str(directory), kept_days=TRASH_DAYS)
    return 0


def _store_path(args: argparse.Namespace) -> Path:
    """The store of the run's profile (``--profile``, else the one Hermes runs in)."""
    return getattr(args, "store_path", None) or default_db_path()


def _repeated_ids(entries) -> set[str]:
    seen: set[str] = set()
    repeated: set[str] = set()
    for entry in entries:
        if entry.problem:
            continue
        (repeated if entry.session_id in seen else seen).add(entry.session_id)
    return repeated


def _same_path(recorded: str, path: Path) -> bool:
    """The store an entry records is ``path`` (as written, or once both are resolved)."""
    if recorded == str(path):
        return True
    try:
        return Path(recorded).resolve() == path.resolve()
    except (OSError, RuntimeError, ValueError):
        return False


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
    entry = matches[0]  # newest first: the latest delete of that session
    if entry.problem:
        return _fail(f"Error: trash entry {inert(entry.path.name)} cannot be restored: {inert(entry.problem)}.")
    older = [e for e in matches[1:] if e.session_id == entry.session_id] if not named else []
    try:
        snapshot = read_trash(entry.path)
    except ValueError as exc:
        return _fail(f"Error: {inert(str(exc))}")
    path = _store_path(args)
    try:
        db = open_store(path, "write")
    except DatabaseError as exc:
        return _fail(f"Error: Could not open session database: {inert(str(exc))}")
    try:
        if entry.database and entry.database != str(db.db_path):
            print(f"(deleted from {inert(entry.database)}; restoring into {inert(str(db.db_path))})",
                  file=sys.stderr)
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
