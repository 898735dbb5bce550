"""A bilingual term bridge for the keyword leg (docs/design.md#search, "Across languages"): each
word of a query, with its translations into the other language as the keyword index stores
words, so that "When does the membership points redesign launch?" also looks for 会员, 积分,
改版, 上线 and "端口改成多少了" also for port.

:func:`concepts` turns a query's terms into :class:`Concept` s: the term itself and its other
*forms*, each with a weight in (0, 1] (the term itself 1). Search weighs a form's BM25 part by
it and counts a concept as held, and as known to the index, when one of its forms is
(:mod:`memdir.search.terms`). The pairs come from CC-CEDICT and memdir's glossary
(:mod:`memdir.bridge.sources`), compiled once into the user's cache
(:mod:`memdir.bridge.compiled`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from memdir.bridge.compiled import Compiled
from memdir.text import has_cjk

#: Translations kept per query term.
MAX_FORMS = 6
#: A translation below this weight (before :data:`FORM_WEIGHT`) is left out: a rare sense.
MIN_WEIGHT = 0.2


@dataclass(frozen=True)
class Concept:
    """One query term and its forms: the term (weight 1) and its translations (weight < 1)."""

    term: str
    forms: dict[str, float] = field(default_factory=dict)

    @property
    def translations(self) -> dict[str, float]:
        return {f: w for f, w in self.forms.items() if f != self.term}


class Bridge:
    """Looks up the translations of query terms (see the module docstring)."""

    def __init__(self, compiled: Compiled) -> None:
        self._compiled = compiled

    @property
    def has_dictionary(self) -> bool:
        """Whether CC-CEDICT is installed (else only memdir's glossary bridges words)."""
        return self._compiled.dictionary

    def translations(self, term: str) -> dict[str, float]:
        """The other language's forms of one query term (as :func:`memdir.text.query_terms`
        makes them), best first, each weighing at most 1."""
        return dict(_translations(self._compiled, term))

    def concepts(self, terms: Sequence[str]) -> list[Concept]:
        """Each term with its forms (the term weighs 1; a translation that is itself one of
        the query's terms is left to that term)."""
        own = set(terms)
        out = []
        for term in terms:
            forms = {term: 1.0}
            for form, weight in _translations(self._compiled, term):
                if form not in own and form not in forms:
                    forms[form] = weight
            out.append(Concept(term, forms))
        return out


@lru_cache(maxsize=16384)
def _translations(compiled: Compiled, term: str) -> tuple[tuple[str, float], ...]:
    if has_cjk(term):
        found = compiled.to_english(term)
        if not found and len(term) > 2:
            # A long word jieba kept whole (会员积分): its parts' translations, weighed less.
            for part in _parts(term):
                for word, weight in compiled.to_english(part).items():
                    found[word] = max(found.get(word, 0.0), 0.8 * weight)
        return _kept(found.items())
    if not term.isascii() or not term.isalpha():
        return ()  # numbers, identifiers, other scripts: the same in both languages
    return _kept(compiled.to_chinese(term).items())


def _kept(items: object) -> tuple[tuple[str, float], ...]:
    ranked = sorted(
        ((w, x) for w, x in items if x >= MIN_WEIGHT),  # type: ignore[attr-defined]
        key=lambda kv: (-kv[1], kv[0]),
    )
    return tuple((w, round(x, 4)) for w, x in ranked[:MAX_FORMS])


def _parts(word: str) -> list[str]:
    from memdir.text import _cut

    return [p for p in _cut(word, False) if p != word]


_lock = threading.Lock()
_default: Bridge | None = None
_compiling: threading.Thread | None = None


def default_bridge(*, wait: bool = False, start: bool = True) -> Bridge | None:
    """The process's bridge, its pairs read from ``$MEMDIR_HOME/cache``; None while they are
    not compiled there yet: a search never waits for the compiling (about 3 s, once per
    machine). ``start``: compile on a thread of its own meanwhile (:func:`prepare`; a
    long-running process, whose later searches get the translations; a one-shot command
    would only take a core from its own search and end before it is done). ``wait``:
    compile now when needed (``memdir init``, ``memdir index``)."""
    global _default
    with _lock:
        if _default is not None:
            return _default
        from memdir.config.settings import memdir_home

        found = Compiled.open(memdir_home() / "cache")
        if found is not None:
            _default = Bridge(found)
            return _default
    if not wait:
        if start:
            prepare()
        return None
    _compile()
    return _default


def _compile() -> None:
    global _default
    from memdir.config.settings import memdir_home

    compiled = Compiled.build(memdir_home() / "cache")
    with _lock:
        if _default is None:
            _default = Bridge(compiled)


def prepare() -> threading.Thread | None:
    """Compile the process's bridge on a thread of its own when it is not ready yet (once per
    process; a long-running server or an indexing run does this beside its own work); join
    the thread to wait for it. None when there is nothing to do."""
    global _compiling
    with _lock:
        if _default is not None:
            return None
        if _compiling is not None and _compiling.is_alive():
            return _compiling
        _compiling = threading.Thread(target=_compile, name="memdir-bridge", daemon=True)
        _compiling.start()
        return _compiling


__all__ = ["MAX_FORMS", "Bridge", "Concept", "default_bridge", "prepare"]
