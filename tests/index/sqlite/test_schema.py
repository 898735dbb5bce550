"""The SQLite index schema's migrations: an index of schema 1 (vectors stored twice, as float32)
becomes schema 2 once, and the rebuild that follows embeds nothing again."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

import numpy as np

from memdir import FakeEmbedder, Memory
from memdir.config.settings import ChunkingConfig, load_config
from memdir.index.sqlite.codec import FLOAT16, INT8
from memdir.index.sqlite.schema import CENTRE_AFTER, MIGRATIONS, SCHEMA_VERSION
from memdir.index.sync import chunk_file
from memdir.markdown.greedy import chunk_greedy
from tests.helpers import write


def _schema_1_index(root: Path, texts: list[str], embedder: FakeEmbedder) -> Path:
    """An index file as memdir wrote it before schema 2, its cache holding ``texts``."""
    db = root / ".memdir" / "index.sqlite"
    db.parent.mkdir(exist_ok=True)
    conn = sqlite3.connect(db)
    first = MIGRATIONS[0]
    assert isinstance(first, str)
    conn.executescript(first)
    vectors = embedder.embed_documents(texts)
    conn.executemany(
        "INSERT INTO embedding_cache(provider, model, provider_key, hash, dims, embedding, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                embedder.provider,
                embedder.model_id,
                embedder.provider_key,
                hashlib.sha256(t.encode()).hexdigest(),
                embedder.dims,
                np.asarray(v, dtype=np.float32).tobytes(),
                time.time(),
            )
            for t, v in zip(texts, vectors, strict=True)
        ],
    )
    conn.execute("INSERT INTO meta(key, value) VALUES ('identity', '{}')")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    return db


def _chunks(text: str, path: str) -> list[str]:
    """The chunk texts of file ``path`` holding ``text`` with the default chunking."""
    return [c.text for c in chunk_file(path, text, ChunkingConfig())]


def test_a_schema_1_index_is_migrated_and_rebuilt_without_embedding_again(
    workspace: Path,
) -> None:
    texts = []
    for i in range(40):
        body = f"# note {i}\nthe heron {i} nests by pond {i}\n"
        write(workspace, f"memory/n{i}.md", body)
        texts += _chunks(body, f"memory/n{i}.md")
    texts += _chunks((workspace / "MEMORY.md").read_text(), "MEMORY.md")
    texts += [f"an old chunk {i} no file has any more" for i in range(40)]
    db = _schema_1_index(workspace, texts, FakeEmbedder())

    embedder = FakeEmbedder()
    with Memory(workspace, embedder=embedder) as mem:
        report = mem.sync()
        assert report.embedded == 0 and sum(embedder.calls) == 0
        status = mem.status()
        assert status["chunks"] == status["vectors"] >= 40 and status["pending_vectors"] == 0
        assert status["cached_embeddings"] == len(set(texts))
        assert mem.search("heron 7 nests").results[0].path == "memory/n7.md"

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not tables & {"vectors", "embedding_cache"}
    # More than CENTRE_AFTER vectors: the model got a centre and its vectors are int8.
    assert len(texts) > CENTRE_AFTER
    formats = {r[0][0] for r in conn.execute("SELECT vector FROM embeddings")}
    assert formats == {INT8}
    conn.close()


def test_few_vectors_stay_float16(workspace: Path) -> None:
    write(workspace, "memory/a.md", "a short note\n")
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
    conn = sqlite3.connect(workspace / ".memdir" / "index.sqlite")
    formats = {r[0][0] for r in conn.execute("SELECT vector FROM embeddings")}
    centre = conn.execute("SELECT centre FROM embedding_models").fetchone()[0]
    conn.close()
    assert formats == {FLOAT16} and centre is None


def _long_note(i: int) -> str:
    """A note of several chunks, with headings and paragraphs where content-defined
    boundaries fall elsewhere than greedy ones."""
    parts = []
    for s in range(6):
        parts.append(f"## part {s} of note {i}\n")
        parts += [f"- the heron {i} saw fish {s}.{n} near the old mill pond" for n in range(9)]
        parts.append("")
    return "\n".join(parts) + "\n"


def test_an_index_built_greedily_stays_greedy_on_upgrade(workspace: Path) -> None:
    """``[chunking] boundaries = "auto"``: a vault indexed before content-defined chunking
    keeps its chunks, so upgrading embeds nothing; asking for ``content`` re-cuts it."""
    config = ChunkingConfig()
    texts: list[str] = []
    for i in range(4):
        body = _long_note(i)
        write(workspace, f"memory/n{i}.md", body)
        texts += [c.text for c in chunk_greedy(body, max_tokens=200, overlap_tokens=120)]
        assert len(_chunks(body, f"memory/n{i}.md")) > 2
        assert set(_chunks(body, f"memory/n{i}.md")) != {c.text for c in chunk_greedy(body)}
    texts += [c.text for c in chunk_greedy((workspace / "MEMORY.md").read_text())]
    db = _schema_1_index(workspace, texts, FakeEmbedder())
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'identity'", ('{"chunker": "2"}',))
    conn.commit()
    conn.close()

    embedder = FakeEmbedder()
    with Memory(workspace, embedder=embedder) as mem:
        assert mem.index.chunking.boundaries == "greedy"
        assert mem.sync().embedded == 0 and sum(embedder.calls) == 0
        assert mem.search("heron 2 fish 3.4").results[0].path == "memory/n2.md"
    # a later process, a forced rebuild: still greedy, still nothing to embed
    with Memory(workspace, embedder=embedder) as mem:
        assert mem.sync(force=True).embedded == 0 and sum(embedder.calls) == 0

    content = load_config(None, overrides={"chunking": {"boundaries": "content"}})
    with Memory(workspace, config=content, embedder=embedder) as mem:
        assert mem.index.chunking.boundaries == "content"
        assert mem.sync().embedded > 0
    # back to "auto": the index is content-defined now, and stays so
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        assert mem.index.chunking.boundaries == "content"
        assert config.boundaries == "auto"


def test_a_new_index_is_content_defined(workspace: Path) -> None:
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.sync()
        assert mem.index.chunking.boundaries == "content"
