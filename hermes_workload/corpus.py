"""A deterministic synthetic corpus of Hermes sessions, for benchmarks, demo mode and tests.

``generate_corpus(path, messages=N, seed=S, now=T)`` fills a **new** ``state.db`` with about
``N / 20`` sessions and exactly ``N`` messages, written through the real schema: the database
is opened with :class:`~hermes_state.db.SessionDB` and rows go in with plain ``INSERT``
statements inside ``SessionDB._execute_write``, so upstream's FTS triggers index every message
exactly as they would in production. The same ``(seed, messages, now)`` always produces the
same rows, byte for byte (per-session random streams are derived from the seed, never from
the clock, thread timing or ``hash()``).

Shape (what the search benchmark relies on):

* English prose from sentence templates with a Zipf-like vocabulary: a few very common
  words (``the`` is in about 80% of messages, ``and`` / ``to`` in many), topical words at
  controlled rates (``docker`` ~5%, ``deploy`` / ``python`` ~4%, ``git`` ~3%,
  ``kubernetes`` ~2%, ...; see :data:`TOPIC_RATES`) and thousands of rare synthetic words.
  A controlled word appears only when the message was chosen to carry it, so the measured
  share matches the configured rate; half of each rate comes from session themes, so topical
  words cluster in conversations as they do in real history.
* About 12% of messages in Chinese, Japanese or Korean (per-session language), with frequent
  short CJK terms (``服务`` ~2%, ``部署``, ``配置``, ``서버``, see :data:`CJK_TERM_RATES`),
  longer ones for the trigram path (``数据库``, ``内存泄漏``, ``サーバー``, ``데이터베이스``), and
  Latin text glued inside CJK runs (``修改<word>服务端``). The terms of :data:`ABSENT_CJK_TERMS`
  are guaranteed absent: none of their characters occurs anywhere in the generator's text.
* Tool calls in OpenAI shape (``terminal``, ``web_search``, ``read_file``, ``write_file``, ...
  with JSON arguments such as ``{"command": "ls -la"}``) followed by ``role="tool"`` results
  that carry ``tool_call_id`` and ``tool_name``; ``tool_call_count`` equals the calls stored.
* Unique titles (``name #2``, ``name #3`` along compression chains), compression chains
  (parent ended with ``compression``, child started after it), branches (``branched``),
  delegates (started while the parent was live), live and ended sessions, several sources,
  realistic ids (``YYYYMMDD_HHMMSS_<6 hex>`` for CLI/TUI, ``<8 hex>`` suffix for the
  gateway and others; the time part is UTC so the build does not depend on the local zone),
  timestamps spread over months before ``now``, token counts and costs.

* Current-upstream shapes (§16, :data:`SHAPE_RATES`): archived conversations (one with a
  compression pair at least), rewound rows (``active = 0``, ``rewind_count``), ``_delegate_from``
  and ``_branched_from`` markers, ``cwd`` workspaces in a handful of repositories, and the
  internal sources ``tool``, ``kanban``, ``oneshot`` and ``cron``. With ``schema=30`` the store is
  born in upstream's v30 layout (:mod:`hermes_workload.schema_v30`) and also gets what only that
  layout holds: pins, hidden sessions, ``display_kind = 'hidden'`` scaffolding rows, compaction
  history (``compacted = 1``), reset children (``_reset_from``, the lane's ``session_key``),
  ``source = 'subagent'`` delegates, ``git_branch``/``git_repo_root``, ``title_source``,
  ``last_activity_at``, system prompts in ``system_prompts`` by hash and ``session_model_usage``.
  Both layouts of one seed hold the same sessions and text.

``generate_demo`` builds a smaller, denser variant (a few hundred sessions, more lineage,
recent activity) for ``hermes sessions browse --demo``. :func:`sample_turn` and
:func:`sample_title` expose the message generator to live writers (the simulator).
"""

from __future__ import annotations

import hashlib
import json
import math
import queue
import random
import sqlite3
import threading
import time
from bisect import bisect
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

#: Bumped whenever the generator's output changes (the bench keys its corpus cache on it).
GENERATOR_VERSION = 3
#: Conversations pinned at most, at any size (a person pins a few, not 1.5% of 50,000).
MAX_PINNED = 12

ProgressFn = Callable[[int, int], None]

# ---------------------------------------------------------------------------------------------
# Vocabulary. Every word list below is checked by tests: no list may contain a controlled word
# (``the``, a topic, a CJK term) or a character of an absent CJK term.
# ---------------------------------------------------------------------------------------------

#: Topical English words → share of messages that contain the word (FTS token).
TOPIC_RATES: dict[str, float] = {
    "docker": 0.05,
    "deploy": 0.04,
    "python": 0.04,
    "git": 0.03,
    "kubernetes": 0.02,
    "postgres": 0.015,
    "kubectl": 0.01,
    "nginx": 0.01,
    "redis": 0.01,
    "pytest": 0.01,
    "terraform": 0.008,
    "webhook": 0.008,
}

#: Noun phrases for each topic; each contains its topic word and no other controlled word.
TOPIC_PHRASES: dict[str, tuple[str, ...]] = {
    "docker": (
        "docker", "docker image", "docker container", "docker compose stack", "docker build",
        "docker network", "docker volume", "docker build for Dockerfile.prod", "docker-compose.yml",
    ),
    "deploy": (
        "deploy", "deploy script", "deploy job", "deploy step", "staging deploy",
        "deploy pipeline", "blue-green deploy",
    ),
    "python": ("python", "python script", "python venv", "python 3.12 build", "python worker"),
    "git": ("git", "git history", "git rebase", "git remote", "git hook", "git submodule"),
    "kubernetes": (
        "kubernetes", "kubernetes cluster", "kubernetes ingress", "kubernetes namespace",
        "kubernetes pod",
    ),
    "postgres": ("postgres", "postgres replica", "postgres index", "postgres connection pool"),
    "kubectl": ("kubectl", "kubectl rollout", "kubectl context"),
    "nginx": ("nginx", "nginx config", "nginx proxy", "nginx upstream"),
    "redis": ("redis", "redis cache", "redis queue", "redis sentinel"),
    "pytest": ("pytest", "pytest run", "pytest fixture"),
    "terraform": ("terraform", "terraform plan", "terraform state"),
    "webhook": ("webhook", "webhook handler", "webhook retry"),
}

#: Shell commands for a topic (used as ``terminal`` arguments when the message carries it).
TOPIC_COMMANDS: dict[str, tuple[str, ...]] = {
    "docker": ("docker ps -a", "docker compose up -d", "docker logs --tail 50 {rare}",
               "docker build -t {rare}:latest ."),
    "git": ("git status", "git log --oneline -n 20", "git diff --stat", "git pull --rebase"),
    "kubectl": ("kubectl get pods -n {rare}", "kubectl rollout status statefulset/{rare}"),
    "python": ("python -m {rare}", "python {file}"),
    "pytest": ("pytest -q {file}", "pytest -x -k {rare}"),
    "terraform": ("terraform plan -out {rare}.plan", "terraform apply"),
    "nginx": ("nginx -t", "sudo systemctl reload nginx"),
    "redis": ("redis-cli info memory", "redis-cli --scan --pattern {rare}*"),
    "postgres": ("psql -U postgres -c 'select 1'",),
}

#: Short and long CJK terms → share of all messages containing them (zh, ja or ko text).
CJK_TERM_RATES: dict[str, float] = {
    "服务": 0.02,
    "部署": 0.01,
    "配置": 0.01,
    "数据库": 0.008,
    "内存泄漏": 0.003,
    "サーバー": 0.006,
    "서버": 0.005,
    "데이터베이스": 0.003,
}
CJK_TERM_LANG = {
    "服务": "zh", "部署": "zh", "配置": "zh", "数据库": "zh", "内存泄漏": "zh",
    "サーバー": "ja", "서버": "ko", "데이터베이스": "ko",
}
CJK_TERM_PHRASES: dict[str, tuple[str, ...]] = {
    "服务": ("服务", "服务器", "服务端", "后台服务", "修改{rare}服务端"),
    "部署": ("部署", "部署脚本", "自动部署"),
    "配置": ("配置", "配置文件", "{rare}配置"),
    "数据库": ("数据库", "数据库连接", "数据库迁移"),
    "内存泄漏": ("内存泄漏",),
    "サーバー": ("サーバー", "本番サーバー", "サーバー設定"),
    "서버": ("서버", "운영 서버", "서버 배포"),
    "데이터베이스": ("데이터베이스", "데이터베이스 연결"),
}

#: Plausible short CJK search terms that never occur in a generated corpus.
ABSENT_CJK_TERMS: tuple[str, ...] = ("鲸鱼", "琵琶", "麒", "곰팡")

#: Very common English words (their shares are measured, ``the`` is controlled).
COMMON_WORDS = ("the", "and", "to")

#: Query words guaranteed absent from every corpus (letters the rare-word syllables lack).
NO_MATCH_WORDS: tuple[str, ...] = ("zxqvbnm", "qwxjzv", "jazzquixotic")

_NOUNS = (
    "config", "file", "server", "build", "cache", "log", "error", "request", "response",
    "function", "module", "package", "branch", "commit", "database", "table", "query",
    "index", "endpoint", "token", "user", "session", "thread", "process", "memory", "port",
    "proxy", "certificate", "script", "job", "queue", "worker", "pipeline", "release",
    "version", "schema", "migration", "backup", "disk", "network", "timeout", "permission",
    "container", "image", "cluster", "service", "secret", "variable", "dependency", "test",
    "fixture", "handler", "router", "middleware", "template", "report", "dashboard",
    "metric", "alert", "bucket", "volume", "snapshot", "lock", "socket", "payload", "header",
    "cookie", "parser", "compiler", "linter", "formatter", "plugin", "extension", "library",
    "client", "api", "key", "password", "account", "invoice", "order", "customer", "email",
    "message", "channel", "bot", "command", "prompt", "model", "embedding", "vector",
    "dataset", "notebook", "chart", "graph", "node", "edge", "tree", "list", "map",
    "string", "number", "date", "timezone", "locale", "translation", "font", "layout",
    "button", "page", "form", "field", "column", "row", "record", "transaction", "batch",
    "stream", "buffer", "limit", "quota", "budget", "cost", "price", "plan", "feature",
    "flag", "rollout", "regression", "benchmark", "profile", "trace", "span", "sample",
    "retry", "backoff", "scheduler", "cronjob", "hook", "event", "signal", "state", "store",
    "mirror", "registry", "artifact", "binary", "archive", "checksum", "signature", "policy",
    "role", "group", "tenant", "region", "zone", "host", "domain", "route", "gateway",
    "firewall", "rule", "path", "directory", "folder", "repo", "issue", "ticket", "sprint",
    "meeting", "note", "draft", "summary", "recipe", "trip", "flight", "hotel", "budget",
    "garden", "bike", "camera", "photo", "song", "playlist", "book", "chapter", "essay",
)
_ADJS = (
    "slow", "broken", "flaky", "stale", "missing", "new", "old", "large", "small", "empty",
    "invalid", "duplicate", "wrong", "odd", "noisy", "quiet", "huge", "tiny", "clean",
    "dirty", "fast", "safe", "unsafe", "cached", "remote", "local", "shared", "private",
    "public", "nested", "partial", "corrupt", "expired", "pending", "failed", "healthy",
    "unhealthy", "red", "green", "blue", "latest", "legacy", "hidden", "visible", "strict",
)
_VERBS = (
    "fix", "check", "update", "restart", "rebuild", "refactor", "rename", "remove", "move",
    "split", "merge", "review", "test", "profile", "trace", "debug", "document", "rewrite",
    "clean up", "speed up", "pin", "upgrade", "downgrade", "migrate", "back up", "restore",
    "rotate", "validate", "cache", "index", "compress", "archive", "monitor", "schedule",
    "translate", "summarise", "plan", "compare", "measure", "tune",
)
_DETERMINERS = ("this", "that", "our", "your", "each", "one", "my", "a")
_HOST_SUFFIXES = ("internal", "prod", "staging", "local", "lan", "example.com")
_EXTS = ("py", "ts", "js", "go", "rs", "md", "yaml", "json", "toml", "sh", "sql", "txt")

