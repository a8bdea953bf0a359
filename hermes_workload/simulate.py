"""A gateway-like concurrent writer: realistic workload for demos, tests and benchmarks.

:func:`run_simulation` (behind ``hermes sessions simulate``, whose options live in
``hermes_tui.cli_workload``) starts one or more writer *processes* that act like upstream
Hermes' gateway and CLI on a ``HERMES_HOME``:

* every write goes through :class:`~hermes_state.db.SessionDB`'s real write path (the same
  ``BEGIN IMMEDIATE`` + jittered retry the agent uses), so several writers and a reading
  browser exercise the genuine lock behaviour;
* gateway lanes are routed by :class:`~hermes_state.gateway.GatewaySessionStore`
  (session keys, idle/daily/suspended resets, ``sessions.json`` by atomic replace). Several
  writer processes share ``sessions.json``: each update is a read-modify-write under an
  exclusive ``fcntl`` lock on ``<home>/sessions/.sessions.lock``, so no writer loses another
  writer's lanes;
* conversations have user / assistant / tool messages with OpenAI-shape tool calls, English
  and CJK text, titles after the first exchange, compression splits, ``/branch`` branches,
  delegated sub-agents and token accounting (absolute totals for gateway sessions, per-call
  deltas for CLI sessions, as upstream does).

Time. Lane resets (GW-9) need hours of inactivity. Instead of moving a global clock (which
would push gateway ids and lane timestamps days into the future, and make a browser watching
the run show nonsense such as "resets in 6d"), the simulator *ages lanes*: now and then a
"quiet night" falls on some idle lanes, whose ``updated_at`` in ``sessions.json`` is moved
back past the idle deadline or before the last daily boundary, under the index lock. The
next message on such a lane goes through the store's real reset evaluation and starts a new
incarnation, ending the old session with ``session_reset``. The first quiet night comes
within the first twenty events, so even a short run shows resets; the order of actions and
all texts depend only on the seed. ``age_lanes=False`` (``--realtime``) disables aging: lanes
then reset only as they would in production. ``clock`` (default ``datetime.now``) is the
gateway clock for ids and lane times; ``SessionDB`` stamps rows with ``time.time()``.

Verification. With a log path, each writer appends one JSON line per write *after* the
database call returned (``kind`` = ``message``, ``session``, ``end``, ``title``), flushed
immediately. :func:`verify_simulation` compares those logs with the database: every logged
message exists exactly once with the logged role and content hash, nothing unlogged was
added to a logged session, counters match, FTS tables are complete, integrity is ok, and
every lane of ``sessions.json`` points at an existing row.

Nothing here imports a UI toolkit or parses a command line: the options are arguments, and
``hermes_tui.cli_workload`` owns the command (arguments, messages, signals). This package
uses ``hermes_state``; ``hermes_state`` never imports it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import queue as queue_module
import random
import signal
import sqlite3
import time
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

try:  # POSIX only; the cross-process sessions.json lock needs it.
    import fcntl
except ImportError:  # pragma: no cover - not reachable on the supported platforms
    fcntl = None  # type: ignore[assignment]

from hermes_state import SessionDB
from hermes_state.gateway import (
    SESSION_RESET_END_REASON,
    GatewayConfig,
    GatewaySessionStore,
    Platform,
    SessionSource,
    generate_session_id,
    load_gateway_config,
    load_sessions_index,
    save_sessions_index,
)
from hermes_state.paths import sessions_dir as _sessions_dir

from .corpus import TOPIC_RATES, WORKSPACE_SUBDIRS, sample_title, sample_turn, sample_workspace
from .schema_v30 import V30_SCHEMA_VERSION, create_v30_store

__all__ = [
    "Simulator",
    "WriterReport",
    "SimulationReport",
    "run_writer",
    "run_simulation",
    "verify_simulation",
    "fts_integrity_problems",
    "prepare_home",
    "read_log",
    "generate_cli_session_id",
    "SESSIONS_LOCK_FILENAME",
]

SESSIONS_LOCK_FILENAME = ".sessions.lock"
#: End reasons this simulator writes besides ``compression``/``branched``/``session_reset``.
CLI_EXIT_END_REASON = "user_exit"
DELEGATE_DONE_END_REASON = "completed"
DELEGATE_INTERRUPTED_END_REASON = "interrupted"

_MAX_STEP_ATTEMPTS = 3
_MAX_ERROR_SAMPLES = 8


# ---------------------------------------------------------------------------------------
# Clock
# ---------------------------------------------------------------------------------------


def generate_cli_session_id(now: datetime) -> str:
    """CLI/TUI session id ``YYYYMMDD_HHMMSS_<6 lowercase hex>`` (CLI-16)."""
    return f"{now:%Y%m%d_%H%M%S}_{uuid.uuid4().hex[:6]}"


def _aged_update_time(
    config: GatewayConfig, source: SessionSource, now: datetime, r: float
) -> Optional[datetime]:
    """A last-activity time that makes the lane's policy reset it on the next message.

    ``r`` in [0, 1) picks the kind: past the idle deadline, or shortly before the latest
    daily boundary (which may also be past the idle deadline; GW-9 then says idle). None
    when the policy never resets.
    """
    policy = config.get_reset_policy(source.platform, source.chat_type)
    can_idle = policy.mode in ("idle", "both")
    can_daily = policy.mode in ("daily", "both")
    if can_idle and (not can_daily or r < 0.6):
        return now - timedelta(minutes=policy.idle_minutes, hours=1 + 10 * r)
    if can_daily:
        boundary = now.replace(hour=policy.at_hour, minute=0, second=0, microsecond=0)
        if now < boundary:
            boundary -= timedelta(days=1)
        return boundary - timedelta(minutes=5 + 100 * r)
    return None


# ---------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------
# Message text comes from the benchmark corpus generator (hermes_workload.corpus), so the live
# workload, the benchmarks and the demo share one vocabulary: Zipf-like English, about one
# conversation in eight in Chinese, Japanese or Korean, OpenAI-shape tool calls.

_LANGUAGES = (("en", 0.88), ("zh", 0.05), ("ja", 0.04), ("ko", 0.03))
_THEMES = tuple(TOPIC_RATES)
_MODELS = [
    "anthropic/claude-sonnet-4", "openai/gpt-4.1", "nousresearch/hermes-4-70b", "qwen/qwen3-coder",
]
_SYSTEM_PROMPT = "You are Hermes, a helpful assistant."
_USER_NAMES = ["Alice", "Bob", "Carol", "Dmitri", "王芳", "佐藤", "Ines", "Kofi"]
#: Chat messages sometimes look like markup or escapes; every viewer must show them as data.
_MARKUP_LOOKALIKES = (
    " The log says [bold]ERROR[/bold] at arr[0].",
    " Path: C:\\temp\\new [/] \\[dim]",
    " <memory-context>not a real block</memory-context>",
)


class _Text:
    """Deterministic conversation text from one ``random.Random`` (via the corpus)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def language(self) -> str:
        return self.rng.choices([l for l, _ in _LANGUAGES], weights=[w for _, w in _LANGUAGES])[0]

    def themes(self) -> tuple[str, ...]:
        return (self.rng.choice(_THEMES),)

    def title(self, lang: str, themes: tuple[str, ...]) -> str:
        return sample_title(self.rng, lang=lang, themes=themes)

    def turn(self, lang: str, themes: tuple[str, ...]) -> list[dict[str, Any]]:
        messages = sample_turn(self.rng, lang=lang, themes=themes)
        if messages and messages[0].get("role") == "user" and self.rng.random() < 0.05:
            messages[0] = {**messages[0], "content": (messages[0].get("content") or "")
                           + self.rng.choice(_MARKUP_LOOKALIKES)}
        return messages


def _content_hash(content: Optional[str]) -> Optional[str]:
    if content is None:
        return None
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------

