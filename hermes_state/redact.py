"""Secrets in common shapes replaced by ``[REDACTED]`` in exported text (``export --redact``).

An export leaves the machine (a bug report, a shared transcript); a pasted API key or a
password in a tool call should not go with it. What is replaced (the README lists the same):

* API keys by their well-known prefixes: OpenAI ``sk-…`` / ``sk-proj-…``, Anthropic
  ``sk-ant-…``, Stripe ``sk_live_…`` / ``rk_live_…``, GitHub ``ghp_`` / ``gho_`` / ``ghu_`` /
  ``ghs_`` / ``ghr_`` and ``github_pat_…``, Slack ``xoxb-`` / ``xoxa-`` / ``xoxp-`` /
  ``xoxr-`` / ``xoxs-``, Google ``AIza…``, AWS access key ids ``AKIA…`` / ``ASIA…``;
* ``Bearer <token>`` (the token; the word stays), and JSON Web Tokens (``eyJ….eyJ….…``);
* assignments of a secret-named key: ``password=…``, ``DB_PASSWORD=…``, ``--api-key=…``,
  ``"password": "…"`` / ``'secret': '…'`` (JSON, Python), ``password: value`` alone on its
  line (YAML) -- for the keys ``password``, ``passwd``, ``passphrase``, ``secret``,
  ``client_secret``, ``secret_key``, ``api_key``/``apikey``, ``access_token``,
  ``auth_token``, ``refresh_token``, ``api_token``, ``private_key`` (any prefix joined by
  ``_`` or ``-``, any case): the value is replaced, the key kept;
* private key blocks (``-----BEGIN … PRIVATE KEY-----`` to its END line, or to the end of
  the text when it was cut off): the body is replaced, the two lines kept;
* credentials in URLs (``scheme://user:password@host``): the password.

A shape is matched by its structure (a prefix and a run of key characters of a plausible
length, a key followed by ``=`` or ``:``), never by a word alone: "my password expired", "the
bearer of bad news", "task", "skeleton" are left as they are. This is a safety net for
common shapes, not a guarantee: a secret in no known shape passes.

The standard library only (as :mod:`hermes_state.export_batch`).
"""

from __future__ import annotations

import re
from typing import Any

try:
    from .lenient_text import BLOB_TYPES, lenient_text
except ImportError:  # run by its path in an export worker (hermes_state.export_batch): no package
    from lenient_text import BLOB_TYPES, lenient_text  # type: ignore[no-redef]

#: What a secret becomes.
MARK = "[REDACTED]"

_KEYS = (
    r"(?:[A-Za-z0-9]+[_-])*(?:password|passwd|passphrase|secret|client[_-]?secret|secret[_-]?key"
    r"|api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|api[_-]?token|private[_-]?key)"
)

# One pattern, alternatives tried at each position: a text is scanned once whatever it holds.
# Each alternative names the part that is replaced (``s1`` … ``s8``); what is around it stays.
_PATTERN = re.compile(
    "|".join([
        # private key blocks (first: their body holds base64 that other shapes would cut up)
        r"(?P<k_head>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----)(?P<s1>[\s\S]*?)"
        r"(?P<k_tail>-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
        # prefixed API keys
        r"(?<![A-Za-z0-9_-])(?P<s2>sk-ant-[A-Za-z0-9_-]{16,}|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"
        r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}"
        r"|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])",
        r"(?<![A-Za-z0-9])(?P<s3>(?:AKIA|ASIA)[0-9A-Z]{16})(?![A-Za-z0-9])",
        # JSON Web Tokens: a JSON header and payload, base64url, and a signature
        r"(?<![A-Za-z0-9_-])(?P<s4>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)",
        # Bearer tokens (the scheme word kept)
        r"(?P<b_word>\b[Bb]earer[ \t]+)(?P<s5>[A-Za-z0-9._~+/-]{16,}=*)",
        # "password": "value" (JSON, Python): the quoted value
        r"(?P<q_key>(?P<q_kq>[\"'])(?i:" + _KEYS + r")(?P=q_kq)[ \t]*:[ \t]*)(?P<q_open>[\"'])(?P<s6>(?:\\.|(?!(?P=q_open))[^\\\n])+)(?P=q_open)",
        # password=value (shell, .env, URL query, command-line option)
        r"(?P<a_key>(?<![A-Za-z0-9])(?i:" + _KEYS + r")[ \t]*=[ \t]*[\"']?)(?P<s7>[^\s\"'&;,]+)",
        # credentials in a URL: scheme://user:password@
        r"(?P<u_head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]+:)(?P<s8>[^\s/@]+)(?=@)",
        # password: value, alone on its line (YAML)
        r"(?m:(?P<y_key>^[ \t]*(?:-[ \t]+)?(?i:" + _KEYS + r")[ \t]*:[ \t]+)(?P<s9>[^\s\"'#]+)[ \t]*$)",
    ])
)

#: The cheap test run before the pattern, on the text in lower case: a text holding none of
#: these holds no secret shape, and most message text holds none (the pattern's scan is what
#: an export with --redact pays). Lower case: one search without case folding is twice as fast.
_HINTS = re.compile(
    r"sk-|[sr]k_|gh[pousr]_|github_pat_|xox|aiza|akia|asia|eyj|bearer|://|private.?key"
    r"|pass|secret|api.?key|token"
)


def _replace(match: "re.Match[str]") -> str:
    groups = match.groupdict()
    if groups["s1"] is not None:
        tail = groups["k_tail"] or ""
        return f"{groups['k_head']}\n{MARK}\n{tail}" if tail else f"{groups['k_head']}\n{MARK}\n"
    for head, secret in (("b_word", "s5"), ("q_key", "s6"), ("a_key", "s7"), ("u_head", "s8"), ("y_key", "s9")):
        if groups[secret] is not None:
            if secret == "s6":
                quote = groups["q_open"]
                return f"{groups[head]}{quote}{MARK}{quote}"
            if groups[secret] == MARK:
                return match.group(0)
            return groups[head] + MARK
    return MARK  # a whole-match secret (s2, s3, s4)


def redact_text(text: str) -> str:
    """``text`` with every secret of a known shape replaced by :data:`MARK`."""
    if not text or _HINTS.search(text.lower()) is None:
        return text
    return _PATTERN.sub(_replace, text)


#: Fields that name rows, not content: never rewritten (an import links sessions by them).
ID_FIELDS = frozenset({"id", "session_id", "parent_session_id", "tool_call_id", "system_prompt_hash"})


def redact_value(value: Any) -> Any:
    """``value`` with :func:`redact_text` applied to every string in it (dicts and lists
    walked; a dict's id fields and its keys kept)."""
    kind = type(value)
    if kind is str:
        return redact_text(value)
    if kind is dict:
        # (most values of a message are numbers or None: tested inline, no call for them)
        return {
            key: (item if key in ID_FIELDS or type(item) in _PLAIN else redact_value(item))
            for key, item in value.items()
        }
    if kind is list:
        return [item if type(item) in _PLAIN else redact_value(item) for item in value]
    if isinstance(value, str):  # (a str subclass)
        return redact_text(str(value))
    if isinstance(value, dict):
        return redact_value(dict(value))
    if isinstance(value, (list, tuple)):
        return redact_value(list(value))
    if isinstance(value, BLOB_TYPES):
        # a blob where text belongs is exported as its text (export_batch.blob_text): redacted as such
        return redact_text(lenient_text(value))
    return value


#: Values with no text in them (skipped without a call).
_PLAIN = frozenset({int, float, bool, type(None)})


__all__ = ["ID_FIELDS", "MARK", "redact_text", "redact_value"]
