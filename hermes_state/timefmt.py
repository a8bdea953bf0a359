"""Relative time for listings (SPEC RT-1)."""

from __future__ import annotations

import math
import time
from datetime import datetime


def relative_time(ts, now: float | None = None) -> str:
    """Format an epoch timestamp relative to ``now`` (default: the current time).

    ``None``, ``0``, empty, non-numeric, NaN, infinite or out-of-range input gives ``"?"``.
    "yesterday" means 24-48 hours ago, not the previous calendar day; anything a week or
    more old is shown as a local ``YYYY-MM-DD`` date. Future timestamps are "just now".
    """
    if ts is None or ts == "" or isinstance(ts, bool):
        return "?"
    try:
        value = float(ts)
    except (TypeError, ValueError):
        return "?"
    if value == 0 or math.isnan(value) or math.isinf(value):
        return "?"
    try:
        # Out of range for a date is "?" too, even when it would read as "just now".
        local_date = datetime.fromtimestamp(value)
    except (OverflowError, OSError, ValueError):
        return "?"
    current = time.time() if now is None else float(now)
    delta = current - value
    if delta < 60:
        return "just now"
    if delta < 3600:
        return f"{int(delta / 60)}m ago"
    if delta < 86400:
        return f"{int(delta / 3600)}h ago"
    if delta < 172800:
        return "yesterday"
    if delta < 604800:
        return f"{int(delta / 86400)}d ago"
    return local_date.strftime("%Y-%m-%d")


def stamp_and_relative(ts: float | None, now: float) -> str:
    """``2026-11-18 07:40 (20m ago)``: a local date and time with its relative form; a week
    or more ago, when the relative form is the date itself, only ``2026-11-02 07:40``.

    ``—`` for a missing timestamp, ``?`` for one that is not a valid date.
    """
    if not ts:
        return "—"
    try:
        stamp = datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError):
        return "?"
    relative = relative_time(ts, now=now)
    return stamp if repeats_date(relative, stamp) else f"{stamp} ({relative})"


def repeats_date(relative: str, stamp: str) -> bool:
    """Whether ``relative`` (a :func:`relative_time`) only repeats the date ``stamp`` (a local
    ``YYYY-MM-DD …``) starts with: shown beside it, it would say the date twice."""
    return relative == stamp[:10]