# Sentence templates. Slots: {the}/{The} (``the`` or a determiner), {np} (noun phrase: a topic
# phrase when the message carries one), {noun}, {adj}, {verb}, {rare}, {ident}, {file},
# {host}, {num}. No literal text may contain a controlled word.
_USER_TEMPLATES = (
    "Can you check why {the} {np} keeps failing?",
    "{The} {np} is {adj} again after {the} last {noun} change.",
    "How do I {verb} {the} {np} without breaking {the} {noun}?",
    "Please {verb} {the} {np} in {file}.",
    "I'm getting a {adj} {noun} error when I {verb} {the} {np}.",
    "Why is {the} {np} so {adj} today?",
    "Let's {verb} {the} {np} and see what happens.",
    "What does {ident} do in {file}?",
    "Write a short summary of {the} {np} for {host}.",
    "Is it safe to {verb} {the} {np} on {host}?",
    "Could you look at {the} {noun} logs for {rare}?",
    "thanks, now {verb} {the} {np} too",
    "ok that worked. next: {the} {np}",
    "Remind me how {the} {np} talks to {the} {noun}.",
    "Compare {the} {np} with {rare} and tell me which one is {adj}.",
    "{np} is {adj} on {host}, any idea?",
    "can you {verb} {np} for me",
    "Help me {verb} {np} before {num} pm.",
    "What changed in {file} since {num}?",
    "I need {num} {noun} entries for {rare}.",
)
_ASSISTANT_TEMPLATES = (
    "I checked {the} {np} and found {the} {noun} was {adj}.",
    "{The} {np} fails because {ident} returns {num} instead of a {noun}.",
    "I updated {file} so {the} {np} now uses {the} {noun} from {host}.",
    "Here is what changed: {ident} now validates {the} {noun} before it calls {rare}.",
    "Running {the} {np} again shows {num} {noun} items in {the} queue.",
    "You can {verb} {the} {np} with a single command.",
    "It looks like {the} {noun} on {host} has a {adj} {noun}.",
    "Done. {The} {np} is {adj} now and {the} {noun} check passes.",
    "Next step: {verb} {the} {np}, then restart {the} {noun}.",
    "I could not find {ident} in {file}; maybe it moved to {rare}.",
    "Summary: {num} files touched, {the} {np} is fixed, {the} {noun} still needs review.",
    "{The} {noun} timed out after {num} seconds while talking to {the} {np}.",
    "{np} looks {adj}; I would {verb} it first.",
    "Two options: {verb} {np}, or keep {rare} and {verb} {noun} instead.",
    "I found {num} matches for {ident} across {num} files.",
    "Good news: {np} works with {rare} as well.",
)
_TOOL_PREFACES = (
    "Let me check {the} {np}.",
    "I'll look at {the} {noun} first.",
    "Checking {np} now.",
    "Running {the} {noun} command.",
    "Let me search for {ident}.",
    "Reading {file}.",
)
_LOG_TEMPLATES = (
    "warning: {the} {np} is {adj}",
    "INFO {ident} {np} ready in {num} ms",
    "error: {the} {noun} for {np} was {adj}",
    "note: {np} updated by {rare}",
)
_REASONING_TEMPLATES = (
    "I should {verb} {the} {np} before touching {the} {noun}.",
    "{The} {noun} error suggests {the} {np} is {adj}.",
    "Maybe {ident} is {adj}; check {file} first.",
)
_TITLE_TEMPLATES = (
    "{Verb} {np}", "{Verb} {adj} {noun}", "{Np} on {host}", "{Verb} {np} and {noun}",
    "{Adj} {np}", "{Np} {noun} review", "Notes on {np}", "{Verb} {ident}",
)

_ZH_FILLER = (
    "请帮我看一下这个问题。", "我已经检查过日志了，但是没有发现错误。", "这个函数返回的结果不对。",
    "现在可以正常运行了，谢谢！", "需要重新启动吗？", "性能下降得很明显。", "内存占用太高了。",
    "昨天的版本没有这个问题。", "我们先写一个测试用例。", "这个接口的响应时间超过了三秒。",
    "请把结果整理成表格。", "网络连接经常超时。", "用户反馈说页面加载很慢。",
    "我觉得应该先回滚到上一个版本。", "代码已经提交了，请帮我审查。", "缓存失效以后一切正常。",
    "这个脚本在本地可以运行。", "日志里面有很多警告信息。", "权限设置好像有问题。",
    "明天再继续处理吧。", "我想把这个模块拆分成两个文件。", "证书快要过期了。", "测试全部通过了。",
    "这段代码的作用是什么？", "帮我翻译成英文。", "磁盘空间不够了。", "这个错误只在周末出现。",
)
_ZH_TERM_TEMPLATES = (
    "{t}又出问题了。", "请检查一下{t}。", "{t}已经更新好了。", "为什么{t}这么慢？",
    "我们需要重新看一下{t}。", "{t}的日志在哪里？", "{t} 的问题还没解决。",
)
_JA_FILLER = (
    "ログを確認しました。", "この関数の戻り値がおかしいです。", "もう一度試してみます。",
    "ありがとうございます、直りました！", "テストはすべて通りました。", "明日また続けましょう。",
    "ネットワークが不安定です。", "キャッシュを消したら動きました。", "このスクリプトはローカルでは動きます。",
    "エラーメッセージを貼ります。", "設定ファイルを見直してください。", "レスポンスが遅いです。",
    "権限の問題かもしれません。", "前のバージョンに戻しましょうか？", "ディスクの空き容量が足りません。",
)
_JA_TERM_TEMPLATES = (
    "{t}を確認してください。", "{t}が落ちています。", "{t}の調子が悪いです。", "{t}を再起動しました。",
    "{t} のエラーが出ています。",
)
_KO_FILLER = (
    "로그를 확인했습니다.", "이 함수의 반환값이 이상해요.", "다시 시도해 볼게요.",
    "감사합니다, 해결됐어요!", "테스트가 모두 통과했습니다.", "내일 계속하죠.", "네트워크가 불안정합니다.",
    "캐시를 지우니까 잘 돼요.", "권한 문제인 것 같아요.", "이전 버전으로 되돌릴까요?",
    "응답 속도가 너무 느려요.", "코드를 커밋했으니 리뷰 부탁드려요.", "디스크 용량이 부족합니다.",
)
_KO_TERM_TEMPLATES = (
    "{t} 상태를 확인해 주세요.", "{t}가 다운됐어요.", "{t} 설정을 바꿨습니다.", "{t} 로그를 보여 주세요.",
)
# CJK titles: subject + action (e.g. 接口调试), sometimes after a Latin word.
_CJK_TITLE_PARTS = {
    "zh": (("接口", "日志", "缓存", "证书", "页面", "脚本", "测试", "权限", "磁盘", "网络", "版本", "周报", "性能", "模块"),
           ("调试", "分析", "优化", "修复", "整理", "更新", "排查", "回滚", "重构", "检查")),
    "ja": (("ログ", "テスト", "キャッシュ", "設定", "性能", "権限", "ネットワーク", "ディスク", "スクリプト"),
           ("調査", "修正", "問題", "見直し", "改善", "確認")),
    "ko": (("로그", "테스트", "캐시", "성능", "권한", "네트워크", "디스크", "스크립트"),
           (" 분석", " 수정", " 문제", " 개선", " 설정", " 확인")),
}
_CJK_FILLER = {"zh": _ZH_FILLER, "ja": _JA_FILLER, "ko": _KO_FILLER}
_CJK_TERM_TEMPLATES = {"zh": _ZH_TERM_TEMPLATES, "ja": _JA_TERM_TEMPLATES, "ko": _KO_TERM_TEMPLATES}

#: Tools and their weights (OpenAI function names as Hermes uses them).
TOOLS: dict[str, float] = {
    "terminal": 0.34,
    "read_file": 0.16,
    "web_search": 0.12,
    "write_file": 0.08,
    "search_files": 0.08,
    "patch": 0.06,
    "execute_code": 0.05,
    "browser_navigate": 0.04,
    "todo": 0.03,
    "memory": 0.02,
    "delegate_task": 0.02,
}
_GENERIC_COMMANDS = (
    "ls -la", "pwd", "cat {file}", "tail -n 100 {file}", "make check", "npm run build",
    "ps aux | grep {rare}", "du -sh {rare}", "df -h", "curl -s https://{host}/health",
    "grep -rn {rare} src", "wc -l {file}", "uptime", "free -m", "env | grep {RARE}",
)

_MODELS = (
    ("anthropic/claude-sonnet-4.5", 0.35), ("openai/gpt-5", 0.2), ("google/gemini-2.5-pro", 0.12),
    ("nousresearch/hermes-4-405b", 0.15), ("qwen/qwen3-coder", 0.1), ("moonshotai/kimi-k2", 0.08),
)
_SOURCES = (
    ("cli", 0.42), ("telegram", 0.14), ("discord", 0.1), ("slack", 0.07), ("whatsapp", 0.06),
    ("cron", 0.05), ("tool", 0.04), ("signal", 0.03), ("tui", 0.03), ("api-server", 0.02),
    ("matrix", 0.02), ("email", 0.02),
)
_SIX_HEX_SOURCES = frozenset({"cli", "tui"})
_SYSTEM_PROMPT = (
    "You are Hermes Agent, an assistant with tools (terminal, files, web). "
    "Be concise, verify before you claim, and ask when a request is ambiguous."
)

