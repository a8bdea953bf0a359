"""Tests for hermes_state.gateway (SPEC §14, GW-1 .. GW-13).

Every key-format and reset-policy example in the spec is a test here; time is always a
fixed naive-local datetime or an injected clock.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_state import gateway as gw
from hermes_state.gateway import (
    GatewayConfig,
    GatewaySessionStore,
    Platform,
    SessionEntry,
    SessionResetPolicy,
    SessionSource,
    SessionsIndexWatcher,
    build_session_key,
    canonical_whatsapp_identifier,
    describe_lane,
    evaluate_reset,
    gateway_config_from_mapping,
    get_reset_policy,
    is_gateway_session_id,
    is_shared_multi_user_session,
    load_gateway_config,
    load_sessions_index,
    next_reset,
    reset_outlook,
    save_sessions_index,
    sessions_index_path,
)

T0 = datetime(2025, 3, 5, 9, 15, 23)


def src(platform: str = "telegram", chat_id: str = "12345", **kw) -> SessionSource:
    return SessionSource(platform=Platform(platform), chat_id=chat_id, **kw)


def entry(updated_at: datetime = T0, **kw) -> SessionEntry:
    values = dict(
        session_key="agent:main:telegram:dm:12345",
        session_id="20250305_091523_a1b2c3d4",
        created_at=updated_at,
        updated_at=updated_at,
    )
    values.update(kw)
    return SessionEntry(**values)


class Clock:
    """Injected clock the tests move by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw) -> None:
        self.now += timedelta(**kw)


# ---------------------------------------------------------------------------------------
# GW-1 SessionSource fields
# ---------------------------------------------------------------------------------------


def test_gw1_defaults():
    s = SessionSource(platform=Platform.TELEGRAM, chat_id="1")
    assert s.chat_type == "dm"
    assert s.chat_name is s.user_id is s.user_name is s.thread_id is s.chat_topic is None
    assert s.user_id_alt is s.chat_id_alt is s.guild_id is s.parent_chat_id is None
    assert s.message_id is None
    assert s.is_bot is False and s.role_authorized is False


def test_gw1_source_is_immutable():
    s = src()
    with pytest.raises(Exception):
        s.chat_id = "other"  # type: ignore[misc]


def test_gw1_numeric_ids_become_text():
    s = SessionSource(platform="telegram", chat_id=-10012345, user_id=42)
    assert s.chat_id == "-10012345" and s.user_id == "42"
    assert s.platform is Platform.TELEGRAM


def test_gw1_platform_values():
    for value in ("local", "telegram", "discord", "slack", "signal", "whatsapp", "matrix"):
        assert Platform(value).value == value
    # Spelling variants of the documented value are accepted, unknown values are not.
    assert Platform("api_server") is Platform.API_SERVER
    assert Platform("Telegram") is Platform.TELEGRAM
    with pytest.raises(ValueError):
        Platform("myspace")


# ---------------------------------------------------------------------------------------
# GW-2 description
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, expected",
    [
        (src(user_name="Alice", user_id="u1"), "DM with Alice"),
        (src(user_id="u1"), "DM with u1"),
        (src(), "DM with user"),
        (src(chat_id="-100", chat_type="group", chat_name="My Group", thread_id="12345"),
         "group: My Group, thread: 12345"),
        (src(chat_id="-100", chat_type="group"), "group: -100"),
        (src("slack", "C12345", chat_type="channel"), "channel: C12345"),
        (src("slack", "C12345", chat_type="channel", chat_name="general"), "channel: general"),
        (src("slack", "T1", chat_type="thread", chat_name="Design"), "Design"),
        (src("slack", "T1", chat_type="thread"), "T1"),
        (src(user_name="Bob", thread_id="t9"), "DM with Bob, thread: t9"),
        (src("local", "cli", user_name="Alice", thread_id="x"), "CLI terminal"),
    ],
)
def test_gw2_description(source, expected):
    assert source.description == expected


# ---------------------------------------------------------------------------------------
# GW-3 SessionSource serialisation
# ---------------------------------------------------------------------------------------


def test_gw3_to_dict_core_keys_always_present():
    assert src().to_dict() == {
        "platform": "telegram",
        "chat_id": "12345",
        "chat_name": None,
        "chat_type": "dm",
        "user_id": None,
        "user_name": None,
        "thread_id": None,
        "chat_topic": None,
    }


def test_gw3_to_dict_optional_keys_only_when_truthy():
    d = src(user_id_alt="uuid-1", chat_id_alt="", guild_id="g1", parent_chat_id=None,
            message_id="m7", is_bot=True, role_authorized=True).to_dict()
    assert d["user_id_alt"] == "uuid-1"
    assert d["guild_id"] == "g1"
    assert d["message_id"] == "m7"
    assert "chat_id_alt" not in d and "parent_chat_id" not in d
    # is_bot / role_authorized are per-message facts, not part of the serialised form.
    assert "is_bot" not in d and "role_authorized" not in d


def test_gw3_round_trip():
    s = src("discord", "123", chat_type="group", chat_name="dev", user_id="u", user_name="U",
            thread_id="t", chat_topic="topic", user_id_alt="alt", chat_id_alt="calt",
            guild_id="g", parent_chat_id="p", message_id="m")
    assert SessionSource.from_dict(s.to_dict()) == s


def test_gw3_from_dict_ignores_unknown_and_defaults_missing():
    s = SessionSource.from_dict({"platform": "slack", "chat_id": "C1", "future_field": [1, 2]})
    assert s.chat_type == "dm"
    assert s.user_id is None
    s = SessionSource.from_dict({"platform": "slack", "chat_id": "C1", "chat_type": None})
    assert s.chat_type == "dm"
    s = SessionSource.from_dict({"platform": "slack"})
    assert s.chat_id == ""


