"""The built-in model, completions as JSON, and which model an agent gets."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic_core import to_jsonable_python

from workers.core.errors import ConfigurationError
from workers.runtime.llm.config import LLMConfig
from workers.runtime.llm.models import (
    BUILTIN_MODEL,
    BuiltinModel,
    Completion,
    Message,
    OpenAIChatModel,
    call_tool,
    call_tools,
    count_tokens,
    reply,
    select_model,
)

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "label", "parameters": {}}}
]


def triage(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
    if messages[-1]["role"] == "tool":
        return reply("labelled")
    return call_tool("label", number=12, labels=["bug"])


def complete(model: BuiltinModel, messages: list[Message]) -> Completion:
    return asyncio.run(model.complete(messages, TOOLS))


def test_builtin_model_fills_in_a_tool_call_as_a_server_would() -> None:
    answer = complete(BuiltinModel(triage), [{"role": "user", "content": "crash on start"}])
    assert answer.model == BUILTIN_MODEL and answer.finish_reason == "tool_calls"
    assert answer.message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1_0",
                "type": "function",
                "function": {"name": "label", "arguments": '{"number": 12, "labels": ["bug"]}'},
            }
        ],
    }


def test_builtin_model_answers_text() -> None:
    messages = [{"role": "user", "content": "x"}, {"role": "tool", "content": "ok"}]
    answer = complete(BuiltinModel(triage), messages)
    assert (answer.text, answer.tool_calls, answer.finish_reason) == ("labelled", [], "stop")


def test_builtin_model_counts_tokens_deterministically() -> None:
    messages = [{"role": "user", "content": "a" * 400}]
    first, second = (
        complete(BuiltinModel(triage), messages),
        complete(BuiltinModel(triage), messages),
    )
    assert first == second
    assert first.prompt_tokens == count_tokens(messages) + count_tokens(TOOLS) > 100
    assert first.completion_tokens == count_tokens(first.message) > 0


def test_count_tokens_is_characters_over_four_rounded_up() -> None:
    assert (count_tokens(""), count_tokens("abcd"), count_tokens("abcde")) == (0, 1, 2)


def test_call_tools_makes_several_calls_in_one_answer() -> None:
    def both(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        return call_tools(("a", {"x": 1}), ("b", {}))

    answer = complete(BuiltinModel(both), [{"role": "user", "content": "go"}])
    assert [c["id"] for c in answer.tool_calls] == ["call_1_0", "call_1_1"]
    assert [c["function"]["arguments"] for c in answer.tool_calls] == ['{"x": 1}', "{}"]


def test_completion_round_trips_through_json() -> None:
    answer = complete(BuiltinModel(triage), [{"role": "user", "content": "x"}])
    stored = json.loads(json.dumps(to_jsonable_python(answer)))
    assert Completion.model_validate(stored) == answer


def test_select_model_prefers_the_configured_endpoint() -> None:
    config = LLMConfig(base_url="http://127.0.0.1:8000/v1", model="qwen2.5")
    model = select_model(config, triage)
    assert isinstance(model, OpenAIChatModel) and model.name == "qwen2.5"


def test_select_model_without_endpoint_uses_the_rules() -> None:
    model = select_model(LLMConfig(), triage)
    assert isinstance(model, BuiltinModel) and model.name == BUILTIN_MODEL


def test_select_model_without_endpoint_or_rules_says_what_to_set() -> None:
    with pytest.raises(ConfigurationError, match=r"STREAMDESK_LLM_MODEL.*STREAMDESK_LLM_BASE_URL"):
        select_model(LLMConfig())
