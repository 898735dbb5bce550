"""Search as people meet it: notes dropped in and searched before ``memdir index``, notes too
large to embed, and the warnings that say vectors were pending (issue #12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.config.settings import load_config
from memdir.index import sync as index_sync
from tests.helpers import write

NOTES = {
    "MEMORY.md": "# Long-term memory\n\n## Decisions\n\n"
    "- Use Postgres advisory locks for the ledger batch job.\n"
    "- Release notes go to the merchant changelog.\n",
    "memory/2026-11-02.md": "# 2026-11-02\n\n- Upgraded the Go toolchain; golangci-lint needed "
    "v1.62.\n- Lunch with Marco about dark mode.\n",
    "memory/2026-11-05.md": "# 2026-11-05\n\n- The TLS certificate for the API expires in "
    "January; renewal ticket OPS-812.\n- Reviewed the payout scheduler.\n",
    "memory/2026-11-06.md": "# 2026-11-06\n\n- Redis memory grew to 80% because session keys "
    "had no expiry.\n- 周会结论：发票功能推迟到明年一月。\n",
    "memory/infra.md": "# Infra\n\n- Staging Kafka listens on kafka-stg.internal:9093 with SASL.\n"
    "- Grafana dashboards live in the Harbor folder.\n",
    "memory/people.md": "# People\n\n- Priya owns the settlement service.\n"
    "- 陈静是产品经理，负责商户后台。\n",
    "skills/deploy/SKILL.md": "# Deploy\n\n1. Run make deploy with a ten percent canary.\n"
    "2. Roll back with make rollback.\n",
}
QUERIES = [
    "advisory locks ledger batch",
    "golangci-lint version",
    "TLS certificate renewal ticket",
    "redis memory session expiry",
    "kafka staging address",
    "who owns the settlement service",
    "发票功能什么时候做",
    "商户后台产品经理",
    "how do I roll back a deploy",
]


def _workspace(root: Path) -> Path:
    for rel, text in NOTES.items():
        write(root, rel, text)
    return root


def _answers(mem: Memory) -> list[list[tuple[str, int]]]:
    return [[(r.path, r.start_line) for r in mem.search(q, max_results=3).results] for q in QUERIES]


def test_the_same_answers_before_and_after_memdir_index(tmp_path: Path) -> None:
    """Searched straight after the notes are copied in, with no vector computed at all (the
    on-the-spot budget is 0), the answers are the ones a fully embedded index gives."""
    root = _workspace(tmp_path / "ws")
    config = load_config(root, {"search": {"embed_candidates": 0}})
    with Memory(root, config=config, embedder=FakeEmbedder()) as mem:
        before = _answers(mem)
        assert mem.index.counts()["vectors"] == 0
        mem.sync()
        assert mem.index.counts()["pending_vectors"] == 0
        after = _answers(mem)
    assert [b[0] for b in before] == [a[0] for a in after]  # the best answer of every query
    assert sum(set(b) == set(a) for b, a in zip(before, after, strict=True)) >= len(QUERIES) - 1


def test_a_search_embeds_its_best_candidates_within_the_budget(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    embedder = FakeEmbedder()
    config = load_config(root, {"search": {"embed_candidates": 2}})
    with Memory(root, config=config, embedder=embedder) as mem:
        response = mem.search("renewal ticket OPS-812, kafka SASL, redis expiry")
        counts = mem.index.counts()
    assert counts["vectors"] == 2 and counts["pending_vectors"] == counts["chunks"] - 2
    assert sum(embedder.calls) == 2
    assert response.index["estimated_vectors"] >= 1  # the third keyword match
    assert any(not r.explain["vector_estimated"] for r in response.results)


def test_pending_vectors_are_said_in_the_warnings_and_the_index_block(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    config = load_config(root, {"search": {"embed_candidates": 0}})
    with Memory(root, config=config, embedder=FakeEmbedder()) as mem:
        response = mem.search("kafka staging address").to_dict(explain=True)
        assert response["index"]["estimated_vectors"] > 0
        assert response["index"]["pending_vectors"] == response["index"]["chunks"]
        [warning] = [w for w in response["warnings"] if "pending" in w]
        assert "ranked while vectors were pending" in warning and "memdir index" in warning
        assert response["results"][0]["explain"]["vector_estimated"] is True
        mem.sync()
        done = mem.search("kafka staging address")
    assert not [w for w in done.warnings if "pending" in w]
    assert done.index["estimated_vectors"] == 0


def test_search_never_embeds_beyond_its_candidates(tmp_path: Path) -> None:
    """The refresh before a search indexes files only; the old fixed on-search embed of 16
    chunks is gone (a search after a big paste no longer waits for the model)."""
    root = _workspace(tmp_path / "ws")
    for day in range(10, 30):
        write(root, f"memory/2026-10-{day}.md", f"# 2026-10-{day}\n\n- routine entry {day}\n")
    embedder = FakeEmbedder()
    config = load_config(root, {"search": {"embed_candidates": 3}})
    with Memory(root, config=config, embedder=embedder) as mem:
        mem.search("kafka staging address")
        assert sum(embedder.calls) <= 3
        assert mem.index.counts()["pending_vectors"] > 20


def test_a_note_too_large_to_embed_ranks_like_any_keyword_hit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _workspace(tmp_path / "ws")
    filler = "\n".join(f"- export line {i}: status update for the channel" for i in range(400))
    write(root, "memory/export.md", f"# Export\n\n{filler}\n- the vault code is QX-7731\n")
    monkeypatch.setattr(index_sync, "EMBED_MAX_BYTES", 4_000)
    with Memory(root, embedder=FakeEmbedder()) as mem:
        mem.sync()
        assert "too large to embed" in mem.status()["file_warnings"]["memory/export.md"]
        assert mem.index.counts()["pending_vectors"] == 0  # never embedded, never pending
        hits = mem.search("QX-7731").results
        question = mem.search("what is the vault code QX-7731").results
        other = mem.search("kafka staging address").results
    assert hits[0].path == "memory/export.md" and "QX-7731" in hits[0].snippet
    assert question[0].path == "memory/export.md"
    assert other[0].path == "memory/infra.md"
