"""The gateway's session model: lanes, keys, reset policy and ``sessions.json`` (SPEC §14).

Upstream Hermes runs a *gateway* that bridges chat platforms (Telegram, Discord, Slack, …)
to the agent. Every chat a message arrives from is a **lane**, identified by a deterministic
``session_key`` (GW-7). A lane points at one SQLite session at a time (its current
*incarnation*); when the lane expires (idle / daily policy, GW-9) or is suspended, the gateway
ends that SQLite session and starts a new one under the same key. The mapping key → current
incarnation, plus per-lane flags and token totals, lives in ``<home>/sessions/sessions.json``
(GW-12).

This module reproduces that model so that:

* the browser can show lanes read-only (``load_sessions_index``, ``SessionsIndexWatcher``,
  ``describe_lane``) — which chat owns a session, its flags, and when it will reset — as
  facts; the sentences a person reads are built in the UI (``hermes_tui.render.lanes``);
* the simulator and tests can act as a gateway (``GatewaySessionStore``) and produce files
  upstream Hermes reads back.

Design notes
------------
* Pure functions for everything that decides something (``build_session_key``,
  ``evaluate_reset``, ``next_reset``, ``reset_outlook``, ``describe_lane``). Time is always
  an argument or an injected clock, never ``datetime.now()`` inside a decision, so tests use
  fixed datetimes.
* Datetimes are *naive local time*, as upstream writes them (``datetime.now().isoformat()``).
  Readers accept aware strings too and convert them to naive local so comparisons never mix
  naive and aware values.
* Readers are tolerant, writers are exact: unknown keys are ignored, missing ones default,
  an entry that cannot be parsed is skipped (never the whole file), and a file that is
  missing, truncated or not JSON means "no lanes". Writers emit the upstream shape.
* Nothing here imports a UI toolkit; ``hermes_state`` is a plain library.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import uuid
from datetime import datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Optional, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .paths import write_atomic

logger = logging.getLogger(__name__)

__all__ = [
    "Platform",
    "SessionSource",
    "SessionEntry",
    "SessionResetPolicy",
    "GatewayConfig",
    "GatewaySessionStore",
    "LaneInfo",
    "SessionsIndexWatcher",
    "SESSIONS_INDEX_FILENAME",
    "SESSION_RESET_END_REASON",
    "RESUME_REASONS",
    "LANE_FLAG_FIELDS",
    "ResetOutlook",
    "build_session_key",
    "canonical_whatsapp_identifier",
    "is_shared_multi_user_session",
    "evaluate_reset",
    "next_reset",
    "get_reset_policy",
    "load_gateway_config",
    "gateway_config_from_mapping",
    "load_sessions_index",
    "save_sessions_index",
    "sessions_index_path",
    "generate_session_id",
    "is_gateway_session_id",
    "describe_lane",
    "reset_outlook",
]

SESSIONS_INDEX_FILENAME = "sessions.json"
#: ``sessions.end_reason`` written when a lane's incarnation is replaced (GW-5, ST-3).
SESSION_RESET_END_REASON = "session_reset"
#: Reasons upstream uses for ``resume_pending`` (GW-4); other strings are still accepted.
RESUME_REASONS = ("restart_timeout", "shutdown_timeout", "restart_interrupted")

_SESSION_ID_RE = re.compile(r"^\d{8}_\d{6}_[0-9a-f]{8}$")


# ---------------------------------------------------------------------------------------
# Platform
# ---------------------------------------------------------------------------------------


class Platform(str, Enum):
    """Messaging platforms a lane can belong to; the value is what files and keys carry.

    ``local`` is the terminal. The list follows the upstream session sources (SPEC ST-3)
    minus the non-chat ones (``cli``, ``cron``, ``batch``, ``acp``, …), which never own a
    gateway lane. A value not listed here makes an index entry unparseable, and GW-12 says
    to skip such entries rather than guess.
    """

    LOCAL = "local"
    TELEGRAM = "telegram"
    DISCORD = "discord"
    SLACK = "slack"
    WHATSAPP = "whatsapp"
    SIGNAL = "signal"
    MATRIX = "matrix"
    MATTERMOST = "mattermost"
    EMAIL = "email"
    SMS = "sms"
    DINGTALK = "dingtalk"
    FEISHU = "feishu"
    WECOM = "wecom"
    WEIXIN = "weixin"
    BLUEBUBBLES = "bluebubbles"
    QQBOT = "qqbot"
    HOMEASSISTANT = "homeassistant"
    WEBHOOK = "webhook"
    # The documented source tag is "api-server" (SPEC ST-3); some builds spell it
    # "api_server", which _missing_ accepts so such lanes are not dropped.
    API_SERVER = "api-server"

    @classmethod
    def _missing_(cls, value: object) -> Optional["Platform"]:
        # Tolerate case and '_' vs '-' spelling differences; anything else stays unknown.
        if isinstance(value, str):
            norm = value.strip().lower().replace("_", "-")
            for member in cls:
                if member.value == norm:
                    return member
        return None


def _coerce_platform(value: Any) -> Platform:
    if isinstance(value, Platform):
        return value
    return Platform(value)


# ---------------------------------------------------------------------------------------
# Time helpers
# ---------------------------------------------------------------------------------------


def _to_naive_local(value: datetime) -> datetime:
    """Aware datetimes become naive local time; naive ones are taken as local already."""
    if value.tzinfo is not None:
        return value.astimezone().replace(tzinfo=None)
    return value


def _parse_datetime(value: Any) -> Any:
    """ISO-8601 text (with optional ``Z``/offset) or datetime → naive local datetime.

    Other values are returned unchanged so that pydantic reports them as invalid.
    """
    if isinstance(value, datetime):
        return _to_naive_local(value)
    if isinstance(value, str):
        text = value.strip()
        # Python 3.10's fromisoformat does not accept a trailing "Z".
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            return _to_naive_local(datetime.fromisoformat(text))
        except ValueError:
            return value
    return value


# ---------------------------------------------------------------------------------------
# SessionSource (GW-1 .. GW-3)
# ---------------------------------------------------------------------------------------

_SOURCE_ALWAYS_KEYS = (
    "chat_name",
    "chat_type",
    "user_id",
    "user_name",
    "thread_id",
    "chat_topic",
)
_SOURCE_TRUTHY_KEYS = ("user_id_alt", "chat_id_alt", "guild_id", "parent_chat_id", "message_id")
_SOURCE_TEXT_FIELDS = (
    "chat_id",
    "chat_name",
    "user_id",
    "user_name",
    "thread_id",
    "chat_topic",
    "user_id_alt",
    "chat_id_alt",
    "guild_id",
    "parent_chat_id",
    "message_id",
)


class SessionSource(BaseModel):
    """Where a message came from (GW-1). Immutable: it is a record of an event.

    ``user_id_alt`` (Signal UUID, Feishu union_id) is the stable identity and is preferred
    over ``user_id`` wherever a participant is needed (keys, isolation).
    """

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    platform: Platform
    chat_id: str
    chat_name: Optional[str] = None
    chat_type: str = "dm"
    user_id: Optional[str] = None
    user_name: Optional[str] = None
    thread_id: Optional[str] = None
    chat_topic: Optional[str] = None
    user_id_alt: Optional[str] = None
    chat_id_alt: Optional[str] = None
    is_bot: bool = False
    guild_id: Optional[str] = None
    parent_chat_id: Optional[str] = None
    message_id: Optional[str] = None
    role_authorized: bool = False

    @field_validator(*_SOURCE_TEXT_FIELDS, mode="before")
    @classmethod
    def _ids_as_text(cls, value: Any) -> Any:
        # Telegram/Discord ids are numbers in some payloads; keys and JSON need text.
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("chat_type", mode="before")
    @classmethod
    def _chat_type_default(cls, value: Any) -> Any:
        # null/empty in a file means "not recorded", which upstream treats as a DM.
        return "dm" if value is None or value == "" else value

    @field_validator("platform", mode="before")
    @classmethod
    def _platform_value(cls, value: Any) -> Any:
        return _coerce_platform(value) if isinstance(value, str) else value

    @property
    def description(self) -> str:
        """Human summary (GW-2): ``DM with Alice``, ``group: My Group, thread: 12345``."""
        if self.platform is Platform.LOCAL:
            return "CLI terminal"
        if self.chat_type == "dm":
            text = f"DM with {self.user_name or self.user_id or 'user'}"
        elif self.chat_type == "group":
            text = f"group: {self.chat_name or self.chat_id}"
        elif self.chat_type == "channel":
            text = f"channel: {self.chat_name or self.chat_id}"
        else:
            text = self.chat_name or self.chat_id
        if self.thread_id:
            text += f", thread: {self.thread_id}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """Serialised form inside ``sessions.json`` (GW-3).

        The eight core keys are always present (null allowed); the optional ids only when
        truthy, so files stay compact and identical to upstream's.
        """
        data: dict[str, Any] = {"platform": self.platform.value, "chat_id": self.chat_id}
        for key in _SOURCE_ALWAYS_KEYS:
            data[key] = getattr(self, key)
        for key in _SOURCE_TRUTHY_KEYS:
            value = getattr(self, key)
            if value:
                data[key] = value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SessionSource":
        """Inverse of :meth:`to_dict`; unknown keys ignored, missing keys defaulted.

        Raises ``ValueError`` (pydantic's ``ValidationError`` is one) for a missing or
        unknown platform: there is no sensible default for *where* a lane lives.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"session source must be an object, not {type(data).__name__}")
        values = {k: data[k] for k in cls.model_fields if k in data}
        if values.get("chat_id") is None:
            values["chat_id"] = ""
        for flag in ("is_bot", "role_authorized"):
            if values.get(flag) is None:
                values.pop(flag, None)
        return cls.model_validate(values)