def test_gw3_from_dict_unknown_platform_raises_value_error():
    with pytest.raises(ValueError):
        SessionSource.from_dict({"platform": "myspace", "chat_id": "1"})
    with pytest.raises(ValueError):
        SessionSource.from_dict({"chat_id": "1"})
    with pytest.raises(ValueError):
        SessionSource.from_dict(["not", "a", "mapping"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# GW-4 SessionEntry
# ---------------------------------------------------------------------------------------


def test_gw4_entry_defaults():
    e = entry()
    assert e.origin is None and e.display_name is None and e.platform is None
    assert e.chat_type == "dm"
    assert (e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
            e.total_tokens, e.last_prompt_tokens) == (0, 0, 0, 0, 0, 0)
    assert e.estimated_cost_usd == 0.0 and e.cost_status == "unknown"
    assert not (e.was_auto_reset or e.reset_had_activity or e.is_fresh_reset
                or e.expiry_finalized or e.suspended or e.resume_pending)
    assert e.auto_reset_reason is e.resume_reason is e.last_resume_marked_at is None


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


def test_gw4_round_trip_all_fields():
    e = full_entry()
    d = e.to_dict()
    assert SessionEntry.from_dict(d) == e
    assert SessionEntry.from_dict(json.loads(json.dumps(d))) == e


def test_gw4_datetimes_are_naive_iso_strings():
    d = full_entry().to_dict()
    assert d["created_at"] == "2025-03-05T09:15:23.123456"
    assert d["updated_at"] == "2025-03-05T10:00:00"
    assert d["last_resume_marked_at"] == "2025-03-05T10:01:00"
    assert d["platform"] == "discord"
    assert d["origin"]["platform"] == "discord"
    assert "origin" not in entry().to_dict()


def test_gw4_legacy_memory_flushed_means_expiry_finalized():
    base = entry().to_dict()
    del base["expiry_finalized"]
    del base["memory_flushed"]
    assert SessionEntry.from_dict({**base, "memory_flushed": True}).expiry_finalized is True
    assert SessionEntry.from_dict(base).expiry_finalized is False
    assert SessionEntry.from_dict({**base, "expiry_finalized": True,
                                   "memory_flushed": False}).expiry_finalized is True
    # Written under both names so legacy readers agree.
    d = entry(expiry_finalized=True).to_dict()
    assert d["expiry_finalized"] is True and d["memory_flushed"] is True


def test_gw4_from_dict_tolerates_nulls_unknown_keys_and_aware_times():
    d = {
        "session_id": "20250305_091523_a1b2c3d4",
        "created_at": "2025-03-05T09:15:23Z",
        "updated_at": "2025-03-05T09:15:23+00:00",
        "input_tokens": None,
        "chat_type": None,
        "cost_status": None,
        "platform": "telegram",
        "brand_new_field": {"x": 1},
    }
    e = SessionEntry.from_dict(d, key="agent:main:telegram:dm:1")
    assert e.session_key == "agent:main:telegram:dm:1"
    assert e.input_tokens == 0 and e.chat_type == "dm" and e.cost_status == "unknown"
    assert e.created_at.tzinfo is None
    expected = datetime(2025, 3, 5, 9, 15, 23).replace(
        tzinfo=__import__("datetime").timezone.utc).astimezone().replace(tzinfo=None)
    assert e.created_at == expected == e.updated_at


@pytest.mark.parametrize(
    "patch",
    [
        {"platform": "myspace"},
        {"created_at": "yesterday"},
        {"session_id": None},
        {"origin": {"platform": "myspace", "chat_id": "1"}},
        {"total_tokens": "lots"},
    ],
)
def test_gw4_unparseable_entry_raises_value_error(patch):
    with pytest.raises(ValueError):
        SessionEntry.from_dict({**entry().to_dict(), **patch})


def test_gw4_generated_session_id_format():
    sid = gw.generate_session_id(T0)
    assert re.fullmatch(r"20250305_091523_[0-9a-f]{8}", sid)
    assert is_gateway_session_id(sid)
    assert not is_gateway_session_id("20250305_091523_a1b2c3")


# ---------------------------------------------------------------------------------------
# GW-6 shared vs per-user
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chat_type, thread, group_pu, thread_pu, shared",
    [
        ("dm", None, True, False, False),
        ("dm", "t", False, False, False),
        ("group", None, True, False, False),
        ("group", None, False, False, True),
        ("channel", None, False, True, True),
        ("group", "t", True, False, True),
        ("group", "t", True, True, False),
        ("group", "t", False, True, False),
        ("thread", "t", True, False, True),
    ],
)
def test_gw6_is_shared_multi_user_session(chat_type, thread, group_pu, thread_pu, shared):
    s = src(chat_type=chat_type, thread_id=thread, user_id="u")
    assert is_shared_multi_user_session(s, group_pu, thread_pu) is shared


def test_gw6_defaults():
    assert is_shared_multi_user_session(src(chat_type="group")) is False
    assert is_shared_multi_user_session(src(chat_type="group", thread_id="t")) is True


# ---------------------------------------------------------------------------------------
# GW-7 session keys — one test per example in the spec table
# ---------------------------------------------------------------------------------------


def test_gw7_telegram_dm_key():
    assert build_session_key(src("telegram", "12345")) == "agent:main:telegram:dm:12345"


def test_gw7_telegram_dm_thread_key():
    assert (build_session_key(src("telegram", "12345", thread_id="thread_678"))
            == "agent:main:telegram:dm:12345:thread_678")


def test_gw7_signal_dm_without_chat_id_uses_participant():
    assert build_session_key(src("signal", "", user_id="user_abc")) == "agent:main:signal:dm:user_abc"


def test_gw7_dm_participant_prefers_user_id_alt():
    s = src("signal", "", user_id="+4912345", user_id_alt="uuid-1")
    assert build_session_key(s) == "agent:main:signal:dm:uuid-1"


def test_gw7_telegram_dm_without_chat_or_user_key():
    assert build_session_key(src("telegram", "")) == "agent:main:telegram:dm"


def test_gw7_dm_without_chat_or_user_but_thread_ends_with_thread():
    assert build_session_key(src("telegram", "", thread_id="t1")) == "agent:main:telegram:dm:t1"


def test_gw7_dm_chat_id_wins_over_participant():
    assert build_session_key(src("telegram", "12345", user_id="u9")) == "agent:main:telegram:dm:12345"


def test_gw7_whatsapp_dm_key():
    s = src("whatsapp", "60123456789@s.whatsapp.net")
    assert build_session_key(s) == "agent:main:whatsapp:dm:60123456789"


def test_gw7_telegram_group_without_user_key():
    assert (build_session_key(src("telegram", "-10012345", chat_type="group"))
            == "agent:main:telegram:group:-10012345")


def test_gw7_telegram_group_shared_when_group_sessions_per_user_false():
    s = src("telegram", "-10012345", chat_type="group", user_id="user_abc")
    assert (build_session_key(s, group_sessions_per_user=False)
            == "agent:main:telegram:group:-10012345")


def test_gw7_telegram_group_per_user_key():
    s = src("telegram", "-10012345", chat_type="group", user_id="user_abc")
    assert build_session_key(s) == "agent:main:telegram:group:-10012345:user_abc"


def test_gw7_group_participant_prefers_user_id_alt():
    s = src("signal", "grp", chat_type="group", user_id="+49", user_id_alt="uuid-1")
    assert build_session_key(s) == "agent:main:signal:group:grp:uuid-1"


def test_gw7_discord_shared_thread_key():
    s = src("discord", "12345", chat_type="group", thread_id="thread_678", user_id="user_abc")
    assert build_session_key(s) == "agent:main:discord:group:12345:thread_678"


def test_gw7_discord_per_user_thread_key():
    s = src("discord", "12345", chat_type="group", thread_id="thread_678", user_id="user_abc")
    assert (build_session_key(s, thread_sessions_per_user=True)
            == "agent:main:discord:group:12345:thread_678:user_abc")


def test_gw7_slack_channel_without_user_key():
    assert (build_session_key(src("slack", "C12345", chat_type="channel"))
            == "agent:main:slack:channel:C12345")


def test_gw7_slack_channel_per_user_key():
    s = src("slack", "C12345", chat_type="channel", user_id="U1")
    assert build_session_key(s) == "agent:main:slack:channel:C12345:U1"


def test_gw7_whatsapp_group_member_canonicalised():
    s = src("whatsapp", "G@g.us", chat_type="group", user_id="60123456789:47@s.whatsapp.net")
    assert build_session_key(s) == "agent:main:whatsapp:group:G@g.us:60123456789"


def test_gw7_corner_case_group_shared_thread_per_user_key_has_no_participant():
    s = src("discord", "12345", chat_type="group", thread_id="thread_678", user_id="user_abc")
    key = build_session_key(s, group_sessions_per_user=False, thread_sessions_per_user=True)
    assert key == "agent:main:discord:group:12345:thread_678"
    # ... although GW-6 calls the lane "not shared" (upstream behaviour, kept on purpose).
    assert is_shared_multi_user_session(s, False, True) is False


def test_gw7_non_dm_without_chat_id_or_thread():
    s = src("slack", "", chat_type="channel", user_id="U1")
    assert build_session_key(s) == "agent:main:slack:channel:U1"
    assert build_session_key(src("slack", "", chat_type="channel")) == "agent:main:slack:channel"


def test_gw7_chat_ids_may_contain_colons():
    s = src("matrix", "!room:example.org", chat_type="group", user_id="@bob:example.org")
    key = build_session_key(s)
    assert key == "agent:main:matrix:group:!room:example.org:@bob:example.org"
    # Only the platform and chat type positions are reliable.
    assert key.split(":")[2:4] == ["matrix", "group"]


# ---------------------------------------------------------------------------------------
# GW-8 WhatsApp canonicalisation
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, canonical",
    [
        ("60123456789:47@s.whatsapp.net", "60123456789"),
        ("60123456789@s.whatsapp.net", "60123456789"),
        ("+60123456789", "60123456789"),
        ("  +60123456789@s.whatsapp.net  ", "60123456789"),
        ("++60123", "+60123"),  # only one leading '+' is dropped
        ("12345@lid", "12345"),
        ("60123456789", "60123456789"),
        ("@s.whatsapp.net", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_gw8_canonical_whatsapp_identifier(raw, canonical):
    assert canonical_whatsapp_identifier(raw) == canonical


def test_gw8_device_suffix_and_plain_jid_share_a_lane():
    a = src("whatsapp", "60123456789:47@s.whatsapp.net")
    b = src("whatsapp", "+60123456789@s.whatsapp.net")
    assert build_session_key(a) == build_session_key(b)


def test_gw8_empty_canonical_participant_keeps_original():
    s = src("whatsapp", "G@g.us", chat_type="group", user_id="@s.whatsapp.net")
    assert build_session_key(s) == "agent:main:whatsapp:group:G@g.us:@s.whatsapp.net"


def test_gw8_empty_canonical_dm_chat_id_counts_as_absent():
    s = src("whatsapp", "@s.whatsapp.net", user_id="60123456789@s.whatsapp.net")
    assert build_session_key(s) == "agent:main:whatsapp:dm:60123456789"
    assert build_session_key(src("whatsapp", "@s.whatsapp.net")) == "agent:main:whatsapp:dm"


def test_gw8_only_whatsapp_is_canonicalised():
    s = src("signal", "+4912345@x")
    assert build_session_key(s) == "agent:main:signal:dm:+4912345@x"


# ---------------------------------------------------------------------------------------
# GW-9 reset evaluation
# ---------------------------------------------------------------------------------------

BOTH = SessionResetPolicy()
IDLE = SessionResetPolicy(mode="idle")
DAILY = SessionResetPolicy(mode="daily")
NONE = SessionResetPolicy(mode="none")


def test_gw9_policy_defaults():
    p = SessionResetPolicy()
    assert (p.mode, p.at_hour, p.idle_minutes, p.notify) == ("both", 4, 1440, True)


def test_gw9_idle_exactly_at_edge_does_not_reset():
    e = entry(datetime(2025, 3, 5, 12, 0))
    assert evaluate_reset(e, IDLE, datetime(2025, 3, 6, 12, 0)) is None


def test_gw9_idle_just_past_edge_resets():
    e = entry(datetime(2025, 3, 5, 12, 0))
    assert evaluate_reset(e, IDLE, datetime(2025, 3, 6, 12, 0, 0, 1)) == "idle"


def test_gw9_idle_custom_minutes():
    e = entry(datetime(2025, 3, 5, 12, 0))
    p = SessionResetPolicy(mode="idle", idle_minutes=30)
    assert evaluate_reset(e, p, datetime(2025, 3, 5, 12, 30)) is None
    assert evaluate_reset(e, p, datetime(2025, 3, 5, 12, 31)) == "idle"


def test_gw9_daily_after_reset_hour_same_day():
    # Touched 03:59, now 04:00 → the 04:00 boundary passed in between.
    e = entry(datetime(2025, 3, 5, 3, 59))
    assert evaluate_reset(e, DAILY, datetime(2025, 3, 5, 4, 0)) == "daily"


def test_gw9_daily_before_reset_hour_uses_yesterdays_boundary():
    # Now 03:00: today's 04:00 has not happened, boundary is yesterday 04:00.
    assert evaluate_reset(entry(datetime(2025, 3, 4, 23, 0)), DAILY,
                          datetime(2025, 3, 5, 3, 0)) is None
    assert evaluate_reset(entry(datetime(2025, 3, 4, 3, 59)), DAILY,
                          datetime(2025, 3, 5, 3, 0)) == "daily"


def test_gw9_daily_updated_exactly_at_boundary_does_not_reset():
    e = entry(datetime(2025, 3, 5, 4, 0))
    assert evaluate_reset(e, DAILY, datetime(2025, 3, 5, 23, 0)) is None
    assert evaluate_reset(e, DAILY, datetime(2025, 3, 6, 4, 0)) == "daily"


def test_gw9_daily_midnight_hour():
    p = SessionResetPolicy(mode="daily", at_hour=0)
    assert evaluate_reset(entry(datetime(2025, 3, 4, 23, 59)), p, datetime(2025, 3, 5, 0, 0)) == "daily"
    assert evaluate_reset(entry(datetime(2025, 3, 5, 0, 0)), p, datetime(2025, 3, 5, 23, 59)) is None


def test_gw9_idle_wins_when_both_apply():
    e = entry(datetime(2025, 3, 1, 12, 0))
    assert evaluate_reset(e, BOTH, datetime(2025, 3, 5, 12, 0)) == "idle"


def test_gw9_both_daily_when_not_idle():
    e = entry(datetime(2025, 3, 5, 3, 0))
    assert evaluate_reset(e, BOTH, datetime(2025, 3, 5, 5, 0)) == "daily"


def test_gw9_idle_mode_ignores_daily_boundary():
    e = entry(datetime(2025, 3, 5, 3, 0))
    assert evaluate_reset(e, IDLE, datetime(2025, 3, 5, 5, 0)) is None


def test_gw9_daily_mode_ignores_idle():
    e = entry(datetime(2025, 3, 5, 4, 30))
    assert evaluate_reset(e, DAILY, datetime(2025, 3, 6, 3, 59)) is None


def test_gw9_mode_none_never_resets():
    e = entry(datetime(2020, 1, 1))
    assert evaluate_reset(e, NONE, datetime(2025, 3, 5, 12, 0)) is None


def test_gw9_active_background_processes_prevent_reset():
    e = entry(datetime(2020, 1, 1))
    assert evaluate_reset(e, BOTH, datetime(2025, 3, 5), has_active_processes=True) is None


def test_gw9_policy_from_dict_is_field_tolerant():
    p = SessionResetPolicy.from_dict({"mode": "Idle", "at_hour": 25, "idle_minutes": "90",
                                      "notify": "no", "extra": 1})
    assert (p.mode, p.at_hour, p.idle_minutes, p.notify) == ("idle", 4, 90, False)
    assert SessionResetPolicy.from_dict({"mode": "sometimes"}).mode == "both"
    assert SessionResetPolicy.from_dict(None) == SessionResetPolicy()
    assert SessionResetPolicy.from_dict("daily") == SessionResetPolicy()
    assert SessionResetPolicy.from_dict({"at_hour": True}).at_hour == 4


_times = st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2026, 1, 1))


@settings(max_examples=300, deadline=None)
@given(updated=_times, delta=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=3)),
       at_hour=st.integers(0, 23), idle=st.integers(0, 3000))
