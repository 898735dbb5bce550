"""What memdir's Claude Code hooks cost: the wall time of each ``memdir hook <event>`` in a cold
process, run the way Claude Code runs it (the installed command in a shell, its JSON on stdin).

    python benchmarks/hooks_latency.py                    # local embedder, 5 runs per hook
    python benchmarks/hooks_latency.py --runs 3 --embedder fake

A workspace is made with ``memdir init --sample`` plus ``--notes`` generated notes and indexed
first (a prompt in a real session does not pay for the first index). The hooks are installed
with ``memdir hooks install claude-code`` into a throwaway project, and a transcript in Claude
Code's format grows by ``--turns`` turns before each pre-compact and session-end run (so each
has something new to do). memdir's LLM is a local OpenAI-compatible stub on 127.0.0.1 that
answers at once: the times are memdir's own cost; a real model adds its latency to pre-compact
and session-end (bounded by ``[hooks] flush_timeout`` and ``slug_timeout``). Prints a Markdown
report on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from _common import log, machine_info, md_table, report_header

EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd")
SESSION = "0b5c3f5e-1d2a-4c3b-9e8f-7a6b5c4d3e2f"
TOPICS = ("redis", "postgres", "deploy", "backup", "kafka", "nginx", "release", "budget")


@contextmanager
def llm_stub() -> Iterator[str]:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that answers at once."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            last = body.get("messages", [{}])[-1].get("content", "")
            text = "- The staging port is 5433." if "memory flush" in last else "staging-port"
            data = json.dumps(
                {
                    "id": "c",
                    "object": "chat.completion",
                    "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()


def append_turns(transcript: Path, turns: int, start: int) -> None:
    """Claude Code's shape: a user line, an assistant text + tool_use, a tool_result, a reply."""
    with transcript.open("a", encoding="utf-8") as fh:
        for n in range(start, start + turns):
            topic = TOPICS[n % len(TOPICS)]
            lines: list[dict[str, Any]] = [
                {"type": "user", "message": {"role": "user", "content": f"Check the {topic} {n}"}},
                {
                    "type": "assistant",
                    "message": {
                        "id": f"m{n}",
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": f"Looking at {topic}."},
                            {
                                "type": "tool_use",
                                "id": f"t{n}",
                                "name": "Bash",
                                "input": {"command": f"grep -r {topic} ."},
                            },
                        ],
                    },
                },
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": f"t{n}",
                                "content": f"{topic}.conf: port {5000 + n}\n" * 20,
                            }
                        ],
                    },
                },
                {
                    "type": "assistant",
                    "message": {
                        "id": f"r{n}",
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"{topic} uses port {5000 + n}."}],
                    },
                },
            ]
            for line in lines:
                line.setdefault("timestamp", "2026-12-02T09:00:00.000Z")
                fh.write(json.dumps(line) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each hook (default 5)")
    parser.add_argument("--embedder", choices=("local", "fake"), default="local")
    parser.add_argument("--notes", type=int, default=40, help="generated notes (default 40)")
    parser.add_argument("--turns", type=int, default=25, help="turns added before each flush")
    args = parser.parse_args(argv)
    info = machine_info()
    memdir = [sys.executable, "-m", "memdir"]
    with tempfile.TemporaryDirectory() as tmp, llm_stub() as llm_url:
        root = Path(tmp)
        home, ws, project = root / "home", root / "notes", root / "project"
        home.mkdir()
        project.mkdir()
        (home / "config.toml").write_text(
            f'[embedding]\nprovider = "{args.embedder}"\n'
            f'[llm]\nprovider = "openai"\nbase_url = "{llm_url}"\nmodel = "m"\n'
            'api_key = "env:BENCH_KEY"\n',
            encoding="utf-8",
        )
        env = {**os.environ, "MEMDIR_HOME": str(home), "BENCH_KEY": "k"}
        subprocess.run(
            [*memdir, "init", "--sample", str(ws)], env=env, check=True, capture_output=True
        )
        for n in range(args.notes):
            topic = TOPICS[n % len(TOPICS)]
            (ws / "memory" / f"{topic}-{n}.md").write_text(
                f"# {topic} {n}\n- {topic} service {n} listens on port {5000 + n}.\n"
                f"- Owner of {topic} {n}: team {n % 5}; deploys on {('Mon', 'Fri')[n % 2]}.\n",
                encoding="utf-8",
            )
        log("indexing the workspace once")
        subprocess.run([*memdir, "-w", str(ws), "index"], env=env, check=True, capture_output=True)
        subprocess.run(
            [*memdir, "hooks", "install", "claude-code", "-w", str(ws)],
            cwd=project,
            env=env,
            check=True,
            capture_output=True,
        )
        settings = json.loads((project / ".claude" / "settings.json").read_text())
        transcript = root / f"{SESSION}.jsonl"
        turns = 0
        times: dict[str, list[float]] = {event: [] for event in EVENTS}
        outcome: dict[str, str] = {}
        for run in range(args.runs):
            for event in EVENTS:
                if event in ("PreCompact", "SessionEnd"):
                    append_turns(transcript, args.turns, turns)
                    turns += args.turns
                data = {
                    "session_id": SESSION,
                    "transcript_path": str(transcript),
                    "cwd": str(project),
                    "hook_event_name": event,
                    "source": "startup",
                    "prompt": f"which port does {TOPICS[run % len(TOPICS)]} use?",
                    "trigger": "auto",
                    "reason": "other",
                }
                command = settings["hooks"][event][0]["hooks"][0]["command"]
                started = time.perf_counter()
                done = subprocess.run(
                    ["bash", "-c", command],
                    input=json.dumps(data),
                    cwd=project,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                times[event].append(time.perf_counter() - started)
                if done.returncode != 0:
                    raise SystemExit(f"{event} exited {done.returncode}: {done.stderr}")
                outcome[event] = f"{len(done.stdout):,} chars out" + (
                    f"; {done.stderr.strip().splitlines()[-1]}" if done.stderr.strip() else ""
                )
                log(f"run {run + 1} {event}: {times[event][-1]:.2f} s")
        load_end = [round(x, 2) for x in os.getloadavg()]
    argv_shown = argv if argv is not None else sys.argv[1:]
    print(report_header("Claude Code hooks: cold wall time", "hooks_latency.py", argv_shown, info))
    print(f"- Load average at the end: {' / '.join(str(x) for x in load_end)}")
    print(
        f"- Embedder: {args.embedder}; {args.notes + 4} notes; +{args.turns} transcript turns "
        "before each pre-compact and session-end; LLM: a local stub that answers at once\n"
    )
    rows = [
        [
            event,
            f"{statistics.median(times[event]):.2f}",
            f"{min(times[event]):.2f}",
            f"{max(times[event]):.2f}",
            outcome[event],
        ]
        for event in EVENTS
    ]
    print(md_table(["hook", "p50 s", "min s", "max s", "last run"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
