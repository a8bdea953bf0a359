"""Stored text made harmless before it reaches a terminal: the one list of what is dangerous.

Everything a store holds is data, written by agents, gateways, imports and other tools. Some
code points drive a terminal instead of being shown: ESC starts ANSI and OSC sequences (a
window title, an OSC 52 clipboard write, a cleared screen), a C1 control is a one-byte CSI or
OSC on many terminals, a bidi override or isolate makes text read differently from what it
is, and NUL, BS or CR hide what comes before or after them. :data:`UNSAFE_RE` finds them all.

Each way out of the program has its own harmless form:

* on a screen (the browser, the CLI's lines, Markdown shown on a terminal): one visible
  character for each -- a C0 control its Control Pictures symbol (``␛ ␇ ␀``), DEL ``␡``,
  a C1 or bidi control U+FFFD -- so lengths and match spans computed on the original stay
  valid (:func:`inert_line`, :func:`inert_block`, :func:`inert_cells`,
  :func:`inert_document`);
* in JSON: ``\\uXXXX`` escapes, which decode to exactly the same text
  (:func:`escape_json_text`);
* in a command to copy into a shell: :func:`shell_quote`.

The standard library only: export workers import this file by its path
(:mod:`hermes_state.export_batch`), without the package.
"""

from __future__ import annotations

import re
import shlex

#: Every code point that must not reach a terminal raw: C0 controls (newline and tab
#: included: each way out decides what they become), DEL, C1 controls, bidi marks,
#: embeddings, overrides and isolates.
UNSAFE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

_REPLACEMENT = "\ufffd"

_VISIBLE: dict[int, str] = {cp: chr(0x2400 + cp) for cp in range(0x20)}  # ␀ … ␟
_VISIBLE[0x7F] = "\u2421"  # ␡
for _cp in range(0x80, 0xA0):  # C1 controls (CSI, OSC, ST … as single code points)
    _VISIBLE[_cp] = _REPLACEMENT
for _cp in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]:
    _VISIBLE[_cp] = _REPLACEMENT  # bidi embeddings, overrides, isolates and marks

#: One line of a screen: newline, CR and tab become spaces.
_LINE = {**_VISIBLE, 0x0A: " ", 0x0D: " ", 0x09: " "}
#: Several lines of a screen: newline kept; tab and CR one space each (match offsets stay).
_BLOCK = {**_VISIBLE, 0x0A: "\n", 0x09: " ", 0x0D: " "}
#: A field of a CLI line: tab kept (LI-3 previews keep it), newline and CR shown (␊ ␍).
_CELLS = {**_VISIBLE, 0x09: "\t"}
#: A document (Markdown on a terminal): newline and tab kept, CR shown.
_DOCUMENT = {**_VISIBLE, 0x0A: "\n", 0x09: "\t"}
_DOCUMENT_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def has_unsafe(text: str) -> bool:
    """``text`` holds a code point that must not reach a terminal raw (newline and tab count)."""
    return UNSAFE_RE.search(text) is not None


def inert_line(text: str | None) -> str:
    """One line of display text: newlines and tabs become spaces, every control visible."""
    if not text:
        return ""
    return text.translate(_LINE)


def inert_block(text: str | None) -> str:
    """Multi-line display text: newlines kept, every other control visible."""
    if not text:
        return ""
    return text.translate(_BLOCK)


def inert_cells(text: object) -> str:
    """A value printed in a CLI line (``str()`` of it): tabs kept, every other control visible,
    newlines included, so one value stays one line and the columns keep their widths."""
    return str(text).translate(_CELLS)


def inert_document(text: str) -> str:
    """A document shown on a terminal (a Markdown export to stdout): its lines and tabs kept,
    every other control visible. A CRLF line end is a line end (a message written on Windows
    reads as it was written); a lone CR, which would move the cursor back over the line, is
    shown as ``␍``."""
    if not _DOCUMENT_RE.search(text):
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_DOCUMENT)


# ---------------------------------------------------------------------------- JSON

#: What ``json.dumps(…, ensure_ascii=False)`` leaves raw of :data:`UNSAFE_RE` (it escapes
#: C0 controls itself).
_JSON_RAW_RE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _json_escape(found: "re.Match[str]") -> str:
    return "\\u%04x" % ord(found.group())


def escape_json_text(encoded: str) -> str:
    """JSON text from ``json.dumps(…, ensure_ascii=False)`` with DEL, the C1 controls and the
    bidi controls written as ``\\uXXXX``: the same JSON value (each such code point is
    inside a string, where the escape means exactly it), but no byte of it drives a terminal
    when the text is shown. Text without them is returned as is."""
    if encoded.isascii():
        # (a flag of the string, not a scan; then memchr) Most lines of an export are
        # ASCII, and the regex's scan costs ~40 % of json.dumps itself (100k corpus).
        if "\x7f" not in encoded:
            return encoded
    elif _JSON_RAW_RE.search(encoded) is None:
        return encoded
    return _JSON_RAW_RE.sub(_json_escape, encoded)


# ---------------------------------------------------------------------------- shell


def shell_quote(text: str) -> str:
    """``text`` as one shell word a person can read and paste: :func:`shlex.quote` for
    ordinary text; with a control or bidi character, ANSI-C quoting (``$'…'``: bash, zsh,
    ksh, POSIX.1-2024 sh) where each such character is written as its UTF-8 bytes
    (``\\x1b``), so what is printed is visible and the word the shell makes is ``text``
    exactly (a NUL excepted: no shell word can hold one)."""
    if not UNSAFE_RE.search(text):
        return shlex.quote(text)
    out = []
    for char in text:
        if char in "\\'":
            out.append("\\" + char)
        elif UNSAFE_RE.match(char):
            # Two hex digits each: bash reads at most two after \x, so a hex digit that
            # follows in the text is not taken into the escape.
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8"))
        else:
            out.append(char)
    return "$'" + "".join(out) + "'"


__all__ = [
    "UNSAFE_RE",
    "escape_json_text",
    "has_unsafe",
    "inert_block",
    "inert_cells",
    "inert_document",
    "inert_line",
    "shell_quote",
]
