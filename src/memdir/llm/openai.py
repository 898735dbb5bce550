"""Chat completions from any OpenAI-compatible endpoint.

That covers OpenAI itself, Ollama (``http://127.0.0.1:11434/v1``), vLLM, llama.cpp's server,
LM Studio, DashScope and DeepSeek: ``POST {base_url}/chat/completions`` with
``{"model": …, "messages": [...]}``, answered with ``{"choices": [{"message": {"content": …}}]}``.
Retries (429, 5xx, timeouts) and error messages come from :func:`memdir.embeddings.http.post_json`.

Where settings come from, first found wins:

- base URL: the argument (``llm.base_url``), ``$MEMDIR_LLM_BASE_URL``, ``$OPENAI_BASE_URL``,
  then ``https://api.openai.com/v1``;
- model: the argument (``llm.model``), ``$MEMDIR_LLM_MODEL``, then ``gpt-4o-mini`` for OpenAI's
  own endpoint (any other server needs a model named);
- API key: the argument (``llm.api_key = "env:VAR"``), ``$MEMDIR_LLM_API_KEY``, then
  ``$OPENAI_API_KEY``, the last only for OpenAI's endpoint or one given by ``$OPENAI_BASE_URL``
  (so an OpenAI key is never sent to another vendor by accident). A server on this machine or a
  private network may run without a key; any other needs one.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from memdir.embeddings.http import (
    Sleep,
    display_url,
    endpoint_url,
    is_local_url,
    normalize_base_url,
    post_json,
)
from memdir.errors import ProviderResponseError, ProviderUnavailable
from memdir.llm.base import Message

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
BASE_URL_ENV = "MEMDIR_LLM_BASE_URL"
MODEL_ENV = "MEMDIR_LLM_MODEL"
API_KEY_ENV = "MEMDIR_LLM_API_KEY"
OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"
OPENAI_API_KEY_ENV = "OPENAI_API_KEY"

#: Hosts whose newer models refuse ``max_tokens`` and read ``max_completion_tokens`` instead.
_COMPLETION_TOKENS_HOSTS = ("api.openai.com", ".openai.azure.com")
#: Host names that only resolve on a local network.
_PRIVATE_SUFFIXES = (".local", ".lan", ".internal", ".home.arpa")


class OpenAIChatLLM:
    """Chat through an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        base_url: the API root (``…/v1``); empty or None means the environment, then OpenAI.
        model: the model name; empty or None means ``$MEMDIR_LLM_MODEL``, then the default.
        api_key: the key itself (not an ``env:`` reference); None means the environment.
        timeout: seconds allowed for connecting and for each read, unless a call says otherwise.
        max_retries: tries per request in all (429, 5xx and timeouts are retried).
        max_output_tokens: the reply's token limit when a call gives none.
        transport: an ``httpx`` transport, for tests or proxies.
        sleep: how to wait between tries; tests pass a recorder.

    Raises:
        ProviderUnavailable: no model named for a non-OpenAI server, or no API key for a
            server that is neither on this machine nor on a private network.
        ConfigError: the base URL is not an http(s) URL.
    """

    name = "openai"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_output_tokens: int = 4096,
        transport: httpx.BaseTransport | None = None,
        sleep: Sleep = time.sleep,
    ) -> None:
        url, url_origin = _pick_base_url(base_url)
        self.base_url = normalize_base_url(url, what="llm base URL")
        host = (urlsplit(self.base_url).hostname or "").lower()
        is_openai = host == "api.openai.com"
        self.model = model or os.environ.get(MODEL_ENV, "").strip()
        if not self.model:
            if not is_openai:
                raise ProviderUnavailable(
                    f"openai chat at {display_url(self.base_url)} needs a model name: set "
                    f'{MODEL_ENV}, or put model = "…" under [llm] in your config.toml'
                )
            self.model = DEFAULT_OPENAI_MODEL
        key = api_key or os.environ.get(API_KEY_ENV, "").strip()
        if not key and (is_openai or url_origin == OPENAI_BASE_URL_ENV):
            key = os.environ.get(OPENAI_API_KEY_ENV, "").strip()
        if not key and not _may_run_without_key(self.base_url):
            extra = f" or {OPENAI_API_KEY_ENV}" if is_openai else ""
            raise ProviderUnavailable(
                f"openai chat at {display_url(self.base_url)} needs an API key: set "
                f'{API_KEY_ENV}{extra}, or put api_key = "env:YOUR_VAR" under [llm] in your '
                f"config.toml"
            )
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_output_tokens = max_output_tokens
        self._key = key
        self._headers: dict[str, str] = {}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
            if host.endswith(".azure.com"):
                self._headers["api-key"] = key  # Azure's classic endpoints read this header
        self._tokens_field = (
            "max_completion_tokens"
            if any(host == h or host.endswith(h) for h in _COMPLETION_TOKENS_HOSTS)
            else "max_tokens"
        )
        self._url = endpoint_url(self.base_url, "chat/completions")
        self._sleep = sleep
        self._client = httpx.Client(transport=transport, timeout=timeout)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> str:
        """Return the model's reply to ``messages`` (see :class:`~memdir.llm.base.LLM`)."""
        wire: list[dict[str, str]] = []
        if system:
            wire.append({"role": "system", "content": system})
        wire.extend({"role": m.role, "content": m.content} for m in messages)
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            self._tokens_field: max_tokens or self.max_output_tokens,
        }
        body = post_json(
            self._client,
            self._url,
            payload,
            self._headers,
            who="openai chat",
            timeout=timeout or self.timeout,
            max_retries=self.max_retries,
            sleep=self._sleep,
        )
        return self._reply_text(body)

    def close(self) -> None:
        """Close the HTTP connections (the LLM cannot be used afterwards)."""
        self._client.close()

    def __enter__(self) -> OpenAIChatLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAIChatLLM(base_url={display_url(self.base_url)!r}, model={self.model!r})"

    def _reply_text(self, body: Any) -> str:
        where = f"openai chat at {display_url(self._url)} ({self.model})"
        if not isinstance(body, dict):
            raise ProviderResponseError(f"{where}: the answer is not a JSON object")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            error = body.get("error")
            detail = f": {self._scrub(_error_message(error))}" if error else ""
            raise ProviderResponseError(f"{where}: the answer has no choices{detail}")
        first = choices[0]
        message = first.get("message") if isinstance(first, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            # Some servers answer with content parts: [{"type": "text", "text": "…"}, …].
            parts = [
                part["text"]
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            ]
            if parts:
                return "".join(parts)
        reason = first.get("finish_reason") if isinstance(first, dict) else None
        because = f" (finish_reason {reason!r})" if reason else ""
        raise ProviderResponseError(f"{where}: the first choice has no text{because}")

    def _scrub(self, text: str) -> str:
        """``text`` with the API key replaced, should a server have echoed it."""
        return text.replace(self._key, "***") if len(self._key) >= 4 else text


def _pick_base_url(base_url: str | None) -> tuple[str, str]:
    """The base URL to use and where it came from (``argument``, a variable, ``default``)."""
    if base_url and base_url.strip():
        return base_url.strip(), "argument"
    for var in (BASE_URL_ENV, OPENAI_BASE_URL_ENV):
        value = os.environ.get(var, "").strip()
        if value:
            return value, var
    return DEFAULT_BASE_URL, "default"


def _may_run_without_key(url: str) -> bool:
    """True for servers on this machine or a private network (Ollama, vLLM, llama.cpp …)."""
    if is_local_url(url):
        return True
    host = (urlsplit(url).hostname or "").lower()
    if host.endswith(_PRIVATE_SUFFIXES) or host == "host.docker.internal":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_private or address.is_loopback or address.is_link_local


def _error_message(error: Any) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])[:200]
    return str(error)[:200]
