"""Shared fixtures for every test directory (state, cli, tui, reliability).

Fixtures
--------
``db``
    A fresh :class:`hermes_state.SessionDB` on a real file ``tmp_path / "state.db"``;
    closed after the test (closing twice is harmless, so a test may close it itself).
``db_path``
    The path of that file (``tmp_path / "state.db"``), without opening anything. Use it to
    open a second connection or to hand the path to another process.
``shared_fixtures_dir``
    ``<repo>/../shared/fixtures``: databases written by upstream Hermes at schema versions
    2 to 30 (the reference stores described at the end of docs/requirements.md). They are
    data kept beside the repository, not in it; a test that needs them is skipped when the
    directory is absent.
``upstream_copy``
    ``upstream_copy(version) -> Path``: copies ``upstream_v<version>.db`` (with its
    ``-wal``/``-shm`` files if any) into ``tmp_path`` and returns the copy's path. Opening
    migrates in place, so never open the shared originals.
``make_session``
    ``make_session(db, session_id, **fields) -> str``: creates a session with controlled
    timestamps. See :func:`_make_session` for the keywords.
``set_times``
    ``set_times(db, session_id, started_at=..., ended_at=...)``: rewrite a session's times
    with a raw ``UPDATE`` through ``db._execute_write``.

Nothing here imports textual: UI fixtures belong in ``tests/tui/conftest.py``.
"""

from __future__ import annotations

import gc
import shutil
from pathlib import Path
from typing import Any, Iterable

import pytest

