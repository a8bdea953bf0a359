"""Time windows as people write them: ``7d``, ``2w``, ``12h``, ``3mo``, ``2026-10-01``.

A list filter's time window (:class:`~hermes_state.listing.narrow.Narrow`'s ``since`` and
``until``) is two epoch floats. This module makes them of what a person types on the command
line (``--since 7d``), in the search field (``after:2026-10-01``) or picks in the browser
(``last 7 days``), in local time. Pure functions of the text and a clock; nothing here reads a
store.

Units of a relative time (an age: that long before now):

* ``s`` / ``sec``, ``min``, ``h``, ``d``, ``w`` -- fixed lengths;
* ``mo`` -- calendar months and ``y`` -- calendar years, counted back on the calendar
  (``1mo`` on 31 March is 28/29 February, end of month clamped);
* a bare number is days (upstream's ``--older-than 90``).

``m`` alone is refused: minutes to some, months to others -- a prune of "3m" must not guess.

Absolute times: an ISO date (``2026-10-01``) or date and time (``2026-10-01 14:30``,
``2026-10-01T14:30:05``, with or without a UTC offset; without one, local time), ``today``,
``yesterday``. A date alone names a whole day: as a lower bound it is the day's first
instant, as an upper bound its last (``--until 2026-10-01`` includes that day).
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .listing.narrow import Narrow

__all__ = [
    "TimeParseError", "parse_time", "parse_age", "parse_window", "window_from_terms", "split_time_terms",
    "PRESETS", "Preset", "preset_window",
]


class TimeParseError(ValueError):
    """A time that cannot be read; its message is one line, fit for stderr."""


#: Seconds of each fixed unit (``mo`` and ``y`` are counted on the calendar instead).
_FIXED = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 7 * 86400, "wk": 7 * 86400, "week": 7 * 86400, "weeks": 7 * 86400,
}
_MONTHS = {"mo": 1, "mon": 1, "month": 1, "months": 1, "y": 12, "yr": 12, "year": 12, "years": 12}

_AGE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*(?:ago)?\s*$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

_HOW = "use an age like 7d, 2w, 12h, 90min, 3mo, 1y or a date like 2026-10-01 [14:30]"


def _now(now: float | None) -> float:
    return time.time() if now is None else float(now)


def _months_back(now: float, months: float) -> float:
    """``now`` moved back ``months`` calendar months in local time (a fraction of a month
    counts as 30 days per month), the day clamped to the month's end."""
    whole = int(months)
    local = datetime.fromtimestamp(now)
    index = local.year * 12 + (local.month - 1) - whole
    year, month = divmod(index, 12)
    month += 1
    day = min(local.day, calendar.monthrange(year, month)[1])
    moved = local.replace(year=year, month=month, day=day)
    return moved.timestamp() - (months - whole) * 30 * 86400


def parse_age(text: str, now: float | None = None) -> float | None:
    """The instant ``text`` (a relative age such as ``7d``) before ``now``; None when
    ``text`` is not an age. Raises :class:`TimeParseError` for an age with an unknown or
    ambiguous unit."""
    found = _AGE_RE.match(text.strip().lower())
    if found is None:
        return None
    amount, unit = float(found.group(1)), found.group(2)
    clock = _now(now)
    if not unit:
        return clock - amount * 86400  # a bare number is days, as upstream's --older-than
    if unit == "m":
        raise TimeParseError(f"ambiguous time '{text}': write {found.group(1)}min for minutes "
                             f"or {found.group(1)}mo for months")
    if unit in _FIXED:
        return clock - amount * _FIXED[unit]
    if unit in _MONTHS:
        return _months_back(clock, amount * _MONTHS[unit])
    raise TimeParseError(f"invalid time '{text}': unknown unit '{unit}'; {_HOW}")


