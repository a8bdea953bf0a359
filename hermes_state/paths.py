"""Where Hermes keeps its files (SPEC CO-5, CO-6).

Everything here is computed on call, never at import: a test or a CLI run that sets
``HERMES_HOME`` after import must get the right file.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import tempfile
import threading
import time
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


def same_path(a: str | Path | None, b: str | Path | None) -> bool:
    """``a`` and ``b`` name the same file: as written, or once both are resolved (a symlinked
    or relative path). An empty or missing path, or one that cannot be resolved, is no match."""
    if not a or not b:
        return False
    if str(a) == str(b):
        return True
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError, ValueError):
        return False


def default_db_path() -> Path:
    """``<home>/state.db``."""
    return hermes_home() / "state.db"


def sessions_dir(home: Path | None = None) -> Path:
    """Gateway transcripts and the gateway index live in ``<home>/sessions/``."""
    return (home if home is not None else hermes_home()) / "sessions"


#: Temp files of :func:`write_atomic`: ``.<name>.<pid>.<random>.tmp`` beside the target.
_TEMP_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp$")
#: Temp files older builds left (no pid in the name), swept once they are this old.
_LEGACY_TEMP_AGE_S = 24 * 3600


def write_atomic(
    path: "str | os.PathLike[str]", chunks: Iterable[str | bytes], mode: int = 0o600, *, sync: bool = True
) -> int:
    """Write ``chunks`` to ``path`` atomically; return the number of bytes written.

    The one way this project replaces a file (exports, the gateway index, undo's files).
    The data goes to a file in the destination directory (so the final ``os.replace`` is a
    rename within one file system), is flushed and fsynced, gets ``mode`` (owner-only by
    default: transcripts are private), and only then replaces ``path``. On any error --
    including one raised by the ``chunks`` iterator half-way, or KeyboardInterrupt -- nothing
    is left behind and ``path`` is as it was. ``str`` chunks are encoded as UTF-8. ``sync=False``
skips the fsyncs, for a cache that can be made again (a crash may then leave it empty).

    A kill cannot leave a temp file behind either: where the file system allows, the data is
    written to an unnamed file (``O_TMPFILE``) that gets a name only once it is complete;
    elsewhere the temp name carries our pid, and the next write to that directory removes
    temp files whose process is gone (:func:`sweep_stale_temps`).
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    sweep_stale_temps(directory, target.name)
    fd = _unnamed_file(directory)
    named: str | None = None
    written = 0
    try:
        if fd is None:
            fd, named = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as handle:
            fd_number = handle.fileno()
            flusher = _Flusher(handle) if sync else None
            try:
                for chunk in chunks:
                    data = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
                    handle.write(data)
                    written += len(data)
                    if flusher is not None and written >= flusher.due:
                        flusher.start_one(written)
            except BaseException:
                if flusher is not None:
                    flusher.wait()
                raise
            if flusher is not None:
                flusher.finish()
            handle.flush()
            if sync:
                os.fsync(fd_number)
            os.fchmod(fd_number, mode)
            if named is None:
                named = _temp_name(directory, target.name)
                _link_unnamed(fd_number, named)
        os.replace(named, target)
    except BaseException:
        if named is not None:
            try:
                os.unlink(named)
            except OSError:
                pass
        raise
    if sync:
        fsync_directory(directory)
    return written


class _Flusher:
    """Sends a large file's data to the disk while it is still being written.

    Linux keeps written data in memory for up to 30 s before writing it back, so the final
    ``fsync`` of a large export wrote it all at once while nothing else ran (1.4 s of a 20 s
    export of 1M messages: 879 MB). Every :data:`FLUSH_EVERY` bytes a thread asks for the data
    written so far (``fdatasync``: the thread waits for the disk, the writer goes on), so the
    final ``fsync`` has only the tail to write. A write error it meets is raised by
    :meth:`finish`: the kernel reports such an error once per open file, so the final
    ``fsync`` might not see it again."""

    #: Bytes written between two background flushes.
    FLUSH_EVERY = 64 * 1024 * 1024

    def __init__(self, handle) -> None:
        self.handle = handle
        self.due = self.FLUSH_EVERY
        self.thread: threading.Thread | None = None
        self.error: OSError | None = None

    def start_one(self, written: int) -> None:
        """Flush what is written so far in the background, unless a flush is still running;
        raise the error the last one met (no use writing on to a disk that failed)."""
        if self.thread is not None and self.thread.is_alive():
            return
        if self.error is not None:
            raise self.error
        self.due = written + self.FLUSH_EVERY
        self.handle.flush()  # (what the buffer holds goes to the file first)
        fd = self.handle.fileno()
        self.thread = threading.Thread(target=self._flush, args=(fd,), name="write-atomic-flush", daemon=True)
        self.thread.start()

    def _flush(self, fd: int) -> None:
        try:
            getattr(os, "fdatasync", os.fsync)(fd)  # (no fdatasync on macOS)
        except OSError as exc:
            self.error = exc

    def wait(self) -> None:
        """Wait for the flush under way: the file is closed after this."""
        if self.thread is not None:
            self.thread.join()

    def finish(self) -> None:
        """:meth:`wait`, then raise the error a flush met."""
        self.wait()
        if self.error is not None:
            raise self.error


def _temp_name(directory: Path, name: str) -> str:
    return str(directory / f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def _unnamed_file(directory: Path) -> int | None:
    """An unnamed file in ``directory`` (``O_TMPFILE``), or None where that is unsupported."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or _linkat() is None:
        return None
    try:
        return os.open(directory, flag | os.O_WRONLY, 0o600)
    except OSError:
        return None  # EOPNOTSUPP / EISDIR / EINVAL: this file system cannot


def _linkat():
    """libc's ``linkat`` (``os.link`` cannot give an ``O_TMPFILE`` file a name everywhere)."""
    global _LINKAT
    if _LINKAT is False:
        import ctypes.util  # (on the first write, not with every import of the store: ~4 ms)

        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
            _LINKAT = libc.linkat
        except (OSError, AttributeError, TypeError):
            _LINKAT = None
    return _LINKAT


_LINKAT = False
_AT_FDCWD = -100
_AT_SYMLINK_FOLLOW = 0x400


def _link_unnamed(fd: int, name: str) -> None:
    """Give the unnamed file ``fd`` the name ``name`` (linkat through /proc/self/fd)."""
    linkat = _linkat()
    source = f"/proc/self/fd/{fd}".encode()
    if linkat(_AT_FDCWD, source, _AT_FDCWD, os.fsencode(name), _AT_SYMLINK_FOLLOW) != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), name)