# ---------------------------------------------------------------------------------------
# SessionEntry (GW-4)
# ---------------------------------------------------------------------------------------


class SessionEntry(BaseModel):
    """One lane of ``sessions.json`` (GW-4): key → current incarnation, flags, totals.

    Flag semantics, in the priority ``get_or_create_session`` applies them (GW-5):

    * ``suspended`` — hard wipe: the next access starts a new session id.
    * ``resume_pending`` — soft recovery after a restart/drain timeout: the next access keeps
      the session id; cleared only after the next successful turn.
    * ``was_auto_reset`` / ``auto_reset_reason`` / ``reset_had_activity`` — describe the
      incarnation this one replaced, so the agent can tell the user why context is gone.
    * ``is_fresh_reset`` — created by an explicit ``/new`` or ``/reset``.
    * ``expiry_finalized`` — the background expiry watcher already finalised it
      (legacy key ``memory_flushed``).

    Mutable on purpose: a gateway updates timestamps and totals in place.
    """

    model_config = ConfigDict(extra="ignore", defer_build=True)

    session_key: str
    session_id: str
    created_at: datetime
    updated_at: datetime
    origin: Optional[SessionSource] = None
    display_name: Optional[str] = None
    platform: Optional[Platform] = None
    chat_type: str = "dm"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    total_tokens: int = 0
    last_prompt_tokens: int = 0
    estimated_cost_usd: float = 0.0
    cost_status: str = "unknown"
    was_auto_reset: bool = False
    auto_reset_reason: Optional[str] = None
    reset_had_activity: bool = False
    is_fresh_reset: bool = False
    expiry_finalized: bool = False
    suspended: bool = False
    resume_pending: bool = False
    resume_reason: Optional[str] = None
    last_resume_marked_at: Optional[datetime] = None

    @field_validator("created_at", "updated_at", "last_resume_marked_at", mode="before")
    @classmethod
    def _naive_local(cls, value: Any) -> Any:
        return _parse_datetime(value)

    @field_validator("platform", mode="before")
    @classmethod
    def _platform_value(cls, value: Any) -> Any:
        if value is None or value == "":
            return None
        return _coerce_platform(value) if isinstance(value, str) else value

    @field_validator("chat_type", mode="before")
    @classmethod
    def _chat_type_default(cls, value: Any) -> Any:
        return "dm" if value is None or value == "" else value

    def to_dict(self) -> dict[str, Any]:
        """Entry object for ``sessions.json`` (GW-12): ISO datetimes, platform as value.

        ``expiry_finalized`` is written under its legacy name ``memory_flushed`` as well, so
        older gateways that only know the legacy key read the same state.
        """
        data: dict[str, Any] = {
            "session_key": self.session_key,
            "session_id": self.session_id,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "display_name": self.display_name,
            "platform": self.platform.value if self.platform is not None else None,
            "chat_type": self.chat_type,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "total_tokens": self.total_tokens,
            "last_prompt_tokens": self.last_prompt_tokens,
            "estimated_cost_usd": self.estimated_cost_usd,
            "cost_status": self.cost_status,
            "was_auto_reset": self.was_auto_reset,
            "auto_reset_reason": self.auto_reset_reason,
            "reset_had_activity": self.reset_had_activity,
            "is_fresh_reset": self.is_fresh_reset,
            "expiry_finalized": self.expiry_finalized,
            "memory_flushed": self.expiry_finalized,
            "suspended": self.suspended,
            "resume_pending": self.resume_pending,
            "resume_reason": self.resume_reason,
            "last_resume_marked_at": (
                self.last_resume_marked_at.isoformat()
                if self.last_resume_marked_at is not None
                else None
            ),
        }
        if self.origin is not None:
            data["origin"] = self.origin.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], key: Optional[str] = None) -> "SessionEntry":
        """Parse one entry object; ``key`` (its key in the index) fills a missing
        ``session_key``. Unknown keys are ignored; ``null`` for a field that has a non-null
        default means "use the default". Raises ``ValueError`` when the entry cannot be
        understood (no id, bad timestamp, unknown platform) so the caller can skip it.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"session entry must be an object, not {type(data).__name__}")
        values: dict[str, Any] = {k: data[k] for k in cls.model_fields if k in data}
        if values.get("session_key") in (None, "") and key is not None:
            values["session_key"] = key
        if values.get("expiry_finalized") is None and "memory_flushed" in data:
            values["expiry_finalized"] = data["memory_flushed"]
        for name, field in cls.model_fields.items():
            if name in values and values[name] is None and not field.is_required():
                if field.default is not None:
                    del values[name]
        origin = values.get("origin")
        if origin is not None and not isinstance(origin, SessionSource):
            values["origin"] = SessionSource.from_dict(origin)
        return cls.model_validate(values)


def generate_session_id(now: datetime) -> str:
    """Gateway session id ``YYYYMMDD_HHMMSS_<8 lowercase hex>`` (CLI-16), local start time."""
    return f"{now:%Y%m%d_%H%M%S}_{uuid.uuid4().hex[:8]}"


# ---------------------------------------------------------------------------------------
# Session keys and isolation (GW-6 .. GW-8)
# ---------------------------------------------------------------------------------------


def canonical_whatsapp_identifier(value: Optional[str]) -> str:
    """Canonical WhatsApp identity (GW-8): ``+60123456789:47@s.whatsapp.net`` → ``60123456789``.

    The bridge reports the same person as a JID with or without a device suffix, with or
    without ``+``; without canonicalisation one chat would split into several lanes.
    Upstream additionally maps LID/JID aliases through the bridge's mapping files; their
    format is not documented, so that step is not reproduced here.
    """
    if not value:
        return ""
    text = str(value).strip()
    if text.startswith("+"):
        text = text[1:]
    return text.split(":", 1)[0].split("@", 1)[0]


def _participant_id(source: SessionSource) -> Optional[str]:
    participant = source.user_id_alt or source.user_id
    if participant and source.platform is Platform.WHATSAPP:
        # An id that canonicalises to nothing is still an identity: keep it verbatim.
        participant = canonical_whatsapp_identifier(participant) or participant
    return participant or None


def is_shared_multi_user_session(
    source: SessionSource,
    group_sessions_per_user: bool = True,
    thread_sessions_per_user: bool = False,
) -> bool:
    """Whether several users talk to the agent in one context (GW-6).

    DMs are private; threads are shared unless ``thread_sessions_per_user``; other group
    chats are shared only when ``group_sessions_per_user`` is off. Note the upstream corner
    case kept by :func:`build_session_key`: with groups shared but threads per-user, a
    thread key carries no participant although this function reports "not shared".
    """
    if source.chat_type == "dm":
        return False
    if source.thread_id:
        return not thread_sessions_per_user
    return not group_sessions_per_user


def build_session_key(
    source: SessionSource,
    group_sessions_per_user: bool = True,
    thread_sessions_per_user: bool = False,
) -> str:
    """The lane key for a message source (GW-7).

    ``agent:main:<platform>:<chat_type>`` followed by whatever distinguishes the lane.
    Keys are opaque — chat ids may contain ``:`` — so never split one to recover ids.
    """
    parts = ["agent", "main", source.platform.value, source.chat_type]

    if source.chat_type == "dm":
        chat_id = source.chat_id
        if source.platform is Platform.WHATSAPP:
            # A DM chat id that canonicalises to nothing identifies nothing: treat as absent.
            chat_id = canonical_whatsapp_identifier(chat_id)
        if chat_id:
            parts.append(chat_id)
        else:
            participant = _participant_id(source)
            if participant:
                parts.append(participant)
        if source.thread_id:
            parts.append(source.thread_id)
        return ":".join(parts)

    if source.chat_id:
        parts.append(source.chat_id)
    if source.thread_id:
        parts.append(source.thread_id)
    isolate = group_sessions_per_user
    if source.thread_id and not thread_sessions_per_user:
        # Threads (forum topics, Discord/Slack threads) are a shared room by default.
        isolate = False
    participant = _participant_id(source)
    if isolate and participant:
        parts.append(participant)
    return ":".join(parts)


# ---------------------------------------------------------------------------------------
# Reset policy (GW-9 .. GW-11)
# ---------------------------------------------------------------------------------------

ResetMode = Literal["none", "idle", "daily", "both"]
ResetReason = Literal["idle", "daily"]
_RESET_MODES = ("none", "idle", "daily", "both")


class SessionResetPolicy(BaseModel):
    """When a lane automatically starts over (GW-9). Defaults are upstream's."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)

    mode: ResetMode = "both"
    at_hour: int = Field(default=4, ge=0, le=23)
    idle_minutes: int = Field(default=1440, ge=0)
    notify: bool = True

    @classmethod
    def from_dict(cls, data: Any) -> "SessionResetPolicy":
        """Field-by-field tolerant parse of a ``session_reset`` block.

        A bad value for one field (``at_hour: 25``, ``mode: sometimes``) falls back to that
        field's upstream default instead of discarding the whole block, and a block that is
        not a mapping is the default policy: a typo in config must not stop the browser.
        """
        if not isinstance(data, Mapping):
            return cls()
        values: dict[str, Any] = {}
        mode = data.get("mode")
        if isinstance(mode, str) and mode.strip().lower() in _RESET_MODES:
            values["mode"] = mode.strip().lower()
        elif mode is not None:
            logger.warning("session_reset.mode %r is not one of %s", mode, _RESET_MODES)
        at_hour = _as_int(data.get("at_hour"))
        if at_hour is not None and 0 <= at_hour <= 23:
            values["at_hour"] = at_hour
        idle = _as_int(data.get("idle_minutes"))
        if idle is not None and idle >= 0:
            values["idle_minutes"] = idle
        notify = _as_bool(data.get("notify"))
        if notify is not None:
            values["notify"] = notify
        return cls(**values)


