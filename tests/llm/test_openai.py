"""The OpenAI-compatible chat LLM against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from memdir.errors import ConfigError, ProviderResponseError, ProviderUnavailable
from memdir.llm import LLM, Message
from memdir.llm.openai import OpenAIChatLLM
from tests.llm.conftest import openai_reply

KEY = "sk-test-SECRET-1234567890"
OTHER_KEY = "sk-other-SECRET-0987654321"


def chat(server, sleeps, **kwargs) -> OpenAIChatLLM:
    kwargs.setdefault("model", "m")
    kwargs.setdefault("api_key", KEY)
    return OpenAIChatLLM(server.url, sleep=sleeps, **kwargs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


HI = [Message("user", "hi")]


# --- request and reply ---------------------------------------------------------------------


def test_request_shape_headers_and_reply(chat_server, sleeps):
    llm = chat(chat_server, sleeps)
    conversation = [
        Message("user", "Where is Redis?"),
        Message("assistant", "On port 6380."),
        Message("user", "And the lock?"),
    ]

    reply = llm.complete(conversation, system="Be brief.", max_tokens=50)

    assert reply == "echo: And the lock?"
    [request] = chat_server.requests
    assert request.path == "/chat/completions"
    assert request.json == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Where is Redis?"},
            {"role": "assistant", "content": "On port 6380."},
            {"role": "user", "content": "And the lock?"},
        ],
        "max_tokens": 50,
    }
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert isinstance(llm, LLM)
    assert llm.name == "openai"
    assert llm.model == "m"


def test_base_url_path_is_kept_and_defaults_apply(chat_server, sleeps):
    llm = OpenAIChatLLM(
        chat_server.url + "/v1/", "qwen2.5", None, max_output_tokens=321, sleep=sleeps
    )

    assert llm.complete([Message("user", "你好")]) == "echo: 你好"

    [request] = chat_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.json["max_tokens"] == 321
    assert request.json["messages"] == [{"role": "user", "content": "你好"}]
    assert "authorization" not in request.headers  # a local server needs no key


def test_content_parts_are_joined(chat_server, sleeps):
    body = openai_reply("")
    body["choices"][0]["message"]["content"] = [
        {"type": "text", "text": "part one, "},
        {"type": "text", "text": "part two"},
    ]
    chat_server.enqueue(200, body)

    assert chat(chat_server, sleeps).complete(HI) == "part one, part two"


def test_empty_reply_text_is_returned_as_is(chat_server, sleeps):
    chat_server.enqueue(200, openai_reply(""))

    assert chat(chat_server, sleeps).complete(HI) == ""


# --- retries -------------------------------------------------------------------------------


def test_429_is_retried_then_succeeds(chat_server, sleeps):
    chat_server.enqueue(429, {"error": {"message": "rate limited"}})
    llm = chat(chat_server, sleeps)

    assert llm.complete(HI) == "echo: hi"

    assert len(chat_server.requests) == 2
    [delay] = sleeps.delays
    assert 0.4 <= delay <= 0.6  # 0.5 s ± 20 % jitter


def test_three_5xx_give_up_naming_the_url(chat_server, sleeps):
    for _ in range(3):
        chat_server.enqueue(500, {"error": {"message": f"internal boom near {KEY}"}})
    llm = chat(chat_server, sleeps)

    with pytest.raises(ProviderResponseError) as info:
        llm.complete(HI)

    message = str(info.value)
    assert f"{chat_server.url}/chat/completions" in message
    assert "3 tries" in message
    assert "HTTP 500" in message
    assert "internal boom" in message
    assert KEY not in message
    assert len(chat_server.requests) == 3
    assert len(sleeps.delays) == 2
    assert sleeps.delays[1] > sleeps.delays[0]


def test_max_retries_sets_the_number_of_tries(chat_server, sleeps):
    for _ in range(2):
        chat_server.enqueue(503, "overloaded")

    with pytest.raises(ProviderResponseError, match="2 tries"):
        chat(chat_server, sleeps, max_retries=2).complete(HI)
    assert len(chat_server.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404])
def test_4xx_fails_at_once(chat_server, sleeps, status):
    chat_server.enqueue(status, {"error": {"message": "context length exceeded"}})

    with pytest.raises(ProviderResponseError) as info:
        chat(chat_server, sleeps).complete(HI)

    assert f"HTTP {status}" in str(info.value)
    assert "context length exceeded" in str(info.value)
    assert ("check the API key" in str(info.value)) == (status == 401)
    assert len(chat_server.requests) == 1
    assert sleeps.delays == []


def test_timeouts_are_retried_then_reported(chat_server, sleeps):
    for _ in range(3):
        chat_server.enqueue(200, openai_reply("late"), delay=0.5)
    llm = chat(chat_server, sleeps, timeout=30)

    with pytest.raises(ProviderResponseError) as info:
        llm.complete(HI, timeout=0.15)  # the per-call timeout wins over the default

    assert "timed out after 3 tries" in str(info.value)
    assert chat_server.url in str(info.value)
    assert len(chat_server.requests) == 3
    assert len(sleeps.delays) == 2


def test_one_timeout_then_success(chat_server, sleeps):
    chat_server.enqueue(200, openai_reply("late"), delay=0.5)

    assert chat(chat_server, sleeps, timeout=0.15).complete(HI) == "echo: hi"
    assert len(chat_server.requests) == 2


def test_unreachable_server_is_unavailable(sleeps):
    llm = OpenAIChatLLM(f"http://127.0.0.1:{free_port()}/v1", "m", KEY, sleep=sleeps)

    with pytest.raises(ProviderUnavailable, match="cannot reach") as info:
        llm.complete(HI)
    assert KEY not in str(info.value)


# --- malformed answers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "<html>gateway</html>",
        "[1, 2]",
        {"object": "chat.completion"},
        {"choices": []},
        {"choices": ["nope"]},
        {"choices": [{"message": {"role": "assistant"}, "finish_reason": "stop"}]},
        {"choices": [{"message": {"content": None}, "finish_reason": "tool_calls"}]},
        {"choices": [{"message": {"content": [{"type": "image"}]}}]},
    ],
)
def test_malformed_answers_are_response_errors(chat_server, sleeps, body):
    chat_server.enqueue(200, body)

    with pytest.raises(ProviderResponseError) as info:
        chat(chat_server, sleeps).complete(HI)

    assert chat_server.url in str(info.value)
    assert len(chat_server.requests) == 1


def test_error_object_in_a_200_answer_is_quoted_without_the_key(chat_server, sleeps):
    chat_server.enqueue(200, {"error": {"message": f"model not loaded for {KEY}"}})

    with pytest.raises(ProviderResponseError, match="no choices: model not loaded") as info:
        chat(chat_server, sleeps).complete(HI)
    assert KEY not in str(info.value)


# --- settings from the environment ---------------------------------------------------------


def test_missing_key_for_openai_names_the_variables():
    with pytest.raises(ProviderUnavailable) as info:
        OpenAIChatLLM()

    message = str(info.value)
    assert "MEMDIR_LLM_API_KEY" in message
    assert "OPENAI_API_KEY" in message
    assert "api.openai.com" in message


def test_missing_key_for_another_remote_server(monkeypatch):
    # An OpenAI key is not sent to another vendor's endpoint.
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_KEY)

    with pytest.raises(ProviderUnavailable, match="MEMDIR_LLM_API_KEY") as info:
        OpenAIChatLLM("https://api.deepseek.com/v1", "deepseek-chat")
    assert OTHER_KEY not in str(info.value)


def test_remote_server_other_than_openai_needs_a_model():
    with pytest.raises(ProviderUnavailable, match="MEMDIR_LLM_MODEL"):
        OpenAIChatLLM("https://dashscope.aliyuncs.com/compatible-mode/v1", None, KEY)


@pytest.mark.parametrize(
    "url",
    ["http://localhost:11434/v1", "http://192.168.1.20:8000/v1", "http://gpu-box.local:8080/v1"],
)
def test_servers_on_this_machine_or_network_need_no_key(url):
    llm = OpenAIChatLLM(url, "llama3")
    assert llm.model == "llama3"


def test_memdir_variables_win_over_openai_ones(chat_server, sleeps, monkeypatch):
    monkeypatch.setenv("MEMDIR_LLM_BASE_URL", chat_server.url)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("MEMDIR_LLM_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_KEY)
    monkeypatch.setenv("MEMDIR_LLM_MODEL", "env-model")

    llm = OpenAIChatLLM(sleep=sleeps)
    assert llm.complete(HI) == "echo: hi"

    [request] = chat_server.requests
    assert request.json["model"] == "env-model"
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_openai_variables_are_the_fallback(chat_server, sleeps, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_KEY)
    monkeypatch.setenv("MEMDIR_LLM_MODEL", "env-model")

    OpenAIChatLLM(sleep=sleeps).complete(HI)

    assert chat_server.requests[0].headers["authorization"] == f"Bearer {OTHER_KEY}"


def test_arguments_win_over_the_environment(chat_server, sleeps, monkeypatch):
    monkeypatch.setenv("MEMDIR_LLM_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.setenv("MEMDIR_LLM_API_KEY", OTHER_KEY)
    monkeypatch.setenv("MEMDIR_LLM_MODEL", "env-model")

    OpenAIChatLLM(chat_server.url, "arg-model", KEY, sleep=sleeps).complete(HI)

    [request] = chat_server.requests
    assert request.json["model"] == "arg-model"
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_openai_itself_gets_max_completion_tokens_and_a_default_model(monkeypatch):
    # No network: an httpx MockTransport stands in for api.openai.com.
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=openai_reply("hello"))

    llm = OpenAIChatLLM(transport=httpx.MockTransport(answer))
    assert llm.complete(HI, max_tokens=7) == "hello"

    [request] = seen
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    body = json.loads(request.content)
    assert body["model"] == "gpt-4o-mini"
    assert body["max_completion_tokens"] == 7
    assert "max_tokens" not in body
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_bad_base_url_is_a_config_error():
    with pytest.raises(ConfigError, match="llm base URL"):
        OpenAIChatLLM("ftp://example.com", "m", KEY)


def test_repr_never_shows_the_key(chat_server, sleeps):
    with chat(chat_server, sleeps) as llm:
        assert KEY not in repr(llm)
        assert "127.0.0.1" in repr(llm)