_COUNTERS = (
    "events",
    "sessions",
    "messages",
    "titles",
    "title_conflicts",
    "compressions",
    "branches",
    "delegates",
    "resets",
    "lanes",
    "rewinds",
    "archives",
    "pins",
    "workspace_moves",
    "errors",
)


@dataclass
class WriterReport:
    """What one writer did. ``events`` counts scheduled actions (≈ one database write each)."""

    writer_index: int = 0
    events: int = 0
    sessions: int = 0
    messages: int = 0
    titles: int = 0
    title_conflicts: int = 0
    compressions: int = 0
    branches: int = 0
    delegates: int = 0
    resets: int = 0
    lanes: int = 0
    rewinds: int = 0
    archives: int = 0  # archive and unarchive calls
    pins: int = 0  # pin and unpin (v30 stores only)
    workspace_moves: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "WriterReport":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class SimulationReport:
    """Totals over all writers of one :func:`run_simulation`."""

    writers: int = 0
    elapsed: float = 0.0
    interrupted: bool = False
    events: int = 0
    sessions: int = 0
    messages: int = 0
    titles: int = 0
    title_conflicts: int = 0
    compressions: int = 0
    branches: int = 0
    delegates: int = 0
    resets: int = 0
    lanes: int = 0
    rewinds: int = 0
    archives: int = 0
    pins: int = 0
    workspace_moves: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    per_writer: list[WriterReport] = field(default_factory=list)

    @property
    def events_per_second(self) -> float:
        """Sum of the writers' own rates (their run time excludes process start-up)."""
        return sum(w.events / w.elapsed for w in self.per_writer if w.elapsed > 0)

    def add(self, report: WriterReport) -> None:
        self.per_writer.append(report)
        for name in _COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(report, name))
        room = _MAX_ERROR_SAMPLES - len(self.error_samples)
        if room > 0:
            self.error_samples.extend(
                f"writer {report.writer_index}: {text}" for text in report.error_samples[:room]
            )

    def summary(self) -> str:
        """A few lines for a person (the CLI prints this)."""
        head = "Stopped" if self.interrupted else "Done"
        lines = [
            f"{head}: {self.writers} writer{'s' if self.writers != 1 else ''}, "
            f"{self.elapsed:.1f} s, {self.events} events ({self.events_per_second:.1f}/s)",
            f"  sessions {self.sessions}  messages {self.messages}  lanes {self.lanes}  "
            f"titles {self.titles}",
            f"  compressions {self.compressions}  branches {self.branches}  "
            f"delegates {self.delegates}  resets {self.resets}",
            f"  rewinds {self.rewinds}  archive/unarchive {self.archives}  pin/unpin {self.pins}  "
            f"cwd changes {self.workspace_moves}",
            f"  errors {self.errors}"
            + (f"  (title races lost: {self.title_conflicts})" if self.title_conflicts else ""),
        ]
        lines.extend(f"  ! {text}" for text in self.error_samples)
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# The writer
# ---------------------------------------------------------------------------------------


@dataclass
class _Lane:
    source: SessionSource
    key: str
    conv: Optional["_Conv"] = None


@dataclass
class _Conv:
    """One logical conversation; ``session_id`` moves on through compressions and branches."""

    kind: str  # "gateway" | "cli" | "delegate"
    session_id: str
    source: str
    model: str
    lang: str
    themes: tuple
    base_title: str
    user_id: Optional[str] = None
    lane: Optional[_Lane] = None
    parent_session_id: Optional[str] = None
    title: Optional[str] = None
    row_created: bool = False
    message_count: int = 0
    exchanges: int = 0
    compress_at: int = 16
    ended: bool = False
    pending: deque = field(default_factory=deque)
    transcript: list = field(default_factory=list)
    # cumulative per SQLite session (gateway writes them as absolute totals)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    api_calls: int = 0
    cost: float = 0.0
    # the latest API call (CLI sessions write these as deltas)
    call_input: int = 0
    call_output: int = 0
    call_cache: int = 0
    # per turn, for the lane's sessions.json totals
    turn_input: int = 0
    turn_output: int = 0
    # current-upstream shapes: lineage markers of the current row (``_delegate_from``,
    # ``_branched_from``, ``_reset_from``), the workspace, the user messages of this row
    # (rewind targets) and how its title came about (v30 ``title_source``)
    markers: dict = field(default_factory=dict)
    workspace: Optional[tuple] = None
    user_message_ids: list = field(default_factory=list)
    title_source: Optional[str] = None


@dataclass
class _Step:
    kind: str
    conv: _Conv
    data: dict = field(default_factory=dict)
    attempts: int = 0
    #: how far a multi-write step got, so a retry after a lock error never repeats a write
    #: that already committed (a message must not be appended twice)
    stage: int = 0


