"""The lane view's sentences (GW-13): ``hermes_tui.render.lanes`` over ``describe_lane``.

Moved from tests/state/test_gateway.py when the wording left ``hermes_state``: the store gives
the facts of a lane (``LaneInfo``, ``ResetOutlook``), the UI words them. Assertions unchanged;
where a test read a sentence off ``LaneInfo`` it now reads it off ``lane_text(LaneInfo)``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from hermes_state.gateway import (
    GatewayConfig,
    Platform,
    SessionEntry,
    SessionResetPolicy,
    SessionSource,
    build_session_key,
    describe_lane,
    gateway_config_from_mapping,
    reset_outlook,
)
from hermes_tui.render.lanes import (
    BACKGROUND_WORK_CAVEAT,
    format_duration,
    format_next_reset,
    lane_flags,
    lane_text,
)

T0 = datetime(2025, 3, 5, 9, 15, 23)
NOW = datetime(2025, 3, 5, 12, 0)

BOTH = SessionResetPolicy()
IDLE = SessionResetPolicy(mode="idle")
DAILY = SessionResetPolicy(mode="daily")
NONE = SessionResetPolicy(mode="none")


def src(platform: str = "telegram", chat_id: str = "12345", **kw) -> SessionSource:
    return SessionSource(platform=Platform(platform), chat_id=chat_id, **kw)


ALICE = src("telegram", "12345", user_id="u1", user_name="Alice", chat_name="Alice chat")


def entry(updated_at: datetime = T0, **kw) -> SessionEntry:
    values = dict(
        session_key="agent:main:telegram:dm:12345",
        session_id="20250305_091523_a1b2c3d4",
        created_at=updated_at,
        updated_at=updated_at,
    )
    values.update(kw)
    return SessionEntry(**values)


def full_entry() -> SessionEntry:
    return SessionEntry(
        session_key="agent:main:discord:group:12345:thread_678",
        session_id="20250305_091523_a1b2c3d4",
        created_at=datetime(2025, 3, 5, 9, 15, 23, 123456),
        updated_at=datetime(2025, 3, 5, 10, 0, 0),
        origin=src("discord", "12345", chat_type="group", thread_id="thread_678",
                   user_id="user_abc", guild_id="g1"),
        display_name="dev",
        platform=Platform.DISCORD,
        chat_type="group",
        input_tokens=10, output_tokens=20, cache_read_tokens=3, cache_write_tokens=4,
        total_tokens=30, last_prompt_tokens=9, estimated_cost_usd=0.125, cost_status="estimated",
        was_auto_reset=True, auto_reset_reason="idle", reset_had_activity=True,
        is_fresh_reset=True, expiry_finalized=True, suspended=True, resume_pending=True,
        resume_reason="restart_timeout", last_resume_marked_at=datetime(2025, 3, 5, 10, 1),
    )


@pytest.mark.parametrize(
    "delta, text",
    [
        (timedelta(seconds=0), "<1m"),
        (timedelta(seconds=59), "<1m"),
        (timedelta(minutes=1), "1m"),
        (timedelta(minutes=59, seconds=59), "59m"),
        (timedelta(hours=2, minutes=30), "2h 30m"),
        (timedelta(hours=3), "3h"),
        (timedelta(hours=7, minutes=50), "7h"),
        (timedelta(hours=23, minutes=59), "23h"),
        (timedelta(days=1, hours=4), "1d 4h"),
        (timedelta(days=5, hours=4), "5d"),
        (timedelta(seconds=-5), "<1m"),
    ],
)
def test_gw13_format_duration(delta, text):
    assert format_duration(delta) == text


def test_gw13_resets_in_3h_idle():
    p = SessionResetPolicy(mode="idle", idle_minutes=240)
    e = entry(NOW - timedelta(hours=1))
    assert format_next_reset(reset_outlook(e, p, NOW)) == ("resets in 3h (idle)", BACKGROUND_WORK_CAVEAT)


def test_gw13_resets_at_daily_boundary():
    e = entry(NOW)
    assert format_next_reset(reset_outlook(e, BOTH, NOW)) == ("resets in 16h (daily)", BACKGROUND_WORK_CAVEAT)


def test_gw13_overdue_resets_on_next_message():
    e = entry(NOW - timedelta(days=2))
    assert format_next_reset(reset_outlook(e, IDLE, NOW))[0] == "resets on next message (idle)"
    # exactly at the idle edge it is not yet due (strict comparison)
    e = entry(NOW - timedelta(days=1))
    assert format_next_reset(reset_outlook(e, IDLE, NOW))[0] == "resets in <1m (idle)"
    # at the daily boundary itself it is due
    e = entry(datetime(2025, 3, 5, 3, 0))
    outlook = reset_outlook(e, DAILY, datetime(2025, 3, 5, 4, 0))
    assert format_next_reset(outlook)[0] == "resets on next message (daily)"


def test_gw13_never_suspended_and_resume_pending_texts():
    assert format_next_reset(reset_outlook(entry(), NONE, NOW)) == ("never resets", None)
    assert format_next_reset(reset_outlook(entry(suspended=True), BOTH, NOW)) == (
        "new session on next message (suspended)", None)
    assert format_next_reset(reset_outlook(entry(resume_pending=True), BOTH, NOW)) == (
        "keeps its session on next message (resume pending)", None)


def test_gw13_flags_text():
    assert lane_flags(entry()) == []
    assert lane_flags(entry(resume_pending=True, resume_reason="restart_timeout")) == [
        "resume pending (restart_timeout)"]
    assert lane_flags(entry(resume_pending=True)) == ["resume pending"]
    assert lane_flags(entry(suspended=True)) == ["suspended"]
    assert lane_flags(full_entry()) == [
        "suspended", "resume pending (restart_timeout)", "auto-reset (idle, had activity)",
        "fresh reset", "expiry finalized"]


def test_gw13_describe_lane_per_user_group():
    origin = src("telegram", "-10012345", chat_type="group", chat_name="Team", user_id="user_abc")
    e = entry(NOW - timedelta(hours=1), origin=origin, platform=Platform.TELEGRAM, chat_type="group",
              session_key=build_session_key(origin), display_name="Team", total_tokens=99,
              estimated_cost_usd=0.5, resume_pending=True, resume_reason="restart_timeout")
    cfg = gateway_config_from_mapping({"session_reset": {"mode": "idle", "idle_minutes": 240}})
    info = describe_lane(e, cfg, NOW)
    words = lane_text(info)
    assert info.session_key == "agent:main:telegram:group:-10012345:user_abc"
    assert words.description == "group: Team"
    assert info.platform == "telegram" and info.chat_type == "group"
    assert info.shared is False and words.sharing_text == "per-user"
    assert words.flags_text == "resume pending (restart_timeout)"
    assert info.next_reset_reason == "resume_pending"
    assert info.total_tokens == 99 and info.estimated_cost_usd == 0.5


def test_gw13_describe_lane_shared_thread_and_reset_sentence():
    origin = src("discord", "12345", chat_type="group", thread_id="thread_678", user_id="u")
    e = entry(NOW - timedelta(hours=1), origin=origin, platform=Platform.DISCORD, chat_type="group")
    cfg = gateway_config_from_mapping({"session_reset": {"mode": "idle", "idle_minutes": 240}})
    info = describe_lane(e, cfg, NOW)
    words = lane_text(info)
    assert words.description == "group: 12345, thread: thread_678"
    assert info.shared is True and words.sharing_text == "shared"
    assert info.next_reset_at == NOW + timedelta(hours=3)
    assert words.next_reset_sentence == "resets in 3h (idle) unless background work is running"
    assert info.flags == () and words.flags_text == ""
    # configured isolation flags are honoured
    cfg2 = GatewayConfig(thread_sessions_per_user=True)
    assert lane_text(describe_lane(e, cfg2, NOW)).sharing_text == "per-user"


def test_gw13_describe_lane_dm_and_missing_origin():
    words = lane_text(describe_lane(entry(origin=ALICE, platform=Platform.TELEGRAM), None, NOW))
    assert words.description == "DM with Alice" and words.sharing_text == "private (DM)"
    bare = entry(chat_type="group", display_name="Ops", platform=Platform.SLACK)
    info = describe_lane(bare, None, NOW)
    words = lane_text(info)
    assert words.description == "Ops" and info.shared is None and words.sharing_text == "unknown"
    assert lane_text(describe_lane(entry(), None, NOW)).sharing_text == "private (DM)"


def test_gw13_describe_lane_uses_platform_policy():
    cfg = gateway_config_from_mapping({"platforms": {"slack": {"session_reset": {"mode": "none"}}}})
    e = entry(platform=Platform.SLACK, chat_type="channel")
    assert lane_text(describe_lane(e, cfg, NOW)).next_reset_text == "never resets"


def test_gw13_flags_text_reads_the_same_off_a_lane():
    # The lane view words LaneInfo; its flags read as they do off the entry itself.
    info = describe_lane(full_entry(), None, NOW)
    assert lane_flags(info) == lane_flags(full_entry())
    assert info.flags == ("suspended", "resume_pending", "was_auto_reset", "is_fresh_reset",
                          "expiry_finalized")
