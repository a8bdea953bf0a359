"""The figures of ``hermes sessions stats``: totals, per source, per model, per month, and the
database's size on disk (CLI-12, CLI-19, EX-7).

One read snapshot gives every figure, so the groups add up to the totals while a gateway
commits. Every session the store holds is counted (archived, hidden and internal runs too:
``stats`` describes the file, not a list); messages are those a reader is shown (rewound
ones left out, UC-3). Token totals are given only where the store has the column (None
otherwise: an old schema never recorded them, which is not zero).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .sessions import source_counts

if TYPE_CHECKING:
    from .store import Store

#: The token columns of ``sessions`` summed per group, where the store has them.
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


@dataclass
class Group:
    """The figures of one source, model or month."""

    key: str | None
    sessions: int = 0
    messages: int = 0
    #: Column name → total; a column the store lacks is None.
    tokens: dict[str, int | None] = field(default_factory=dict)

    def add(self, sessions: int, messages: int, tokens: dict[str, int | None]) -> None:
        self.sessions += sessions
        self.messages += messages
        for name, value in tokens.items():
            if value is None:
                self.tokens.setdefault(name, None)
            else:
                self.tokens[name] = (self.tokens.get(name) or 0) + value


@dataclass
class Sizes:
    """Bytes on disk: the database file and its write-ahead log (None: no such file)."""

    main: int | None
    wal: int | None

    @property
    def total(self) -> int | None:
        if self.main is None and self.wal is None:
            return None
        return (self.main or 0) + (self.wal or 0)


@dataclass
class Stats:
    sessions: int
    messages: int
    tokens: dict[str, int | None]
    by_source: list[Group]
    by_model: list[Group]
    by_month: list[Group]
    size: Sizes


def file_sizes(path: Path) -> Sizes:
    def size(p: Path) -> int | None:
        try:
            return os.stat(p).st_size
        except OSError:
            return None

    return Sizes(main=size(path), wal=size(Path(str(path) + "-wal")))


def collect(store: "Store") -> Stats:
    """Every figure of ``stats`` for ``store``, read in one snapshot."""
    caps = store.capabilities
    present = [name for name in TOKEN_COLUMNS if caps.has_session_column(name)]
    visible = store.rules.visible("m")
    has_model = caps.has_session_column("model")
    token_sql = "".join(f", SUM(COALESCE(s.{name}, 0))" for name in present)
    model_sql = "s.model" if has_model else "NULL"
    # A started_at that is not a number (a store edited by hand) has no month: NULL, shown as
    # "unknown", never an error. Months are UTC, so the figures are the same on every machine.
    month_sql = ("CASE WHEN typeof(s.started_at) IN ('integer', 'real') "
                 "THEN strftime('%Y-%m', s.started_at, 'unixepoch') END")
    grouped = (
        f"SELECT s.source, {model_sql}, {month_sql}, COUNT(*), SUM(COALESCE(mc.n, 0)){token_sql} "
        "FROM sessions s LEFT JOIN (SELECT m.session_id AS sid, COUNT(*) AS n FROM messages m "
        f"WHERE {visible} GROUP BY m.session_id) mc ON mc.sid = s.id GROUP BY 1, 2, 3"
    )

    def read() -> tuple[list, int]:
        rows = store.fetchall(grouped)
        total_messages = store.fetchone(f"SELECT COUNT(*) FROM messages m WHERE {visible}")[0]
        return rows, int(total_messages or 0)

    rows, total_messages = store.read_snapshot(read)
    sources: dict[Any, Group] = {}
    models: dict[Any, Group] = {}
    months: dict[Any, Group] = {}
    everything = Group(None)
    for row in rows:
        source, model, month, sessions, messages = row[0], row[1], row[2], int(row[3]), int(row[4] or 0)
        tokens: dict[str, int | None] = {name: None for name in TOKEN_COLUMNS}
        for name, value in zip(present, row[5:]):
            tokens[name] = int(value or 0)
        for table, key in ((sources, source), (models, model), (months, month)):
            key = None if key is None else str(key)
            table.setdefault(key, Group(key)).add(sessions, messages, tokens)
        everything.add(sessions, messages, tokens)
    if not rows:
        everything.tokens = {name: (0 if name in present else None) for name in TOKEN_COLUMNS}

    def by_size(groups: dict[Any, Group]) -> list[Group]:
        # Most sessions first; ties by name (None, "unknown", last).
        return sorted(groups.values(), key=lambda g: (-g.sessions, g.key is None, g.key or ""))

    return Stats(
        sessions=everything.sessions,
        messages=total_messages,
        tokens=everything.tokens,
        by_source=by_size(sources),
        by_model=by_size(models),
        # Months in time order, the unknown last.
        by_month=sorted(months.values(), key=lambda g: (g.key is None, g.key or "")),
        size=file_sizes(store.path),
    )


def totals(store: "Store") -> dict:
    """Upstream's ``stats()`` dict (EX-7): ``total_sessions``, ``total_messages``,
    ``sources`` (sessions per source), ``db_size_bytes`` (None when there is no file).

    One snapshot, and the total is the sum of the per-source lines: every session the store
    holds (archived and hidden ones too), so the printed figures always add up while a
    gateway commits. UC-3: rewound messages are not counted (compacted history is)."""
    path = store.path
    size = path.stat().st_size if path.exists() else None

    def read() -> tuple[dict[str, int], int]:
        messages = store.fetchone(f"SELECT COUNT(*) FROM messages m WHERE {store.rules.visible('m')}")[0]  # type: ignore[index]
        return source_counts(store), int(messages)

    sources, messages = store.read_snapshot(read)
    return {
        "total_sessions": sum(sources.values()),
        "total_messages": messages,
        "sources": sources,
        "db_size_bytes": size,
    }
