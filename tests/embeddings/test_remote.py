"""Remote embedders (OpenAI-compatible, Ollama, Gemini) against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from memdir.config.settings import EmbeddingConfig
from memdir.embeddings import Embedder, create_embedder, embedder_names
from memdir.embeddings.gemini import GeminiEmbedder
from memdir.embeddings.ollama import OllamaEmbedder
from memdir.embeddings.openai import OpenAIEmbedder
from memdir.errors import ConfigError, ProviderResponseError, ProviderUnavailable
from memdir.http import provider_key_for, retry_delay
from memdir.text import estimate_tokens

KEY = "sk-test-SECRET-1234567890"


def unit(values: list[float]) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float32)
    return arr / np.linalg.norm(arr)


def openai(server, sleeps, **kwargs) -> OpenAIEmbedder:
    kwargs.setdefault("model", "m")
    kwargs.setdefault("api_key", KEY)
    return OpenAIEmbedder(server.url, sleep=sleeps, **kwargs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- OpenAI-compatible ----------------------------------------------------------------------


def test_openai_happy_path_restores_order_and_normalises(http_server, sleeps):
    texts = ["alpha", "beta", "gamma"]
    vecs = {t: http_server.vector_for(t) for t in texts}
    # The server answers out of order; "index" says which input each vector belongs to.
    http_server.enqueue(
        200,
        {
            "data": [
                {"index": 2, "embedding": vecs["gamma"]},
                {"index": 0, "embedding": vecs["alpha"]},
                {"index": 1, "embedding": vecs["beta"]},
            ]
        },
    )
    embedder = openai(http_server, sleeps)

    out = embedder.embed_documents(texts)

    assert out.shape == (3, 8)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    for row, text in zip(out, texts, strict=True):
        np.testing.assert_allclose(row, unit(vecs[text]), rtol=1e-5)
    [request] = http_server.requests
    assert request.path == "/embeddings"
    assert request.json == {"model": "m", "input": texts}
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    # The dimension came from the answer: no probe request.
    assert embedder.dims == 8
    assert len(http_server.requests) == 1
    assert (embedder.provider, embedder.model_id) == ("openai", "m")
    assert isinstance(embedder, Embedder)


def test_openai_embed_query_returns_one_unit_vector(http_server, sleeps):
    embedder = openai(http_server, sleeps)

    vec = embedder.embed_query("where is the key?")

    assert vec.shape == (8,)
    np.testing.assert_allclose(vec, unit(http_server.vector_for("where is the key?")), rtol=1e-5)
    assert http_server.requests[0].json["input"] == ["where is the key?"]


def test_openai_dims_of_unknown_model_probed_once_and_cached(http_server, sleeps):
    embedder = openai(http_server, sleeps, model="my-local-model")

    assert embedder.dims == 8
    assert embedder.dims == 8
    assert len(http_server.requests) == 1
    assert embedder.embed_documents([]).shape == (0, 8)
    assert len(http_server.requests) == 1


def test_openai_known_model_dims_need_no_request(http_server, sleeps):
    embedder = openai(http_server, sleeps, model="text-embedding-3-large")

    assert embedder.dims == 3072
    assert http_server.requests == []


def test_openai_batches_by_about_8000_tokens(http_server, sleeps):
    texts = [f"{i:03d} " + "a" * 11_996 for i in range(5)]
    assert all(estimate_tokens(t) == 3000 for t in texts)
    embedder = openai(http_server, sleeps)

    out = embedder.embed_documents(texts)

    sent = [r.json["input"] for r in http_server.requests]
    assert len(sent) == 3
    assert [len(batch) for batch in sent] == [2, 2, 1]
    assert all(sum(estimate_tokens(t) for t in batch) <= 8000 for batch in sent)
    assert [t for batch in sent for t in batch] == texts
    assert out.shape == (5, 8)
    for row, text in zip(out, texts, strict=True):
        np.testing.assert_allclose(row, unit(http_server.vector_for(text)), rtol=1e-5)


def test_openai_smaller_batch_budget_sends_more_requests(http_server, sleeps):
    texts = ["word " * 40] * 6  # 50 tokens each
    embedder = openai(http_server, sleeps, batch_tokens=100)

    embedder.embed_documents(texts)

    assert [len(r.json["input"]) for r in http_server.requests] == [2, 2, 2]


def test_openai_retries_429_and_5xx_with_doubling_jittered_backoff(http_server, sleeps):
    http_server.enqueue(429, {"error": {"message": "rate limited"}})
    http_server.enqueue(503, {"error": {"message": "overloaded"}})
    embedder = openai(http_server, sleeps)

    out = embedder.embed_documents(["hello"])

    assert out.shape == (1, 8)
    assert len(http_server.requests) == 3
    first, second = sleeps.delays
    assert 0.4 <= first <= 0.6
    assert 0.8 <= second <= 1.2


@pytest.mark.parametrize(("header", "expected"), [("2", 2.0), ("120", 8.0), ("0.25", 0.25)])
def test_openai_honours_retry_after_capped_at_8s(http_server, sleeps, header, expected):
    http_server.enqueue(429, {"error": "slow down"}, headers={"Retry-After": header})
    embedder = openai(http_server, sleeps)

    embedder.embed_documents(["hello"])

    assert sleeps.delays == [expected]
    assert len(http_server.requests) == 2


def test_retry_delay_never_exceeds_8s():
    delays = [retry_delay(attempt) for attempt in range(10)]
    assert all(0 < d <= 8.0 for d in delays)
    assert delays[-1] == 8.0
    assert retry_delay(0, "not a number or date") <= 0.6


def test_openai_gives_up_after_three_5xx(http_server, sleeps):
    for _ in range(3):
        http_server.enqueue(500, {"error": {"message": "internal boom"}})
    embedder = openai(http_server, sleeps)

    with pytest.raises(ProviderResponseError) as info:
        embedder.embed_documents(["hello"])

    message = str(info.value)
    assert f"{http_server.url}/embeddings" in message
    assert "3 tries" in message
    assert "HTTP 500" in message
    assert "internal boom" in message
    assert len(http_server.requests) == 3
    assert len(sleeps.delays) == 2
    assert KEY not in message


def test_openai_max_retries_sets_the_number_of_tries(http_server, sleeps):
    for _ in range(5):
        http_server.enqueue(502, "bad gateway")
    embedder = openai(http_server, sleeps, max_retries=5)

    with pytest.raises(ProviderResponseError, match="5 tries"):
        embedder.embed_documents(["hello"])

    assert len(http_server.requests) == 5
    assert len(sleeps.delays) == 4


def test_openai_400_fails_at_once(http_server, sleeps):
    http_server.enqueue(400, {"error": {"message": "input is too long"}})
    embedder = openai(http_server, sleeps)

    with pytest.raises(ProviderResponseError) as info:
        embedder.embed_documents(["hello"])

    assert "HTTP 400" in str(info.value)
    assert "input is too long" in str(info.value)
    assert len(http_server.requests) == 1
    assert sleeps.delays == []


def test_openai_timeouts_are_retried_then_reported(http_server, sleeps):
    for _ in range(3):
        http_server.enqueue(200, {"data": []}, delay=0.6)
    embedder = openai(http_server, sleeps, timeout=0.2)

    with pytest.raises(ProviderResponseError) as info:
        embedder.embed_documents(["hello"])

    assert "timed out after 3 tries" in str(info.value)
    assert http_server.url in str(info.value)
    assert len(http_server.requests) == 3
    assert len(sleeps.delays) == 2


def test_openai_one_timeout_then_success(http_server, sleeps):
    http_server.enqueue(200, {"data": []}, delay=0.6)
    embedder = openai(http_server, sleeps, timeout=0.2)

    out = embedder.embed_documents(["hello"])

    assert out.shape == (1, 8)
    assert len(http_server.requests) == 2


def test_openai_wrong_dimension_for_known_model(http_server, sleeps):
    embedder = openai(http_server, sleeps, model="text-embedding-3-small")  # 1536 dims

    with pytest.raises(ProviderResponseError, match="1536"):
        embedder.embed_documents(["hello"])


def test_openai_wrong_dimension_after_probe(http_server, sleeps):
    embedder = openai(http_server, sleeps)
    assert embedder.dims == 8
    http_server.enqueue(200, {"data": [{"index": 0, "embedding": [0.1, 0.2, 0.3]}]})

    with pytest.raises(ProviderResponseError, match=r"\(1, 3\).*\(1, 8\)"):
        embedder.embed_documents(["hello"])


@pytest.mark.parametrize(
    "body",
    [
        {"object": "list"},
        {"data": [{"index": 0, "embedding": [1.0, 2.0]}]},  # one vector for two texts
        {"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]},
        {"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": "nope"}]},
        "<html>gateway</html>",
    ],
)
def test_openai_malformed_answers_are_errors(http_server, sleeps, body):
    http_server.enqueue(200, body)
    embedder = openai(http_server, sleeps)

    with pytest.raises(ProviderResponseError):
        embedder.embed_documents(["a", "b"])


def test_openai_missing_key_for_api_openai_com_names_the_variable():
    with pytest.raises(ProviderUnavailable, match="OPENAI_API_KEY"):
        OpenAIEmbedder()


def test_openai_key_from_environment(http_server, sleeps, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    embedder = OpenAIEmbedder(http_server.url, "m", sleep=sleeps)

    embedder.embed_query("hi")

    assert http_server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_openai_local_server_runs_without_key(http_server, sleeps):
    embedder = OpenAIEmbedder(http_server.url, "m", sleep=sleeps)

    embedder.embed_query("hi")

    assert "authorization" not in http_server.requests[0].headers


def test_openai_base_url_from_environment(http_server, sleeps, monkeypatch):
    monkeypatch.setenv("MEMDIR_EMBEDDING_BASE_URL", http_server.url + "/")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}")
    embedder = OpenAIEmbedder(model="m", sleep=sleeps)

    embedder.embed_query("hi")

    assert http_server.requests[0].path == "/embeddings"


def test_openai_base_url_path_and_query_are_kept(http_server, sleeps):
    embedder = OpenAIEmbedder(http_server.url + "/v1/?api-version=2024-02-01", "m", sleep=sleeps)

    embedder.embed_query("hi")

    assert http_server.requests[0].path == "/v1/embeddings?api-version=2024-02-01"


def test_openai_key_never_appears_in_errors(http_server, sleeps):
    http_server.enqueue(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}})
    embedder = openai(http_server, sleeps)

    with pytest.raises(ProviderResponseError) as info:
        embedder.embed_documents(["hello"])

    message = str(info.value)
    assert "HTTP 401" in message
    assert "check the API key" in message
    assert KEY not in message
    assert "***" in message


def test_openai_unreachable_server_is_unavailable(sleeps):
    url = f"http://127.0.0.1:{free_port()}/v1"
    embedder = OpenAIEmbedder(url, "m", KEY, sleep=sleeps)

    with pytest.raises(ProviderUnavailable) as info:
        embedder.embed_query("hi")

    assert url in str(info.value)
    assert KEY not in str(info.value)


def test_openai_rejects_a_base_url_that_is_not_http():
    with pytest.raises(ConfigError, match="https://"):
        OpenAIEmbedder("ftp://example.invalid/v1", "m", KEY)


def test_provider_key_depends_on_the_endpoint_only():
    a = OpenAIEmbedder("http://127.0.0.1:8000/v1", "m")
    b = OpenAIEmbedder("http://127.0.0.1:9000/v1", "m")
    a_again = OpenAIEmbedder("HTTP://127.0.0.1:8000/v1/", "m", KEY)

    assert a.provider_key != b.provider_key
    assert a.provider_key == a_again.provider_key
    assert a.provider_key == provider_key_for("http://127.0.0.1:8000/v1")
    assert len(a.provider_key) == 16
    assert KEY not in a.provider_key


# --- Ollama ---------------------------------------------------------------------------------


def test_ollama_happy_path(http_server, sleeps):
    embedder = OllamaEmbedder(http_server.url, "tiny-embed", sleep=sleeps)

    out = embedder.embed_documents(["uno", "dos"])
    query = embedder.embed_query("tres")

    assert out.shape == (2, 8)
    np.testing.assert_allclose(out[1], unit(http_server.vector_for("dos")), rtol=1e-5)
    assert query.shape == (8,)
    first = http_server.requests[0]
    assert first.path == "/api/embed"
    assert first.json == {"model": "tiny-embed", "input": ["uno", "dos"]}
    assert "authorization" not in first.headers
    assert embedder.provider == "ollama"


def test_ollama_defaults_and_known_dims(sleeps):
    embedder = OllamaEmbedder(sleep=sleeps)

    assert embedder.model_id == "nomic-embed-text"
    assert embedder.dims == 768
    assert embedder.base_url == "http://127.0.0.1:11434"
    assert OllamaEmbedder(model="nomic-embed-text:latest").dims == 768


def test_ollama_host_from_environment(http_server, sleeps, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", http_server.url.removeprefix("http://"))
    embedder = OllamaEmbedder(model="tiny-embed", sleep=sleeps)

    embedder.embed_query("hi")

    assert embedder.base_url == http_server.url
    assert http_server.requests[0].path == "/api/embed"


def test_ollama_missing_model_is_reported_without_retry(http_server, sleeps):
    http_server.enqueue(404, {"error": 'model "nope" not found, try pulling it first'})
    embedder = OllamaEmbedder(http_server.url, "nope", sleep=sleeps)

    with pytest.raises(ProviderResponseError) as info:
        embedder.embed_documents(["hello"])

    assert "HTTP 404" in str(info.value)
    assert "try pulling it first" in str(info.value)
    assert len(http_server.requests) == 1
    assert sleeps.delays == []


def test_ollama_wrong_number_of_vectors(http_server, sleeps):
    http_server.enqueue(200, {"embeddings": [[1.0, 2.0]]})
    embedder = OllamaEmbedder(http_server.url, "tiny-embed", sleep=sleeps)

    with pytest.raises(ProviderResponseError, match="1 embeddings for 2 texts"):
        embedder.embed_documents(["a", "b"])


# --- Gemini ---------------------------------------------------------------------------------


def test_gemini_happy_path(http_server, sleeps):
    http_server.dims = 768
    embedder = GeminiEmbedder(http_server.url, api_key=KEY, sleep=sleeps)

    out = embedder.embed_documents(["one", "two"])
    query = embedder.embed_query("three")

    assert out.shape == (2, 768)
    np.testing.assert_allclose(out[0], unit(http_server.vector_for("one")), rtol=1e-5)
    assert query.shape == (768,)
    docs, asked = http_server.requests
    assert docs.path == "/models/text-embedding-004:batchEmbedContents"
    assert KEY not in docs.path
    assert docs.headers["x-goog-api-key"] == KEY
    assert docs.json["requests"][1] == {
        "model": "models/text-embedding-004",
        "content": {"parts": [{"text": "two"}]},
        "taskType": "RETRIEVAL_DOCUMENT",
    }
    assert asked.json["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert (embedder.provider, embedder.model_id, embedder.dims) == (
        "gemini",
        "text-embedding-004",
        768,
    )


def test_gemini_key_from_google_api_key(http_server, sleeps, monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key-from-env")
    embedder = GeminiEmbedder(http_server.url, "models/small", sleep=sleeps)

    embedder.embed_query("hi")

    request = http_server.requests[0]
    assert request.headers["x-goog-api-key"] == "g-key-from-env"
    assert request.path == "/models/small:batchEmbedContents"


def test_gemini_missing_key_names_the_variable():
    with pytest.raises(ProviderUnavailable, match="GEMINI_API_KEY"):
        GeminiEmbedder()


def test_gemini_forbidden_is_reported_without_the_key(http_server, sleeps):
    http_server.enqueue(403, {"error": {"message": f"API key {KEY} not valid"}})
    embedder = GeminiEmbedder(http_server.url, "small", KEY, sleep=sleeps)

    with pytest.raises(ProviderResponseError) as info:
        embedder.embed_documents(["hello"])

    assert "HTTP 403" in str(info.value)
    assert KEY not in str(info.value)
    assert len(http_server.requests) == 1


def test_gemini_embedding_without_values(http_server, sleeps):
    http_server.enqueue(200, {"embeddings": [{"vector": [1.0]}]})
    embedder = GeminiEmbedder(http_server.url, "small", KEY, sleep=sleeps)

    with pytest.raises(ProviderResponseError, match="no values"):
        embedder.embed_documents(["hello"])


# --- registry -------------------------------------------------------------------------------


def test_registry_knows_the_remote_providers():
    assert {"openai", "ollama", "gemini"} <= set(embedder_names())


def test_registry_builds_a_working_openai_embedder(http_server):
    embedder = create_embedder(
        EmbeddingConfig(provider="openai", base_url=http_server.url, model="m")
    )

    assert isinstance(embedder, OpenAIEmbedder)
    out = embedder.embed_documents(["from the registry"])
    assert out.shape == (1, 8)
    assert http_server.requests[0].json["model"] == "m"


def test_registry_resolves_the_key_reference(http_server, monkeypatch):
    monkeypatch.setenv("MY_EMBED_KEY", "sk-referenced")
    config = EmbeddingConfig(
        provider="openai", base_url=http_server.url, model="m", api_key="env:MY_EMBED_KEY"
    )

    create_embedder(config).embed_query("hi")

    assert http_server.requests[0].headers["authorization"] == "Bearer sk-referenced"


def test_registry_unset_key_variable_makes_provider_unavailable(http_server):
    config = EmbeddingConfig(provider="gemini", api_key="env:MEMDIR_TEST_UNSET_VAR")

    with pytest.raises(ProviderUnavailable, match="MEMDIR_TEST_UNSET_VAR"):
        create_embedder(config)


def test_registry_passes_config_settings(http_server):
    config = EmbeddingConfig(
        provider="ollama", base_url=http_server.url, model="tiny", batch_tokens=5, max_retries=1
    )
    http_server.enqueue(500, "boom")

    embedder = create_embedder(config)
    with pytest.raises(ProviderResponseError, match="1 try"):
        embedder.embed_documents(["a"])
    assert len(http_server.requests) == 1

    embedder.embed_documents(["one two three four", "five six seven eight"])
    assert len(http_server.requests) == 3  # 4 + 4 tokens > 5: one request each