def _as_int(value: Any) -> Optional[int]:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _as_bool(value: Any) -> Optional[bool]:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "yes", "on", "1"):
            return True
        if text in ("false", "no", "off", "0"):
            return False
    if isinstance(value, int):
        return bool(value)
    return None


def _platform_or_none(value: Any) -> Optional[Platform]:
    if value is None:
        return None
    try:
        return _coerce_platform(value)
    except ValueError:
        return None


class GatewayConfig(BaseModel):
    """The parts of the gateway's configuration that decide lanes and resets.

    ``reset_by_platform`` beats ``reset_by_type`` beats ``default_reset_policy`` (GW-10).
    """

    model_config = ConfigDict(extra="ignore", defer_build=True)

    default_reset_policy: SessionResetPolicy = Field(default_factory=SessionResetPolicy)
    reset_by_type: dict[str, SessionResetPolicy] = Field(default_factory=dict)
    reset_by_platform: dict[Platform, SessionResetPolicy] = Field(default_factory=dict)
    group_sessions_per_user: bool = True
    thread_sessions_per_user: bool = False
    session_store_max_age_days: int = 0

    def get_reset_policy(
        self,
        platform: Platform | str | None = None,
        session_type: Optional[str] = None,
    ) -> SessionResetPolicy:
        """Per-platform override > per-type override (``dm``/``group``/``thread``) > default."""
        plat = _platform_or_none(platform)
        if plat is not None and plat in self.reset_by_platform:
            return self.reset_by_platform[plat]
        if session_type and session_type in self.reset_by_type:
            return self.reset_by_type[session_type]
        return self.default_reset_policy


