"""Sources before echoes (memdir.search.echoes): a session archive or a later note that quotes a
line ranks below the note it quotes."""

from __future__ import annotations

from pathlib import Path

from memdir import FakeEmbedder, Memory
from memdir.search.echoes import normalise, quotable_lines, source_rank
from tests.helpers import write

FACT = "- Use Postgres advisory locks (not Redis locks) for the ledger batch job."
ARCHIVE = (
    "# Session 2026-11-20 14:05\n\n- date: 2026-11-20 14:05\n- session: 7f3c\n- source: chat\n"
    "- archived: 2026-11-20 14:41\n- messages: the last 2\n\n## Conversation\n\n"
    "**user:**\nwhich lock does the ledger batch job use?\n\n"
    f"**assistant:**\nAccording to MEMORY.md:\n{FACT}\n"
)


def test_source_ranks_and_normalised_lines() -> None:
    assert source_rank("MEMORY.md") < source_rank("memory/2026-11-19.md")
    assert source_rank("memory/2026-11-19.md") < source_rank("memory/2026-11-20.md")
    assert source_rank("memory/2026-11-20.md") < source_rank("memory/2026-11-01-lock.md")
    assert normalise("  -   Use  Postgres ") == "use postgres"
    assert quotable_lines("# heading line that is long\n- ok\n- a line long enough here") == (
        "a line long enough here",
    )


def test_an_archive_that_quotes_a_note_ranks_below_it(workspace: Path) -> None:
    memory = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    (workspace / "MEMORY.md").write_text(
        memory.replace("## Decisions\n", f"## Decisions\n{FACT}\n"), encoding="utf-8"
    )
    write(workspace, "memory/2026-11-20-ledger-lock.md", ARCHIVE)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        results = mem.search("which lock does the ledger batch job use", min_score=0.0).results
    paths = [r.path for r in results]
    assert paths.index("MEMORY.md") < paths.index("memory/2026-11-20-ledger-lock.md")
    source = results[paths.index("MEMORY.md")]
    echo = results[paths.index("memory/2026-11-20-ledger-lock.md")]
    assert echo.explain["echo_of"] == source.citation
    assert echo.score <= source.score
    assert source.explain["echo_of"] is None


def test_a_note_that_only_shares_words_is_not_an_echo(workspace: Path) -> None:
    write(workspace, "memory/ledger.md", "- The ledger batch job runs at 02:00.\n")
    write(workspace, "memory/2026-11-20.md", "- Moved the ledger batch job to 03:30 today.\n")
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        results = mem.search("when does the ledger batch job run", min_score=0.0).results
    assert all(r.explain["echo_of"] is None for r in results)
