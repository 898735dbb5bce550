"""The first searches of an MCP client, as Claude Code meets memdir: ``memdir serve`` started
over stdio by the official MCP SDK client, the handshake and ``tools/list``, a pause (a person
typing their first prompt), then ``memory_search`` calls, each timed from the client.

    python benchmarks/mcp_first_search.py --workspace /tmp/b17/scale-final/files-10000-hybrid
    python benchmarks/mcp_first_search.py --workspace WS --wait 10 --runs 3

Any indexed workspace will do: `benchmarks/scale.py --out DIR` leaves its 1,000- and 10,000-file
workspaces in DIR (``files-10000-hybrid``). The server is this Python's ``memdir`` console
script, so ``PYTHONPATH=src`` measures a checkout. Each run is a new server process. Nothing is
written to the workspace but the index's usual upkeep and recall records.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _common as common  # noqa: E402

QUERIES = ("the redis cache port moved", "数据库迁移计划")


async def one_run(workspace: Path, wait: float, queries: tuple[str, ...]) -> list[float]:
    """Seconds: the handshake and ``tools/list``, then each search after ``wait`` seconds."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    exe = Path(sys.executable).with_name("memdir")
    params = StdioServerParameters(
        command=str(exe), args=["serve", "--workspace", str(workspace)], env={**os.environ}
    )
    started = time.perf_counter()
    # The server's stderr to the real one (under pytest sys.stderr may have no file number).
    errlog = sys.__stderr__ or sys.stderr
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.list_tools()
        out = [time.perf_counter() - started]
        await asyncio.sleep(wait)
        for query in queries:
            began = time.perf_counter()
            result = await session.call_tool("memory_search", {"query": query})
            if result.is_error:
                raise SystemExit(f"memory_search failed: {result.content}")
            out.append(time.perf_counter() - began)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", type=Path, required=True, help="an indexed workspace")
    parser.add_argument("--wait", type=float, default=10.0, help="seconds before the first search")
    parser.add_argument("--runs", type=int, default=2, help="server processes to start")
    args = parser.parse_args(argv)
    info = common.machine_info()
    load = os.getloadavg()[0]
    runs = [asyncio.run(one_run(args.workspace, args.wait, QUERIES)) for _ in range(args.runs)]
    title = "The first searches of an MCP client (`memdir serve` over stdio)"
    print(common.report_header(title, "mcp_first_search.py", sys.argv[1:], info))
    print(f"Workspace `{args.workspace}`; load average before: {load:.2f}; {args.runs} runs.\n")
    headers = ["step", *[f"run {i + 1} ms" for i in range(args.runs)], "median ms"]
    steps = ["start, handshake, `tools/list`"]
    steps += [f"`memory_search` {q!r} ({args.wait:g} s later)" for q in QUERIES[:1]]
    steps += [f"`memory_search` {q!r} (next)" for q in QUERIES[1:]]
    rows = [
        [
            step,
            *[f"{run[i] * 1000:.0f}" for run in runs],
            f"{statistics.median(r[i] for r in runs) * 1000:.0f}",
        ]
        for i, step in enumerate(steps)
    ]
    print(common.md_table(headers, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