def test_gw9_gw11_evaluation_agrees_with_predicted_deadline(updated, delta, at_hour, idle):
    now = updated + delta
    e = entry(updated)
    idle_p = SessionResetPolicy(mode="idle", idle_minutes=idle, at_hour=at_hour)
    daily_p = SessionResetPolicy(mode="daily", idle_minutes=idle, at_hour=at_hour)
    both_p = SessionResetPolicy(mode="both", idle_minutes=idle, at_hour=at_hour)
    idle_at, _ = next_reset(e, idle_p)
    daily_at, _ = next_reset(e, daily_p)
    assert (evaluate_reset(e, idle_p, now) == "idle") == (now > idle_at)
    assert (evaluate_reset(e, daily_p, now) == "daily") == (now >= daily_at)
    expected = "idle" if now > idle_at else ("daily" if now >= daily_at else None)
    assert evaluate_reset(e, both_p, now) == expected


# ---------------------------------------------------------------------------------------
# GW-10 policy lookup and config loading
# ---------------------------------------------------------------------------------------

CONFIG_YAML = """\
session_reset:
  mode: both
  at_hour: 5
  idle_minutes: 600
  notify: false
  group:
    mode: none
platforms:
  telegram:
    session_reset:
      mode: idle
      idle_minutes: 60
  slack:
    token: xyz
  myspace:
    session_reset:
      mode: daily
reset_by_type:
  thread:
    mode: daily
    at_hour: 2
group_sessions_per_user: false
thread_sessions_per_user: true
session_store_max_age_days: 30
"""


