"""Text as the word index folds it: the one folding the search compares words with.

The word index (FTS5's ``unicode61`` tokenizer, diacritics removed) stores ``Café`` as
``cafe`` but ``й``, ``ё``, ``ά``, ``が`` as they are, and ``Việt`` (two marks on one letter)
as ``việt``; it folds ``İ`` to ``i``. Python has no such table: ``str.lower()`` and
``unicodedata`` fold other letters (``й`` to ``и`` through NFD). A query word and a text's
word counted as the same word where the index holds two would rank what FTS5 did not match,
so each character is asked once of SQLite's own tokenizer -- the code that built the index,
in upstream's declaration (``unicode61`` with its defaults: the stores this package reads and
writes declare no other) -- and kept for the process.
"""

from __future__ import annotations

import re
import sqlite3
import string
import threading

#: What each character folds to where it stands in a word (a diacritic the index drops: "").
#: Characters that are not part of words (separators) are left as they are: texts keep their
#: boundaries for the patterns that read them.
_TABLE: dict[int, str] = {ord(ch): ch.lower() for ch in string.ascii_uppercase}
_KNOWN: set[str] = set(map(chr, range(128)))
_LOCK = threading.Lock()
_CONN: sqlite3.Connection | None = None


def _ask(chars: list[str]) -> None:
    """Learn how the index folds each of ``chars``: each is tokenized between two ``q``s, so
    a letter answers one token (``q<fold>q``: its fold, "" for a dropped mark) and a
    separator two."""
    global _CONN
    with _LOCK:
        # (a lone surrogate, pasted: SQLite cannot be handed it, and no index holds it)
        _KNOWN.update(ch for ch in chars if "\ud800" <= ch <= "\udfff")
        chars = [ch for ch in chars if ch not in _KNOWN]
        if not chars:
            return
        if _CONN is None:
            _CONN = sqlite3.connect(":memory:", check_same_thread=False)
            _CONN.execute("CREATE VIRTUAL TABLE probe USING fts5(t)")
            _CONN.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, instance)")
        conn = _CONN
        with conn:
            conn.execute("DELETE FROM probe")
            conn.executemany("INSERT INTO probe(rowid, t) VALUES (?, ?)",
                             [(index, f"q{ch}q") for index, ch in enumerate(chars)])
            tokens: dict[int, list[str]] = {}
            for doc, term in conn.execute("SELECT doc, term FROM probe_terms ORDER BY doc, offset"):
                tokens.setdefault(int(doc), []).append(term)
        for index, ch in enumerate(chars):
            found = tokens.get(index, [])
            if len(found) == 1 and found[0].startswith("q") and found[0].endswith("q") and len(found[0]) >= 2:
                folded = found[0][1:-1]
                if folded != ch:
                    _TABLE[ord(ch)] = folded
            _KNOWN.add(ch)


def fold(text: str) -> str:
    """``text`` with each letter as the word index stores it (lower case; Latin letters
    without their accent; ``й``, ``ё``, kana marks kept); other characters unchanged."""
    if text.isascii():
        return text.lower()
    missing = set(text) - _KNOWN
    if missing:
        _ask(sorted(missing))
    return text.translate(_TABLE)


#: Where the index folds accented Latin letters: Latin-1, Latin Extended-A and -B, Latin
#: Extended Additional (each such letter is learnt once, when a pattern first asks).
_LATIN_RANGES = ((0xC0, 0x250), (0x1E00, 0x1F00))
#: Combining accents (U+0300-U+036F): the index drops one where it follows a letter
#: (``e`` + U+0301 is ``e``), so a word written decomposed matches as the same word.
_COMBINING = "[\u0300-\u036f]*"
_LOOSE: dict[str, str] = {}


def _loose_letter(ch: str) -> str:
    """A regex of every character the index folds to the ASCII letter ``ch``, followed by
    any combining accents."""
    if not _LOOSE:
        latin = [chr(code) for start, end in _LATIN_RANGES for code in range(start, end)]
        _ask(latin)
        variants: dict[str, list[str]] = {}
        for letter in latin:
            folded = _TABLE.get(ord(letter), letter)
            if len(folded) == 1 and folded.isascii() and folded.isalpha():
                variants.setdefault(folded, []).append(letter)
        for letter in map(chr, range(ord("a"), ord("z") + 1)):
            others = "".join(variants.get(letter, ()))
            _LOOSE[letter] = f"[{letter}{letter.upper()}{others}]{_COMBINING}"
    return _LOOSE.get(ch, re.escape(ch))


def word_regex(word: str) -> str:
    """A regex of ``word`` as the word index matches it in a text: whatever folds to the same
    word (``cafe`` finds ``Café`` and ``Cafe`` + U+0301, ``café`` finds ``cafe``; ``viet`` not
    ``Việt``, which the index keeps). Positions are the text's own: a pattern of these finds
    spans to mark in the text as shown."""
    return "".join(_loose_letter(ch) if "a" <= ch <= "z" else re.escape(ch) for ch in fold(word))


def words_regex(words: "list[str] | tuple[str, ...]", prefix: bool) -> str:
    """A regex of ``words`` standing one after another as whole words of a text, only
    separators between them (a phrase; one word alone), each as :func:`word_regex` matches it;
    ``prefix``: the last one may go on (a word being typed)."""
    body = r"[\W_]+".join(word_regex(word) for word in words)
    return r"(?<![^\W_])" + body + (r"[^\W_]*" if prefix else r"(?![^\W_])")