# ---------------------------------------------------------------------------------------------
# Rare words: deterministic pseudo-words from syllables (no j, q, x, y, z: see NO_MATCH_WORDS).
# ---------------------------------------------------------------------------------------------

_ONSETS = ("b", "br", "d", "dr", "f", "g", "gl", "h", "k", "kr", "l", "m", "n", "p", "pl", "r",
           "s", "st", "t", "tr", "v", "w")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "", "n", "r", "s", "l", "m", "nd", "st")


def _controlled_tokens() -> set[str]:
    return {"the", *TOPIC_RATES}


def _build_rare_words(count: int = 6000) -> tuple[str, ...]:
    rng = random.Random("hermes-corpus-rare-words")
    banned = _controlled_tokens() | set(_NOUNS) | set(_ADJS) | set(NO_MATCH_WORDS)
    banned |= {w for verb in _VERBS for w in verb.split()}
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < count:
        parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                 for _ in range(rng.choice((2, 2, 3, 3, 4)))]
        word = "".join(parts)
        if word in seen or word in banned or len(word) < 5:
            continue
        seen.add(word)
        words.append(word)
    return tuple(words)


RARE_WORDS = _build_rare_words()


class _Zipf:
    """Pick from ``items`` with weight ``1 / (rank + q)**s`` (Zipf–Mandelbrot, rank 1 first).

    ``q`` flattens the head: with ``q = 0`` the first rare word would be in a fifth of all
    messages, which is not what "rare" means.
    """

    __slots__ = ("items", "cum", "total")

    def __init__(self, items: tuple[str, ...], s: float = 1.0, q: float = 0.0) -> None:
        self.items = items
        acc = 0.0
        cum = []
        for rank in range(1, len(items) + 1):
            acc += 1.0 / (rank + q) ** s
            cum.append(acc)
        self.cum = cum
        self.total = acc

    def pick(self, rng: random.Random) -> str:
        return self.items[bisect(self.cum, rng.random() * self.total)]


def _weighted(pairs: tuple[tuple[str, float], ...] | dict[str, float]):
    items = list(pairs.items()) if isinstance(pairs, dict) else list(pairs)
    names = [name for name, _ in items]
    cum = []
    acc = 0.0
    for _, weight in items:
        acc += weight
        cum.append(acc)

    def pick(rng: random.Random) -> str:
        return names[min(bisect(cum, rng.random() * acc), len(names) - 1)]

    return pick


_ZIPF_NOUNS = _Zipf(_NOUNS, 0.9, 3.0)
_ZIPF_ADJS = _Zipf(_ADJS, 0.8, 2.0)
_ZIPF_VERBS = _Zipf(_VERBS, 0.8, 2.0)
_ZIPF_RARE = _Zipf(RARE_WORDS, 1.05, 50.0)
_PICK_TOOL = _weighted(TOOLS)
_PICK_MODEL = _weighted(_MODELS)
_PICK_SOURCE = _weighted(_SOURCES)


def _parse(template: str) -> tuple[tuple[str, str | None], ...]:
    """``"a {x} b"`` → ``(("a ", "x"), (" b", None))`` for a fast fill loop."""
    out: list[tuple[str, str | None]] = []
    rest = template
    while True:
        start = rest.find("{")
        if start < 0:
            out.append((rest, None))
            return tuple(out)
        end = rest.index("}", start)
        out.append((rest[:start], rest[start + 1 : end]))
        rest = rest[end + 1 :]


def _has_the_slot(parsed) -> bool:
    return any(slot in ("the", "The") for _, slot in parsed)


_P_USER = tuple(_parse(t) for t in _USER_TEMPLATES)
_P_ASSISTANT = tuple(_parse(t) for t in _ASSISTANT_TEMPLATES)
_P_PREFACE = tuple(_parse(t) for t in _TOOL_PREFACES)
_P_LOG = tuple(_parse(t) for t in _LOG_TEMPLATES)
_P_REASONING = tuple(_parse(t) for t in _REASONING_TEMPLATES)
_P_TITLE = tuple(_parse(t) for t in _TITLE_TEMPLATES)
_WITH_THE = {
    id(group): tuple(p for p in group if _has_the_slot(p))
    for group in (_P_USER, _P_ASSISTANT, _P_PREFACE, _P_LOG, _P_REASONING)
}

# Probability that a message of each kind contains ``the`` (calibrated so the corpus-wide
# share is about 80%: CJK prose rarely has it, tool traffic less often than prose).
_P_THE = {"prose": 0.97, "call": 0.8, "result": 0.85, "cjk": 0.08}


# ---------------------------------------------------------------------------------------------
# Message generation
# ---------------------------------------------------------------------------------------------


class _Text:
    """Sentence filling for one message: knows which controlled words it must carry."""

    __slots__ = ("rng", "topics", "the", "used_the")

    def __init__(self, rng: random.Random, topics: list[str], the: bool) -> None:
        self.rng = rng
        self.topics = topics  # topic words still to place (consumed by {np})
        self.the = the
        self.used_the = False

    def fill(self, parsed, *, force_the: bool = False) -> str:
        rng = self.rng
        out: list[str] = []
        the_here = force_the
        for literal, slot in parsed:
            out.append(literal)
            if slot is None:
                continue
            if slot == "the" or slot == "The":
                if self.the and (the_here or rng.random() < 0.6):
                    word = "the"
                    self.used_the = True
                    the_here = False
                else:
                    word = rng.choice(_DETERMINERS)
                out.append(word.capitalize() if slot == "The" else word)
            elif slot in ("np", "Np"):
                if self.topics:
                    phrase = _fill_rare(rng, rng.choice(TOPIC_PHRASES[self.topics.pop()]))
                elif rng.random() < 0.5:
                    phrase = _ZIPF_ADJS.pick(rng) + " " + _ZIPF_NOUNS.pick(rng)
                else:
                    phrase = _ZIPF_NOUNS.pick(rng)
                out.append(phrase[0].upper() + phrase[1:] if slot == "Np" else phrase)
            else:
                out.append(_slot(rng, slot))
        text = "".join(out)
        return text[0].upper() + text[1:] if text and text[0].islower() and rng.random() < 0.8 else text

    def sentences(self, group, count: int) -> list[str]:
        """``count`` sentences (more if topics remain), honouring the ``the`` decision."""
        rng = self.rng
        out: list[str] = []
        with_the = _WITH_THE[id(group)]
        i = 0
        while i < count or self.topics or (self.the and not self.used_the):
            if self.the and not self.used_the and (i == count - 1 or i >= count):
                out.append(self.fill(rng.choice(with_the), force_the=True))
            else:
                out.append(self.fill(rng.choice(group)))
            i += 1
            if i > count + 12:  # cannot happen with the shipped templates; bounded anyway
                break
        return out


def _slot(rng: random.Random, slot: str) -> str:
    if slot == "noun":
        return _ZIPF_NOUNS.pick(rng)
    if slot == "adj":
        return _ZIPF_ADJS.pick(rng)
    if slot in ("Adj", "Verb"):
        word = _ZIPF_ADJS.pick(rng) if slot == "Adj" else _ZIPF_VERBS.pick(rng)
        return word.capitalize()
    if slot == "verb":
        return _ZIPF_VERBS.pick(rng)
    if slot == "rare":
        return _ZIPF_RARE.pick(rng)
    if slot == "RARE":
        return _ZIPF_RARE.pick(rng).upper()
    if slot == "ident":
        a = _ZIPF_RARE.pick(rng)
        return f"{a}_{_ZIPF_NOUNS.pick(rng)}" if rng.random() < 0.6 else f"{a}.{_ZIPF_VERBS.pick(rng).split()[0]}"
    if slot == "file":
        return f"{rng.choice(('src', 'lib', 'app', 'scripts', 'docs'))}/{_ZIPF_RARE.pick(rng)}/{_ZIPF_NOUNS.pick(rng)}.{rng.choice(_EXTS)}"
    if slot == "host":
        return f"{_ZIPF_RARE.pick(rng)}.{rng.choice(_HOST_SUFFIXES)}"
    if slot == "num":
        return str(int(rng.paretovariate(1.2) * 3))
    raise KeyError(slot)


def _fill_rare(rng: random.Random, text: str) -> str:
    if "{" not in text:
        return text
    return "".join(lit + (_slot(rng, s) if s else "") for lit, s in _parse(text))


def _cjk_text(rng: random.Random, lang: str, cjk_terms: list[str], topics: list[str], the: bool) -> str:
    """CJK prose carrying exactly the chosen CJK terms and topics (plus maybe English)."""
    filler = _CJK_FILLER[lang]
    term_templates = _CJK_TERM_TEMPLATES[lang]
    parts: list[str] = []
    for term in cjk_terms:
        phrase = _fill_rare(rng, rng.choice(CJK_TERM_PHRASES[term]))
        parts.append(rng.choice(term_templates).replace("{t}", phrase))
    for topic in topics:
        phrase = _fill_rare(rng, rng.choice(TOPIC_PHRASES[topic]))
        # Mostly spaced, as people type Latin words in CJK text; sometimes glued, which makes
        # the word part of one CJK token for unicode61 (the `修改youer服务端` problem).
        if rng.random() < 0.85:
            phrase = f" {phrase} "
        parts.append(rng.choice(term_templates).replace("{t}", phrase))
    for _ in range(rng.choice((1, 1, 2, 2, 3))):
        parts.append(rng.choice(filler))
    rng.shuffle(parts)
    if the:
        english = _Text(rng, [], True)
        parts.append(english.fill(rng.choice(_WITH_THE[id(_P_ASSISTANT)]), force_the=True))
    return "".join(parts) if lang != "ko" else " ".join(parts)


class _Chooser:
    """Per-session Bernoulli choices of controlled words (session themes boost some)."""

    __slots__ = ("themes", "lang", "_topic_ps", "_cjk_ps")

    def __init__(self, themes: tuple[str, ...], lang: str) -> None:
        self.themes = themes
        self.lang = lang  # "en", "zh", "ja", "ko"
        self._topic_ps = [
            (word, _THEME_IN if word in themes else (rate / 2) / (1 - _theme_rate(rate)))
            for word, rate in TOPIC_RATES.items()
        ]
        share = _LANG_MESSAGE_SHARE.get(lang)
        self._cjk_ps = [
            (term, rate / share) for term, rate in CJK_TERM_RATES.items() if CJK_TERM_LANG[term] == lang
        ] if share else []

    def topics(self, rng: random.Random) -> list[str]:
        rand = rng.random
        return [word for word, p in self._topic_ps if rand() < p]

    def cjk_terms(self, rng: random.Random) -> list[str]:
        rand = rng.random
        return [term for term, p in self._cjk_ps if rand() < p]


