"""The memory tools, defined once: names, descriptions, JSON schemas and limits.

Every way an agent reaches memdir's memory uses these definitions: the MCP server
(:mod:`memdir.mcp.server`), the chat agent's native tool calls and its text protocol, and the
chat prompt (:mod:`memdir.agent`). :func:`memory_tools` builds them for one configuration and
scope, so a description says what that agent will really get: the default number of results
and the score threshold come from ``[search]``, and a shared session's tools neither mention
nor accept MEMORY.md.

A :class:`ToolSpec` is provider-neutral: ``name``, ``description`` and ``input_schema`` (a JSON
Schema ``object``) are what MCP's ``tools/list``, OpenAI's ``tools`` (``{"type": "function",
"function": {name, description, parameters}}``) and Anthropic's ``tools`` (``{name,
description, input_schema}``) are made of; :mod:`memdir.llm` shapes them per provider.
:mod:`memdir.tools.calls` checks a call against the same schema and runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memdir.config.settings import MAX_RESULTS, SearchConfig
from memdir.lifecycle.write import MAX_TEXT_CHARS, SECTIONS, TARGETS
from memdir.memory.facade import MAX_QUERIES, MAX_QUERY_CHARS

TOOL_NAMES = ("memory_search", "memory_get", "memory_write")
#: The destructive tool, offered only when asked for (the MCP server, in a private session).
FORGET_TOOL = "memory_forget"
#: What one ``memory_get`` call returns at most; a longer answer says how to read on.
MAX_GET_LINES = 400
MAX_GET_CHARS = 10_000

#: What a search score means, said once for every description (and docs/cli.md): a calibrated
#: relevance with the local models (:mod:`memdir.search.relevance`), the raw fused score otherwise.
SCORE_MEANING = (
    "a score from 0 to 1, the estimated chance that the snippet answers the query (0.5: as "
    "likely as not; the best result of a real question is often lower, so read the top few "
    "before concluding); a search that is clearly unrelated to anything stored returns no "
    "results, so no results means nothing relevant is stored"
)
RAW_SCORE_MEANING = (
    "a score from 0 to 1, higher meaning more similar (not calibrated for this embedding "
    "model); results scoring below {min_score} (min_score) are left out, and a low-scoring "
    "result may be unrelated"
)

#: The MCP server's instructions (sent once, at the handshake).
SERVER_INSTRUCTIONS = (
    "memdir is the user's long-term memory: plain Markdown notes (MEMORY.md for curated facts, "
    "memory/YYYY-MM-DD.md daily logs, topic notes, skills). Before answering anything about "
    "prior work, decisions, dates, people, preferences or todos, call memory_search and cite "
    "what you use (path#Lstart-Lend); read more with memory_get. Notes are often in Chinese, "
    "English or both: give memory_search the question in the other language as well "
    "(variants), whichever language the user wrote in. When something worth keeping comes "
    "up, save it with memory_write as one short, self-contained sentence."
)

_PRIVATE_FILES = "MEMORY.md, daily logs memory/YYYY-MM-DD.md, memory/<topic>.md, skills/"
_SHARED_FILES = (
    "daily logs memory/YYYY-MM-DD.md, memory/<topic>.md, skills/; MEMORY.md is not available "
    "in this shared session"
)
_SEARCH = (
    "Search the user's long-term memory ({files}). Use it BEFORE answering about prior work, "
    "decisions, dates, people, preferences or todos, instead of guessing: a few keywords or a "
    "short question, English or Chinese. The notes often mix Chinese and English: pass the "
    "question in the other language too, in variants (e.g. query 'When does the points "
    "redesign launch?', variants ['积分改版什么时候上线？']). Returns up to {max_results} "
    "snippets (max_results, at most {cap}), best first, each with a citation "
    "path#Lstart-Lend to quote and {score}. Read around a hit with memory_get."
)
_GET = (
    "Read a memory file, or some of its lines, usually around a memory_search hit ({files}; "
    "a configured extra path by its absolute path): from = first line (1-based), lines = how "
    "many. One call returns at most {max_lines} lines and {max_chars:,} characters; a longer "
    "answer has truncated, next_from and a note on how to read on. A missing file is empty "
    "text, not an error; a binary file is refused."
)
_WRITE = (
    "Save one durable fact for later sessions: one short, self-contained sentence that keeps "
    "exact names, numbers, paths and dates (e.g. 'The staging database listens on port "
    "5433'), not a chat summary. By default it is appended to today's daily log "
    "memory/YYYY-MM-DD.md (what happened or was said today).{memory_part} A fact already "
    "stored is skipped and reported. Never store secrets such as passwords or API keys."
)
_FORGET = (
    "Forget lines of the user's memory for good, when the user asks you to forget something or "
    "a stored fact is wrong. target: a citation path#Lx or path#Lx-Ly from memory_search, or a "
    "query (the lines of its best hits that carry most of its words). Without apply it only "
    "lists the lines, each marked generated (memdir wrote it) or written by the person: show "
    "them to the user, then call again with apply: true to remove them. Lines the person wrote "
    "go only with force: true, which needs the user's explicit consent. Every removal is "
    "recorded and the user can undo it (git revert, or memdir log)."
)
_WRITE_MEMORY_PART = (
    " A stable fact to keep for good goes to a MEMORY.md section (target 'memory'): "
    "preferences, decisions (and why), lessons, facts (names, hosts, ports, versions, paths) "
    "or todos."
)


@dataclass(frozen=True)
class ToolSpec:
    """One memory tool.

    Attributes:
        name: ``memory_search``, ``memory_get`` or ``memory_write``.
        title: a short human title (MCP ``title``).
        description: what the model reads to decide when and how to call it.
        input_schema: the arguments as a JSON Schema ``object``.
        read_only: the tool changes nothing (MCP ``readOnlyHint``).
        idempotent: calling it twice does what calling it once does.
        destructive: it can remove what is stored (MCP ``destructiveHint``).
    """

    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool
    idempotent: bool
    destructive: bool = False

    @property
    def properties(self) -> Mapping[str, Mapping[str, Any]]:
        props: Mapping[str, Mapping[str, Any]] = self.input_schema["properties"]
        return props

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.input_schema.get("required", ()))

    def annotations(self) -> dict[str, bool]:
        """MCP tool annotations (only ``memory_forget`` destroys anything)."""
        return {
            "read_only_hint": self.read_only,
            "destructive_hint": self.destructive,
            "idempotent_hint": self.idempotent,
        }

    def signature(self) -> str:
        """The arguments in one line, for a prompt that teaches a text protocol:
        ``{"query": str, "max_results"?: int}``."""
        parts = []
        for name, schema in self.properties.items():
            optional = "" if name in self.required else "?"
            if "enum" in schema:
                kind = "|".join(f'"{value}"' for value in schema["enum"])
            else:
                kind = _TYPE_WORDS[schema["type"]]
            parts.append(f'"{name}"{optional}: {kind}')
        return "{" + ", ".join(parts) + "}"

    def to_dict(self) -> dict[str, Any]:
        """Name, title, description, input schema and annotations as plain data."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "annotations": self.annotations(),
        }


