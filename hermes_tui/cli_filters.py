"""The one filter option group of ``hermes sessions`` (CLI-21, BR-21).

``list``, ``export``, ``archive`` / ``unarchive`` / ``pin`` / ``unpin``, ``prune`` and
``delete`` (given filters instead of an id) take the same options, made into one
:class:`~hermes_state.listing.ListQuery` (its ``narrow`` field, see
:mod:`hermes_state.listing.narrow`) by :func:`query_from_args`, so a command by filter acts on
exactly what ``list`` with the same options shows. Values are read in the handler, not by
argparse, so a bad one is one line on stderr (exit 2), never a usage block.

Commands that change the store by filter (``archive``, ``prune``, ``delete`` …) require at
least one filter, say how many conversations they would touch and ask (``--yes`` skips the
question); ``--dry-run`` lists them and changes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from hermes_state import ListQuery
from hermes_state.inert_text import inert_cells as inert, inert_line
from hermes_state.listing.narrow import Narrow, missing_columns
from hermes_state.listing.query import View
from hermes_state.timewindow import TimeParseError, parse_time

from .wording import counted

if TYPE_CHECKING:  # pragma: no cover
    from hermes_state import SessionDB
    from hermes_state.listing.select import Chosen

#: An untitled conversation in a listing (as ``list`` shows it).
UNTITLED_MARK = "\u2014"

#: How many conversations a ``--dry-run`` (or a confirmation) names before "… and N more".
SHOWN = 20

#: The options of the group (dest, flag, metavar, kind, help), in help order.
FILTERS: tuple[tuple[str, str, str, str, str], ...] = (
    ("since", "--since", "WHEN", "time",
     "only conversations last active at or after WHEN: an age (7d, 2w, 12h, 90min, 3mo, 1y) "
     "or a local date/time (2026-10-01, '2026-10-01 14:30')"),
    ("until", "--until", "WHEN", "time",
     "only conversations last active at or before WHEN (a date includes that whole day)"),
    ("title", "--title", "TEXT", "text", "only conversations whose title contains TEXT"),
    ("model", "--model", "TEXT", "text", "only conversations whose model name contains TEXT"),
    ("provider", "--provider", "NAME", "text", "only conversations billed through this provider"),
    ("cwd", "--cwd", "PATH", "path", "only conversations whose working directory is PATH or under it"),
    ("workspace", "--workspace", "NEEDLE", "workspace",
     "only one workspace (git repository or project directory): its path, or a unique part "
     "or base name of it"),
    ("branch", "--branch", "TEXT", "text", "only conversations whose git branch contains TEXT"),
    ("end_reason", "--end-reason", "REASON", "text", "only conversations that ended with REASON"),
    ("min_messages", "--min-messages", "N", "count", "only conversations with at least N messages"),
    ("max_messages", "--max-messages", "N", "count", "only conversations with at most N messages"),
    ("min_tokens", "--min-tokens", "N", "count", "only conversations with at least N tokens (input + output)"),
    ("max_tokens", "--max-tokens", "N", "count", "only conversations with at most N tokens (input + output)"),
    ("min_cost", "--min-cost", "USD", "money", "only conversations costing at least USD (actual, else estimated)"),
    ("max_cost", "--max-cost", "USD", "money", "only conversations costing at most USD (actual, else estimated)"),
    ("min_tool_calls", "--min-tool-calls", "N", "count", "only conversations with at least N tool calls"),
    ("max_tool_calls", "--max-tool-calls", "N", "count", "only conversations with at most N tool calls"),
)

#: The option names of what the store may lack, for the one-line refusal.
_FLAG_OF = {dest: flag for dest, flag, *_rest in FILTERS}


class FilterError(Exception):
    """A filter value or a store that cannot take a filter: one line, and the exit code."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def add_filter_options(parser: argparse.ArgumentParser, *, source: bool = True, workspace: bool = True) -> None:
    """Add the filter group to a command's parser (``--source`` unless the command has its
    own)."""
    group = parser.add_argument_group("filters (all must match)")
    if source:
        group.add_argument("--source", help="only conversations from this source (e.g. cli, telegram)")
    for dest, flag, metavar, _kind, help_text in FILTERS:
        if dest == "workspace" and not workspace:
            continue
        group.add_argument(flag, dest=dest, metavar=metavar, help=help_text)


