"""Memory text is data: the one escaping rule for it in a prompt, and what reads like a prompt
injection (docs/design.md#working-memory).

Whatever memdir puts in front of a model from its files — MEMORY.md and USER.md, daily notes,
recalled snippets with their citations and headings, tool results, the transcript a summariser
reads — sits inside a fence (``<memdir-memory>``, ``<relevant-memories>``, ``<daily-notes>``,
``<transcript>`` …) and goes through :func:`escape_untrusted` first:

- ``<`` and ``>`` become ``&lt;`` and ``&gt;``, so no stored text can close its fence or forge
  a tag; ``&`` becomes ``&amp;`` unless it already starts one of these three entities, so
  escaping twice is escaping once (a summary that quotes escaped text, a block inside a block);
- no control character stays raw: C0 and C1 controls (but a block's newlines and tabs), the
  Unicode line and paragraph separators and the invisible tag characters (U+E0000–U+E007F,
  which models read as ASCII) are shown as Python escapes (``\\x1b``, ``\\u2028``); a CRLF
  line end becomes LF;
- a one-line field (a file name, a citation, a heading, a result's ``context``) also shows
  newlines, tabs and every other invisible format character (zero-width spaces, bidi
  overrides) escaped, so a file name cannot start a line of its own.

Look-alikes of the brackets (full-width ``＜＞``, ``〈〉``, ``‹›``) are left as written: they
cannot close a fence for any parser, and escaping them would change ordinary Chinese text.

Writers are stricter than the display: :func:`looks_like_injection` (:mod:`memdir.safety.injection`,
re-exported here) is the check auto-capture, the memory flush, extraction and dreaming apply
before a line reaches a memory file, in any language and disguise.
"""

from __future__ import annotations

import re
import unicodedata

from memdir.safety.injection import injection_match, looks_like_injection

__all__ = [
    "escape_untrusted",
    "injection_match",
    "looks_like_injection",
    "preview",
]

#: ``&`` that does not already start one of the three entities the rule writes.
_BLOCK_RE = re.compile(
    r"&(?!(?:lt|gt|amp);)|[<>]|\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\U000e0000-\U000e007f]"
)
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r\n": "\n"}
#: Unicode categories a one-line field never shows raw: controls, format characters (zero
#: width, bidi), line and paragraph separators, unassigned and surrogate code points.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cn", "Cs"})


def escape_untrusted(text: str, *, one_line: bool = False) -> str:
    """``text`` made safe to show inside a fence of a prompt (see the module docstring).

    Args:
        text: memory text: a file's content, a snippet, a file name, a heading.
        one_line: the text is one field on one line (a name, a citation, a heading): newlines,
            tabs and all invisible characters are shown escaped too.

    Returns:
        The text without a raw ``<``, ``>`` or control character; applying this function again
        changes nothing.
    """
    escaped = _BLOCK_RE.sub(_replace, text)
    if not one_line:
        return escaped
    return "".join(
        _visible(ch) if unicodedata.category(ch) in _HIDDEN_CATEGORIES else ch for ch in escaped
    )


def _replace(match: re.Match[str]) -> str:
    found = match.group(0)
    return _ENTITIES.get(found) or _visible(found)


def _visible(ch: str) -> str:
    """A character as a Python escape: ``\\n``, ``\\x1b``, ``\\u200b``, ``\\U000e0041``."""
    return ascii(ch)[1:-1]


def preview(text: str, limit: int = 80) -> str:
    """``text`` on one line, escaped, at most ``limit`` characters: for a warning that quotes
    what was refused (a terminal is no safer a place for an escape sequence than a prompt)."""
    shown = escape_untrusted(" ".join(text.split()), one_line=True)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
