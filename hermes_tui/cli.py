"""The ``hermes`` command line: ``hermes sessions <action>`` (docs/requirements.md §13).

``main(argv=None) -> int`` parses, runs one action and returns the exit code (CLI-2): 0 on
success, 1 for not found / cannot open / rejected / write failure / ``Cancelled.``, 2 for usage
errors. ``sessions_main`` is the same under the name ``hermes-sessions`` (which no other
program installs; ``hermes`` itself is Hermes Agent's: see :mod:`hermes_tui.hermes_shim`).

The two streams: stdout carries what a command produces -- a listing, figures,
exported data, or the one line saying what a write did -- and nothing else, so it can be piped.
Every error, warning, hint, prompt and ``Cancelled.`` goes to stderr, in every command. No
traceback ever reaches the user: database, file-system and unexpected errors become one
``Error: …`` line.

Adding an action
----------------
Every ``hermes sessions`` action is one function registered with :func:`session_action`; it
receives the ``sessions`` subparsers object, adds its parser and sets ``run`` — an
``(args) -> int`` handler — as a default::

    @session_action("doctor")
    def _add_doctor(sub):
        parser = sub.add_parser("doctor", help="check the database")
        parser.set_defaults(run=_cmd_doctor)

Handlers open the store with ``with open_store("read" | "write") as db:`` which applies the
no-database / corrupt / locked / read-only rules below and always closes it (CLI-15). Heavy
imports (``textual`` above all) belong inside the handler, never at module level: only
``browse`` may import the UI.

The browser hook
----------------
``_cmd_browse(args) -> int`` is the one place ``browse`` enters the UI. It checks the database
path (CLI-13: a missing file is a one-line error suggesting ``--demo``), then imports
``hermes_tui.browse`` lazily and calls ``run_browse`` (the app, its plain fallback, demo mode
and the hand-off to a resume command).

Opening rules
-------------
* The database is never created by these actions: a missing ``state.db`` is
  ``Error: Could not open session database: no database at <path>``.
* A file that is not SQLite, a corrupt file, a directory, ``HERMES_HOME`` naming a file, or an
  SQLite file that is not a Hermes store are each reported in one line.
* Read actions (``list``, ``search``, ``stats``, ``export``) open the store read-only when it is already at
  schema 11 (or newer) or when the file or its directory is not writable: they then never
  wait for a writer's lock and never modify the file. An older schema in a writable place is
  opened read-write and upgraded, as upstream's CLI does.
* Write actions (``delete``, ``rename``, ``prune``, ``import``) open read-write through the
  store's retry rules; ``HERMES_SESSIONS_WRITE_RETRIES`` (an integer ≥ 1) overrides the number
  of attempts (upstream: 15) so a locked database is reported sooner.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import stat
import sys
import time
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from .collector import collector_paused
from .cli_prompt import confirm  # noqa: F401  (the commands' one question; re-exported)
from .wording import counted

# Importing makes ~100k objects, and the collector, run as they come, walked them all again and
# again: ~0.1 s of a start-up. Paused while the store's modules load.
with collector_paused():
    from hermes_state import ListQuery, SessionDB
    from hermes_state import open_store as open_store_at
    from hermes_state.store import BlankDatabase
    from hermes_state.errors import DatabaseError, describe_db_error
    from hermes_state.paths import hermes_home
    from hermes_state.timefmt import relative_time
    from hermes_state.visibility import INTERNAL_SOURCES
    from hermes_state.titles import sanitize_title
    from hermes_state.inert_text import inert_cells, shell_quote
    from hermes_state.models import shown_source

    from .textsafe import fit_cells, inert_line
    from . import cli_profiles
    from . import cli_filters
    from .cli_filters import FilterError

#: Sources hidden from ``list`` and ``browse`` unless ``--source`` is given (CLI-4, UC-3).
HIDDEN_SOURCES = list(INTERNAL_SOURCES)
#: Environment variable overriding the write retry budget (attempts).
WRITE_RETRIES_ENV = "HERMES_SESSIONS_WRITE_RETRIES"
#: Set to 1 to let unexpected exceptions propagate with their traceback (development only).
DEBUG_ENV = "HERMES_SESSIONS_DEBUG"

TITLED_HEADER = f"{'Title':<32} {'Preview':<40} {'Last Active':<13} ID"
TITLED_RULE = "\u2500" * 110
UNTITLED_HEADER = f"{'Preview':<50} {'Last Active':<13} {'Src':<6} ID"
UNTITLED_RULE = "\u2500" * 95
UNTITLED_MARK = "\u2014"  # em dash for untitled rows in the titled layout


class CliExit(Exception):
    """Stop the action: print ``message`` (if any) on stderr and exit with ``code``."""

    def __init__(self, message: str | None, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def _open_error(detail: str) -> CliExit:
    return CliExit(f"Error: Could not open session database: {detail}")


# ---------------------------------------------------------------------------- terminal safety

def inert(text: Any) -> str:
    """Display text with terminal controls made visible, one code point for one.

    Previews and ids are data: an ESC in a message must not drive the terminal. The
    replacement keeps the length, so the column layout of CLI-7 is unchanged (tabs kept,
    LI-3). The table is the browser's (hermes_state.inert_text).
    """
    return inert_cells(text)


# ---------------------------------------------------------------------------- opening the store


def _write_retries() -> int | None:
    raw = os.environ.get(WRITE_RETRIES_ENV, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        return None
    return value if value >= 1 else None


def _store_class() -> type[SessionDB]:
    retries = _write_retries()
    if retries is None:
        return SessionDB
    return type("SessionDB", (SessionDB,), {"_WRITE_MAX_RETRIES": retries})


#: The ``HERMES_HOME`` of the profile this run opens (``--profile``, else the one Hermes
#: Agent would run in: :mod:`hermes_state.profiles`); set by :func:`main` for each run.
_run_home: Path | None = None


def db_location() -> Path:
    """``<the run's profile home>/state.db``, checking that the home is not a file."""
    home = _run_home if _run_home is not None else hermes_home()
    if home.exists() and not home.is_dir():
        raise _open_error(f"HERMES_HOME ({home}) is a file, not a directory")
    return home / "state.db"


def _open(access: str, scratch: ExitStack) -> SessionDB:
    path = db_location()
    try:
        return open_store_at(path, access, store_class=_store_class())
    except BlankDatabase as exc:
        if access != "read":
            raise _open_error(str(exc)) from exc
        return _blank_history(exc, scratch)
    except DatabaseError as exc:
        raise _open_error(str(exc)) from exc


def _blank_history(blank: Exception, scratch: ExitStack) -> SessionDB:
    """What a read command sees in a file with no schema yet: an empty history.

    A read never writes, whatever the file (UC-8), so the file keeps its zero bytes; the
    empty store answering the command lives in a private temporary directory, removed after
    the store is closed."""
    import tempfile

    holder = scratch.enter_context(tempfile.TemporaryDirectory(prefix="hermes-sessions-empty-"))
    db = SessionDB(Path(holder) / "state.db")
    db.warnings.append(f"{blank}; nothing was written to it")
    return db


