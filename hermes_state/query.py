"""The query language of message search, as pure functions: no store is read here (the
highlight's words are folded by :mod:`hermes_state.folding`, which asks SQLite's tokenizer).

Upstream's sanitiser (SR-6) and the later repair stage that makes FTS5 accept what it would
reject (SR-16), CJK detection (SR-8) and routing (SR-9), LIKE escaping (the one
``escape_like``), query limits, the search-as-you-type prefix, and snippets with match spans.
:mod:`hermes_state.search` (upstream's ``search_messages`` paths) and
:mod:`hermes_state.search.engine` (the budgeted structured search) build on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence


#: Markers used internally for snippet()/highlight(); never shown to a user. Two control
#: characters that message text practically never contains.
MARK_OPEN = "\x02"
MARK_CLOSE = "\x03"
#: Markers of upstream's snippets (SR-13), kept in ``SearchHit.raw_snippet``.
UPSTREAM_OPEN = ">>>"
UPSTREAM_CLOSE = "<<<"

# ---------------------------------------------------------------------------- CJK (SR-8)

_CJK_RANGES = (
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0x3400, 0x4DBF),  # Extension A
    (0x20000, 0x2A6DF),  # Extension B
    (0x3000, 0x303F),  # CJK Symbols and Punctuation
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0xAC00, 0xD7AF),  # Hangul Syllables
)


def is_cjk_codepoint(cp: int) -> bool:
    """True if code point ``cp`` lies in one of SR-8's CJK ranges."""
    for low, high in _CJK_RANGES:
        if low <= cp <= high:
            return True
    return False


def contains_cjk(text: str) -> bool:
    """Any CJK code point in ``text`` (SR-8)."""
    if not text:
        return False
    return any(is_cjk_codepoint(ord(ch)) for ch in text)


def count_cjk(text: str) -> int:
    """The number of CJK code points in ``text`` (SR-8)."""
    if not text:
        return 0
    return sum(1 for ch in text if is_cjk_codepoint(ord(ch)))


# ---------------------------------------------------------------------------- sanitiser (SR-6)

_QUOTED_RE = re.compile(r'"[^"]*"')
_SPECIALS_RE = re.compile(r'[+{}()"^]')
_STARS_RE = re.compile(r"\*+")
_LEADING_STAR_RE = re.compile(r"(^|\s)\*")
_LEADING_OP_RE = re.compile(r"(?i)^(AND|OR|NOT)\b\s*")
_TRAILING_OP_RE = re.compile(r"(?i)\s+(AND|OR|NOT)\s*$")
_COMPOUND_RE = re.compile(r"\b(\w+(?:[._-]\w+)+)\b")


def sanitize_fts5_query(query: str) -> str:
    """Upstream's FTS5 query sanitiser, step for step (SR-6, examples in SR-7)."""
    quoted: list[str] = []

    def protect(match: re.Match) -> str:
        quoted.append(match.group(0))
        return f"\x00Q{len(quoted) - 1}\x00"

    text = _QUOTED_RE.sub(protect, query)
    text = _SPECIALS_RE.sub(" ", text)
    text = _STARS_RE.sub("*", text)
    text = _LEADING_STAR_RE.sub(r"\1", text)
    text = _LEADING_OP_RE.sub("", text.strip())
    text = _TRAILING_OP_RE.sub("", text.strip())
    text = _COMPOUND_RE.sub(r'"\1"', text)
    for index, phrase in enumerate(quoted):
        text = text.replace(f"\x00Q{index}\x00", phrase)
    return text.strip()


# ---------------------------------------------------------------------------- SR-16 repair

_FTS_SPACE = " \t\n\r\f\v"
OPERATORS = ("AND", "OR", "NOT")


def _is_bareword_char(ch: str) -> bool:
    """FTS5's bareword alphabet: non-ASCII, ASCII letters/digits, ``_`` and 0x1A."""
    o = ord(ch)
    if o > 127:
        return True
    return ch.isalnum() or ch == "_" or o == 0x1A


def _has_token_char(text: str) -> bool:
    """Whether the tokenizer would index anything of ``text`` (a letter or digit)."""
    return any(ch.isalnum() for ch in text)


