"""``config.yaml`` for the command line: read at most once a run, its problems said once.

The browser shows the file's problems in its status line; a command that reads the file on
the command line (``delete``'s live note, a large ``prune`` or ``restore``, the plain picker
of ``browse``) says them on stderr, each on one ``Warning:`` line, once however many times
the run reads a setting. stdout is untouched: scripts parse it (and ``--json`` documents).
Only commands that use a setting read the file: the others neither pay for reading it nor
speak of a file they do not use.
"""

from __future__ import annotations

import sys

from .config import AppConfig, load_config
from .textsafe import inert_line

#: The run's config and its problems, once read; whether the problems were said.
_read: tuple[AppConfig, list[str]] | None = None
_said = False


def start_run() -> None:
    """Forget what an earlier run in this process read (``main`` called again, as tests do)."""
    global _read, _said
    _read, _said = None, False


def read() -> tuple[AppConfig, list[str]]:
    """The config and its problems, read once a run; the problems not said (for the browser,
    which shows them itself)."""
    global _read
    if _read is None:
        _read = load_config()
    return _read


def say_problems() -> None:
    """The file's problems on stderr, once a run."""
    global _said
    if _said:
        return
    _said = True
    for problem in read()[1]:
        print(f"Warning: {inert_line(problem)}", file=sys.stderr)


def config() -> AppConfig:
    """The run's config, its problems said on stderr (once)."""
    say_problems()
    return read()[0]
