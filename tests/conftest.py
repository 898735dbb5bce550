"""Shared fixtures: an isolated MEMDIR_HOME, a temp workspace, the fake embedder, a clock."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory, init_workspace

_SECRET_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OLLAMA_HOST",
    "MEMDIR_EMBEDDING_BASE_URL",
    "MEMDIR_LLM_API_KEY",
    "MEMDIR_LLM_BASE_URL",
    "MEMDIR_WORKSPACE",
    "MEMDIR_NOW",
    "MEMDIR_DEBUG",
    "MEMDIR_INDEX_URL",
    "MEMDIR_RERANK_BASE_URL",
    "MEMDIR_RERANK_MODEL",
    "MEMDIR_RERANK_API_KEY",
)


def pytest_configure(config: pytest.Config) -> None:
    """Run as a background job (``cmd &`` in a script, ``nohup``), pytest starts with SIGINT
    ignored, and every process a test starts inherits that: the tests that press Ctrl-C on
    ``memdir watch`` or ``memdir ui`` then wait for ever. Ctrl-C is caught here instead, which
    a child's exec turns back into the default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point MEMDIR_HOME at a temp folder and remove API keys from the environment."""
    home = tmp_path / "memdir-home"
    home.mkdir()
    monkeypatch.setenv("MEMDIR_HOME", str(home))
    # No test process talks to, or starts, a per-user service unless it asks for one
    # (tests/service/).
    monkeypatch.setenv("MEMDIR_SERVICE", "off")
    for var in _SECRET_VARS:
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh English workspace made by ``init_workspace``."""
    root, _ = init_workspace(tmp_path / "ws", "en")
    return root


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def memory(workspace: Path, fake_embedder: FakeEmbedder) -> Iterator[Memory]:
    """A Memory over ``workspace`` with the fake embedder."""
    with Memory(workspace, embedder=fake_embedder) as mem:
        yield mem


@pytest.fixture
def full_looks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the looks at every file the index's freshness check makes (its ``scan_dirty``
    calls: a sync's, or a search's)."""
    import memdir.index.freshness as freshness

    calls: list[int] = []
    real = freshness.scan_dirty

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(freshness, "scan_dirty", counting)
    return calls
