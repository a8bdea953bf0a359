"""Where Hermes keeps its files (SPEC CO-5, CO-6).

Everything here is computed on call, never at import: a test or a CLI run that sets
``HERMES_HOME`` after import must get the right file.
"""

from __future__ import annotations

import os
from pathlib import Path


def hermes_home() -> Path:
    """``$HERMES_HOME`` stripped of surrounding whitespace, else ``~/.hermes``.

    No ``~`` expansion is applied to the variable (upstream does not either).
    """
    value = os.environ.get("HERMES_HOME", "").strip()
    if value:
        return Path(value)
    return Path.home() / ".hermes"


def default_db_path() -> Path:
    """``<home>/state.db``."""
    return hermes_home() / "state.db"


def sessions_dir(home: Path | None = None) -> Path:
    """Gateway transcripts and the gateway index live in ``<home>/sessions/``."""
    return (home if home is not None else hermes_home()) / "sessions"


def fsync_directory(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (best effort: not every platform can)."""
    try:
        dir_fd = os.open(str(directory), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
