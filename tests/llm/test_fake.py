"""The scripted LLM shipped for tests."""

from __future__ import annotations

import pytest

import memdir
from memdir.errors import ProviderResponseError
from memdir.llm import LLM, Message, ScriptedLLM

HI = [Message("user", "hi")]


def test_replies_come_in_order_and_calls_are_recorded():
    llm = ScriptedLLM(["first"])
    llm.enqueue("second")

    assert llm.complete(HI, system="sys one") == "first"
    assert llm.complete([Message("user", "again")], max_tokens=5, timeout=15) == "second"

    assert llm.history == [("sys one", HI), (None, [Message("user", "again")])]
    assert llm.calls[1].max_tokens == 5
    assert llm.calls[1].timeout == 15
    assert llm.pending == 0


def test_default_reply_when_the_queue_is_empty():
    assert ScriptedLLM().complete(HI) == ""
    assert ScriptedLLM(default="NO_REPLY").complete(HI) == "NO_REPLY"


def test_strict_fails_loudly_when_nothing_is_queued():
    llm = ScriptedLLM(strict=True)
    llm.enqueue("only one")
    assert llm.complete(HI) == "only one"

    with pytest.raises(AssertionError, match="no reply queued"):
        llm.complete([Message("user", "one more")])
    assert len(llm.history) == 2


def test_a_queued_exception_is_raised_once():
    llm = ScriptedLLM()
    llm.enqueue(ProviderResponseError("overloaded"))
    llm.enqueue("recovered")

    with pytest.raises(ProviderResponseError, match="overloaded"):
        llm.complete(HI)
    assert llm.complete(HI) == "recovered"
    assert len(llm.history) == 2


def test_responder_answers_after_the_queue():
    llm = ScriptedLLM(["queued"], responder=lambda messages: messages[-1].content.upper())

    assert llm.complete(HI) == "queued"
    assert llm.complete([Message("user", "shout")]) == "SHOUT"


def test_only_text_or_exceptions_can_be_queued():
    with pytest.raises(TypeError):
        ScriptedLLM().enqueue(42)  # type: ignore[arg-type]


def test_history_is_a_copy_of_what_was_sent():
    llm = ScriptedLLM()
    conversation = [Message("user", "a")]
    llm.complete(conversation)
    conversation.append(Message("assistant", "b"))

    assert llm.history == [(None, [Message("user", "a")])]


def test_it_is_an_llm_and_exported_from_the_package():
    llm = memdir.ScriptedLLM(model="tiny")
    assert isinstance(llm, memdir.LLM)
    assert isinstance(llm, LLM)
    assert (llm.name, llm.model) == ("fake", "tiny")
    assert "tiny" in repr(llm)


def test_message_checks_its_role_and_content():
    with pytest.raises(ValueError, match="role"):
        Message("robot", "hi")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Message("user", None)  # type: ignore[arg-type]
    assert Message("tool", "42 passed").role == "tool"