def add_action_options(parser: argparse.ArgumentParser) -> None:
    """``--dry-run`` and ``--yes`` of a command that changes conversations by filter."""
    parser.add_argument("--dry-run", "-n", action="store_true",
                        help="list what would be touched (count and the first lines); change nothing")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")


def given(args: argparse.Namespace) -> list[str]:
    """The filter options given (their flags), ``--source`` included."""
    out = ["--source"] if getattr(args, "source", None) is not None else []
    out += [flag for dest, flag, *_rest in FILTERS if getattr(args, dest, None) is not None]
    return out


def given_words(args: argparse.Namespace) -> list[str]:
    """The filter options given, as words a command line takes again (``--source``, ``cli``,
    ``--title``, ``my taxes``), in the group's order: what a printed command repeats so that,
    run later, it reads the same filters. ``--cwd`` is written as the absolute path it was
    read as (typed later, elsewhere, ``.`` would be another directory); a value that starts
    with ``-`` is written ``--flag=VALUE`` (argparse would read it as an option)."""
    words: list[str] = []
    for dest, flag in (("source", "--source"), *((dest, flag) for dest, flag, *_rest in FILTERS)):
        value = getattr(args, dest, None)
        if value is None:
            continue
        if dest == "cwd" and str(value).strip():
            value = os.path.abspath(os.path.expanduser(value))
        words += [f"{flag}={value}"] if str(value).startswith("-") else [flag, str(value)]
    return words


def _count(flag: str, raw: str) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise FilterError(f"Error: {flag} needs a whole number, not '{raw}'.") from None
    if value < 0:
        raise FilterError(f"Error: {flag} must be 0 or more, not '{raw}'.")
    return value