@dataclass
class QueryItem:
    """One element of a parsed FTS5 query: a word, a quoted phrase, or an operator."""

    kind: str  # "word" | "phrase" | "op"
    text: str
    prefix: bool = False

    def render(self) -> str:
        if self.kind == "op":
            return self.text
        if self.kind == "word":
            return self.text + ("*" if self.prefix else "")
        return '"' + self.text.replace('"', '""') + '"' + ("*" if self.prefix else "")

    def render_substring(self) -> str:
        """As a trigram-table substring phrase (prefix stars dropped: substrings are prefixes)."""
        if self.kind == "op":
            return self.text
        return '"' + self.text.replace('"', '""') + '"'


@dataclass
class ParsedQuery:
    """A sanitised query as FTS5 will see it, plus whether it needed repair."""

    items: list[QueryItem] = field(default_factory=list)
    #: True when the sanitised text was already valid FTS5 and is used verbatim.
    verbatim: bool = True
    sanitized: str = ""

    def render(self) -> str:
        if self.verbatim:
            return self.sanitized
        return " ".join(item.render() for item in self.items)

    @property
    def terms(self) -> list[QueryItem]:
        return [item for item in self.items if item.kind != "op"]

    def groups(self) -> list[list[tuple[QueryItem, list[QueryItem]]]]:
        """FTS5 precedence (NOT > AND > OR): OR-separated groups of ``(term, [negated])``."""
        groups: list[list[tuple[QueryItem, list[QueryItem]]]] = [[]]
        pending_not = False
        for item in self.items:
            if item.kind == "op":
                if item.text == "OR":
                    if groups[-1]:
                        groups.append([])
                    pending_not = False
                elif item.text == "NOT":
                    pending_not = bool(groups[-1])
                continue
            if pending_not and groups[-1]:
                groups[-1][-1][1].append(item)
            else:
                groups[-1].append((item, []))
            pending_not = False
        return [group for group in groups if group]


def _lex_chunks(text: str) -> list[list[tuple[str, str]]]:
    """Split ``text`` FTS5-style into whitespace-separated chunks of pieces.

    A piece is ``("phrase", inner)``, ``("word", run)``, ``("star", "*")``,
    ``("special", ch)`` or ``("open", rest)`` for an unterminated quote.
    """
    chunks: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _FTS_SPACE:
            if current:
                chunks.append(current)
                current = []
            i += 1
            continue
        if ch == '"':
            end = text.find('"', i + 1)
            if end < 0:
                current.append(("open", text[i + 1 :]))
                i = n
            else:
                current.append(("phrase", text[i + 1 : end]))
                i = end + 1
            continue
        if ch == "*":
            current.append(("star", "*"))
            i += 1
            continue
        if _is_bareword_char(ch):
            j = i
            while j < n and _is_bareword_char(text[j]):
                j += 1
            current.append(("word", text[i:j]))
            i = j
            continue
        current.append(("special", ch))
        i += 1
    if current:
        chunks.append(current)
    return chunks


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 for ch in text)


def _clean_control(text: str) -> str:
    return "".join(" " if ord(ch) < 32 else ch for ch in text)


def parse_fts_query(sanitized: str) -> ParsedQuery:
    """Parse sanitiser output into items; repair it if FTS5 would reject it (SR-16)."""
    parsed = ParsedQuery(sanitized=sanitized)
    verbatim = True
    items: list[QueryItem] = []
    for chunk in _lex_chunks(sanitized):
        kinds = {kind for kind, _ in chunk}
        dirty = bool(kinds & {"special", "open"}) or any(
            kind in ("phrase", "word") and _has_control(value) for kind, value in chunk
        )
        if dirty:
            verbatim = False
            raw = "".join(
                f'"{value}"' if kind == "phrase" else ('"' + value if kind == "open" else value)
                for kind, value in chunk
            )
            prefix = raw.endswith("*")
            body = _clean_control(raw.rstrip("*").replace('"', " ")).strip()
            if body and _has_token_char(body):
                items.append(QueryItem("phrase", body, prefix))
            continue
        for kind, value in chunk:
            if kind == "star":
                if items and items[-1].kind != "op" and not items[-1].prefix:
                    items[-1].prefix = True
                continue
            if kind == "word" and value in OPERATORS and len(chunk) == 1:
                items.append(QueryItem("op", value))
            elif kind == "word":
                items.append(QueryItem("word", value))
            else:
                items.append(QueryItem("phrase", value))
    # Operators: none at either end, none adjacent (keep the last of a run).
    fixed: list[QueryItem] = []
    for item in items:
        if item.kind == "op":
            if not fixed:
                verbatim = False
                continue
            if fixed[-1].kind == "op":
                verbatim = False
                fixed[-1] = item
                continue
        fixed.append(item)
    while fixed and fixed[-1].kind == "op":
        verbatim = False
        fixed.pop()
    # An empty phrase ("") matches nothing in FTS5; keep verbatim semantics for it.
    parsed.items = fixed
    parsed.verbatim = verbatim and bool(fixed)
    if not parsed.verbatim and not any(item.kind != "op" for item in fixed):
        parsed.items = []
    return parsed


