"""The Anthropic LLM: message mapping always; the real SDK against 127.0.0.1 when installed."""

from __future__ import annotations

import socket
import sys

import pytest

from memdir.errors import ProviderResponseError, ProviderUnavailable
from memdir.llm import LLM, Message
from memdir.llm.anthropic import AnthropicLLM, to_anthropic_messages
from tests.llm.conftest import anthropic_reply

KEY = "sk-ant-test-SECRET-1234567890"
#: Makes the SDK's retry wait a few milliseconds instead of half a second.
FAST_RETRY = {"retry-after-ms": "5"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- without the SDK -----------------------------------------------------------------------


def test_missing_sdk_gives_the_pip_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes `import anthropic` fail

    with pytest.raises(ProviderUnavailable) as info:
        AnthropicLLM("claude-test", KEY)

    assert "pip install 'anthropic>=0.40'" in str(info.value)
    assert "pip install '.[anthropic]'" in str(info.value)
    assert KEY not in str(info.value)


def test_system_messages_join_the_system_prompt_and_roles_alternate():
    messages = [
        Message("system", "Today is Monday."),
        Message("user", "Run the tests."),
        Message("assistant", "Running."),
        Message("tool", "42 passed"),
        Message("user", "Good?"),
        Message("assistant", "Yes."),
    ]

    system, wire = to_anthropic_messages(messages, "You are careful.")

    assert system == "You are careful.\n\nToday is Monday."
    assert wire == [
        {"role": "user", "content": "Run the tests."},
        {"role": "assistant", "content": "Running."},
        {"role": "user", "content": "[tool result]\n42 passed\n\nGood?"},
        {"role": "assistant", "content": "Yes."},
    ]


def test_a_conversation_of_only_system_text_is_refused():
    with pytest.raises(ValueError, match="at least one user or assistant"):
        to_anthropic_messages([Message("system", "rules")], "more rules")


# --- with the SDK, against a real server on 127.0.0.1 --------------------------------------


@pytest.fixture
def sdk():
    return pytest.importorskip("anthropic")


def claude(server, **kwargs) -> AnthropicLLM:
    kwargs.setdefault("max_retries", 1)
    return AnthropicLLM(kwargs.pop("model", "claude-test"), KEY, base_url=server.url, **kwargs)


def test_request_and_reply_mapping(sdk, chat_server):
    chat_server.enqueue(200, anthropic_reply("Port ", "6380."))
    llm = claude(chat_server)

    reply = llm.complete(
        [Message("system", "Use the notes."), Message("user", "Which port?")],
        system="Be brief.",
        max_tokens=99,
    )

    assert reply == "Port 6380."
    [request] = chat_server.requests
    assert request.path == "/v1/messages"
    assert request.json["model"] == "claude-test"
    assert request.json["max_tokens"] == 99
    assert request.json["system"] == "Be brief.\n\nUse the notes."
    assert request.json["messages"] == [{"role": "user", "content": "Which port?"}]
    # SDK versions differ in the header that carries the key.
    assert KEY in (request.headers.get("x-api-key"), request.headers.get("authorization", "")[7:])
    assert "anthropic-version" in request.headers
    assert isinstance(llm, LLM)
    assert (llm.name, llm.model) == ("anthropic", "claude-test")


def test_default_max_tokens_and_no_system(sdk, chat_server):
    llm = claude(chat_server, max_output_tokens=123)

    assert llm.complete([Message("user", "你好")]) == "echo: 你好"

    [request] = chat_server.requests
    assert request.json["max_tokens"] == 123
    assert "system" not in request.json


def test_auth_token_from_the_environment(sdk, chat_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-SECRET-123")
    llm = AnthropicLLM("claude-test", base_url=chat_server.url, max_retries=1)

    llm.complete([Message("user", "hi")])

    assert chat_server.requests[0].headers["authorization"] == "Bearer tok-SECRET-123"


def test_overload_is_retried_by_the_sdk(sdk, chat_server):
    chat_server.enqueue(529, {"type": "error", "error": {"type": "overloaded_error"}}, FAST_RETRY)
    llm = claude(chat_server, max_retries=2)

    assert llm.complete([Message("user", "hi")]) == "echo: hi"
    assert len(chat_server.requests) == 2


def test_server_errors_give_up_after_max_retries(sdk, chat_server):
    for _ in range(2):
        chat_server.enqueue(
            500,
            {"type": "error", "error": {"type": "api_error", "message": f"boom {KEY}"}},
            FAST_RETRY,
        )
    llm = claude(chat_server, max_retries=2)

    with pytest.raises(ProviderResponseError) as info:
        llm.complete([Message("user", "hi")])

    message = str(info.value)
    assert "gave up after 2 tries" in message
    assert "HTTP 500" in message
    assert chat_server.url in message
    assert KEY not in message
    assert len(chat_server.requests) == 2


def test_bad_key_fails_at_once(sdk, chat_server):
    chat_server.enqueue(
        401, {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    )

    with pytest.raises(ProviderResponseError, match="HTTP 401 \\(check the API key\\)") as info:
        claude(chat_server, max_retries=3).complete([Message("user", "hi")])
    assert KEY not in str(info.value)
    assert len(chat_server.requests) == 1


def test_timeout_is_reported(sdk, chat_server):
    chat_server.enqueue(200, anthropic_reply("late"), delay=0.5)

    with pytest.raises(ProviderResponseError, match="timed out after 1 try"):
        claude(chat_server, timeout=30).complete([Message("user", "hi")], timeout=0.15)


def test_answer_without_text_is_an_error(sdk, chat_server):
    body = anthropic_reply()
    body["stop_reason"] = "max_tokens"
    chat_server.enqueue(200, body)

    with pytest.raises(ProviderResponseError, match=r"no text.*max_tokens"):
        claude(chat_server).complete([Message("user", "hi")])


@pytest.mark.parametrize(
    "body", ["<html>oops</html>", [1], {"type": "message"}, {"content": [{"type": "text"}]}]
)
def test_malformed_answers_are_response_errors(sdk, chat_server, body):
    chat_server.enqueue(200, body)

    with pytest.raises(ProviderResponseError) as info:
        claude(chat_server).complete([Message("user", "hi")])
    assert chat_server.url in str(info.value)


def test_unreachable_server_is_unavailable(sdk):
    llm = AnthropicLLM(
        "claude-test", KEY, base_url=f"http://127.0.0.1:{free_port()}", max_retries=1
    )

    with pytest.raises(ProviderUnavailable, match="cannot reach") as info:
        llm.complete([Message("user", "hi")])
    assert KEY not in str(info.value)


def test_remote_server_needs_a_key(sdk):
    with pytest.raises(ProviderUnavailable, match="ANTHROPIC_API_KEY"):
        AnthropicLLM("claude-test")


def test_model_and_base_url_from_the_environment(sdk, chat_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", chat_server.url)
    monkeypatch.setenv("MEMDIR_LLM_MODEL", "claude-env")

    llm = AnthropicLLM(api_key=KEY, max_retries=1)
    llm.complete([Message("user", "hi")])

    assert chat_server.requests[0].json["model"] == "claude-env"


def test_default_model():
    pytest.importorskip("anthropic")
    assert AnthropicLLM(api_key=KEY).model == "claude-haiku-4-5"
