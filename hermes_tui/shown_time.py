"""Times as every screen of the browser shows them: to the minute, one way everywhere.

The list said "1m ago" where the detail pane said "07:39 (1m ago)" and the clock read 07:41:
``relative_time`` counts whole minutes of the exact difference, a stamp cuts the seconds
off, and the list is drawn again only every half minute. Here both ends are cut to the
minute before they are compared, so a stamp and its relative form agree, and the panes that
redraw on a timer do so on the minute (:func:`seconds_to_next_minute`), so no two panes
show the same moment a minute apart. The CLI keeps upstream's ``relative_time`` (RT-1).
"""

from __future__ import annotations

import math
from datetime import datetime

from hermes_state.timefmt import relative_time, repeats_date

__all__ = ["relative", "stamp_and_relative", "clock_time", "seconds_to_next_minute", "repeats_date"]


def _minute(value: float) -> float:
    return math.floor(value / 60.0) * 60.0


def _number(ts) -> float | None:
    if ts is None or ts == "" or isinstance(ts, bool):
        return None
    try:
        value = float(ts)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) or math.isinf(value) else value


def relative(ts, now: float) -> str:
    """``relative_time`` of the minute of ``ts`` seen from the minute of ``now``."""
    value = _number(ts)
    if value is None or value == 0:
        return relative_time(ts, now=now)  # ("?" as upstream says it)
    return relative_time(_minute(value), now=_minute(now))


def stamp_and_relative(ts: float | None, now: float) -> str:
    """``2026-11-18 07:40 (20m ago)``; the date alone beside it when that is all the relative
    form says; ``—`` when missing, ``?`` when not a date."""
    if not ts:
        return "—"
    try:
        stamp = datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")
    except (OverflowError, OSError, ValueError, TypeError):
        return "?"
    shown = relative(ts, now)
    return stamp if repeats_date(shown, stamp) else f"{stamp} ({shown})"


def clock_time(ts: float | None) -> str:
    """A message's own time to the second (the transcript's header), or ``?``."""
    if not ts:
        return "?"
    try:
        return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError, TypeError):
        return "?"


def seconds_to_next_minute(now: float) -> float:
    """How long until the shown minute changes (a timer started then redraws on the minute)."""
    return 60.0 - (now % 60.0) + 0.05
