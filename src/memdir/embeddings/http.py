"""HTTP plumbing shared by the remote providers: embedders (OpenAI-compatible, Ollama, Gemini)
and the OpenAI-compatible chat LLM.

- :func:`post_json` sends one JSON request and retries only what may pass on its own: HTTP 429,
  HTTP 5xx, and connect/read timeouts; :func:`open_stream` does the same for a streamed answer
  (retrying only before the answer starts). Backoff starts at 0.5 s and doubles up to 8 s with
  ±20 % jitter; a ``Retry-After`` header wins when present (capped at 8 s). Anything else fails
  at once with a message naming the endpoint, never the API key.
- :class:`HTTPEmbedder` is the base of every remote embedder: batching by estimated tokens,
  lazy discovery of the vector dimension, shape checks and L2 normalisation. A provider only
  says how to turn one batch of texts into rows of floats.
- :func:`normalize_base_url`, :func:`endpoint_url`, :func:`provider_key_for` and
  :func:`is_local_url` handle base URLs the same way for every provider.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import numpy as np

from memdir.embeddings.base import Vectors, check_dims, l2_normalize, token_batches
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


class HTTPEmbedder:
    """Base of the remote embedders: batching, dimension discovery, checks and normalisation.

    Subclasses set :attr:`provider`, :attr:`known_dims` and :attr:`max_batch_items`, and
    implement :meth:`_embed_batch` (one request for one batch of texts).

    Args:
        base_url: the endpoint's base URL (already defaulted by the subclass).
        model: the model name sent to the server.
        headers: headers for every request (auth included; never shown in errors).
        batch_tokens: estimated tokens per request at most (one longer text goes alone).
        timeout: seconds allowed for connecting and for each read.
        max_retries: tries per request in all, see :func:`post_json`.
        transport: an ``httpx`` transport, for tests (``httpx.MockTransport``) or proxies.
        sleep: how to wait between tries; tests pass a recorder.
    """

    provider: str = "http"
    #: Dimensions of well-known models, so ``dims`` needs no request for them.
    known_dims: Mapping[str, int] = {}
    #: Most texts one request may carry (the server's own limit).
    max_batch_items: int = 2048
    #: A short text embedded once when the dimension of an unknown model is needed.
    probe_text: str = "dimension probe"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        headers: Mapping[str, str],
        batch_tokens: int,
        timeout: float,
        max_retries: int,
        transport: httpx.BaseTransport | None,
        sleep: Sleep,
    ) -> None:
        self.base_url = normalize_base_url(base_url)
        self.model_id = model
        self.provider_key = provider_key_for(self.base_url)
        self.batch_tokens = max(1, batch_tokens)
        self.timeout = timeout
        self.max_retries = max_retries
        self._headers = dict(headers)
        self._sleep = sleep
        self._client = httpx.Client(transport=transport, timeout=timeout)
        self._dims: int | None = self.known_dims.get(model)

    @property
    def dims(self) -> int:
        """The vector dimension: known for common models, else learned from one probe request."""
        if self._dims is None:
            rows = self._embed_batch([self.probe_text], query=False)
            self._dims = self._width(rows)
        return self._dims

    @dims.setter
    def dims(self, value: int) -> None:
        self._dims = int(value)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed texts to store; returns ``(len(texts), dims)`` unit-length float32 rows."""
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        parts = [
            self._embed_checked(list(texts[start:end]), query=False)
            for start, end in self._batches(texts)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> Vectors:
        """Embed a search query; returns a ``(dims,)`` unit-length float32 vector."""
        return self._embed_checked([text], query=True).reshape(-1)

    def close(self) -> None:
        """Close the HTTP connections (the embedder cannot be used afterwards)."""
        self._client.close()

    def _embed_batch(self, texts: list[str], *, query: bool) -> list[Any]:
        """Send one request; return one row of numbers per text, in input order."""
        raise NotImplementedError

    @property
    def _who(self) -> str:
        return f"{self.provider} embeddings"

    def _post(self, url: str, payload: Mapping[str, Any]) -> Any:
        return post_json(
            self._client,
            url,
            payload,
            self._headers,
            who=self._who,
            timeout=self.timeout,
            max_retries=self.max_retries,
            sleep=self._sleep,
        )

    def _batches(self, texts: Sequence[str]) -> Iterator[tuple[int, int]]:
        for start, end in token_batches(texts, self.batch_tokens):
            for sub in range(start, end, self.max_batch_items):
                yield sub, min(sub + self.max_batch_items, end)

    def _embed_checked(self, texts: list[str], *, query: bool) -> Vectors:
        rows = self._embed_batch(texts, query=query)
        if self._dims is None:
            # The first real answer tells the dimension: no separate probe request.
            self._dims = self._width(rows)
        vectors = self._as_array(rows)
        check_dims(vectors, len(texts), self._dims, who=f"{self._who} ({self.model_id})")
        return l2_normalize(vectors)

    def _as_array(self, rows: list[Any]) -> Vectors:
        try:
            if not all(isinstance(row, list) for row in rows):
                raise TypeError("a vector is not a list")
            vectors: Vectors = np.asarray(rows, dtype=np.float32)
            return vectors
        except (TypeError, ValueError) as exc:
            raise ProviderResponseError(
                f"{self._who} ({self.model_id}) returned vectors that are not equal-length "
                f"lists of numbers"
            ) from exc

    def _width(self, rows: list[Any]) -> int:
        vectors = self._as_array(rows)
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise ProviderResponseError(
                f"{self._who} ({self.model_id}) returned vectors of shape "
                f"{tuple(vectors.shape)}; expected one non-empty vector per text"
            )
        return int(vectors.shape[1])


def expect_list(value: Any, length: int, *, what: str, who: str) -> list[Any]:
    """Return ``value`` if it is a list of ``length`` items, else raise a clear error."""
    if not isinstance(value, list):
        raise ProviderResponseError(f"{who}: the answer has no {what} list")
    if len(value) != length:
        raise ProviderResponseError(f"{who}: the answer has {len(value)} {what} for {length} texts")
    return value
