"""How an answer by conversation is ordered (SR-18): relevance blended with recency by a
stated formula (:func:`conversation_score`), its weights from the config file."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

#: What a hit whose every match is an id or a hash keeps of its score (see
#: :func:`hermes_state.search.conversations.ordered`).
ID_CREDIT = 0.1
#: A token that reads as an id, a hash or a number rather than a word: hex digits with at
#: least one digit (``cadd7398``), or digits with anything (``v2``, ``3f``).
ID_LIKE_RE = re.compile(r"(?=.*\d)[0-9a-f]{6,}|.*\d.*")


def ids_meant(typed: str) -> bool:
    """Typed with a digit, an id or a hash is what is meant: nothing that reads as one is
    discounted (:data:`ID_LIKE_RE`)."""
    return any(ch.isdigit() for ch in typed)


def words_meant(typed: str, terms: list[str]) -> list[str]:
    """The terms a typed prefix means: the words it starts, not the ids and hashes
    (``cadd7398…`` for ``cadd``) -- unless :func:`ids_meant`, or nothing else starts so."""
    if ids_meant(typed):
        return terms
    return [term for term in terms if not ID_LIKE_RE.fullmatch(term)] or terms


@dataclass(frozen=True)
class Weights:
    """How a conversation's relevance and its recency are blended (SR-18); the browser takes
    them from its config file (``search:``), as plain numbers.

    ``recency``: the share of the score that is recency (0: relevance alone);
    ``half_life_days``: recency halves every this many days of a conversation's age (its
    newest matching message); ``together``: for a conversation found across messages, the
    share of its relevance given for how much of the query one of its messages holds;
    ``about`` and ``title``: ranked by conversation over every match
    (:mod:`~hermes_state.search.by_conversation`), the share of relevance given for how much
    of a conversation is about the words, and the boost of a title that holds them;
    ``phrase``: ranked so, the boost of a message that holds the query's words next to each
    other, in the order they were typed."""

    recency: float = 0.2
    half_life_days: float = 30.0
    together: float = 0.5
    about: float = 0.5
    title: float = 0.5
    phrase: float = 0.5

    def clean(self) -> "Weights":
        """These weights within their ranges (a config file may say anything)."""
        def clamp(value: Any, low: float, high: float, default: float) -> float:
            try:
                number = float(value)
            except (TypeError, ValueError):
                return default
            return default if math.isnan(number) else min(high, max(low, number))

        return Weights(clamp(self.recency, 0.0, 1.0, 0.2), clamp(self.half_life_days, 0.01, 36500.0, 30.0),
                       clamp(self.together, 0.0, 1.0, 0.5), clamp(self.about, 0.0, 1.0, 0.5),
                       clamp(self.title, 0.0, 10.0, 0.5), clamp(self.phrase, 0.0, 10.0, 0.5))


def recency(timestamp: float | None, now: float, half_life_days: float) -> float:
    """``2 ** (-age / half-life)``: 1 for a conversation active now, ½ one half-life ago."""
    if timestamp is None:
        return 0.0
    age_days = max(0.0, now - float(timestamp)) / 86400.0
    return 2.0 ** (-age_days / max(0.01, half_life_days))


def conversation_score(relevance: float, newest: float | None, now: float, weights: Weights) -> float:
    """SR-18: ``(1 - recency) × relevance + recency × 2^(-age_days / half_life_days)``.

    ``relevance`` is in [0, 1]: for a message-level match its best hit's bm25 (rarity and
    frequency of the words, message length in tokens) over the page's best (1 when the hits
    were ranked newest first); for a conversation found across messages
    ``coverage × ((1 - together) + together × held_together)``, where ``coverage`` is the
    share of the query's idf its messages hold and ``held_together`` the largest share one
    message holds."""
    return (1.0 - weights.recency) * relevance + weights.recency * recency(newest, now, weights.half_life_days)

