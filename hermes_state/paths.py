"""Where Hermes keeps its files (SPEC CO-5, CO-6).

Everything here is computed on call, never at import: a test or a CLI run that sets
``HERMES_HOME`` after import must get the right file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable


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


def write_atomic(path: "str | os.PathLike[str]", chunks: Iterable[str | bytes], mode: int = 0o600) -> int:
    """Write ``chunks`` to ``path`` atomically; return the number of bytes written.

    The one way this project replaces a file (exports, the gateway index, undo's files).
    The data goes to a temporary file created in the destination directory (so the final
    ``os.replace`` is a rename within one file system), is flushed and fsynced, gets ``mode``
    (owner-only by default: transcripts are private), and only then replaces ``path``. On any
    error -- including one raised by the ``chunks`` iterator half-way, or KeyboardInterrupt --
    the temporary file is removed and ``path`` is left as it was. ``str`` chunks are encoded as
    UTF-8.
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    written = 0
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                data = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
                handle.write(data)
                written += len(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        raise
    fsync_directory(directory)
    return written


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
