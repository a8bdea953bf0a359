"""One self-contained HTML page of an export (``export --format html``).

The page opens offline in any browser: the style is inline, there is no script, and its
Content-Security-Policy (``default-src 'none'``) forbids the page any request and any script
at all -- a second wall behind the escaping. Every piece of stored text is data: it is
HTML-escaped (``<script>``, ``</textarea>``, quotes, ``&``), and its controls are shown as
visible characters (:func:`hermes_state.inert_text.inert_document`: ``␛ ␀``, a C1 or bidi
control as U+FFFD), so no message can add markup, reorder what the page shows or hide text.
Message text is shown as written (``white-space: pre-wrap``), never rendered as Markdown.

Layout: the conversations one after another (an ``<article>`` each, with its facts, every
message with its role, time and what the transcript would say of it -- scaffolding,
compaction history --, reasoning folded in a ``<details>``, tool calls and results), and a
sidebar listing every conversation with a link to it. The page is written as the sessions
come (streaming): the sidebar's entries are spooled to an unnamed temporary file and written
after the conversations -- CSS puts the sidebar on the left -- so the memory an export needs
stays one conversation's, however many there are.

The standard library only.
"""

from __future__ import annotations

import html
import re
import tempfile
from typing import Any, Callable, Iterable, Iterator

try:
    from .export_markdown import (
        content_text,
        conversation_title,
        format_timestamp,
        message_notes,
        one_line,
        role_heading,
        session_facts,
        tool_call_parts,
    )
    from .export_units import LINEAGE_KEY
    from .inert_text import inert_document
except ImportError:  # run by its path in an export worker (hermes_state.export_batch): no package
    from export_markdown import (  # type: ignore[no-redef]
        content_text,
        conversation_title,
        format_timestamp,
        message_notes,
        one_line,
        role_heading,
        session_facts,
        tool_call_parts,
    )
    from export_units import LINEAGE_KEY  # type: ignore[no-redef]
    from inert_text import inert_document  # type: ignore[no-redef]

