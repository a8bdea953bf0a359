"""The shape of a relevance needle: one hand-written conversation and the queries a person
would type to find it again, with the rules every needle is checked against.

A needle is planted into a generated corpus (:mod:`bench.relevance`) as one conversation:
one session, or a compression chain (a parent ended with ``compression`` and the child that
continues it), in a CLI or a gateway source. Its four queries are the four kinds of the
relevance table:

* ``prefix`` -- one distinctive word, partly typed (the browser makes the last word a prefix);
* ``words`` -- two or three words, a distinctive one and common ones, all in one message;
* ``vague`` -- common words that still describe it, all in one message;
* ``spread`` -- words from different messages: no single message holds every word.

:func:`validate` fails loudly when a needle breaks a rule (a ``spread`` query whose words one
message holds would measure message-level search, not conversation-level).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

#: The four kinds of query, in the order the tables show them.
KINDS = ("prefix", "words", "vague", "spread")
KIND_TITLES = {
    "prefix": "one distinctive word, partly typed",
    "words": "two or three words, distinctive + common, in one message",
    "vague": "vague common words, in one message",
    "spread": "words from different messages",
}
LANGS = ("en", "zh", "ja", "ko")
#: Gateway sources a needle may come from (the rest are CLI/TUI).
GATEWAY_SOURCES = ("telegram", "discord", "slack", "whatsapp", "signal", "matrix", "email")
SOURCES = ("cli", "tui") + GATEWAY_SOURCES
#: Age buckets (days, inclusive upper bounds) the tables split by.
AGE_BUCKETS = ((7, "1-7 d"), (30, "8-30 d"), (90, "31-90 d"), (180, "91-180 d"), (360, "181-360 d"))

_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
#: unicode61's idea of a word in ASCII text: runs of letters and digits (``_`` separates).
_WORD_RE = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Msg:
    """One stored message. A tool round is an assistant message with ``tool_calls`` followed
    by a ``tool`` message carrying the result (as Hermes stores them)."""

    role: str
    content: str | None
    tool_name: str | None = None
    tool_calls: tuple[dict[str, Any], ...] | None = None
    tool_call_id: str | None = None

    def searchable(self) -> str:
        """Every text of the row an index may hold (content, tool name, tool-call JSON)."""
        parts = [self.content or "", self.tool_name or ""]
        if self.tool_calls:
            parts.append(json.dumps(list(self.tool_calls), ensure_ascii=False))
        return "\n".join(parts)


def U(text: str) -> list[Msg]:
    return [Msg("user", text)]


def A(text: str) -> list[Msg]:
    return [Msg("assistant", text)]


def T(tool: str, args: dict[str, Any], output: str, say: str | None = None) -> list[Msg]:
    """A tool round: the assistant's call (with an optional line of text) and its result."""
    call_id = "call_" + hashlib.sha1(json.dumps([tool, args], sort_keys=True).encode()).hexdigest()[:24]
    call = {"id": call_id, "type": "function",
            "function": {"name": tool, "arguments": json.dumps(args, ensure_ascii=False)}}
    return [Msg("assistant", say, tool_calls=(call,)),
            Msg("tool", output, tool_name=tool, tool_call_id=call_id)]


@dataclass(frozen=True)
class Needle:
    key: str
    lang: str
    source: str
    age_days: int
    title: str
    messages: tuple[Msg, ...]
    queries: dict[str, str] = field(hash=False)
    #: Index of the first message of the compression child (None: one session).
    split: int | None = None

    @property
    def shape(self) -> str:
        if self.split is not None:
            return "compression"
        return "gateway" if self.source in GATEWAY_SOURCES else "single"


def needle(key: str, lang: str, source: str, age_days: int, title: str, turns: list[list[Msg]],
           queries: dict[str, str], split_turn: int | None = None) -> Needle:
    """Build a needle from turns (lists of messages); ``split_turn`` is the turn the
    compression child starts with."""
    messages: list[Msg] = []
    split = None
    for i, turn in enumerate(turns):
        if i == split_turn:
            split = len(messages)
        messages.extend(turn)
    return Needle(key, lang, source, age_days, title, tuple(messages), dict(queries), split)


# ------------------------------------------------------------------------------ matching
#
# What "a message holds a word" means, as the indexes answer it: an ASCII word is a whole
# unicode61 token (the last word of a query also any token it starts, as the browser types
# it); a CJK word is a substring (the trigram index and the LIKE path).


def query_words(query: str) -> list[str]:
    return query.split()


def is_cjk(word: str) -> bool:
    return bool(_CJK_RE.search(word))


def holds(text: str, word: str, *, prefix: bool = False) -> bool:
    low = text.lower()
    word = word.lower()
    if is_cjk(word):
        return word in low
    tokens = _WORD_RE.findall(low)
    return any(t.startswith(word) for t in tokens) if prefix else word in tokens


def holds_all(text: str, query: str) -> bool:
    words = query_words(query)
    return all(holds(text, w, prefix=(i == len(words) - 1)) for i, w in enumerate(words))


def loosely_holds_all(text: str, query: str) -> bool:
    """Every word is somewhere in ``text`` as a substring, in any case: a superset of every
    index's match, so a message that fails this can match the query on no path."""
    low = text.lower()
    return all(w.lower() in low for w in query_words(query))


# ------------------------------------------------------------------------------ validation


class NeedleError(ValueError):
    """A needle breaks a rule of the set; the message says which and why."""


