"""Time windows as people write them (hermes_state.timewindow): ages, dates, the search
field's after:/before:, the browser's presets, and bad input said in one line."""

from __future__ import annotations

from datetime import datetime

import pytest

from hermes_state.timewindow import TimeParseError, parse_time, preset_window, window_from_terms

#: 2026-03-31 15:30 local time: the end of a long month, for calendar months back.
NOW = datetime(2026, 3, 31, 15, 30).timestamp()


@pytest.mark.parametrize("text, seconds", [
    ("7d", 7 * 86400), ("2w", 14 * 86400), ("12h", 12 * 3600), ("90min", 90 * 60), ("45s", 45),
    ("1.5d", 1.5 * 86400), ("90", 90 * 86400), (" 3 days ", 3 * 86400), ("2 weeks ago", 14 * 86400),
])
def test_an_age_is_that_long_before_now(text, seconds):
    assert parse_time(text, NOW) == pytest.approx(NOW - seconds)


def test_months_and_years_are_counted_on_the_calendar_with_the_day_clamped():
    assert datetime.fromtimestamp(parse_time("1mo", NOW)) == datetime(2026, 2, 28, 15, 30)
    assert datetime.fromtimestamp(parse_time("3mo", NOW)) == datetime(2025, 12, 31, 15, 30)
    assert datetime.fromtimestamp(parse_time("1y", NOW)) == datetime(2025, 3, 31, 15, 30)


def test_m_alone_is_refused_as_minutes_or_months():
    with pytest.raises(TimeParseError) as caught:
        parse_time("3m", NOW)
    message = str(caught.value)
    assert "\n" not in message and "3min" in message and "3mo" in message


@pytest.mark.parametrize("text", ["7x", "yesterdayish", "2026-13-01", "2026-02-30", "", "  ", "d7", "-3d"])
def test_what_cannot_be_read_is_one_line_naming_the_text(text):
    with pytest.raises(TimeParseError) as caught:
        parse_time(text, NOW)
    message = str(caught.value)
    assert "\n" not in message
    assert text.strip() in message or "empty" in message


def test_a_date_is_its_first_instant_or_as_an_upper_bound_its_last():
    start = parse_time("2026-10-01", NOW)
    assert datetime.fromtimestamp(start) == datetime(2026, 10, 1)
    end = parse_time("2026-10-01", NOW, end_of_day=True)
    assert datetime.fromtimestamp(end).date() == datetime(2026, 10, 1).date()
    assert parse_time("2026-10-02", NOW) - end < 0.001


def test_dates_with_times_are_local_unless_they_carry_an_offset():
    assert datetime.fromtimestamp(parse_time("2026-10-01 14:30", NOW)) == datetime(2026, 10, 1, 14, 30)
    assert datetime.fromtimestamp(parse_time("2026-10-01T14:30:05", NOW)) == datetime(2026, 10, 1, 14, 30, 5)
    assert parse_time("2026-10-01T00:00:00Z", NOW) == datetime.fromisoformat("2026-10-01T00:00:00+00:00").timestamp()


def test_today_and_yesterday_are_local_days():
    assert datetime.fromtimestamp(parse_time("today", NOW)) == datetime(2026, 3, 31)
    assert datetime.fromtimestamp(parse_time("yesterday", NOW)) == datetime(2026, 3, 30)
    assert datetime.fromtimestamp(parse_time("today", NOW, end_of_day=True)).date() == datetime(2026, 3, 31).date()


def test_after_and_before_terms_read_as_mail_searches_read_them():
    since, until = window_from_terms("2026-10-01", "2026-10-08", NOW)
    assert datetime.fromtimestamp(since) == datetime(2026, 10, 1)
    assert until < datetime(2026, 10, 8).timestamp()  # before a day: not that day
    assert datetime(2026, 10, 8).timestamp() - until < 0.001
    assert window_from_terms("7d", None, NOW) == (pytest.approx(NOW - 7 * 86400), None)
    assert window_from_terms(None, None, NOW) == (None, None)


def test_a_window_that_ends_before_it_starts_is_refused():
    with pytest.raises(TimeParseError):
        window_from_terms("2026-10-08", "2026-10-01", NOW)


def test_presets_of_the_picker():
    assert preset_window("any", NOW) == (None, None)
    assert datetime.fromtimestamp(preset_window("today", NOW)[0]) == datetime(2026, 3, 31)
    assert preset_window("7d", NOW)[0] == pytest.approx(NOW - 7 * 86400)
    assert preset_window("30d", NOW)[0] == pytest.approx(NOW - 30 * 86400)
    assert datetime.fromtimestamp(preset_window("year", NOW)[0]) == datetime(2026, 1, 1)
    with pytest.raises(ValueError):
        preset_window("fortnight", NOW)


def test_after_and_before_terms_are_taken_out_of_a_search_and_the_rest_kept():
    from hermes_state.timewindow import split_time_terms

    assert split_time_terms("docker after:2026-10-01 deploy before:7d") == ("docker deploy", "2026-10-01", "7d")
    assert split_time_terms("docker deploy") == ("docker deploy", None, None)
    assert split_time_terms('"after:noon" kube') == ('"after:noon" kube', None, None)  # a phrase's words
    assert split_time_terms("AFTER:3d") == ("", "3d", None)
    assert split_time_terms("x after:1d after:2d") == ("x", "2d", None)  # the last one counts
    assert split_time_terms("hereafter:1d") == ("hereafter:1d", None, None)


def test_an_after_term_still_waiting_for_its_time_is_not_searched_as_a_word():
    """Typing ``docker after:2026-10-01`` passes through ``docker after:``: that keystroke
    searches docker and says the term needs a time, rather than docker AND after."""
    from hermes_state.listing.narrow import NO_NARROW
    from hermes_state.timewindow import split_time_terms, windowed

    assert split_time_terms("docker after:") == ("docker", "", None)
    read = windowed("docker after:", NO_NARROW, NOW)
    assert read.text == "docker" and read.narrow == NO_NARROW
    assert read.problem is not None and read.problem.startswith("after: needs a time")
    both = windowed("docker after:7d before:", NO_NARROW, NOW)
    assert both.text == "docker" and both.problem.startswith("before: needs a time")
    # Quoted, it is a phrase's text.
    assert windowed('"retry after:" x', NO_NARROW, NOW).text == '"retry after:" x'


def test_a_window_typed_in_the_picker_is_a_start_or_a_range():
    from hermes_state.timewindow import parse_window

    assert parse_window("3d", NOW) == (pytest.approx(NOW - 3 * 86400), None)
    since, until = parse_window("2026-03-01..2026-03-15", NOW)
    assert datetime.fromtimestamp(since) == datetime(2026, 3, 1)
    assert datetime.fromtimestamp(until).date() == datetime(2026, 3, 15).date()  # the whole last day
    assert parse_window("..2026-03-15", NOW)[0] is None
    assert parse_window("1w..", NOW) == (pytest.approx(NOW - 7 * 86400), None)
    for bad in ("..", "2026-03-15..2026-03-01", "3m", "soon"):
        with pytest.raises(TimeParseError):
            parse_window(bad, NOW)