def prepare_fts_query(sanitized: str) -> str:
    """The MATCH text for ``messages_fts``: the sanitiser's output, repaired per SR-16.

    Valid FTS5 passes through unchanged, so SR-7 rows 1–32 reach FTS5 exactly as upstream
    sends them. Returns ``""`` when nothing searchable is left.
    """
    return parse_fts_query(sanitized).render()


# ---------------------------------------------------------------------------- CJK routing (SR-9)

_CJK_TOKEN_RE = re.compile(r'"([^"]*)"|([^\s"]+)')


@dataclass
class CjkRoute:
    """Routing of a sanitised query that contains CJK (SR-9, SR-16 phrases honoured)."""

    path: str  # "B" (trigram) or "C" (LIKE)
    tokens: list[str]  # operators upper-cased, phrases as one token
    raw: str

    @property
    def terms(self) -> list[str]:
        return [t for t in self.tokens if t not in OPERATORS]


def _is_op_token(token: str) -> bool:
    return token.upper() in OPERATORS


def cjk_tokens(q: str) -> list[str]:
    """Tokens of a CJK query: balanced quoted phrases are one token (SR-16), else split on
    whitespace as upstream does; operator words (any case) are returned upper-cased, and
    dangling or adjacent operators are dropped so the trigram MATCH cannot fail on them."""
    raw_tokens: list[str] = []
    for match in _CJK_TOKEN_RE.finditer(q):
        if match.group(1) is not None:
            phrase = match.group(1).strip()
            if phrase:
                raw_tokens.append(phrase)
        else:
            raw_tokens.append(match.group(2))
    tokens: list[str] = []
    for token in raw_tokens:
        if _is_op_token(token):
            op = token.upper()
            if not tokens:
                continue
            if tokens[-1] in OPERATORS:
                tokens[-1] = op
                continue
            tokens.append(op)
        else:
            tokens.append(token)
    while tokens and tokens[-1] in OPERATORS:
        tokens.pop()
    return tokens


def route_cjk(q: str) -> CjkRoute:
    """SR-9 steps 2–3 with the per-token rule: trigram unless a CJK token has 1–2 CJK chars."""
    raw = q.strip('"').strip()
    tokens = cjk_tokens(q)
    terms = [t for t in tokens if t not in OPERATORS]
    cjk_terms = [t for t in terms if contains_cjk(t)]
    if count_cjk(raw) >= 3 and all(count_cjk(t) >= 3 for t in cjk_terms):
        return CjkRoute("B", tokens, raw)
    return CjkRoute("C", tokens, raw)


def trigram_match(tokens: Sequence[str]) -> str:
    """SR-10: operators verbatim, every other token a quoted substring (inner ``"`` doubled)."""
    return " ".join(
        t if t in OPERATORS else '"' + t.replace('"', '""') + '"' for t in tokens
    )