@contextmanager
def open_store(access: str = "read") -> Iterator[SessionDB]:
    """The one ``SessionDB`` of this run (CLI-15), closed on every way out."""
    with ExitStack() as scratch:
        db = _open(access, scratch)
        try:
            for warning in db.warnings:
                print(f"Warning: {inert(warning)}", file=sys.stderr)
            yield db
        finally:
            db.close()


def resolve_id(db: SessionDB, arg: str | None) -> str:
    """The session an id argument names, for every command that takes one (CLI-5, CLI-17).

    A full id or a unique prefix gives the full id. Otherwise the command stops:

    * empty or blank → ``Error: empty session id.`` (exit 2, a usage error) — never "every
      session";
    * a prefix of several ids → ``Session '<arg>' is ambiguous: N sessions match.`` (exit 1);
    * nothing → ``Session '<arg>' not found.`` (exit 1).
    """
    if arg is None or not str(arg).strip():
        raise CliExit("Error: empty session id.", code=2)
    session_id = db.resolve_session_id(arg)
    if session_id is not None:
        return session_id
    matches = db.count_id_prefix(arg)
    if matches > 1:
        raise CliExit(
            f"Session '{inert(arg)}' is ambiguous: {matches} sessions match. Give more of the id."
        )
    raise CliExit(f"Session '{inert(arg)}' not found.{_in_other_profiles(arg)}")


def _in_other_profiles(arg: str) -> str:
    """Where else an id not found here is (PF-1): history in another Hermes profile is not
    lost, and the message says which profile to name. Empty when no other profile has it
    (or none can be read: this is only a hint)."""
    try:
        from hermes_state.profiles import discover

        others = [p for p in discover().with_stores() if _run_home is None or p.home != _run_home]
    except Exception:
        return ""
    found = []
    for profile in others:
        try:
            db = SessionDB(profile.db_path, read_only=True)
        except Exception:
            continue
        try:
            if db.resolve_session_id(arg) is not None:
                found.append(profile.name)
        except Exception:
            pass
        finally:
            db.close()
    if not found:
        return ""
    names = ", ".join(inert(name) for name in found)
    return f" It is in profile {names}: add --profile {inert(found[0])}."



def _cancelled() -> CliExit:
    return CliExit("Cancelled.")


# ---------------------------------------------------------------------------- formatting


def _list_head(titled: bool) -> list[str]:
    """The header and rule of ``hermes sessions list`` (CLI-7): the titled layout when any
    row listed has a title. Widths count terminal cells, so CJK titles line up, and a cut
    text ends in "…"."""
    return [TITLED_HEADER, TITLED_RULE] if titled else [UNTITLED_HEADER, UNTITLED_RULE]


def _list_line(row: dict, titled: bool, now: float | None) -> str:
    preview = row.get("preview") or ""
    last = relative_time(row.get("last_active"), now)
    if titled:
        title = fit_cells(inert(row.get("title") or UNTITLED_MARK), 30, 32)
        return f"{title} {fit_cells(inert(preview), 38, 40)} {last:<13} {inert(row['id'])}"
    # v30: "created→current" where the session moved platforms (UC-11).
    source = inert(shown_source(row.get("source"), row.get("created_source")))
    return f"{fit_cells(inert(preview), 48, 50)} {last:<13} {fit_cells(source, 10**6, 6)} {inert(row['id'])}"


# ---------------------------------------------------------------------------- actions

_ActionAdder = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: ``hermes sessions`` actions in help order: name → function adding the action's parser.
SESSION_ACTIONS: dict[str, _ActionAdder] = {}


def session_action(name: str) -> Callable[[_ActionAdder], _ActionAdder]:
    """Register the parser-adding function of one ``hermes sessions`` action."""

    def register(adder: _ActionAdder) -> _ActionAdder:
        SESSION_ACTIONS[name] = adder
        return adder

    return register


