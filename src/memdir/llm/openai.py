"""Chat completions from any OpenAI-compatible endpoint.

That covers OpenAI itself, Ollama (``http://127.0.0.1:11434/v1``), vLLM, llama.cpp's server,
LM Studio, DashScope and DeepSeek: ``POST {base_url}/chat/completions`` with
``{"model": …, "messages": [...]}``, answered with ``{"choices": [{"message": {"content": …}}]}``.
The chat agent also sends ``tools`` and reads ``tool_calls``, streamed or not
(:mod:`memdir.llm.openai_wire` has the formats). Retries (429, 5xx, timeouts) and error
messages come from :func:`memdir.http.post_json` and
:func:`~memdir.http.open_stream`.

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
import json
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
from httpx_sse import EventSource

from memdir.errors import ProviderResponseError, ProviderUnavailable
from memdir.http import (
    Sleep,
    display_url,
    endpoint_url,
    is_local_url,
    normalize_base_url,
    open_stream,
    post_json,
)
from memdir.llm.base import API_KEY_ENV, BASE_URL_ENV, MODEL_ENV, Message
from memdir.llm.chat import (
    ChatEvent,
    ChatReply,
    ReplyDone,
    TextDelta,
    ToolCallStart,
    ToolDefinition,
    check_tools_refusal,
)
from memdir.llm.openai_wire import (
    StreamAssembler,
    openai_messages,
    openai_tools,
    parse_completion,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
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
        self._stream_usage = True  # ask for usage in the stream (stream_options)
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
        body = self._post(self._payload(messages, system, (), max_tokens), timeout)
        return parse_completion(body, self._where, self._scrub).text

    def chat(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> ChatReply:
        """The reply with its tool calls (see :class:`~memdir.llm.chat.ChatLLM`)."""
        payload = self._payload(messages, system, tools, max_tokens)
        try:
            body = self._post(payload, timeout)
        except ProviderResponseError as exc:
            check_tools_refusal(exc, tools)
            raise
        return parse_completion(body, self._where, self._scrub)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[ChatEvent]:
        """The reply as it is written (see :class:`~memdir.llm.chat.ChatLLM`): server-sent
        events, ``stream: true``; usage is asked for with ``stream_options`` unless the server
        refused that once."""
        payload = self._payload(messages, system, tools, max_tokens)
        payload["stream"] = True
        if self._stream_usage:
            payload["stream_options"] = {"include_usage": True}
        try:
            response = self._open_stream(payload, timeout)
        except ProviderResponseError as exc:
            if not (self._stream_usage and "stream_options" in exc.detail):
                check_tools_refusal(exc, tools)
                raise
            self._stream_usage = False  # an older server: ask again without it
            del payload["stream_options"]
            try:
                response = self._open_stream(payload, timeout)
            except ProviderResponseError as again:
                check_tools_refusal(again, tools)
                raise
        try:
            yield from self._read_stream(response, timeout or self.timeout)
        finally:
            response.close()  # also when the reader stopped early (Ctrl-C)

    def _payload(
        self,
        messages: Sequence[Message],
        system: str | None,
        tools: Sequence[ToolDefinition],
        max_tokens: int | None,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": openai_messages(messages, system),
            self._tokens_field: max_tokens or self.max_output_tokens,
        }
        if tools:
            payload["tools"] = openai_tools(tools)
        return payload

    def _post(self, payload: dict[str, Any], timeout: float | None) -> Any:
        return post_json(
            self._client,
            self._url,
            payload,
            self._headers,
            who="openai chat",
            timeout=timeout or self.timeout,
            max_retries=self.max_retries,
            sleep=self._sleep,
        )

    def _open_stream(self, payload: dict[str, Any], timeout: float | None) -> httpx.Response:
        return open_stream(
            self._client,
            self._url,
            payload,
            self._headers,
            who="openai chat",
            timeout=timeout or self.timeout,
            max_retries=self.max_retries,
            sleep=self._sleep,
        )

    def _read_stream(self, response: httpx.Response, timeout: float) -> Iterator[ChatEvent]:
        assembler = StreamAssembler(self._where)
        try:
            if "text/event-stream" not in response.headers.get("content-type", ""):
                # The server ignored stream=true and answered in one piece.
                reply = parse_completion(json.loads(response.read()), self._where, self._scrub)
                if reply.text:
                    yield TextDelta(reply.text)
                yield from (ToolCallStart(c.id, c.name) for c in reply.tool_calls)
                yield ReplyDone(reply)
                return
            finished = False
            for event in EventSource(response).iter_sse():
                data = event.data.strip()
                if data == "[DONE]":
                    finished = True
                    break
                if data:
                    yield from assembler.feed(json.loads(data))
            if not finished and assembler.reply().stop_reason is None:
                raise ProviderResponseError(
                    f"{self._where}: the reply was cut off (the stream ended without [DONE])"
                )
        except ValueError as exc:  # a chunk that is not JSON (json and SSE errors both are)
            raise ProviderResponseError(
                f"{self._where}: a streamed chunk cannot be read ({self._scrub(str(exc))[:200]})"
            ) from exc
        except httpx.ReadTimeout as exc:
            raise ProviderResponseError(
                f"{self._where}: the reply stopped arriving for {timeout:g} s"
            ) from exc
        except httpx.HTTPError as exc:
            raise ProviderResponseError(
                f"{self._where}: the reply was cut off ({type(exc).__name__})"
            ) from exc
        yield ReplyDone(assembler.reply())

    def close(self) -> None:
        """Close the HTTP connections (the LLM cannot be used afterwards)."""
        self._client.close()

    def __enter__(self) -> OpenAIChatLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenAIChatLLM(base_url={display_url(self.base_url)!r}, model={self.model!r})"

    @property
    def _where(self) -> str:
        return f"openai chat at {display_url(self._url)} ({self.model})"

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
