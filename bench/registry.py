"""The benchmark registry: what the harness measures, as small declarative entries.

A *benchmark* is one row of the results table: a query class (or other latency class) measured
through one API, with its p95 target. Its ``make_cases(ctx)`` returns the concrete timed calls
(``Case``); the runner warms each case once, then times ``runs`` rounds of every case and
reports p50/p95 over all samples of the row.

Adding a class (e.g. "UI keystroke to paint", "live refresh lag", "browse startup") means
writing a module with ``register(...)`` calls and adding its name to ``bench.run.SUITES``.
``make_cases`` raises :class:`Missing` when what it measures does not exist yet; the table
then says so instead of the harness crashing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable


class Missing(Exception):
    """The API a benchmark measures is not available (yet); the message says what is missing."""


@dataclass
class Context:
    """What every benchmark may use. ``db`` is opened read-only, as the browser opens it."""

    db: Any  # hermes_state.SessionDB
    db_path: Path
    size_label: str
    messages: int
    sessions: int
    seed: int
    runs: int
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Case:
    """One concrete timed call. ``describe(result)`` summarises a result for the report
    (hit count, serving path, ...); it runs outside the timed region."""

    label: str
    run: Callable[[], Any]
    describe: Callable[[Any], dict[str, Any]] | None = None


@dataclass
class Samples:
    """Latencies a benchmark measured itself (UI classes: keystroke to paint, startup,
    refresh lag), returned by ``make_cases`` instead of cases to time. ``samples`` maps a
    label to milliseconds; ``details`` adds per-label facts for the report."""

    samples: dict[str, list[float]]
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Optional split of the same samples into phases (phase → milliseconds, one value per
    #: sample); the report gives each phase's p50/p95 under the table.
    breakdown: dict[str, list[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Benchmark:
    key: str  # unique, e.g. "search.selective_word"
    klass: str  # the class id shared by the APIs measured for it, e.g. "selective_word"
    title: str  # human label of the class
    api: str  # what is called, e.g. "SessionDB.search"
    target_ms: float | None  # p95 target; None = informative only
    target_note: str  # how the target reads in the table, e.g. "≤ 15 ms"
    make_cases: Callable[[Context], list[Case]]
    group: str = "search"
    target_p50_ms: float | None = None  # a p50 target as well (e.g. keystroke: one frame)
    #: A throughput: the target is a floor, judged on the low tail (the "p95" column then
    #: shows the 5th percentile, the slowest runs).
    higher_is_better: bool = False
    #: Targets that grow with the store: ``(from this many messages, target ms)`` pairs; the
    #: pair with the largest count the measured store reaches replaces ``target_ms``.
    scaled_targets: tuple[tuple[int, float], ...] = ()

    def at_size(self, messages: int) -> "Benchmark":
        """This benchmark with the target of a store of ``messages`` messages."""
        reached = [(floor, target) for floor, target in self.scaled_targets if messages >= floor]
        if not reached:
            return self
        _, target = max(reached)
        return replace(self, target_ms=target, target_note=f"≤ {target:g} ms")


REGISTRY: list[Benchmark] = []


def register(
    key: str,
    *,
    klass: str,
    title: str,
    api: str,
    target_ms: float | None,
    target_note: str | None = None,
    group: str = "search",
    target_p50_ms: float | None = None,
    higher_is_better: bool = False,
    scaled_targets: tuple[tuple[int, float], ...] = (),
) -> Callable[[Callable[[Context], list[Case]]], Callable[[Context], list[Case]]]:
    """Decorator: register ``make_cases`` as benchmark ``key``."""

    def wrap(make_cases: Callable[[Context], list[Case]]) -> Callable[[Context], list[Case]]:
        if any(b.key == key for b in REGISTRY):
            raise ValueError(f"benchmark {key!r} registered twice")
        if target_note is not None:
            note = target_note
        elif target_ms is None:
            note = "—"
        elif target_p50_ms is not None:
            note = f"p50 ≤ {target_p50_ms:g}, p95 ≤ {target_ms:g} ms"
        else:
            note = f"≤ {target_ms:g} ms"
        REGISTRY.append(Benchmark(key, klass, title, api, target_ms, note, make_cases, group, target_p50_ms,
                                  higher_is_better, tuple(scaled_targets)))
        return make_cases

    return wrap