def _int_at_least(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {least} or more: {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    return _int_at_least(text, 0)


def _limit(text: str) -> int:
    """A ``--limit``: 0 would list nothing and say "No sessions found." of a full store."""
    return _int_at_least(text, 1)


def warn_unknown_source(db: SessionDB, source: str | None) -> None:
    """A ``--source`` no session has is most likely a typo: say so on stderr, naming the
    sources the store has (the command still runs: a source may have no session yet)."""
    if source is None:
        return
    known = db.source_counts()
    if source in known:
        return
    names = ", ".join(inert(name) for name in sorted(k for k in known if k)) or "none (no sessions)"
    print(f"Warning: no session has source '{inert(source)}'; sources in this store: {names}",
          file=sys.stderr)


# list ------------------------------------------------------------------------


@session_action("list")
def _add_list(sub) -> None:
    parser = sub.add_parser("list", help="list recent sessions")
    parser.add_argument("--limit", type=_limit, default=20, help="how many sessions (default 20)")
    parser.add_argument("--archived", action="store_true", help="list archived sessions instead")
    parser.add_argument("--json", action="store_true", help="one JSON document (see README, JSON output)")
    parser.add_argument("--unread", action="store_true", help="only conversations with activity since last read (v30 stores)")
    parser.add_argument(
        "--status", type=_statuses, metavar="STATUS[,STATUS]",
        help="only conversations that ended so: done, interrupted, error, empty",
    )
    cli_filters.add_filter_options(parser)
    parser.set_defaults(run=_cmd_list)


def _statuses(text: str) -> tuple[str, ...]:
    from hermes_state.lifecycle import parse_statuses

    try:
        return parse_statuses(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cmd_list(args: argparse.Namespace) -> int:
    exclude = None if args.source is not None else HIDDEN_SOURCES
    archived_only = getattr(args, "archived", False)
    now = time.time()
    unread_only = getattr(args, "unread", False)
    statuses = getattr(args, "status", None) or ()
    filtered = bool([flag for flag in cli_filters.given(args) if flag != "--source"])
    if cli_profiles.across(args):
        if filtered:
            cli_filters.narrow_from_args(args, now)  # (a bad value is said once, before any store opens)
        query = ListQuery.from_options(
            args.source, exclude, archived_only=archived_only, unread_only=unread_only, statuses=statuses,
        )
        return _list_across(args, query, now, filtered)
    with open_store("read") as db:
        warn_unknown_source(db, args.source)
        query = ListQuery.from_options(args.source, exclude, archived_only=archived_only)
        if filtered:  # (the time window, title, model, … of cli_filters)
            query = cli_filters.query_from_args(db, args, view=query.view)
        if unread_only or statuses:
            query = query.with_(unread_only=unread_only, statuses=tuple(sorted(statuses)))
        cli_filters.note_unread(db, unread_only)
        # The rows of list_sessions_rich (CLI-7), streamed: a large --limit printed as it is
        # read, not held whole.
        rows = db.iter_listed(query, args.limit, brief=True)
        if args.json:
            from .cli_json import session_item, shown_counts, write_document

            rows = shown_counts(db, rows)
            with closing(rows):
                write_document("list", "sessions", (session_item(row) for row in rows))
            return 0
        try:
            if _print_listing(((None, row) for row in rows), now):
                return 0
        finally:
            rows.close()
        # An empty list over archived conversations says where they are (on stderr: stdout
        # keeps CLI-3's exact line).
        narrowed = unread_only or bool(statuses)
        if filtered:
            archived = 0 if archived_only or narrowed else db.lister.count_listed(query.with_(view="archived"))
        else:
            archived = 0 if archived_only or narrowed else db.session_count(
                args.source, archived_only=True, exclude_children=True, exclude_sources=exclude,
            )
    return _say_none_listed(args, archived)


def _say_none_listed(args: argparse.Namespace, archived: int) -> int:
    print("No sessions found.")
    if archived:
        from .hints import list_command

        # The run's own filters, each word quoted, so that the line runs as printed.
        where = "".join(shell_quote(word) + " " for word in cli_filters.given_words(args))
        # (the profile too: typed later, the command would list the profile Hermes runs
        # in then, PF-7 -- a sticky one included)
        across = cli_profiles.across(args)
        profile = None if across else cli_profiles.named_in_commands(args)
        command = list_command(where + "--archived", profile.name if profile is not None else None, all_profiles=across)
        print(f"({archived} archived: {inert_line(command)})", file=sys.stderr)
    return 0


def _list_lines(rows: list[dict]) -> list[str]:
    """The lines ``list`` prints for ``rows`` (all of them held: a short list)."""
    now = time.time()
    titled = any(row.get("title") for row in rows)
    return [*_list_head(titled), *(_list_line(row, titled, now) for row in rows)]


def _print_listing(pairs: Iterator[tuple[str | None, dict]], now: float, *, with_profile: bool = False) -> bool:
    """Print ``(profile, row)`` pairs as CLI-7's listing (a profile column first when rows
    of several profiles are listed); False when there was no row. The layout depends on
    whether any row has a title, so the rows before the first titled one wait (all of them
    only when none has one)."""
    waiting: list[tuple[str | None, dict]] = []
    for pair in pairs:
        waiting.append(pair)
        if pair[1].get("title"):
            break
    if not waiting:
        return False
    titled = bool(waiting[-1][1].get("title"))
    head = _list_head(titled)
    if with_profile:
        head = [cli_profiles.PROFILE_HEAD + head[0], "\u2500" * cli_profiles.PROFILE_WIDTH + head[1]]

    def line(pair: tuple[str | None, dict]) -> str:
        text = _list_line(pair[1], titled, now)
        return cli_profiles.profile_cell(pair[0] or "") + text if with_profile else text

    _print_lines([*head, *(line(pair) for pair in waiting)])
    del waiting[:]
    batch: list[str] = []
    for pair in pairs:
        batch.append(line(pair))
        if len(batch) >= 500:
            _print_lines(batch)
            batch.clear()
    _print_lines(batch)
    return True


def _open_profile_store(profile) -> SessionDB:
    """A profile's store opened for reading by the same rules as one on its own."""
    return open_store_at(profile.db_path, "read", store_class=_store_class())


def _warn_unknown_source_across(stores: list, source: str | None) -> None:
    if source is None:
        return
    known: set[str] = set()
    for db in stores:
        known.update(db.source_counts())
    if source not in known:
        names = ", ".join(inert(name) for name in sorted(k for k in known if k)) or "none (no sessions)"
        print(f"Warning: no session has source '{inert(source)}'; sources in these stores: {names}",
              file=sys.stderr)


def _list_across(args: argparse.Namespace, query: ListQuery, now: float, filtered: bool) -> int:
    """``list --all-profiles`` (PF-2): every profile's list as one, in the list's order, each
    row with its profile (a column when rows of more than one profile can be listed; a field
    of each item with ``--json``). The filters are read on each store: one that cannot take
    them (no such column, no such workspace) is named in one line and left out, unless no
    store can."""
    from hermes_state.across_profiles import merge_listed

    with cli_profiles.open_across(_open_profile_store, cli_profiles.warn) as (opened, _left):
        _warn_unknown_source_across([item.store for item in opened], args.source)
        queries = _queries_across(args, opened, query, now) if filtered else [(item, query) for item in opened]
        for item, _q in queries:
            cli_filters.note_unread(item.store, query.unread_only, item.profile.name)
        streams = [(item.profile.name, item.store.iter_listed(q, args.limit, brief=True)) for item, q in queries]
        if args.json:
            from .cli_json import shown_counts

            streams = [(name, shown_counts(item.store, rows)) for (name, rows), (item, _q) in zip(streams, queries)]
        try:
            merged = merge_listed(streams, by_activity=query.by_activity)
            pairs = (pair for pair, _ in zip(merged, range(args.limit)))
            if args.json:
                from .cli_json import session_item, write_document

                write_document("list", "sessions", ({**session_item(row), "profile": name} for name, row in pairs))
                return 0
            if _print_listing(pairs, now, with_profile=len(opened) > 1):
                return 0
        finally:
            for _name, rows in streams:
                rows.close()
        narrowed = query.unread_only or bool(query.statuses)
        archived = 0 if query.archived_only or narrowed else sum(
            item.store.lister.count_listed(q.with_(view="archived")) for item, q in queries
        )
    return _say_none_listed(args, archived)


def _queries_across(args: argparse.Namespace, opened: list, base: ListQuery, now: float) -> list:
    """Each store's query for the filters (``cli_filters.query_from_args`` on each: a
    workspace is resolved in each store's own paths)."""
    queries, refused = [], []
    for item in opened:
        try:
            q = cli_filters.query_from_args(item.store, args, view=base.view, now=now)
        except FilterError as exc:
            if exc.code == 2:  # (a bad value: the same on every store)
                raise
            refused.append((item, exc))
            continue
        queries.append((item, q.with_(unread_only=base.unread_only, statuses=tuple(sorted(base.statuses)))))
    if not queries:
        raise refused[0][1]
    for item, exc in refused:
        reason = exc.message.removeprefix("Error: ")
        cli_profiles.warn(f"Warning: profile '{inert_line(item.profile.name)}' left out: {reason}")
    return queries


def _print_lines(lines: list[str]) -> None:
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")


# search ----------------------------------------------------------------------


@session_action("search")
def _add_search(sub) -> None:
    from .cli_search import add_search

    add_search(sub, _cmd_search, _limit, _statuses)


def _cmd_search(args: argparse.Namespace) -> int:
    from .cli_search import run_search

    # What the command uses of this module, handed to it: cli_search never imports it.
    kit = argparse.Namespace(
        open_store=open_store, open_profile_store=_open_profile_store, warn_unknown_source=warn_unknown_source,
        warn_unknown_source_across=_warn_unknown_source_across, queries_across=_queries_across,
    )
    return run_search(args, kit)


# browse ----------------------------------------------------------------------


@session_action("browse")
def _add_browse(sub) -> None:
    parser = sub.add_parser("browse", help="browse and search sessions interactively")
    parser.add_argument("--source", help="only sessions from this source")
    parser.add_argument(
        "--limit",
        type=_limit,
        default=500,
        help="rows listed by the plain fallback (default 500)",
    )
    parser.add_argument("--demo", action="store_true", help="browse built-in demo data")
    parser.add_argument("--plain", action="store_true", help="plain text listing, no UI")
    parser.set_defaults(run=_cmd_browse)


def _cmd_browse(args: argparse.Namespace) -> int:
    """The browser hook (CLI-13). Imports the UI lazily: no other action loads textual."""
    if cli_profiles.across(args) and not args.demo:
        from hermes_state.profiles import discover
        from hermes_tui.browse import run_browse  # noqa: PLC0415 - deliberately lazy

        found = discover()
        with_stores = found.with_stores()
        if not with_stores:
            raise CliExit(f"Error: no profile under {found.root} has a session database "
                          f"(profiles: {found.known()})")
        return int(run_browse(None, source=args.source, limit=args.limit, demo=False, plain=args.plain,
                              profiles=with_stores))
    if not args.demo:
        path = db_location()
        if not path.exists():
            raise CliExit(
                f"Error: no session database at {path} "
                "(try 'hermes sessions browse --demo' to explore demo data)"
            )
    from hermes_tui.browse import run_browse  # noqa: PLC0415 - deliberately lazy

    path = None if args.demo else db_location()
    if path is not None and args.source is not None:
        _warn_unknown_source_at(path, args.source)
    return int(
        run_browse(path, source=args.source, limit=args.limit, demo=args.demo, plain=args.plain,
                   profile=None if args.demo else cli_profiles.named_in_commands(args))
    )


def _warn_unknown_source_at(path: Path, source: str) -> None:
    """The browser's unknown-source warning, said before it starts (it stays on the terminal
    under the browser's screen). A store that cannot be read is left to the browser to report,
    in its own words."""
    try:
        db = SessionDB(path, read_only=True)
    except Exception:
        return
    try:
        warn_unknown_source(db, source)
    except Exception:
        pass
    finally:
        db.close()


# export ----------------------------------------------------------------------


@session_action("export")
def _add_export(sub) -> None:
    parser = sub.add_parser("export", help="export sessions to JSONL, Markdown or HTML")
    parser.add_argument("output", metavar="OUTPUT", help="output file (a directory for md-dir), or - for stdout")
    parser.add_argument("--session-id", help="export one session (full id or unique prefix)")
    parser.add_argument(
        "--format",
        choices=("jsonl", "md", "html", "md-dir"),
        default=None,  # (jsonl; None tells a format not given from one given: see _cmd_export)
        help="jsonl (default, re-importable), md (readable transcript), html (one self-contained "
        "page with a sidebar of conversations), md-dir (a directory of one Markdown file per "
        "conversation plus manifest.jsonl with each file's SHA-256)",
    )
    parser.add_argument(
        "--lineage",
        action="store_true",
        help="a conversation's whole compression lineage as one document, root to tip, segments "
        "marked (JSONL: the segments on consecutive lines, each with a 'lineage' key)",
    )
    parser.add_argument(
        "--only", choices=("user-prompts",), help="user-prompts: only the prompts the user wrote"
    )
    parser.add_argument(
        "--redact",
        action="store_true",
        help="replace secrets in common shapes (API keys, tokens, passwords, private keys, "
        "credentials in URLs) with [REDACTED]",
    )
    parser.add_argument("--dry-run", "-n", action="store_true",
                        help="list the conversations the filters choose; write nothing")
    cli_filters.add_filter_options(parser)
    parser.set_defaults(run=_cmd_export)


@contextmanager
def _export_progress(to_stdout: bool) -> Iterator[Callable[..., None] | None]:
    """A transient bar on a terminal's stderr while a file is written; none for stdout."""
    if to_stdout:
        yield None
        return
    from .progress import progress_bar

    with progress_bar("exporting", "sessions", transient=True, terminal_only=True) as update:
        yield update


def _dry_run_of_session(db: Any, session_id: str, lineage: bool) -> int:
    """``export --session-id ID --dry-run``: the sessions the export would write, one line
    each (``id  source  title``), and how many; nothing is written."""
    from hermes_state.export_units import chain_of

    ids = db.store.read(lambda conn: chain_of(conn, session_id)) if lineage else [session_id]
    lines = []
    for sid in ids:
        row = db.get_session(sid) or {}
        lines.append(f"  {inert_line(sid)}  {inert_line(row.get('source') or '')}  "
                     f"{fit_cells(inert_line(row.get('title') or '—'), 40)}")
    cli_filters.say(lines)
    cli_filters.say([f"Would export {counted(len(ids), 'session')}; nothing was written."])
    return 0


def _is_regular_file(stream: Any) -> bool:
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):  # (io.UnsupportedOperation is both)
        return False


#: File names whose suffix says another format than the default JSONL.
_FORMAT_OF_SUFFIX = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def _cmd_export(args: argparse.Namespace) -> int:
    # (on several cores when the export is large: the same bytes, see export_parallel)
    from hermes_state.export_parallel import export_to_path, export_to_stream
    from hermes_state.export_units import ExportOptions

    to_stdout = args.output == "-"
    if args.format is None:
        args.format = "jsonl"
        meant = _FORMAT_OF_SUFFIX.get(Path(args.output).suffix.lower()) if not to_stdout else None
        if meant is not None:
            # (upstream's default stays: a file named .md still gets JSONL, said so)
            print(f"Note: writing JSONL (the default) to a {Path(args.output).suffix} file; "
                  f"--format {meant} writes {'Markdown' if meant == 'md' else 'HTML'}.", file=sys.stderr)
    if to_stdout and args.format == "md-dir":
        raise CliExit("Error: --format md-dir writes a directory: give its path, not -", 2)
    options = ExportOptions(lineage=args.lineage, only=args.only, redact=args.redact)
    if cli_profiles.across(args):
        return _export_across(args, to_stdout, options)
    with open_store("read") as db, _export_progress(to_stdout) as progress:
        # An empty --session-id is an error, never "every session" (CLI-17).
        session_ids = [resolve_id(db, args.session_id)] if args.session_id is not None else None
        if session_ids and [flag for flag in cli_filters.given(args) if flag != "--source"]:
            # (--source beside --session-id is ignored, as it always was: CLI-8)
            raise CliExit("Error: give --session-id or filters, not both.", code=2)
        source = None if session_ids else args.source
        warn_unknown_source(db, source)
        if session_ids and args.dry_run:
            # (what this export of one session writes: it, or with --lineage its whole chain --
            # the dry run once listed the whole store instead)
            return _dry_run_of_session(db, session_ids[0], args.lineage)
        chosen = None if session_ids else cli_filters.export_choice(db, args)
        if chosen is not None or args.dry_run:
            if chosen is None:  # (a dry run of a whole store or a source: what the list has)
                from hermes_state.listing.select import choose

                chosen = choose(db.lister, cli_filters.query_from_args(db, args))
            if args.dry_run:
                cli_filters.say(cli_filters.chosen_lines(chosen))
                n = sum(len(c.sessions) for c in chosen)
                cli_filters.say([f"Would export {counted(len(chosen), 'conversation')} "
                                 f"({counted(n, 'session')}); nothing was written."])
                return 0
            if not chosen:
                print("No conversation matches the filters; nothing was exported.", file=sys.stderr)
                return 0
            session_ids = [sid for c in chosen for sid in c.sessions]
            source = None
        if to_stdout:
            # Markdown on stdout is read on a terminal (or through a pipe that ends at one:
            # ``| head``): its controls are shown, never sent raw. Redirected to a file
            # (``> out.md``) it stays exact, as an export to a path does. JSONL is safe
            # and exact everywhere (hermes_state.export_batch.jsonl_line); HTML shows
            # every control as a visible character.
            count = export_to_stream(
                db, sys.stdout, args.format, source=source, session_ids=session_ids,
                visible_controls=not _is_regular_file(sys.stdout), options=options,
            )
        else:
            try:
                count = export_to_path(
                    db,
                    args.output,
                    args.format,
                    source=source,
                    session_ids=session_ids,
                    progress=progress,
                    options=options,
                )
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise CliExit(f"Error: cannot write {inert_line(args.output)}: {reason}") from exc
    if not to_stdout:
        print(f"Exported {counted(count, 'session')} to {inert_line(args.output)}")  # (a typed path may hold controls)
    return 0


def _export_across(args: argparse.Namespace, to_stdout: bool, options: Any = None) -> int:
    """``export --all-profiles`` (PF-4): every profile's sessions in one file, profile after
    profile, each session carrying ``"profile"`` (JSONL; a Markdown transcript says it).
    Import reads such a file back into one store (it ignores the field). A profile whose
    store cannot be read is named and left out, and the exit status is then 1: the export
    is not everything that was asked for."""
    from hermes_state.export import iter_export, render_chunks
    from hermes_state.export_mddir import write_md_dir
    from hermes_state.export_units import PLAIN, group_units
    from hermes_state.paths import write_atomic

    with cli_profiles.open_across(_open_profile_store, cli_profiles.warn) as (opened, left):
        wanted: dict[str, list[str] | None] = {item.profile.name: None for item in opened}
        if args.session_id is not None:
            wanted = _session_across(opened, args.session_id)
        else:
            _warn_unknown_source_across([item.store for item in opened], args.source)
        count = [0]

        def sessions():
            for item in opened:
                if item.profile.name not in wanted:
                    continue
                ids = wanted[item.profile.name]
                for obj in iter_export(item.store, None if ids else args.source, ids, options=options or PLAIN):
                    obj["profile"] = item.profile.name
                    count[0] += 1
                    yield obj

        if to_stdout:
            visible = args.format == "md" and not _is_regular_file(sys.stdout)
            for chunk in render_chunks(sessions(), args.format, visible_controls=visible):
                sys.stdout.write(chunk)
            sys.stdout.flush()
        else:
            with _export_progress(False):
                try:
                    if args.format == "md-dir":
                        write_md_dir(args.output, group_units(sessions()))
                    else:
                        write_atomic(args.output, render_chunks(sessions(), args.format))
                except OSError as exc:
                    reason = exc.strerror or str(exc)
                    raise CliExit(f"Error: cannot write {inert_line(args.output)}: {reason}") from exc
    if not to_stdout:
        names = len(wanted)
        print(f"Exported {counted(count[0], 'session')} of {counted(names, 'profile')} to {inert_line(args.output)}")
    return 1 if left else 0


def _session_across(opened: list, wanted: str) -> dict[str, list[str] | None]:
    """``--session-id`` across profiles: the one profile whose store has it (ids may
    collide across profiles: one found in several must be named with ``--profile``)."""
    if not wanted.strip():
        raise CliExit("Error: empty session id.", code=2)
    found = {}
    for item in opened:
        session_id = item.store.resolve_session_id(wanted)
        if session_id is not None:
            found[item.profile.name] = [session_id]
    if not found:
        raise CliExit(f"Session '{inert(wanted)}' not found in any profile.")
    if len(found) > 1:
        names = ", ".join(inert(name) for name in found)
        raise CliExit(f"Session '{inert(wanted)}' is in several profiles ({names}): say which with --profile NAME.")
    return found


# delete ----------------------------------------------------------------------


@session_action("delete")
def _add_delete(sub) -> None:
    parser = sub.add_parser("delete", help="delete a session and its messages (or every conversation the filters choose)")
    parser.add_argument("session_id", metavar="SESSION_ID", nargs="?", help="full id or unique prefix")
    cli_filters.add_action_options(parser)
    cli_filters.add_filter_options(parser)
    parser.set_defaults(run=_cmd_delete)


def _cmd_delete(args: argparse.Namespace) -> int:
    """Delete a session (and its delegate runs); it goes to the trash first, as a delete in
    the browser does, so ``hermes sessions restore`` can bring it back for a week."""
    from hermes_state.trash import TRASH_DAYS, default_trash_dir, delete_with_snapshot

    from .hints import restore_command

    if args.session_id is None or args.dry_run:
        if args.session_id is not None:
            raise CliExit("Error: --dry-run deletes by filter: give filters instead of a SESSION_ID.", code=2)
        return cli_filters.delete_by_filter(args, _KIT)
    if cli_filters.given(args):
        raise CliExit("Error: give a SESSION_ID or filters, not both.", code=2)
    with open_store("write") as db:
        session_id = resolve_id(db, args.session_id)
        if not args.yes:
            _say_what_else_a_delete_touches(db, session_id)
            if not confirm(f"Delete session '{inert(session_id)}' and all its messages? [y/N] "):
                raise _cancelled()
        outcome = delete_with_snapshot(
            lambda: db, session_id, sessions_dir=db.db_path.parent / "sessions", trash=default_trash_dir(),
            reraise=True,
        )
        if not outcome.ok:
            if db.get_session(session_id) is None:
                raise CliExit(f"Session '{inert(args.session_id)}' not found.")
            raise CliExit(f"Error: {inert(outcome.error or 'the session was not deleted')}")
    print(f"Deleted session '{inert(session_id)}'.")
    # (stdout says only what CLI-9 says; the way back goes to stderr)
    # (quoted for a shell: controls visible, and the shell still makes the id of it)
    # (naming the profile where one was named or is not the default: PF-7)
    profile = cli_profiles.named_in_commands(args)
    print(f"Kept {TRASH_DAYS} days in the trash: "
          f"{restore_command(session_id, profile.name if profile is not None else None)}", file=sys.stderr)
    return 0


def _say_what_else_a_delete_touches(db, session_id: str) -> None:
    """Before CLI-9's prompt (its words on stdout, unchanged), say on stderr what the prompt
    does not: the delegate (sub-agent) runs deleted with it (UC-5), the child sessions that
    stay as roots, and whether an agent may still be writing it."""
    from hermes_state.trash import preview_delete

    from . import cli_config

    config = cli_config.config()
    preview = preview_delete(db, session_id, now=time.time(), live_window_s=config.live_window_s)
    if preview is None:
        return  # (the delete reports it)
    if preview.delegates:
        n, m = len(preview.delegates), preview.delegate_messages
        print(f"Its {n} delegate (sub-agent) run{'s' if n != 1 else ''} ({m:,} message{'s' if m != 1 else ''}) "
              f"{'are' if n != 1 else 'is'} deleted with it.", file=sys.stderr)
    if preview.children:
        k = len(preview.children)
        print(f"{k} child session{'s' if k != 1 else ''} {'stay' if k != 1 else 'stays'}, "
              f"as {'roots' if k != 1 else 'a root'}.", file=sys.stderr)
    if preview.live:
        print("⚠ It looks live: an agent may still be writing to it.", file=sys.stderr)


#: ``archive``/``unarchive``/``pin``/``unpin`` (CLI-17): what they set, and their help.
_FLAG_COMMANDS = {
    "archive": ("archived", True, "archive sessions: hidden from the list (the whole compression lineage)"),
    "unarchive": ("archived", False, "bring archived sessions back to the list"),
    "pin": ("pinned", True, "pin sessions to the top of the list"),
    "unpin": ("pinned", False, "unpin sessions"),
}


def _flag_command(name: str) -> None:
    @session_action(name)
    def _add(sub) -> None:
        parser = sub.add_parser(name, help=_FLAG_COMMANDS[name][2])
        parser.add_argument("session_ids", metavar="SESSION_ID", nargs="*",
                            help="full id or unique prefix (or, instead, filters)")
        cli_filters.add_action_options(parser)
        cli_filters.add_filter_options(parser)
        if name == "pin":  # the pinned list is pin's (CLI-18: scripts read it with --json)
            parser.add_argument("--list", action="store_true", help="list the pinned sessions instead of pinning")
            parser.add_argument("--json", action="store_true",
                                help="with --list: one JSON document (see README, JSON output)")
        parser.set_defaults(run=lambda args: _cmd_flag(args, name))


for _name in _FLAG_COMMANDS:
    _flag_command(_name)


def _cmd_flag(args: argparse.Namespace, name: str) -> int:
    """Archive (UC-5: the whole compression lineage) or pin (``sessions.pinned`` where the
    store has it, else our settings file -- never a new column). Every id must resolve
    before anything changes."""
    flag, value, _help = _FLAG_COMMANDS[name]
    if name == "pin" and (args.list or args.json):
        from .cli_pins import pin_list_or_usage

        code = pin_list_or_usage(args, lambda: open_store("read"), _list_lines)
        if code is not None:
            return code
    if not args.session_ids:
        return cli_filters.flag_by_filter(args, name, _KIT)
    if cli_filters.given(args) or args.dry_run:
        raise CliExit("Error: give SESSION_IDs or filters, not both (--dry-run goes with filters).", code=2)
    with open_store("write") as db:
        ids = [resolve_id(db, arg) for arg in args.session_ids]
        problem = db.capabilities.archive_problem if flag == "archived" else None
        if problem:
            raise CliExit(f"Error: {problem}; nothing was changed.")
        for session_id in ids:
            if flag == "archived":
                db.set_session_archived(session_id, value)
            else:
                db.set_session_pinned(session_id, value)
            done = {"archive": "Archived", "unarchive": "Unarchived", "pin": "Pinned", "unpin": "Unpinned"}[name]
            print(f"{done} '{inert(session_id)}'.")
    return 0


@session_action("trash")
def _add_trash(sub) -> None:
    from .cli_trash import add_trash

    add_trash(sub)


@session_action("restore")
def _add_restore(sub) -> None:
    from .cli_trash import add_restore

    add_restore(sub)


@session_action("read")
def _add_read(sub) -> None:
    from .cli_unread import add_read

    add_read(sub, "read", sys.modules[__name__])


@session_action("unread")
def _add_unread(sub) -> None:
    from .cli_unread import add_read

    add_read(sub, "unread", sys.modules[__name__])


# rename ----------------------------------------------------------------------


@session_action("rename")
def _add_rename(sub) -> None:
    parser = sub.add_parser("rename", help="set or clear a session's title")
    parser.add_argument("session_id", metavar="SESSION_ID", help="full id or unique prefix")
    parser.add_argument("title", metavar="TITLE", nargs="+", help="the new title (no quotes needed)")
    parser.set_defaults(run=_cmd_rename)


def _cmd_rename(args: argparse.Namespace) -> int:
    title = " ".join(args.title)
    with open_store("write") as db:
        session_id = resolve_id(db, args.session_id)
        try:
            updated = db.set_session_title(session_id, title)
        except ValueError as exc:
            raise CliExit(f"Error: {inert(exc)}") from exc
        if not updated:
            raise CliExit(f"Session '{inert(args.session_id)}' not found.")
    stored = sanitize_title(title)
    if stored is None:
        print(f"Session '{inert(session_id)}' title cleared.")
    else:
        # TI-1 keeps C1 controls (e.g. U+009B, a CSI): show them inert, like every title.
        print(f"Session '{inert(session_id)}' renamed to: {inert(stored)}")
    return 0


# prune -----------------------------------------------------------------------


@session_action("prune")
def _add_prune(sub) -> None:
    parser = sub.add_parser("prune", help="delete ended sessions older than N days")
    parser.add_argument(
        "--older-than",
        type=_non_negative_int,
        default=None,
        metavar="DAYS",
        help="age in days, measured from the session start (default 90 without other filters; "
        "with them, the same as --until DAYSd)",
    )
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    parser.add_argument(
        "--dry-run", "-n", action="store_true", help="list what would be deleted; delete nothing"
    )
    cli_filters.add_filter_options(parser)
    parser.set_defaults(run=_cmd_prune)


def _cmd_prune(args: argparse.Namespace) -> int:
    if [flag for flag in cli_filters.given(args) if flag != "--source"]:
        return cli_filters.prune_by_filter(args, _KIT, args.older_than)
    days = 90 if args.older_than is None else args.older_than
    where = f" from '{inert(args.source)}'" if args.source else ""
    if args.dry_run:
        with open_store("read") as db:
            warn_unknown_source(db, args.source)
            rows = db.prunable_sessions(older_than_days=days, source=args.source)
        for sid, source, title in rows:
            shown = fit_cells(inert(title or UNTITLED_MARK), 40)
            print(f"  {inert(sid)}  {inert(source or '')}  {shown}")
        print(f"Would prune {counted(len(rows), 'session')} ended and older than {days} days{where}; "
              "nothing was deleted.")
        return 0
    with open_store("write") as db:
        warn_unknown_source(db, args.source)
        # Say how many before asking, so the answer is informed; the count is taken again by
        # the delete itself.
        count, messages = db.prunable_totals(older_than_days=days, source=args.source)
        if count == 0 and not args.yes:
            print(f"No ended sessions older than {days} days{where}.")
            return 0
        _say_what_a_prune_holds(db, count, messages)
        noun = "session" if count == 1 else "sessions"
        prompt = f"Delete {count} ended {noun} older than {days} days{where}? [y/N] "
        if not args.yes and not confirm(prompt):
            raise _cancelled()
        pruned = db.prune_sessions(
            older_than_days=days, source=args.source, sessions_dir=db.db_path.parent / "sessions"
        )
    print(f"Pruned {pruned} session(s).")
    return 0


#: Messages past which a prune, one transaction (EX-5), may hold the write lock longer than a
#: writer waits for it: each deleted message is taken out of two full-text indexes by their
#: triggers (~12,000 messages a second measured on the bench box: 100,000 take ~8 s), and
#: upstream's SessionDB gives a write up after ~16 s (15 tries, each waiting up to 1 s).
PRUNE_LOCK_WARN_MESSAGES = 100_000


def _say_what_a_prune_holds(db, sessions: int, messages: int) -> None:
    """Before CLI-11's prompt (unchanged on stdout), on stderr: a large prune while an agent
    or a gateway is writing to the store makes their writes wait for the whole of it, and
    theirs fail (messages not kept) when it takes longer than they wait."""
    if messages < PRUNE_LOCK_WARN_MESSAGES:
        return
    from . import cli_config

    config = cli_config.config()
    last = db.last_write_at()
    now = time.time()
    if last is None or now - last > config.live_window_s:
        return
    print(
        f"⚠ This store was written {relative_time(last, now=now)}: an agent or a gateway may be "
        f"writing to it. Pruning {sessions:,} sessions ({messages:,} messages) is one transaction; "
        "writers wait until it is done, and Hermes gives a write up after about 16 s. Stop them "
        "first, or prune in steps (a larger --older-than first).",
        file=sys.stderr,
    )


# stats -----------------------------------------------------------------------


@session_action("stats")
def _add_stats(sub) -> None:
    from .cli_stats import add_stats

    add_stats(sub, _cmd_stats)


def _cmd_stats(args: argparse.Namespace) -> int:
    from .cli_stats import run_stats

    if cli_profiles.across(args):
        return _stats_across()
    with open_store("read") as db:
        return run_stats(db, args)


def format_stats(stats: dict) -> list[str]:
    """CLI-12's opening lines for figures added up over several stores (``--all-profiles``)."""
    lines = [
        f"Total sessions: {stats['total_sessions']}",
        f"Total messages: {stats['total_messages']}",
    ]
    sources: dict[str, int] = stats.get("sources") or {}
    # Most sessions first, then alphabetical.
    for name in sorted((k for k, n in sources.items() if n > 0), key=lambda k: (-sources[k], k)):
        lines.append(f"  {inert(name)}: {counted(sources[name], 'session')}")
    size = stats.get("db_size_bytes")
    if size is not None:
        lines.append(f"Database size: {size / 1048576:.1f} MB")
    return lines


def _stats_across() -> int:
    """``stats --all-profiles`` (PF-2): the figures of every profile's store added up, then
    each profile's own."""
    with cli_profiles.open_across(_open_profile_store, cli_profiles.warn) as (opened, _left):
        each = [(item.profile.name, item.store.stats()) for item in opened]
    sources: dict[str, int] = {}
    for _name, stats in each:
        for source, n in (stats.get("sources") or {}).items():
            sources[source] = sources.get(source, 0) + n
    sizes = [stats.get("db_size_bytes") for _name, stats in each]
    total = {
        "total_sessions": sum(stats["total_sessions"] for _name, stats in each),
        "total_messages": sum(stats["total_messages"] for _name, stats in each),
        "sources": sources,
        "db_size_bytes": sum(size for size in sizes if size is not None) if any(s is not None for s in sizes) else None,
    }
    lines = format_stats(total)
    lines.append(f"Profiles: {len(each)}")
    for name, stats in each:
        size = stats.get("db_size_bytes")
        tail = f", {size / 1048576:.1f} MB" if size is not None else ""
        lines.append(f"  {inert(name)}: {counted(stats['total_sessions'], 'session')}, "
                     f"{stats['total_messages']} messages{tail}")
    print("\n".join(lines))
    return 0


# import (project feature) ----------------------------------------------------


# simulate / generate -------------------------------------------------------------


@session_action("simulate")
def _add_simulate(sub) -> None:
    parser = sub.add_parser(
        "simulate",
        help="write realistic sessions like a gateway and CLI would (test and demo workload)",
        add_help=False,
    )
    parser.add_argument("args", nargs=argparse.REMAINDER)
    parser.set_defaults(run=_cmd_simulate)


def _cmd_simulate(args: argparse.Namespace) -> int:
    from .cli_workload import simulate_main

    return _run_sub(simulate_main, args.args, f"{getattr(args, 'prog', SESSIONS_PROG)} simulate")


@session_action("generate")
def _add_generate(sub) -> None:
    parser = sub.add_parser(
        "generate",
        help="build a deterministic benchmark corpus (10k / 100k / 1m messages)",
        add_help=False,
    )
    parser.add_argument("args", nargs=argparse.REMAINDER)
    parser.set_defaults(run=_cmd_generate)


def _cmd_generate(args: argparse.Namespace) -> int:
    from .cli_workload import generate_main

    return _run_sub(generate_main, args.args, f"{getattr(args, 'prog', SESSIONS_PROG)} generate")


_OWN_PARSERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "simulate": _cmd_simulate,
    "generate": _cmd_generate,
}


def _run_sub(entry: Callable[..., int], argv: list[str], prog: str) -> int:
    """Run a project command that parses its own arguments (usage errors exit 2)."""
    try:
        return int(entry(argv, prog=prog))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)


