"""Claude through Anthropic's Messages API, with the official ``anthropic`` SDK.

The SDK is optional (the ``anthropic`` extra) and imported only when an
:class:`AnthropicLLM` is built. Retries of rate limits, overloads, 5xx and timeouts are the SDK's
own (its ``max_retries``, exponential backoff that honours ``Retry-After``).

Where settings come from, first found wins:

- API key: the argument (``llm.api_key = "env:VAR"``), ``$ANTHROPIC_API_KEY``, then
  ``$ANTHROPIC_AUTH_TOKEN`` (sent as a bearer token). Nothing else is consulted: no SDK profile
  files, so what memdir sends where is always what its config says.
- base URL: the argument (``llm.base_url``, the server root without ``/v1``), then
  ``$ANTHROPIC_BASE_URL``, then ``https://api.anthropic.com``.
- model: the argument (``llm.model``), ``$MEMDIR_LLM_MODEL``, then ``claude-haiku-4-5``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

from memdir.errors import ProviderResponseError, ProviderUnavailable
from memdir.extras import install_hint
from memdir.http import display_url, is_local_url, normalize_base_url
from memdir.llm.anthropic_wire import (
    EventAssembler,
    anthropic_tools,
    reply_from_blocks,
    to_anthropic_messages,
)
from memdir.llm.base import MODEL_ENV, Message
from memdir.llm.chat import ChatEvent, ChatReply, ReplyDone, ToolDefinition, check_tools_refusal

DEFAULT_MODEL = "claude-haiku-4-5"
DEFAULT_BASE_URL = "https://api.anthropic.com"
API_KEY_ENV = "ANTHROPIC_API_KEY"
AUTH_TOKEN_ENV = "ANTHROPIC_AUTH_TOKEN"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
INSTALL_HINT = install_hint("anthropic")


def import_sdk() -> Any:
    """Import the ``anthropic`` SDK.

    Raises:
        ProviderUnavailable: the package is not installed (with the line that installs it).
    """
    try:
        return importlib.import_module("anthropic")
    except ImportError as exc:
        raise ProviderUnavailable(
            f"the anthropic LLM provider needs the anthropic package: {INSTALL_HINT}"
        ) from exc


class AnthropicLLM:
    """Chat with Claude through the Messages API, with native tools and streaming.

    Messages are mapped by :func:`~memdir.llm.anthropic_wire.to_anthropic_messages`: ``system``
    messages join the system prompt, tool calls and results travel as ``tool_use`` /
    ``tool_result`` blocks, and consecutive messages of one role are merged, since the API
    expects user and assistant turns to alternate.

    Args:
        model: the model name; empty or None means ``$MEMDIR_LLM_MODEL``, then the default.
        api_key: the key itself (not an ``env:`` reference); None means the environment.
        base_url: the API root (tests point it at 127.0.0.1); None means the environment, then
            Anthropic's.
        timeout: seconds allowed for each request, unless a call says otherwise.
        max_retries: tries per request in all, the first included.
        max_output_tokens: the reply's token limit when a call gives none (the API needs one).

    Raises:
        ProviderUnavailable: the SDK is not installed, or no key for a remote server.
        ConfigError: the base URL is not an http(s) URL.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str | None = None,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_output_tokens: int = 4096,
    ) -> None:
        self._sdk = import_sdk()
        url = (base_url or "").strip() or os.environ.get(BASE_URL_ENV, "").strip()
        self.base_url = normalize_base_url(url or DEFAULT_BASE_URL, what="llm base URL")
        self.model = model or os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL
        self.timeout = timeout
        self.max_retries = max(1, max_retries)
        self.max_output_tokens = max_output_tokens
        credential: dict[str, str] = {}
        key = api_key or os.environ.get(API_KEY_ENV, "").strip()
        token = "" if key else os.environ.get(AUTH_TOKEN_ENV, "").strip()
        if key:
            credential["api_key"] = key
        elif token:
            credential["auth_token"] = token
        elif is_local_url(self.base_url):
            credential["api_key"] = "local"  # a local stand-in server ignores it
        else:
            raise ProviderUnavailable(
                f"anthropic chat at {display_url(self.base_url)} needs an API key: set "
                f'{API_KEY_ENV}, or put api_key = "env:YOUR_VAR" under [llm] in your config.toml'
            )
        self._secrets = [s for s in (key, token) if len(s) >= 4]
        self._client = self._sdk.Anthropic(
            base_url=self.base_url,
            timeout=timeout,
            max_retries=self.max_retries - 1,  # the SDK counts retries after the first try
            **credential,
        )

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> str:
        """Return Claude's reply to ``messages`` (see :class:`~memdir.llm.base.LLM`)."""
        response = self._create(self._request(messages, system, (), max_tokens, timeout), ())
        return self._reply_text(response)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> ChatReply:
        """The reply with its ``tool_use`` calls (see :class:`~memdir.llm.chat.ChatLLM`)."""
        response = self._create(self._request(messages, system, tools, max_tokens, timeout), tools)
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise ProviderResponseError(f"{self._where}: the answer has no content list")
        return reply_from_blocks(
            blocks, getattr(response, "stop_reason", None), getattr(response, "usage", None)
        )

    def stream(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[ChatEvent]:
        """The reply as it is written (see :class:`~memdir.llm.chat.ChatLLM`), read from the
        SDK's raw event stream (``messages.create(stream=True)``)."""
        request = self._request(messages, system, tools, max_tokens, timeout)
        request["stream"] = True
        events = self._create(request, tools)
        assembler = EventAssembler()
        try:
            for event in events:
                yield from assembler.feed(event)
        except self._sdk.APIError as exc:
            raise self._translate(exc, timeout or self.timeout) from exc
        except Exception as exc:
            if not _is_transport_error(exc):
                raise
            raise ProviderResponseError(
                f"{self._where}: the reply was cut off ({type(exc).__name__}: "
                f"{self._scrub(str(exc))[:200]})"
            ) from exc
        finally:
            close: Any = getattr(events, "close", None)
            if callable(close):
                close()  # also when the reader stopped early (Ctrl-C): drop the connection
        yield ReplyDone(assembler.reply())

    def _request(
        self,
        messages: Sequence[Message],
        system: str | None,
        tools: Sequence[ToolDefinition],
        max_tokens: int | None,
        timeout: float | None,
    ) -> dict[str, Any]:
        system_text, wire = to_anthropic_messages(messages, system)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens or self.max_output_tokens,
            "messages": wire,
        }
        if system_text:
            request["system"] = system_text
        if tools:
            request["tools"] = anthropic_tools(tools)
        if timeout:
            request["timeout"] = timeout
        return request

    def _create(self, request: dict[str, Any], tools: Sequence[ToolDefinition]) -> Any:
        try:
            return self._client.messages.create(**request)
        except self._sdk.APIError as exc:
            error = self._translate(exc, request.get("timeout") or self.timeout)
            if isinstance(error, ProviderResponseError):
                check_tools_refusal(error, tools)
            raise error from exc
        except ValueError as exc:  # a body that is not JSON, or not the expected shape
            raise ProviderResponseError(
                f"{self._where}: the answer cannot be read ({self._scrub(str(exc))[:200]})"
            ) from exc

    def close(self) -> None:
        """Close the HTTP connections (the LLM cannot be used afterwards)."""
        self._client.close()

    def __enter__(self) -> AnthropicLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AnthropicLLM(base_url={display_url(self.base_url)!r}, model={self.model!r})"

    @property
    def _where(self) -> str:
        return f"anthropic messages at {display_url(self.base_url)}/v1/messages ({self.model})"

    def _translate(self, exc: Exception, timeout: float) -> Exception:
        sdk = self._sdk
        tries = "1 try" if self.max_retries == 1 else f"{self.max_retries} tries"
        if isinstance(exc, sdk.APITimeoutError):
            return ProviderResponseError(
                f"{self._where}: timed out after {tries} ({timeout:g} s each)"
            )
        if isinstance(exc, sdk.APIConnectionError):
            return ProviderUnavailable(
                f"cannot reach {self._where} ({self._scrub(str(exc))}): check the base URL and "
                f"that the server is running"
            )
        if isinstance(exc, sdk.APIStatusError):
            status = int(exc.status_code)
            detail = self._scrub(" ".join(str(exc.message).split()))[:300]
            if status == 429 or status >= 500:
                return ProviderResponseError(
                    f"{self._where}: gave up after {tries}, last answer HTTP {status}: {detail}",
                    status=status,
                    detail=detail,
                )
            hint = " (check the API key)" if status in (401, 403) else ""
            return ProviderResponseError(
                f"{self._where}: HTTP {status}{hint}: {detail}", status=status, detail=detail
            )
        return ProviderResponseError(f"{self._where}: {self._scrub(str(exc))}")

    def _reply_text(self, response: Any) -> str:
        blocks = getattr(response, "content", None)
        if not isinstance(blocks, list):
            raise ProviderResponseError(f"{self._where}: the answer has no content list")
        texts = [
            block.text
            for block in blocks
            if getattr(block, "type", None) == "text"
            and isinstance(getattr(block, "text", None), str)
        ]
        if not texts:
            reason = getattr(response, "stop_reason", None)
            because = f" (stop_reason {reason!r})" if reason else ""
            raise ProviderResponseError(f"{self._where}: the answer has no text{because}")
        return "".join(texts)

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def _is_transport_error(exc: Exception) -> bool:
    """An error of the HTTP layer under the SDK (a read timeout, a connection closed mid-reply),
    whichever HTTP package the installed SDK uses."""
    return type(exc).__module__.split(".")[0] in {"httpx", "httpx2", "httpcore"}
