"""HTTP plumbing shared by every remote provider: the embedders (OpenAI-compatible, Ollama,
Gemini) and the LLMs (OpenAI-compatible chat, Anthropic).

- :func:`post_json` sends one JSON request and retries only what may pass on its own: HTTP 429,
  HTTP 5xx, and connect/read timeouts; :func:`open_stream` does the same for a streamed answer
  (retrying only before the answer starts). Backoff starts at 0.5 s and doubles up to 8 s with
  ±20 % jitter; a ``Retry-After`` header wins when present (capped at 8 s). Anything else fails
  at once with a message naming the endpoint, never the API key.
- :func:`normalize_base_url`, :func:`endpoint_url`, :func:`provider_key_for`,
  :func:`is_local_url` and :func:`display_url` handle base URLs the same way for every provider.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from memdir.errors import ConfigError, ProviderResponseError, ProviderUnavailable

#: First backoff delay, in seconds; doubled after each failed try.
BACKOFF_START = 0.5
#: No wait between tries is longer than this, in seconds (``Retry-After`` included).
BACKOFF_MAX = 8.0
#: Jitter multiplies each backoff delay by a factor drawn from this range.
JITTER = (0.8, 1.2)

#: Headers whose values are secrets: they are scrubbed from every error message.
_SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "x-goog-api-key"})
#: How much of an error response body an error message quotes.
_BODY_SNIPPET_CHARS = 200
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

Sleep = Callable[[float], None]


def post_json(
    client: httpx.Client,
    url: str,
    payload: Mapping[str, Any],
    headers: Mapping[str, str],
    *,
    who: str,
    timeout: float,
    max_retries: int = 3,
    sleep: Sleep = time.sleep,
) -> Any:
    """POST ``payload`` as JSON and return the decoded JSON answer, retrying transient failures.

    Args:
        client: the HTTP client (tests give it a ``transport=``).
        url: the full endpoint URL.
        payload: the JSON body.
        headers: extra request headers; values of auth headers never appear in errors.
        who: what is being called, for messages (``"openai embeddings"``).
        timeout: seconds allowed for connecting and for each read.
        max_retries: tries in all, the first included (so 3 means at most 2 waits).
        sleep: called with each wait in seconds; tests pass a recorder instead of waiting.

    Returns:
        The parsed JSON body of the first 2xx answer.

    Raises:
        ProviderResponseError: a 4xx other than 429, a body that is not JSON, or retries
            exhausted on 429 / 5xx / timeouts.
        ProviderUnavailable: the server cannot be reached at all (connection refused, DNS).
    """
    response = send_with_retries(
        lambda: client.post(url, json=payload, headers=dict(headers), timeout=timeout),
        where=f"{who} at {display_url(url)}",
        headers=headers,
        timeout=timeout,
        max_retries=max_retries,
        sleep=sleep,
    )
    return _decode(response, f"{who} at {display_url(url)}", headers)


def open_stream(
    client: httpx.Client,
    url: str,
    payload: Mapping[str, Any],
    headers: Mapping[str, str],
    *,
    who: str,
    timeout: float,
    max_retries: int = 3,
    sleep: Sleep = time.sleep,
) -> httpx.Response:
    """POST ``payload`` and return the open, streamed 2xx answer (the caller closes it).

    Failures before the answer starts are retried as :func:`post_json` retries them; once it
    has started, nothing is retried (part of it may have been shown already).

    Raises:
        ProviderResponseError, ProviderUnavailable: as :func:`post_json`.
    """

    def send() -> httpx.Response:
        request = client.build_request(
            "POST", url, json=payload, headers=dict(headers), timeout=timeout
        )
        return client.send(request, stream=True)

    return send_with_retries(
        send,
        where=f"{who} at {display_url(url)}",
        headers=headers,
        timeout=timeout,
        max_retries=max_retries,
        sleep=sleep,
    )


def send_with_retries(
    send: Callable[[], httpx.Response],
    *,
    where: str,
    headers: Mapping[str, str],
    timeout: float,
    max_retries: int = 3,
    sleep: Sleep = time.sleep,
) -> httpx.Response:
    """Call ``send`` until it gives a 2xx answer, retrying HTTP 429, 5xx and timeouts.

    Raises:
        ProviderResponseError: a 4xx other than 429 at once, or the tries are used up; its
            ``status`` and ``detail`` hold the last answer's status and words.
        ProviderUnavailable: the server cannot be reached at all (connection refused, DNS).
    """
    tries = max(1, max_retries)
    last_problem = ""
    status: int | None = None
    snippet = ""
    for attempt in range(tries):
        retry_after: str | None = None
        try:
            response = send()
        except (httpx.ConnectTimeout, httpx.ReadTimeout):
            last_problem = "timed out"
        except httpx.TransportError as exc:
            raise ProviderUnavailable(
                f"cannot reach {where} ({_redact(type(exc).__name__ + ': ' + str(exc), headers)})"
                f": check the base URL and that the server is running"
            ) from exc
        else:
            status = response.status_code
            if status < 300:
                return response
            try:
                response.read()  # a streamed answer: its body is the error's detail
            except httpx.HTTPError:
                pass
            finally:
                response.close()
            snippet = _body_snippet(response, headers)
            if status != 429 and status < 500:
                hint = " (check the API key)" if status in (401, 403) else ""
                raise ProviderResponseError(
                    f"{where}: HTTP {status}{hint}: {snippet}", status=status, detail=snippet
                )
            last_problem = f"HTTP {status}: {snippet}" if snippet else f"HTTP {status}"
            retry_after = response.headers.get("retry-after")
        if attempt + 1 < tries:
            sleep(retry_delay(attempt, retry_after))
    times = "1 try" if tries == 1 else f"{tries} tries"
    if last_problem == "timed out":
        raise ProviderResponseError(f"{where}: timed out after {times} ({timeout:g} s each)")
    raise ProviderResponseError(
        f"{where}: gave up after {times}, last answer {last_problem}", status=status, detail=snippet
    )


def retry_delay(attempt: int, retry_after: str | None = None) -> float:
    """Seconds to wait after failed try number ``attempt`` (0 for the first).

    A ``Retry-After`` header (seconds or an HTTP date) is honoured, capped at
    :data:`BACKOFF_MAX`; otherwise the delay is ``0.5 * 2**attempt`` with jitter, same cap.
    """
    server_says = _parse_retry_after(retry_after)
    if server_says is not None:
        return min(server_says, BACKOFF_MAX)
    base = BACKOFF_START * float(2**attempt)
    return min(base * random.uniform(*JITTER), BACKOFF_MAX)


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def _decode(response: httpx.Response, where: str, headers: Mapping[str, str]) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProviderResponseError(
            f"{where}: answered HTTP {response.status_code} with a body that is not JSON: "
            f"{_body_snippet(response, headers)}"
        ) from exc


def _body_snippet(response: httpx.Response, headers: Mapping[str, str]) -> str:
    text = " ".join(response.text.split())
    if len(text) > _BODY_SNIPPET_CHARS:
        text = text[:_BODY_SNIPPET_CHARS] + "…"
    return _redact(text, headers)


def _redact(text: str, headers: Mapping[str, str]) -> str:
    """Replace every secret header value (and a bare bearer token) in ``text`` with ``***``."""
    for name, value in headers.items():
        if name.lower() not in _SECRET_HEADERS:
            continue
        candidates = [value]
        if value.lower().startswith("bearer "):
            candidates.append(value[7:].strip())
        for secret in candidates:
            if len(secret) >= 4:
                text = text.replace(secret, "***")
    return text


def normalize_base_url(url: str, *, what: str = "embedding base URL") -> str:
    """Return ``url`` with a lower-case scheme and host and no trailing slash.

    Args:
        url: the base URL as configured.
        what: how messages name the setting (``"llm base URL"``).

    Raises:
        ConfigError: the URL is not ``http://`` or ``https://`` with a host.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{what} {display_url(url)!r} must look like https://host[:port]/path")
    netloc = parts.netloc.rpartition("@")[2].lower()
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def endpoint_url(base_url: str, path: str) -> str:
    """Append ``path`` to the path of ``base_url``, keeping its query (Azure's ``api-version``)."""
    parts = urlsplit(base_url)
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, ""))


def provider_key_for(base_url: str) -> str:
    """A short, stable hash of the endpoint, so two servers never share cache entries."""
    return hashlib.sha256(normalize_base_url(base_url).encode("utf-8")).hexdigest()[:16]


def is_local_url(url: str) -> bool:
    """True when ``url`` points at this machine (``localhost``, ``127.x``, ``::1``)."""
    host = (urlsplit(url.strip()).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.")


def display_url(url: str) -> str:
    """``url`` without any ``user:password@`` part, safe to show in a message."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
