"""How often a costly background read may run again while the store keeps changing.

The list's census (its length, the per-source counts, the exact pins) reads every session
row: ~2 ms at 500 sessions, ~0.4 s at 250k. Taken again after every commit of a gateway that
commits several times a second, it ran back to back: a browser left open beside a busy
gateway kept one core busy (109 % of a core at 5M messages, 57 % at 1M). :class:`Pacer`
spaces the runs by what they cost, so the census never takes more than a set share of one
core however large the store, and a small store's census still follows each commit at once.
"""

from __future__ import annotations

import time
from typing import Callable

__all__ = ["Pacer"]


class Pacer:
    """Spaces the runs of a costly job: after a run that took ``d`` seconds, the next one
    may start ``idle_ratio × d`` seconds after it ended (at most ``1 / (1 + idle_ratio)`` of
    one core spent on it, whatever it costs). Runs asked for sooner wait; :meth:`wait` says
    how long. A run asked for by the user (:meth:`wait` with ``prompt``) never waits."""

    def __init__(self, idle_ratio: float = 9.0, clock: Callable[[], float] = time.monotonic) -> None:
        if idle_ratio < 0:
            raise ValueError("idle_ratio must not be negative")
        self.idle_ratio = idle_ratio
        self._clock = clock
        self._started: float | None = None
        self._next_at = float("-inf")

    def started(self) -> None:
        """A run starts now."""
        self._started = self._clock()

    def finished(self, seconds: float | None = None) -> None:
        """The run ended: ``seconds`` is what it cost (default: the time since
        :meth:`started`; the job may measure itself where it runs, apart from the time its
        answer waited to be handled)."""
        now = self._clock()
        if seconds is None:
            seconds = now - self._started if self._started is not None else 0.0
        self._started = None
        self._next_at = now + self.idle_ratio * max(seconds, 0.0)

    def wait(self, prompt: bool = False) -> float:
        """Seconds before the next run may start (0: now)."""
        if prompt:
            return 0.0
        return max(0.0, self._next_at - self._clock())
