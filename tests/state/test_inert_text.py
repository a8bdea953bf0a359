"""hermes_state.inert_text: every way out makes the dangerous code points harmless, and the
forms that must stay exact (JSON, a shell word) still mean exactly the stored text."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from hermes_state.inert_text import (
    UNSAFE_RE,
    escape_json_text,
    has_unsafe,
    inert_block,
    inert_cells,
    inert_document,
    inert_line,
    shell_quote,
)

#: Every code point the module must catch, one of each kind at least.
DANGEROUS = (
    [chr(cp) for cp in range(0x20)] + ["\x7f"] + [chr(cp) for cp in range(0x80, 0xA0)]
    + [chr(cp) for cp in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)]
)
PAYLOAD = "t\x1b]0;pwned\x07i\x1b]52;c;Y3VybA==\x07\x1b[2J\x9b31m\u202eevil\u2066x\u2069\x00nul\rcr\x08bs\x7f"
#: What may be left of DANGEROUS on a screen: nothing but newline and tab where kept.
RAW = UNSAFE_RE


def test_every_dangerous_code_point_is_caught():
    for char in DANGEROUS:
        assert has_unsafe(char), repr(char)
    for char in ("a", " ", "é", "桂", "\u00a0", "\u200b", "\u200d", "\ufeff", "🙂", "\u2028"):
        assert not has_unsafe(char), repr(char)


@pytest.mark.parametrize("shown, kept", [
    (inert_line, ""), (inert_block, "\n"), (inert_cells, "\t"), (inert_document, "\n\t"),
])
def test_on_a_screen_each_control_becomes_one_visible_character(shown, kept):
    text = "".join(DANGEROUS)
    out = shown(text)
    left = {match.group() for match in RAW.finditer(out)}
    assert left <= set(kept), sorted(map(repr, left))
    if shown is not inert_document:  # a document may turn CRLF into LF; nothing else changes length
        assert len(out) == len(text)
    assert "\u241b" in out and "\u2400" in out and "\u2407" in out  # ␛ ␀ ␇
    assert "\ufffd" in out  # C1 and bidi controls


def test_a_document_keeps_its_lines_and_shows_a_lone_carriage_return():
    assert inert_document("a\r\nb\tc\rd\x1b[2J") == "a\nb\tc\u240dd\u241b[2J"
    plain = "nothing to change: 桂林 — “quoted”\n\tindented\n"
    assert inert_document(plain) == plain


def test_json_escapes_decode_to_exactly_the_stored_text():
    obj = {"id": "s" + PAYLOAD, "content": "桂林 " + PAYLOAD, "bidi": "\u202a\u202b\u202c\u202d\u200e\u200f\u061c"}
    encoded = escape_json_text(json.dumps(obj, ensure_ascii=False))
    assert json.loads(encoded) == obj
    assert RAW.search(encoded) is None, repr(RAW.search(encoded))
    assert "\\u009b" in encoded and "\\u202e" in encoded and "\\u007f" in encoded
    assert "桂林" in encoded  # other non-ASCII text kept as is (EX-3)


def test_json_without_dangerous_code_points_is_unchanged():
    for text in ('{"a": "plain ascii"}', '{"a": "桂林 — “quoted”"}', '{"a": "\\u001b"}'):
        assert escape_json_text(text) is text
    assert escape_json_text('{"a": "del\x7f"}') == '{"a": "del\\u007f"}'  # the ASCII path too


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("word", [
    "20250305_091523_a1b2c3",
    "it's a \\ backslash",
    "evil\x1b]0;pwned\x07id\x9b\u202e'quote\\x1bliteral",
    "\x1babc",  # a hex digit after the escape must not join it
    "tab\tand\nnewline",
])
def test_a_shell_quoted_word_is_visible_and_bash_reads_it_back_exactly(word):
    quoted = shell_quote(word)
    assert RAW.search(quoted) is None, quoted
    out = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode("utf-8") == word


def test_an_ordinary_id_is_quoted_as_shlex_does():
    assert shell_quote("20250305_091523_a1b2c3") == "20250305_091523_a1b2c3"
    assert shell_quote("has space") == "'has space'"
