"""``OpenAIChatModel`` (the official SDK) against a real local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.llm_server import MODEL, scripted_server, text, tool_call
from workers.runtime.llm.config import LLMConfig
from workers.runtime.llm.errors import ModelCallFailed
from workers.runtime.llm.models import Completion, OpenAIChatModel
from workers.runtime.llm.tools import Tool


def label_issue(number: int, labels: list[str]) -> str:
    """Put labels on a GitHub issue."""
    return "ok"


def complete(config: LLMConfig, tools: list[dict[str, Any]] | None = None) -> Completion:
    model = OpenAIChatModel(config)
    return asyncio.run(model.complete([{"role": "user", "content": "triage #12"}], tools or []))


def test_a_tool_call_comes_back_with_its_usage() -> None:
    schema = Tool(label_issue).schema()
    with scripted_server([tool_call("label_issue", {"number": 12}, usage=(120, 15))]) as server:
        answer = complete(LLMConfig(base_url=server.url, model="m", max_retries=0), [schema])

    assert (answer.model, answer.prompt_tokens, answer.completion_tokens) == (MODEL, 120, 15)
    assert answer.finish_reason == "tool_calls"
    assert answer.tool_calls == [
        {
            "id": "call_label_issue",
            "type": "function",
            "function": {"name": "label_issue", "arguments": '{"number": 12}'},
        }
    ]
    (request,) = server.requests
    assert request["model"] == "m"
    assert request["messages"] == [{"role": "user", "content": "triage #12"}]
    assert request["tools"] == [schema]


def test_a_request_without_tools_sends_no_tools_field() -> None:
    with scripted_server([text("fine")]) as server:
        answer = complete(LLMConfig(base_url=server.url, model="m", max_retries=0))
    assert answer.text == "fine" and answer.tool_calls == []
    assert "tools" not in server.requests[0]


def test_the_api_key_is_sent_as_a_bearer_token() -> None:
    with scripted_server([text("fine")]) as server:
        complete(LLMConfig(base_url=server.url, api_key="sk-local", model="m", max_retries=0))
    assert server.headers[0]["authorization"] == "Bearer sk-local"


def test_an_error_answer_is_a_model_call_failed_with_its_cause() -> None:
    bad = (400, {"error": {"message": "model 'm' not found", "type": "invalid_request_error"}})
    with scripted_server([bad]) as server, pytest.raises(ModelCallFailed) as caught:
        complete(LLMConfig(base_url=server.url, model="m", max_retries=0))
    assert "model 'm' not found" in str(caught.value)
    assert caught.value.__cause__ is not None


def test_a_server_error_is_retried_by_the_sdk_inside_one_call() -> None:
    with scripted_server([(503, {"error": {"message": "busy"}}), text("fine")]) as server:
        answer = complete(LLMConfig(base_url=server.url, model="m", max_retries=1))
    assert answer.text == "fine" and len(server.requests) == 2


def test_an_unreachable_server_is_a_model_call_failed() -> None:
    with scripted_server([]) as server:
        url = server.url
    with pytest.raises(ModelCallFailed, match="model 'm'"):
        complete(LLMConfig(base_url=url, model="m", max_retries=0, timeout_s=2))
