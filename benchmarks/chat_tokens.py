"""Tokens sent per turn over a long scripted chat: does the context stay bounded?

    PYTHONPATH=src python benchmarks/chat_tokens.py              # 500 turns, curve every 25
    PYTHONPATH=src python benchmarks/chat_tokens.py --turns 1000 --every 50 --window 16384
    PYTHONPATH=src python benchmarks/chat_tokens.py --tools text  # the JSON-line text protocol

A :class:`~memdir.agent.loop.ChatAgent` runs a conversation of ``--turns`` user messages against
:class:`~memdir.llm.fake.ScriptedLLM` (no model, no network) in a fresh temporary workspace with
the fake embedder. Every 20th message (from the 7th) asks the agent to remember a fact holding
an identifier (port, UUID, commit hash, URL, path); the rest are ordinary work chat of 40–80
words. The scripted model answers chat with ~100 words, answers the memory flush with the
"Remember:" lines it can see, and writes compaction summaries under the five headings that keep
the "Remember:" lines it is given (the previous summary included). Auto-recall and auto-capture
are on. The context window is small (8,192 tokens by default) so that compaction happens often.
``--tools native`` (the default) offers the memory tools as native tool definitions, which are
counted in every chat request; ``--tools text`` teaches the text protocol in the system prompt
instead (how every request was sent before native tool calling).

It prints a Markdown table of (turn, tokens sent) every ``--every`` turns, then the maximum, the
budget, how many flushes and compactions ran, and where each remembered fact ended up (MEMORY.md,
the daily log, or the summary). ``tests/agent/test_long_conversation.py`` runs the same
conversation and asserts the bound and that no fact is lost.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memdir import FakeEmbedder, Memory, ScriptedLLM, init_workspace
from memdir.agent.loop import ChatAgent, ToolMode
from memdir.config.settings import LLMConfig
from memdir.llm.base import Message, count_message_tokens
from memdir.llm.chat import tools_json

DEFAULT_NOW = "2026-11-30T09:00"
_TOPICS = (
    "the billing service",
    "the search index",
    "the mobile release",
    "the data pipeline",
    "the onboarding flow",
    "the staging cluster",
    "the API gateway",
    "the nightly backup",
)
_VERBS = ("review", "refactor", "profile", "document", "test", "migrate", "simplify", "monitor")
_FILLER = (
    "I think we should look at how the pieces fit together before changing anything, and keep "
    "the change small enough to review in one sitting. What would you check first, and what "
    "could go wrong if we move quickly here? Please keep the answer practical."
)
_REMEMBER_RE = re.compile(r"Remember: [^\n]*?\.(?=\s|$)")


def remember_fact(k: int) -> str:
    """The k-th fact the user asks to remember; each holds one identifier."""
    digest = hashlib.sha1(f"fact-{k}".encode()).hexdigest()
    kinds = (
        f"the cache for service {k} listens on port {6000 + k}",
        f"the deploy key id for cluster {k} is {uuid.uuid5(uuid.NAMESPACE_DNS, str(k))}",
        f"release {k} was built from commit {digest[:12]}",
        f"the runbook for incident {k} is at https://wiki.example.org/runbooks/{digest[:6]}",
        f"the config for job {k} lives in /etc/memdir/jobs/job-{k}.toml",
    )
    return f"Remember: {kinds[k % len(kinds)]}."


def user_message(turn: int) -> str:
    """The user's message at ``turn`` (1-based)."""
    if turn % 20 == 7:
        return remember_fact(turn // 20)
    topic = _TOPICS[turn % len(_TOPICS)]
    verb = _VERBS[(turn // len(_TOPICS)) % len(_VERBS)]
    length = 1 + turn % 3
    return f"Next, let us {verb} {topic}. " + " ".join([_FILLER] * length)[: 200 + 120 * length]


def scripted_model(messages: Sequence[Message]) -> str:
    """Plays the model: chat answers, memory flushes and compaction summaries."""
    last = messages[-1].content if messages else ""
    if last.startswith("[memdir: memory flush"):
        seen = dict.fromkeys(m for msg in messages for m in _REMEMBER_RE.findall(msg.content))
        return "\n".join(f"- {fact}" for fact in seen) or "NO_REPLY"
    if last.startswith("<transcript>"):
        kept = dict.fromkeys(_REMEMBER_RE.findall(last))
        rules = "\n".join(f"- {fact}" for fact in kept) or "- none"
        return (
            "## Decisions\n- Work through the services one at a time.\n\n"
            "## Open TODOs\n- Continue the review of the current service.\n\n"
            f"## Constraints/Rules\n{rules}\n\n"
            "## Pending user asks\n- none\n\n"
            "## Exact identifiers\n- none\n"
        )
    if last.startswith("<conversation>"):
        return '{"items": []}'
    words = (
        "Here is a practical plan: start with the riskiest part, measure it, change one "
        "thing at a time and keep notes of what you learn. "
    ) * 4
    return words.strip()


@dataclass
class ConversationRun:
    """What one scripted conversation measured."""

    tokens: list[int] = field(default_factory=list)  # tokens sent, per turn
    compactions_at: list[int] = field(default_factory=list)  # compactions so far, per turn
    uncompacted: list[int] = field(default_factory=list)  # the same request with no compaction
    largest_request: int = 0  # tokens of the largest request of any kind (flush, summary…)
    budget: int = 0
    window: int = 0
    flushes: int = 0
    compactions: int = 0
    facts: dict[str, str] = field(default_factory=dict)  # fact → where it is ("" if lost)
    errors: list[str] = field(default_factory=list)


def run_conversation(
    workspace: Path,
    *,
    turns: int = 500,
    context_window: int = 8192,
    max_output: int = 1024,
    tools: ToolMode = "native",
) -> ConversationRun:
    """Run the scripted conversation in ``workspace`` (created if needed)."""
    root, _ = init_workspace(workspace)
    llm = ScriptedLLM(responder=scripted_model)
    config = LLMConfig(context_window=context_window, max_output_tokens=max_output)
    run = ConversationRun(window=context_window)
    with Memory(root, embedder=FakeEmbedder()) as memory:
        agent = ChatAgent(memory, llm, llm_config=config, tools=tools)
        run.budget = agent.budget
        grown = 0  # tokens of every message so far, none compacted away
        for turn in range(1, turns + 1):
            text = user_message(turn)
            out = agent.handle(text)
            run.tokens.append(out.tokens_sent)
            if turn == 1:
                grown = out.tokens_sent
            else:
                grown += count_message_tokens([Message("user", text)]) - 3
            run.uncompacted.append(grown)
            grown += count_message_tokens([Message("assistant", out.text)]) - 3
            run.compactions_at.append(agent.session.compactions)
            if out.error:
                run.errors.append(f"turn {turn}: {out.error}")
        run.compactions = agent.session.compactions
        run.flushes = sum(
            call.messages[-1].content.startswith("[memdir: memory flush") for call in llm.calls
        )
        definitions = tools_json(agent.tool_definitions)
        run.largest_request = max(
            count_message_tokens(
                call.messages, system=call.system, tools_json=definitions if call.tools else ""
            )
            for call in llm.calls
        )
        summary = agent.session.summary or ""
        memory_md = (root / "MEMORY.md").read_text(encoding="utf-8")
        logs = "\n".join(p.read_text(encoding="utf-8") for p in (root / "memory").glob("*.md"))
        history = "\n".join(m.content for m in agent.session.history)
    for turn in range(1, turns + 1):
        if turn % 20 != 7:
            continue
        fact = remember_fact(turn // 20).removeprefix("Remember: ").rstrip(".")
        places = [
            name
            for name, text in (
                ("MEMORY.md", memory_md),
                ("daily log", logs),
                ("summary", summary),
                ("recent turns", history),
            )
            if fact in text
        ]
        run.facts[fact] = ", ".join(places)
    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--every", type=int, default=25, help="table row every N turns")
    parser.add_argument("--window", type=int, default=8192, help="context window (tokens)")
    parser.add_argument("--max-output", type=int, default=1024)
    parser.add_argument(
        "--tools", choices=("native", "text"), default="native", help="how tools are offered"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("MEMDIR_NOW", DEFAULT_NOW)
    with tempfile.TemporaryDirectory(prefix="memdir-chat-") as tmp:
        os.environ["MEMDIR_HOME"] = str(Path(tmp) / "home")
        run = run_conversation(
            Path(tmp) / "ws",
            turns=args.turns,
            context_window=args.window,
            max_output=args.max_output,
            tools=args.tools,
        )
    print(
        f"window {run.window:,} tokens, compaction budget {run.budget:,} tokens, "
        f"tools: {args.tools}\n"
    )
    print(
        f"| turn | tokens sent | max over the last {args.every} turns | compactions so far "
        "| without compaction |"
    )
    print("|---:|---:|---:|---:|---:|")
    for turn in range(args.every, args.turns + 1, args.every):
        window = run.tokens[turn - args.every : turn]
        print(
            f"| {turn} | {run.tokens[turn - 1]:,} | {max(window):,} | "
            f"{run.compactions_at[turn - 1]} | {run.uncompacted[turn - 1]:,} |"
        )
    lost = [fact for fact, where in run.facts.items() if not where]
    print(
        f"\nmax {max(run.tokens):,} tokens (turn {run.tokens.index(max(run.tokens)) + 1}), "
        f"mean {sum(run.tokens) / len(run.tokens):,.0f}; largest request of any kind "
        f"{run.largest_request:,}; {run.flushes} memory flushes, "
        f"{run.compactions} compactions; {len(run.facts) - len(lost)}/{len(run.facts)} "
        "remembered facts kept"
    )
    for place in ("MEMORY.md", "daily log", "summary", "recent turns"):
        count = sum(place in where for where in run.facts.values())
        print(f"- facts found in {place}: {count}")
    for fact in lost:
        print(f"LOST: {fact}", file=sys.stderr)
    for error in run.errors:
        print(error, file=sys.stderr)
    return 1 if lost or run.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
