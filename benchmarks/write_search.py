"""Write, then search at once, through MCP: the round trip an agent makes most (issue 26).

    python benchmarks/write_search.py
    python benchmarks/write_search.py --baseline-src /tmp/memdir-main/src   # side by side
    python benchmarks/write_search.py --indexed --json /tmp/ws.json

``memdir serve`` is started over stdio by the official MCP SDK client on a copy of the 39-file
developer workspace (``_devws.py``) that has *not* been indexed, so its background embedder is
busy with every chunk when the first fact arrives (``--indexed``: indexed first, the embedder
idle). Then, for each of 20 fresh facts (10 Chinese, 10 English), ``memory_write`` and, at once,
``memory_search`` with the question a person would ask about it. A fact is found at rank r when
the r-th result's snippet holds its marker. The table gives, per server, how many were found at
rank 1 and at all, the median times of the two calls, and the warnings the searches gave.

``--baseline-src`` runs the same facts on a second server whose ``memdir`` is imported from that
source folder (e.g. a ``git worktree`` of main), one after the other in this run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402
import _devws  # noqa: E402

#: (fact, section or None for the daily log, the question asked right after, marker).
FACTS: tuple[tuple[str, str | None, str, str], ...] = (
    ("部署流水线改用 Argo CD，决定于本周 (probe-913)", None, "Argo CD 部署流水线", "probe-913"),
    ("支付网关的超时从 3 秒调到 8 秒，供应商那边偶发慢 (probe-121)", None,
     "支付网关超时是多少", "probe-121"),
    ("青鸟项目的负责人换成了王伟 (probe-122)", "facts", "谁负责青鸟项目", "probe-122"),
    ("以后代码评审先看测试再看实现 (probe-123)", "preferences", "代码评审的顺序", "probe-123"),
    ("订单库的备份每天凌晨 2 点跑，保留 14 天 (probe-124)", None,
     "订单库备份什么时候跑", "probe-124"),
    ("灰度发布先放 5% 流量，观察 30 分钟 (probe-125)", "decisions",
     "灰度发布放多少流量", "probe-125"),
    ("风控规则引擎的 gRPC 端口是 7443 (probe-126)", None, "风控引擎端口", "probe-126"),
    ("教训：改 nginx 配置前先 nginx -t 校验 (probe-127)", "lessons",
     "改 nginx 配置要注意什么", "probe-127"),
    ("待办：周五前把对账报表迁到新的数据仓库 (probe-128)", "todos",
     "对账报表迁移的截止时间", "probe-128"),
    ("李娜下周起接手值班表 (probe-129)", None, "值班表谁接手", "probe-129"),
    ("The search cluster now runs OpenSearch 2.17 on port 9201 (probe-221)", None,
     "which port does the search cluster use", "probe-221"),
    ("Feature flags moved from LaunchDarkly to Unleash last sprint (probe-222)", "decisions",
     "what do we use for feature flags", "probe-222"),
    ("The nightly ETL job starts at 01:30 UTC and takes about 40 minutes (probe-223)", None,
     "when does the nightly ETL run", "probe-223"),
    ("Priya owns the mobile push notification service (probe-224)", "facts",
     "who owns push notifications", "probe-224"),
    ("Always pin Docker base images by digest, never by tag (probe-225)", "preferences",
     "how should docker base images be pinned", "probe-225"),
    ("Lesson: rotating the JWT signing key logged everyone out; stage it next time "
     "(probe-226)", "lessons", "what happened when we rotated the JWT key", "probe-226"),
    ("TODO: renew the wildcard certificate for *.corp.example before Jan 9 (probe-227)",
     "todos", "wildcard certificate renewal deadline", "probe-227"),
    ("The analytics warehouse is Snowflake, warehouse ANALYTICS_XS (probe-228)", None,
     "which snowflake warehouse does analytics use", "probe-228"),
    ("Grafana dashboards live in the infra-dashboards repo now (probe-229)", None,
     "where are the grafana dashboards kept", "probe-229"),
    ("Rate limit for the public API is 600 requests per minute per key (probe-230)", None,
     "what is the public API rate limit", "probe-230"),
)  # fmt: skip


@dataclass
class Outcome:
    marker: str
    query: str
    rank: int | None
    score: float | None
    results: int
    write_s: float
    search_s: float
    warnings: list[str] = field(default_factory=list)


async def run_server(
    workspace: Path, home: Path, src: Path | None, now: str, facts: int
) -> tuple[list[Outcome], dict[str, Any]]:
    """Start one server on ``workspace`` and make the 20 round trips."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {**os.environ, "MEMDIR_HOME": str(home), "MEMDIR_NOW": now}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memdir", "--workspace", str(workspace), "serve"],
        env=env,
    )
    out: list[Outcome] = []
    errlog = sys.__stderr__ or sys.stderr
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for fact, section, query, marker in FACTS[:facts]:
            args: dict[str, Any] = {"text": fact}
            if section:
                args["section"] = section
            began = time.perf_counter()
            written = await session.call_tool("memory_write", args)
            wrote = time.perf_counter() - began
            if written.is_error:
                raise SystemExit(f"memory_write failed: {written.content}")
            began = time.perf_counter()
            found = await session.call_tool("memory_search", {"query": query})
            searched = time.perf_counter() - began
            if found.is_error:
                raise SystemExit(f"memory_search failed: {found.content}")
            data = json.loads(found.content[0].text)  # type: ignore[union-attr]
            results = data["results"]
            rank = next((i for i, r in enumerate(results, 1) if marker in r["snippet"]), None)
            score = results[rank - 1]["score"] if rank else None
            out.append(
                Outcome(marker, query, rank, score, len(results), wrote, searched, data["warnings"])
            )
        status = await session.call_tool("memory_search", {"query": "probe"})
        last = json.loads(status.content[0].text)  # type: ignore[union-attr]
    return out, last.get("index", {})