def test_gw10_platform_override_beats_type_override_beats_default(tmp_path):
    (tmp_path / "config.yaml").write_text(CONFIG_YAML)
    cfg = load_gateway_config(tmp_path)
    assert cfg.default_reset_policy == SessionResetPolicy(mode="both", at_hour=5,
                                                          idle_minutes=600, notify=False)
    # per-platform wins even over a per-type override for the same chat type
    assert cfg.get_reset_policy(Platform.TELEGRAM, "group") == SessionResetPolicy(
        mode="idle", idle_minutes=60)
    assert cfg.get_reset_policy("telegram", "dm").mode == "idle"
    # per-type (nested in session_reset, and top-level reset_by_type)
    assert cfg.get_reset_policy(Platform.DISCORD, "group").mode == "none"
    assert cfg.get_reset_policy(Platform.DISCORD, "thread") == SessionResetPolicy(
        mode="daily", at_hour=2)
    # default
    assert cfg.get_reset_policy(Platform.DISCORD, "dm") == cfg.default_reset_policy
    assert cfg.get_reset_policy(None, None) == cfg.default_reset_policy
    assert get_reset_policy(Platform.TELEGRAM, "dm", cfg).idle_minutes == 60
    # a platform without session_reset, or an unknown one, adds no override
    assert set(cfg.reset_by_platform) == {Platform.TELEGRAM}
    assert cfg.group_sessions_per_user is False and cfg.thread_sessions_per_user is True
    assert cfg.session_store_max_age_days == 30