def _day_start(day: datetime) -> float:
    return day.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def parse_time(text: str, now: float | None = None, *, end_of_day: bool = False) -> float:
    """The epoch instant ``text`` names (see the module docstring). ``end_of_day``: a date
    alone (``2026-10-01``, ``today``) is its last instant rather than its first -- for an
    upper bound that includes the day. Raises :class:`TimeParseError` (one line) otherwise."""
    raw = text if isinstance(text, str) else str(text)
    stripped = raw.strip()
    if not stripped:
        raise TimeParseError(f"empty time; {_HOW}")
    age = parse_age(stripped, now)
    if age is not None:
        return age
    lowered = stripped.lower()
    clock = _now(now)
    if lowered in ("today", "yesterday", "now"):
        if lowered == "now":
            return clock
        day = datetime.fromtimestamp(clock)
        if lowered == "yesterday":
            day -= timedelta(days=1)
        return _day_bound(day, end_of_day)
    if _DATE_RE.match(stripped):
        try:
            day = datetime.strptime(stripped, "%Y-%m-%d")
        except ValueError:
            raise TimeParseError(f"invalid date '{raw}': no such day") from None
        return _day_bound(day, end_of_day)
    candidate = stripped.replace(" ", "T", 1)
    if candidate.endswith(("Z", "z")):
        candidate = candidate[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(candidate)
    except ValueError:
        raise TimeParseError(f"invalid time '{raw}'; {_HOW}") from None
    return moment.timestamp()  # (naive: local time)


def _day_bound(day: datetime, end_of_day: bool) -> float:
    start = _day_start(day)
    if not end_of_day:
        return start
    following = day.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    # The day's last instant: a day of a DST change is 23 or 25 hours long.
    return following.timestamp() - 1e-6


def window_from_terms(
    after: str | None = None, before: str | None = None, now: float | None = None,
) -> tuple[float | None, float | None]:
    """``(since, until)`` of the search field's ``after:`` / ``before:`` values, as mail
    searches read them: ``after:2026-10-01`` from that day's first instant on,
    ``before:2026-10-01`` up to (not including) that day; an age (``after:7d``) is that long
    before now. Raises :class:`TimeParseError` for a value that cannot be read, and for a
    window that ends before it starts."""
    for name, value in (("after", after), ("before", before)):
        if value is not None and not value.strip():
            raise TimeParseError(f"{name}: needs a time; {_HOW}")
    since = parse_time(after, now) if after is not None else None
    until = None
    if before is not None:
        until = parse_time(before, now)
        if _DATE_RE.match(before.strip()) or before.strip().lower() in ("today", "yesterday"):
            until -= 1e-6  # strictly before the day
    if since is not None and until is not None and until < since:
        raise TimeParseError(f"empty time window: before:{before} is earlier than after:{after}")
    return since, until


def parse_window(text: str, now: float | None = None) -> tuple[float | None, float | None]:
    """``(since, until)`` of a window typed in the browser's time picker: one time is where
    the window starts (``3d``: the last three days; ``2026-10-01``: since that day), and
    ``A..B`` is from A to B, either side may be left empty (``..2026-09-30``: up to the end
    of that day). Raises :class:`TimeParseError` (one line) for what cannot be read and for
    a window that ends before it starts."""
    raw = text.strip()
    if ".." not in raw:
        return parse_time(raw, now), None
    left, _dots, right = raw.partition("..")
    since = parse_time(left, now) if left.strip() else None
    until = parse_time(right, now, end_of_day=True) if right.strip() else None
    if since is None and until is None:
        raise TimeParseError(f"empty time window '{raw}'; {_HOW}")
    if since is not None and until is not None and until < since:
        raise TimeParseError(f"empty time window '{raw}': it ends before it starts")
    return since, until


#: ``after:VALUE`` / ``before:VALUE`` in a search (VALUE up to the next space; a date and a
#: time are written with a ``T``: ``after:2026-10-01T14:30``). VALUE may be empty: a term
#: still being typed is a window waiting for its time, not the word "after".
_TERM_RE = re.compile(r"(?<!\S)(after|before):(\S*)", re.IGNORECASE)


def split_time_terms(text: str) -> tuple[str, str | None, str | None]:
    """``text`` without its ``after:`` / ``before:`` terms, and their values (the last of
    each kind counts), for :func:`window_from_terms`. A term inside double quotes is a
    phrase's words, not a window; without any term ``text`` comes back as it was."""
    after: str | None = None
    before: str | None = None
    pieces: list[str] = []
    last = 0
    for found in _TERM_RE.finditer(text):
        if text.count('"', 0, found.start()) % 2 == 1:
            continue  # (inside a quoted phrase)
        pieces.append(text[last:found.start()])
        last = found.end()
        if found.group(1).lower() == "after":
            after = found.group(2)
        else:
            before = found.group(2)
    if after is None and before is None:
        return text, None, None
    pieces.append(text[last:])
    return " ".join(" ".join(pieces).split()), after, before


@dataclass(frozen=True)
class Preset:
    """One choice of the browser's time picker."""

    key: str
    label: str


#: The browser's time picker, in its order (``any``: no window).
PRESETS: tuple[Preset, ...] = (
    Preset("any", "Any time"),
    Preset("today", "Today"),
    Preset("7d", "Last 7 days"),
    Preset("30d", "Last 30 days"),
    Preset("year", "This year"),
)


def preset_window(key: str, now: float | None = None) -> tuple[float | None, float | None]:
    """``(since, until)`` of a picker preset, in local time: ``today`` from midnight,
    ``7d`` / ``30d`` the last 7 / 30 days counted from now, ``year`` from 1 January."""
    clock = _now(now)
    if key == "any":
        return None, None
    if key == "today":
        return _day_start(datetime.fromtimestamp(clock)), None
    if key in ("7d", "30d"):
        return parse_time(key, clock), None
    if key == "year":
        local = datetime.fromtimestamp(clock)
        return datetime(local.year, 1, 1).timestamp(), None
    raise ValueError(f"unknown time preset {key!r}")


# ---------------------------------------------------------------------- a search field's terms


@dataclass(frozen=True)
class Windowed:
    """A query typed in a search field, read for its time terms."""

    #: The words searched for (the ``after:`` / ``before:`` terms taken out).
    text: str
    #: The list's window narrowed by the terms (the conversations last active in both).
    narrow: "Narrow"
    #: What is wrong with a term that cannot be read (the term is then left out), else None.
    problem: str | None = None


def windowed(query: str, narrow: "Narrow", now: float | None = None) -> Windowed:
    """``query`` without its ``after:`` / ``before:`` terms, and ``narrow`` (the list's)
    with its time window narrowed by them (BR-21): the search field's one reading of them."""
    rest, after, before = split_time_terms(query)
    if after is None and before is None:
        return Windowed(query, narrow)
    try:
        since, until = window_from_terms(after, before, now)
    except TimeParseError as exc:
        return Windowed(rest, narrow, str(exc))
    if since is not None and narrow.since is not None:
        since = max(since, narrow.since)
    if until is not None and narrow.until is not None:
        until = min(until, narrow.until)
    return Windowed(rest, narrow.with_(since=since if since is not None else narrow.since,
                                       until=until if until is not None else narrow.until))

