"""Pins for stores that have no ``sessions.pinned`` column (UC-5: never add one).

Upstream v30 keeps pins in the store; older stores (v16 and before) have nowhere to put them,
and changing the shape of upstream's tables is not ours to do. So their pins live in our own
settings file, ``<user data dir>/pins.json``, keyed by the database's resolved path.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..paths import data_dir, write_atomic


def pins_path() -> Path:
    return data_dir() / "pins.json"


def _key(db_path: Path) -> str:
    try:
        return str(Path(db_path).resolve())
    except OSError:
        return str(db_path)


def _read(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): [str(i) for i in v] for k, v in data.items() if isinstance(v, list)}


def pinned_in_file(db_path: Path) -> frozenset[str]:
    """The session ids pinned for this database in the settings file."""
    return frozenset(_read(pins_path()).get(_key(db_path), []))


def set_pinned_in_file(db_path: Path, session_ids: list[str], pinned: bool) -> frozenset[str]:
    """Pin or unpin ``session_ids`` for this database; returns the new set."""
    path = pins_path()
    data = _read(path)
    key = _key(db_path)
    current = set(data.get(key, []))
    current = current | set(session_ids) if pinned else current - set(session_ids)
    if current:
        data[key] = sorted(current)
    else:
        data.pop(key, None)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, [json.dumps(data, indent=2, sort_keys=True)], mode=0o600)
    return frozenset(current)
