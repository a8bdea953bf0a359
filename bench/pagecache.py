"""The operating system's page cache for a database's files: drop it, and check that it is gone.

A cold start of the browser has to read the database from the disk, not from memory that an
earlier run left warm. ``drop(path)`` asks the kernel to forget the cached pages of ``path``,
``path-wal`` and ``path-shm`` (``posix_fadvise(POSIX_FADV_DONTNEED)`` after an ``fsync``, so no
dirty page is kept back); ``resident(path)`` says which share of a file is in memory right now
(``mincore`` on a read-only mapping), so a run can prove the drop worked instead of assuming
it. Both affect every process reading those files: the pages come back on the next read.

Linux only (``posix_fadvise`` and ``mincore``); elsewhere :func:`drop` raises ``OSError``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_LOW_BIT = bytes(b & 1 for b in range(256))


def database_files(path: Path | str) -> list[Path]:
    """The database and its ``-wal`` / ``-shm`` companions that exist."""
    base = Path(path)
    return [p for p in (base, Path(f"{base}-wal"), Path(f"{base}-shm")) if p.exists()]


def drop(path: Path | str) -> dict[str, float]:
    """Drop the cached pages of the database at ``path`` (and its WAL and shared memory).

    Returns the share of each file still resident afterwards (0.0 means fully dropped).
    """
    if not hasattr(os, "posix_fadvise"):
        raise OSError("posix_fadvise is not available on this system")
    left: dict[str, float] = {}
    for file in database_files(path):
        fd = os.open(file, os.O_RDONLY)
        try:
            try:
                os.fsync(fd)  # dirty pages cannot be dropped; write them first
            except OSError:
                pass
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        left[file.name] = resident(file)
    return left


def _libc():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
    libc.mmap.restype = ctypes.c_void_p
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte))
    return libc


def resident(path: Path | str) -> float:
    """Share (0..1) of ``path``'s pages in the page cache now; 0.0 for an empty file.

    Maps the file read-only without touching it (mapping reads nothing) and asks ``mincore``.
    """
    size = os.path.getsize(path)
    if size == 0:
        return 0.0
    libc = _libc()
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap of {path} failed")
        try:
            pages = (size + _PAGE - 1) // _PAGE
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(ctypes.c_void_p(address), size, vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore failed")
            # Only the lowest bit of each entry means "resident"; the others are reserved.
            return bytes(vec).translate(_LOW_BIT).count(1) / pages
        finally:
            libc.munmap(ctypes.c_void_p(address), size)
    finally:
        os.close(fd)
