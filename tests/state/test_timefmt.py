"""SPEC §11 (RT-1): relative time, with an injected ``now``."""

from __future__ import annotations

import os
import time
from datetime import datetime

import pytest

from hermes_state import relative_time
from hermes_state.timefmt import relative_time as relative_time_direct

NOW = 1741166123.0  # 2025-03-05 09:15:23 UTC


@pytest.mark.parametrize(
    "delta,expected",
    [
        (0, "just now"),
        (59.9, "just now"),
        (-300, "just now"),
        (60, "1m ago"),
        (119.9, "1m ago"),
        (3599, "59m ago"),
        (3600, "1h ago"),
        (7200, "2h ago"),
        (86399, "23h ago"),
        (86400, "yesterday"),
        (172799, "yesterday"),
        (172800, "2d ago"),
        (259200, "3d ago"),
        (604799, "6d ago"),
    ],
)
def test_rt1_relative_time_table(delta, expected):
    assert relative_time(NOW - delta, now=NOW) == expected


def test_rt1_a_week_or_more_is_a_local_date():
    for delta in (604800, 604800 * 10, 86400 * 400):
        ts = NOW - delta
        assert relative_time(ts, now=NOW) == datetime.fromtimestamp(ts).strftime("%Y-%m-%d")


def test_rt1_date_uses_process_local_time_zone(monkeypatch):
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset not available")
    ts = 1741132800.0  # 2025-03-05 00:00:00 UTC
    try:
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
        assert relative_time(ts, now=ts + 30 * 86400) == "2025-03-05"
        monkeypatch.setenv("TZ", "America/New_York")
        time.tzset()
        assert relative_time(ts, now=ts + 30 * 86400) == "2025-03-04"
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize(
    "ts",
    [None, 0, 0.0, "", "abc", float("nan"), float("inf"), float("-inf"), 1e20, -1e20, [], {}, object()],
)
def test_rt1_invalid_input_is_question_mark(ts):
    assert relative_time(ts, now=NOW) == "?"


def test_rt1_numeric_strings_converted():
    assert relative_time(str(NOW - 120), now=NOW) == "2m ago"
    assert relative_time(" %s " % (NOW - 7200), now=NOW) == "2h ago"
    assert relative_time("0", now=NOW) == "?"


def test_rt1_now_defaults_to_current_time():
    assert relative_time(time.time() - 5) == "just now"
    assert relative_time(time.time() - 3 * 3600) == "3h ago"
    assert relative_time_direct is relative_time


def test_rt1_integer_timestamps():
    assert relative_time(int(NOW) - 60, now=int(NOW)) == "1m ago"


def test_a_stamp_says_its_date_once():
    """`2025-02-26 09:15` beside its relative form: recent ones keep it (`(3d ago)`); a week
    or more ago the relative form is the date itself, and is not said a second time."""
    from hermes_state.timefmt import stamp_and_relative

    recent = NOW - 3 * 86400
    assert stamp_and_relative(recent, NOW) == datetime.fromtimestamp(recent).strftime("%Y-%m-%d %H:%M") + " (3d ago)"
    old = NOW - 8 * 86400
    assert stamp_and_relative(old, NOW) == datetime.fromtimestamp(old).strftime("%Y-%m-%d %H:%M")
    assert stamp_and_relative(None, NOW) == "—"
    assert stamp_and_relative(1e20, NOW) == "?"