def test_gw10_overrides_fill_missing_fields_with_upstream_defaults():
    cfg = gateway_config_from_mapping(
        {"session_reset": {"at_hour": 7}, "platforms": {"slack": {"session_reset": {"mode": "daily"}}}})
    assert cfg.get_reset_policy("slack", "dm").at_hour == 4
    assert cfg.get_reset_policy("discord", "dm").at_hour == 7


def test_gw10_module_level_default_without_config():
    assert get_reset_policy("telegram", "dm") == SessionResetPolicy()


@pytest.mark.parametrize(
    "content",
    [None, "", "::: not yaml: [", "- a\n- list\n", "just a string", "session_reset: 7\nplatforms: []\n",
     b"\xff\xfe\x00binary"],
)
def test_gw10_missing_or_invalid_config_gives_defaults(tmp_path, content):
    if isinstance(content, bytes):
        (tmp_path / "config.yaml").write_bytes(content)
    elif content is not None:
        (tmp_path / "config.yaml").write_text(content)
    cfg = load_gateway_config(tmp_path)
    assert cfg == GatewayConfig()


def test_gw10_config_path_is_a_directory(tmp_path):
    (tmp_path / "config.yaml").mkdir()
    assert load_gateway_config(tmp_path) == GatewayConfig()


# ---------------------------------------------------------------------------------------
# GW-11 next reset
# ---------------------------------------------------------------------------------------


def test_gw11_idle_mode_next_reset():
    e = entry(datetime(2025, 3, 5, 12, 0))
    assert next_reset(e, IDLE) == (datetime(2025, 3, 6, 12, 0), "idle")


def test_gw11_daily_mode_next_boundary_same_day_or_tomorrow():
    assert next_reset(entry(datetime(2025, 3, 5, 3, 0)), DAILY) == (datetime(2025, 3, 5, 4, 0), "daily")
    assert next_reset(entry(datetime(2025, 3, 5, 12, 0)), DAILY) == (datetime(2025, 3, 6, 4, 0), "daily")
    # strictly after updated_at
    assert next_reset(entry(datetime(2025, 3, 5, 4, 0)), DAILY) == (datetime(2025, 3, 6, 4, 0), "daily")


def test_gw11_both_takes_the_earlier():
    assert next_reset(entry(datetime(2025, 3, 5, 12, 0)), BOTH) == (datetime(2025, 3, 6, 4, 0), "daily")
    p = SessionResetPolicy(idle_minutes=60)
    assert next_reset(entry(datetime(2025, 3, 5, 12, 0)), p) == (datetime(2025, 3, 5, 13, 0), "idle")


def test_gw11_both_tie_reports_idle():
    p = SessionResetPolicy(idle_minutes=60)
    assert next_reset(entry(datetime(2025, 3, 5, 3, 0)), p) == (datetime(2025, 3, 5, 4, 0), "idle")


def test_gw11_none_never():
    assert next_reset(entry(), NONE) == (None, None)