def escape_like(value: str) -> str:
    """Escape ``\\``, ``%`` and ``_`` for ``LIKE … ESCAPE '\\'`` (SR-11)."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# ---------------------------------------------------------------------------- limits

#: Longest query searched, in characters and in whitespace-separated words; a longer one is
#: cut (at a word boundary) before anything else. Nobody types more, and every extra word or
#: trigram is another index walk: at 100k messages a 10,000-character word took ~0.4 s and
#: 500 × ``docker AND`` took 2 s in :func:`search_messages` (0.3 s in :func:`search`).
MAX_QUERY_CHARS = 500
MAX_QUERY_WORDS = 32
#: Snippet width in characters (FTS5's 40 tokens are about this much English).
SNIPPET_CHARS = 200
_SNIPPET_LEAD = 50
WORD_RE = re.compile(r"[^\W_]+")
MARKED_RE = re.compile("\x02([^\x03]*)\x03")


_LAST_SPACE_RE = re.compile(r"\s(?=\S*$)")


def limit_query(text: str) -> tuple[str, str | None]:
    """``text`` cut to :data:`MAX_QUERY_CHARS` characters (at the last whitespace when
    there is one in the second half) and :data:`MAX_QUERY_WORDS` words; plus a note saying
    so, or None when nothing was cut."""
    note = None
    if len(text) > MAX_QUERY_CHARS:
        head = text[:MAX_QUERY_CHARS]
        space = _LAST_SPACE_RE.search(head)
        text = head[: space.start()] if space and space.start() > MAX_QUERY_CHARS // 2 else head
        note = f"query cut to its first {len(text)} characters"
    words = text.split()
    if len(words) > MAX_QUERY_WORDS:
        text = " ".join(words[:MAX_QUERY_WORDS])
        note = f"query cut to its first {MAX_QUERY_WORDS} words"
    return text, note


# ---------------------------------------------------------------------------- snippets

def split_marked(marked: str) -> tuple[str, list[tuple[int, int]]]:
    """Text with MARK_OPEN/MARK_CLOSE markers → plain text and the marked spans."""
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    start = None
    i = 0
    n = len(marked)
    while i < n:
        j_open = marked.find(MARK_OPEN, i)
        j_close = marked.find(MARK_CLOSE, i)
        candidates = [j for j in (j_open, j_close) if j >= 0]
        if not candidates:
            plain.append(marked[i:])
            break
        j = min(candidates)
        plain.append(marked[i:j])
        pos += j - i
        if j == j_open:
            start = pos
        elif start is not None:
            if pos > start:
                spans.append((start, pos))
            start = None
        i = j + 1
    return "".join(plain), spans


def find_spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Case-insensitive occurrences of ``terms`` in ``text``, merged, in order."""
    spans: list[tuple[int, int]] = []
    for term in terms:
        if not term:
            continue
        try:
            for m in re.finditer(re.escape(term), text, re.IGNORECASE):
                if m.end() > m.start():
                    spans.append((m.start(), m.end()))
        except re.error:  # pragma: no cover - escaped patterns always compile
            continue
    return _merge_spans(spans)


def _merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


_FLAT = str.maketrans({"\n": " ", "\r": " ", "\t": " ", MARK_OPEN: " ", MARK_CLOSE: " "})


def make_snippet(
    text: str, spans: Sequence[tuple[int, int]], width: int = SNIPPET_CHARS
) -> tuple[str, list[tuple[int, int]], str]:
    """A window of ``text`` around the densest matches: ``(snippet, spans, raw_snippet)``.

    The window (about ``width`` characters, snapped to word boundaries) is the one covering
    the most distinct matched strings, then the most matches, then the earliest. ``...``
    marks a cut, as FTS5's snippet does. Newlines and tabs become spaces.
    """
    text = text or ""
    n = len(text)
    best = (0, min(n, width))
    if spans and n > width:
        best_key = None
        for s_start, _s_end in spans:
            start = max(0, s_start - _SNIPPET_LEAD)
            if start > 0:
                space = text.find(" ", start, s_start)
                if space >= 0:
                    start = space + 1
            end = min(n, start + width)
            inside = [(a, b) for a, b in spans if a >= start and b <= end]
            distinct = len({text[a:b].lower() for a, b in inside})
            key = (distinct, len(inside), -start)
            if best_key is None or key > best_key:
                best_key, best = key, (start, end)
    start, end = best
    if end < n:
        space = text.rfind(" ", start, end)
        covered = max((b for a, b in spans if a >= start and b <= end), default=start)
        if space > covered and space > start + width // 2:
            end = space
    prefix = "..." if start > 0 else ""
    suffix = "..." if end < n else ""
    body = text[start:end].translate(_FLAT)
    shift = len(prefix) - start
    out_spans = [(a + shift, b + shift) for a, b in spans if a >= start and b <= end]
    snippet = prefix + body + suffix
    raw_parts: list[str] = []
    last = 0
    for a, b in out_spans:
        raw_parts.append(snippet[last:a])
        raw_parts.append(UPSTREAM_OPEN + snippet[a:b] + UPSTREAM_CLOSE)
        last = b
    raw_parts.append(snippet[last:])
    return snippet, out_spans, "".join(raw_parts)


#: Every ASCII character that is not a letter or a digit, as a space: what separates
#: unicode61's tokens in ASCII text (``_``, ``/``, ``.`` included).
_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


def token_count(text: str) -> int:
    """A message's length as the ranking measures it: its tokens as unicode61 splits them
    (``snake_case/path.py`` is 4, not 1 as counting spaces made it). ASCII text in two C
    calls (a window is 400 rows a key); other text by its runs of letters and digits."""
    if text.isascii():
        return len(text.translate(_SEPARATORS).split()) or 1
    return len(WORD_RE.findall(text)) or 1