def get_reset_policy(
    platform: Platform | str | None,
    session_type: Optional[str],
    config: Optional[GatewayConfig] = None,
) -> SessionResetPolicy:
    """Module-level form of :meth:`GatewayConfig.get_reset_policy` (GW-10)."""
    return (config or GatewayConfig()).get_reset_policy(platform, session_type)


def gateway_config_from_mapping(data: Any) -> GatewayConfig:
    """Build a :class:`GatewayConfig` from a parsed ``config.yaml`` (any shape; never raises).

    Recognised keys:

    * ``session_reset`` — the default policy (GW-9 fields).
    * ``platforms.<name>.session_reset`` — per-platform override (GW-10).
    * per-type overrides, keyed ``dm`` / ``group`` / ``thread`` (or any chat type): either
      nested mappings inside ``session_reset`` (``session_reset: {dm: {mode: idle}}``) or a
      top-level ``reset_by_type`` mapping (the name upstream's GatewayConfig uses). The
      upstream document does not pin the YAML spelling, so both are read; a nested one wins.
    * ``reset_by_platform`` — top-level ``{<platform>: policy}`` as in upstream's
      GatewayConfig dict; ``platforms.<name>.session_reset`` wins over it.
    * ``group_sessions_per_user``, ``thread_sessions_per_user``,
      ``session_store_max_age_days`` — top-level keys (upstream's "Key Configuration").

    Overrides are complete policies: a field an override leaves out takes the *upstream*
    default, not the value from the default block, because that is how the gateway builds
    them and the browser must predict what the gateway will do.
    """
    if not isinstance(data, Mapping):
        return GatewayConfig()

    default_block = data.get("session_reset")
    default_policy = SessionResetPolicy.from_dict(default_block)

    by_type: dict[str, SessionResetPolicy] = {}
    legacy_types = data.get("reset_by_type")
    if isinstance(legacy_types, Mapping):
        for name, block in legacy_types.items():
            if isinstance(name, str) and isinstance(block, Mapping):
                by_type[name] = SessionResetPolicy.from_dict(block)
    if isinstance(default_block, Mapping):
        for name, block in default_block.items():
            # Policy fields are scalars, so any mapping-valued key is a per-type block.
            if isinstance(name, str) and isinstance(block, Mapping):
                by_type[name] = SessionResetPolicy.from_dict(block)

    by_platform: dict[Platform, SessionResetPolicy] = {}
    legacy_platforms = data.get("reset_by_platform")
    if isinstance(legacy_platforms, Mapping):
        for name, block in legacy_platforms.items():
            plat = _platform_or_none(name)
            if plat is not None and isinstance(block, Mapping):
                by_platform[plat] = SessionResetPolicy.from_dict(block)
    platforms = data.get("platforms")
    if isinstance(platforms, Mapping):
        for name, settings in platforms.items():
            plat = _platform_or_none(name)
            if plat is None or not isinstance(settings, Mapping):
                continue
            block = settings.get("session_reset")
            if isinstance(block, Mapping):
                by_platform[plat] = SessionResetPolicy.from_dict(block)

    values: dict[str, Any] = {
        "default_reset_policy": default_policy,
        "reset_by_type": by_type,
        "reset_by_platform": by_platform,
    }
    for name in ("group_sessions_per_user", "thread_sessions_per_user"):
        flag = _as_bool(data.get(name))
        if flag is not None:
            values[name] = flag
    max_age = _as_int(data.get("session_store_max_age_days"))
    if max_age is not None and max_age >= 0:
        values["session_store_max_age_days"] = max_age
    return GatewayConfig(**values)