def test_gw11_suspended_and_resume_pending_override_policy():
    assert next_reset(entry(suspended=True, resume_pending=True), BOTH) == (None, "suspended")
    assert next_reset(entry(resume_pending=True), BOTH) == (None, "resume_pending")


# ---------------------------------------------------------------------------------------
# GW-12 sessions.json
# ---------------------------------------------------------------------------------------


def test_gw12_missing_file_means_no_lanes(tmp_path):
    assert load_sessions_index(tmp_path) == {}
    assert load_sessions_index(tmp_path / "does-not-exist") == {}


@pytest.mark.parametrize("text", ["", "{", '{"agent:main:telegram:dm:1": {"session_id": "x", "cr',
                                  "[]", "null", "42", "not json"])
def test_gw12_truncated_or_invalid_file_means_no_lanes(tmp_path, text):
    sessions_index_path(tmp_path).write_text(text)
    assert load_sessions_index(tmp_path) == {}


def test_gw12_undecodable_file_means_no_lanes(tmp_path):
    sessions_index_path(tmp_path).write_bytes(b"\xff\xfe{\x00")
    assert load_sessions_index(tmp_path) == {}


def test_gw12_round_trip_and_format(tmp_path):
    a, b = full_entry(), entry(platform=Platform.TELEGRAM, origin=src())
    path = save_sessions_index(tmp_path / "sessions", {a.session_key: a, b.session_key: b})
    assert path == tmp_path / "sessions" / "sessions.json"
    text = path.read_text()
    assert text.startswith('{\n  "agent:main:')
    assert json.loads(text)[a.session_key] == a.to_dict()
    loaded = load_sessions_index(tmp_path / "sessions")
    assert loaded == {a.session_key: a, b.session_key: b}
    # no temp files left behind
    assert [p.name for p in (tmp_path / "sessions").iterdir()] == ["sessions.json"]


def test_gw12_bad_entries_are_skipped_not_fatal(tmp_path):
    good = entry(platform=Platform.TELEGRAM).to_dict()
    data = {
        "good": good,
        "unknown-platform": {**good, "platform": "myspace"},
        "bad-time": {**good, "created_at": "garbage"},
        "not-an-object": [1, 2, 3],
        "future-fields": {**good, "session_key": "future-fields", "new_flag": True, "x": {}},
    }
    sessions_index_path(tmp_path).write_text(json.dumps(data))
    loaded = load_sessions_index(tmp_path)
    assert set(loaded) == {"good", "future-fields"}
    assert loaded["future-fields"].session_key == "future-fields"


def test_gw12_entry_without_session_key_takes_its_index_key(tmp_path):
    d = entry().to_dict()
    del d["session_key"]
    sessions_index_path(tmp_path).write_text(json.dumps({"agent:main:x:dm": d}))
    assert load_sessions_index(tmp_path)["agent:main:x:dm"].session_key == "agent:main:x:dm"


def test_gw12_write_is_temp_fsync_replace_in_same_dir(tmp_path, monkeypatch):
    calls: list[tuple] = []
    real_replace, real_fsync = os.replace, os.fsync

    def spy_fsync(fd):
        calls.append(("fsync", fd))
        return real_fsync(fd)

    def spy_replace(src_path, dst_path):
        calls.append(("replace", Path(src_path), Path(dst_path)))
        # the temp file is complete before the rename
        assert json.loads(Path(src_path).read_text()) != {}
        return real_replace(src_path, dst_path)

    monkeypatch.setattr(gw.os, "fsync", spy_fsync)
    monkeypatch.setattr(gw.os, "replace", spy_replace)
    e = entry()
    save_sessions_index(tmp_path, {e.session_key: e})
    kinds = [c[0] for c in calls]
    assert kinds.index("fsync") < kinds.index("replace")
    (_, tmp_file, target), = [c for c in calls if c[0] == "replace"]
    assert tmp_file.parent == target.parent == tmp_path
    assert target.name == "sessions.json" and tmp_file != target


def test_gw12_failed_write_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    e = entry()
    save_sessions_index(tmp_path, {e.session_key: e})
    before = sessions_index_path(tmp_path).read_text()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(gw.os, "replace", boom)
    with pytest.raises(OSError):
        save_sessions_index(tmp_path, {})
    assert sessions_index_path(tmp_path).read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["sessions.json"]


def test_gw12_watcher_rereads_only_on_change(tmp_path, monkeypatch):
    w = SessionsIndexWatcher(tmp_path)
    assert w.poll() is True and w.entries == {}  # first poll always reports
    assert w.poll() is False

    e = entry()
    save_sessions_index(tmp_path, {e.session_key: e})
    assert w.poll() is True and set(w.entries) == {e.session_key}

    reads = []
    real_read = gw._read_index
    monkeypatch.setattr(gw, "_read_index", lambda p: reads.append(p) or real_read(p))
    assert w.poll() is False and w.poll() is False
    assert reads == []  # unchanged file: stat only, no read

    e2 = entry(session_key="k2")
    save_sessions_index(tmp_path, {e.session_key: e, "k2": e2})
    assert w.poll() is True and set(w.entries) == {e.session_key, "k2"}
    assert len(reads) == 1

    assert w.poll(force=True) is True

    sessions_index_path(tmp_path).unlink()
    assert w.poll() is True and w.entries == {}
    assert w.poll() is False


