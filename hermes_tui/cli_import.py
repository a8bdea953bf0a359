"""``hermes sessions import --from claude-code|codex [PATH]``: other agents' transcripts.

stdout says what was imported, in one line; stderr carries the rest, each once: the lines
that could not be read (counted, and named ``file:line: reason``), sessions the store
refused, titles already in use. A malformed line is never fatal; the exit status is 1 only
when a session could not be written (or PATH cannot be read at all).
"""

from __future__ import annotations

import argparse
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable

from hermes_state.importers import FORMATS, Outcome, default_root, import_transcripts
from hermes_state.inert_text import inert_cells

from .progress import progress_bar
from .wording import counted

#: Unreadable lines named one by one in the summary; past this, only counted.
NAMED_PROBLEMS = 50


def summary_line(outcome: Outcome, label: str) -> str:
    line = (f"Imported {counted(len(outcome.imported), 'session')} "
            f"({counted(outcome.messages, 'message')}) from {label}")
    if outcome.continued:
        added = sum(n for _sid, n in outcome.continued)
        line += f"; {len(outcome.continued):,} continued (+{counted(added, 'message')})"
    if outcome.already_present:
        line += f"; {len(outcome.already_present):,} already present"
    return line + "."


def report_problems(outcome: Outcome, root: Path, label: str) -> None:
    err = sys.stderr
    if outcome.files == 0:
        print(f"No {label} transcripts (*.jsonl) under {inert_cells(root)}.", file=err)
    elif outcome.empty_files == outcome.files and not (outcome.imported or outcome.already_present):
        # (every file read, none in this format: say so, rather than a bare "Imported 0")
        files = counted(outcome.files, "file")
        print(f"Nothing in the {files} read looked like a {label} conversation (no user or "
              f"assistant message in its format). An export of this program is imported without "
              f"--from: hermes sessions import FILE.", file=err)
    if outcome.problems:
        n = len(outcome.problems)
        print(f"Skipped {counted(n, 'line')} that could not be read:", file=err)
        for problem in outcome.problems[:NAMED_PROBLEMS]:
            print(f"  {inert_cells(problem)}", file=err)
        if n > NAMED_PROBLEMS:
            print(f"  … and {n - NAMED_PROBLEMS:,} more", file=err)
    for path, reason in outcome.rejected:
        print(f"Not imported: {inert_cells(path)}: {inert_cells(reason)}", file=err)
    for session_id, title, owner in outcome.title_collisions:
        print(f"  title '{inert_cells(title)}' of {inert_cells(session_id)} is in use by "
              f"{inert_cells(owner)}; imported untitled", file=err)


def run_foreign_import(
    args: argparse.Namespace,
    create_store: Callable[[], None],
    opener: Callable[[str], AbstractContextManager],
) -> int:
    fmt = args.from_format
    label = FORMATS[fmt][1]
    root = Path(args.input).expanduser() if args.input else default_root(fmt)
    if not root.exists():
        print(f"Error: cannot read {inert_cells(root)}: no such file or directory", file=sys.stderr)
        return 1
    create_store()
    with opener("write") as db, progress_bar("importing", "files", transient=True, terminal_only=True) as update:
        outcome = import_transcripts(db.store, fmt, root, progress=update)
    print(summary_line(outcome, label))
    report_problems(outcome, root, label)
    return 1 if outcome.rejected else 0
