"""``hermes sessions simulate`` and ``hermes sessions generate``: the workload commands.

The generators themselves live in :mod:`hermes_workload` and take their options as plain
arguments (and, for ``generate``, a ``progress(done, total)`` callback). This module is the
person-facing side: argument parsing, messages, exit codes, signal handling and the progress
bar. ``cli.py`` imports it only when one of these commands runs, so ``hermes sessions list``
never pays for it.

Exit codes follow the rest of the CLI: 0 success, 1 failure, 2 bad arguments (argparse exits
with 2 itself; ``cli._run_sub`` turns that into the return value).
"""

from __future__ import annotations

import argparse
import re
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from hermes_state.paths import hermes_home

__all__ = ["simulate_main", "generate_main", "parse_size"]


# ---------------------------------------------------------------------------------------
# Argument types
# ---------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError("must be zero or more")
    return value


#: Store layouts the workload commands can create (hermes_workload.corpus.SCHEMAS; repeated
#: here so that parsing arguments does not import the generator).
_SCHEMAS = (16, 30)


def _home_arg(value: Optional[str]) -> Path:
    return Path(value) if value else hermes_home()


_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_size(text: str) -> int:
    """``10k`` → 10000, ``1m`` → 1000000, ``2.5k`` → 2500, ``5000`` → 5000 (≥ 1)."""
    match = _SIZE_RE.match(str(text).replace("_", "").replace(",", ""))
    if not match:
        raise ValueError(f"not a size: {text!r} (use e.g. 5000, 10k, 100k, 1m)")
    number = float(match.group(1))
    factor = {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2).lower()]
    value = int(round(number * factor))
    if value < 1:
        raise ValueError(f"size must be at least 1 message: {text!r}")
    return value


def _size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


# ---------------------------------------------------------------------------------------
# simulate
# ---------------------------------------------------------------------------------------


