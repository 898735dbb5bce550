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

Writers are stricter than the display: :func:`looks_like_injection` is the check auto-capture,
the memory flush, extraction and dreaming apply before a line reaches a memory file. It reads
the text the way a model would (HTML entities decoded, NFKC-normalised so full-width letters
and brackets count, zero-width characters removed, tag characters turned back into ASCII) and
matches :data:`INJECTION_PATTERNS`.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = [
    "INJECTION_PATTERNS",
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


def _compile(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.I | re.M) for p in patterns)


#: Names of the tags a prompt is built from, memdir's fences among them: ``<system>``,
#: ``</memdir-memory>``, ``<tool_result>``.
_TAG_NAMES = (
    r"system|assistant|user|developer|tool|function|instructions?|im_start|im_end|"
    r"memdir-[\w-]*|relevant-memories|daily-notes|conversation-summary|transcript|"
    r"system-reminder"
)

#: A text matching any of these is never written to memory by memdir on its own: it reads like
#: an attempt to plant instructions, like text a system injects into a prompt, or like a shell
#: command that runs what it downloads.
INJECTION_PATTERNS = _compile(
    # "Ignore / forget / override the previous instructions".
    r"\b(?:ignore|disregard|forget|override|bypass)\b.{0,40}\b(?:previous|prior|above|earlier|all|"
    r"your|the|any)\b.{0,30}\b(?:instructions?|rules?|prompts?|messages?|guidelines?|context)\b",
    r"\bforget (?:everything|all)(?: that)? you(?:'ve| have)? "
    r"(?:been told|were told|know|learned)\b",
    r"\b(?:do not|don't|never|stop) (?:follow|obey)(?:ing)? (?:your (?:\w+ )?|(?:the|any|all) "
    r"(?:previous|prior|system|original|above) )(?:rules|instructions|guidelines)\b",
    r"\bsystem\s*prompt\b",
    r"\b(?:developer|god|dan|jailbreak)\s*mode\b|\bjailbreak",
    r"\byou are now\b|\bfrom now on,? you (?:are|will be|must act)\b",
    r"\b(?:act|behave) as (?:if you were |an? )?(?:unrestricted|different|new|evil)\b",
    r"\bpretend (?:to be|you are|that you)\b|\brole-?play\b",
    r"\bnew instructions?\b|\bhidden instructions?\b",
    # Tags: any closing tag, and an opening tag of a role or of one of memdir's fences.
    r"</\s*[a-z][\w:.-]*\s*>",
    rf"</?\s*(?:{_TAG_NAMES})",
    r"<\|[a-z_]+\|>|\[/?INST\]|<<\s*/?SYS\s*>>",
    r"^\s*#{0,3}\s*(?:system|assistant|developer)\s*:",
    r'\{\s*"tool"\s*:',
    r"\bmemory_(?:write|search|get)\b",
    # A download piped into a shell: curl … | sh, bash <(wget …), iwr … | iex.
    r"\b(?:curl|wget)\b[^|\n]{0,300}\|\s*(?:sudo\s+)?(?:ba|z|da|k|fi)?sh\b",
    r"\b(?:ba|z|da|k)?sh\s+(?:-c\s+)?[\"']?\s*<?\$?\(\s*(?:curl|wget)\b",
    r"\b(?:iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring)\b.{0,200}"
    r"\|\s*(?:iex|invoke-expression)\b|\b(?:iex|invoke-expression)\b.{0,40}"
    r"\b(?:iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring)\b",
    r"\bbase64\s+(?:-d|--decode)\b[^\n]{0,40}\|\s*(?:ba|z)?sh\b",
    # Chinese: 忽略之前的指令, 忘记以上所有规则, 不要再遵守之前的规则, 从现在起你是…, 越狱.
    r"(?:忽略|无视|忽视).{0,10}(?:指令|指示|规则|提示|设定)",
    r"忘(?:记|掉).{0,10}(?:之前|以上|上面|前面|先前|所有).{0,10}(?:指令|指示|规则|设定|提示)",
    r"不(?:要|必|用)?再?(?:遵守|遵循|服从|理会)(?:你的|之前的?|以上的?|原来的?|系统的?|所有的?)"
    r".{0,6}(?:指令|指示|规则|设定)",
    r"从现在(?:开始|起)[，,]?\s*你(?:就)?(?:是|将是|必须扮演)",
    r"(?:新的|隐藏的?)(?:系统)?指令|开发者模式|系统提示|提示词|越狱|你现在是|扮演|假装你",
)

#: Removed before matching: zero-width and other invisible format characters a pattern would
#: otherwise trip over ("ig\u200bnore").
_INVISIBLE_RE = re.compile(
    r"[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    r"\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff]"
)
_TAG_CHARS_RE = re.compile(r"[\U000e0000-\U000e007f]")


def _as_read(text: str) -> str:
    """``text`` as a model reads it: entities decoded (``&lt;system&gt;`` is ``<system>`` to
    it), compatibility forms folded (full-width ``＜ｓｙｓｔｅｍ＞``), invisible characters
    dropped and tag characters turned back into the ASCII they hide."""
    text = html.unescape(html.unescape(text))  # twice: escaping is idempotent, nesting is not
    text = _TAG_CHARS_RE.sub(lambda m: chr(ord(m.group(0)) - 0xE0000), text)
    text = unicodedata.normalize("NFKC", text)
    return _INVISIBLE_RE.sub("", text)


def injection_match(text: str) -> str | None:
    """The part of ``text`` that reads like a prompt injection, or None."""
    read = _as_read(text)
    for pattern in INJECTION_PATTERNS:
        found = pattern.search(read)
        if found:
            return found.group(0)
    return None


def looks_like_injection(text: str) -> bool:
    """Whether ``text`` reads like a prompt injection or like memdir's own injected blocks."""
    return injection_match(text) is not None