# Topic clustering: a session has a topic as theme with probability rate / (2 * _THEME_IN) and
# then mentions it in _THEME_IN of its messages; the other half of the rate is spread evenly.
_THEME_IN = 0.45


def _theme_rate(rate: float) -> float:
    return rate / (2 * _THEME_IN)


# Share of all messages written in each CJK language (≈ 12% together). Sessions in a CJK
# language write CJK prose for user/assistant text; tool traffic stays mostly ASCII.
_LANG_SESSION_SHARE = {"zh": 0.13, "ja": 0.05, "ko": 0.04}
_CJK_PROSE_SHARE_OF_SESSION = 0.54  # user + plain assistant messages, roughly
_LANG_MESSAGE_SHARE = {k: v * _CJK_PROSE_SHARE_OF_SESSION for k, v in _LANG_SESSION_SHARE.items()}


def _call_id(rng: random.Random) -> str:
    return "call_" + "%024x" % rng.getrandbits(96)


def _tool_arguments(rng: random.Random, tool: str, text: _Text) -> dict[str, Any]:
    topics = text.topics
    if tool == "terminal":
        for word in list(topics):
            if word in TOPIC_COMMANDS:
                topics.remove(word)
                return {"command": _fill_rare(rng, rng.choice(TOPIC_COMMANDS[word]))}
        if topics:
            return {"command": f"grep -rn {topics.pop()} ."}
        args = {"command": _fill_rare(rng, rng.choice(_GENERIC_COMMANDS))}
        if rng.random() < 0.2:
            args["timeout"] = rng.choice((30, 60, 120, 300))
        return args
    if tool == "web_search":
        if text.the or topics:
            return {"query": text.fill(rng.choice(_WITH_THE[id(_P_USER)]) if text.the else rng.choice(_P_USER)).rstrip("?.")}
        return {"query": f"{_ZIPF_RARE.pick(rng)} {_ZIPF_NOUNS.pick(rng)} {_ZIPF_ADJS.pick(rng)}"}
    if tool == "read_file":
        args = {"path": _slot(rng, "file")}
        if rng.random() < 0.3:
            args["offset"] = int(rng.paretovariate(1.0) * 10)
            args["limit"] = 200
        return args
    if tool == "write_file":
        body = f"def {_slot(rng, 'ident').replace('.', '_')}({_ZIPF_RARE.pick(rng)}):\n    return {_ZIPF_NOUNS.pick(rng)}\n"
        return {"path": _slot(rng, "file"), "content": body}
    if tool == "search_files":
        return {"pattern": _ZIPF_RARE.pick(rng), "path": rng.choice(("src", ".", "lib", "tests"))}
    if tool == "patch":
        return {"path": _slot(rng, "file"), "old_string": _ZIPF_NOUNS.pick(rng), "new_string": _ZIPF_NOUNS.pick(rng)}
    if tool == "execute_code":
        return {"code": f"print(sum(range({_slot(rng, 'num')})))"}
    if tool == "browser_navigate":
        return {"url": f"https://{_slot(rng, 'host')}/{_ZIPF_RARE.pick(rng)}"}
    if tool == "todo":
        return {"todos": [{"id": str(i + 1), "content": f"{_ZIPF_VERBS.pick(rng)} {_ZIPF_NOUNS.pick(rng)}",
                           "status": rng.choice(("pending", "in_progress", "completed"))}
                          for i in range(rng.randint(1, 3))]}
    if tool == "memory":
        return {"action": "add", "content": f"user prefers {_ZIPF_ADJS.pick(rng)} {_ZIPF_NOUNS.pick(rng)}"}
    if tool == "delegate_task":
        return {"goal": f"{_ZIPF_VERBS.pick(rng)} {_ZIPF_NOUNS.pick(rng)} in {_slot(rng, 'file')}"}
    raise KeyError(tool)