@session_action("import")
def _add_import(sub) -> None:
    parser = sub.add_parser(
        "import", help="import sessions from a JSONL export, or Claude Code / Codex transcripts (--from)")
    parser.add_argument("input", metavar="INPUT", nargs="?",
                        help="JSONL file written by export, or - for stdin; with --from: a transcript file or "
                             "directory (default ~/.claude/projects or ~/.codex/sessions)")
    parser.add_argument("--from", dest="from_format", choices=("claude-code", "codex"),
                        help="read another agent's transcripts (sessions tagged with this source)")
    parser.set_defaults(run=_cmd_import)


def _cmd_import(args: argparse.Namespace) -> int:
    from hermes_state.export import import_jsonl

    if args.from_format:
        from .cli_import import run_foreign_import

        return run_foreign_import(args, _create_store_for_import, open_store)
    if args.input is None:
        args._help_parser.print_usage(sys.stderr)
        raise CliExit(f"{args._help_parser.prog}: error: the following arguments are required: INPUT", code=2)
    if args.input == "-":
        source: Any = sys.stdin
    else:
        source = Path(args.input)
        if not source.is_file():
            raise CliExit(f"Error: cannot read {inert(args.input)}: no such file")
    _create_store_for_import()
    with open_store("write") as db:
        try:
            report = import_jsonl(db, source)
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise CliExit(f"Error: cannot read {inert(args.input)}: {reason}") from exc
    print(report.summary())
    # What was not imported as it was: warnings, so on stderr.
    for session_id, title, owner in report.title_collisions:
        print(f"  title '{inert(title)}' of {inert(session_id)} is in use by {inert(owner)}; imported untitled",
              file=sys.stderr)
    for session_id, parent in report.missing_parents:
        print(f"  parent {inert(parent)} of {inert(session_id)} is missing; imported as a root", file=sys.stderr)
    for line, reason in report.errors:
        print(f"  line {line}: {inert(reason)}", file=sys.stderr)
    return 0 if report.ok else 1