def load_gateway_config(hermes_home: Path) -> GatewayConfig:
    """Read ``<hermes_home>/config.yaml``; missing, unreadable or invalid → upstream defaults."""
    path = Path(hermes_home) / "config.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return GatewayConfig()
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("cannot read %s: %s", path, exc)
        return GatewayConfig()
    import yaml  # (here: 45 ms of import a browser's start would otherwise pay first)

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        logger.warning("invalid YAML in %s: %s", path, exc)
        return GatewayConfig()
    return gateway_config_from_mapping(data)


def _first_daily_boundary_after(moment: datetime, at_hour: int) -> datetime:
    boundary = moment.replace(hour=at_hour, minute=0, second=0, microsecond=0)
    if boundary <= moment:
        boundary += timedelta(days=1)
    return boundary


def evaluate_reset(
    entry: SessionEntry,
    policy: SessionResetPolicy,
    now: datetime,
    *,
    has_active_processes: bool = False,
) -> Optional[ResetReason]:
    """Whether a lane touched at ``now`` must start over, and why (GW-9).

    Idle is checked first, so it wins when both apply; the idle comparison is strict
    (exactly at the deadline is still fresh). ``now`` and ``entry.updated_at`` are naive
    local times.
    """
    if has_active_processes:
        # Resetting would orphan running background work from its conversation.
        return None
    if policy.mode == "none":
        return None
    if policy.mode in ("idle", "both"):
        if now > entry.updated_at + timedelta(minutes=policy.idle_minutes):
            return "idle"
    if policy.mode in ("daily", "both"):
        boundary = now.replace(hour=policy.at_hour, minute=0, second=0, microsecond=0)
        if now.hour < policy.at_hour:
            boundary -= timedelta(days=1)
        if entry.updated_at < boundary:
            return "daily"
    return None


def next_reset(
    entry: SessionEntry, policy: SessionResetPolicy
) -> tuple[Optional[datetime], Optional[str]]:
    """When the lane's current incarnation expires, for display (GW-11).

    Returns ``(moment, reason)``:

    * ``(I or D, "idle" | "daily")`` — the policy deadline; the reset itself happens on the
      first message *after* it (and not at all while background work runs). For ``both``
      the earlier of the two; a tie reports ``idle`` because GW-9 checks idle first.
    * ``(None, "suspended")`` — a new session id on next access, whatever the policy.
    * ``(None, "resume_pending")`` — next access keeps the id, whatever the policy.
    * ``(None, None)`` — mode ``none``: never.
    """
    if entry.suspended:
        return None, "suspended"
    if entry.resume_pending:
        return None, "resume_pending"
    if policy.mode == "none":
        return None, None
    idle_at = entry.updated_at + timedelta(minutes=policy.idle_minutes)
    daily_at = _first_daily_boundary_after(entry.updated_at, policy.at_hour)
    if policy.mode == "idle":
        return idle_at, "idle"
    if policy.mode == "daily":
        return daily_at, "daily"
    if idle_at <= daily_at:
        return idle_at, "idle"
    return daily_at, "daily"


# ---------------------------------------------------------------------------------------
# sessions.json (GW-12)
# ---------------------------------------------------------------------------------------


def sessions_index_path(sessions_dir: Path) -> Path:
    """``<sessions_dir>/sessions.json``."""
    return Path(sessions_dir) / SESSIONS_INDEX_FILENAME


