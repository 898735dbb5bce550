"""The http reranker against a real HTTP server on 127.0.0.1: both request/answer shapes,
reordering, timeouts, malformed answers, and failing open inside a search."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.config.settings import load_config
from memdir.errors import ConfigError, ProviderResponseError, ProviderUnavailable
from memdir.rerank import RerankDoc, create_reranker
from memdir.rerank.http import HTTPReranker, parse_scores
from tests.helpers import write

DOCS = [
    RerankDoc("the weather was nice"),
    RerankDoc("redis listens on port 6379"),
    RerankDoc("port of redis is 6379 redis"),
]


def test_cohere_shape_request_and_scores_in_input_order(rerank_server, sleeps) -> None:
    rr = HTTPReranker(rerank_server.url, "rr-model", "KEY-123456", sleep=sleeps)

    scores = rr.rerank("redis port", DOCS)

    assert scores[2] > scores[1] > scores[0]  # answered best-first, returned in input order
    sent = rerank_server.requests[-1]
    assert sent.path == "/rerank"
    assert sent.json == {
        "model": "rr-model",
        "query": "redis port",
        "documents": [d.text for d in DOCS],
        "top_n": 3,
    }
    assert sent.headers["authorization"] == "Bearer KEY-123456"


def test_tei_shape(rerank_server, sleeps) -> None:
    rr = HTTPReranker(rerank_server.url + "/", api="tei", sleep=sleeps)

    scores = rr.rerank("redis port", DOCS)

    assert scores[2] > scores[1] > scores[0]
    assert rerank_server.requests[-1].json == {
        "query": "redis port",
        "texts": [d.text for d in DOCS],
    }
    assert "authorization" not in rerank_server.requests[-1].headers


def test_settings_from_the_environment(rerank_server, sleeps, monkeypatch) -> None:
    monkeypatch.setenv("MEMDIR_RERANK_BASE_URL", rerank_server.url)
    monkeypatch.setenv("MEMDIR_RERANK_MODEL", "env-model")
    monkeypatch.setenv("MEMDIR_RERANK_API_KEY", "ENV-KEY-999")
    rr = create_reranker(load_config(None, overrides={"rerank": {"provider": "http"}}))
    assert isinstance(rr, HTTPReranker)

    rr.rerank("q", DOCS[:1])

    assert rerank_server.requests[-1].json["model"] == "env-model"
    assert rerank_server.requests[-1].headers["authorization"] == "Bearer ENV-KEY-999"


def test_no_endpoint_is_unavailable() -> None:
    with pytest.raises(ProviderUnavailable, match="MEMDIR_RERANK_BASE_URL"):
        create_reranker(load_config(None, overrides={"rerank": {"provider": "http"}}))


def test_literal_key_in_config_is_refused(rerank_server) -> None:
    cfg = {"rerank": {"provider": "http", "base_url": rerank_server.url, "api_key": "sk-abc"}}
    with pytest.raises(ConfigError, match="env:VAR"):
        create_reranker(load_config(None, overrides=cfg))


@pytest.mark.parametrize(
    "body",
    [
        "not json at all",
        {"data": []},
        {"results": [{"index": 7, "relevance_score": 1.0}]},
        {"results": [{"index": 0, "relevance_score": "high"}]},
        {"results": [{"index": 0, "relevance_score": 1}, {"index": 0, "relevance_score": 2}]},
        [{"index": 0}],
        {"results": []},
    ],
)
def test_malformed_answers_raise(rerank_server, sleeps, body) -> None:
    rerank_server.enqueue(200, body)
    with pytest.raises(ProviderResponseError):
        HTTPReranker(rerank_server.url, sleep=sleeps).rerank("q", DOCS)


def test_timeout_raises_after_the_configured_tries(rerank_server, sleeps) -> None:
    for _ in range(2):
        rerank_server.enqueue(200, {"results": []}, delay=0.5)
    rr = HTTPReranker(rerank_server.url, timeout=0.1, max_retries=2, sleep=sleeps)
    with pytest.raises(ProviderResponseError, match="timed out after 2 tries"):
        rr.rerank("q", DOCS)
    assert len(sleeps.delays) == 1


def test_missing_documents_rank_last_in_their_order() -> None:
    scores = parse_scores({"results": [{"index": 2, "relevance_score": 0.1}]}, 4, where="t")
    assert scores[2] > scores[0] > scores[1] > scores[3]


def _workspace(root: Path) -> Path:
    write(
        root,
        "memory/notes.md",
        "\n\n".join(
            [
                "weather talk about sun and rain",
                "redis cache settings and port",
                "the redis port is 6379",
            ]
        )
        + "\n",
    )
    return root


def test_search_reorders_by_the_endpoint_and_fails_open(rerank_server, workspace) -> None:
    _workspace(workspace)
    config = load_config(
        workspace, overrides={"rerank": {"provider": "http", "base_url": rerank_server.url}}
    )
    with Memory(workspace, config=config, embedder=FakeEmbedder()) as mem:
        ok = mem.search("redis port 6379", min_score=0.0)
        assert ok.results and ok.results[0].explain["rerank"] is not None
        reranked = [r.explain["rerank"] for r in ok.results]
        assert reranked == sorted(reranked, reverse=True)
        assert "6379" in ok.results[0].snippet
        assert not any("reranker" in w for w in ok.warnings)

        rerank_server.enqueue(500, {"error": "boom"})
        failed = mem.search("redis port 6379", min_score=0.0)
        assert any("reranker http failed, fused order kept" in w for w in failed.warnings)
        assert [r.citation for r in failed.results]  # still answers
        assert all(r.explain["rerank"] is None for r in failed.results)


def test_workspace_config_may_not_choose_a_remote_reranker(workspace) -> None:
    (workspace / ".memdir").mkdir(exist_ok=True)
    (workspace / ".memdir" / "config.toml").write_text('[rerank]\nprovider = "http"\n')
    with pytest.raises(ConfigError, match=r"rerank\.provider"):
        load_config(workspace)
    (workspace / ".memdir" / "config.toml").write_text('[rerank]\nbase_url = "http://evil"\n')
    with pytest.raises(ConfigError, match=r"rerank\.base_url"):
        load_config(workspace)
