"""``hermes sessions read`` and ``hermes sessions unread``: upstream's read watermark.

Marking read stamps ``last_read_at`` with the current time over each conversation's whole
lineage, marking unread stamps ``0`` (upstream's "mark as unread"); nothing else is written.
A store without the column (before upstream's v30) is only read: the command says unread is
not tracked there, once, and changes nothing. Every id must resolve before anything changes.
"""

from __future__ import annotations

import argparse
import time
from types import ModuleType

from hermes_state.unread import not_tracked, set_read


def add_read(sub, name: str, cli: ModuleType) -> None:
    """Add ``name`` ("read" or "unread"); ``cli`` is the running command line's module (its
    ``CliExit``, ``open_store`` and ``resolve_id``: under ``python -m`` it is ``__main__``,
    whose ``CliExit`` is the one caught)."""
    read = name == "read"
    parser = sub.add_parser(
        name,
        help=("mark conversations read (the whole lineage; v30 stores)" if read
              else "mark conversations unread (the whole lineage; v30 stores)"),
    )
    parser.add_argument("session_ids", metavar="SESSION_ID", nargs="+", help="full id or unique prefix")
    parser.set_defaults(run=lambda args: cmd_read(args, read, cli))


def cmd_read(args: argparse.Namespace, read: bool, cli: ModuleType) -> int:
    CliExit, inert, open_store, resolve_id = cli.CliExit, cli.inert, cli.open_store, cli.resolve_id
    # Read first, opened read-only: a store without the column is never opened for writing
    # (a write open could bring an old store up to date -- a change nobody asked for).
    with open_store("read") as db:
        problem = not_tracked(db.store)
        if problem:
            raise CliExit(f"Error: {problem}; nothing was changed.")
        ids = [resolve_id(db, arg) for arg in args.session_ids]
    now = time.time()
    with open_store("write") as db:
        for session_id in dict.fromkeys(ids):
            stamped = set_read(db.store, session_id, read, now=now)
            if not stamped:
                raise CliExit(f"Session '{inert(session_id)}' not found.")
            others = len(stamped) - 1
            lineage = f" (and {others} session{'s' if others != 1 else ''} of its lineage)" if others else ""
            print(f"Marked '{inert(session_id)}' {'read' if read else 'unread'}{lineage}.")
    return 0
