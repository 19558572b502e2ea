"""The tool-calling loop on an agent context whose steps are kept in memory: what goes back
to the model, the bounds, and replay of stored steps."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from workers.core.errors import Deferred
from workers.core.records import StepWrite
from workers.runtime.context import AgentContext, Services
from workers.runtime.llm.config import LLMConfig, Price
from workers.runtime.llm.errors import ToolError, ToolLoopExhausted, ToolLoopTimeout
from workers.runtime.llm.loop import LoopResult, run_tools
from workers.runtime.llm.models import BuiltinModel, Message, call_tool, call_tools, reply

Rules = Callable[[list[Message], list[dict[str, Any]]], Message]


class MemorySteps:
    """The step store's contract (load all, save one, return the stored value) in a dict,
    as JSON text so a value comes back the way the database gives it."""

    def __init__(self) -> None:
        self.saved: dict[str, str] = {}

    async def load_steps(self, event_hash: str) -> dict[str, Any]:
        return {name: json.loads(value) for name, value in self.saved.items()}

    async def save_step(self, write: StepWrite) -> Any:
        self.saved.setdefault(write.name, json.dumps(write.value))
        return json.loads(self.saved[write.name])


def context(steps: MemorySteps, llm: LLMConfig | None = None) -> AgentContext:
    services = Services(steps, llm=llm or LLMConfig(prices={"streamdesk-builtin": Price(1, 2)}))
    return AgentContext(
        services,
        consumer="w1",
        stream="s",
        group="g",
        event_type="test.llm",
        event_hash="e" * 64,
        token=1,
        deliveries=1,
        lease="lease",
    )


def attempt(
    steps: MemorySteps, run: Callable[[AgentContext], Awaitable[LoopResult]]
) -> tuple[LoopResult, AgentContext]:
    async def go() -> tuple[LoopResult, AgentContext]:
        ctx = context(steps)
        return await run(ctx), ctx

    return asyncio.run(go())


def counting(rules: Rules, seen: Counter[str]) -> Rules:
    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        seen["model"] += 1
        return rules(messages, tools)

    return model


def one_call_then_reply(name: str, **arguments: Any) -> Rules:
    def rules(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        if messages[-1]["role"] == "tool":
            return reply(f"done: {messages[-1]['content']}")
        return call_tool(name, **arguments)

    return rules


USER: list[Message] = [{"role": "user", "content": "label issue 12"}]


def test_loop_runs_the_tool_and_returns_the_final_text() -> None:
    ran: list[int] = []

    def label(number: int) -> dict[str, Any]:
        ran.append(number)
        return {"labelled": number}

    model = BuiltinModel(one_call_then_reply("label", number=12))
    result, ctx = attempt(MemorySteps(), lambda ctx: run_tools(ctx, model, USER, [label]))

    assert ran == [12]
    assert result.text == 'done: {"labelled": 12}'
    assert result.iterations == 2
    assert [(c.name, c.result, c.step) for c in result.tool_calls] == [
        ("label", {"labelled": 12}, "llm:0:0:label")
    ]
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.messages[2]["tool_call_id"] == result.messages[1]["tool_calls"][0]["id"]
    assert ctx.usage.calls == 2 and ctx.usage.prompt_tokens > 0
    assert ctx.usage.cost_usd > 0 and ctx.spent == ctx.usage


def test_loop_on_a_second_attempt_replays_model_and_tool_calls() -> None:
    steps, seen = MemorySteps(), Counter[str]()

    async def label(number: int) -> str:
        seen["tool"] += 1
        return f"labelled {number}"

    model = BuiltinModel(counting(one_call_then_reply("label", number=12), seen))
    first, _ = attempt(steps, lambda ctx: run_tools(ctx, model, USER, [label]))
    second, ctx = attempt(steps, lambda ctx: run_tools(ctx, model, USER, [label]))

    assert seen == {"model": 2, "tool": 1}
    assert second.messages == first.messages and second.text == "done: labelled 12"
    assert set(steps.saved) == {"llm:0", "llm:0:0:label", "llm:1"}
    # The run's usage still counts both calls; this attempt paid for none.
    assert ctx.usage.calls == 2 and ctx.spent.calls == 0


def test_unknown_tool_is_answered_with_the_known_ones() -> None:
    def label(number: int) -> str:
        return "ok"

    model = BuiltinModel(one_call_then_reply("close_issue", number=1))
    result, _ = attempt(MemorySteps(), lambda ctx: run_tools(ctx, model, USER, [label]))

    assert (
        result.tool_calls[0].error == "there is no tool named 'close_issue'; the tools are: label"
    )
    assert result.messages[2]["content"].startswith("error: there is no tool named")


def test_invalid_arguments_go_back_to_the_model_and_nothing_runs() -> None:
    ran: list[int] = []

    def label(number: int) -> str:
        ran.append(number)
        return "ok"

    steps = MemorySteps()
    model = BuiltinModel(one_call_then_reply("label", number="twelve"))
    result, _ = attempt(steps, lambda ctx: run_tools(ctx, model, USER, [label]))

    assert ran == []
    assert "number: Input should be a valid integer" in result.messages[2]["content"]
    assert result.text.startswith("done: error: label: invalid arguments")
    assert set(steps.saved) == {"llm:0", "llm:1"}


def test_a_tool_error_is_stored_and_sent_to_the_model() -> None:
    def label(number: int) -> str:
        raise ToolError(f"no issue #{number}")

    steps = MemorySteps()
    model = BuiltinModel(one_call_then_reply("label", number=12))
    result, _ = attempt(steps, lambda ctx: run_tools(ctx, model, USER, [label]))

    assert result.text == "done: error: no issue #12"
    assert json.loads(steps.saved["llm:0:0:label"]) == {"error": "no issue #12"}


def test_several_calls_in_one_answer_each_get_a_step() -> None:
    def rules(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        if messages[-1]["role"] == "tool":
            return reply("both done")
        return call_tools(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}))

    def add(a: int, b: int) -> int:
        return a + b

    steps = MemorySteps()
    result, _ = attempt(steps, lambda ctx: run_tools(ctx, BuiltinModel(rules), USER, [add]))

    assert [c.result for c in result.tool_calls] == [3, 7]
    assert {"llm:0:0:add", "llm:0:1:add"} <= set(steps.saved)


def test_a_model_that_never_stops_calling_tools_is_bounded() -> None:
    def ping() -> str:
        return "pong"

    def forever(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        return call_tool("ping")

    steps = MemorySteps()
    with pytest.raises(ToolLoopExhausted, match="after 3 model calls"):
        attempt(
            steps, lambda ctx: run_tools(ctx, BuiltinModel(forever), USER, [ping], max_iterations=3)
        )
    assert sorted(n for n in steps.saved if n.count(":") == 1) == ["llm:0", "llm:1", "llm:2"]


def test_max_iterations_defaults_to_the_configuration() -> None:
    def forever(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        return call_tool("ping")

    def ping() -> str:
        return "pong"

    async def run() -> LoopResult:
        ctx = context(MemorySteps(), LLMConfig(max_iterations=2))
        return await run_tools(ctx, BuiltinModel(forever), USER, [ping])

    with pytest.raises(ToolLoopExhausted, match="after 2 model calls"):
        asyncio.run(run())


def test_the_whole_loop_is_bounded_by_timeout_s() -> None:
    async def slow() -> str:
        await asyncio.sleep(5)
        return "late"

    model = BuiltinModel(one_call_then_reply("slow"))
    with pytest.raises(ToolLoopTimeout, match=r"longer than 0\.05 s"):
        attempt(MemorySteps(), lambda ctx: run_tools(ctx, model, USER, [slow], timeout_s=0.05))


def test_a_tools_own_timeout_is_not_the_loops() -> None:
    async def flaky() -> str:
        raise TimeoutError("upstream timed out")

    model = BuiltinModel(one_call_then_reply("flaky"))
    with pytest.raises(TimeoutError, match="upstream timed out"):
        attempt(MemorySteps(), lambda ctx: run_tools(ctx, model, USER, [flaky], timeout_s=10))


def test_deferred_from_a_tool_passes_through_untouched() -> None:
    async def post() -> str:
        raise Deferred("slack", 250)

    steps = MemorySteps()
    model = BuiltinModel(one_call_then_reply("post"))
    with pytest.raises(Deferred) as caught:
        attempt(steps, lambda ctx: run_tools(ctx, model, USER, [post], timeout_s=10))
    assert (caught.value.budget, caught.value.wait_ms) == ("slack", 250)
    # The model call before it is stored: the rerun does not pay for it again.
    assert set(steps.saved) == {"llm:0"}


def test_max_iterations_below_one_is_refused() -> None:
    model = BuiltinModel(one_call_then_reply("ping"))
    with pytest.raises(ValueError, match="at least 1, not 0"):
        attempt(MemorySteps(), lambda ctx: run_tools(ctx, model, USER, [], max_iterations=0))
