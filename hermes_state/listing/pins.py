"""Pinning a conversation (:func:`set_pinned`), and the pins of stores that have no
``sessions.pinned`` column (UC-5: never add one).

Upstream v30 keeps pins in the store; older stores (v16 and before) have nowhere to put them,
and changing the shape of upstream's tables is not ours to do. So their pins live in our own
settings file, ``<user data dir>/pins.json``, keyed by the database's resolved path.

Several processes pin at once (a browser and CLI commands): every change is a
read-modify-replace under an exclusive lock on ``pins.json.lock``, so none is lost (30
parallel ``pin`` commands once kept 7). Keys this version does not understand are kept as
they are. Readers notice another process's edit by the file's signature.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..deletion import compression_lineage
from ..paths import SideFileError, data_dir, file_signature, read_side_file, write_atomic

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store


def pins_path() -> Path:
    return data_dir() / "pins.json"


_keys: dict[tuple, str] = {}


def _key(db_path: Path) -> str:
    """The database's resolved path. The list asks for its pins on every search keystroke,
    and resolving walks the path's every component: it is resolved again only when the path
    given, the working directory or the file the path reaches is another (a symlink pointed
    elsewhere, a store replaced), which one ``stat`` tells."""
    given = str(db_path)
    try:
        st = os.stat(given)
        seen = (given, os.getcwd(), st.st_ino, st.st_dev)
    except OSError:
        seen = None
    key = _keys.get(seen) if seen is not None else None
    if key is None:
        try:
            key = str(Path(db_path).resolve())
        except OSError:
            key = given
        if seen is not None:
            if len(_keys) > 256:
                _keys.clear()
            _keys[seen] = key
    return key


def _document(path: Path) -> dict[str, Any]:
    """The whole file as stored (every key, whatever its shape); {} when there is none.

    A file that is not a JSON object raises :class:`SideFileError`: writing over it would lose
    what it holds."""
    try:
        raw = read_side_file(path)
    except FileNotFoundError:
        return {}
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        raise SideFileError(f"{path} is not valid JSON; it was left as it is (fix or remove it to pin)") from None
    if not isinstance(data, dict):
        raise SideFileError(f"{path} does not hold a JSON object; it was left as it is (fix or remove it to pin)")
    return data


def _ids(value: Any) -> frozenset[str]:
    return frozenset(str(i) for i in value) if isinstance(value, list) else frozenset()


_cache: dict[str, tuple[tuple[int, int, int, int] | None, frozenset[str]]] = {}


def pinned_in_file(db_path: Path) -> frozenset[str]:
    """The session ids pinned for this database in the settings file (read again only when
    the file changed); an unreadable file pins nothing (and is left as it is)."""
    path = pins_path()
    key = _key(db_path)
    signature = file_signature(path)
    cached = _cache.get(key)
    if cached is not None and cached[0] == signature and signature is not None:
        return cached[1]
    try:
        pins = _ids(_document(path).get(key))
    except OSError:
        pins = frozenset()
    _cache[key] = (signature, pins)
    return pins


def pins_signature() -> tuple[int, int, int, int] | None:
    """Changes whenever any process changes the pins file."""
    return file_signature(pins_path())


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(path.name + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def set_pinned_in_file(db_path: Path, session_ids: list[str], pinned: bool) -> frozenset[str]:
    """Pin or unpin ``session_ids`` for this database; returns the new set.

    Raises :class:`SideFileError` (one line, nothing changed) when the file cannot be kept."""
    path = pins_path()
    key = _key(db_path)
    try:
        with _locked(path):
            data = _document(path)
            current = set(_ids(data.get(key)))
            current = current | set(session_ids) if pinned else current - set(session_ids)
            if current:
                data[key] = sorted(current)
            else:
                data.pop(key, None)
            text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
            write_atomic(path, [text], mode=0o600)
    except SideFileError:
        raise
    except OSError as exc:
        # Name the pins file, not the temp or lock file the error came from.
        raise SideFileError(f"cannot save pins to {path} ({exc.strerror or exc}); nothing was changed") from exc
    result = frozenset(current)
    global _own_signature
    _own_signature = file_signature(path)
    _cache[key] = (_own_signature, result)
    return result


#: The signature of the pins file as this process last wrote it: a watcher of this process
#: does not report its own pin as another process's change.
_own_signature: tuple[int, int, int, int] | None = None


def written_here(signature: tuple[int, int, int, int] | None) -> bool:
    """Whether the pins file with this signature is this process's own last write."""
    return signature is not None and signature == _own_signature


def set_pinned(store: "Store", session_id: str, pinned: bool) -> bool:
    """Pin or unpin a conversation: its whole compression lineage, so the row the list shows
    agrees whichever segment is asked. In ``sessions.pinned`` where the store has it (v30),
    else in our settings file (UC-5: never a new column). True if the session exists.

    A :class:`~hermes_state.listing.engine.Lister` of this store keeps the pins it found:
    the caller tells it (:meth:`Lister.forget_pins`), as our own commit does not move this
    connection's ``data_version``."""
    if not store.has_session_column("pinned"):
        ids = store.read(lambda conn: compression_lineage(conn, session_id))
        if not ids:
            return False
        set_pinned_in_file(store.path, ids, pinned)
        return True

    def do(conn: sqlite3.Connection) -> bool:
        ids = compression_lineage(conn, session_id)
        if not ids:
            return False
        marks = ",".join("?" for _ in ids)
        conn.execute(f"UPDATE sessions SET pinned = ? WHERE id IN ({marks})", [1 if pinned else 0, *ids])
        return True

    return bool(store.write(do))
