"""The answer line (``search/answers.py``): what a question asks for, which line of a window
holds it, and the passage holding it shown first."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory
from memdir.search.answers import answer_first, answer_lines, asked_slot, holds_slot
from tests.helpers import write

LOCK = (
    "- 讨论了订单服务的并发问题，决定使用 Redis 分布式锁（SET NX PX 30000），"
    "锁的 key 前缀是 lock:order:。"
)
PORT = (
    "- Decided to keep session tokens in Redis with a 24h TTL; the cache cluster listens on "
    "port 6380, not the default 6379."
)
WEIGHTS = {"redi": 1.0, "分布式": 1.0, "端口": 1.0, "port": 0.8}


@pytest.mark.parametrize(
    ("question", "slot"),
    [
        ("Redis 分布式锁用哪个端口?", "port"),
        ("which port does staging listen on", "port"),
        ("When does the membership points redesign launch?", "time"),
        ("会员积分改版什么时候上线？", "time"),
        ("谁负责订单服务", "owner"),
        ("who owns the kafka cluster", "owner"),
        ("what version of Kafka do we run", "version"),
        ("how many replicas does the ledger have", "amount"),
        ("What did Caroline research?", None),
        ("Redis 分布式锁", None),
    ],
)
def test_what_a_question_asks_for(question: str, slot: str | None) -> None:
    found = asked_slot(question)
    assert (found.name if found else None) == slot


def test_a_line_holds_a_port_by_name_or_by_value() -> None:
    port = asked_slot("which port")
    assert port is not None
    assert holds_slot(port, PORT)
    assert holds_slot(port, "- db: db-prod-01.internal:5432")
    assert not holds_slot(port, LOCK)  # PX 30000 is a lock timeout, not a port


@pytest.mark.parametrize(
    ("line", "held"),
    [
        ("- Staging Redis listens on port 6380.", True),  # a sentence ends after the number
        ("- 分布式锁用 Redis 的端口6381，续约 10 秒", True),  # Chinese written against it
        ("- bumped the client to 1.6380.2", False),  # part of a version
        ("- listens on 6380.5", False),
        ("- the port is v6380", False),  # part of a word
    ],
)
def test_a_port_number_stands_on_its_own(line: str, held: bool) -> None:
    """A port at the end of a sentence ("port 6380.") was not a value: answer-first then moved
    a Chinese note with another port above the English one that answered."""
    values = asked_slot("which port does staging redis listen on")
    assert values is not None
    assert bool(values.value.search(line)) is held


def test_the_window_cites_the_line_that_answers() -> None:
    window = ["# 2026-11-27", "", "- Standup: Alice moves billing to Postgres 16.", PORT, "- Bob"]
    assert answer_lines(window, WEIGHTS, asked_slot("Redis 用哪个端口")) == (3, 3)
    # no line holds a word of the question: the whole window answers (a hit by meaning)
    assert answer_lines(window, {"kafka": 1.0}, None) is None


def test_the_passage_holding_what_is_asked_comes_first() -> None:
    slot = asked_slot("Redis 分布式锁用哪个端口?")
    passages = [["# 2026-11-28", LOCK], ["# 2026-11-27", "- Standup", PORT]]
    assert answer_first(passages, WEIGHTS, slot) == 1
    assert answer_first(list(reversed(passages)), WEIGHTS, slot) is None  # already first
    assert answer_first(passages, WEIGHTS, None) is None  # nothing asked: the order stays
    # a later passage with a port but none of the question's words is not an answer
    assert answer_first([["# a", LOCK], ["- nginx listens on port 8080"]], WEIGHTS, slot) is None


def test_a_daily_log_hit_cites_its_answer_line(workspace: Path) -> None:
    write(
        workspace,
        "memory/2026-11-27.md",
        "# 2026-11-27\n\n- Standup: Alice is moving billing to Postgres 16.\n"
        "- The cache cluster listens on port 6380, not the default 6379.\n"
        "- Bob prefers code reviews in the morning.\n",
    )
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        top = mem.search("which port does the cache cluster listen on").results[0]
    assert top.path == "memory/2026-11-27.md"
    assert top.citation == "memory/2026-11-27.md#L4-L4"
    assert (top.start_line, top.end_line) == (1, 5)  # the window stays the snippet
    assert "Bob prefers" in top.snippet and top.explain["window"] == "L1-L5"
