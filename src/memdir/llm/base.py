"""The LLM protocol, the chat message type (with native tool calls), and token counting.

The chat agent's richer protocol (tool definitions, structured and streamed replies) builds on
these in :mod:`memdir.llm.chat`.

Token counts (docs/design.md#dependencies) use the CJK-aware estimate of
:func:`memdir.text.estimate_tokens` everywhere, unless ``tiktoken`` is installed *and* the
encoding it would need is already in its local cache. tiktoken downloads an encoding from the
internet the first time it is used, which hangs or fails offline, so :func:`count_tokens` looks
in tiktoken's cache folder first and never lets it fetch anything.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from memdir.text import estimate_tokens

Role = Literal["user", "assistant", "system", "tool"]
ROLES: frozenset[str] = frozenset(get_args(Role))

#: The environment's chat endpoint (OpenAI-compatible), its model and key: read by the
#: ``openai`` provider, by ``anthropic`` for the model, and by
#: :func:`memdir.llm.registry.chat_llm_choice` (which must not load an HTTP client to read them).
BASE_URL_ENV = "MEMDIR_LLM_BASE_URL"
MODEL_ENV = "MEMDIR_LLM_MODEL"
API_KEY_ENV = "MEMDIR_LLM_API_KEY"

#: Tokens each message costs beyond its text (role and separators in the chat format).
MESSAGE_OVERHEAD = 4
#: Tokens every request costs once (the priming of the reply).
REPLY_OVERHEAD = 3


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call a model asked for with the provider's native tool calling.

    Attributes:
        id: the provider's id of the call; its result must carry the same id back.
        name: the tool's name.
        arguments: the arguments as JSON text, exactly as the model wrote them (possibly not
            valid JSON: the tool runner says so to the model rather than failing).
    """

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a JSON object (empty text means ``{}``).

        Raises:
            ValueError: the text is not JSON, or not a JSON object; the message says which.
        """
        text = self.arguments.strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"the arguments are not valid JSON ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"the arguments must be a JSON object, not {type(value).__name__}")
        return value


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message.

    Attributes:
        role: ``user``, ``assistant``, ``system`` or ``tool``.
        content: the text (an assistant message that only calls tools may have none).
        tool_calls: native tool calls an assistant message asked for.
        tool_call_id: for a ``tool`` message carrying a native tool result, the id of the call
            it answers; empty for a tool result of the text protocol.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(
                f"message role must be one of {', '.join(sorted(ROLES))}, not {self.role!r}"
            )
        if not isinstance(self.content, str):
            raise TypeError(f"message content must be str, not {type(self.content).__name__}")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only an assistant message can carry tool calls")
        if self.tool_call_id and self.role != "tool":
            raise ValueError("only a tool message can answer a tool call")


@runtime_checkable
class LLM(Protocol):
    """A chat model that answers a conversation with text.

    Attributes:
        name: registry name of the provider (``openai``, ``anthropic``, ``fake``).
        model: the model's name as the provider knows it.
    """

    name: str
    model: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> str:
        """Return the model's reply to ``messages``.

        Args:
            messages: the conversation, oldest first.
            system: the system prompt, sent the way the provider expects it.
            max_tokens: most tokens the reply may have; None means the provider's setting.
            timeout: seconds allowed for this call; None means the provider's setting.

        Raises:
            ProviderUnavailable: the provider cannot be reached or used here.
            ProviderResponseError: the provider failed or answered something unusable.
        """
        ...


def complete_within(
    llm: LLM,
    messages: Sequence[Message],
    *,
    timeout: float,
    system: str | None = None,
    max_tokens: int | None = None,
) -> str:
    """``llm.complete(...)`` that answers within ``timeout`` seconds in all.

    The provider gets the same per-request timeout, and the call runs on a daemon thread, so
    that a provider which retries past its own timeout cannot hold the caller up (its late
    answer is dropped). For calls that must not block: an archive's slug, a Claude Code hook.

    Raises:
        MemdirError: the provider failed, or did not answer in time.
    """
    from memdir.deadline import run_with_timeout
    from memdir.errors import MemdirError

    def call() -> str:
        try:
            return llm.complete(messages, system=system, max_tokens=max_tokens, timeout=timeout)
        except MemdirError:
            raise
        except Exception as exc:  # a provider bug: reported like a provider failure
            raise MemdirError(f"{llm.name} failed: {type(exc).__name__}: {exc}") from exc

    return run_with_timeout(call, timeout, f"the {llm.name} model")


# --- token counting ------------------------------------------------------------------------

#: Where tiktoken downloads an encoding from; the cache file is named by the SHA-1 of the URL.
_ENCODING_URLS = (
    "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken",
    "az://openaipublic/encodings/{name}.tiktoken",  # tiktoken < 0.4
)
#: Encodings stored as one ``.tiktoken`` file (gpt2's older two-file format is not used).
_SINGLE_FILE_ENCODINGS = frozenset(
    {"o200k_base", "o200k_harmony", "cl100k_base", "p50k_base", "p50k_edit", "r50k_base"}
)
#: Encodings tried, in order, when no model is named.
_DEFAULT_ENCODINGS = ("o200k_base", "cl100k_base")

_encodings: dict[tuple[Any, str], Any] = {}
_encodings_lock = threading.Lock()
_tiktoken_import_failed = False


def count_tokens(text: str, model: str | None = None) -> int:
    """Count the tokens of ``text``.

    With tiktoken installed and the encoding for ``model`` (or, with no model, ``o200k_base``
    or ``cl100k_base``) already cached, this is tiktoken's exact count. Otherwise, and for
    models tiktoken does not know (Claude, Qwen, Llama…), it is the CJK-aware estimate: one
    token per CJK character, one per four other characters.
    """
    encoding = _cached_encoding(model)
    if encoding is None:
        return estimate_tokens(text)
    return len(encoding.encode(text, disallowed_special=()))


def count_message_tokens(
    messages: Sequence[Message],
    *,
    system: str | None = None,
    model: str | None = None,
    tools_json: str = "",
) -> int:
    """Count the tokens a request with ``messages`` (and ``system``) costs.

    Each message adds :data:`MESSAGE_OVERHEAD` tokens to its text (and to the name and
    arguments of each tool call it carries), the request :data:`REPLY_OVERHEAD` once.
    ``tools_json`` is the text of the tool definitions sent with the request, if any: they
    take room in the context like the system prompt does.
    """
    total = REPLY_OVERHEAD
    if system:
        total += MESSAGE_OVERHEAD + count_tokens(system, model)
    if tools_json:
        total += MESSAGE_OVERHEAD + count_tokens(tools_json, model)
    for message in messages:
        total += MESSAGE_OVERHEAD + count_tokens(message.content, model)
        for call in message.tool_calls:
            total += MESSAGE_OVERHEAD + count_tokens(f"{call.name} {call.arguments}", model)
    return total


def tiktoken_cache_dirs(tiktoken: Any) -> list[Path]:
    """The folders the installed tiktoken reads cached encodings from (empty: caching is off).

    ``TIKTOKEN_CACHE_DIR`` wins, then ``DATA_GYM_CACHE_DIR``; otherwise tiktoken's own default,
    which moved from ``<tmp>/data-gym-cache`` to ``~/.cache/tiktoken`` in recent versions.
    """
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            value = os.environ[var]
            return [Path(value)] if value else []
    try:
        load = importlib.import_module(f"{tiktoken.__name__}.load")
        default = getattr(load, "_default_cache_dir", None)
        if callable(default):
            return [Path(default())]
    except Exception:  # an odd install: fall back to the historical default below
        pass
    return [Path(tempfile.gettempdir()) / "data-gym-cache"]


def _cached_encoding(model: str | None) -> Any | None:
    """tiktoken's encoding for ``model`` if it can be used without a download, else None."""
    tiktoken = _tiktoken()
    if tiktoken is None:
        return None
    if model:
        name = _encoding_name(tiktoken, model)
        candidates: tuple[str, ...] = (name,) if name else ()
    else:
        candidates = _DEFAULT_ENCODINGS
    for name in candidates:
        key = (tiktoken, name)
        with _encodings_lock:
            if key in _encodings:
                return _encodings[key]
        if name not in _SINGLE_FILE_ENCODINGS or not _is_cached(tiktoken, name):
            continue
        try:
            encoding = tiktoken.get_encoding(name)
        except Exception:  # a broken cache file or install: the estimate still works
            continue
        with _encodings_lock:
            _encodings[key] = encoding
        return encoding
    return None


def _tiktoken() -> Any | None:
    """The tiktoken module, or None when it is not installed (checked once)."""
    global _tiktoken_import_failed
    if "tiktoken" in sys.modules:
        return sys.modules["tiktoken"]  # None when importing it has been blocked
    if _tiktoken_import_failed:
        return None
    try:
        return importlib.import_module("tiktoken")
    except ImportError:
        _tiktoken_import_failed = True
        return None


def _encoding_name(tiktoken: Any, model: str) -> str | None:
    lookup = getattr(tiktoken, "encoding_name_for_model", None)
    if lookup is None:
        return None
    try:
        name = lookup(model)
    except (KeyError, ValueError):
        return None
    return name if isinstance(name, str) else None


def _is_cached(tiktoken: Any, name: str) -> bool:
    for folder in tiktoken_cache_dirs(tiktoken):
        for url in _ENCODING_URLS:
            key = hashlib.sha1(url.format(name=name).encode()).hexdigest()
            path = folder / key
            if path.is_file() and path.stat().st_size > 0:
                return True
    return False