def _tool_result(rng: random.Random, tool: str, args: dict[str, Any], text: _Text) -> str:
    lines: list[str] = []
    if tool == "terminal":
        command = args["command"]
        if command.startswith("ls"):
            lines.append(f"total {_slot(rng, 'num')}")
            for _ in range(rng.randint(2, 6)):
                lines.append(f"-rw-r--r--  1 hermes staff {rng.randint(10, 99999):>6} Mar {rng.randint(1, 28):>2} "
                             f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {_ZIPF_RARE.pick(rng)}.{rng.choice(_EXTS)}")
        elif rng.random() < 0.3:
            lines += ["Traceback (most recent call last):",
                      f'  File "{_slot(rng, "file")}", line {_slot(rng, "num")}, in {_slot(rng, "ident")}',
                      f"{_ZIPF_ADJS.pick(rng).capitalize()}Error: {_ZIPF_NOUNS.pick(rng)} {_ZIPF_RARE.pick(rng)}"]
        else:
            for _ in range(rng.randint(1, 4)):
                lines.append(f"{_ZIPF_RARE.pick(rng)} {_slot(rng, 'num')} {_ZIPF_NOUNS.pick(rng)} {_ZIPF_ADJS.pick(rng)}")
            lines.append(f"exit code {rng.choice((0, 0, 0, 1, 2, 127))}")
    elif tool == "web_search":
        results = []
        for _ in range(rng.randint(1, 3)):
            results.append({"title": f"{_ZIPF_RARE.pick(rng).capitalize()} {_ZIPF_NOUNS.pick(rng)} guide",
                            "url": f"https://{_slot(rng, 'host')}/{_ZIPF_RARE.pick(rng)}",
                            "snippet": text.fill(rng.choice(_P_ASSISTANT))})
        lines.append(json.dumps({"results": results}, ensure_ascii=False))
    elif tool in ("read_file", "write_file", "patch"):
        if tool == "read_file":
            for n in range(rng.randint(2, 6)):
                lines.append(f"{n + 1:>4}| {rng.choice(('def', 'class', 'return', 'import', '#'))} "
                             f"{_slot(rng, 'ident')} {_ZIPF_RARE.pick(rng)}")
        elif tool == "write_file":
            lines.append(f"Wrote {rng.randint(20, 9000)} bytes to {args['path']}")
        else:
            lines.append(f"Applied 1 edit to {args['path']} ({rng.randint(1, 40)} lines changed)")
    elif tool == "search_files":
        for _ in range(rng.randint(1, 5)):
            lines.append(f"{_slot(rng, 'file')}:{_slot(rng, 'num')}: {_slot(rng, 'ident')} = {_ZIPF_RARE.pick(rng)}")
    elif tool == "execute_code":
        lines.append(str(rng.randint(0, 10**6)))
    elif tool == "browser_navigate":
        lines.append(text.fill(rng.choice(_P_ASSISTANT)))
    elif tool == "todo":
        lines.append(json.dumps({"todos": args["todos"], "summary": {"total": len(args["todos"])}}))
    elif tool == "memory":
        lines.append('{"success": true, "entries": %d}' % rng.randint(1, 40))
    elif tool == "delegate_task":
        lines.append(text.fill(rng.choice(_P_ASSISTANT)))
    # Controlled words still owed by this message go into a log line.
    while text.topics or (text.the and not text.used_the):
        with_the = _WITH_THE[id(_P_LOG)]
        force = text.the and not text.used_the
        lines.append(text.fill(rng.choice(with_the) if force else rng.choice(_P_LOG), force_the=force))
    return "\n".join(lines)


_CONNECTORS = (" ", " ", " ", " ", " Also, ", " And ", " Then ", " So ", " I want to be sure. ")


def _join(rng: random.Random, sentences: list[str]) -> str:
    """Join sentences, sometimes with a connective, as people write."""
    if len(sentences) < 2:
        return sentences[0] if sentences else ""
    out = [sentences[0]]
    for sentence in sentences[1:]:
        glue = rng.choice(_CONNECTORS)
        if (glue.endswith(", ") or glue in (" And ", " Then ", " So ")) and not sentence.startswith("I"):
            sentence = sentence[:1].lower() + sentence[1:]
        out.append(glue)
        out.append(sentence)
    return "".join(out)


def _tokens_for(text: str | None) -> int:
    return max(1, len(text) // 4) if text else 0


class _SessionWriter:
    """Generates the ``n`` message rows of one session from its own random stream."""

    def __init__(self, rng: random.Random, chooser: _Chooser) -> None:
        self.rng = rng
        self.chooser = chooser

    def _the(self, kind: str) -> bool:
        return self.rng.random() < _P_THE[kind]

    def user(self) -> dict[str, Any]:
        rng = self.rng
        topics = self.chooser.topics(rng)
        if self.chooser.lang != "en":
            content = _cjk_text(rng, self.chooser.lang, self.chooser.cjk_terms(rng), topics, self._the("cjk"))
        else:
            text = _Text(rng, topics, self._the("prose"))
            content = _join(rng, text.sentences(_P_USER, rng.choice((1, 1, 1, 2, 2, 3))))
        return {"role": "user", "content": content}

    def answer(self) -> dict[str, Any]:
        rng = self.rng
        topics = self.chooser.topics(rng)
        if self.chooser.lang != "en" and rng.random() < 0.9:
            content = _cjk_text(rng, self.chooser.lang, self.chooser.cjk_terms(rng), topics, self._the("cjk"))
        else:
            text = _Text(rng, topics, self._the("prose"))
            sentences = text.sentences(_P_ASSISTANT, rng.choice((1, 2, 2, 3, 3, 4, 5)))
            content = _join(rng, sentences)
            if rng.random() < 0.12:
                content += f"\n\n```\n{_slot(rng, 'ident')}({_ZIPF_RARE.pick(rng)}, {_slot(rng, 'num')})\n```"
        msg = {"role": "assistant", "content": content, "finish_reason": "stop",
               "token_count": _tokens_for(content)}
        if rng.random() < 0.15:
            msg["reasoning"] = _Text(rng, [], False).fill(rng.choice(_P_REASONING))
        return msg

    def tool_round(self) -> list[dict[str, Any]]:
        """One assistant message with 1–3 tool calls, then one tool result per call."""
        rng = self.rng
        text = _Text(rng, self.chooser.topics(rng), self._the("call"))
        calls = []
        tools = [_PICK_TOOL(rng) for _ in range(rng.choice((1, 1, 1, 1, 2, 2, 3)))]
        for tool in tools:
            args = _tool_arguments(rng, tool, text)
            calls.append({"id": _call_id(rng), "type": "function",
                          "function": {"name": tool, "arguments": json.dumps(args)}})
        content = None
        if text.topics or (text.the and not text.used_the) or rng.random() < 0.55:
            content = " ".join(text.sentences(_P_PREFACE, 1))
        msg = {"role": "assistant", "content": content, "tool_calls": calls,
               "finish_reason": "tool_calls", "token_count": _tokens_for(content) + 20 * len(calls)}
        out = [msg]
        for call, tool in zip(calls, tools):
            result_text = _Text(rng, self.chooser.topics(rng), self._the("result"))
            args = json.loads(call["function"]["arguments"])
            out.append({"role": "tool", "content": _tool_result(rng, tool, args, result_text),
                        "tool_call_id": call["id"], "tool_name": tool})
        return out

    def turn(self) -> list[dict[str, Any]]:
        """user → (tool rounds)* → assistant answer."""
        rng = self.rng
        msgs = [self.user()]
        rounds = 0
        while rng.random() < (0.42 if rounds == 0 else 0.3) and rounds < 4:
            msgs += self.tool_round()
            rounds += 1
        msgs.append(self.answer())
        return msgs

    def messages(self, n: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < n:
            out += self.turn()
        del out[n:]
        return out


def sample_turn(rng: random.Random, *, lang: str = "en", themes: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """One user→assistant exchange as message dicts (keywords of ``SessionDB.append_message``).

    For live writers such as the simulator: ``tool_calls`` is a list (or absent), ``lang`` is
    ``en``, ``zh``, ``ja`` or ``ko``; ``themes`` are topic words the session is about.
    """
    if lang not in ("en", "zh", "ja", "ko"):
        raise ValueError(f"unknown language {lang!r}")
    return _SessionWriter(rng, _Chooser(tuple(themes), lang)).turn()


def sample_title(rng: random.Random, *, lang: str = "en", themes: tuple[str, ...] = ()) -> str:
    """A plausible session title (not guaranteed unique)."""
    if lang != "en":
        subjects, actions = _CJK_TITLE_PARTS[lang]
        title = rng.choice(subjects) + rng.choice(actions)
        if rng.random() < 0.4:
            title = f"{themes[0] if themes else _ZIPF_RARE.pick(rng)} {title}"
        return title
    text = _Text(rng, list(themes[:1]), False)
    title = text.fill(rng.choice(_P_TITLE))
    return title[0].upper() + title[1:]


# ---------------------------------------------------------------------------------------------
# Planning: sessions, lineage, times, ids, titles
# ---------------------------------------------------------------------------------------------


@dataclass
class Shape:
    """Knobs of a corpus (defaults: the benchmark corpus)."""

    mean_messages: float = 21.5
    sigma: float = 0.85
    max_messages: int = 400
    span_days: float = 180.0
    p_compression: float = 0.06
    p_branch: float = 0.025
    p_delegates: float = 0.04
    p_titled: float = 0.75
    p_empty: float = 0.004
    recent_days: float = 3.0
    p_live_recent: float = 0.5
    p_never_ended: float = 0.03


DEMO_SHAPE = Shape(
    mean_messages=12.0, sigma=0.7, max_messages=80, span_days=60.0, p_compression=0.1,
    p_branch=0.05, p_delegates=0.08, p_titled=0.8, p_empty=0.0, recent_days=2.0,
    p_live_recent=0.6, p_never_ended=0.02,
)


@dataclass(eq=False, slots=True)
class _Plan:
    ordinal: int
    kind: str  # root | compression | branch | delegate
    parent: "_Plan | None"
    source: str
    lang: str
    themes: tuple[str, ...]
    n: int
    user_id: str | None
    model: str
    start: float = 0.0
    last: float = 0.0  # timestamp of the last message (start when empty)
    ended_at: float | None = None
    end_reason: str | None = None
    sid: str = ""
    title: str | None = None
    base_title: str | None = None
    has_children_after_end: bool = False
    # Current-upstream shapes (decided by _decorate, from their own random stream, so the
    # sessions, lineage and text above are the same whatever is decided here).
    label: str = ""  # the source written (tool runs are relabelled kanban / oneshot)
    archived: bool = False
    pinned: bool = False  # v30 column
    hidden: bool = False  # v30 column
    rewind: bool = False  # a rewound span (active = 0) and rewind_count
    scaffold: bool = False  # v30: a display_kind = 'hidden' first row
    compacted: bool = False  # v30: a compacted summary row (compacted = 1, active = 0) last
    reset_from: "_Plan | None" = None  # v30: a reset child of this gateway session
    workspace: tuple[str, str | None, str | None] | None = None  # cwd, git_branch, repo root
    title_source: str | None = None  # v30
    prompt_inline: bool = False  # v30: system_prompt in the row instead of by hash
    last_activity: bool = False  # v30: last_activity_at written


def _timing(seed: int, ordinal: int, n: int, source: str) -> list[float]:
    """Offsets (seconds after start) of the ``n`` messages of a session."""
    rng = random.Random(f"{seed}:{ordinal}:t")
    mean = 25.0 if source in _SIX_HEX_SOURCES else 60.0
    offsets = []
    t = rng.uniform(0.5, 5.0)
    for _ in range(n):
        offsets.append(round(t, 6))
        t += rng.expovariate(1.0 / mean) + 0.05
    return offsets


def _session_id(rng: random.Random, start: float, source: str, taken: set[str]) -> str:
    stamp = time.strftime("%Y%m%d_%H%M%S", time.gmtime(start))
    bits = 24 if source in _SIX_HEX_SOURCES else 32
    while True:
        sid = f"{stamp}_{rng.getrandbits(bits):0{bits // 4}x}"
        if sid not in taken:
            taken.add(sid)
            return sid


def _plan(
    rng: random.Random,
    seed: int,
    shape: Shape,
    now: float,
    *,
    message_budget: int | None,
    session_budget: int | None,
) -> list[_Plan]:
    """Decide every session: kind, parent, size, source, language, times, id, title."""
    mu = math.log(shape.mean_messages) - shape.sigma**2 / 2
    users: dict[str, list[str]] = {}
    convs: list[list[_Plan]] = []
    remaining = message_budget if message_budget is not None else 10**12
    sessions_left = session_budget if session_budget is not None else 10**12
    ordinal = 0

    def size(scale: float = 1.0) -> int:
        return max(1, min(shape.max_messages, int(rng.lognormvariate(mu, shape.sigma) * scale)))

    langs = list(_LANG_SESSION_SHARE.items())
    while remaining > 0 and sessions_left > 0:
        source = _PICK_SOURCE(rng)
        roll = rng.random()
        lang = "en"
        acc = 0.0
        for name, share in langs:
            acc += share
            if roll < acc:
                lang = name
                break
        themes = tuple(w for w, rate in TOPIC_RATES.items() if rng.random() < _theme_rate(rate))
        if source in _SIX_HEX_SOURCES or source in ("cron", "tool"):
            user_id = None
        else:
            pool = users.setdefault(source, [str(rng.randint(10**8, 10**10)) for _ in range(12)])
            user_id = rng.choice(pool)
        model = _PICK_MODEL(rng)

        def make(kind: str, parent: _Plan | None, n: int) -> _Plan:
            nonlocal ordinal
            plan = _Plan(ordinal, kind, parent, source, lang, themes, n, user_id, model)
            ordinal += 1
            return plan

        conv = [make("root", None, 0 if rng.random() < shape.p_empty else size())]
        r = rng.random()
        if r < shape.p_compression:
            for _ in range(rng.choice((1, 1, 2, 3))):
                conv.append(make("compression", conv[-1] if conv[-1].kind != "delegate" else conv[0], size()))
        segments = list(conv)
        if rng.random() < shape.p_delegates:
            for _ in range(rng.choice((1, 1, 2, 3))):
                host = rng.choice(segments)
                if host.n >= 4:
                    conv.append(make("delegate", host, size(0.4)))
        if rng.random() < shape.p_branch:
            conv.append(make("branch", segments[-1], size(0.7)))
        # Clip to the budgets (children come after their parent, so parents are never cut).
        kept: list[_Plan] = []
        for plan in conv:
            if remaining <= 0 or sessions_left <= 0 or (plan.parent is not None and plan.parent not in kept):
                break
            plan.n = min(plan.n, remaining)
            remaining -= plan.n
            sessions_left -= 1
            kept.append(plan)
        if kept:
            convs.append(kept)

    # Times: conversation starts uniform over the span (sorted), children relative to parents.
    span = shape.span_days * 86400.0
    starts = sorted(now - span + rng.random() * (span - 600) for _ in convs)
    for conv, base in zip(convs, starts):
        for plan in conv:
            offsets = _timing(seed, plan.ordinal, plan.n, plan.source)
            if plan.kind == "root":
                plan.start = base
            elif plan.kind == "compression":
                parent = plan.parent
                parent.has_children_after_end = True
                parent.ended_at = parent.last + rng.uniform(0.5, 20.0)
                parent.end_reason = "compression"
                plan.start = parent.ended_at + rng.uniform(0.05, 2.0)
            elif plan.kind == "branch":
                parent = plan.parent
                parent.has_children_after_end = True
                parent.ended_at = parent.last + rng.uniform(5.0, 600.0)
                parent.end_reason = "branched"
                plan.start = parent.ended_at + rng.uniform(0.05, 5.0)
            else:  # delegate: starts while the parent is running
                parent = plan.parent
                plan.start = parent.start + (parent.last - parent.start) * rng.uniform(0.1, 0.8) + 0.01
            plan.last = plan.start + (offsets[-1] if offsets else 0.0)
        # Shift the whole conversation back if it would end in the future.
        latest = max(max(p.last, p.ended_at or 0.0) for p in conv)
        if latest > now - 30:
            shift = latest - (now - 30)
            for plan in conv:
                plan.start -= shift
                plan.last -= shift
                if plan.ended_at is not None:
                    plan.ended_at -= shift

    # End the sessions that have no lineage end yet: live if recent (sometimes), else ended.
    plans = [p for conv in convs for p in conv]
    for plan in plans:
        if plan.has_children_after_end:
            continue
        recent = plan.last > now - shape.recent_days * 86400
        may_stay_open = plan.kind != "delegate"  # subagents finish with their task
        if (recent and rng.random() < shape.p_live_recent and may_stay_open) or rng.random() < shape.p_never_ended:
            plan.ended_at = None
            plan.end_reason = None
            continue
        if plan.kind == "delegate":
            reason = "completed"
            delay = rng.uniform(0.5, 5.0)
        elif plan.source in _SIX_HEX_SOURCES:
            reason = rng.choice(("user_exit", "user_exit", "user_exit", "user_exit", "session_reset", "error"))
            delay = rng.uniform(1.0, 300.0)
        elif plan.source in ("cron", "tool"):
            reason = "completed"
            delay = rng.uniform(0.5, 10.0)
        else:
            reason = rng.choice(("session_reset", "session_reset", "session_reset", "user_exit"))
            delay = rng.uniform(600.0, 86400.0)
        plan.ended_at = min(plan.last + delay, now - 1.0)
        if plan.ended_at < plan.last:
            plan.ended_at = plan.last
        plan.end_reason = reason

    # Ids and titles, in plan order (deterministic).
    taken: set[str] = set()
    titles: set[str] = set()
    for plan in plans:
        plan.sid = _session_id(rng, plan.start, plan.source, taken)
        if plan.kind == "compression":
            base = plan.parent.base_title
            if base is not None:
                number = 2
                parent = plan.parent
                while parent.kind == "compression":
                    number += 1
                    parent = parent.parent
                title = f"{base} #{number}"
                plan.base_title = base
                if title not in titles:
                    plan.title = title
                    titles.add(title)
        elif plan.kind == "root" and plan.n > 0 and rng.random() < shape.p_titled:
            title = sample_title(rng, lang=plan.lang, themes=plan.themes)
            if title in titles:  # unique index: number duplicates like people do, "(2)"
                k = 2
                while f"{title} ({k})" in titles:
                    k += 1
                title = f"{title} ({k})"
            titles.add(title)
            plan.title = plan.base_title = title
        elif plan.kind == "branch" and plan.parent.base_title and rng.random() < 0.5:
            title = f"{plan.parent.base_title} (branch)"
            k = 2
            while title in titles:
                title = f"{plan.parent.base_title} (branch {k})"
                k += 1
            titles.add(title)
            plan.title = title

    plans.sort(key=lambda p: (p.start, p.ordinal))
    _decorate(random.Random(f"{seed}:shapes"), plans, now)
    return plans


# ---------------------------------------------------------------------------------------------
# Current-upstream shapes (§16): archive, pin, hidden sessions, rewinds, scaffolding rows,
# compaction history, delegate / branch / reset markers, workspaces, internal sources.
# ---------------------------------------------------------------------------------------------

#: How often each shape occurs (shares of the sessions or conversations it can apply to).
#: Every shape also occurs at least once in any corpus that has a candidate for it.
SHAPE_RATES: dict[str, float] = {
    "archived": 0.04,  # ended conversations quiet for 14+ days (the whole compression lineage)
    "pinned": 0.015,  # conversations (the compression tip is pinned)
    "hidden": 0.01,  # gateway conversations (e.g. a bot chat)
    "rewind": 0.05,  # sessions of 6+ messages: a rewound exchange or tail (active = 0)
    "scaffold": 0.06,  # gateway / kanban sessions: a display_kind = 'hidden' first row
    "compacted": 0.7,  # compression parents: a compacted summary row at the end
    "reset_link": 0.85,  # gateway sessions ended by session_reset: linked to the lane's next one
    "workspace": 0.8,  # CLI / TUI / kanban / oneshot conversations with a cwd
    "no_git": 0.12,  # of those: a cwd outside any repository
    "prompt_inline": 0.1,  # v30 rows that still carry the prompt inline (not by hash)
    "last_activity": 0.85,  # v30 rows with last_activity_at
}
#: ``tool`` runs relabelled as the other internal sources (kanban worker runs, one-shots).
_INTERNAL_RELABEL = (("kanban", 0.3), ("oneshot", 0.2))
_GATEWAY_CHAT_TYPES = {
    "telegram": "dm", "whatsapp": "dm", "signal": "dm", "email": "dm",
    "discord": "group", "slack": "channel", "matrix": "group",
}
_WORKSPACE_SOURCES = frozenset({"cli", "tui", "kanban", "oneshot"})
_HOME = "/home/maya"
#: A handful of repositories (root, weight, branches with weights; "main" most of the time).
_REPOS: tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...] = (
    (f"{_HOME}/src/webapp", 0.34, (("main", 0.5), ("feat/auth-refresh", 0.2), ("fix/session-timeout", 0.15),
                                   ("feat/billing-page", 0.15))),
    (f"{_HOME}/src/infra", 0.22, (("main", 0.6), ("staging", 0.25), ("chore/rotate-certs", 0.15))),
    (f"{_HOME}/src/billing-api", 0.16, (("main", 0.55), ("feat/invoices-v2", 0.3), ("fix/rounding", 0.15))),
    (f"{_HOME}/work/mobile-app", 0.12, (("develop", 0.6), ("release/2026.1", 0.25), ("feat/offline-sync", 0.15))),
    (f"{_HOME}/src/dotfiles", 0.09, (("master", 1.0),)),
    (f"{_HOME}/src/notes-site", 0.07, (("main", 0.8), ("draft/spring-essays", 0.2))),
)
_REPO_SUBDIRS = ("src", "tests", "scripts", "docs", "src/components", "migrations")
_NO_GIT_DIRS = (_HOME, f"{_HOME}/Downloads", f"{_HOME}/tmp", "/tmp")
_TITLE_SOURCES_ROOT = (("llm", 0.5), ("derived", 0.3), ("user", 0.2))
_PROMPT_PLATFORM = {
    "cli": "You are running in the user's terminal.", "tui": "You are running in the user's terminal.",
    "telegram": "You are chatting over Telegram; keep replies short.",
    "discord": "You are in a Discord server; mention people by name.",
    "slack": "You are in a Slack workspace.", "whatsapp": "You are chatting over WhatsApp.",
    "signal": "You are chatting over Signal.", "matrix": "You are in a Matrix room.",
    "email": "You are answering email.", "api-server": "You are serving an API client.",
    "cron": "You are running a scheduled job; report results.",
    "tool": "You are running as a tool.", "kanban": "You are a kanban worker; finish your card.",
    "oneshot": "You answer one request and exit.",
}
_SUBAGENT_PROMPT = "You are a focused subagent."
_SUMMARY_PREFIX = "[CONTEXT COMPACTION] Summary of earlier turns: "
_RESET_END_REASONS = frozenset({"session_reset"})


def _system_prompt_for(plan: _Plan) -> str:
    if plan.kind == "delegate":
        return _SUBAGENT_PROMPT
    return f"{_SYSTEM_PROMPT} {_PROMPT_PLATFORM.get(plan.label, '')}".rstrip()


def _pick(rng: random.Random, pairs) -> str:
    r = rng.random() * sum(w for _, w in pairs)
    for name, weight in pairs:
        r -= weight
        if r < 0:
            return name
    return pairs[-1][0]


def _workspace(rng: random.Random) -> tuple[str, str | None, str | None]:
    if rng.random() < SHAPE_RATES["no_git"]:
        return rng.choice(_NO_GIT_DIRS), None, None
    root, _, branches = _REPOS[[r for r, *_ in _REPOS].index(_pick(rng, [(r, w) for r, w, _ in _REPOS]))]
    branch = _pick(rng, branches)
    cwd = root if rng.random() < 0.7 else f"{root}/{rng.choice(_REPO_SUBDIRS)}"
    return cwd, branch, root


def sample_workspace(rng: random.Random) -> tuple[str, str | None, str | None]:
    """A working directory as upstream records it: ``(cwd, git_branch, git_repo_root)``, one
    of a handful of repositories on a few branches (sometimes a directory outside any repo,
    then both git values are None)."""
    return _workspace(rng)


#: Sub-directories a workspace's cwd may move to (for live writers).
WORKSPACE_SUBDIRS = _REPO_SUBDIRS


def _decorate(rng: random.Random, plans: list[_Plan], now: float) -> None:
    """Decide the current-upstream shapes of every planned session (in plan order).

    Decisions depend only on the plan and ``rng``, never on the schema being written: a
    v16 and a v30 build of the same seed have the same sessions, text and shapes, and each
    layout writes what it can hold (pins, hidden sessions, scaffolding rows, compaction
    history, reset links, git columns, title sources and prompts by hash only at v30).
    """
    convs: dict[int, list[_Plan]] = {}
    root_of: dict[int, _Plan] = {}
    for plan in sorted(plans, key=lambda p: p.ordinal):  # parents come before children
        root = plan if plan.parent is None else root_of[id(plan.parent)]
        root_of[id(plan)] = root
        convs.setdefault(id(root), []).append(plan)
    ordered = sorted(convs.values(), key=lambda c: (c[0].start, c[0].ordinal))

    def lineage(conv: list[_Plan]) -> list[_Plan]:
        return [p for p in conv if p.kind in ("root", "compression")]

    def forced(candidates: list, pred) -> set[int]:
        first = next((c for c in candidates if pred(c)), None)
        return {id(first)} if first is not None else set()

    # Sources and workspaces, per conversation.
    for conv in ordered:
        label = conv[0].source
        if label == "tool":
            r = rng.random()
            for name, share in _INTERNAL_RELABEL:
                if r < share:
                    label = name
                    break
                r -= share
        workspace = None
        if label in _WORKSPACE_SOURCES and rng.random() < SHAPE_RATES["workspace"]:
            workspace = _workspace(rng)
        for plan in conv:
            plan.label = label
            plan.workspace = workspace

    # Archived conversations (whole compression lineage); one with a chain is guaranteed.
    quiet = now - 14 * 86400

    def archivable(conv: list[_Plan]) -> bool:
        return all(p.ended_at is not None and p.ended_at < quiet for p in lineage(conv))

    must = forced(ordered, lambda c: archivable(c) and len(lineage(c)) > 1)
    must |= forced(ordered, archivable)
    for conv in ordered:
        if archivable(conv) and (rng.random() < SHAPE_RATES["archived"] or id(conv) in must):
            for plan in lineage(conv):
                plan.archived = True

    # Pinned (the whole lineage, as SessionDB.set_session_pinned does) and hidden
    # conversations. People pin a handful, whatever the size of their history.
    open_convs = [c for c in ordered if not c[0].archived]
    must = forced(open_convs, lambda c: c[0].n > 0)
    pins = 0
    for conv in open_convs:
        if (rng.random() < SHAPE_RATES["pinned"] and pins < MAX_PINNED) or id(conv) in must:
            for plan in lineage(conv):
                plan.pinned = True
            pins += 1
    gateway = [c for c in open_convs if c[0].label in _GATEWAY_CHAT_TYPES and not any(p.pinned for p in c)]
    must = forced(gateway, lambda c: c[0].n > 0)
    for conv in gateway:
        if rng.random() < SHAPE_RATES["hidden"] or id(conv) in must:
            for plan in lineage(conv):
                plan.hidden = True

    # Per session: rewinds, scaffolding rows, compaction history, title sources, prompts.
    def can_rewind(p: _Plan) -> bool:
        return p.kind != "delegate" and p.n >= 6 and not p.has_children_after_end

    def can_scaffold(p: _Plan) -> bool:
        return p.kind != "delegate" and p.n >= 3 and (p.label in _GATEWAY_CHAT_TYPES or p.label == "kanban")

    by_ordinal = sorted(plans, key=lambda p: p.ordinal)
    compression_parents = {id(p.parent) for p in plans if p.kind == "compression"}
    must_rewind = forced(by_ordinal, can_rewind)
    must_scaffold = forced(by_ordinal, can_scaffold)
    for plan in by_ordinal:
        plan.rewind = can_rewind(plan) and (rng.random() < SHAPE_RATES["rewind"] or id(plan) in must_rewind)
        plan.scaffold = can_scaffold(plan) and (
            rng.random() < SHAPE_RATES["scaffold"] or id(plan) in must_scaffold)
        plan.compacted = (id(plan) in compression_parents and plan.n >= 3
                          and rng.random() < SHAPE_RATES["compacted"])
        if plan.title is not None:
            if plan.kind == "branch":
                plan.title_source = "branch" if rng.random() < 0.85 else "branch_fallback"
            elif plan.kind == "root":
                plan.title_source = _pick(rng, _TITLE_SOURCES_ROOT)
        plan.prompt_inline = rng.random() < SHAPE_RATES["prompt_inline"]
        plan.last_activity = plan.n > 0 and rng.random() < SHAPE_RATES["last_activity"]

    # Reset children: a gateway lane ended by session_reset continues in its next session.
    lanes: dict[tuple[str, str | None], list[_Plan]] = {}
    for plan in plans:  # in start order
        if plan.label in _GATEWAY_CHAT_TYPES and plan.kind != "delegate":
            lanes.setdefault((plan.label, plan.user_id), []).append(plan)
    for lane in lanes.values():
        for i, plan in enumerate(lane):
            if plan.end_reason not in _RESET_END_REASONS or plan.ended_at is None:
                continue
            nxt = next((p for p in lane[i + 1:] if p.start >= plan.ended_at), None)
            if (nxt is not None and nxt.kind == "root" and nxt.reset_from is None
                    and rng.random() < SHAPE_RATES["reset_link"]):
                nxt.reset_from = plan


def _session_key(plan: _Plan) -> tuple[str | None, str | None, str | None]:
    """``(session_key, chat_id, chat_type)`` of a gateway session (v30), as GW-7 builds them."""
    chat_type = _GATEWAY_CHAT_TYPES.get(plan.label)
    if chat_type is None or plan.user_id is None:
        return None, None, None
    if chat_type == "dm":
        chat_id = plan.user_id
        return f"agent:main:{plan.label}:dm:{chat_id}", chat_id, chat_type
    chat_id = f"{int(plan.user_id) % 900000 + 100000}"
    return f"agent:main:{plan.label}:{chat_type}:{chat_id}:{plan.user_id}", chat_id, chat_type


# ---------------------------------------------------------------------------------------------
# Rows and the build
# ---------------------------------------------------------------------------------------------

_SESSION_COLUMNS = (
    "id", "source", "user_id", "model", "model_config", "system_prompt", "parent_session_id",
    "started_at", "ended_at", "end_reason", "message_count", "tool_call_count", "input_tokens",
    "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
    "billing_provider", "billing_base_url", "billing_mode", "estimated_cost_usd",
    "actual_cost_usd", "cost_status", "cost_source", "pricing_version", "title", "api_call_count",
)
#: Columns each layout adds to the row above (in this order).
_SESSION_EXTRA = {
    16: ("cwd", "rewind_count", "archived"),
    30: ("cwd", "rewind_count", "archived", "system_prompt_hash", "session_key", "chat_id",
         "chat_type", "git_branch", "git_repo_root", "title_source", "last_activity_at", "pinned",
         "hidden"),
}
_MESSAGE_COLUMNS = (
    "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
    "token_count", "finish_reason", "reasoning",
)
_MESSAGE_EXTRA = {16: ("active",), 30: ("active", "compacted", "_compressed_summary", "display_kind")}
_USAGE_COLUMNS = (
    "session_id", "model", "billing_provider", "billing_base_url", "billing_mode", "api_call_count",
    "input_tokens", "output_tokens", "cache_read_tokens", "reasoning_tokens", "estimated_cost_usd",
    "cost_status", "cost_source", "first_seen", "last_seen",
)
#: The layouts a corpus can be written in: 16 (what ``hermes_state`` creates) and 30.
SCHEMAS = (16, 30)


def _insert_sql(table: str, columns: tuple[str, ...], verb: str = "INSERT") -> str:
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"


def _insert_statements(schema: int) -> dict[str, str]:
    return {
        "prompts": "INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)",
        "sessions": _insert_sql("sessions", _SESSION_COLUMNS + _SESSION_EXTRA[schema]),
        "messages": _insert_sql("messages", _MESSAGE_COLUMNS + _MESSAGE_EXTRA[schema]),
        "usage": _insert_sql("session_model_usage", _USAGE_COLUMNS),
    }


@dataclass
class CorpusStats:
    """What a build produced (also written by the bench next to its cached corpus)."""

    path: str
    seed: int
    now: float
    generator_version: int = GENERATOR_VERSION
    schema: int = 16
    sessions: int = 0
    messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    cjk_messages: int = 0
    titled_sessions: int = 0
    live_sessions: int = 0
    empty_sessions: int = 0
    compression_children: int = 0
    branch_children: int = 0
    delegate_children: int = 0
    reset_children: int = 0  # linked at v30 only (_reset_from, session_key)
    archived_sessions: int = 0
    pinned_sessions: int = 0  # v30
    hidden_sessions: int = 0  # v30
    rewound_sessions: int = 0
    inactive_messages: int = 0  # rewound rows (active = 0, compacted = 0)
    compacted_messages: int = 0  # v30
    scaffold_messages: int = 0  # v30 display_kind = 'hidden'
    workspace_sessions: int = 0
    sources: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _is_cjk_char(ch: str) -> bool:
    cp = ord(ch)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x3000 <= cp <= 0x30FF
            or 0xAC00 <= cp <= 0xD7AF or 0x20000 <= cp <= 0x2A6DF)


def _contains_cjk(text: str | None) -> bool:
    return bool(text) and any(_is_cjk_char(ch) for ch in text)


def _prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def _scaffold_text(rng: random.Random, plan: _Plan) -> str:
    """An injected, never-shown user row (v30 ``display_kind = 'hidden'``)."""
    if plan.label == "kanban":
        return (f"[kanban card {rng.randint(100, 9999)}] {_ZIPF_VERBS.pick(rng).capitalize()} "
                f"{_ZIPF_NOUNS.pick(rng)} in {_slot(rng, 'file')}; report when done.")
    return (f"[{plan.label} context] sender {plan.user_id}; chat {_ZIPF_RARE.pick(rng)}; "
            f"reply in plain text, no markdown tables.")


def _summary_text(rng: random.Random) -> str:
    """The compaction summary kept as history in a compression parent (v30)."""
    text = _Text(rng, [], False)
    return _SUMMARY_PREFIX + " ".join(text.sentences(_P_ASSISTANT, 2))


def _rewind_span(rng: random.Random, msgs: list[dict[str, Any]]) -> tuple[int, int] | None:
    """Rows ``[lo, hi)`` rewound from a user message: the tail, or one exchange redone after."""
    users = [i for i, m in enumerate(msgs) if m["role"] == "user" and i >= 2]
    if not users:
        return None
    lo = rng.choice(users)
    later = [i for i in users if i > lo]
    if later and rng.random() < 0.45:
        return lo, later[0]
    return lo, len(msgs)


def _session_rows(seed: int, plan: _Plan, stats: CorpusStats, schema: int) -> dict[str, list]:
    rng = random.Random(f"{seed}:{plan.ordinal}:m")
    xrng = random.Random(f"{seed}:{plan.ordinal}:x")  # shapes: drawn alike at every schema
    v30 = schema == 30
    scaffold = plan.scaffold and v30
    compacted = plan.compacted and v30
    normal = plan.n - scaffold - compacted
    writer = _SessionWriter(rng, _Chooser(plan.themes, plan.lang))
    msgs = writer.messages(normal) if normal else []
    scaffold_text = _scaffold_text(xrng, plan)
    summary_text = _summary_text(xrng)
    span = _rewind_span(xrng, msgs) if plan.rewind else None
    rewinds = 1 if xrng.random() < 0.85 else 2
    last_activity_pad = xrng.uniform(0.0, 5.0)
    offsets = _timing(seed, plan.ordinal, plan.n, plan.source)
    rows = []
    calls = 0
    assistant_tokens = 0
    other_tokens = 0
    api_calls = 0
    lo, hi = span if span is not None else (-1, -1)
    shaped: list[tuple[dict[str, Any], int, int, str | None]] = []  # msg, active, compacted, kind
    if scaffold:
        shaped.append(({"role": "user", "content": scaffold_text}, 1, 0, "hidden"))
    shaped.extend((msg, 0 if lo <= i < hi else 1, 0, None) for i, msg in enumerate(msgs))
    if compacted:
        shaped.append(({"role": "user", "content": summary_text}, 0, 1, None))
    for (msg, active, is_compacted, kind), offset in zip(shaped, offsets):
        tool_calls = msg.get("tool_calls")
        if tool_calls:
            calls += len(tool_calls)
        content = msg.get("content")
        if msg["role"] == "assistant":
            api_calls += 1
            assistant_tokens += msg.get("token_count") or 0
        else:
            other_tokens += _tokens_for(content)
        if msg["role"] == "tool":
            stats.tool_results += 1
        if plan.lang != "en" and _contains_cjk(content):
            stats.cjk_messages += 1
        row = (
            plan.sid, msg["role"], content, msg.get("tool_call_id"),
            json.dumps(tool_calls) if tool_calls else None, msg.get("tool_name"),
            plan.start + offset, msg.get("token_count"), msg.get("finish_reason"), msg.get("reasoning"),
            active,
        )
        if v30:
            row += (is_compacted, is_compacted, kind)
        rows.append(row)
        stats.inactive_messages += not active and not is_compacted
        stats.compacted_messages += is_compacted
        stats.scaffold_messages += kind == "hidden"
    # Every API call re-sends the conversation so far: input tokens grow with the transcript.
    input_tokens = other_tokens * max(1, api_calls // 2) + 1200 * api_calls
    cache_read = int(input_tokens * rng.uniform(0.3, 0.8)) if api_calls else 0
    output_tokens = assistant_tokens
    cost = round(input_tokens * 3e-6 + output_tokens * 15e-6, 6) if api_calls else None
    config: dict[str, Any] = {"temperature": 0.7, "max_tokens": 8192} if rng.random() < 0.3 else {}
    parent_id = plan.parent.sid if plan.parent is not None else None
    if plan.kind == "delegate":  # upstream's delegate marker (v16 on)
        config["_delegate_from"] = parent_id
    elif plan.kind == "branch":  # /branch's marker
        config["_branched_from"] = parent_id
    elif plan.reset_from is not None and v30:  # a gateway lane's next session after a reset
        config["_reset_from"] = plan.reset_from.sid
        parent_id = plan.reset_from.sid
    prompt = _system_prompt_for(plan)
    by_hash = v30 and not plan.prompt_inline
    source = "subagent" if v30 and plan.kind == "delegate" else plan.label
    session = (
        plan.sid, source, plan.user_id, plan.model,
        json.dumps(config) if config else None,
        None if by_hash else prompt,
        parent_id,
        plan.start, plan.ended_at, plan.end_reason, len(rows), calls, input_tokens, output_tokens,
        cache_read, 0, int(output_tokens * 0.1),
        "openrouter" if api_calls else None,
        "https://openrouter.ai/api/v1" if api_calls else None,
        "api" if api_calls else None, cost, None, "estimated" if api_calls else None,
        "pricing_table" if api_calls else None, "2025-10" if api_calls else None,
        plan.title, api_calls,
    )
    cwd, git_branch, git_root = plan.workspace or (None, None, None)
    rewind_count = rewinds if span is not None else 0
    session += (cwd, rewind_count, int(plan.archived))
    out: dict[str, list] = {"prompts": [], "sessions": [session], "messages": rows, "usage": []}
    if v30:
        key, chat_id, chat_type = _session_key(plan)
        last_activity = None
        if plan.last_activity and rows:
            last_activity = min(rows[-1][6] + last_activity_pad, stats.now - 1.0)
        digest = _prompt_hash(prompt) if by_hash else None
        session += (digest, key, chat_id, chat_type, git_branch, git_root, plan.title_source,
                    last_activity, int(plan.pinned), int(plan.hidden))
        out["sessions"] = [session]
        if by_hash:
            out["prompts"].append((digest, prompt))
        if api_calls:
            out["usage"].append((
                plan.sid, plan.model, "openrouter", "https://openrouter.ai/api/v1", "api", api_calls,
                input_tokens, output_tokens, cache_read, int(output_tokens * 0.1), cost or 0.0,
                "estimated", "pricing_table", rows[0][6], rows[-1][6],
            ))
        stats.reset_children += plan.reset_from is not None
        stats.pinned_sessions += plan.pinned
        stats.hidden_sessions += plan.hidden
    stats.sessions += 1
    stats.messages += len(rows)
    stats.tool_calls += calls
    stats.sources[source] = stats.sources.get(source, 0) + 1
    stats.titled_sessions += plan.title is not None
    stats.live_sessions += plan.ended_at is None
    stats.empty_sessions += not rows
    stats.archived_sessions += plan.archived
    stats.rewound_sessions += span is not None
    stats.workspace_sessions += cwd is not None
    if plan.kind == "compression":
        stats.compression_children += 1
    elif plan.kind == "branch":
        stats.branch_children += 1
    elif plan.kind == "delegate":
        stats.delegate_children += 1
    return out


def _batches(
    seed: int, plans: list[_Plan], stats: CorpusStats, batch_messages: int, schema: int
) -> Iterator[dict[str, list]]:
    batch: dict[str, list] = {"prompts": [], "sessions": [], "messages": [], "usage": []}
    seen_prompts: set[str] = set()
    for plan in plans:
        out = _session_rows(seed, plan, stats, schema)
        for digest, prompt in out.pop("prompts"):
            if digest not in seen_prompts:
                seen_prompts.add(digest)
                batch["prompts"].append((digest, prompt))
        for name, rows in out.items():
            batch[name].extend(rows)
        if len(batch["messages"]) >= batch_messages:
            yield batch
            batch = {"prompts": [], "sessions": [], "messages": [], "usage": []}
    if batch["sessions"]:
        yield batch


def _build(
    db_path: Path | str,
    *,
    seed: int,
    now: float,
    shape: Shape,
    message_budget: int | None,
    session_budget: int | None,
    progress: ProgressFn | None,
    schema: int = 16,
    batch_messages: int = 20000,
) -> CorpusStats:
    from hermes_state import SessionDB

    if schema not in SCHEMAS:
        raise ValueError(f"schema must be one of {', '.join(map(str, SCHEMAS))}, not {schema!r}")
    t0 = time.perf_counter()
    path = Path(db_path)
    if schema == 30:
        _prepare_v30(path)
    db = SessionDB(path)
    try:
        existing = db.store.fetchone("SELECT COUNT(*) FROM sessions")[0]
        if existing:
            raise ValueError(f"{path} already holds {existing} sessions; build a corpus into a new file")
        found = db.opened_version
        if schema == 30 and found != 30:
            raise ValueError(f"{path} is a schema {found} store; a v30 corpus needs a new file")
        rng = random.Random(f"{seed}:plan")
        plans = _plan(rng, seed, shape, now, message_budget=message_budget, session_budget=session_budget)
        total = sum(p.n for p in plans)
        stats = CorpusStats(path=str(path), seed=seed, now=now, schema=schema)
        sql = _insert_statements(schema)
        conn = db.store.connection
        saved = {name: conn.execute(f"PRAGMA {name}").fetchone()[0]
                 for name in ("synchronous", "cache_size", "temp_store")}
        # Build-time speed only, on this connection; nothing persistent changes.
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-262144")
        conn.execute("PRAGMA temp_store=MEMORY")
        try:
            done = 0
            if progress:
                progress(0, total)
            for count, batch in enumerate(
                _prefetch(_batches(seed, plans, stats, batch_messages, schema)), start=1
            ):
                # Plain INSERTs into sessions and messages only: the store's own triggers
                # index every message (both FTS layouts), as in production. System prompts
                # go first (sessions refer to them by hash), session rows before their
                # messages (the v30 trigram trigger reads the session's source and markers).
                def insert(c: sqlite3.Connection, b=batch) -> None:
                    if b["prompts"]:
                        c.executemany(sql["prompts"], b["prompts"])
                    c.executemany(sql["sessions"], b["sessions"])
                    c.executemany(sql["messages"], b["messages"])
                    if b["usage"]:
                        c.executemany(sql["usage"], b["usage"])

                db.store.write(insert, count=False)
                done += len(batch["messages"])
                if count % 10 == 0:  # keep the WAL from growing to the size of the database
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                if progress:
                    progress(done, total)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            for name, value in saved.items():
                conn.execute(f"PRAGMA {name}={int(value)}")
    finally:
        db.close()
    stats.elapsed_s = round(time.perf_counter() - t0, 3)
    return stats


def _prepare_v30(path: Path) -> None:
    """Create the v30 layout in a new file (an existing store is checked by the caller)."""
    from .schema_v30 import create_v30_store

    if path.exists() and path.stat().st_size > 0:
        conn = sqlite3.connect(str(path))
        try:
            has_tables = conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
        finally:
            conn.close()
        if has_tables:
            return
    create_v30_store(path)


def _prefetch(batches: Iterator[tuple[list, list]], depth: int = 2) -> Iterator[tuple[list, list]]:
    """Generate the next batches in a thread while SQLite indexes the current one.

    SQLite releases the GIL while it steps, so text generation and FTS indexing overlap. The
    generator itself is sequential and seeded, so the output does not depend on timing.
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def produce() -> None:
        try:
            for item in batches:
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(end)
        except BaseException as exc:  # handed to the consumer, re-raised there
            q.put(exc)

    thread = threading.Thread(target=produce, name="corpus-generator", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is end:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                q.get_nowait()
            except queue.Empty:
                pass
            thread.join(timeout=0.05)


def generate_corpus(
    db_path: Path | str,
    *,
    messages: int = 10_000,
    seed: int = 0,
    now: float | None = None,
    progress: ProgressFn | None = None,
    schema: int = 16,
) -> CorpusStats:
    """Build a benchmark corpus of exactly ``messages`` messages into a new database.

    ``schema`` is the layout written: 16 (what ``hermes_state`` creates; the default) or 30
    (a store born at upstream schema 30: external-content FTS, system prompts by hash, pins,
    hidden sessions, scaffolding rows, compaction history, reset children). Both hold the
    same sessions and shapes as far as the layout can express them.

    ``now`` anchors every timestamp (sessions spread over the 180 days before it); None means
    the current time, so pass it for a reproducible build: the same ``(messages, seed, now)``
    yields identical rows. ``progress(done, total)`` is called after every batch.
    Raises ``ValueError`` if the database already has sessions.
    """
    if messages < 1:
        raise ValueError("messages must be at least 1")
    anchor = float(now) if now is not None else float(int(time.time()))
    return _build(db_path, seed=seed, now=anchor, shape=Shape(), message_budget=int(messages),
                  session_budget=None, progress=progress, schema=schema)


def generate_demo(
    db_path: Path | str,
    *,
    sessions: int = 300,
    seed: int = 7,
    now: float | None = None,
    progress: ProgressFn | None = None,
    schema: int = 16,
) -> CorpusStats:
    """A small, readable corpus for demo mode: ``sessions`` sessions over the last 60 days.

    Denser lineage than the benchmark corpus (compression chains, branches, delegates), a few
    live sessions in the last hours, English and CJK conversations with tool calls.
    """
    if sessions < 1:
        raise ValueError("sessions must be at least 1")
    anchor = float(now) if now is not None else float(int(time.time()))
    return _build(db_path, seed=seed, now=anchor, shape=DEMO_SHAPE, message_budget=None,
                  session_budget=int(sessions), progress=progress, schema=schema)


__all__ = [
    "ABSENT_CJK_TERMS",
    "CJK_TERM_RATES",
    "COMMON_WORDS",
    "CorpusStats",
    "DEMO_SHAPE",
    "GENERATOR_VERSION",
    "NO_MATCH_WORDS",
    "RARE_WORDS",
    "SCHEMAS",
    "SHAPE_RATES",
    "Shape",
    "TOPIC_RATES",
    "generate_corpus",
    "generate_demo",
    "sample_title",
    "sample_turn",
    "sample_workspace",
]
