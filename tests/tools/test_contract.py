"""The tool contract: one definition, stating the effective configuration, used everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir import Memory
from memdir.config.settings import MAX_RESULTS, SearchConfig
from memdir.errors import ConfigError, QueryError
from memdir.llm.anthropic_wire import anthropic_tools
from memdir.llm.openai_wire import openai_tools
from memdir.mcp.server import MemoryTools
from memdir.tools import TOOL_NAMES, memory_tools
from memdir.tools.calls import call_tool


def test_descriptions_state_the_effective_configuration() -> None:
    search, get, write = memory_tools(SearchConfig(max_results=9, min_score=0.42), private=True)
    assert "up to 9 snippets" in search.description
    assert "clearly unrelated to anything stored returns no results" in search.description
    assert "no results means nothing relevant is stored" in search.description
    assert search.properties["max_results"]["description"] == "Most snippets to return (default 9)."
    assert "default 0.42" in search.properties["min_score"]["description"]
    assert "at most 400 lines and 10,000 characters" in get.description
    assert "MEMORY.md section" in write.description
    other = memory_tools(SearchConfig(), private=True)[0]
    default = f"default {SearchConfig().min_score:g}"
    assert "up to 6 snippets" in other.description
    assert default in other.properties["min_score"]["description"]
    assert "estimated chance that the snippet answers the query" in other.description
    raw = memory_tools(SearchConfig(), private=True, calibrated=False)[0]
    assert "below 0.35" in raw.description and "not calibrated" in raw.description
    assert "no results means nothing relevant" not in raw.description


def test_a_shared_session_is_offered_no_memory_md() -> None:
    search, get, write = memory_tools(SearchConfig(), private=False)
    assert "MEMORY.md is not available in this shared session" in search.description
    assert "MEMORY.md is not available in this shared session" in get.description
    assert "section" not in write.properties
    assert write.properties["target"]["enum"] == ["daily"]
    assert "MEMORY.md section" not in write.description


def test_schemas_are_closed_objects_with_one_results_cap() -> None:
    specs = memory_tools(SearchConfig(), private=True)
    assert tuple(s.name for s in specs) == TOOL_NAMES
    for spec in specs:
        schema = spec.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(spec.required) <= set(spec.properties)
        for prop in spec.properties.values():
            assert prop["type"] in {"string", "integer", "number", "array"} and prop["description"]
    assert specs[0].properties["queries"]["items"]["type"] == "string"
    assert specs[0].properties["max_results"]["maximum"] == MAX_RESULTS == 50
    assert [s.read_only for s in specs] == [True, True, False]
    assert specs[2].annotations() == {
        "read_only_hint": False,
        "destructive_hint": False,
        "idempotent_hint": False,
    }


def test_signature_for_the_text_protocol() -> None:
    search, get, write = memory_tools(SearchConfig(), private=True)
    assert search.signature() == (
        '{"query": str, "queries"?: [str], "variants"?: [str], "max_results"?: int, '
        '"min_score"?: number}'
    )
    assert get.signature() == '{"path": str, "from"?: int, "lines"?: int, "copy"?: str}'
    assert write.signature().startswith('{"text": str, "target"?: "daily"|"memory", "section"?: ')


def test_providers_send_exactly_the_contract() -> None:
    specs = memory_tools(SearchConfig(), private=True)
    for spec, sent in zip(specs, openai_tools(specs), strict=True):
        assert sent["function"]["name"] == spec.name
        assert sent["function"]["description"] == spec.description
        assert sent["function"]["parameters"] == dict(spec.input_schema)
    for spec, sent in zip(specs, anthropic_tools(specs), strict=True):
        assert (sent["name"], sent["description"]) == (spec.name, spec.description)
        assert sent["input_schema"] == dict(spec.input_schema)


def test_the_mcp_server_serves_the_contract_for_its_memory(workspace: Path, fake_embedder) -> None:
    (workspace / ".memdir" / "config.toml").write_text("[search]\nmax_results = 4\n")
    with Memory(workspace, embedder=fake_embedder) as mem:
        listed = MemoryTools(mem).definitions()
        expected = memory_tools(
            mem.config.search, private=True, forget=True, calibrated=mem.calibration is not None
        )
        assert listed == [s.to_dict() for s in expected]
        assert [s["name"] for s in listed][-1] == "memory_forget"
        assert "up to 4 snippets" in listed[0]["description"]


def test_one_results_cap_everywhere(memory: Memory, workspace: Path) -> None:
    with pytest.raises(QueryError, match="from 1 to 50"):
        memory.search("x", max_results=MAX_RESULTS + 1)
    assert len(memory.search("x", max_results=MAX_RESULTS).results) <= MAX_RESULTS
    with pytest.raises(ConfigError, match="max_results ≤ 50"):
        SearchConfig(max_results=MAX_RESULTS + 1)
    with pytest.raises(Exception, match="at most 50"):
        call_tool(memory, "memory_search", {"query": "x", "max_results": 51}, via="test")

    from memdir.cli import cli

    runner = CliRunner()
    result = runner.invoke(cli, ["-w", str(workspace), "search", "x", "-n", "51"])
    assert result.exit_code == 2 and "50" in result.output


def test_memory_forget_only_when_asked_and_private() -> None:
    assert [s.name for s in memory_tools(SearchConfig(), private=True)] == list(TOOL_NAMES)
    assert len(memory_tools(SearchConfig(), private=False, forget=True)) == 3
    *_, forget = memory_tools(SearchConfig(), private=True, forget=True)
    assert forget.name == "memory_forget"
    assert forget.annotations() == {
        "read_only_hint": False,
        "destructive_hint": True,
        "idempotent_hint": False,
    }
    assert forget.signature() == '{"target": str, "apply"?: bool, "force"?: bool}'
