"""A directory of one Markdown file per conversation (``export --format md-dir``).

``DIR/`` holds one ``.md`` file per conversation (a session, or with ``--lineage`` a whole
compression chain) and ``manifest.jsonl``: one JSON line per file, in export order, with
``file``, ``session_id``, ``title``, ``messages``, ``sha256`` (of the file's bytes) and, for
a lineage, ``sessions`` (its segments' ids, root to tip).

File names are safe anywhere: ``[<started YYYY-MM-DD_HHMMSS>_]<id>_<title>.md`` (the start
left out when the id begins with it, as upstream's do), so they sort by start; title and id keep letters, digits, ``-`` and ``_`` (anything else, ``/`` and every control included,
becomes ``-``), at most :data:`NAME_BYTES` bytes of UTF-8, never hidden (no leading dot), and
unique in the directory even on a file system that ignores case (``…-2.md`` …).

Like every export it is atomic and owner-only: the files are written in a temporary
directory (``0700``, files ``0600``) beside the destination, flushed to disk, and only then
renamed to the destination. A failure (or Ctrl-C) removes the temporary directory; a
destination that exists is replaced only when it is empty or is an earlier export of this
kind (it holds ``manifest.jsonl`` and nothing but the files it names) -- never a directory
of other files. A temporary directory left by a killed export is removed by the next export
to the same place.

The memory an export needs is one conversation's document (written as it comes).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any, Callable, Iterable

try:
    from .export_markdown import conversation_title, lineage_to_markdown
    from .inert_text import escape_json_text
    from .paths import fsync_directory, process_alive
except ImportError:  # run by its path in an export worker (hermes_state.export_batch): no package
    from export_markdown import conversation_title, lineage_to_markdown  # type: ignore[no-redef]
    from inert_text import escape_json_text  # type: ignore[no-redef]
    from paths import fsync_directory, process_alive  # type: ignore[no-redef]

MANIFEST = "manifest.jsonl"
#: The longest file name written (most file systems allow 255 bytes).
NAME_BYTES = 120
_UNSAFE_NAME_RE = re.compile(r"[^\w-]+")
_TEMP_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[A-Za-z0-9_]+\.tmp$")


def _slug(text: str, limit: int) -> str:
    """``text`` as a file-name part: NFC, word characters and ``-``, ``_`` only, runs of
    anything else one ``-``, at most ``limit`` bytes of UTF-8 (cut at a character)."""
    text = unicodedata.normalize("NFC", text)
    slug = _UNSAFE_NAME_RE.sub("-", text).strip("-_.")
    # \w also matches some characters a file name should not start with or hide behind
    slug = "".join(ch for ch in slug if unicodedata.category(ch)[0] in "LN" or ch in "-_")
    encoded = slug.encode("utf-8")[:limit]
    return encoded.decode("utf-8", "ignore").strip("-_")


def unit_facts(unit: list[dict]) -> dict[str, Any]:
    """What names a conversation's file and its manifest line: ``id``, ``title`` (None when
    no segment has one), ``started_at``, ``messages`` and, for a lineage, ``sessions``."""
    first = unit[0]
    facts: dict[str, Any] = {
        "id": first.get("id"),
        "title": conversation_title(unit) if any(obj.get("title") for obj in unit) else None,
        "started_at": first.get("started_at"),
        "messages": sum(len(obj.get("messages") or []) for obj in unit),
    }
    if len(unit) > 1 or first.get("lineage"):
        facts["sessions"] = [obj.get("id") for obj in unit]
    return facts


def file_name(unit: list[dict], taken: set[str]) -> str:
    """A safe, unique (case-insensitively, within ``taken``, which it joins) file name."""
    return name_for(unit_facts(unit), taken)


def name_for(facts: dict[str, Any], taken: set[str]) -> str:
    """:func:`file_name` from a conversation's :func:`unit_facts`."""
    try:
        stamp = time.strftime("%Y-%m-%d_%H%M%S", time.gmtime(float(facts.get("started_at"))))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        stamp = "undated"
    ident = _slug(str(facts.get("id") or ""), 40) or "session"
    if ident.startswith(stamp.replace("-", "")):
        stamp = ""  # (upstream's ids begin with their start already: 20250305_091523_…)
    title = facts.get("title") or ""
    room = NAME_BYTES - len(stamp) - len(ident.encode("utf-8")) - len(".md") - 2 - 6  # 6: "-99999"
    slug = _slug(str(title), max(0, room)) if title else ""
    base = "_".join(part for part in (stamp, ident, slug) if part)
    name = f"{base}.md"
    counter = 1
    while name.casefold() in taken or name == MANIFEST:
        counter += 1
        name = f"{base}-{counter}.md"
    taken.add(name.casefold())
    return name


