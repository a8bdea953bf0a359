"""System prompts kept once, by hash, in ``system_prompts`` (upstream v30), read back into the
session dicts of the upstream API.

A v30 store writes a session's prompt into ``system_prompts`` and leaves
``sessions.system_prompt`` NULL, pointing at it with ``system_prompt_hash``. Upstream's
``get_session`` (and every other call returning session rows) answers with the prompt in
``system_prompt`` all the same: the prompt found by hash when there is one, else the column
(``COALESCE(prompt by hash, system_prompt)``). A caller written against the older API -- an
agent resuming a session, an export, a script -- then reads the same dict from every schema.

The rows are filled after they are read, by one lookup of the hashes they carry, so the many
statements that read ``s.*`` (the list, search, cron runs, handoffs …) keep their SQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator

from .sql_ids import SQL_IDS_PER_STATEMENT, chunked, in_chunks

if TYPE_CHECKING:
    from .store import Store


def with_resolved_prompts(store: "Store", rows: Iterable[dict]) -> list[dict]:
    """``rows`` (session dicts, changed in place and returned as a list) with ``system_prompt``
    set to the prompt their ``system_prompt_hash`` names, where the store keeps prompts by hash
    and has that prompt. A row without a ``system_prompt`` key (a projection that left it out)
    is left as it is; so is every row of a store without ``system_prompts``."""
    rows = rows if isinstance(rows, list) else list(rows)
    if not rows or not store.rules.system_prompts:
        return rows
    wanted = sorted({row["system_prompt_hash"] for row in rows
                     if "system_prompt" in row and row.get("system_prompt_hash")})
    if not wanted:
        return rows
    found: dict[str, str] = {}
    for chunk, marks in in_chunks(wanted):
        for digest, prompt in store.fetchall(
            f"SELECT hash, prompt FROM system_prompts WHERE hash IN ({marks}) AND prompt IS NOT NULL", chunk,
        ):
            found[digest] = prompt
    for row in rows:
        prompt = found.get(row.get("system_prompt_hash")) if "system_prompt" in row else None
        if prompt is not None:
            row["system_prompt"] = prompt
    return rows


def with_resolved_prompt(store: "Store", row: dict | None) -> dict | None:
    """One session dict (or None) as :func:`with_resolved_prompts` makes it."""
    if row is None:
        return None
    return with_resolved_prompts(store, [row])[0]


def iter_with_resolved_prompts(
    store: "Store", rows: Iterator[dict], batch: int = SQL_IDS_PER_STATEMENT,
) -> Iterator[dict]:
    """``rows`` (a stream of session dicts) as :func:`with_resolved_prompts` makes them, a
    batch at a time (by default as many rows as one statement looks hashes up for); closing
    this closes ``rows``. When the store keeps no prompt by hash the rows pass through
    untouched."""
    try:
        if not store.rules.system_prompts:
            yield from rows
            return
        for waiting in chunked(rows, batch):
            yield from with_resolved_prompts(store, waiting)
    finally:
        close = getattr(rows, "close", None)
        if close is not None:
            close()
