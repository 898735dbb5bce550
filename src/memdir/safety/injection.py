"""What reads like a prompt injection, in any language and disguise (issue 35;
docs/design.md#memory-is-data).

What memdir writes on its own — auto-capture, the memory flush, extraction, dream promotions —
never holds a line that reads like an instruction to the model that will read it back, and the
recall block marks a snippet that does. :func:`injection_match` reads the text the ways a model
could read it and tries the patterns of :mod:`memdir.safety.injection_patterns` (an imperative and
its target, in English, Chinese, French, German, Spanish, Portuguese, Italian, Russian, Japanese
and Korean; tags; a shell that runs a download) on each reading:

1. as a model sees through markup (:func:`as_read`): HTML entities decoded twice, invisible
   tag characters turned back into the ASCII they hide, NFKC (full-width ``ｉｇｎｏｒｅ``,
   mathematical letters), zero-width and bidi characters dropped; then folded: look-alike
   letters of other scripts inside a Latin word turned into the Latin
   letter they imitate (the Cyrillic ``і`` of "dіsregard", the Greek ``Ο`` of "IGΝΟRE"; only
   in words that also hold a Latin letter, so Russian or Greek text stays itself), accents and
   other combining marks dropped from Latin, Greek and Cyrillic letters ("PRÉVÏÖÜS",
   "i̶g̶n̶o̶r̶e̶"; Russian patterns take ``и`` for ``й``), case folded;
2. the folded text with leetspeak undone in words that mix letters with digits or symbols
   ("1gn0r3 4ll pr3v10u5" → "ignore all previous"; ``1`` and ``!`` read once as ``i`` and
   once as ``l``);
3. the folded text with split letters joined ("i g n o r e", "I.G.N.O.R.E", "in-struc-tions")
   and runs of spaces made one; and letters spelled out one by one with single spaces, words
   and all ("i g n o r e a l l p r e v i o u s …", as a promoted block reads once its spaces
   are collapsed), joined into one run tried on a few phrases that need no space
   (:data:`memdir.safety.injection_patterns.SPELLED`).

Why patterns and not a library: the maintained libraries made for this (LLM Guard, Rebuff)
run a classifier model downloaded from a hub or call a service, and memdir runs offline with no
model of that kind; the check must also be fast enough to run on every line a writer stores.
``benchmarks/injection_fp.py`` measures it on 18 classes of injection and on ordinary notes.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterator

from memdir.safety.injection_patterns import patterns, spelled_patterns

__all__ = ["as_read", "injection_match", "looks_like_injection", "readings"]

#: Removed before matching: zero-width and other invisible format characters a pattern would
#: otherwise trip over ("ig\u200bnore").
_INVISIBLE_RE = re.compile(
    r"[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    r"\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff]"
)
_TAG_CHARS_RE = re.compile(r"[\U000e0000-\U000e007f]")

#: Letters of other scripts that look like a Latin letter (after NFKC), and that letter: the
#: Cyrillic, Greek and Armenian look-alikes of Unicode's confusables list that a person would
#: take for the Latin one in running text, upper and lower case, and a few Latin variants.
_LOOKALIKES = str.maketrans(
    # Cyrillic capitals and small letters.
    "АВЕКМНОРСТХУІЈЅԚԜҮӀ"
    "аеорсухіјѕԁһӏԛԝькмтпгүѵ"
    # Greek capitals and small letters.
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"
    "αβγεικνορτυχϲϳ"
    # Armenian small letters, then Latin letters that stand for plain ones (small capitals).
    "օսոհցզա"
    "ıȷɡɑɩʀʏᴀᴄᴅᴇɢʜɪᴊᴋʟᴍɴᴏᴘꜱᴛᴜᴠᴡᴢ",
    "ABEKMHOPCTXYIJSQWYI"
    "aeopcyxijsdhlqwbkmtnryv"
    "ABEZHIKMNOPTYX"
    "abyeikvoptuxcj"
    "ounhgqw"
    "ijgairyacdeghijklmnopstuvwz",
)
_LOOKALIKE_CHARS = frozenset(chr(c) for c in _LOOKALIKES)
_WORD_RE = re.compile(r"\w+")
#: Combining marks are dropped after letters below this code point: Latin, Greek, Cyrillic
#: (Japanese kana keep their voicing marks, Hangul its jamo).
_MARKS_BELOW = 0x0530

#: Leetspeak: the letter each digit or symbol stands for (``1`` and ``!`` are tried as ``i``
#: and as ``l``, ``|`` as ``l`` and as ``i``).
_LEET_I = str.maketrans("0134567@$!|+", "oieastgasilt")
_LEET_L = str.maketrans("0134567@$!|+", "oleastgasllt")
#: A word that mixes letters with the digits or symbols leetspeak uses for them (an ``!`` or
#: ``+`` only inside it: "great!" and "c++" are ordinary).
_LEET_WORD_RE = re.compile(
    r"(?<![\w@$|!+])(?=[a-z0-9@$|!+]*[a-z])(?=[a-z!+]*[0134567@$|]|[a-z0-9@$|]*[!+][a-z0-9@$|])"
    r"[a-z0-9@$|!+]+(?<![!+])"
)
#: Letters split by a mark inside a word ("in-struc-tions", "I.G.N.O.R.E") and runs of single
#: letters split by spaces ("i g n o r e").
_INNER_MARK_RE = re.compile(r"(?<=[^\W\d_])[-.·*_](?=[^\W\d_])")
_SPACED_RE = re.compile(r"(?<![^\W\d_])(?:[^\W\d_] ){2,}[^\W\d_](?![^\W\d_])")
_SPACES_RE = re.compile(r"[ \t]{2,}")
#: Eight or more letters in a row each followed by a space or a mark ("i g n o r e a l l").
_SPELLED_RE = re.compile(r"(?<![^\W\d_])(?:[^\W\d_][\s.\-_·*]{1,3}){7,}[^\W\d_](?![^\W\d_])")
_NOT_LETTER_RE = re.compile(r"[\W\d_]+")


def as_read(text: str) -> str:
    """``text`` as a model reads it: entities decoded (``&lt;system&gt;`` is ``<system>`` to
    it), compatibility forms folded (full-width ``＜ｓｙｓｔｅｍ＞``), invisible characters
    dropped and tag characters turned back into the ASCII they hide."""
    text = html.unescape(html.unescape(text))  # twice: escaping is idempotent, nesting is not
    text = _TAG_CHARS_RE.sub(lambda m: chr(ord(m.group(0)) - 0xE0000), text)
    text = unicodedata.normalize("NFKC", text)
    return _INVISIBLE_RE.sub("", text)


def readings(text: str) -> Iterator[str]:
    """The ways ``text`` is read for the check (see the module docstring), each once."""
    folded = _fold(as_read(text))
    yield folded
    seen = {folded}
    candidates = []
    if _LEET_WORD_RE.search(folded):
        candidates += [_unleet(folded, _LEET_I), _unleet(folded, _LEET_L)]
    joined = _SPACED_RE.sub(lambda m: m.group(0).replace(" ", ""), _INNER_MARK_RE.sub("", folded))
    candidates.append(_SPACES_RE.sub(" ", joined))
    for candidate in candidates:
        if candidate not in seen:
            seen.add(candidate)
            yield candidate


def _fold(text: str) -> str:
    """Look-alike letters inside Latin words made Latin, marks dropped from Latin, Greek and
    Cyrillic letters, case folded."""
    if any(ch in _LOOKALIKE_CHARS for ch in text):
        text = _WORD_RE.sub(_latin_word, text)
    out: list[str] = []
    base = 0
    for ch in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(ch):
            if base < _MARKS_BELOW:
                continue
        else:
            base = ord(ch)
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out)).casefold()


def _latin_word(match: re.Match[str]) -> str:
    word = match.group(0)
    if any(ch.isascii() and ch.isalpha() for ch in word) and any(
        ch in _LOOKALIKE_CHARS for ch in word
    ):
        return word.translate(_LOOKALIKES)
    return word


def _unleet(text: str, table: dict[int, int]) -> str:
    return _LEET_WORD_RE.sub(lambda m: m.group(0).translate(table), text)


def injection_match(text: str) -> str | None:
    """The part of ``text`` that reads like a prompt injection (as one of its
    :func:`readings` shows it), or None."""
    for reading in readings(text):
        for pattern in patterns():
            found = pattern.search(reading)
            if found:
                return found.group(0)
    return _spelled_match(text)


def _spelled_match(text: str) -> str | None:
    """Letters spelled out one by one, words and all ("i g n o r e a l l p r e v i o u s"):
    the runs joined with nothing between them, tried on phrases that need no space."""
    folded = _fold(as_read(text))
    for run in _SPELLED_RE.finditer(folded):
        squeezed = _NOT_LETTER_RE.sub("", run.group(0))
        for pattern in spelled_patterns():
            found = pattern.search(squeezed)
            if found:
                return found.group(0)
    return None


def looks_like_injection(text: str) -> bool:
    """Whether ``text`` reads like a prompt injection or like memdir's own injected blocks."""
    return injection_match(text) is not None
