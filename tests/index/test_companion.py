"""The companion model's codes kept beside the vectors, on every engine (issue 34)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from memdir import FakeEmbedder
from memdir.config.settings import ChunkingConfig
from memdir.index.manager import IndexManager, IndexSettings
from memdir.workspace.layout import Workspace
from tests.helpers import write
from tests.index.conftest import Backend


class Coder:
    """A deterministic companion: each text's code is its hash's first 8 bytes."""

    model_id = "test-coder-1"

    def __init__(self) -> None:
        self.coded: list[str] = []
        self.fail = False

    def codes(self, texts: Sequence[str]) -> list[bytes]:
        if self.fail:
            raise RuntimeError("the companion broke")
        self.coded += texts
        return [hashlib.sha256(t.encode()).digest()[:8] for t in texts]


def _manager(backend: Backend, root: Path, coder: Coder | None) -> IndexManager:
    settings = IndexSettings(chunking=ChunkingConfig(structure=False), url=backend.url)
    mgr = IndexManager(Workspace(root), embedder=FakeEmbedder(), settings=settings, companion=coder)
    backend.managers.append(mgr)
    return mgr


def _all_seqs(mgr: IndexManager) -> list[int]:
    seqs, _ = mgr.read(lambda store: store.all_vectors())
    return [int(s) for s in seqs]


def test_every_embedded_chunk_gets_its_code(backend: Backend, workspace: Path) -> None:
    write(
        workspace, "memory/2026-11-01.md", "- 会员积分改版定在 1 月 15 日上线\n- redis port 6380\n"
    )
    coder = Coder()
    mgr = _manager(backend, workspace, coder)
    mgr.sync()
    seqs = _all_seqs(mgr)
    codes = mgr.companion_codes(seqs)
    assert set(codes) == set(seqs) and len(seqs) > 0
    rows = mgr.read(lambda store: store.chunks_by_seq(seqs))
    for seq, code in codes.items():
        assert code == hashlib.sha256(rows[seq].text.encode()).digest()[:8]
    assert mgr.counts()["companion_codes"] == len(set(coder.coded))


def test_chunks_embedded_without_a_companion_are_coded_later(
    backend: Backend, workspace: Path
) -> None:
    write(workspace, "memory/a.md", "\n".join(f"- fact number {i} about kafka" for i in range(40)))
    mgr = _manager(backend, workspace, None)
    mgr.sync()
    mgr.close()
    coder = Coder()
    again = _manager(backend, workspace, coder)
    report = again.sync()
    assert report.embedded == 0  # the vectors are there: only the codes are made
    seqs = _all_seqs(again)
    assert set(again.companion_codes(seqs)) == set(seqs)


def test_a_failing_companion_never_stops_indexing(backend: Backend, workspace: Path) -> None:
    write(workspace, "memory/a.md", "- the staging database listens on port 5433\n")
    coder = Coder()
    coder.fail = True
    mgr = _manager(backend, workspace, coder)
    report = mgr.sync()
    assert report.embedded > 0 and report.pending_vectors == 0
    assert mgr.companion_codes(_all_seqs(mgr)) == {}
    coder.fail = False
    mgr.sync()  # nothing changed: the codes are made now
    assert len(mgr.companion_codes(_all_seqs(mgr))) == len(_all_seqs(mgr))


def test_codes_survive_a_rebuild(backend: Backend, workspace: Path) -> None:
    write(workspace, "memory/a.md", "- 订单服务负责人：王伟\n- owner of kafka: Tomás\n")
    coder = Coder()
    mgr = _manager(backend, workspace, coder)
    mgr.sync()
    coded = len(coder.coded)
    mgr.sync(force=True)
    assert len(coder.coded) == coded  # every text's code came back from the old index
    assert len(mgr.companion_codes(_all_seqs(mgr))) == len(_all_seqs(mgr))