#: Shortest last word ``prefix_last`` makes a prefix: ``d*`` or ``ku*`` would expand to
#: thousands of words (FTS5 then merges every one's doclist first: 0.1-1 s at 5M messages).
PREFIX_MIN_CHARS = 3


def _last_plain_word(q: str) -> str | None:
    """The query's last word when it is a plain word that could be a prefix (not quoted,
    not an operator, not CJK, not already a prefix), whatever its length."""
    chunks = _lex_chunks(q)
    if not chunks:
        return None
    last = chunks[-1]
    if len(last) != 1 or last[0][0] != "word":
        return None
    word = last[0][1]
    if word.upper() in OPERATORS or contains_cjk(word) or not q.endswith(word):
        return None
    return word


def apply_prefix_last(q: str) -> str:
    """``prefix_last``: make the last word a prefix query if it is a plain word of ≥ 3
    characters (not quoted, not an operator, not CJK, not already a prefix)."""
    word = _last_plain_word(q)
    if word is None or len(word) < PREFIX_MIN_CHARS:
        return q
    return q + "*"


def short_last_word(q: str) -> str | None:
    """The last word of ``q`` when ``prefix_last`` leaves it a whole word only for being
    shorter than :data:`PREFIX_MIN_CHARS` (``ku`` while ``kubernetes`` is typed), else None:
    an empty answer should say that a longer word would also match words it starts."""
    word = _last_plain_word(q)
    if word is None or len(word) >= PREFIX_MIN_CHARS:
        return None
    return word


# ---------------------------------------------------------------------------- highlighting

def highlight_terms(query: str | None, prefix_last: bool = True) -> list[tuple[str, str]]:
    """What a hit of ``query`` has matched, for highlighting it wherever it is shown (snippets,
    the transcript): the query's positive items as the search reads them -- the same
    sanitiser, repair and prefix rule (``dock`` is a prefix while it is being typed, ``dock ``
    the word dock) -- as ``(kind, text)``: ``word``, ``prefix``, ``phrase`` (words side by
    side) or ``substring`` (CJK, as the substring index matches). Excluded (``NOT``) words
    are never among them: no hit holds them."""
    if not query or not query.strip():
        return []
    text, _cut = limit_query(query)
    typing_word = prefix_last and text[-1:].isalnum()
    q = sanitize_fts5_query(text)
    if typing_word and q:
        q = apply_prefix_last(q)
    if not q:
        return []
    out: list[tuple[str, str]] = []
    if contains_cjk(q):
        tokens = [t.rstrip("*") or t for t in cjk_tokens(q)]  # (a substring is its own prefix)
        items = [QueryItem("op", t) if t in OPERATORS else QueryItem("phrase", t) for t in tokens]
        for group in ParsedQuery(items=items, verbatim=False).groups():
            for item, _negs in group:
                out.append(("substring", item.text))
    else:
        for group in parse_fts_query(q).groups():
            for item, _negs in group:
                words = WORD_RE.findall(item.text)
                if not words:
                    continue
                if len(words) > 1:
                    out.append(("phrase", " ".join(words) + ("*" if item.prefix else "")))
                else:
                    out.append(("prefix" if item.prefix else "word", words[0]))
    seen: set[tuple[str, str]] = set()
    unique = []
    for kind, term in out:
        if (kind, term.lower()) not in seen:
            seen.add((kind, term.lower()))
            unique.append((kind, term))
    return unique


def highlight_pattern(query: str | None, prefix_last: bool = True) -> "re.Pattern[str] | None":
    """One case-insensitive pattern of :func:`highlight_terms` (longest first), its words
    folded as the word index folds them (:func:`hermes_state.folding.words_regex`); None when
    the query has nothing to highlight."""
    from .folding import words_regex  # (asks SQLite's tokenizer: not for the query's parsing)

    parts = []
    for kind, term in highlight_terms(query, prefix_last):
        if kind == "substring":
            parts.append((len(term), re.escape(term)))
            continue
        # (each word as the index matched it: ``cafe`` marks ``Café`` -- the hit was found so)
        prefix = kind == "prefix" or term.endswith("*")
        parts.append((len(term), words_regex(term.rstrip("*").split(" "), prefix)))
    if not parts:
        return None
    parts.sort(key=lambda part: -part[0])
    return re.compile("|".join(pattern for _n, pattern in parts), re.IGNORECASE)
