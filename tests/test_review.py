"""memdir review: duplicates, contradictions, old todos, budget, never recalled, not indexed."""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

import pytest

from memdir import FakeEmbedder, Memory, PathNotAllowed, QueryError
from memdir.review import Fact, contradictions, near_duplicates, parse_since
from tests.helpers import write

NOW = datetime(2026, 12, 2, 10, 0)


def fact(path: str, line: int, text: str, recent: bool = True) -> Fact:
    return Fact(path, line, text, recent)


def test_parse_since() -> None:
    assert parse_since("7d", NOW) == datetime(2026, 11, 25, 10, 0)
    assert parse_since("2w", NOW) == datetime(2026, 11, 18, 10, 0)
    assert parse_since("all", NOW) is None
    assert parse_since("2026-11-01", NOW) == datetime(2026, 11, 1)
    with pytest.raises(ValueError):
        parse_since("soon", NOW)


def test_near_duplicates_need_a_recent_side_and_skip_the_promotion_source() -> None:
    a = fact("memory/2026-11-20.md", 3, "- The staging Redis cluster listens on port 6380")
    b = fact("MEMORY.md", 9, "- The staging Redis cluster listens on port 6380 today")
    other = fact("memory/2026-11-21.md", 3, "- Lunch was at noon with the whole team")
    [pair] = near_duplicates([a, b, other])
    assert {pair.a.citation, pair.b.citation} == {a.citation, b.citation}
    old = [fact(f.path, f.line, f.text, recent=False) for f in (a, b)]
    assert near_duplicates(old) == []
    promoted = fact(
        "MEMORY.md",
        12,
        "- The staging Redis cluster listens on port 6380 "
        "<!-- memdir:promoted memory/2026-11-20.md#L3-L3 key=abcdef123456 -->",
    )
    assert near_duplicates([a, promoted]) == []


@pytest.mark.parametrize(
    ("one", "two", "kind", "values"),
    [
        (
            "The staging Redis listens on port 6380",
            "staging redis port is 6379",
            "port",
            ("6380", "6379"),
        ),
        (
            "Bob owns the deploy pipeline",
            "The deploy pipeline is owned by Alice",
            "owner",
            ("bob", "alice"),
        ),
        (
            "The billing service runs Postgres 16.2",
            "billing service runs Postgres 15.4",
            "version",
            ("16.2", "15.4"),
        ),
        (
            "The launch of the mobile app is on 2026-12-10",
            "mobile app launch is on 2026-12-17",
            "date",
            ("2026-12-10", "2026-12-17"),
        ),
        ("订单服务的端口是 8080", "订单服务端口为 8081", "port", ("8080", "8081")),
        # As people write Chinese: a change stated as such, names without spaces.
        (
            "支付服务 payment-service 的端口是 9090",
            "payment-service 端口改成了 9095",
            "port",
            ("9090", "9095"),
        ),
        ("青鸟负责人陈静", "青鸟项目负责人是王伟", "owner", ("陈静", "王伟")),
        ("订单服务由李娜负责", "订单服务现在是张强负责", "owner", ("李娜", "张强")),
        ("网关的版本升级到了 2.3.1", "网关版本是 2.4.0", "version", ("2.3.1", "2.4.0")),
        (
            "青鸟上线时间定在 2026-12-01",
            "青鸟的上线日期推迟到 2026-12-15",
            "date",
            ("2026-12-01", "2026-12-15"),
        ),
    ],
)
def test_contradictions(one: str, two: str, kind: str, values: tuple[str, str]) -> None:
    [pair] = contradictions([fact("a.md", 1, f"- {one}"), fact("b.md", 2, f"- {two}")])
    assert pair.kind == kind and pair.values == values


def test_chinese_owners_of_different_projects_are_not_a_contradiction() -> None:
    facts = [fact("a.md", 1, "- 青鸟项目负责人是王伟"), fact("b.md", 1, "- 北极星项目负责人是陈静")]
    assert contradictions(facts) == []
    ports = [fact("a.md", 1, "- 订单服务端口是 8080"), fact("b.md", 1, "- 风控服务端口是 7443")]
    assert contradictions(ports) == []


def test_no_contradiction_for_other_subjects_or_a_line_with_both_values() -> None:
    assert (
        contradictions(
            [
                fact("a.md", 1, "- Redis listens on port 6380"),
                fact("b.md", 1, "- Nginx listens on port 443"),
            ]
        )
        == []
    )
    assert (
        contradictions(
            [
                fact("a.md", 1, "- The staging Redis listens on port 6380, not 6379"),
                fact("b.md", 1, "- The staging Redis listens on port 6379"),
            ]
        )
        == []
    )


def test_review_end_to_end(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDIR_NOW", NOW.isoformat())
    write(
        workspace,
        "memory/2026-11-01.md",
        "# 2026-11-01\n\n- [ ] renew the TLS certificate for api.example.org\n"
        "- Water the office plants every Monday morning\n",
    )
    write(
        workspace,
        "memory/2026-11-30.md",
        "# 2026-11-30\n\n- The staging Redis listens on port 6380\n",
    )
    memory_md = workspace / "MEMORY.md"
    memory_md.write_text(
        memory_md.read_text(encoding="utf-8").replace(
            "## Todos\n", "## Todos\n- Write the quarterly report for the board\n"
        )
        + "- Staging redis port is 6379\n",
        encoding="utf-8",
    )
    old = time.mktime(datetime(2026, 10, 1).timetuple())
    os.utime(memory_md, (old, old))
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.write("The staging Redis listens on port 6380 now")  # today: recent
        report = mem.review(since="7d")
        ages = {t.fact.text: (t.age_days, t.exact) for t in report.todos}
        assert ages["- [ ] renew the TLS certificate for api.example.org"] == (31, True)
        assert ages["- Write the quarterly report for the board"][1] is False  # at least
        assert any(p.kind == "port" for p in report.contradictions)
        assert any("6380 now" in (p.a.text + p.b.text) for p in report.duplicates)
        recalled = {f.text for f in report.never_recalled}
        assert "- Water the office plants every Monday morning" in recalled
        assert report.budget is not None and report.budget.budget == 10_000
        assert {x["path"] for x in report.not_indexed} >= {"memory/2026-11-01.md"}
        data = report.to_dict()
        assert set(data) == {
            "since",
            "duplicates",
            "contradictions",
            "todos",
            "budget",
            "never_recalled",
            "not_indexed",
            "disagreements",
            "counts",
        }
        assert data["disagreements"] == [] and data["counts"]["disagreements"] == 0
        mem.search("office plants Monday")  # recalled now
        assert "- Water the office plants every Monday morning" not in {
            f.text for f in mem.review().never_recalled
        }
        with pytest.raises(QueryError):
            mem.review(since="soon")
    before = {p: p.read_bytes() for p in workspace.rglob("*.md")}
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        mem.review(since="all")
    assert {p: p.read_bytes() for p in workspace.rglob("*.md")} == before  # it never writes
    with (
        Memory(workspace, embedder=FakeEmbedder(), scope="shared") as shared,
        pytest.raises(PathNotAllowed),
    ):
        shared.review()
