"""``hermes sessions pin --list [--json]``: the pinned conversations.

Pinned conversations are listed first by ``list``; ``pin --list`` lists only them (archived
ones included, marked by the ``archived`` field of ``--json``), with the same columns as
``list``, or as one JSON document (:mod:`hermes_tui.cli_json`). Internal runs are left out as
``list`` leaves them out.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import AbstractContextManager
from typing import Callable, Iterator

from hermes_state import ListQuery
from hermes_state.listing.query import View

from .cli_json import session_item, write_document

#: Rows read at a time (pins are few; the list stops at the first row that is not pinned).
_CHUNK = 100


def add_pin_list_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session_ids", metavar="SESSION_ID", nargs="*", help="full id or unique prefix")
    parser.add_argument("--list", action="store_true", help="list the pinned sessions instead of pinning")
    parser.add_argument("--json", action="store_true", help="with --list: one JSON document (see README, JSON output)")


def _usage_error(args: argparse.Namespace, message: str) -> int:
    parser = args._help_parser
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return 2


def pinned_rows(db) -> Iterator[dict]:
    """The pinned conversations of the human list (every view), pinned first as the list
    orders them: the rows up to the first one that is not pinned."""
    rows = db.iter_listed(ListQuery.human(view=View.ALL), 10**9, chunk=_CHUNK, brief=True)
    try:
        for row in rows:
            if not row.get("pinned"):
                return
            yield row
    finally:
        rows.close()


def pin_list_or_usage(
    args: argparse.Namespace,
    opener: Callable[[], AbstractContextManager],
    format_lines: Callable[[list[dict]], list[str]],
) -> int | None:
    """Run ``pin --list`` (or report a usage error) and return the exit code; None when the
    arguments ask to pin ids (the caller pins them)."""
    if args.list:
        if args.session_ids:
            return _usage_error(args, "--list takes no SESSION_ID")
        with opener() as db:
            if args.json:
                write_document("pin", "sessions", (session_item(row) for row in pinned_rows(db)))
                return 0
            rows = list(pinned_rows(db))
        if not rows:
            print("No pinned sessions.")
            return 0
        sys.stdout.write("\n".join(format_lines(rows)) + "\n")
        return 0
    if args.json:
        return _usage_error(args, "--json goes with --list")
    if not args.session_ids:
        return _usage_error(args, "give at least one SESSION_ID, or --list")
    return None
