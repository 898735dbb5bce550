"""What recall tracking (dreaming, docs/design.md#dreaming) adds to ``Memory.search``.

    PYTHONPATH=src python benchmarks/recall_overhead.py            # 300 notes, 300 queries
    PYTHONPATH=src python benchmarks/recall_overhead.py --quick    # smoke run (~10 s)

A seeded workspace of daily notes ``memory/YYYY-MM-DD.md`` (mixed English and Chinese bullets)
is indexed with the fake embedder (hybrid search, no model), then every query is searched twice,
once with recording and once without (``memdir.memory.facade.record_recalls`` swapped for a no-op),
in alternating order so caches favour neither. Separately, ``record_recalls`` is timed alone on each
response. The report (Markdown, stdout) gives p50/p95 of each and the ratios.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import random
import shlex
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def _words(text: str) -> tuple[str, ...]:
    return tuple(word for word in text.split() if word)


EN = _words("""
    redis postgres migration cache port deploy cluster backup replica index query latency timeout
    retry queue kafka consumer schema token session login config docker image release rollback
    incident alert dashboard metric trace certificate nginx ingress budget invoice roadmap sprint
    ticket review benchmark lock mutex transaction vacuum partition tenant
""")
ZH = _words("""
    数据库 迁移 缓存 端口 部署 集群 备份 副本 索引 查询 延迟 超时 重试 队列 消费者 会话 登录 配置
    镜像 发布 回滚 故障 告警 监控 证书 预算 发票 路线图 评审 分布式锁 事务 分区 租户 订单 支付
""")
PEOPLE = ["Alice", "Bob", "Carol", "Dave", "小王", "老李"]
VERBS = ["decided", "fixed", "moved", "checked", "asked about", "reviewed", "planned"]


def bullet(rng: random.Random) -> str:
    if rng.random() < 0.4:
        words = rng.sample(ZH, 3)
        return f"- {rng.choice(PEOPLE)}：{words[0]}的{words[1]}问题，决定先处理{words[2]}。"
    words = rng.sample(EN, 4)
    return (
        f"- {rng.choice(PEOPLE)} {rng.choice(VERBS)} the {words[0]} {words[1]}; "
        f"next: {words[2]} and {words[3]} on port {rng.randint(1000, 9999)}."
    )


def build_workspace(root: Path, notes: int, rng: random.Random, end: dt.date) -> None:
    from memdir import init_workspace

    init_workspace(root, "en")
    for back in range(notes):
        day = end - dt.timedelta(days=back)
        lines = [f"# {day.isoformat()}", ""] + [bullet(rng) for _ in range(rng.randint(5, 12))]
        (root / "memory" / f"{day.isoformat()}.md").write_text(
            "\n".join(lines) + "\n", encoding="utf-8"
        )


def make_queries(n: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.45:
            out.append(" ".join(rng.sample(EN, rng.randint(2, 4))))
        elif kind < 0.8:
            out.append("".join(rng.sample(ZH, 2)) + "怎么处理")
        else:
            out.append(f"{rng.choice(EN)} {rng.choice(ZH)} {rng.choice(PEOPLE)}")
    return out


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(values: Sequence[float]) -> str:
    return f"{pct(values, 0.5) * 1000:.2f} / {pct(values, 0.95) * 1000:.2f}"


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=300, help="daily notes (default 300)")
    parser.add_argument("--queries", type=int, default=300, help="queries (default 300)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="60 notes, 60 queries")
    args = parser.parse_args(argv)
    if args.quick:
        args.notes, args.queries = 60, 60
    rng = random.Random(args.seed)
    end = dt.date(2026, 11, 30)

    with tempfile.TemporaryDirectory(prefix="memdir-recall-bench-") as tmp:
        os.environ["MEMDIR_HOME"] = str(Path(tmp) / "home")
        os.environ["MEMDIR_NOW"] = f"{end.isoformat()}T12:00"
        import memdir.memory.facade as memory_module
        from memdir import FakeEmbedder, Memory
        from memdir.clock import now
        from memdir.dreaming.store import record_recalls

        root = Path(tmp) / "ws"
        print(f"building {args.notes} daily notes …", file=sys.stderr)
        build_workspace(root, args.notes, rng, end)
        queries = make_queries(args.queries, rng)
        with Memory(root, embedder=FakeEmbedder()) as mem:
            sync_s, report = timed(mem.sync)
            for query in queries[:20]:  # warm up: jieba, caches, the recall store file
                mem.search(query)

            def no_op(*_: Any, **__: Any) -> None:
                return None

            with_rec: list[float] = []
            without: list[float] = []
            record_alone: list[float] = []
            daily_hits = 0
            print(f"searching {len(queries)} queries twice …", file=sys.stderr)
            for i, query in enumerate(queries):
                order = (True, False) if i % 2 == 0 else (False, True)
                for recording in order:
                    memory_module.record_recalls = record_recalls if recording else no_op
                    seconds, response = timed(lambda q=query: mem.search(q))
                    (with_rec if recording else without).append(seconds)
                memory_module.record_recalls = record_recalls
                daily_hits += sum(1 for r in response.results if r.path.startswith("memory/2"))
                seconds, _ = timed(lambda r=response: record_recalls(mem.recalls, r, now=now()))
                record_alone.append(seconds)
            entries = len(mem.recalls.entries())
            store_bytes = sum(
                p.stat().st_size for p in (root / ".memdir").glob("recall.sqlite*") if p.is_file()
            )

    delta = statistics.median(with_rec) - statistics.median(without)
    cmd = "PYTHONPATH=src python benchmarks/recall_overhead.py " + shlex.join(
        list(argv if argv is not None else sys.argv[1:])
    )
    print("## Recall tracking overhead\n")
    print(f"- command: `{cmd.strip()}`")
    print(f"- date: {dt.date.today().isoformat()}")
    print(
        f"- machine: {os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}, SQLite {sqlite3.sqlite_version}, {platform.system()}"
    )
    print(
        f"- workspace: {args.notes} daily notes, {report.chunks_written} chunks "
        f"(indexed in {sync_s:.1f} s), fake embedder (hybrid search); {len(queries)} queries, "
        f"{daily_hits / len(queries):.1f} daily-log results recorded per search on average; "
        f"recall store after the run: {entries} entries, {store_bytes / 1024:.0f} KiB\n"
    )
    print("| timing (ms) | p50 / p95 |")
    print("| --- | --- |")
    print(f"| `Memory.search` with recording | {ms(with_rec)} |")
    print(f"| `Memory.search` without recording | {ms(without)} |")
    print(f"| `record_recalls` alone | {ms(record_alone)} |")
    print()
    p50_ratio = pct(record_alone, 0.5) / pct(without, 0.5)
    p95_ratio = pct(record_alone, 0.95) / pct(without, 0.95)
    print(
        f"Recording alone is {p50_ratio:.1%} of a search at p50 and {p95_ratio:.1%} at p95; "
        f"the medians with and without recording differ by {delta * 1000:.2f} ms "
        f"({delta / statistics.median(without):+.1%})."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
