"""Sources before echoes (memdir.search.echoes): a session archive or a later note that quotes a
line ranks below the note it quotes."""

from __future__ import annotations

from pathlib import Path

from memdir import FakeEmbedder, Memory
from memdir.index.base import ChunkRow
from memdir.search.echoes import find_echoes, normalise, quotable_lines, restates, source_rank
from memdir.search.relevance import result_parts
from memdir.search.types import Candidate
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


PARAPHRASE = (
    "# Session 2026-11-26 10:00\n\n- date: 2026-11-26 10:00\n- session: 1a2b\n"
    "- source: claude-code\n- archived: 2026-11-26 10:20\n- messages: the last 2\n\n"
    "## Conversation\n\n**user:**\nwhat port is the prod db on?\n\n**assistant:**\n"
    "The production database is PostgreSQL 15, host db-prod-01.internal, listening on "
    "port 5432.\n"
)
DB_FACT = "- Production database: PostgreSQL 15 on db-prod-01.internal:5432"


def test_restating_a_line_needs_its_numbers_and_most_of_its_words() -> None:
    assert restates(PARAPHRASE, DB_FACT)
    # a later note that changes a number is an update, not an echo
    assert not restates(PARAPHRASE.replace("5432", "5433"), DB_FACT)
    # the same subject without the line's words
    assert not restates("We talked about the production database migration.", DB_FACT)
    assert not restates(PARAPHRASE, "- prod db: 5432")  # too few words to tell
    assert restates(
        "订单服务负责人是王伟，值班表在 wiki 的 oncall 页面",
        "- 订单服务的负责人是王伟，值班表在 wiki 的 oncall 页面。",
    )


def test_an_archive_that_restates_a_note_is_its_echo(workspace: Path) -> None:
    memory = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    (workspace / "MEMORY.md").write_text(
        memory.replace("## Project facts\n", f"## Project facts\n{DB_FACT}\n"), encoding="utf-8"
    )
    write(workspace, "memory/2026-11-26-db-port.md", PARAPHRASE)
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        results = mem.search("what port is the prod db on", min_score=0.0).results
    paths = [r.path for r in results]
    assert paths.index("MEMORY.md") < paths.index("memory/2026-11-26-db-port.md")
    echo = results[paths.index("memory/2026-11-26-db-port.md")]
    assert echo.explain["echo_of"] == results[paths.index("MEMORY.md")].citation


def _cand(seq: int, path: str, text: str, vector: float, score: float = 0.0) -> Candidate:
    row = ChunkRow(seq, f"c{seq}", path, "memory", 1, 1, text)
    return Candidate(row, vector=vector, text=score, has_vector=True)


def test_an_echo_never_lowers_the_lead_of_the_note_it_repeats() -> None:
    source = _cand(1, "MEMORY.md", DB_FACT, 0.86, 0.4)
    echo = _cand(2, "memory/2026-11-26-db-port.md", PARAPHRASE, 0.88, 0.6)
    other = _cand(3, "memory/2026-11-25.md", "- Reviewed the Grafana alert thresholds.", 0.80)
    ranked = [echo, source, other]
    echoes = find_echoes(ranked)
    assert echoes == {2: source}
    alone = result_parts([source, other], 0.0, {})[0]
    with_echo = result_parts(ranked, 0.0, {}, echoes)[1]
    assert with_echo["lead"] == alone["lead"] > 0  # as if the echo were not there
    assert with_echo["text_share"] == alone["text_share"] == 1.0
    # without knowing its echoes the note would trail the archive
    assert result_parts(ranked, 0.0, {})[1]["lead"] < 0