def _sweep(directory: Path, name: str) -> None:
    """Remove temporary directories of exports to ``directory/name`` whose writer is gone."""
    try:
        entries = [e for e in os.scandir(directory) if e.name.startswith(f".{name}.") and e.name.endswith(".tmp")]
    except OSError:
        return
    for entry in entries:
        match = _TEMP_RE.match(entry.name)
        if not match or match.group("name") != name or process_alive(int(match.group("pid"))):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)


def _replaceable(target: Path) -> bool:
    """``target`` may be replaced: it is missing, empty, or an earlier export of this kind."""
    if not target.exists() and not target.is_symlink():
        return True
    if target.is_symlink() or not target.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory")
    names = set(os.listdir(target))
    if not names:
        return True
    if MANIFEST not in names:
        raise FileExistsError(errno.EEXIST, "exists and is not an md-dir export (no manifest.jsonl); choose a new directory")
    listed = {MANIFEST}
    with open(target / MANIFEST, encoding="utf-8") as manifest:
        for line in manifest:
            try:
                entry = json.loads(line)
                listed.add(entry["file"])
            except (ValueError, KeyError, TypeError):
                continue
    if names - listed:
        raise FileExistsError(
            errno.EEXIST, "holds files its manifest.jsonl does not list; not replaced (choose a new directory)"
        )
    return True


def _sync_all(directory: Path, names: list[str]) -> None:
    """Every file written (and the directory) to disk before the rename makes them the
    export: one ``syncfs`` of the file system where the platform has it, else each file."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        if _syncfs(fd):
            return
        for name in names:
            file_fd = os.open(directory / name, os.O_RDONLY)
            try:
                os.fsync(file_fd)
            finally:
                os.close(file_fd)
        os.fsync(fd)
    finally:
        os.close(fd)


def _syncfs(fd: int) -> bool:
    """``syncfs(fd)`` (Linux); False where unavailable. One call instead of a ``fsync`` per
    file: tens of thousands of small files each waited for the disk in turn."""
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError, TypeError):
        return False
    if syncfs(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return True


def write_md_dir(
    path: "str | os.PathLike[str]",
    units: Iterable[list[dict]],
    *,
    render: Callable[[list[dict]], str] = lineage_to_markdown,
) -> int:
    """Write the directory export of ``units`` (lists of session dicts, one conversation
    each) to ``path``; return the number of files (conversations) written."""
    return write_md_dir_records(path, ((unit_facts(unit), render(unit).encode("utf-8")) for unit in units))


def write_md_dir_records(path: "str | os.PathLike[str]", records: Iterable[tuple[dict, bytes]]) -> int:
    """:func:`write_md_dir` of documents already rendered: ``(facts, bytes)`` per file, the
    facts as :func:`unit_facts` makes them (export workers render the documents)."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "its parent directory does not exist")
    _replaceable(target)
    _sweep(parent, target.name)
    temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=parent))
    try:
        os.chmod(temp, 0o700)
        taken: set[str] = set()
        names: list[str] = []
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        with open(os.open(temp / MANIFEST, flags, 0o600), "w", encoding="utf-8") as manifest:
            for facts, data in records:
                name = name_for(facts, taken)
                with open(os.open(temp / name, flags, 0o600), "wb") as handle:
                    handle.write(data)
                names.append(name)
                manifest.write(_manifest_line(facts, name, data))
        names.append(MANIFEST)
        _sync_all(temp, names)
        _install(temp, target)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    fsync_directory(parent)
    return len(names) - 1


def _manifest_line(facts: dict[str, Any], name: str, data: bytes) -> str:
    entry: dict[str, Any] = {
        "file": name,
        "session_id": facts.get("id"),
        "title": facts.get("title"),
        "messages": facts.get("messages"),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    if "sessions" in facts:
        entry["sessions"] = facts["sessions"]
    # (as JSONL exports: controls in a title escaped, so `cat manifest.jsonl` is safe)
    return escape_json_text(json.dumps(entry, ensure_ascii=False)) + "\n"


def _install(temp: Path, target: Path) -> None:
    """``temp`` becomes ``target`` (an empty directory there is replaced by the rename
    itself; an earlier export is moved aside first and removed after)."""
    try:
        os.rename(temp, target)
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent))
    os.rmdir(aside)
    os.rename(target, aside)
    try:
        os.rename(temp, target)
    except BaseException:
        os.rename(aside, target)
        raise
    shutil.rmtree(aside, ignore_errors=True)


__all__ = ["MANIFEST", "NAME_BYTES", "file_name", "name_for", "unit_facts", "write_md_dir", "write_md_dir_records"]