from hermes_state import SessionDB

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _private_user_dirs(tmp_path_factory, monkeypatch):
    """Nothing a test runs may write the real user's trash, config or cache."""
    base = tmp_path_factory.mktemp("user-dirs")
    monkeypatch.setenv("HERMES_SESSIONS_DATA_DIR", str(base / "data"))
    monkeypatch.setenv("HERMES_SESSIONS_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("HERMES_SESSIONS_CACHE_DIR", str(base / "cache"))


#: Tests between two full collections of the test process's cycles (see below).
COLLECT_EVERY = 25
_tests_run = 0


@pytest.fixture(autouse=True)
def _collect_cycles_now_and_then():
    """A full garbage collection every ``COLLECT_EVERY`` tests. Each app a test runs freezes
    the heap and hands it back to the oldest generation when it ends (the browser's collector
    tuning, ``HermesApp._collect_garbage_between_keys``), and CPython collects that
    generation only once it has grown by a quarter: the cycles of every app stayed, ~16k
    objects a test, and pytest's own collection at the end of a worker's ~1,000 tests took
    over 5 s -- execnet then interrupted its worker (a KeyboardInterrupt in hypothesis's gc
    callback, at the end of every CI run)."""
    global _tests_run
    yield
    _tests_run += 1
    if _tests_run % COLLECT_EVERY == 0:
        gc.collect()


SHARED_FIXTURES = REPO_ROOT / ".." / "shared" / "fixtures"

#: A fixed "now" for tests that need stable timestamps (2025-03-05 09:15:23 UTC).
FIXED_NOW = 1741166123.0

_UNSET: Any = object()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """``tmp_path / "state.db"`` (not created)."""
    return tmp_path / "state.db"


@pytest.fixture
def db(db_path: Path):
    """A fresh SessionDB on a real WAL file in ``tmp_path``; closed after the test."""
    store = SessionDB(db_path)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def shared_fixtures_dir() -> Path:
    """``<repo>/../shared/fixtures`` (upstream's reference stores), or skip when it is absent."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not available at {SHARED_FIXTURES}")
    return SHARED_FIXTURES.resolve()


@pytest.fixture
def upstream_copy(shared_fixtures_dir: Path, tmp_path: Path):
    """``upstream_copy(version) -> Path`` of a private copy of ``upstream_v<version>.db``."""

    def copy(version: int, name: str | None = None) -> Path:
        source = shared_fixtures_dir / f"upstream_v{version}.db"
        if not source.exists():
            pytest.skip(f"{source} not available")
        target_dir = tmp_path / f"upstream_v{version}"
        target_dir.mkdir(exist_ok=True)
        target = target_dir / (name or "state.db")
        shutil.copyfile(source, target)
        for suffix in ("-wal", "-shm"):
            side = Path(str(source) + suffix)
            if side.exists():
                shutil.copyfile(side, Path(str(target) + suffix))
        for path in [target, Path(str(target) + "-wal"), Path(str(target) + "-shm")]:
            if path.exists():
                path.chmod(0o644)  # the shared originals are read-only
        return target

    return copy


#: The profiles of :func:`profiles_home`, in the order Hermes lists them (default first, then
#: by name): each with the upstream fixture its store is a copy of (None: garbage bytes).
PROFILE_STORES = {"default": "v30_upgraded", "broken": None, "coder": "v30", "old": "v16"}


@pytest.fixture
def profiles_home(shared_fixtures_dir: Path, tmp_path: Path) -> Path:
    """A Hermes root with several profiles, the home PF-1..PF-6 are accepted on: the default
    profile's store a copy of ``upstream_v30_upgraded.db`` (which holds the v16 ids too:
    ids collide with ``old``), ``profiles/coder`` of ``upstream_v30.db``, ``profiles/old`` of
    ``upstream_v16.db``, ``profiles/broken`` a file of garbage bytes, ``profiles/fresh``
    with no store yet, and a deleted profile (``profiles/.deleted/gone``) and a directory
    whose name is no profile id, both of which are not profiles."""
    root = tmp_path / "hermes-root"
    for name, fixture in PROFILE_STORES.items():
        home = root if name == "default" else root / "profiles" / name
        home.mkdir(parents=True, exist_ok=True)
        target = home / "state.db"
        if fixture is None:
            target.write_bytes(b"this is not a database\x00" * 400)
            continue
        shutil.copyfile(shared_fixtures_dir / f"upstream_{fixture}.db", target)
        target.chmod(0o644)
    (root / "profiles" / "fresh").mkdir()
    (root / "profiles" / "gone").mkdir()
    (root / "profiles" / ".deleted").mkdir()
    (root / "profiles" / ".deleted" / "gone").write_text("deleted\n")
    (root / "profiles" / "Not A Profile").mkdir()
    return root


def set_session_times(
    db: SessionDB,
    session_id: str,
    started_at: Any = _UNSET,
    ended_at: Any = _UNSET,
) -> None:
    """Rewrite ``started_at`` and/or ``ended_at`` with a raw UPDATE (``None`` is allowed
    for ``ended_at``: the session becomes live)."""
    sets: list[str] = []
    params: list[Any] = []
    if started_at is not _UNSET:
        sets.append("started_at = ?")
        params.append(started_at)
    if ended_at is not _UNSET:
        sets.append("ended_at = ?")
        params.append(ended_at)
    if not sets:
        return
    params.append(session_id)
    db._execute_write(
        lambda conn: conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", params)
    )


def _make_session(
    db: SessionDB,
    session_id: str,
    *,
    source: str = "cli",
    started_at: float | None = None,
    ended_at: float | None = None,
    end_reason: str | None = None,
    parent_session_id: str | None = None,
    title: str | None = None,
    model: str | None = None,
    messages: Iterable[Any] = (),
) -> str:
    """Create a session through the public API, then pin its times with raw UPDATEs.

    ``started_at`` defaults to ``FIXED_NOW``. ``ended_at`` / ``end_reason``: when either is
    given the session is ended (``ended_at`` defaults to ``started_at + 60``; ``end_reason``
    defaults to ``"user_exit"``). ``messages`` is a sequence of ``(role, content)`` pairs or of
    dicts of :meth:`SessionDB.append_message` keywords (plus an optional ``timestamp``); the
    i-th message gets ``timestamp = started_at + i + 1`` unless it names its own.
    """
    start = FIXED_NOW if started_at is None else started_at
    db.create_session(session_id, source, model=model, parent_session_id=parent_session_id)
    for index, item in enumerate(messages):
        if isinstance(item, dict):
            kwargs = dict(item)
        else:
            role, content = item
            kwargs = {"role": role, "content": content}
        timestamp = kwargs.pop("timestamp", start + index + 1)
        message_id = db.append_message(session_id, **kwargs)
        db._execute_write(
            lambda conn, mid=message_id, ts=timestamp: conn.execute(
                "UPDATE messages SET timestamp = ? WHERE id = ?", (ts, mid)
            )
        )
    if title is not None:
        db.set_session_title(session_id, title)
    if ended_at is not None or end_reason is not None:
        db.end_session(session_id, end_reason or "user_exit")
        set_session_times(
            db, session_id, started_at=start, ended_at=start + 60 if ended_at is None else ended_at
        )
    else:
        set_session_times(db, session_id, started_at=start)
    return session_id


@pytest.fixture
def make_session():
    """``make_session(db, session_id, **fields)``; see :func:`_make_session`."""
    return _make_session


@pytest.fixture
def set_times():
    """``set_times(db, session_id, started_at=..., ended_at=...)``; raw UPDATE."""
    return set_session_times


@pytest.fixture
def fixed_now() -> float:
    """A fixed epoch time used as the default ``started_at`` of ``make_session``."""
    return FIXED_NOW


def _search_available() -> bool:
    try:
        import hermes_state.search  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture
def requires_search():
    """Skip unless ``hermes_state.search`` (the search engine) is importable."""
    if not _search_available():
        pytest.skip("hermes_state.search is not available yet")