def prepare(folder: Path, indexed: bool, src: Path | None, embedder: str) -> Path:
    """A copy of the developer workspace under ``folder`` (indexed when asked)."""
    from memdir import init_workspace

    root, _ = init_workspace(folder / "ws", "en")
    files, _ = _devws.build()
    common.write_files(root, files)
    # The notes were written over the weeks before, not a moment ago (a note changed in the
    # last minutes is "fresh" to a search: docs/design.md#search).
    old = time.time() - 3 * 86400
    for path in root.rglob("*.md"):
        os.utime(path, (old, old))
    if embedder != "local":
        (root / ".memdir" / "config.toml").write_text(
            f'[embedding]\nprovider = "{embedder}"\n', encoding="utf-8"
        )
    if indexed:
        import subprocess

        env = {**os.environ}
        if src is not None:
            env["PYTHONPATH"] = str(src)
        subprocess.run(
            [sys.executable, "-m", "memdir", "--workspace", str(root), "index"],
            check=True,
            env=env,
            capture_output=True,
        )
    return root


def summarise(name: str, outcomes: list[Outcome]) -> list[str]:
    first = sum(1 for o in outcomes if o.rank == 1)
    found = sum(1 for o in outcomes if o.rank)
    empty = sum(1 for o in outcomes if o.results == 0)
    warned = sum(1 for o in outcomes if o.warnings)
    return [
        name,
        f"{first}/{len(outcomes)}",
        f"{found}/{len(outcomes)}",
        f"{empty}",
        f"{statistics.median(o.write_s for o in outcomes) * 1000:.0f}",
        f"{statistics.median(o.search_s for o in outcomes) * 1000:.0f}",
        f"{statistics.median(o.score or 0.0 for o in outcomes):.3f}",
        f"{warned}",
    ]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description="Write then search at once, through MCP.")
    parser.add_argument("--indexed", action="store_true", help="index the workspace first")
    parser.add_argument("--baseline-src", type=Path, help="a second memdir source folder")
    parser.add_argument("--now", default="2026-11-28T18:00:00", help="MEMDIR_NOW")
    parser.add_argument("--facts", type=int, default=len(FACTS), help="the first N facts only")
    parser.add_argument("--embedder", default="local", choices=("local", "fake"))
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = parser.parse_args(argv)
    servers: list[tuple[str, Path | None]] = [("this checkout", None)]
    if args.baseline_src:
        servers.append((f"baseline ({args.baseline_src})", args.baseline_src.resolve()))
    info = common.machine_info()
    rows, raw = [], {}
    for name, src in servers:
        with tempfile.TemporaryDirectory(prefix="memdir-write-search-") as tmp:
            home = Path(tmp) / "home"
            home.mkdir()
            with common.env("MEMDIR_HOME", str(home)):
                root = prepare(Path(tmp), args.indexed, src, args.embedder)
            outcomes, index = asyncio.run(run_server(root, home, src, args.now, args.facts))
        rows.append(summarise(name, outcomes))
        raw[name] = {"outcomes": [o.__dict__ for o in outcomes], "index_after": index}
        for o in outcomes:
            if o.rank != 1:
                common.log(f"  {name}: {o.marker} {o.query!r}: rank {o.rank}, {o.warnings}")
    headers = [
        "server",
        "found at rank 1",
        "found",
        "empty answers",
        "write p50 ms",
        "search p50 ms",
        "score p50",
        "searches with warnings",
    ]
    state = "indexed first" if args.indexed else "not indexed: the background embedder busy"
    print(common.report_header("Write, then search at once (MCP)", "write_search.py", argv, info))
    n = min(args.facts, len(FACTS))
    print(f"- Workspace: the 39-file developer workspace, {state}; {n} facts (zh first, then en)\n")
    print(common.md_table(headers, rows))
    common.write_json(
        args.json,
        {"machine": info, "command": ["python", "benchmarks/write_search.py", *argv], **raw},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
