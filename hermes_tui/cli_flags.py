"""``hermes sessions archive|unarchive|pin|unpin ID…`` (CLI-17, UC-5).

Archive and unarchive act on the whole compression lineage, as upstream does; pin uses
``sessions.pinned`` where the store has it, else our own settings file (never a new column).
Ids are full ids or unique prefixes; an ambiguous prefix is reported with how many sessions it
matches, and an empty id is an error, never "every session".
"""

from __future__ import annotations

import argparse
import sys

from hermes_state import listing
from hermes_state.connection import open_store
from hermes_state.errors import DatabaseError
from hermes_state.paths import default_db_path

from .textsafe import inert_line as inert

_VERBS = {
    "archive": ("archive", True, "archive sessions (hidden from the list; their whole lineage)"),
    "unarchive": ("archive", False, "bring archived sessions back to the list"),
    "pin": ("pin", True, "pin sessions to the top of the list"),
    "unpin": ("pin", False, "unpin sessions"),
}


def add_flag_command(sub, name: str) -> None:
    parser = sub.add_parser(name, help=_VERBS[name][2])
    parser.add_argument("session_ids", metavar="SESSION_ID", nargs="+", help="full id or unique prefix")
    parser.set_defaults(run=lambda args, name=name: cmd_flag(args, name))


def resolve_all(db, texts: list[str]) -> tuple[list[str], list[str]]:
    """``(ids, problems)``: every text resolved to one session, or a line saying why not."""
    ids: list[str] = []
    problems: list[str] = []
    for text in texts:
        if not text.strip():
            problems.append("Error: an empty session id names no session.")
            continue
        matches = listing.id_matches(db, text)
        if len(matches) == 1:
            ids.append(matches[0])
        elif not matches:
            problems.append(f"Session '{inert(text)}' not found.")
        else:
            many = f"{len(matches)}" if len(matches) < 1000 else "1000 or more"
            problems.append(f"Session '{inert(text)}' is ambiguous: it is the start of {many} session ids.")
    return ids, problems


def cmd_flag(args: argparse.Namespace, name: str) -> int:
    what, value, _help = _VERBS[name]
    try:
        db = open_store(default_db_path(), "write")
    except DatabaseError as exc:
        print(f"Error: Could not open session database: {inert(str(exc))}", file=sys.stderr)
        return 1
    try:
        ids, problems = resolve_all(db, args.session_ids)
        if problems:
            for line in problems:
                print(line, file=sys.stderr)
            print("Nothing was changed.", file=sys.stderr)
            return 1
        if what == "archive" and not db.capabilities.has_archived:
            print(f"Error: this store (schema {db.opened_version}) has no archive; nothing was changed.",
                  file=sys.stderr)
            return 1
        for session_id in ids:
            if what == "archive":
                db.set_session_archived(session_id, value)
            else:
                db.set_session_pinned(session_id, value)
            print(f"{name.capitalize()}d '{inert(session_id)}'." if name.endswith("e")
                  else f"{name.capitalize()}ned '{inert(session_id)}'.")
    finally:
        db.close()
    return 0