def _parse_index_text(text: str) -> Optional[dict[str, SessionEntry]]:
    """Entries from file text, or ``None`` when the text is not a JSON object at all."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    entries: dict[str, SessionEntry] = {}
    for key, value in raw.items():
        try:
            entries[key] = SessionEntry.from_dict(value, key=key)
        except (ValueError, TypeError, ValidationError) as exc:
            # One lane from a newer gateway (or a removed platform) must not hide the rest.
            logger.debug("skipping sessions.json entry %r: %s", key, exc)
    return entries


def _read_index(path: Path) -> Optional[dict[str, SessionEntry]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("cannot read %s: %s", path, exc)
        return None
    return _parse_index_text(text)


def load_sessions_index(sessions_dir: Path) -> dict[str, SessionEntry]:
    """All lanes in ``<sessions_dir>/sessions.json`` keyed by session key.

    A missing, unreadable, truncated or non-object file yields ``{}``; entries that do not
    parse are skipped (GW-12).
    """
    entries = _read_index(sessions_index_path(sessions_dir))
    return entries if entries is not None else {}


def save_sessions_index(sessions_dir: Path, entries: Mapping[str, SessionEntry]) -> Path:
    """Write the index atomically (GW-12) and return its path.

    Temp file in the same directory (so ``os.replace`` is a same-filesystem rename), flushed
    and fsynced before the rename: a reader — or a crash — sees the old file or the new
    one, never half of one.
    """
    directory = Path(sessions_dir)
    directory.mkdir(parents=True, exist_ok=True)
    target = sessions_index_path(directory)
    payload = {key: entry.to_dict() for key, entry in entries.items()}
    write_atomic(target, [json.dumps(payload, indent=2)], mode=0o600)
    return target




class SessionsIndexWatcher:
    """Re-reads ``sessions.json`` only when it changed, for the browser's live lane view.

    ``poll()`` costs one ``stat`` when nothing changed. The change signature is
    (mtime_ns, size, inode): atomic writers replace the file, so the inode changes even
    when two writes land in the same mtime tick with the same size.

    If the file exists but cannot be parsed (a non-atomic writer caught mid-write), the
    previous lanes are kept and the signature is not recorded, so the next poll retries
    instead of showing "no lanes" until the next write.
    """

    def __init__(self, sessions_dir: Path) -> None:
        self.path = sessions_index_path(sessions_dir)
        self.entries: dict[str, SessionEntry] = {}
        self._signature: Optional[tuple[int, int, int]] = None
        self._seen_once = False

    def _stat_signature(self) -> Optional[tuple[int, int, int]]:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def poll(self, force: bool = False) -> bool:
        """Reload if the file changed (or ``force``); return whether ``entries`` changed."""
        signature = self._stat_signature()
        if self._seen_once and not force and signature == self._signature:
            return False
        if signature is None:
            changed = bool(self.entries) or not self._seen_once
            self.entries = {}
            self._signature = None
            self._seen_once = True
            return changed
        entries = _read_index(self.path)
        if entries is None:
            self._seen_once = True
            return False
        self._signature = signature
        self._seen_once = True
        self.entries = entries
        return True


# ---------------------------------------------------------------------------------------
# A gateway-side store (GW-5)
# ---------------------------------------------------------------------------------------


class SessionDBLike(Protocol):
    """The two ``SessionDB`` methods a gateway store needs (upstream signatures)."""

    def create_session(
        self,
        session_id: str,
        source: str,
        model: Optional[str] = None,
        model_config: Optional[dict] = None,
        system_prompt: Optional[str] = None,
        user_id: Optional[str] = None,
        parent_session_id: Optional[str] = None,
    ) -> Any: ...

    def end_session(self, session_id: str, end_reason: str) -> Any: ...


class GatewaySessionStore:
    """Acts as a gateway for lanes: the ``SessionStore`` subset that decides incarnations.

    Used by the simulator and tests to produce ``sessions.json`` + ``state.db`` the way
    upstream does; the browser itself never writes the index (SPEC §14 preamble).

    ``now`` is the clock (naive local); ``has_active_processes_fn(session_key)`` lets a
    caller veto policy resets while background work runs (GW-9 step 1). Every mutation is
    persisted immediately with :func:`save_sessions_index`. SQLite errors are logged and do
    not abort routing — upstream behaves the same so a locked database cannot stop a chat;
    the row is simply missing until the next write path creates it.
    """

    def __init__(
        self,
        sessions_dir: Path,
        config: Optional[GatewayConfig] = None,
        db: Optional[SessionDBLike] = None,
        *,
        now: Callable[[], datetime] = datetime.now,
        has_active_processes_fn: Optional[Callable[[str], bool]] = None,
    ) -> None:
        self.sessions_dir = Path(sessions_dir)
        self.config = config or GatewayConfig()
        self.db = db
        self._now = now
        self._has_active_processes_fn = has_active_processes_fn
        self._entries: Optional[dict[str, SessionEntry]] = None
        self._lock = threading.RLock()

    # -- persistence -----------------------------------------------------------------

    def _loaded(self) -> dict[str, SessionEntry]:
        if self._entries is None:
            self._entries = load_sessions_index(self.sessions_dir)
        return self._entries

    def _save(self) -> None:
        save_sessions_index(self.sessions_dir, self._loaded())

    # -- queries ---------------------------------------------------------------------

    def session_key_for(self, source: SessionSource) -> str:
        return build_session_key(
            source,
            group_sessions_per_user=self.config.group_sessions_per_user,
            thread_sessions_per_user=self.config.thread_sessions_per_user,
        )

    def get(self, session_key: str) -> Optional[SessionEntry]:
        with self._lock:
            return self._loaded().get(session_key)

    def entries(self) -> dict[str, SessionEntry]:
        with self._lock:
            return dict(self._loaded())

    def _has_active_processes(self, session_key: str) -> bool:
        if self._has_active_processes_fn is None:
            return False
        return bool(self._has_active_processes_fn(session_key))

    # -- the core decision (GW-5) ----------------------------------------------------

    def get_or_create_session(
        self, source: SessionSource, force_new: bool = False
    ) -> SessionEntry:
        """Current entry for ``source``'s lane, starting a new incarnation when due.

        Priority: ``suspended`` → ``resume_pending`` → reset policy → keep. ``force_new``
        skips straight to a fresh entry (flags false).
        """
        key = self.session_key_for(source)
        now = self._now()
        with self._lock:
            entries = self._loaded()
            existing = entries.get(key)
            if existing is not None and not force_new:
                if existing.suspended:
                    reason: Optional[str] = "suspended"
                elif existing.resume_pending:
                    # Keep the transcript; the flag is cleared only after a successful
                    # turn, so an interrupted resume is retried after the next restart.
                    existing.updated_at = now
                    self._save()
                    return existing
                else:
                    policy = self.config.get_reset_policy(source.platform, source.chat_type)
                    reason = evaluate_reset(
                        existing,
                        policy,
                        now,
                        has_active_processes=self._has_active_processes(key),
                    )
                if reason is None:
                    existing.updated_at = now
                    self._save()
                    return existing
                entry = self._new_entry(key, source, now)
                entry.was_auto_reset = True
                entry.auto_reset_reason = reason
                entry.reset_had_activity = existing.total_tokens > 0
            else:
                entry = self._new_entry(key, source, now)
            entries[key] = entry
            self._save()
        # A forced new incarnation also retires the old one: an open row with no lane
        # pointing at it would look live forever.
        self._retire_and_create(existing, entry, source.platform.value, source.user_id)
        return entry

    def reset_session(
        self, session_key: str, display_name: Optional[str] = None
    ) -> Optional[SessionEntry]:
        """Explicit ``/new`` or ``/reset``: new incarnation with ``is_fresh_reset=True``."""
        now = self._now()
        with self._lock:
            entries = self._loaded()
            old = entries.get(session_key)
            if old is None:
                return None
            entry = old.model_copy(
                update={
                    "session_id": generate_session_id(now),
                    "created_at": now,
                    "updated_at": now,
                    "display_name": display_name or old.display_name,
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cache_read_tokens": 0,
                    "cache_write_tokens": 0,
                    "total_tokens": 0,
                    "last_prompt_tokens": 0,
                    "estimated_cost_usd": 0.0,
                    "cost_status": "unknown",
                    "was_auto_reset": False,
                    "auto_reset_reason": None,
                    "reset_had_activity": False,
                    "is_fresh_reset": True,
                    "expiry_finalized": False,
                    "suspended": False,
                    "resume_pending": False,
                    "resume_reason": None,
                    "last_resume_marked_at": None,
                }
            )
            entries[session_key] = entry
            self._save()
        platform = old.platform or (old.origin.platform if old.origin else None)
        # "unknown" only for hand-made entries without any platform; sources are open text.
        source_tag = platform.value if platform is not None else "unknown"
        user_id = old.origin.user_id if old.origin else None
        self._retire_and_create(old, entry, source_tag, user_id)
        return entry

    def _new_entry(self, key: str, source: SessionSource, now: datetime) -> SessionEntry:
        return SessionEntry(
            session_key=key,
            session_id=generate_session_id(now),
            created_at=now,
            updated_at=now,
            origin=source,
            display_name=source.chat_name,
            platform=source.platform,
            chat_type=source.chat_type,
        )

    def _retire_and_create(
        self,
        old: Optional[SessionEntry],
        new: SessionEntry,
        source_tag: str,
        user_id: Optional[str],
    ) -> None:
        if self.db is None:
            return
        if old is not None and old.session_id != new.session_id:
            try:
                self.db.end_session(old.session_id, SESSION_RESET_END_REASON)
            except Exception as exc:  # noqa: BLE001 — see class docstring
                logger.warning("could not end session %s: %s", old.session_id, exc)
        try:
            self.db.create_session(session_id=new.session_id, source=source_tag, user_id=user_id)
        except Exception as exc:  # noqa: BLE001 — see class docstring
            logger.warning("could not create session %s: %s", new.session_id, exc)

    # -- flags -----------------------------------------------------------------------

    def suspend_session(self, session_key: str) -> bool:
        """``/stop``: the next access starts a new session id."""
        with self._lock:
            entry = self._loaded().get(session_key)
            if entry is None:
                return False
            entry.suspended = True
            self._save()
            return True

    def mark_resume_pending(self, session_key: str, reason: str = "restart_timeout") -> bool:
        """Soft recovery marker; returns False (and changes nothing) for a suspended lane,
        because a hard wipe the user asked for must not be undone by a restart."""
        with self._lock:
            entry = self._loaded().get(session_key)
            if entry is None or entry.suspended:
                return False
            entry.resume_pending = True
            entry.resume_reason = reason
            entry.last_resume_marked_at = self._now()
            self._save()
            return True

    def clear_resume_pending(self, session_key: str) -> bool:
        """Called after a resumed turn succeeded."""
        with self._lock:
            entry = self._loaded().get(session_key)
            if entry is None or not entry.resume_pending:
                return False
            entry.resume_pending = False
            entry.resume_reason = None
            self._save()
            return True

    def update_session(
        self,
        session_key: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        last_prompt_tokens: Optional[int] = None,
    ) -> Optional[SessionEntry]:
        """After a turn: bump ``updated_at`` and add token deltas."""
        with self._lock:
            entry = self._loaded().get(session_key)
            if entry is None:
                return None
            entry.updated_at = self._now()
            entry.input_tokens += input_tokens
            entry.output_tokens += output_tokens
            entry.total_tokens += input_tokens + output_tokens
            if last_prompt_tokens is not None:
                entry.last_prompt_tokens = last_prompt_tokens
            self._save()
            return entry


# ---------------------------------------------------------------------------------------
# Lane facts (GW-11, GW-13) — the wording is the UI's (hermes_tui.render.lanes)
# ---------------------------------------------------------------------------------------

#: The flags of a lane (GW-4), most consequential first: the order a lane view lists them.
LANE_FLAG_FIELDS = ("suspended", "resume_pending", "was_auto_reset", "is_fresh_reset", "expiry_finalized")


class ResetOutlook(BaseModel):
    """What :func:`next_reset` predicts for a lane, seen at one moment (GW-11), as facts.

    ``reason`` is ``idle`` / ``daily`` (a policy deadline at ``at``), ``suspended`` (a new
    session id on next access), ``resume_pending`` (next access keeps the id) or ``None``
    (policy ``none``: never).
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    at: Optional[datetime] = None
    reason: Optional[str] = None
    #: The deadline has passed: the gateway resets lazily, on the lane's next message (GW-11).
    due: bool = False
    #: Time left until ``at``; ``None`` without a deadline or once it is due.
    remaining: Optional[timedelta] = None
    #: A policy reset is predicted, and GW-9 step 1 skips it while background processes run —
    #: which a reader of ``sessions.json`` cannot see.
    background_work_can_defer: bool = False


