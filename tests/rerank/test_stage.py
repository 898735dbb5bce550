"""The rerank stage inside a real search: order, explain, min_score, failing open; the line
features it computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memdir import FakeEmbedder, Memory
from memdir.config.settings import load_config
from memdir.errors import ProviderResponseError
from memdir.rerank.base import FEATURES
from memdir.rerank.fake import ScriptedReranker
from memdir.search.features import candidate_features, line_key, score_lines
from tests.helpers import write

NOTES = {
    "memory/redis.md": "redis runs on port 6379\nredis keeps the session cache\n",
    "memory/kafka.md": "kafka topic orders has 12 partitions\nkafka runs on port 9092\n",
    "memory/misc.md": "lunch was pasta\nthe weather was grey\n",
}


@pytest.fixture
def ws(workspace: Path) -> Path:
    for path, text in NOTES.items():
        write(workspace, path, text)
    return workspace


def _memory(ws: Path, reranker: ScriptedReranker, **search) -> Memory:  # type: ignore[no-untyped-def]
    config = load_config(ws, overrides={"search": {"split_queries": "off", **search}})
    return Memory(ws, config=config, embedder=FakeEmbedder(), reranker=reranker)


def test_results_follow_the_reranker_and_keep_the_fused_score(ws: Path) -> None:
    prefer_kafka = ScriptedReranker(lambda q, doc: 1.0 if "kafka" in doc.text else 0.0)
    with _memory(ws, prefer_kafka) as mem:
        # (a question asking for a port would put the note holding redis's port first:
        # search/answers.py, after the reranker)
        response = mem.search("where does redis run", min_score=0.0)
    assert response.results[0].path == "memory/kafka.md"
    assert response.results[0].explain["rerank"] == 1.0
    query, docs = prefer_kafka.calls[0]
    assert query == "where does redis run"
    assert set(docs[0].features) == set(FEATURES)
    by_path = {hit.path: hit for hit in response.results}
    # the score stays the fused one: redis matched the question better, kafka is first anyway
    assert by_path["memory/redis.md"].score > by_path["memory/kafka.md"].score


def test_min_score_still_applies_after_reranking(ws: Path) -> None:
    for threshold in (0.2, 0.4, 0.6):
        kept = []
        for rule in (lambda q, doc: 1.0, lambda q, doc: -1.0):
            with _memory(ws, ScriptedReranker(rule)) as mem:
                found = mem.search("which port does redis use", min_score=threshold)
            kept.append({h.citation for h in found.results})
            assert not any(
                "passed min_score" not in w and h.score < threshold
                for h in found.results
                for w in found.warnings
            )
        assert kept[0] == kept[1]  # the reranker's opinion lets nothing in or out


def test_failures_and_wrong_lengths_keep_the_fused_order(ws: Path) -> None:
    rr = ScriptedReranker()
    plain = load_config(ws, overrides={"rerank": {"provider": "none"}})
    with Memory(ws, config=plain, embedder=FakeEmbedder()) as mem:
        assert mem.reranker is None
        baseline = [h.citation for h in mem.search("redis port", min_score=0.0).results]
    with _memory(ws, rr) as mem:
        rr.enqueue(ProviderResponseError("server said no"))
        failed = mem.search("redis port", min_score=0.0)
        rr.enqueue([1.0])
        short = mem.search("redis port", min_score=0.0)
    assert [h.citation for h in failed.results] == baseline
    assert any("server said no" in w and "fused order kept" in w for w in failed.warnings)
    assert any("returned 1 scores" in w for w in short.warnings)
    assert all(h.explain["rerank"] is None for h in failed.results)


def test_top_n_limits_what_the_reranker_sees(ws: Path) -> None:
    rr = ScriptedReranker()
    config = load_config(ws, overrides={"rerank": {"top_n": 2}, "search": {"split_queries": "off"}})
    with Memory(ws, config=config, embedder=FakeEmbedder(), reranker=rr) as mem:
        mem.search("redis port kafka weather", min_score=0.0)
    assert len(rr.calls[0][1]) == 2


def test_local_reranker_is_skipped_in_keyword_only_mode(ws: Path) -> None:
    local = ScriptedReranker(remote=False)
    config = load_config(ws, overrides={"embedding": {"provider": "none"}})
    with Memory(ws, config=config, reranker=local) as mem:
        assert mem.search("redis port").results
    assert local.calls == []
    remote = ScriptedReranker(remote=True)
    with Memory(ws, config=config, reranker=remote) as mem:
        mem.search("redis port")
    assert len(remote.calls) == 1


def test_several_queries_each_get_places(ws: Path) -> None:
    with _memory(ws, ScriptedReranker(lambda q, d: 0.0), max_results=2) as mem:
        response = mem.search(["redis session cache", "kafka partitions"], min_score=0.0)
    assert response.queries == ["redis session cache", "kafka partitions"]
    assert {h.path for h in response.results} == {"memory/redis.md", "memory/kafka.md"}


def test_line_scores_pick_the_best_line_and_fall_back_without_vectors() -> None:
    emb = FakeEmbedder()
    lines = ["the weather was grey", "redis runs on port 6379", ""]
    text = "\n".join(lines)
    vectors = {line_key(t): emb.embed_documents([t])[0] for t in lines if t}
    q = emb.embed_query("redis port")
    weights = {"redi": 1.0, "port": 1.0}
    [scored] = score_lines([text], q, weights, lambda keys: vectors, [0.1])
    assert scored.focus == 1
    assert scored.cosine[2] is None and scored.coverage[1] == 1.0
    [blind] = score_lines([text], q, weights, lambda keys: {}, [0.1])
    assert blind.cosine == [None, None, None] and blind.focus == 1  # coverage decides
    feats = candidate_features(
        [text, "x"], [0.5, 0.2], [0.1, 0.05], [0.3, 0.0], [scored, blind], weights
    )
    assert feats[0]["line_cos"] == pytest.approx(max(c for c in scored.cosine if c is not None))
    assert feats[1]["line_cos"] == pytest.approx(0.05)  # no line vector: the chunk's cosine
    assert feats[1]["fused_gap"] == pytest.approx(-0.3) and feats[0]["rank"] == 1.0
    assert np.isfinite([v for f in feats for v in f.values()]).all()


def test_snippets_are_centred_on_the_focus_line(workspace: Path) -> None:
    body = "\n".join(f"- filler line {i} about nothing in particular at all" for i in range(30))
    body += "\n- the deploy key lives in vault under ops/deploy\n"
    body += "\n".join(f"- more filler {i} about nothing in particular at all" for i in range(30))
    write(workspace, "memory/long.md", body + "\n")
    config = load_config(
        workspace, overrides={"search": {"snippet_chars": 200, "centre_snippets": True}}
    )
    with Memory(workspace, config=config, embedder=FakeEmbedder()) as mem:
        response = mem.search("where is the deploy key", min_score=0.0)
    top = response.results[0]
    assert "deploy key lives in vault" in top.snippet
    assert top.explain["focus_line"] == 31