def _money(flag: str, raw: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise FilterError(f"Error: {flag} needs an amount in USD (e.g. 0.5), not '{raw}'.") from None
    if not (value >= 0) or value == float("inf"):
        raise FilterError(f"Error: {flag} must be a finite amount of 0 or more, not '{raw}'.")
    return value


def narrow_from_args(args: argparse.Namespace, now: float | None = None) -> Narrow:
    """The :class:`Narrow` of the options (``--min-messages`` and ``--workspace`` are the
    query's own fields: see :func:`query_from_args`). Raises :class:`FilterError`."""
    values: dict[str, Any] = {}
    for dest, flag, _metavar, kind, _help in FILTERS:
        raw = getattr(args, dest, None)
        if raw is None or dest in ("min_messages", "workspace"):
            continue
        if kind == "time":
            try:
                values[dest] = parse_time(raw, now, end_of_day=dest == "until")
            except TimeParseError as exc:
                raise FilterError(f"Error: {flag}: {exc}") from None
        elif kind == "count":
            values[dest] = _count(flag, raw)
        elif kind == "money":
            values[dest] = _money(flag, raw)
        elif kind == "path":
            if not raw.strip():
                raise FilterError(f"Error: {flag} needs a path.")
            values[dest] = os.path.abspath(os.path.expanduser(raw))
        else:
            if not raw.strip():
                raise FilterError(f"Error: {flag} needs a value.")
            values[dest] = raw
    narrow = Narrow(**values)
    if narrow.since is not None and narrow.until is not None and narrow.until < narrow.since:
        raise FilterError("Error: --until is earlier than --since: no conversation can match.")
    for low, high in (("min_tokens", "max_tokens"), ("min_cost", "max_cost"), ("min_tool_calls", "max_tool_calls")):
        if getattr(narrow, low) is not None and getattr(narrow, high) is not None and getattr(narrow, high) < getattr(narrow, low):
            raise FilterError(f"Error: {_FLAG_OF[high]} is below {_FLAG_OF[low]}: no conversation can match.")
    return narrow


def query_from_args(
    db: "SessionDB", args: argparse.Namespace, *, view: View = View.ACTIVE, now: float | None = None,
) -> ListQuery:
    """The list the options choose on this store (internal sources left out unless
    ``--source`` names one, as ``list`` does). Raises :class:`FilterError` for a bad value,
    for a filter on a column this store's file does not have (one line naming it: never an
    empty answer that looks like "nothing matched"), and for a workspace that is unknown or
    ambiguous."""
    narrow = narrow_from_args(args, now)
    min_messages = _count("--min-messages", args.min_messages) if getattr(args, "min_messages", None) is not None else 0
    max_messages = narrow.max_messages
    if max_messages is not None and max_messages < min_messages:
        raise FilterError("Error: --max-messages is below --min-messages: no conversation can match.")
    caps = db.capabilities
    missing = missing_columns(narrow, caps.has_session_column)
    if missing:
        dest, column = missing[0]
        raise FilterError(
            f"Error: {_FLAG_OF[dest]} cannot be applied: this store (schema {caps.schema_version}) "
            f"has no {column} column.", code=1,
        )
    workspace = None
    if getattr(args, "workspace", None) is not None:
        workspace = resolve_workspace(db, args.workspace)
    base = ListQuery.human(getattr(args, "source", None) or None)
    return base.with_(view=view, min_messages=min_messages, workspace=workspace, narrow=narrow)


def resolve_workspace(db: "SessionDB", needle: str) -> str:
    """The workspace ``needle`` names: one recorded exactly so, else the only one whose path
    contains it or whose base name is it. Raises :class:`FilterError` otherwise."""
    from hermes_state import listing

    text = needle.strip()
    if not text:
        raise FilterError("Error: --workspace needs a path or a name.")
    caps = db.capabilities
    if not (caps.has_cwd or caps.has_git_repo_root):
        raise FilterError(
            f"Error: --workspace cannot be applied: this store (schema {caps.schema_version}) "
            "records no working directory.", code=1,
        )
    known = [w.workspace for w in listing.workspace_counts(db.store, ListQuery(view=View.ALL, include_hidden=True)) if w.workspace]
    expanded = os.path.abspath(os.path.expanduser(text)) if text.startswith(("~", "/", ".")) else text
    for candidate in (text, expanded):
        if candidate in known:
            return candidate
    found = [w for w in known if text in w or os.path.basename(w.rstrip("/")) == text]
    if len(found) == 1:
        return found[0]
    if not found:
        raise FilterError(f"Error: no workspace matches '{inert(text)}'.", code=1)
    names = ", ".join(inert(w) for w in found[:5]) + (" …" if len(found) > 5 else "")
    raise FilterError(f"Error: '{inert(text)}' matches {len(found)} workspaces: {names}. Give more of the path.",
                      code=1)


def chosen_lines(chosen: "list[Chosen]", limit: int = SHOWN) -> list[str]:
    """The first ``limit`` conversations as ``id  source  title`` lines (inert), and how many
    more."""
    from .textsafe import fit_cells

    lines = []
    for item in chosen[:limit]:
        more = len(item.sessions) - 1  # (its chain's later segments, its delegate runs)
        extra = f" (+{counted(more, 'session')})" if more else ""
        lines.append(f"  {inert(item.id)}  {inert(item.source or '')}  "
                     f"{fit_cells(inert(item.title or UNTITLED_MARK), 40)}{extra}")
    if len(chosen) > limit:
        lines.append(f"  … and {len(chosen) - limit} more")
    return lines


def say(lines: list[str], stream=None) -> None:
    if lines:
        (stream or sys.stdout).write("\n".join(lines) + "\n")


# ---------------------------------------------------------------------------- commands by filter
#
# The command line's hub (cli.py) hands these its ``open_store``, ``confirm`` and the error it
# stops with (``kit``): this module never imports it (no import cycle), and each command's
# words stay in one place.


def require_filter(args: argparse.Namespace, command: str) -> None:
    """Neither ids nor a filter: a usage error (usage line, then the reason; exit 2), as a
    missing argument always was -- never "every conversation"."""
    if not given(args):
        parser = getattr(args, "_help_parser", None)
        usage = parser.format_usage().rstrip("\n") + "\n" if parser is not None else ""
        raise FilterError(
            f"{usage}Error: {command} needs SESSION_IDs or at least one filter "
            "(--since, --source, --title, …; see --help)"
            + (", or --list for the pinned ones." if command == "pin" else "."))


def _dry_run(chosen: "list[Chosen]", verb: str) -> None:
    sessions = sum(len(c.sessions) for c in chosen)
    say(chosen_lines(chosen))
    say([f"Would {verb} {counted(len(chosen), 'conversation')} ({counted(sessions, 'session')}); nothing was changed."])


def _ask(kit: Any, args: argparse.Namespace, chosen: "list[Chosen]", question: str) -> None:
    """Say what would be touched (on stderr) and ask; ``--yes`` skips the question."""
    if args.yes:
        return
    say(chosen_lines(chosen), sys.stderr)
    if not kit.confirm(question):
        raise kit.cancelled()


#: ``archive`` … by filter: (the list it acts on, the flag's value, verb, past tense).
FLAG_BY_FILTER = {
    "archive": (View.ACTIVE, True, "archive", "Archived"),
    "unarchive": (View.ARCHIVED, False, "unarchive", "Unarchived"),
    "pin": (View.ACTIVE, True, "pin", "Pinned"),
    "unpin": (View.ALL, False, "unpin", "Unpinned"),
}


def flag_by_filter(args: argparse.Namespace, name: str, kit: Any) -> int:
    """``archive`` / ``unarchive`` / ``pin`` / ``unpin`` with filters instead of ids: every
    conversation the filters list (archive: the active list; unarchive: the archived one;
    unpin: both), each whole (its chain and its delegate runs)."""
    from hermes_state.listing.select import choose

    require_filter(args, name)
    view, value, verb, done = FLAG_BY_FILTER[name]
    with kit.open_store("read" if args.dry_run else "write") as db:
        problem = db.capabilities.archive_problem if name in ("archive", "unarchive") else None
        if problem:
            raise FilterError(f"Error: {problem}; nothing was changed.", code=1)
        kit.warn_unknown_source(db, getattr(args, "source", None))
        query = query_from_args(db, args, view=view)
        chosen = choose(db.lister, query)
        if name in ("pin", "unpin"):
            chosen = [c for c in chosen if c.pinned != value]  # (already so: nothing to do)
        if args.dry_run:
            _dry_run(chosen, verb)
            return 0
        if not chosen:
            print(f"No conversation to {verb} matches the filters.")
            return 0
        sessions = sum(len(c.sessions) for c in chosen)
        _ask(kit, args, chosen, f"{verb.capitalize()} {counted(len(chosen), 'conversation')} ({counted(sessions, 'session')})? [y/N] ")
        for item in chosen:
            if name in ("archive", "unarchive"):
                db.set_session_archived(item.id, value)
            else:
                db.set_session_pinned(item.id, value)
    print(f"{done} {counted(len(chosen), 'conversation')}.")
    return 0


def prune_by_filter(args: argparse.Namespace, kit: Any, older_than_days: float | None) -> int:
    """``prune`` with filters: the conversations the filters list (the active list: archived
    and pinned ones are kept) whose every session has ended, each whole (its chain and its
    delegate runs), deleted in one transaction (sessions an agent holds are left for later).
    ``--older-than N`` with filters is ``--until Nd`` (their last activity)."""
    from hermes_state.deletion import remove_session_files
    from hermes_state.listing.select import choose, delete_chosen

    with kit.open_store("read" if args.dry_run else "write") as db:
        kit.warn_unknown_source(db, getattr(args, "source", None))
        query = query_from_args(db, args)
        if older_than_days is not None:
            import time

            cutoff = time.time() - older_than_days * 86400
            until = query.narrow.until
            query = query.with_(narrow=query.narrow.with_(until=cutoff if until is None else min(until, cutoff)))
        chosen = choose(db.lister, query)
        live = sum(1 for c in chosen if not c.ended)
        pinned = sum(1 for c in chosen if c.ended and c.pinned)
        chosen = [c for c in chosen if c.ended and not c.pinned]
        kept = []
        if live:
            kept.append(f"{counted(live, 'conversation')} still going on")
        if pinned:
            kept.append(f"{counted(pinned, 'conversation')} pinned")
        if kept:
            print(f"Kept: {', '.join(kept)}.", file=sys.stderr)
        if args.dry_run:
            say(chosen_lines(chosen))
            sessions = sum(len(c.sessions) for c in chosen)
            say([f"Would prune {counted(len(chosen), 'conversation')} ({counted(sessions, 'session')}); nothing was deleted."])
            return 0
        if not chosen:
            print("No ended conversation matches the filters.")
            return 0
        sessions = sum(len(c.sessions) for c in chosen)
        messages = sum(c.messages for c in chosen)
        _ask(kit, args, chosen,
             f"Delete {counted(len(chosen), 'conversation')} ({counted(sessions, 'session')}, {counted(messages, 'message')})? [y/N] ")
        ids = [sid for c in chosen for sid in c.sessions]
        deleted = delete_chosen(db.store, ids)
        if deleted:
            remove_session_files(db.db_path.parent / "sessions", deleted)
    print(f"Pruned {len(deleted)} session(s).")
    return 0


def delete_by_filter(args: argparse.Namespace, kit: Any) -> int:
    """``delete`` with filters: every conversation the filters list (the active list), each
    session of it through the trash as a single delete is (a delegate run with its parent),
    so ``hermes sessions restore`` brings each back."""
    from hermes_state.listing.select import choose
    from hermes_state.trash import TRASH_DAYS, default_trash_dir, delete_with_snapshot

    from .cli_profiles import named_in_commands
    from .hints import trash_command

    require_filter(args, "delete")
    with kit.open_store("read" if args.dry_run else "write") as db:
        kit.warn_unknown_source(db, getattr(args, "source", None))
        query = query_from_args(db, args)
        chosen = choose(db.lister, query)
        if args.dry_run:
            _dry_run(chosen, "delete")
            return 0
        if not chosen:
            print("No conversation matches the filters.")
            return 0
        sessions = sum(len(c.sessions) for c in chosen)
        messages = sum(c.messages for c in chosen)
        _ask(kit, args, chosen,
             f"Delete {counted(len(chosen), 'conversation')} ({counted(sessions, 'session')}, {counted(messages, 'message')})? [y/N] ")
        failed: list[str] = []
        trash = default_trash_dir()
        gone: set[str] = set()
        for item in chosen:
            for session_id in item.sessions:
                if session_id in gone:
                    continue  # (a delegate run deleted with its parent, UC-5)
                outcome = delete_with_snapshot(
                    lambda: db, session_id, sessions_dir=db.db_path.parent / "sessions", trash=trash,
                )
                if outcome.ok and outcome.deleted is not None:
                    gone.update(outcome.deleted.session_ids)
                elif db.get_session(session_id) is not None:
                    failed.append(f"{session_id}: {outcome.error or 'not deleted'}")
        deleted = len(gone)
    print(f"Deleted {counted(len(chosen), 'conversation')} ({counted(deleted, 'session')}).")
    # (the profile's trash where one was named or is not the default: PF-7)
    profile = named_in_commands(args)
    print(f"Kept {TRASH_DAYS} days in the trash: {trash_command(profile.name if profile is not None else None)}",
          file=sys.stderr)
    for line in failed:
        print(f"Not deleted: {inert(line)}", file=sys.stderr)
    return 1 if failed else 0


def export_choice(db: "SessionDB", args: argparse.Namespace) -> "list[Chosen] | None":
    """What ``export`` with filters takes: the conversations the filters list (the active
    list), or None when no filter but ``--source`` is given (the export of a source as
    before)."""
    from hermes_state.listing.select import choose

    if not [flag for flag in given(args) if flag != "--source"]:
        return None
    return choose(db.lister, query_from_args(db, args))


def note_unread(db: Any, unread_only: bool, profile: str | None = None) -> None:
    """With ``--unread``, one line on stderr when ``db``'s store does not track unread (no
    ``last_read_at``: nothing in it is unread), naming the profile across profiles."""
    if not unread_only:
        return
    from hermes_state.unread import not_tracked

    problem = not_tracked(db.store)
    if problem:
        where = f"profile '{inert_line(profile)}': " if profile is not None else ""
        print(f"Note: {where}{problem}: nothing is unread.", file=sys.stderr)