#: The page's style: readable, light or dark as the system is, printable.
_STYLE = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1d1f21;--muted:#5f6368;--line:#d9dce0;--side:#f4f5f7;
--user:#0b57d0;--assistant:#137333;--tool:#8a4b08;--system:#6a1b9a;--code:#f6f8fa}
@media (prefers-color-scheme:dark){:root{--bg:#16181c;--fg:#e3e5e8;--muted:#9aa0a6;--line:#33363c;
--side:#1e2126;--user:#8ab4f8;--assistant:#81c995;--tool:#fdd663;--system:#d7aefb;--code:#1f2329}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
#sidebar{position:fixed;top:0;left:0;bottom:0;width:20rem;overflow-y:auto;padding:1rem;
background:var(--side);border-right:1px solid var(--line)}
#sidebar h1{font-size:1.1rem;margin:0 0 .25rem}
#sidebar p{margin:0 0 .75rem;color:var(--muted);font-size:.85rem}
#sidebar ol{list-style:none;margin:0;padding:0}
#sidebar li{margin:0 0 .5rem;overflow-wrap:anywhere}
#sidebar a{color:inherit;text-decoration:none;font-weight:600}
#sidebar a:hover,#sidebar a:focus{text-decoration:underline}
#sidebar small{display:block;color:var(--muted)}
main{margin-left:20rem;padding:1rem 2rem 4rem;max-width:72rem}
article{border-bottom:2px solid var(--line);padding:1rem 0 2rem}
article>h2{margin:.25rem 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .75rem;margin:.5rem 0 1rem;font-size:.85rem;color:var(--muted)}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
h3.segment{margin:1.5rem 0 .25rem;padding-top:.75rem;border-top:1px dashed var(--line)}
.msg{margin:.75rem 0;padding:.5rem .75rem;border-left:4px solid var(--line)}
.msg header{font-size:.85rem;color:var(--muted)}
.msg .role{font-weight:700;margin-right:.5rem}
.msg .note{font-style:italic;margin-left:.5rem}
.role-user{border-color:var(--user)}.role-user .role{color:var(--user)}
.role-assistant{border-color:var(--assistant)}.role-assistant .role{color:var(--assistant)}
.role-tool{border-color:var(--tool)}.role-tool .role{color:var(--tool)}
.role-system{border-color:var(--system)}.role-system .role{color:var(--system)}
.quiet{opacity:.75}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.35rem 0;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre.text{font:inherit}
pre.code,details pre{background:var(--code);padding:.5rem;border-radius:4px}
.call{margin:.35rem 0}.call-head{font-size:.85rem}
details summary{cursor:pointer;color:var(--muted);font-size:.85rem}
@media print{#sidebar{display:none}main{margin:0}}
@media (max-width:48rem){#sidebar{position:static;width:auto;border-right:0}main{margin:0;padding:1rem}}
"""

#: No request and no script, whatever the page holds (inline style only).
_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


#: What :func:`esc` changes: markup characters and every control but newline and tab.
_ESCAPED_RE = re.compile("[&<>\"'\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def esc(value: Any) -> str:
    """Stored text as HTML (element content or a quoted attribute): every control shown as
    a visible character (newlines and tabs kept; :func:`~hermes_state.inert_text.inert_document`),
    ``& < > " '`` escaped. Most text has none of them: it is returned after one search."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    if _ESCAPED_RE.search(text) is None:
        return text
    return html.escape(inert_document(text), quote=True)


def _iso(when: str) -> str | None:
    """The machine-readable form of a :func:`format_timestamp` text."""
    return None if when == "?" else f"{when[:10]}T{when[11:19]}Z"


def _facts(facts: list[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{esc(label)}</dt><dd>{esc(value)}</dd>" for label, value in facts) + "</dl>"


def _message(msg: dict, anchor: str) -> str:
    role = msg.get("role")
    role = role if isinstance(role, str) else "unknown"
    kind = role if role in ("user", "assistant", "tool", "system") else "other"
    notes = message_notes(msg)
    classes = f"msg role-{kind}" + (" quiet" if notes else "")
    when = format_timestamp(msg.get("timestamp"))
    iso = _iso(when)
    out = [f'<section class="{classes}" id="{anchor}"><header><span class="role">{esc(role_heading(msg))}</span>']
    out.append(f'<time datetime="{iso}">{when}</time>' if iso else f"<time>{when}</time>")  # (ours: no markup)
    for note in notes:
        out.append(f'<span class="note">{esc(note)}</span>')
    out.append("</header>")
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if reasoning and role == "assistant":
        out.append(f"<details><summary>Reasoning</summary><pre>{esc(reasoning)}</pre></details>")
    text = content_text(msg.get("content"))
    if role == "tool":
        if msg.get("tool_call_id"):
            out.append(f'<div class="call-head">Result of call <code>{esc(one_line(msg["tool_call_id"]))}</code></div>')
        out.append(f'<pre class="code">{esc(text)}</pre>')
    elif text:
        out.append(f'<pre class="text">{esc(text)}</pre>')
    tool_calls = msg.get("tool_calls")
    if tool_calls:
        for call in tool_calls if isinstance(tool_calls, list) else [tool_calls]:
            name, call_id, body, _info = tool_call_parts(call)
            ident = f" <small>(id <code>{esc(call_id)}</code>)</small>" if call_id else ""
            out.append(
                f'<div class="call"><div class="call-head">Tool call: <code>{esc(name)}</code>{ident}</div>'
                f'<pre class="code">{esc(body)}</pre></div>'
            )
    out.append("</section>\n")
    return "".join(out)


def conversation_html(unit: list[dict], anchor: str) -> str:
    """One conversation (a session, or a compression lineage's segments) as an article."""
    title = conversation_title(unit)
    out = [f'<article id="{anchor}"><h2>{esc(title)}</h2>\n']
    lineage = len(unit) > 1
    if lineage:
        total = sum(len(obj.get("messages") or []) for obj in unit)
        out.append(_facts([("Conversation", one_line(unit[0].get("id"))), ("Segments", str(len(unit))),
                           ("Started", format_timestamp(unit[0].get("started_at"))), ("Messages", str(total))]))
    number = 0
    for index, obj in enumerate(unit, 1):
        if lineage:
            how = "" if index == 1 else " (continued after compression)"
            out.append(f'<h3 class="segment">Segment {index} of {len(unit)}{how}</h3>')
        out.append(_facts(session_facts(obj)))
        for msg in obj.get("messages") or []:
            number += 1
            out.append(_message(msg, f"{anchor}-m{number}"))
    out.append("</article>\n")
    return "".join(out)


def _nav_entry(unit: list[dict], anchor: str) -> str:
    first = unit[0]
    messages = sum(len(obj.get("messages") or []) for obj in unit)
    details = [format_timestamp(first.get("started_at"))[:10]]
    if first.get("source"):
        details.append(one_line(first["source"]))
    details.append(f"{messages} message{'s' if messages != 1 else ''}")
    if len(unit) > 1:
        details.append(f"{len(unit)} segments")
    return f'<li><a href="#{anchor}">{esc(conversation_title(unit))}</a><small>{esc(" · ".join(details))}</small></li>\n'


#: Where an article's anchor goes in a rendered part (:func:`html_parts`). A NUL never occurs
#: in rendered text (:func:`esc` shows a stored one as ``␀``), so it can mark the place.
ANCHOR = "\x00"


def html_parts(unit: list[dict]) -> tuple[str, str]:
    """A conversation's article and its sidebar entry, with :data:`ANCHOR` where its anchor
    goes (it is numbered by the page: an export worker renders parts without knowing it)."""
    return conversation_html(unit, ANCHOR), _nav_entry(unit, ANCHOR)


def html_chunks(units: Iterable[list[dict]], *, title: str = "Hermes sessions") -> Iterator[str]:
    """The page's text, in chunks, as ``units`` (lists of session dicts: a session each, or
    in a lineage export one conversation each) come."""
    lineage = False

    def parts() -> Iterator[tuple[str, str]]:
        nonlocal lineage
        for unit in units:
            lineage = lineage or any(isinstance(session.get(LINEAGE_KEY), dict) for session in unit)
            yield html_parts(unit)

    return html_page(parts(), title=title, noun=lambda: "conversation" if lineage else "session")


def html_page(parts: Iterable[tuple[str, str]], *, title: str = "Hermes sessions",
              noun: Callable[[], str] = lambda: "session") -> Iterator[str]:
    """The page's text, in chunks, from each unit's :func:`html_parts`. ``noun``: what a unit
    is, asked once every part is read (the sidebar follows them): a session, or in a lineage
    export a conversation -- the sidebar said "491 conversations" of 491 sessions."""
    yield (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="hermes-sessions">\n'
        f"<title>{esc(title)}</title>\n<style>{_STYLE}</style></head>\n<body>\n<main>\n"
    )
    conversations = 0
    with tempfile.TemporaryFile("w+", encoding="utf-8") as nav:
        for article, entry in parts:
            conversations += 1
            anchor = f"c{conversations}"
            yield article.replace(ANCHOR, anchor)
            nav.write(entry.replace(ANCHOR, anchor))
        if not conversations:
            yield "<p>No sessions to export.</p>\n"
        yield (
            "</main>\n<nav id=\"sidebar\" aria-label=\"Conversations\">"
            f"<h1>{esc(title)}</h1><p>{conversations} {noun()}{'s' if conversations != 1 else ''}</p><ol>\n"
        )
        nav.seek(0)
        while True:
            chunk = nav.read(1 << 16)
            if not chunk:
                break
            yield chunk
    yield "</ol></nav>\n</body></html>\n"


__all__ = ["ANCHOR", "conversation_html", "esc", "html_chunks", "html_page", "html_parts"]