_TYPE_WORDS = {
    "string": "str",
    "integer": "int",
    "number": "number",
    "boolean": "bool",
    "array": "[str]",
}


def memory_tools(
    search: SearchConfig, *, private: bool, forget: bool = False, calibrated: bool = True
) -> tuple[ToolSpec, ...]:
    """The memory tools for an agent with these ``[search]`` settings: search, get and write,
    and ``memory_forget`` when asked for.

    Args:
        search: the effective search settings (their defaults are stated in the descriptions).
        private: the owner's own session; False (a shared session) leaves MEMORY.md out of the
            descriptions and the ``section`` argument out of ``memory_write``.
        forget: add ``memory_forget`` (private sessions only: a shared session never gets it).
        calibrated: the embedding model's scores are calibrated relevances (``min_score``
            applies); False: raw scores under ``raw_min_score``
            (``Memory.calibration is not None``).
    """
    files = _PRIVATE_FILES if private else _SHARED_FILES
    threshold = search.min_score if calibrated else search.raw_min_score
    meaning = SCORE_MEANING if calibrated else RAW_SCORE_MEANING
    score = meaning.format(min_score=_number(threshold))
    default_results = search.max_results
    search_args = {
        "query": _arg("string", "Keywords or a short question.", maxLength=MAX_QUERY_CHARS),
        "queries": _arg(
            "array",
            "More queries searched in the same call, e.g. each of two things a question asks "
            "about; every query gets some of the results.",
            items={"type": "string", "maxLength": MAX_QUERY_CHARS},
            maxItems=MAX_QUERIES - 1,
        ),
        "variants": _arg(
            "array",
            "The same question written otherwise, searched with it as one question: add the "
            "question translated into the other language (English or Chinese) when the notes "
            "may be written in it, or a paraphrase with the words the notes would use.",
            items={"type": "string", "maxLength": MAX_QUERY_CHARS},
            maxItems=MAX_QUERIES,
        ),
        "max_results": _arg(
            "integer",
            f"Most snippets to return (default {default_results}).",
            minimum=1,
            maximum=MAX_RESULTS,
        ),
        "min_score": _arg(
            "number",
            f"Drop results scoring below this (default {_number(threshold)}; 0 keeps "
            "everything, even for an unrelated query).",
            minimum=0,
            maximum=1,
        ),
    }
    get_args = {
        "path": _arg("string", "e.g. memory/2026-11-28.md"),
        "from": _arg("integer", "First line (default 1).", minimum=1),
        "lines": _arg("integer", f"How many lines (default {MAX_GET_LINES}).", minimum=1),
        "copy": _arg("string", "A search hit's copy, if it names one."),
    }
    write_args = {
        "text": _arg("string", "The fact, one sentence.", maxLength=MAX_TEXT_CHARS),
        "target": _arg(
            "string",
            "daily (default) or memory (MEMORY.md).",
            enum=list(TARGETS) if private else ["daily"],
        ),
    }
    if private:
        write_args["section"] = _arg(
            "string", "MEMORY.md section (implies target memory).", enum=list(SECTIONS)
        )
    tools = (
        ToolSpec(
            "memory_search",
            "Search memory",
            _SEARCH.format(files=files, max_results=default_results, cap=MAX_RESULTS, score=score),
            _object(search_args, "query"),
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_get",
            "Read a memory file",
            _GET.format(files=files, max_lines=MAX_GET_LINES, max_chars=MAX_GET_CHARS),
            _object(get_args, "path"),
            read_only=True,
            idempotent=True,
        ),
        ToolSpec(
            "memory_write",
            "Remember a fact",
            _WRITE.format(memory_part=_WRITE_MEMORY_PART if private else ""),
            _object(write_args, "text"),
            read_only=False,
            idempotent=False,
        ),
    )
    if not (forget and private):
        return tools
    forget_args = {
        "target": _arg(
            "string", "path#Lx[-Ly] from a search, or a query.", maxLength=MAX_QUERY_CHARS
        ),
        "apply": _arg("boolean", "Remove the lines (default false: only list them)."),
        "force": _arg("boolean", "Also remove lines the person wrote (default false)."),
    }
    return (
        *tools,
        ToolSpec(
            FORGET_TOOL,
            "Forget memory lines",
            _FORGET,
            _object(forget_args, "target"),
            read_only=False,
            idempotent=False,
            destructive=True,
        ),
    )


def _arg(kind: str, description: str, **constraints: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **constraints}


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _number(value: float) -> str:
    """0.35 → "0.35", 1.0 → "1"."""
    return f"{value:g}"