def test_gw12_watcher_keeps_lanes_while_file_is_half_written(tmp_path):
    e = entry()
    save_sessions_index(tmp_path, {e.session_key: e})
    w = SessionsIndexWatcher(tmp_path)
    assert w.poll() is True
    path = sessions_index_path(tmp_path)
    good = path.read_text()
    path.write_text(good[: len(good) // 2])  # a non-atomic writer caught mid-write
    assert w.poll() is False and set(w.entries) == {e.session_key}
    # A different size than the original, so the change is visible even when the
    # filesystem's mtime tick is coarser than this test (same inode: written in place).
    path.write_text(good.replace('"total_tokens": 0', '"total_tokens": 777'))
    assert w.poll() is True and w.entries[e.session_key].total_tokens == 777


# ---------------------------------------------------------------------------------------
# GW-5 the store (real SessionDB on a tmp file)
# ---------------------------------------------------------------------------------------


@pytest.fixture
def real_db(tmp_path):
    db_mod = pytest.importorskip("hermes_state.db")
    db = db_mod.SessionDB(tmp_path / "state.db")
    yield db
    db.close()


@pytest.fixture
def clock():
    return Clock(datetime(2025, 3, 5, 12, 0))


def make_store(tmp_path, db, clock, config=None, **kw):
    return GatewaySessionStore(tmp_path / "sessions", config or GatewayConfig(), db, now=clock, **kw)


ALICE = src("telegram", "12345", user_id="u1", user_name="Alice", chat_name="Alice chat")


def test_gw5_new_lane_gets_fresh_entry_and_sqlite_row(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock)
    e = store.get_or_create_session(ALICE)
    assert e.session_key == "agent:main:telegram:dm:12345"
    assert re.fullmatch(r"20250305_120000_[0-9a-f]{8}", e.session_id)
    assert e.created_at == e.updated_at == clock.now
    assert e.origin == ALICE and e.platform is Platform.TELEGRAM and e.chat_type == "dm"
    assert e.display_name == "Alice chat"
    assert not (e.was_auto_reset or e.suspended or e.resume_pending or e.is_fresh_reset)
    row = real_db.get_session(e.session_id)
    assert row["source"] == "telegram" and row["user_id"] == "u1"
    assert row["ended_at"] is None
    # persisted
    assert load_sessions_index(tmp_path / "sessions") == {e.session_key: e}


def test_gw5_existing_lane_kept_and_updated_at_bumped(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock)
    first = store.get_or_create_session(ALICE)
    clock.advance(hours=1)
    again = store.get_or_create_session(ALICE)
    assert again.session_id == first.session_id
    assert again.updated_at == clock.now and again.created_at == datetime(2025, 3, 5, 12, 0)
    assert real_db.session_count() == 1


def test_gw5_idle_expiry_resets_with_reason_and_ends_old_row(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock)
    old = store.get_or_create_session(ALICE)
    store.update_session(old.session_key, input_tokens=5, output_tokens=7)
    clock.advance(days=2)
    new = store.get_or_create_session(ALICE)
    assert new.session_id != old.session_id
    assert (new.was_auto_reset, new.auto_reset_reason, new.reset_had_activity) == (True, "idle", True)
    assert new.total_tokens == 0
    old_row, new_row = real_db.get_session(old.session_id), real_db.get_session(new.session_id)
    assert old_row["end_reason"] == "session_reset" and old_row["ended_at"] is not None
    assert new_row["source"] == "telegram" and new_row["user_id"] == "u1"
    assert new_row["ended_at"] is None


def test_gw5_daily_expiry_without_activity(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock)
    old = store.get_or_create_session(ALICE)  # 12:00, no tokens
    clock.now = datetime(2025, 3, 6, 4, 0)
    new = store.get_or_create_session(ALICE)
    assert new.session_id != old.session_id
    assert (new.auto_reset_reason, new.reset_had_activity) == ("daily", False)


def test_gw5_suspended_forces_reset_even_with_resume_pending(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock)
    old = store.get_or_create_session(ALICE)
    store.mark_resume_pending(old.session_key, "restart_timeout")
    assert store.suspend_session(old.session_key)
    clock.advance(minutes=1)
    new = store.get_or_create_session(ALICE)
    assert new.session_id != old.session_id
    assert (new.was_auto_reset, new.auto_reset_reason) == (True, "suspended")
    assert not new.suspended and not new.resume_pending
    assert real_db.get_session(old.session_id)["end_reason"] == "session_reset"


def test_gw5_resume_pending_keeps_id_even_when_policy_expired(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock)
    old = store.get_or_create_session(ALICE)
    clock.advance(minutes=5)
    assert store.mark_resume_pending(old.session_key, "shutdown_timeout") is True
    marked_at = clock.now
    clock.advance(days=3)
    again = store.get_or_create_session(ALICE)
    assert again.session_id == old.session_id and again.updated_at == clock.now
    # the flag survives until a successful turn clears it
    assert again.resume_pending and again.resume_reason == "shutdown_timeout"
    assert again.last_resume_marked_at == marked_at
    assert store.clear_resume_pending(old.session_key) is True
    assert not store.get(old.session_key).resume_pending
    assert real_db.get_session(old.session_id)["ended_at"] is None


def test_gw5_mark_resume_pending_never_overrides_suspended(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock)
    e = store.get_or_create_session(ALICE)
    store.suspend_session(e.session_key)
    assert store.mark_resume_pending(e.session_key, "restart_timeout") is False
    reloaded = load_sessions_index(tmp_path / "sessions")[e.session_key]
    assert reloaded.suspended and not reloaded.resume_pending and reloaded.resume_reason is None
    assert store.mark_resume_pending("no-such-lane") is False


def test_gw5_force_new_creates_fresh_entry(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock)
    old = store.get_or_create_session(ALICE)
    store.suspend_session(old.session_key)
    clock.advance(seconds=1)
    new = store.get_or_create_session(ALICE, force_new=True)
    assert new.session_id != old.session_id
    assert not (new.was_auto_reset or new.suspended or new.reset_had_activity)
    assert new.auto_reset_reason is None
    assert real_db.get_session(old.session_id)["end_reason"] == "session_reset"


def test_gw5_active_processes_block_policy_reset_but_not_suspension(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock, has_active_processes_fn=lambda key: True)
    old = store.get_or_create_session(ALICE)
    clock.advance(days=5)
    assert store.get_or_create_session(ALICE).session_id == old.session_id
    store.suspend_session(old.session_key)
    assert store.get_or_create_session(ALICE).session_id != old.session_id


def test_gw5_policy_comes_from_config(tmp_path, real_db, clock):
    cfg = gateway_config_from_mapping({"platforms": {"telegram": {"session_reset": {"mode": "none"}}}})
    store = make_store(tmp_path, real_db, clock, config=cfg)
    old = store.get_or_create_session(ALICE)
    clock.advance(days=30)
    assert store.get_or_create_session(ALICE).session_id == old.session_id


def test_gw5_key_uses_configured_isolation(tmp_path, real_db, clock):
    cfg = GatewayConfig(group_sessions_per_user=False)
    store = make_store(tmp_path, real_db, clock, config=cfg)
    a = store.get_or_create_session(src(chat_id="-1", chat_type="group", user_id="a"))
    b = store.get_or_create_session(src(chat_id="-1", chat_type="group", user_id="b"))
    assert a.session_key == b.session_key == "agent:main:telegram:group:-1"
    assert a.session_id == b.session_id


def test_gw5_explicit_reset_marks_fresh(tmp_path, real_db, clock):
    store = make_store(tmp_path, real_db, clock)
    old = store.get_or_create_session(ALICE)
    clock.advance(minutes=1)
    new = store.reset_session(old.session_key)
    assert new.session_id != old.session_id and new.is_fresh_reset and not new.was_auto_reset
    assert new.origin == ALICE
    assert real_db.get_session(old.session_id)["end_reason"] == "session_reset"
    assert real_db.get_session(new.session_id)["source"] == "telegram"
    assert store.reset_session("missing") is None


def test_gw5_store_reloads_existing_index(tmp_path, real_db, clock):
    first = make_store(tmp_path, real_db, clock).get_or_create_session(ALICE)
    clock.advance(minutes=10)
    again = make_store(tmp_path, real_db, clock).get_or_create_session(ALICE)
    assert again.session_id == first.session_id


class FailingDB:
    """A database that is locked for the whole test: routing must still work."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def create_session(self, session_id, source, model=None, model_config=None,
                       system_prompt=None, user_id=None, parent_session_id=None):
        self.calls.append("create")
        raise RuntimeError("database is locked")

    def end_session(self, session_id, end_reason):
        self.calls.append("end")
        raise RuntimeError("database is locked")


def test_gw5_database_errors_do_not_stop_routing(tmp_path, clock):
    db = FailingDB()
    store = make_store(tmp_path, db, clock)
    old = store.get_or_create_session(ALICE)
    clock.advance(days=2)
    new = store.get_or_create_session(ALICE)
    assert new.session_id != old.session_id
    assert db.calls == ["create", "end", "create"]


def test_gw5_store_without_db(tmp_path, clock):
    store = GatewaySessionStore(tmp_path / "s", now=clock)
    assert store.get_or_create_session(ALICE).session_key == "agent:main:telegram:dm:12345"


# ---------------------------------------------------------------------------------------
# GW-13 lane facts for display (the sentences are the UI's: tests/tui/test_lane_text.py)
# ---------------------------------------------------------------------------------------

NOW = datetime(2025, 3, 5, 12, 0)


def test_gw13_reset_outlook_facts():
    p = SessionResetPolicy(mode="idle", idle_minutes=240)
    outlook = reset_outlook(entry(NOW - timedelta(hours=1)), p, NOW)
    assert (outlook.at, outlook.reason, outlook.due) == (NOW + timedelta(hours=3), "idle", False)
    assert outlook.remaining == timedelta(hours=3) and outlook.background_work_can_defer
    # past the deadline: due on the next message, nothing "remaining"
    overdue = reset_outlook(entry(NOW - timedelta(days=2)), IDLE, NOW)
    assert overdue.due and overdue.remaining is None and overdue.background_work_can_defer
    # exactly at the idle edge it is not yet due (strict comparison); daily is due at its boundary
    assert not reset_outlook(entry(NOW - timedelta(days=1)), IDLE, NOW).due
    assert reset_outlook(entry(datetime(2025, 3, 5, 3, 0)), DAILY, datetime(2025, 3, 5, 4, 0)).due
    # no deadline: never / suspended / resume pending, and no background-work caveat
    for e, policy, reason in ((entry(), NONE, None), (entry(suspended=True), BOTH, "suspended"),
                              (entry(resume_pending=True), BOTH, "resume_pending")):
        outlook = reset_outlook(e, policy, NOW)
        assert (outlook.at, outlook.reason, outlook.due, outlook.remaining) == (None, reason, False, None)
        assert not outlook.background_work_can_defer


def test_gw13_describe_lane_facts():
    info = describe_lane(full_entry(), None, NOW)
    assert info.flags == ("suspended", "resume_pending", "was_auto_reset", "is_fresh_reset",
                          "expiry_finalized")
    assert info.resume_reason == "restart_timeout" and info.auto_reset_reason == "idle"
    assert info.reset_had_activity and info.origin == full_entry().origin
    assert info.is_dm is False and info.shared is True  # a thread is shared by default (GW-6)
    assert info.next_reset_reason == "suspended" and info.next_reset_at is None
    assert describe_lane(entry(), None, NOW).flags == ()
    assert describe_lane(entry(origin=ALICE), None, NOW).is_dm


def test_gateway_module_does_not_import_ui():
    import sys
    import subprocess

    code = ("import sys, hermes_state.gateway; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'hermes_tui')]; "
            "print(bad); raise SystemExit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[2],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