_PLAIN_ASCII = re.compile(r"[a-z0-9]+")


def validate_needle(n: Needle) -> None:
    where = f"needle {n.key!r}"
    if n.lang not in LANGS:
        raise NeedleError(f"{where}: unknown language {n.lang!r}")
    if n.source not in SOURCES:
        raise NeedleError(f"{where}: unknown source {n.source!r}")
    if not 1 <= n.age_days <= 360:
        raise NeedleError(f"{where}: age {n.age_days} days is outside 1-360")
    if len(n.messages) < 4 or not any(m.role == "user" for m in n.messages):
        raise NeedleError(f"{where}: a conversation needs several messages and a user turn")
    if n.split is not None and not 0 < n.split < len(n.messages):
        raise NeedleError(f"{where}: the compression split {n.split} leaves a session empty")
    if n.split is not None and n.messages[n.split].role != "user":
        raise NeedleError(f"{where}: the compression child must start with a user turn")
    if set(n.queries) != set(KINDS):
        raise NeedleError(f"{where}: queries must be exactly {KINDS}, not {sorted(n.queries)}")
    texts = [m.content or "" for m in n.messages]
    every = [m.searchable() for m in n.messages]
    for kind in KINDS:
        query = n.queries[kind]
        words = query_words(query)
        if not words:
            raise NeedleError(f"{where}: the {kind} query is empty")
        for w in words:
            if not is_cjk(w) and not _PLAIN_ASCII.fullmatch(w):
                raise NeedleError(f"{where}: {kind} word {w!r} is not a plain lower-case word")
            if not is_cjk(w) and len(w) < 3:
                raise NeedleError(f"{where}: {kind} word {w!r} is shorter than 3 letters")
    prefix = n.queries["prefix"]
    if len(query_words(prefix)) != 1:
        raise NeedleError(f"{where}: the prefix query is one partly typed word, not {prefix!r}")
    if not any(holds(t, prefix, prefix=True) for t in texts):
        raise NeedleError(f"{where}: no message has a word starting {prefix!r}")
    if not is_cjk(prefix) and any(holds(t, prefix) for t in texts):
        raise NeedleError(f"{where}: {prefix!r} is a whole word of the needle, not a partly typed one")
    for kind in ("words", "vague"):
        count = len(query_words(n.queries[kind]))
        if kind == "words" and not 2 <= count <= 3:
            raise NeedleError(f"{where}: the words query has {count} words, not 2 or 3")
        if not any(holds_all(t, n.queries[kind]) for t in texts):
            raise NeedleError(f"{where}: no single message holds every word of {n.queries[kind]!r} ({kind})")
    spread = n.queries["spread"]
    if len(query_words(spread)) < 2:
        raise NeedleError(f"{where}: the spread query needs words from two messages at least")
    for i, text in enumerate(every):
        if loosely_holds_all(text, spread):
            raise NeedleError(f"{where}: message {i} holds every word of the spread query {spread!r}")
    words = query_words(spread)
    for i, w in enumerate(words):
        if not any(holds(t, w, prefix=(i == len(words) - 1)) for t in texts):
            raise NeedleError(f"{where}: no message holds {w!r} of the spread query {spread!r}")


def validate(needles: list[Needle], *, min_needles: int = 40, min_cjk: int = 10) -> None:
    """Check the whole set: every needle, and the spread of languages, ages and shapes."""
    for n in needles:
        validate_needle(n)
    keys = [n.key for n in needles]
    if len(set(keys)) != len(keys):
        raise NeedleError("needle keys repeat")
    titles = [n.title for n in needles if n.title]  # untitled conversations ("") may be many
    if len(set(titles)) != len(titles):
        raise NeedleError("needle titles repeat")
    if len(needles) < min_needles:
        raise NeedleError(f"{len(needles)} needles, at least {min_needles} wanted")
    cjk = sum(1 for n in needles if n.lang != "en")
    if cjk < min_cjk:
        raise NeedleError(f"{cjk} CJK needles, at least {min_cjk} wanted")
    if min_needles >= 40:
        for lang in LANGS:
            if not any(n.lang == lang for n in needles):
                raise NeedleError(f"no needle in {lang}")
        for low, (high, label) in zip((1,) + tuple(h + 1 for h, _ in AGE_BUCKETS), AGE_BUCKETS):
            if sum(1 for n in needles if low <= n.age_days <= high) < 4:
                raise NeedleError(f"fewer than 4 needles aged {label}")
        for shape in ("compression", "gateway", "single"):
            if sum(1 for n in needles if n.shape == shape or (shape == "gateway" and n.source in GATEWAY_SOURCES)) < 4:
                raise NeedleError(f"fewer than 4 needles of shape {shape}")


def age_bucket(days: float) -> str:
    for high, label in AGE_BUCKETS:
        if days <= high:
            return label
    return AGE_BUCKETS[-1][1]


def set_digest(needles: list[Needle]) -> str:
    """A short hash of the whole set (text, ages, shapes): planted corpora are cached by it."""
    h = hashlib.sha256()
    for n in needles:
        h.update(json.dumps([n.key, n.lang, n.source, n.age_days, n.title, n.split,
                             [[m.role, m.content, m.tool_name, m.tool_calls, m.tool_call_id] for m in n.messages]],
                            ensure_ascii=False, sort_keys=True).encode())
    return h.hexdigest()[:12]
