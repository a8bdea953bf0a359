"""How a gateway lane reads to a person (GW-13): the sentences of the lane view.

``hermes_state.gateway.describe_lane`` gives the facts of a lane (:class:`LaneInfo`: flags,
sharing, the :class:`ResetOutlook` seen at the app's clock); this module words them for the
detail pane, the recap header and the delete modal. Plain strings, no textual, no Rich: the
widgets make them inert and lay them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Optional

from hermes_state.gateway import LaneInfo, ResetOutlook

__all__ = [
    "BACKGROUND_WORK_CAVEAT",
    "LaneText",
    "format_duration",
    "format_next_reset",
    "lane_flags",
    "lane_rows",
    "lane_text",
]

#: GW-9 step 1: a lane with running background processes never resets, and a reader of
#: ``sessions.json`` cannot see processes — so every predicted reset carries this caveat.
BACKGROUND_WORK_CAVEAT = "unless background work is running"


def format_duration(delta: timedelta) -> str:
    """Compact, floor-rounded duration: ``<1m``, ``45m``, ``2h 30m``, ``7h``, ``1d 4h``, ``5d``.

    Floors so a prediction never claims more time than is left. Minutes are shown only
    for short spans, where they matter.
    """
    total_minutes = int(max(delta.total_seconds(), 0) // 60)
    if total_minutes < 1:
        return "<1m"
    if total_minutes < 60:
        return f"{total_minutes}m"
    hours, minutes = divmod(total_minutes, 60)
    if hours < 24:
        if hours < 6 and minutes:
            return f"{hours}h {minutes}m"
        return f"{hours}h"
    days, hours = divmod(hours, 24)
    if days < 3 and hours:
        return f"{days}d {hours}h"
    return f"{days}d"


def lane_flags(lane: Any) -> list[str]:
    """Short labels for the flags that are set, most consequential first.

    ``lane`` is a :class:`LaneInfo` or a ``SessionEntry``: both carry the GW-4 flag fields.
    """
    flags: list[str] = []
    if lane.suspended:
        flags.append("suspended")
    if lane.resume_pending:
        flags.append(
            f"resume pending ({lane.resume_reason})" if lane.resume_reason else "resume pending"
        )
    if lane.was_auto_reset:
        detail = [lane.auto_reset_reason] if lane.auto_reset_reason else []
        if lane.reset_had_activity:
            detail.append("had activity")
        flags.append(f"auto-reset ({', '.join(detail)})" if detail else "auto-reset")
    if lane.is_fresh_reset:
        flags.append("fresh reset")
    if lane.expiry_finalized:
        flags.append("expiry finalized")
    return flags


def format_next_reset(outlook: ResetOutlook) -> tuple[str, Optional[str]]:
    """``(text, caveat)`` such as ``("resets in 3h (idle)", BACKGROUND_WORK_CAVEAT)``.

    A deadline already passed reads "resets on next message": the gateway resets lazily,
    when the lane is next touched (GW-11). The caveat is set whenever a policy reset is
    predicted, because the index cannot show background processes (GW-9 step 1).
    """
    reason = outlook.reason
    if reason == "suspended":
        return "new session on next message (suspended)", None
    if reason == "resume_pending":
        return "keeps its session on next message (resume pending)", None
    if outlook.at is None:
        return "never resets", None
    caveat = BACKGROUND_WORK_CAVEAT if outlook.background_work_can_defer else None
    if outlook.due or outlook.remaining is None:
        return f"resets on next message ({reason})", caveat
    return f"resets in {format_duration(outlook.remaining)} ({reason})", caveat


@dataclass(frozen=True)
class LaneText:
    """The sentences of one lane, as the lane view shows them."""

    #: Where the lane's messages come from (GW-2), else its display name or key.
    description: str
    sharing_text: str
    flags_text: str
    next_reset_text: str
    next_reset_caveat: Optional[str]

    @property
    def next_reset_sentence(self) -> str:
        """``resets in 3h (idle) unless background work is running``."""
        if self.next_reset_caveat:
            return f"{self.next_reset_text} {self.next_reset_caveat}"
        return self.next_reset_text


def _sharing_text(lane: LaneInfo) -> str:
    if lane.is_dm:
        return "private (DM)"
    if lane.shared is None:
        return "unknown"
    return "shared" if lane.shared else "per-user"


def lane_text(lane: LaneInfo) -> LaneText:
    """Word the facts of ``lane`` (from ``describe_lane``)."""
    if lane.origin is not None:
        description = lane.origin.description
    else:
        description = lane.display_name or lane.session_key
    text, caveat = format_next_reset(lane.next_reset)
    return LaneText(
        description=description,
        sharing_text=_sharing_text(lane),
        flags_text=", ".join(lane_flags(lane)),
        next_reset_text=text,
        next_reset_caveat=caveat,
    )


def lane_rows(lane: LaneInfo) -> list[tuple[str, str]]:
    """``(label, sentence)`` rows of the lane block (from, sharing, flags, reset); empty ones left out."""
    words = lane_text(lane)
    rows = (
        ("from", words.description),
        ("sharing", words.sharing_text),
        ("flags", words.flags_text),
        ("reset", words.next_reset_sentence),
    )
    return [(label, value) for label, value in rows if value]
