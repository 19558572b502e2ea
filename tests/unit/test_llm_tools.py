"""Tools from plain functions: schema from type hints, arguments validated for the model."""

from __future__ import annotations

import asyncio
import inspect
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from workers.runtime.llm.errors import ToolArgumentsInvalid, ToolDefinitionError, ToolError
from workers.runtime.llm.tools import Tool, tool


def label_issue(
    number: int,
    labels: list[str],
    reason: Annotated[str, Field(description="one sentence for the issue's author")] = "",
) -> dict[str, Any]:
    """Put labels on a GitHub issue."""
    return {"number": number, "labels": labels, "reason": reason}


class Revoke(BaseModel):
    credential_id: str
    mode: Literal["rotate", "delete"] = "rotate"


def revoke(request: Revoke) -> str:
    """Revoke a leaked credential."""
    return f"{request.mode} {request.credential_id}"


def test_schema_is_in_openai_tools_format() -> None:
    schema = Tool(label_issue).schema()
    assert schema["type"] == "function"
    function = schema["function"]
    assert (function["name"], function["description"]) == (
        "label_issue",
        "Put labels on a GitHub issue.",
    )
    parameters = function["parameters"]
    assert parameters["type"] == "object" and "title" not in parameters
    assert parameters["required"] == ["number", "labels"]
    assert parameters["properties"]["number"]["type"] == "integer"
    assert parameters["properties"]["labels"] == {
        "items": {"type": "string"},
        "title": "Labels",
        "type": "array",
    }
    assert (
        parameters["properties"]["reason"]["description"] == "one sentence for the issue's author"
    )


def test_schema_of_a_pydantic_model_parameter_is_the_model() -> None:
    parameters = Tool(revoke).schema()["function"]["parameters"]
    assert parameters["required"] == ["credential_id"]
    assert parameters["properties"]["mode"]["enum"] == ["rotate", "delete"]


def test_schema_of_a_function_without_parameters_is_an_empty_object() -> None:
    def now() -> str:
        return "noon"

    assert Tool(now).schema()["function"]["parameters"] == {"properties": {}, "type": "object"}


def test_name_and_description_can_be_given() -> None:
    made = tool(name="label", description="Label it.")(label_issue)
    assert (made.name, made.description) == ("label", "Label it.")


def test_decorated_function_stays_callable() -> None:
    labelled = tool(label_issue)
    assert labelled(1, ["bug"]) == {"number": 1, "labels": ["bug"], "reason": ""}


def test_invoke_validates_and_coerces_arguments() -> None:
    result = asyncio.run(Tool(label_issue).invoke('{"number": "12", "labels": ["bug"]}'))
    assert result == {"number": 12, "labels": ["bug"], "reason": ""}


def test_invoke_passes_the_pydantic_model() -> None:
    assert asyncio.run(Tool(revoke).invoke({"credential_id": "AKIA1"})) == "rotate AKIA1"


def test_invoke_awaits_an_async_function() -> None:
    async def double(n: int) -> int:
        return 2 * n

    assert asyncio.run(Tool(double).invoke('{"n": 4}')) == 8


def test_invoke_with_empty_arguments_calls_without_any() -> None:
    def ping() -> str:
        return "pong"

    assert asyncio.run(Tool(ping).invoke("")) == "pong"


def test_invalid_json_is_a_message_for_the_model() -> None:
    with pytest.raises(
        ToolArgumentsInvalid, match=r"label_issue: the arguments are not valid JSON"
    ):
        Tool(label_issue).parse('{"number": 1,')


def test_arguments_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(ToolArgumentsInvalid, match="must be a JSON object, not list"):
        Tool(label_issue).parse("[1, 2]")


def test_wrong_arguments_name_every_field() -> None:
    with pytest.raises(ToolArgumentsInvalid) as caught:
        Tool(label_issue).parse('{"number": "twelve"}')
    message = str(caught.value)
    assert message.startswith("label_issue: invalid arguments")
    assert "- number: Input should be a valid integer" in message
    assert "- labels: Field required" in message


def test_a_bad_tool_name_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="tool name 'label issue'"):
        Tool(label_issue, name="label issue")


def test_a_parameter_without_a_type_hint_is_refused() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ToolDefinitionError, match="parameter 'x' needs a type hint"):
        Tool(untyped)


def test_varargs_are_refused() -> None:
    def spread(*items: int) -> int:
        return sum(items)

    with pytest.raises(ToolDefinitionError, match="parameter 'items'"):
        Tool(spread)


def test_answering_turns_a_tool_error_into_an_answer() -> None:
    def find(number: int) -> str:
        raise ToolError(f"no issue #{number}")

    assert Tool(find).answering()(number=12) == {"error": "no issue #12"}


def test_answering_keeps_async_functions_async() -> None:
    async def find(number: int) -> int:
        return number

    answer = Tool(find).answering()
    assert inspect.iscoroutinefunction(answer)
    assert asyncio.run(answer(number=3)) == {"result": 3}


def test_answering_lets_other_errors_fail_the_run() -> None:
    def down(number: int) -> str:
        raise ConnectionError("github is down")

    with pytest.raises(ConnectionError):
        Tool(down).answering()(number=1)


def test_a_parameter_named_like_a_pydantic_attribute_keeps_its_name() -> None:
    def render(json: str, copy: int = 1) -> str:
        return json * copy

    made = Tool(render)
    assert set(made.schema()["function"]["parameters"]["properties"]) == {"json", "copy"}
    assert asyncio.run(made.invoke('{"json": "ab", "copy": 2}')) == "abab"