class Simulator:
    """One writer: a gateway with a handful of chat lanes plus a CLI user, in one process.

    Call :meth:`step` once per event and :meth:`close` at the end (or use :func:`run_writer`).
    All randomness comes from ``seed`` and ``writer_index``; lanes of different writers have
    different chat ids, so writers sharing a home never route into each other's sessions.
    """

    def __init__(
        self,
        home: Path,
        *,
        seed: int = 0,
        writer_index: int = 0,
        log_path: Optional[Path] = None,
        clock: Callable[[], datetime] = datetime.now,
        config: Optional[GatewayConfig] = None,
        age_lanes: bool = True,
        max_lanes: int = 6,
        max_cli: int = 2,
    ) -> None:
        self.home = Path(home)
        self.writer_index = writer_index
        self.rng = random.Random(f"hermes-sim:{seed}:{writer_index}")
        self.text = _Text(self.rng)
        self.clock = clock
        self.age_lanes = age_lanes
        self.report = WriterReport(writer_index=writer_index)
        self.sessions_dir = _sessions_dir(self.home)
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        self.config = config if config is not None else load_gateway_config(self.home)
        self.db = SessionDB(self.home / "state.db")
        caps = self.db.capabilities
        #: The store has upstream v30's columns (pins, prompts by hash, workspace, reset
        #: keys, compaction history, scaffolding rows): rows are written in that layout.
        self.v30 = all((caps.has_pinned, caps.has_hidden, caps.has_system_prompts,
                        caps.has_session_key, caps.has_git_branch, caps.has_title_source,
                        caps.has_last_activity_at, caps.has_compacted, caps.has_display_kind))
        self.can_archive = caps.has_archived
        self.can_rewind = caps.has_active
        self.can_cwd = caps.has_cwd
        #: Sessions whose whole lineage ended (CLI exits, reset lanes): archive candidates.
        self._archivable: list[str] = []
        self._archived: list[str] = []
        self._pinned: list[str] = []
        self._lock_fd: Optional[int] = None
        self._log = open(log_path, "a", encoding="utf-8") if log_path is not None else None
        self.max_lanes = max_lanes
        self.max_cli = max_cli
        self.lane_pool = self._make_lane_pool()
        self.lanes: list[_Lane] = []
        self.cli_convs: list[_Conv] = []
        self.focus: Optional[_Conv] = None
        self._deferred: list[tuple[str, tuple]] = []
        self._event_index = 0
        # The first quiet night comes early (seeded), so every run of a few dozen events
        # shows resets under any policy other than "none" (GW-9).
        self._next_quiet_event = self.rng.randint(10, 19)

    # -- lanes ------------------------------------------------------------------------

    def _make_lane_pool(self) -> list[SessionSource]:
        w = self.writer_index
        base = 7_000_000 + w * 1000
        user = lambda i: _USER_NAMES[(w + i) % len(_USER_NAMES)]  # noqa: E731
        pool = [
            SessionSource(platform=Platform.TELEGRAM, chat_id=str(base + 1), chat_type="dm",
                          user_id=str(base + 1), user_name=user(0)),
            SessionSource(platform=Platform.DISCORD, chat_id=f"{base + 2}", chat_type="group",
                          chat_name=f"ops-{w}", user_id=f"u{base + 2}", user_name=user(1),
                          thread_id=f"thread_{w}", guild_id="g42"),
            SessionSource(platform=Platform.SLACK, chat_id=f"C{base + 3}", chat_type="channel",
                          chat_name=f"eng-{w}", user_id=f"U{base + 3}", user_name=user(2)),
            SessionSource(platform=Platform.WHATSAPP, chat_id=f"601{base + 4}@s.whatsapp.net",
                          chat_type="dm", user_id=f"601{base + 4}:12@s.whatsapp.net",
                          user_name=user(3)),
            SessionSource(platform=Platform.SIGNAL, chat_id=f"+4917{base + 5}", chat_type="dm",
                          user_id=f"+4917{base + 5}", user_id_alt=f"uuid-{w}-5", user_name=user(4)),
            SessionSource(platform=Platform.TELEGRAM, chat_id=f"-100{base + 6}", chat_type="group",
                          chat_name=f"Team {w}", user_id=str(base + 60), user_name=user(5)),
            SessionSource(platform=Platform.MATRIX, chat_id=f"!room{base + 7}:example.org",
                          chat_type="group", chat_name=f"infra-{w}", user_id=f"@u{w}:example.org",
                          user_name=user(6)),
        ]
        self.rng.shuffle(pool)
        return pool

    @contextlib.contextmanager
    def _index_lock(self) -> Iterator[None]:
        """Exclusive cross-process lock for a read-modify-write of ``sessions.json``."""
        if fcntl is None:  # pragma: no cover
            raise RuntimeError("the simulator needs fcntl (POSIX) to share sessions.json")
        if self._lock_fd is None:
            self._lock_fd = os.open(
                str(self.sessions_dir / SESSIONS_LOCK_FILENAME), os.O_RDWR | os.O_CREAT, 0o644
            )
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _store(self) -> GatewaySessionStore:
        # A fresh store per locked section: it loads sessions.json on first use, so it always
        # starts from what every writer has saved so far (never from a stale cached copy).
        return GatewaySessionStore(self.sessions_dir, self.config, db=None, now=self.clock)

    # -- logging / errors --------------------------------------------------------------

    def _emit(self, record: dict[str, Any]) -> None:
        if self._log is None:
            return
        record = {"writer": self.writer_index, **record}
        self._log.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._log.flush()

    def _error(self, exc: BaseException, context: str) -> None:
        self.report.errors += 1
        if len(self.report.error_samples) < _MAX_ERROR_SAMPLES:
            self.report.error_samples.append(f"{context}: {type(exc).__name__}: {exc}")

    # -- database wrappers (log after the call returned) --------------------------------

    def _create_row(self, conv: _Conv, edge: str) -> None:
        if conv.row_created:
            return
        config = {"temperature": 0.7, "max_tokens": 4096, **conv.markers}
        if self.v30:
            self._create_row_v30(conv, config)
        else:
            self.db.create_session(
                session_id=conv.session_id,
                source=conv.source,
                model=conv.model,
                model_config=config,
                system_prompt=_SYSTEM_PROMPT,
                user_id=conv.user_id,
                parent_session_id=conv.parent_session_id,
                cwd=conv.workspace[0] if conv.workspace and self.can_cwd else None,
            )
        conv.row_created = True
        self.report.sessions += 1
        self._emit(
            {
                "kind": "session",
                "session_id": conv.session_id,
                "source": conv.source,
                "parent_session_id": conv.parent_session_id,
                "edge": edge,
            }
        )

    def _create_row_v30(self, conv: _Conv, config: dict[str, Any]) -> None:
        """A session row as upstream v30 writes it: the prompt in ``system_prompts`` by hash,
        delegates as ``source = 'subagent'``, the lane's key for gateway sessions, the git
        workspace for CLI ones. Sessions and prompts only; the FTS triggers are untouched."""
        digest = hashlib.sha256(_SYSTEM_PROMPT.encode("utf-8")).hexdigest()
        lane = conv.lane.source if conv.lane is not None else None
        cwd, branch, root = conv.workspace or (None, None, None)
        now = time.time()
        values = (
            conv.session_id, "subagent" if conv.kind == "delegate" else conv.source, conv.user_id,
            conv.lane.key if conv.lane is not None else None,
            lane.chat_id if lane is not None else None, lane.chat_type if lane is not None else None,
            conv.model, json.dumps(config), digest, conv.parent_session_id, now, cwd, branch, root, now,
        )

        def do(c: sqlite3.Connection) -> None:
            c.execute("INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)",
                      (digest, _SYSTEM_PROMPT))
            c.execute(
                "INSERT OR IGNORE INTO sessions (id, source, user_id, session_key, chat_id, "
                "chat_type, model, model_config, system_prompt_hash, parent_session_id, "
                "started_at, cwd, git_branch, git_repo_root, last_activity_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )

        self.db.store.write(do)

    def _end(self, session_id: str, reason: str) -> None:
        self.db.end_session(session_id, reason)
        self._emit({"kind": "end", "session_id": session_id, "end_reason": reason})

    def _create_or_defer(self, conv: _Conv, edge: str) -> None:
        """Create a lane's row; on lock trouble retry at every later event and at close.

        ``sessions.json`` already names the new id (the store saves before the row exists,
        as upstream's gateway does), so the row must not depend on that lane being picked
        again before the run ends.
        """
        try:
            self._create_row(conv, edge)
        except sqlite3.OperationalError as exc:
            self._error(exc, f"create {conv.session_id}")
            self._deferred.append(("create", (conv, edge)))

    def _end_or_defer(self, session_id: str, reason: str) -> None:
        try:
            self._end(session_id, reason)
        except sqlite3.OperationalError as exc:
            self._error(exc, f"end {session_id}")
            self._deferred.append(("end", (session_id, reason)))

    def _append(self, conv: _Conv, msg: dict[str, Any]) -> int:
        self._create_row(conv, "root")
        message_id = self.db.append_message(
            conv.session_id,
            msg["role"],
            msg.get("content"),
            tool_name=msg.get("tool_name"),
            tool_calls=msg.get("tool_calls"),
            tool_call_id=msg.get("tool_call_id"),
            token_count=msg.get("token_count"),
            finish_reason=msg.get("finish_reason"),
            reasoning=msg.get("reasoning"),
        )
        conv.message_count += 1
        conv.transcript.append(msg)
        if msg["role"] == "user":
            conv.user_message_ids.append(message_id)
        self.report.messages += 1
        self._emit(
            {
                "kind": "message",
                "session_id": conv.session_id,
                "message_id": message_id,
                "role": msg["role"],
                "content_sha256": _content_hash(msg.get("content")),
                "tool_name": msg.get("tool_name"),
                "tool_call_id": msg.get("tool_call_id"),
            }
        )
        return message_id

    def _append_v30_row(self, conv: _Conv, content: str, *, compacted: bool = False,
                        display_kind: Optional[str] = None) -> int:
        """A v30-only user row no public method writes: a compaction summary kept as history
        (``compacted = 1``, ``active = 0``) or hidden scaffolding (``display_kind``). One
        transaction with the counters, as ``append_message``; the triggers index it."""
        self._create_row(conv, "root")
        values = (conv.session_id, "user", content, time.time(), 0 if compacted else 1,
                  int(compacted), int(compacted), display_kind)

        def do(c: sqlite3.Connection) -> int:
            cursor = c.execute(
                "INSERT INTO messages (session_id, role, content, timestamp, active, compacted, "
                "_compressed_summary, display_kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            c.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?",
                      (conv.session_id,))
            return int(cursor.lastrowid)

        message_id = self.db.store.write(do)
        conv.message_count += 1
        self.report.messages += 1
        self._emit({
            "kind": "message", "session_id": conv.session_id, "message_id": message_id,
            "role": "user", "content_sha256": _content_hash(content), "tool_name": None,
            "tool_call_id": None, "compacted": compacted, "display_kind": display_kind,
        })
        return message_id

    def _write_v30(self, sql: str, params: tuple) -> None:
        self.db.store.write(lambda c: c.execute(sql, params))

    def _set_title(self, conv: _Conv, base: str) -> Optional[str]:
        """TI-6/TI-7: ask for the next free lineage title, retry once if another writer won."""
        for attempt in range(2):
            title = self.db.get_next_title_in_lineage(base)
            try:
                self.db.set_session_title(conv.session_id, title)
            except ValueError as exc:
                if "already in use" in str(exc) and attempt == 0:
                    continue
                self.report.title_conflicts += 1
                return None
            stored = self.db.get_session_title(conv.session_id)
            conv.title = stored
            if self.v30:
                # How the title came about (upstream v30): the auxiliary titler ("llm"),
                # /branch ("branch"); a compression continuation keeps none.
                self._write_v30("UPDATE sessions SET title_source = ? WHERE id = ?",
                                (conv.title_source, conv.session_id))
            self.report.titles += 1
            self._emit({"kind": "title", "session_id": conv.session_id, "title": stored})
            return stored
        return None  # pragma: no cover

    def _flush_deferred(self) -> None:
        if not self._deferred:
            return
        remaining: list[tuple[str, tuple]] = []
        for op, args in self._deferred:
            try:
                if op == "end":
                    self._end(*args)
                elif op == "create":
                    self._create_row(*args)  # no-op if an append created it meanwhile
            except sqlite3.OperationalError as exc:
                self._error(exc, f"retry {op}")
                remaining.append((op, args))
        self._deferred = remaining

    # -- conversations -------------------------------------------------------------------

    def _new_conv(self, kind: str, session_id: str, source: str, **extra: Any) -> _Conv:
        lang = extra.pop("lang", None) or self.text.language()
        themes = extra.pop("themes", None) or self.text.themes()
        return _Conv(
            kind=kind,
            session_id=session_id,
            source=source,
            model=extra.pop("model", None) or self.rng.choice(_MODELS),
            lang=lang,
            themes=themes,
            base_title=self.text.title(lang, themes),
            compress_at=self.rng.randint(10, 22),
            workspace=extra.pop("workspace", None) or (
                sample_workspace(self.rng) if kind == "cli" and self.rng.random() < 0.8 else None),
            **extra,
        )

    def _touch_lane(self, lane: _Lane) -> Optional[_Conv]:
        """An incoming message on a lane: GW-5 get-or-create, with resets applied to the db."""
        with self._index_lock():
            store = self._store()
            old = store.get(lane.key)
            old_id = old.session_id if old is not None else None
            entry = store.get_or_create_session(lane.source)
        new_id = entry.session_id
        platform = lane.source.platform.value
        if old_id is not None and new_id != old_id:
            # Idle / daily / suspended reset: the gateway retires the previous incarnation.
            self.report.resets += 1
            self._end_or_defer(old_id, SESSION_RESET_END_REASON)
            self._archivable.append(old_id)
            lane.conv = self._new_conv(
                "gateway", new_id, platform, user_id=lane.source.user_id, lane=lane
            )
            if self.v30:
                # Upstream v30 links a lane's next session to the one its reset ended
                # (same session_key, ``_reset_from``): a reset child, listed on its own.
                lane.conv.parent_session_id = old_id
                lane.conv.markers = {"_reset_from": old_id}
            self._create_or_defer(lane.conv, "reset")
        elif old_id is None or lane.conv is None or lane.conv.session_id != new_id:
            lane.conv = self._adopt_or_create(lane, new_id, fresh=old_id is None)
        return lane.conv

    def _adopt_or_create(self, lane: _Lane, session_id: str, fresh: bool) -> _Conv:
        platform = lane.source.platform.value
        row = None if fresh else self.db.get_session(session_id)
        if row is not None and row.get("ended_at") is not None:
            # A lane left by an earlier run points at an ended session: start a new one.
            with self._index_lock():
                entry = self._store().get_or_create_session(lane.source, force_new=True)
            session_id = entry.session_id
            row = None
        conv = self._new_conv("gateway", session_id, platform, user_id=lane.source.user_id, lane=lane)
        if row is None:
            self._create_or_defer(conv, "lane")
        else:
            conv.row_created = True
            conv.title = row.get("title")
            conv.message_count = int(row.get("message_count") or 0)
            conv.exchanges = 1 if conv.title else 0
            conv.input_tokens = int(row.get("input_tokens") or 0)
            conv.output_tokens = int(row.get("output_tokens") or 0)
        return conv

    def _plan_turn(self, conv: _Conv) -> list[_Step]:
        """The events of one exchange: [compress] [branch] user, tool rounds, answer, done."""
        steps: list[_Step] = []
        if conv.kind != "delegate" and conv.message_count >= conv.compress_at:
            steps.append(_Step("compress", conv))
        if conv.kind == "cli" and conv.exchanges >= 1 and self.rng.random() < 0.15:
            steps.append(_Step("branch", conv))
        elif (conv.kind == "cli" and self.can_rewind and len(conv.user_message_ids) >= 2
              and self.rng.random() < 0.2):
            # /undo: the last exchange is rewound (active = 0) and asked again differently.
            steps.append(_Step("rewind", conv))
        if conv.kind == "cli" and conv.workspace and conv.workspace[2] and self.can_cwd \
                and self.rng.random() < 0.06:
            steps.append(_Step("cwd", conv, {"subdir": self.rng.choice(WORKSPACE_SUBDIRS),
                                              "checkout": self.rng.random() < 0.4}))
        if self.v30 and conv.kind == "gateway" and conv.message_count == 0 and self.rng.random() < 0.15:
            steps.append(_Step("scaffold", conv))
        turn = self.text.turn(conv.lang, conv.themes)
        steps.append(_Step("message", conv, turn[0]))
        if self.rng.random() < 0.12:
            # The agent hands part of the work to a sub-agent before answering.
            steps.extend(self._plan_delegate(conv))
        steps.extend(_Step("message", conv, msg) for msg in turn[1:])
        steps.append(_Step("turn_done", conv))
        return steps

    def _plan_delegate(self, parent: _Conv) -> list[_Step]:
        """``delegate_task``: a child session created while the parent is live (LI-1)."""
        call_id = f"call_{self.rng.getrandbits(96):024x}"
        child = self._new_conv(
            "delegate", "", parent.source, lang=parent.lang, themes=parent.themes,
            model=parent.model, user_id=parent.user_id,
        )
        work = self.text.turn(parent.lang, parent.themes)
        goal = work[0].get("content") or "Investigate the failure."
        answer = next(
            (m.get("content") for m in reversed(work) if m.get("role") == "assistant" and m.get("content")),
            "Done.",
        )
        steps = [
            _Step("message", parent, {
                "role": "assistant", "content": None, "finish_reason": "tool_calls",
                "tool_calls": [{"id": call_id, "type": "function", "function": {
                    "name": "delegate_task",
                    "arguments": json.dumps({"goal": goal}),
                }}],
            }),
            _Step("delegate_begin", child, {"parent": parent}),
        ]
        steps.extend(_Step("message", child, msg) for msg in work)
        steps.append(_Step("delegate_end", child, {"parent": parent, "call_id": call_id,
                                                   "summary": answer}))
        return steps

    # -- step execution -------------------------------------------------------------------

    def _run(self, step: _Step) -> None:
        conv = step.conv
        kind = step.kind
        if kind == "message":
            if step.stage == 0:
                if step.data["role"] == "assistant":
                    self._account_call(conv, step.data)
                step.stage = 1
            if step.stage == 1:
                self._append(conv, dict(step.data))
                step.stage = 2
            if step.stage == 2 and step.data["role"] == "assistant":
                self._write_tokens(conv)
            step.stage = 3
        elif kind == "copy":
            # /branch copies the transcript: stored again, but no API call happened.
            self._append(conv, dict(step.data))
        elif kind == "turn_done":
            self._turn_done(conv)
        elif kind == "title":
            if conv.title is None:
                self._set_title(conv, conv.base_title)
        elif kind == "compress":
            self._compress(conv, step)
        elif kind == "branch":
            self._branch(conv, step)
        elif kind == "rewind":
            self._rewind(conv, step)
        elif kind == "cwd":
            self._move_workspace(conv, step)
        elif kind == "scaffold":
            who = conv.lane.source.user_name if conv.lane is not None else "user"
            self._append_v30_row(conv, f"[{conv.source} context] {who} writes from a "
                                 f"{conv.lane.source.chat_type if conv.lane else 'dm'} chat; "
                                 "reply in plain text.", display_kind="hidden")
        elif kind == "delegate_begin":
            parent: _Conv = step.data["parent"]
            if not conv.session_id:
                conv.session_id = generate_cli_session_id(self.clock())
                conv.parent_session_id = parent.session_id
                conv.markers = {"_delegate_from": parent.session_id}
            self._create_row(conv, "delegate")
            if not step.data.get("counted"):
                step.data["counted"] = True
                self.report.delegates += 1
        elif kind == "delegate_end":
            parent = step.data["parent"]
            if conv.session_id and not conv.ended:
                self._end(conv.session_id, DELEGATE_DONE_END_REASON)
                conv.ended = True
            summary = json.dumps(
                {"status": "completed", "session_id": conv.session_id,
                 "summary": step.data["summary"]},
                ensure_ascii=False,
            )
            step.kind = "message"  # on a retry only the tool result remains to be written
            step.stage = 0
            step.conv = parent
            step.data = {"role": "tool", "content": summary, "tool_name": "delegate_task",
                         "tool_call_id": step.data["call_id"]}
            self._run(step)
        else:  # pragma: no cover - programming error
            raise ValueError(f"unknown step {kind}")

    def _account_call(self, conv: _Conv, msg: dict[str, Any]) -> None:
        prompt = 900 + 120 * conv.message_count + self.rng.randint(0, 400)
        jitter = self.rng.randint(5, 60)
        output = int(msg.get("token_count") or max(8, len(msg.get("content") or "") // 4 + jitter))
        msg["token_count"] = output
        conv.call_input, conv.call_output = prompt, output
        conv.call_cache = int(prompt * 0.6) if conv.api_calls else 0
        conv.input_tokens += prompt
        conv.output_tokens += output
        conv.cache_read_tokens += conv.call_cache
        conv.api_calls += 1
        conv.cost += prompt * 3e-6 + output * 15e-6
        conv.turn_input += prompt
        conv.turn_output += output

    def _write_tokens(self, conv: _Conv) -> None:
        common = dict(model=conv.model, cost_status="estimated", cost_source="simulated",
                      billing_provider="openrouter", billing_mode="pay_per_token")
        if conv.kind == "gateway":
            # The gateway reports cumulative totals of the agent it runs for the session.
            self.db.update_token_counts(
                conv.session_id, input_tokens=conv.input_tokens, output_tokens=conv.output_tokens,
                cache_read_tokens=conv.cache_read_tokens, estimated_cost_usd=round(conv.cost, 6),
                api_call_count=conv.api_calls, absolute=True, **common,
            )
        else:
            # The CLI reports each API call as a delta.
            self.db.update_token_counts(
                conv.session_id, input_tokens=conv.call_input, output_tokens=conv.call_output,
                cache_read_tokens=conv.call_cache,
                estimated_cost_usd=round(conv.call_input * 3e-6 + conv.call_output * 15e-6, 6),
                api_call_count=1, **common,
            )

    def _turn_done(self, conv: _Conv) -> None:
        conv.exchanges += 1
        if conv.title is None and conv.exchanges == 1:
            # Auto-title after the first exchange (TI-7); a separate event, as upstream's
            # auxiliary titler runs after the answer was stored.
            conv.title_source = "llm"
            conv.pending.appendleft(_Step("title", conv))
        if self.v30 and conv.row_created:
            self._write_v30("UPDATE sessions SET last_activity_at = ? WHERE id = ?",
                            (time.time(), conv.session_id))
        if conv.lane is not None:
            with self._index_lock():
                store = self._store()
                entry = store.update_session(
                    conv.lane.key, input_tokens=conv.turn_input, output_tokens=conv.turn_output,
                    last_prompt_tokens=conv.call_input,
                )
                if entry is not None and entry.resume_pending:
                    store.clear_resume_pending(conv.lane.key)
                r = self.rng.random()
                if r < 0.03:
                    store.mark_resume_pending(conv.lane.key, self.rng.choice(
                        ["restart_timeout", "shutdown_timeout", "restart_interrupted"]))
                elif r < 0.045:
                    store.suspend_session(conv.lane.key)
        conv.turn_input = conv.turn_output = 0

    def _compress(self, conv: _Conv, step: _Step) -> None:
        """Context compression: end with ``compression``, continue in a titled child."""
        data = step.data
        if "child" not in data:
            make_id = generate_session_id if conv.kind == "gateway" else generate_cli_session_id
            data["parent"] = conv.session_id
            data["parent_title"] = conv.title
            data["child"] = make_id(self.clock())
            self.report.compressions += 1
        parent_id, child_id = data["parent"], data["child"]
        if self.v30 and not data.get("compacted") and conv.session_id == parent_id:
            # v30 keeps the compaction summary in the parent as history (compacted = 1).
            recent = [m.get("content") for m in conv.transcript if m.get("role") == "user"][-2:]
            self._append_v30_row(conv, "[CONTEXT COMPACTION] Summary of earlier turns: "
                                 + (" / ".join(c for c in recent if c) or "nothing kept"),
                                 compacted=True)
            data["compacted"] = True
        if not data.get("ended"):
            self._end(parent_id, "compression")
            data["ended"] = True
        if conv.session_id == parent_id:
            conv.session_id = child_id
            conv.parent_session_id = parent_id
            conv.markers = {}
            conv.user_message_ids = []
            conv.title_source = None
            conv.row_created = False
            conv.title = None
            conv.message_count = 0
            conv.input_tokens = conv.output_tokens = conv.cache_read_tokens = conv.api_calls = 0
            conv.cost = 0.0
            conv.compress_at = self.rng.randint(10, 22)
        self._create_row(conv, "compression")
        if conv.lane is not None and not data.get("lane_moved"):
            with self._index_lock():
                entries = load_sessions_index(self.sessions_dir)
                entry = entries.get(conv.lane.key)
                if entry is not None and entry.session_id == parent_id:
                    entry.session_id = child_id
                    entry.updated_at = self.clock()
                    save_sessions_index(self.sessions_dir, entries)
            data["lane_moved"] = True
        if data.get("parent_title") and not data.get("titled"):
            self._set_title(conv, data["parent_title"])
            data["titled"] = True
        if not data.get("summary"):
            recent = [m.get("content") for m in conv.transcript if m.get("role") == "user"][-2:]
            summary = "[Context compacted] Earlier in this conversation: " + (
                " / ".join(c for c in recent if c) or "(no earlier prompts kept)"
            )
            conv.transcript = []
            self._append(conv, {"role": "user", "content": summary})
            data["summary"] = True

    def _branch(self, conv: _Conv, step: _Step) -> None:
        """``/branch``: end with ``branched``; the child copies the transcript and continues."""
        data = step.data
        if "child" not in data:
            data["parent"] = conv.session_id
            data["parent_title"] = conv.title
            data["child"] = generate_cli_session_id(self.clock())
            data["copy"] = list(conv.transcript)
            data["name"] = (
                self.text.title(conv.lang, conv.themes) if self.rng.random() < 0.4 else None
            )
            self.report.branches += 1
        parent_id, child_id = data["parent"], data["child"]
        if not data.get("ended"):
            self._end(parent_id, "branched")
            data["ended"] = True
        if conv.session_id == parent_id:
            conv.session_id = child_id
            conv.parent_session_id = parent_id
            conv.markers = {"_branched_from": parent_id}  # /branch's marker (upstream v16)
            conv.user_message_ids = []
            conv.title_source = "branch"
            conv.row_created = False
            conv.title = None
            conv.message_count = 0
            conv.transcript = []
        self._create_row(conv, "branch")
        if not data.get("titled"):
            base = data["name"] or data["parent_title"] or conv.base_title
            self._set_title(conv, base)
            data["titled"] = True
        # The copied transcript is written one message per event, before the next prompt.
        copies = [_Step("copy", conv, dict(m)) for m in data["copy"]]
        data["copy"] = []
        conv.pending.extendleft(reversed(copies))

    def _rewind(self, conv: _Conv, step: _Step) -> None:
        """``/undo``: rewind to this row's last user message (``SessionDB.rewind_to_message``)."""
        if len(conv.user_message_ids) < 2:
            return
        target = conv.user_message_ids[-1]
        result = self.db.rewind_to_message(conv.session_id, target)
        conv.user_message_ids.pop()
        last_user = max((i for i, m in enumerate(conv.transcript) if m.get("role") == "user"),
                        default=None)
        if last_user is not None:
            del conv.transcript[last_user:]
        self.report.rewinds += 1
        self._emit({"kind": "rewind", "session_id": conv.session_id, "message_id": target,
                    "rewound": result["rewound_count"]})

    def _move_workspace(self, conv: _Conv, step: _Step) -> None:
        """``cd`` inside the repository (``SessionDB.update_session_cwd``); on a v30 store a
        ``git checkout`` also moves ``git_branch``, as upstream records it."""
        _, branch, root = conv.workspace
        cwd = f"{root}/{step.data['subdir']}"
        self.db.update_session_cwd(conv.session_id, cwd)
        if self.v30 and step.data.get("checkout"):
            branch = f"wip/{step.data['subdir'].split('/')[-1]}"
            self._write_v30(
                "UPDATE sessions SET git_branch = ?, git_metadata_generation = "
                "git_metadata_generation + 1 WHERE id = ?", (branch, conv.session_id))
        conv.workspace = (cwd, branch, root)
        self.report.workspace_moves += 1
        self._emit({"kind": "cwd", "session_id": conv.session_id, "cwd": cwd,
                    "git_branch": branch if self.v30 else None})

    def _archive_one(self, archive: bool) -> None:
        """Archive a finished conversation, or unarchive one (``set_session_archived``: the
        whole compression lineage)."""
        pool = self._archivable if archive else self._archived
        session_id = pool.pop(self.rng.randrange(len(pool)))
        self.db.set_session_archived(session_id, archive)
        (self._archived if archive else self._archivable).append(session_id)
        self.report.archives += 1
        self._emit({"kind": "archive", "session_id": session_id, "archived": archive})

    def _pin_one(self) -> None:
        """Pin a conversation someone keeps coming back to, or unpin one (v30 ``pinned``)."""
        if self._pinned and self.rng.random() < 0.3:
            session_id, value = self._pinned.pop(self.rng.randrange(len(self._pinned))), 0
        else:
            live = [c for c in [l.conv for l in self.lanes] + self.cli_convs
                    if c is not None and c.row_created and c.session_id not in self._pinned]
            if not live:
                return
            session_id, value = self.rng.choice(live).session_id, 1
            self._pinned.append(session_id)
        self.db.set_session_pinned(session_id, bool(value))  # the public pin: the whole lineage
        self.report.pins += 1
        self._emit({"kind": "pin", "session_id": session_id, "pinned": bool(value)})

    def _begin_turn(self, conv: _Conv) -> None:
        conv.pending.extend(self._plan_turn(conv))

    # -- the event loop -----------------------------------------------------------------

    def _maybe_quiet_night(self) -> None:
        """Age some idle lanes as if nobody had written for a day (see module docstring)."""
        if not self.age_lanes or self._event_index < self._next_quiet_event:
            return
        idle = [l for l in self.lanes if l.conv is not None and not l.conv.pending]
        if not idle:
            self._next_quiet_event = self._event_index + 3
            return
        self._next_quiet_event = self._event_index + self.rng.randint(40, 120)
        chosen = self.rng.sample(idle, k=max(1, len(idle) // 2))
        plans = {lane.key: (lane, self.rng.random()) for lane in chosen}
        now = self.clock()
        with self._index_lock():
            entries = load_sessions_index(self.sessions_dir)
            changed = False
            for key, (lane, r) in plans.items():
                entry = entries.get(key)
                if entry is None or lane.conv is None or entry.session_id != lane.conv.session_id:
                    continue
                aged = _aged_update_time(self.config, lane.source, now, r)
                if aged is None:
                    continue
                entry.updated_at = aged
                entry.created_at = min(entry.created_at, aged)
                changed = True
            if changed:
                save_sessions_index(self.sessions_dir, entries)
        # The terminal user went home too: idle CLI sessions are closed.
        for conv in list(self.cli_convs):
            if not conv.pending and self.rng.random() < 0.7:
                self._close_cli(conv)

    def _close_cli(self, conv: _Conv) -> None:
        self.cli_convs.remove(conv)
        if self.focus is conv:
            self.focus = None
        if conv.row_created and not conv.ended:
            self._end_or_defer(conv.session_id, CLI_EXIT_END_REASON)
            self._archivable.append(conv.session_id)
        conv.ended = True

    def _choose(self) -> Optional[_Conv]:
        """Pick the conversation the next event belongs to (starting a turn if needed)."""
        if self.focus is not None and self.focus.pending and self.rng.random() < 0.8:
            return self.focus
        busy = [l.conv for l in self.lanes if l.conv is not None and l.conv.pending]
        busy += [c for c in self.cli_convs if c.pending]
        idle_cli = [c for c in self.cli_convs if not c.pending]
        options: list[tuple[str, float]] = []
        if busy:
            options.append(("continue", 3.0))
        if self.lanes:
            options.append(("lane", 4.0))
        if len(self.lanes) < min(self.max_lanes, len(self.lane_pool)):
            options.append(("new_lane", 1.5 if self.lanes else 4.0))
        if idle_cli:
            options.append(("cli", 2.0))
        if len(self.cli_convs) < self.max_cli:
            options.append(("new_cli", 1.0))
        if any(c.exchanges >= 2 for c in idle_cli):
            options.append(("end_cli", 0.4))
        if self.can_archive and self._archivable:
            options.append(("archive", 0.25))
        if self.can_archive and self._archived:
            options.append(("unarchive", 0.08))
        if self.v30 and (self.lanes or self.cli_convs):
            options.append(("pin", 0.1))
        action = self.rng.choices([o for o, _ in options], weights=[w for _, w in options])[0]
        if action in ("archive", "unarchive"):
            self._archive_one(action == "archive")
            return None
        if action == "pin":
            self._pin_one()
            return None
        if action == "continue":
            return self.rng.choice(busy)
        if action in ("lane", "new_lane"):
            if action == "new_lane":
                lane_source = self.lane_pool[len(self.lanes)]
                lane = _Lane(source=lane_source, key=self._store().session_key_for(lane_source))
                self.lanes.append(lane)
                self.report.lanes += 1
            else:
                lane = self.rng.choice(self.lanes)
                if lane.conv is not None and lane.conv.pending:
                    return lane.conv  # mid-turn: the next message of that turn
            conv = self._touch_lane(lane)
            if conv is None:
                return None
            self._begin_turn(conv)
            return conv
        if action == "cli":
            conv = self.rng.choice(idle_cli)
            self._begin_turn(conv)
            return conv
        if action == "new_cli":
            conv = self._new_conv("cli", generate_cli_session_id(self.clock()), "cli")
            self._create_row(conv, "root")
            self.cli_convs.append(conv)
            self._begin_turn(conv)
            return conv
        # end_cli
        conv = self.rng.choice([c for c in idle_cli if c.exchanges >= 2])
        self._close_cli(conv)
        return None

    def step(self) -> None:
        """Run one event. Never raises for database trouble: it is counted as an error."""
        self._event_index += 1
        self.report.events += 1
        try:
            self._flush_deferred()
            self._maybe_quiet_night()
            conv = self._choose()
        except (sqlite3.Error, OSError, ValueError) as exc:
            self._error(exc, "schedule")
            return
        if conv is None or not conv.pending:
            return
        self.focus = conv
        step = conv.pending.popleft()
        try:
            self._run(step)
        except sqlite3.OperationalError as exc:
            # Lock budget exhausted (or I/O trouble): keep the conversation coherent by
            # retrying the same step later, a bounded number of times.
            self._error(exc, step.kind)
            step.attempts += 1
            if step.attempts < _MAX_STEP_ATTEMPTS:
                conv.pending.appendleft(step)
        except (sqlite3.Error, OSError, ValueError) as exc:
            self._error(exc, step.kind)

    def close(self) -> None:
        """Finish cleanly: close CLI sessions and running delegates, flush, close files."""
        try:
            owners = [lane.conv for lane in self.lanes if lane.conv is not None]
            for conv in owners + list(self.cli_convs):
                for step in list(conv.pending):
                    child = step.conv
                    if child.kind == "delegate" and child.row_created and not child.ended:
                        # A sub-agent cut off mid-task (its parent stays live, as a gateway
                        # session does across restarts).
                        self._end_or_defer(child.session_id, DELEGATE_INTERRUPTED_END_REASON)
                        child.ended = True
            for conv in list(self.cli_convs):
                self._close_cli(conv)
            self._flush_deferred()
        except (sqlite3.Error, OSError) as exc:
            self._error(exc, "close")
        finally:
            try:
                self.db.close()
            except sqlite3.Error as exc:
                self._error(exc, "close db")
            if self._log is not None:
                self._log.close()
                self._log = None
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None


def run_writer(
    home: Path,
    *,
    seed: int = 0,
    rate: float = 5.0,
    duration: Optional[float] = None,
    writer_index: int = 0,
    log_path: Optional[Path] = None,
    stop_event: Any = None,
    clock: Callable[[], datetime] = datetime.now,
    max_events: Optional[int] = None,
    config: Optional[GatewayConfig] = None,
    age_lanes: bool = True,
) -> WriterReport:
    """Run one writer in this process until ``duration`` / ``max_events`` / ``stop_event``.

    ``rate`` is events per second (≤ 0: as fast as the database allows); events are paced
    on a fixed schedule that catches up after short stalls but never bursts more than a
    second's worth. ``stop_event`` is anything with ``is_set()`` and ``wait(timeout)``
    (``threading.Event``, ``multiprocessing.Event``). ``clock`` is the gateway clock and
    ``age_lanes`` enables quiet nights (module docstring). Database trouble never escapes: it is counted
    in ``errors``; a failure to open the database at all is reported the same way.
    """
    started = time.monotonic()
    parent_pid = os.getppid()
    failed = WriterReport(writer_index=writer_index)

    def out_of_time() -> bool:
        return (duration is not None and time.monotonic() - started >= duration) or (
            stop_event is not None and stop_event.is_set()
        )

    sim: Optional[Simulator] = None
    while sim is None:
        try:
            sim = Simulator(home, seed=seed, writer_index=writer_index, log_path=log_path,
                            clock=clock, config=config, age_lanes=age_lanes)
        except sqlite3.OperationalError as exc:
            # Opening initialises the schema, which needs the write lock: a long writer
            # elsewhere is contention, not a reason to give up.
            failed.errors += 1
            if len(failed.error_samples) < _MAX_ERROR_SAMPLES:
                failed.error_samples.append(f"open: {type(exc).__name__}: {exc}")
            if out_of_time():
                failed.elapsed = time.monotonic() - started
                return failed
            time.sleep(0.2)
        except Exception as exc:  # noqa: BLE001 - reported, never raised into a worker process
            failed.errors += 1
            failed.error_samples.append(f"open: {type(exc).__name__}: {exc}")
            failed.elapsed = time.monotonic() - started
            return failed
    sim.report.errors += failed.errors
    sim.report.error_samples[:0] = failed.error_samples
    interval = 1.0 / rate if rate and rate > 0 else 0.0
    next_at = time.monotonic()
    last_parent_check = next_at
    try:
        while True:
            now = time.monotonic()
            if duration is not None and now - started >= duration:
                break
            if max_events is not None and sim.report.events >= max_events:
                break
            if stop_event is not None and stop_event.is_set():
                break
            if now - last_parent_check > 0.5:
                last_parent_check = now
                if os.getppid() != parent_pid:
                    break  # our parent died: do not run on as an orphan
            if interval:
                wait = next_at - now
                if duration is not None:
                    wait = min(wait, started + duration - now)
                if wait > 0:
                    if stop_event is not None:
                        if stop_event.wait(wait):
                            break
                    else:
                        time.sleep(wait)
                    continue
                next_at = max(next_at + interval, time.monotonic() - 1.0)
            sim.step()
    finally:
        sim.close()
        sim.report.elapsed = time.monotonic() - started
    return sim.report


# ---------------------------------------------------------------------------------------
# Several processes
# ---------------------------------------------------------------------------------------


def _writer_process(home: str, kwargs: dict[str, Any], stop_event: Any, results: Any) -> None:
    """Entry point of a writer process (module level, so ``spawn`` can import it)."""
    # Ctrl-C belongs to the parent, which stops us through stop_event (the parent starts us
    # with SIGINT ignored already; this also covers other start methods).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        report = run_writer(Path(home), stop_event=stop_event, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - a worker must always report back
        report = WriterReport(writer_index=kwargs.get("writer_index", 0), errors=1,
                              error_samples=[f"crash: {type(exc).__name__}: {exc}"])
    results.put(report.to_dict())


def run_simulation(
    home: Path,
    *,
    writers: int = 1,
    rate: float = 5.0,
    duration: Optional[float] = None,
    seed: int = 0,
    log_dir: Optional[Path] = None,
    max_events: Optional[int] = None,
    age_lanes: bool = True,
    stop_event: Any = None,
    schema: Optional[int] = None,
) -> SimulationReport:
    """Run ``writers`` writer processes against ``home`` and return their combined report.

    Stops at ``duration`` (None: until interrupted), when each writer reached ``max_events``,
    when ``stop_event`` (a ``multiprocessing`` event from the spawn context, optional) is set,
    or on Ctrl-C (``KeyboardInterrupt`` in this process): writers are told to stop, finish
    their current event, close their sessions and report; ``interrupted`` is then True.
    With ``log_dir``, writer *i* logs to ``log_dir / f"writer-{i}.jsonl"``.

    ``schema`` is the layout of a home that has no ``state.db`` yet: 16 (what ``hermes_state``
    creates; None means the same) or 30 (a store born at upstream schema 30). An existing
    store is written in its own layout, detected by the writers; asking for another layout
    than the existing store's raises ``ValueError`` before anything is written.
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    _sessions_dir(home).mkdir(parents=True, exist_ok=True)
    prepare_home(home, schema)
    # Create/migrate the schema once here, so N writers do not all race to initialise it.
    SessionDB(home / "state.db").close()
    if log_dir is not None:
        Path(log_dir).mkdir(parents=True, exist_ok=True)

    ctx = multiprocessing.get_context("spawn")
    stop = stop_event if stop_event is not None else ctx.Event()
    results = ctx.Queue()
    report = SimulationReport(writers=writers)
    procs = []
    for index in range(writers):
        kwargs: dict[str, Any] = {
            "seed": seed,
            "rate": rate,
            "duration": duration,
            "writer_index": index,
            "log_path": Path(log_dir) / f"writer-{index}.jsonl" if log_dir is not None else None,
            "max_events": max_events,
            "age_lanes": age_lanes,
        }
        procs.append(
            ctx.Process(target=_writer_process, args=(str(home), kwargs, stop, results),
                        name=f"hermes-sim-writer-{index}")
        )

    started = time.monotonic()
    reports: list[WriterReport] = []
    in_main_thread = _in_main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main_thread else None
    try:
        # Children inherit "SIGINT ignored" across exec, so a Ctrl-C that reaches the whole
        # process group during their start-up cannot print a traceback from them.
        for proc in procs:
            proc.start()
    finally:
        if in_main_thread:
            signal.signal(signal.SIGINT, previous)

    def collect(timeout: float) -> bool:
        try:
            reports.append(WriterReport.from_dict(results.get(timeout=timeout)))
            return True
        except queue_module.Empty:
            return False

    def drain(stop_at: Optional[float], give_up_at: Optional[float]) -> None:
        # Reports arrive through a pipe; a writer may have exited with its report still in
        # flight, so keep reading until all are in or nobody is left to send one.
        while len(reports) < writers:
            now = time.monotonic()
            if stop_at is not None and now > stop_at:
                stop.set()
            if give_up_at is not None and now > give_up_at:
                return
            alive = any(p.is_alive() for p in procs)
            if not collect(0.2 if alive else 0.5) and not alive:
                return

    try:
        try:
            # Writers stop themselves at `duration`; the parent's deadlines are backstops
            # (a writer inside a long lock wait finishes that event first).
            if duration is not None:
                drain(started + duration + 0.5, started + duration + 20.0)
            else:
                drain(None, None)
        except KeyboardInterrupt:
            report.interrupted = True
        stop.set()
        try:
            drain(None, time.monotonic() + 15.0)
        except KeyboardInterrupt:
            report.interrupted = True  # a second Ctrl-C: stop waiting politely
        for proc in procs:
            proc.join(timeout=2.0)
    except KeyboardInterrupt:
        report.interrupted = True
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=2.0)
    report.elapsed = time.monotonic() - started
    seen = {r.writer_index for r in reports}
    for index in range(writers):
        if index not in seen:
            reports.append(WriterReport(writer_index=index, errors=1,
                                        error_samples=["writer exited without a report"]))
    for item in sorted(reports, key=lambda r: r.writer_index):
        report.add(item)
    return report


def _store_version(db_path: Path) -> Optional[int]:
    """The schema version a ``state.db`` records (None: no file, an empty file or no row)."""
    if not db_path.exists() or db_path.stat().st_size == 0:
        return None
    conn = sqlite3.connect(f"file:{db_path.resolve()}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT version FROM schema_version LIMIT 1").fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()
    return int(row[0]) if row else None


def prepare_home(home: Path, schema: Optional[int]) -> None:
    """Create ``<home>/state.db`` in the asked layout when it is missing (see run_simulation)."""
    if schema not in (None, 16, V30_SCHEMA_VERSION):
        raise ValueError(f"schema must be 16 or 30, not {schema!r}")
    db_path = Path(home) / "state.db"
    found = _store_version(db_path)
    if found is None:
        if schema == V30_SCHEMA_VERSION:
            if db_path.exists():
                db_path.unlink()  # an empty file left by an interrupted start
            create_v30_store(db_path)
        return
    if schema is not None and found != schema and not (schema == 16 and found < 16):
        raise ValueError(
            f"{db_path} is a schema {found} store, not {schema}; writers keep a store's own "
            f"layout (leave out --schema, or use a new home for schema {schema})"
        )


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


# ---------------------------------------------------------------------------------------
# Verification (used by the tests and the reliability suite)
# ---------------------------------------------------------------------------------------


def read_log(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """All JSON lines of the given writer logs (a torn last line is skipped)."""
    records: list[dict[str, Any]] = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
    return records


def fts_integrity_problems(db_path: Path) -> list[str]:
    """FTS5 ``integrity-check`` of every FTS table of the store (both layouts): [] when each
    index matches its content (for the v30 external-content tables: their source views)."""
    problems: list[str] = []
    conn = sqlite3.connect(str(db_path), isolation_level=None, timeout=10.0)
    try:
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'")]
        for name in names:
            try:
                conn.execute(f"INSERT INTO {name}({name}) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{name} integrity-check: {exc}")
    finally:
        conn.close()
    return problems


def verify_simulation(home: Path, log_paths: Iterable[Path]) -> list[str]:
    """Compare writer logs with ``<home>/state.db`` and ``sessions.json``; [] means consistent.

    Checks: every logged message exists exactly once with the logged session, role and
    content hash; logged sessions hold no unlogged messages; ``message_count`` equals the
    real count for every session; every FTS table passes its ``integrity-check`` (inline
    tables also hold one row per message);
    ``PRAGMA integrity_check`` is ok; every ``sessions.json`` lane names an existing row;
    logged titles and first end reasons are what the database holds.
    """
    problems: list[str] = []
    records = read_log(log_paths)
    uri = "file:" + str(Path(home, "state.db").resolve()) + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchall()
        if [tuple(r) for r in integrity] != [("ok",)]:
            problems.append(f"integrity_check: {integrity[:5]}")

        messages = [r for r in records if r.get("kind") == "message"]
        logged_ids: dict[int, dict[str, Any]] = {}
        for rec in messages:
            if rec["message_id"] in logged_ids:
                problems.append(f"message id {rec['message_id']} logged twice")
            logged_ids[rec["message_id"]] = rec
        rows = {
            row[0]: row
            for row in conn.execute("SELECT id, session_id, role, content FROM messages")
        }
        for mid, rec in logged_ids.items():
            row = rows.get(mid)
            if row is None:
                problems.append(f"logged message {mid} missing from the database")
                continue
            if row[1] != rec["session_id"] or row[2] != rec["role"]:
                problems.append(f"message {mid}: db has {row[1]}/{row[2]}, log says "
                                f"{rec['session_id']}/{rec['role']}")
            if _content_hash(row[3]) != rec["content_sha256"]:
                problems.append(f"message {mid}: content differs from what was written")
        logged_sessions = {r["session_id"] for r in records if r.get("kind") == "session"}
        for mid, row in rows.items():
            if row[1] in logged_sessions and mid not in logged_ids:
                problems.append(f"message {mid} in {row[1]} was never logged (duplicate write?)")

        for sid, stored, actual in conn.execute(
            "SELECT s.id, s.message_count, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)"
            " FROM sessions s"
        ):
            if stored != actual:
                problems.append(f"session {sid}: message_count {stored} but {actual} messages")
        total = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        for table in ("messages_fts", "messages_fts_trigram"):
            ddl = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            if ddl is None:
                problems.append(f"{table} is missing")
                continue
            if "content=" not in ddl[0].replace(" ", ""):
                # Inline layout (v11-v22): one index row per message.
                n = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                if n != total:
                    problems.append(f"{table} has {n} rows for {total} messages")
        problems.extend(fts_integrity_problems(Path(home) / "state.db"))

        existing = {row[0] for row in conn.execute("SELECT id FROM sessions")}
        for sid in logged_sessions - existing:
            problems.append(f"logged session {sid} missing from the database")
        for key, entry in load_sessions_index(_sessions_dir(Path(home))).items():
            if entry.session_id not in existing:
                problems.append(f"lane {key} points at missing session {entry.session_id}")

        titles: dict[str, Optional[str]] = {}
        ends: dict[str, str] = {}
        for rec in records:
            if rec.get("kind") == "title":
                titles[rec["session_id"]] = rec["title"]
            elif rec.get("kind") == "end":
                ends.setdefault(rec["session_id"], rec["end_reason"])
        for sid, title in titles.items():
            row = conn.execute("SELECT title FROM sessions WHERE id = ?", (sid,)).fetchone()
            if row is None or row[0] != title:
                problems.append(f"session {sid}: title {row[0] if row else None!r}, logged {title!r}")
        for sid, reason in ends.items():
            row = conn.execute("SELECT end_reason FROM sessions WHERE id = ?", (sid,)).fetchone()
            if row is None or row[0] != reason:
                problems.append(f"session {sid}: end_reason {row[0] if row else None!r}, logged {reason!r}")
    finally:
        conn.close()
    return problems
