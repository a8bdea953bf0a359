"""``hermes sessions stats [--json]``: totals, per source, per model, per month, database size.

The text keeps CLI-12's opening lines as upstream prints them (totals, sessions per source,
``Database size`` of ``state.db`` itself), then adds the write-ahead log and three tables.
``--json`` is one document (:mod:`hermes_tui.cli_json`; fields in README, "JSON output").
"""

from __future__ import annotations

import argparse
import sys

from hermes_state.stats import TOKEN_COLUMNS, Group, Stats, collect

from . import cli_json
from .textsafe import fit_cells
from .wording import counted
from hermes_state.inert_text import inert_cells

#: Sources CLI-12 prints first, in this order, when counts tie; others follow alphabetically.
STATS_SOURCE_ORDER = ("cli", "telegram", "discord", "whatsapp", "slack")
#: What a group without a value (a session with no model, a start that is not a time) is called.
UNKNOWN = "(unknown)"
#: Rows of the per-model table before the rest are summed into one line.
MODEL_ROWS = 15


def add_stats(sub, run) -> None:
    parser = sub.add_parser("stats", help="session, message and token figures per source, model and month; database size")
    parser.add_argument("--json", action="store_true", help="one JSON document (see README, JSON output)")
    parser.set_defaults(run=run)


def _mb(size: int | None) -> str:
    return f"{(size or 0) / 1048576:.1f} MB"


def format_text(stats: Stats) -> list[str]:
    lines = [f"Total sessions: {stats.sessions}", f"Total messages: {stats.messages}"]
    # Most sessions first: the eye starts there; equal counts keep upstream's order, then
    # alphabetical (CLI-12).
    rank = {name: i for i, name in enumerate(STATS_SOURCE_ORDER)}
    by_source = sorted(stats.by_source, key=lambda g: (-g.sessions, rank.get(g.key or "", len(rank)), g.key or ""))
    for group in by_source:
        if group.sessions > 0:
            lines.append(f"  {inert_cells(group.key or '')}: {counted(group.sessions, 'session')}")
    size = stats.size
    if size.main is not None:
        lines.append(f"Database size: {_mb(size.main)}")
    if size.wal:
        lines.append(f"Write-ahead log: {_mb(size.wal)} ({_mb(size.total)} in all)")
    tokens = stats.tokens
    if tokens.get("input_tokens") is not None or tokens.get("output_tokens") is not None:
        lines.append(f"Tokens: {tokens.get('input_tokens') or 0:,} in, {tokens.get('output_tokens') or 0:,} out")
    lines += _table("By source", by_source, stats)  # (in the order of the lines above)
    models = stats.by_model
    if len(models) > MODEL_ROWS:
        rest = Group(f"({len(models) - MODEL_ROWS + 1} others)")
        for group in models[MODEL_ROWS - 1:]:
            rest.add(group.sessions, group.messages, group.tokens)
        models = [*models[:MODEL_ROWS - 1], rest]
    lines += _table("By model", models, stats)
    lines += _table("By month (UTC)", stats.by_month, stats)
    return lines


def _table(title: str, groups: list[Group], stats: Stats) -> list[str]:
    if not groups:
        return []
    with_tokens = stats.tokens.get("input_tokens") is not None
    head = f"{title:<36} {'sessions':>9} {'messages':>10}"
    if with_tokens:
        head += f" {'tokens in':>13} {'tokens out':>13}"
    lines = ["", head]
    for group in groups:
        name = fit_cells(inert_cells(group.key) if group.key is not None else UNKNOWN, 34, 36)
        line = f"{name} {group.sessions:>9,} {group.messages:>10,}"
        if with_tokens:
            line += f" {group.tokens.get('input_tokens') or 0:>13,} {group.tokens.get('output_tokens') or 0:>13,}"
        lines.append(line)
    return lines


def _group_json(group: Group, key: str) -> dict:
    return {key: group.key, "sessions": group.sessions, "messages": group.messages,
            **{name: group.tokens.get(name) for name in TOKEN_COLUMNS}}


def stats_json(stats: Stats) -> dict:
    return {
        "sessions": stats.sessions,
        "messages": stats.messages,
        **{name: stats.tokens.get(name) for name in TOKEN_COLUMNS},
        "database": {"main_bytes": stats.size.main, "wal_bytes": stats.size.wal, "total_bytes": stats.size.total},
        "by_source": [_group_json(g, "source") for g in stats.by_source],
        "by_model": [_group_json(g, "model") for g in stats.by_model],
        "by_month": [_group_json(g, "month") for g in stats.by_month],
    }


def run_stats(db, args: argparse.Namespace) -> int:
    stats = collect(db.store)
    if getattr(args, "json", False):
        cli_json.write_object("stats", stats_json(stats))
    else:
        sys.stdout.write("\n".join(format_text(stats)) + "\n")
    return 0