def reset_outlook(entry: SessionEntry, policy: SessionResetPolicy, now: datetime) -> ResetOutlook:
    """:func:`next_reset` of ``entry`` under ``policy``, as seen at ``now`` (naive local)."""
    moment, reason = next_reset(entry, policy)
    if moment is None:
        return ResetOutlook(reason=reason)
    # GW-9: idle fires only strictly after the deadline; daily at the boundary itself.
    due = now > moment if reason == "idle" else now >= moment
    return ResetOutlook(
        at=moment,
        reason=reason,
        due=due,
        remaining=None if due else moment - now,
        background_work_can_defer=True,
    )


class LaneInfo(BaseModel):
    """Everything the lane view shows for one ``sessions.json`` entry (GW-13), as data.

    Built by :func:`describe_lane`; the UI words it (``hermes_tui.render.lanes``) and links
    ``session_id`` to the state.db row itself (title, message count), which this module does
    not query. The flag fields carry the same names as :class:`SessionEntry`'s.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    session_key: str
    session_id: str
    platform: Optional[str]
    chat_type: str
    #: Where the lane's messages come from (its GW-2 ``description`` included), when recorded.
    origin: Optional[SessionSource]
    display_name: Optional[str]
    created_at: datetime
    updated_at: datetime
    #: Names of the flags that are set, in :data:`LANE_FLAG_FIELDS` order.
    flags: tuple[str, ...]
    suspended: bool
    resume_pending: bool
    resume_reason: Optional[str]
    last_resume_marked_at: Optional[datetime]
    was_auto_reset: bool
    auto_reset_reason: Optional[str]
    reset_had_activity: bool
    is_fresh_reset: bool
    expiry_finalized: bool
    #: A direct-message lane (private by nature).
    is_dm: bool
    #: GW-6 with the configured flags; ``None`` when it cannot be known (no ``origin``).
    shared: Optional[bool]
    next_reset: ResetOutlook
    input_tokens: int
    output_tokens: int
    total_tokens: int
    estimated_cost_usd: float
    cost_status: str

    @property
    def next_reset_at(self) -> Optional[datetime]:
        return self.next_reset.at

    @property
    def next_reset_reason(self) -> Optional[str]:
        return self.next_reset.reason


def describe_lane(
    entry: SessionEntry, config: Optional[GatewayConfig], now: datetime
) -> LaneInfo:
    """The facts of one lane for display, using the configured policy and isolation flags.

    Sharing follows GW-6 with the configured flags; without an ``origin`` a non-DM lane's
    thread status is unknown, so ``shared`` is ``None`` rather than a guess.
    """
    config = config or GatewayConfig()
    platform = entry.platform or (entry.origin.platform if entry.origin else None)
    policy = config.get_reset_policy(platform, entry.chat_type)

    if entry.origin is not None:
        shared: Optional[bool] = is_shared_multi_user_session(
            entry.origin,
            group_sessions_per_user=config.group_sessions_per_user,
            thread_sessions_per_user=config.thread_sessions_per_user,
        )
    else:
        shared = False if entry.chat_type == "dm" else None
    is_dm = (entry.origin.chat_type if entry.origin else entry.chat_type) == "dm"

    return LaneInfo(
        session_key=entry.session_key,
        session_id=entry.session_id,
        platform=platform.value if platform is not None else None,
        chat_type=entry.chat_type,
        origin=entry.origin,
        display_name=entry.display_name,
        created_at=entry.created_at,
        updated_at=entry.updated_at,
        flags=tuple(name for name in LANE_FLAG_FIELDS if getattr(entry, name)),
        suspended=entry.suspended,
        resume_pending=entry.resume_pending,
        resume_reason=entry.resume_reason,
        last_resume_marked_at=entry.last_resume_marked_at,
        was_auto_reset=entry.was_auto_reset,
        auto_reset_reason=entry.auto_reset_reason,
        reset_had_activity=entry.reset_had_activity,
        is_fresh_reset=entry.is_fresh_reset,
        expiry_finalized=entry.expiry_finalized,
        is_dm=is_dm,
        shared=shared,
        next_reset=reset_outlook(entry, policy, now),
        input_tokens=entry.input_tokens,
        output_tokens=entry.output_tokens,
        total_tokens=entry.total_tokens,
        estimated_cost_usd=entry.estimated_cost_usd,
        cost_status=entry.cost_status,
    )


def is_gateway_session_id(value: str) -> bool:
    """Whether ``value`` has the gateway id shape ``YYYYMMDD_HHMMSS_<8 hex>``."""
    return bool(_SESSION_ID_RE.match(value))