def _create_store_for_import() -> None:
    """Import is how history moves to a new machine (export there, import here): a
    ``HERMES_HOME`` with no ``state.db`` yet gets one, created as Hermes Agent creates it
    (every other action only opens an existing store)."""
    path = db_location()
    if path.exists() or path.is_symlink():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        SessionDB(path).close()
    except (OSError, sqlite3.Error, DatabaseError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise _open_error(f"cannot create {path}: {reason}") from exc


# What the commands by filter (cli_filters) use of this module, handed to them: they do not
# import it.
_KIT = argparse.Namespace(
    open_store=lambda access: open_store(access), confirm=lambda prompt: confirm(prompt), cancelled=_cancelled,
    warn_unknown_source=lambda db, source: warn_unknown_source(db, source),
)


# ---------------------------------------------------------------------------- parser and main


#: The actions that also read every profile's store at once (``--all-profiles``, PF-2).
ACROSS_PROFILES = ("list", "search", "browse", "export", "stats")

#: What ``--profile`` means to the actions on the trash, which is one for every profile (PF-7).
PROFILE_HELP = {
    "trash": "only the sessions deleted from this Hermes profile's store (default: every profile's)",
    "restore": "the Hermes profile it was deleted from, for an id deleted from several (default: "
    "the one it was deleted from); for an entry of a store that is no profile's here, the "
    "profile to restore it into",
}

#: The two names our commands run under: ``hermes sessions`` (through the ``hermes`` that
#: hands other commands to Hermes Agent) and ``hermes-sessions`` (a name nothing else installs).
SESSIONS_PROG = "hermes sessions"
STANDALONE_PROG = "hermes-sessions"


class _VersionAction(argparse.Action):
    """``--version``: the installed package's version, read only when asked (importing
    ``importlib.metadata`` for every command would slow each one down)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option_string: Any = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("hermes-sessions")
        except PackageNotFoundError:
            found = "unknown (run from a checkout that is not installed)"
        print(f"hermes-sessions {found}")
        parser.exit(0)


def build_parser(sessions_prog: str = SESSIONS_PROG) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hermes", description="Browse, search and manage Hermes Agent sessions."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    sessions = commands.add_parser(
        "sessions",
        prog=sessions_prog,
        help="manage stored sessions",
        description="Manage the sessions stored in $HERMES_HOME/state.db.",
    )
    sessions.set_defaults(_help_parser=sessions)
    sessions.add_argument("--version", action=_VersionAction, help="print this program's version and exit")
    actions = sessions.add_subparsers(dest="action", metavar="ACTION")
    for adder in SESSION_ACTIONS.values():
        adder(actions)
    for name, action_parser in actions.choices.items():
        # Usage errors of an action name the action ("usage: hermes sessions list …").
        action_parser.set_defaults(_help_parser=action_parser)
        if name not in _OWN_PARSERS:
            cli_profiles.add_profile_options(action_parser, across_too=name in ACROSS_PROFILES,
                                             help=PROFILE_HELP.get(name))
    parser.set_defaults(_help_parser=parser)
    return parser


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the exit flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    except Exception:  # io.UnsupportedOperation on captured streams
        pass


def _emit(message: str | None) -> None:
    """An error of the run: on stderr, whatever the command (stdout is for its output), and
    inert (it may quote a path or an argument)."""
    if message is None:
        return
    print(inert(message), file=sys.stderr)


def _quiet_library_log() -> None:
    """What the storage library logs for a program that does not configure logging (a store
    newer than it knows, UC-9) reached stderr through Python's last-resort handler, beside
    the ``Warning:`` line this command prints from the store's warnings: two lines for one
    thing, and across profiles (PF-3) a line not naming its profile. The command says it."""
    import logging

    library = logging.getLogger("hermes_state")
    if not library.handlers:
        library.addHandler(logging.NullHandler())


def _start_run() -> None:
    """A run reads config.yaml at most once and says its problems once (``main`` may be
    called again in one process)."""
    module = sys.modules.get(__package__ + ".cli_config")
    if module is not None:  # (not imported: nothing read yet, and importing it costs)
        module.start_run()


def sessions_main(argv: list[str] | None = None) -> int:
    """The ``hermes-sessions`` console script: ``hermes-sessions list`` is ``hermes sessions
    list``, under a name that no other program installs."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return main(["sessions", *argv], _sessions_prog=STANDALONE_PROG)


def main(argv: list[str] | None = None, *, _sessions_prog: str = SESSIONS_PROG) -> int:
    """Run ``hermes`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _quiet_library_log()
    _start_run()
    if len(argv) >= 2 and argv[0] == "sessions" and argv[1] in _OWN_PARSERS:
        # These commands parse their own options (argparse's REMAINDER cannot take a
        # leading ``--option`` through a subparser).
        try:
            return _OWN_PARSERS[argv[1]](argparse.Namespace(args=argv[2:], prog=_sessions_prog))
        except KeyboardInterrupt:
            print("\nInterrupted.", file=sys.stderr)
            return 130
    parser = build_parser(_sessions_prog)
    try:
        args, extras = parser.parse_known_args(argv)
        if extras and getattr(args, "action", None) == "search" and not any(e.startswith("-") for e in extras):
            args.query += extras  # (words typed after an option are words of the query, in order)
            extras = []
        if extras:
            getattr(args, "_help_parser", parser).error(
                f"unrecognized arguments: {' '.join(extras)}"
            )
    except SystemExit as exc:  # usage error (2) or --help (0)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    run = getattr(args, "run", None)
    if run is None:  # CLI-14: no action given (a usage error: its help goes to stderr)
        args._help_parser.print_help(sys.stderr)
        return 2
    global _run_home
    try:
        # Which profile's store (PF-1): found before anything opens, for every action.
        _run_home = None if cli_profiles.across(args) else cli_profiles.home_of(args)
        args.store_path = _run_home / "state.db" if _run_home is not None else None
    except cli_profiles.ProfileError as exc:
        if getattr(args, "profile", None) is not None or not getattr(args, "runs_without_profile", False):
            _emit(f"Error: {exc}")
            return 1
        # The trash is one per user and each entry records its store (PF-7): a sticky
        # profile that is gone names no store `trash` and `restore` need. The run has none.
        _run_home = None
        args.store_path = None
        args.no_run_profile = str(exc)
    try:
        code = run(args)
        sys.stdout.flush()
        return code
    except (CliExit, FilterError) as exc:
        _emit(exc.message)
        return exc.code
    except cli_profiles.NoProfileStore as exc:
        _emit(f"Error: {exc}")
        return 1
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except KeyboardInterrupt:
        print("\nInterrupted.", file=sys.stderr)
        return 130
    except DatabaseError as exc:
        _emit(f"Error: {exc}")
        return 1
    except sqlite3.Error as exc:
        try:
            path = db_location()
        except CliExit:
            path = hermes_home() / "state.db"
        _emit(f"Error: {describe_db_error(exc, path)}")
        return 1
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        _emit(f"Error: {exc.strerror or exc}{where}")
        return 1
    except Exception as exc:  # last resort: one line, never a traceback
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        _emit(f"Error: unexpected {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