def simulate_main(argv: Optional[Sequence[str]] = None, prog: Optional[str] = None) -> int:
    """``hermes sessions simulate``: run :func:`hermes_workload.simulate.run_simulation`.

    Returns 0 after a clean stop (duration reached or Ctrl-C / SIGTERM), 1 if a writer
    reported errors or the home cannot be used, 2 for bad arguments (argparse exits with 2).
    """
    parser = argparse.ArgumentParser(
        prog=prog or "hermes sessions simulate",
        description="Write a realistic gateway + CLI workload into a Hermes home "
        "(state.db and sessions/sessions.json) from one or more processes. Ctrl-C stops.",
    )
    parser.add_argument("--home", help="HERMES_HOME to write (default: $HERMES_HOME or ~/.hermes)")
    parser.add_argument("--writers", type=_positive_int, default=1, help="writer processes (default 1)")
    parser.add_argument("--rate", type=_non_negative_float, default=5.0,
                        help="events per second per writer; 0 = as fast as possible (default 5)")
    parser.add_argument("--duration", type=_non_negative_float, default=None,
                        help="seconds to run (default: until Ctrl-C)")
    # A workload of a known size, however fast the machine: what a duration cannot give.
    parser.add_argument("--events", type=_positive_int, default=None,
                        help="stop each writer after N events (default: no limit)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--log-dir", help="write one JSON-lines log per writer here")
    parser.add_argument("--realtime", action="store_true",
                        help="no simulated quiet nights: lanes reset only after real idle time")
    parser.add_argument("--schema", type=int, choices=_SCHEMAS, default=None,
                        help="layout of a new state.db: 16 (what this program creates, the "
                        "default) or 30 (a store born at upstream schema 30); an existing "
                        "store keeps its own layout")
    args = parser.parse_args(argv)

    from hermes_workload.simulate import run_simulation  # noqa: PLC0415 - only this command

    home = _home_arg(args.home)
    interrupted_early = False
    previous_term = None
    if _in_main_thread():
        # SIGTERM (e.g. from ``browse --demo`` closing its writer) stops like Ctrl-C does.
        previous_term = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        limits = ([f"{args.duration:g} s"] if args.duration is not None else []) + (
            [f"{args.events} events each"] if args.events is not None else [])
        span = " or ".join(limits) or "until Ctrl-C"
        pace = f"{args.rate:g} events/s each" if args.rate > 0 else "as fast as possible"
        print(f"Simulating {args.writers} writer{'s' if args.writers != 1 else ''} on {home} "
              f"({pace}, {span}).", file=sys.stderr, flush=True)
        report = run_simulation(
            home,
            writers=args.writers,
            rate=args.rate,
            duration=args.duration,
            max_events=args.events,
            seed=args.seed,
            log_dir=Path(args.log_dir) if args.log_dir else None,
            age_lanes=not args.realtime,
            schema=args.schema,
        )
    except KeyboardInterrupt:
        # Only reachable before the writers started (run_simulation handles it afterwards).
        interrupted_early = True
        report = None
    except (OSError, sqlite3.Error) as exc:
        print(f"Error: cannot simulate in {home}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - e.g. DatabaseError; never a traceback
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    if interrupted_early or report is None:
        print("Stopped before any writer started.", file=sys.stderr)
        return 0
    print(report.summary(), flush=True)
    return 1 if report.errors else 0


# ---------------------------------------------------------------------------------------
# generate
# ---------------------------------------------------------------------------------------


def _remove_existing(db_path: Path, overwrite: bool) -> Optional[str]:
    """Clear the way for a new ``state.db``; the error line to print when we must not."""
    if not db_path.exists():
        return None
    if not overwrite:
        return (f"Error: {db_path} already exists; use --overwrite to replace it "
                "or choose another --home.")
    for suffix in ("", "-wal", "-shm"):
        try:
            Path(str(db_path) + suffix).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            return f"Error: cannot remove {db_path}{suffix}: {exc}"
    return None


def generate_main(argv: Optional[Sequence[str]] = None, prog: Optional[str] = None) -> int:
    """``hermes sessions generate``: build a deterministic benchmark/demo database.

    Calls ``hermes_workload.corpus.generate_corpus(db_path, messages=N, seed=S, now=T,
    progress=cb)`` and draws ``cb`` as a ``rich`` progress bar on stderr; the bar's line ends
    with a newline, so the summary that follows starts on its own line. Refuses to touch an
    existing ``state.db`` unless ``--overwrite`` is given. Returns 0 on success, 1 on
    failure, 2 on bad arguments, 130 when cancelled.
    """
    parser = argparse.ArgumentParser(
        prog=prog or "hermes sessions generate",
        description="Generate a deterministic session database (the benchmark corpus).",
    )
    parser.add_argument("--size", type=_size_arg, default=parse_size("10k"),
                        help="number of messages: an integer or 10k / 100k / 1m (default 10k)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--home", help="output HERMES_HOME (default: $HERMES_HOME or ~/.hermes)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing state.db in that home")
    parser.add_argument("--now", type=float, default=None, metavar="EPOCH",
                        help="anchor timestamps at this Unix time (default: now); the same "
                        "size, seed and --now give a byte-identical database")
    parser.add_argument("--schema", type=int, choices=_SCHEMAS, default=16,
                        help="store layout: 16 (what this program creates) or 30 (a store "
                        "born at upstream schema 30) (default 16)")
    args = parser.parse_args(argv)

    home = _home_arg(args.home)
    db_path = home / "state.db"
    problem = _remove_existing(db_path, args.overwrite)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"Error: cannot create {home}: {exc}", file=sys.stderr)
        return 1

    from hermes_workload.corpus import generate_corpus  # noqa: PLC0415

    from .progress import progress_bar  # noqa: PLC0415 - only this command draws a bar

    started = time.monotonic()
    try:
        # Not transient: the finished bar stays, and stopping it ends its line.
        with progress_bar("generating", "messages", args.size) as on_progress:
            stats = generate_corpus(db_path, messages=args.size, seed=args.seed,
                                    now=args.now, progress=on_progress, schema=args.schema)
            on_progress(args.size)
    except KeyboardInterrupt:
        print("Cancelled.", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - never a traceback for a person
        print(f"Error: generating {db_path} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - started
    sessions = getattr(stats, "sessions", None)
    detail = f" in {sessions} sessions" if sessions is not None else ""
    print(f"Generated {args.size} messages{detail} in {db_path} "
          f"({elapsed:.1f} s, seed {args.seed}, schema {args.schema}).")
    return 0