def sweep_stale_temps(directory: Path, name: str) -> list[Path]:
    """Remove temp files of writes to ``directory/name`` whose writer is gone; return them.

    Ours carry the writer's pid; a temp file of a living process (another export right now)
    is left alone. Unnamed (``O_TMPFILE``) temp files never need this: the kernel drops them.
    """
    removed: list[Path] = []
    try:
        candidates = [entry for entry in os.scandir(directory) if entry.name.startswith(f".{name}.")]
    except OSError:
        return removed
    now = time.time()
    for entry in candidates:
        if not entry.name.endswith(".tmp"):
            continue
        match = _TEMP_RE.match(entry.name)
        try:
            if match and match.group("name") == name:
                if process_alive(int(match.group("pid"))):
                    continue
            elif now - entry.stat(follow_symlinks=False).st_mtime < _LEGACY_TEMP_AGE_S:
                continue
            if not entry.is_file(follow_symlinks=False):
                continue
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` may still be running (the writer of a temporary file or
    directory): a process we cannot ask about is taken as alive -- not ours to remove."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: not ours to judge
    except OSError:
        return True
    return True


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


#: Overrides where this program keeps its own data (trash, pins): tests, or a person who
#: wants it elsewhere.
DATA_DIR_ENV = "HERMES_SESSIONS_DATA_DIR"


#: Overrides where this program keeps what it can compute again (the recency index).
CACHE_DIR_ENV = "HERMES_SESSIONS_CACHE_DIR"


def cache_dir() -> Path:
    """This program's cache directory (``$HERMES_SESSIONS_CACHE_DIR``, else the user cache
    directory of the platform): files that only save time and may be deleted at any moment."""
    override = os.environ.get(CACHE_DIR_ENV, "").strip()
    if override:
        return Path(override)
    return _platform_dir("cache", *_platform_env("XDG_CACHE_HOME"))


def data_dir() -> Path:
    """This program's own data directory (``$HERMES_SESSIONS_DATA_DIR``, else the user data
    directory of the platform). Resolved on call, like the rest of this module."""
    override = os.environ.get(DATA_DIR_ENV, "").strip()
    if override:
        return Path(override)
    return _platform_dir("data", *_platform_env("XDG_DATA_HOME"))


def _platform_env(xdg: str) -> tuple[str, ...]:
    """What platformdirs' answer depends on, here and on Windows (the cache's key)."""
    get = os.environ.get
    return (get(xdg, ""), get("HOME", ""), get("APPDATA", ""), get("LOCALAPPDATA", ""))


@functools.lru_cache(maxsize=16)
def _platform_dir(kind: str, *_environment: str) -> Path:
    """The platform's directory of that kind, asked once per environment it depends on (the
    arguments after ``kind`` are only the cache's key): platformdirs' answer cost a
    millisecond a keystroke when the list's pins were looked up on every search."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("hermes-sessions") if kind == "cache"
                else platformdirs.user_data_dir("hermes-sessions"))


def default_trash_dir() -> Path:
    """``<user data dir>/trash`` (``$HERMES_SESSIONS_DATA_DIR/trash`` when that is set): where
    deleted sessions are kept for undo (:mod:`hermes_state.trash`)."""
    return data_dir() / "trash"


# ---------------------------------------------------------------------- files beside the store


class SideFileError(OSError):
    """One of our own small files (settings, pins, caches) cannot be used as it is.

    The message is one line naming the file and what is wrong with it; the file is left as it
    is. It is an ``OSError`` so every caller that already survives an unreadable file survives
    this one too."""


#: Our small files hold settings, pins and caches: kilobytes. Anything far larger is not ours
#: to read into memory (a ``/dev/zero`` there once ended in MemoryError).
SIDE_FILE_LIMIT = 64 * 1024 * 1024


def file_signature(path: "str | os.PathLike[str]") -> tuple[int, int, int, int] | None:
    """What changes when a file is replaced or rewritten (inode, device, size, mtime), or None
    when there is no file: a cheap way to notice another process's edit."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)


def read_side_file(path: "str | os.PathLike[str]", limit: int = SIDE_FILE_LIMIT) -> bytes:
    """The bytes of one of our small files, read without ever blocking or exhausting memory.

    A FIFO at the path once hung ``list`` and the browser (which then ignored q and ctrl+c);
    ``/dev/zero`` ended in MemoryError. The file is opened non-blocking and must be a regular
    file no larger than ``limit``; otherwise :class:`SideFileError`. A missing file raises
    ``FileNotFoundError`` as ``open`` does. Symlinks are followed (a dotfiles setup links them).
    """
    import stat as stat_module

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat_module.S_ISREG(st.st_mode):
            kind = (
                "a FIFO" if stat_module.S_ISFIFO(st.st_mode)
                else "a device" if stat_module.S_ISCHR(st.st_mode) or stat_module.S_ISBLK(st.st_mode)
                else "a socket" if stat_module.S_ISSOCK(st.st_mode)
                else "a directory" if stat_module.S_ISDIR(st.st_mode)
                else "not a regular file"
            )
            raise SideFileError(f"{path} is {kind}, not a regular file; it was left as it is")
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise SideFileError(
                    f"{path} is larger than {limit // (1024 * 1024)} MB, too large to be ours; "
                    "it was left as it is"
                )
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def replace_side_file(path: "str | os.PathLike[str]", text: str, mode: int | None = None) -> None:
    """Replace one of our small files atomically, writing through a symlink to its target.

    Changing the theme replaced a symlinked ``config.yaml`` (a dotfiles setup) with a regular
    0644 file: the link is kept and its target rewritten. The file keeps its own mode when it
    has one; ``mode`` is for a new file. A path that is not a regular file (a FIFO, a device)
    is refused with :class:`SideFileError`, untouched."""
    import stat as stat_module

    target = Path(path)
    try:
        target = target.resolve(strict=True)
        st = os.stat(target)
    except FileNotFoundError:
        st = None
        if Path(path).is_symlink():  # a dangling link: write where it points
            target = Path(os.path.realpath(path))
    if st is not None and not stat_module.S_ISREG(st.st_mode):
        raise SideFileError(f"{path} is not a regular file; it was left as it is")
    keep = stat_module.S_IMODE(st.st_mode) if st is not None else (0o600 if mode is None else mode)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, [text], mode=keep)
