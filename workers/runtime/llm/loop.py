"""The tool-calling loop: ask the model, run the tools it asks for, send their answers back,
until it answers in text. Every model call and every tool call is a durable step, so a
redelivered event replays the conversation from the database instead of paying for it
again, and a tool's side effect happens once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from workers.core import tracing
from workers.runtime.context import AgentContext, SyncAgentContext
from workers.runtime.llm.errors import ToolArgumentsInvalid, ToolLoopExhausted, ToolLoopTimeout
from workers.runtime.llm.models import ChatModel, Completion, Message, ToolSchema
from workers.runtime.llm.tools import Tool, as_tool


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model made, and what it got back."""

    id: str
    name: str
    arguments: str
    result: Any = None
    # Set instead of ``result`` when the call could not run or the tool raised ToolError.
    error: str = ""
    step: str = ""

    def message(self) -> Message:
        """The ``tool`` message that answers this call."""
        if self.error:
            content = f"error: {self.error}"
        elif isinstance(self.result, str):
            content = self.result
        else:
            content = json.dumps(self.result, ensure_ascii=False)
        return {"role": "tool", "tool_call_id": self.id, "content": content}


@dataclass(frozen=True, slots=True)
class LoopResult:
    text: str
    messages: list[Message]
    # Model calls made (or replayed) by this loop.
    iterations: int
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"


async def run_tools(
    ctx: AgentContext | SyncAgentContext,
    model: ChatModel,
    messages: Sequence[Message],
    tools: Sequence[Tool | Callable[..., Any]] = (),
    *,
    name: str = "llm",
    max_iterations: int | None = None,
    timeout_s: float | None = None,
) -> LoopResult:
    """Call ``model`` with ``tools`` until it answers without tool calls. Steps are named
    ``{name}:{i}`` (model call ``i``) and ``{name}:{i}:{j}:{tool}`` (its ``j``-th tool call),
    so two loops in one agent need two names. At most ``max_iterations`` model calls (the
    configured default) and ``timeout_s`` seconds in all. A sync agent runs this with
    ``ctx.wait(run_tools(ctx, ...))``."""
    agent = ctx.ctx if isinstance(ctx, SyncAgentContext) else ctx
    limit = agent.services.llm.max_iterations if max_iterations is None else max_iterations
    if limit < 1:
        raise ValueError(f"max_iterations must be at least 1, not {limit}")
    loop = _Loop(agent, model, [as_tool(t) for t in tools], name)
    async with _deadline(name, timeout_s):
        return await loop.run(list(messages), limit)


class _Loop:
    def __init__(self, ctx: AgentContext, model: ChatModel, tools: list[Tool], name: str):
        self.ctx = ctx
        self.model = model
        self.tools = {t.name: t for t in tools}
        self.schemas: list[ToolSchema] = [t.schema() for t in tools]
        self.name = name

    async def run(self, history: list[Message], limit: int) -> LoopResult:
        calls: list[ToolCall] = []
        for i in range(limit):
            completion = await self.complete(history, f"{self.name}:{i}")
            history.append(completion.message)
            if not completion.tool_calls:
                return LoopResult(completion.text, history, i + 1, calls, completion.finish_reason)
            for j, request in enumerate(completion.tool_calls):
                call = await self.call(request, f"{self.name}:{i}:{j}")
                calls.append(call)
                history.append(call.message())
        raise ToolLoopExhausted(
            f"{self.name}: the model still asked for tools after {limit} model calls "
            "(max_iterations; STREAMDESK_LLM_MAX_ITERATIONS sets the default)"
        )

    async def complete(self, history: list[Message], step: str) -> Completion:
        # A copy: the stored step must not see messages appended after it.
        stored = await self.ctx.step(step, self.model.complete, list(history), self.schemas)
        completion = Completion.model_validate(stored)
        # Replayed or not: the run's usage counts every call it was ever charged for.
        self.ctx.add_usage(
            completion.model, completion.prompt_tokens, completion.completion_tokens, step=step
        )
        return completion

    async def call(self, request: dict[str, Any], prefix: str) -> ToolCall:
        function = request.get("function") or {}
        name = str(function.get("name", ""))
        arguments = function.get("arguments") or ""
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        call_id = str(request.get("id", ""))
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            error = f"there is no tool named {name!r}; the tools are: {known}"
            return ToolCall(call_id, name, arguments, error=error)
        try:
            kwargs = tool.parse(arguments)
        except ToolArgumentsInvalid as exc:
            return ToolCall(call_id, name, arguments, error=str(exc))
        step = f"{prefix}:{name}"
        # Its own span inside the step's: a replayed step does not call the tool.
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        run = tracing.wrap(tool.answering(), f"execute_tool {name}", attributes)
        answer = await self.ctx.step(step, run, **kwargs)
        return ToolCall(
            call_id, name, arguments, answer.get("result"), answer.get("error", ""), step
        )


@asynccontextmanager
async def _deadline(name: str, timeout_s: float | None) -> AsyncIterator[None]:
    scope = asyncio.timeout(timeout_s)
    try:
        async with scope:
            yield
    except TimeoutError as exc:
        # A tool's own TimeoutError is its failure, not the loop's deadline.
        if not scope.expired():
            raise
        raise ToolLoopTimeout(f"{name}: the tool loop took longer than {timeout_s} s") from exc
