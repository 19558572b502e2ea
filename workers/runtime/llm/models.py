"""Chat models agents call: an OpenAI-compatible endpoint through the official SDK, or a
deterministic built-in model driven by an agent's rules, so agents run offline and tests
repeat. ``select_model`` picks one from the configuration."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from pydantic import BaseModel, ConfigDict

from workers.core import tracing
from workers.core.errors import ConfigurationError
from workers.core.redact import redact_text, register_secrets
from workers.runtime.llm.config import LLMConfig
from workers.runtime.llm.errors import ModelCallFailed

if TYPE_CHECKING:
    import openai

# A chat message in OpenAI's format: {"role": ..., "content": ..., "tool_calls": [...]}.
Message = dict[str, Any]
# A tool in OpenAI's format: {"type": "function", "function": {"name", "description", ...}}.
ToolSchema = dict[str, Any]
# The built-in model's brain: the conversation and the tools in, the assistant message out.
Rules = Callable[[list[Message], list[ToolSchema]], Message]

BUILTIN_MODEL = "streamdesk-builtin"
# A rough rule of thumb for English text and JSON; enough to make usage visible offline.
CHARS_PER_TOKEN = 4
# Local servers (vLLM, Ollama) take any key, but the SDK refuses to start without one.
NO_API_KEY = "not-needed"


class Completion(BaseModel):
    """One model call's answer; stored as a durable step, so it is plain JSON."""

    model_config = ConfigDict(frozen=True)

    message: Message
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"

    @property
    def text(self) -> str:
        content = self.message.get("content")
        return content if isinstance(content, str) else ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])


class ChatModel(Protocol):
    name: str

    async def complete(self, messages: list[Message], tools: list[ToolSchema]) -> Completion: ...


def traced(complete: Any) -> Any:
    """A ``complete`` method inside a span following OpenTelemetry's GenAI conventions
    (``chat <model>``, token usage); the method itself with tracing off."""

    @functools.wraps(complete)
    async def complete_traced(
        model: Any, messages: list[Message], tools: list[ToolSchema]
    ) -> Completion:
        if not tracing.ACTIVE:
            return cast(Completion, await complete(model, messages, tools))
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model.name}
        with tracing.span(f"chat {model.name}", attributes) as span:
            done = cast(Completion, await complete(model, messages, tools))
            span.set_attribute("gen_ai.response.model", done.model)
            span.set_attribute("gen_ai.usage.input_tokens", done.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", done.completion_tokens)
            return done

    return complete_traced


class OpenAIChatModel:
    """Chat completions on an OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, ...)."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.name = config.model
        # The key leaves the process from here, whoever built the config: an endpoint that
        # echoes it (a 401 "Incorrect API key provided: sk-...") must not put it in error
        # texts, logs, dead letters or pages.
        register_secrets(config.api_key)

    @traced
    async def complete(self, messages: list[Message], tools: list[ToolSchema]) -> Completion:
        # A client per call: agents run on many event loops over a worker's life (and tests
        # start one per run), and an HTTP pool must not outlive its loop. A model call takes
        # seconds, so a fresh connection costs little.
        import openai  # here: the SDK takes a second to import, and offline nobody needs it

        try:
            async with self._client() as client:
                response = await client.chat.completions.create(
                    model=self.config.model,
                    messages=cast(Any, messages),
                    tools=cast(Any, tools) if tools else openai.omit,
                )
        except openai.OpenAIError as exc:
            # Masked here too: an agent may keep the message (in its result, say).
            raise ModelCallFailed(redact_text(f"model {self.config.model!r}: {exc}")) from exc
        if not response.choices:
            raise ModelCallFailed(f"model {self.config.model!r} answered with no choices")
        choice = response.choices[0]
        usage = response.usage
        return Completion(
            message=_assistant_message(choice.message),
            model=response.model or self.config.model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason or "stop",
        )

    def _client(self) -> openai.AsyncOpenAI:
        import openai

        return openai.AsyncOpenAI(
            base_url=self.config.base_url or None,
            api_key=self.config.api_key or NO_API_KEY,
            timeout=self.config.timeout_s,
            max_retries=self.config.max_retries,
        )


def _assistant_message(message: Any) -> Message:
    """Only the fields a request may carry back: some servers refuse the SDK's extras."""
    out: Message = {"role": "assistant", "content": message.content}
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments},
        }
        for call in message.tool_calls or []
        if getattr(call, "function", None) is not None
    ]
    if calls:
        out["tool_calls"] = calls
    return out


class BuiltinModel:
    """A deterministic model: ``rules`` decide every answer. Token counts are estimated
    (characters / 4) so a run's usage shows without a server; it costs nothing."""

    def __init__(self, rules: Rules, name: str = BUILTIN_MODEL) -> None:
        self.rules = rules
        self.name = name

    @traced
    async def complete(self, messages: list[Message], tools: list[ToolSchema]) -> Completion:
        message = _normalized(self.rules(messages, tools), position=len(messages))
        return Completion(
            message=message,
            model=self.name,
            prompt_tokens=count_tokens(messages) + count_tokens(tools),
            completion_tokens=count_tokens(message),
            finish_reason="tool_calls" if message.get("tool_calls") else "stop",
        )


def count_tokens(value: Any) -> int:
    """Estimated tokens of ``value`` as JSON (strings as themselves)."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _normalized(message: Message, position: int) -> Message:
    """Rules may leave out the role, call ids and JSON-encoding of arguments: fill them in
    as an OpenAI server would, with ids from the conversation's length so they repeat."""
    out: Message = {"role": "assistant", "content": message.get("content")}
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        calls.append(
            {
                "id": call.get("id") or f"call_{position}_{index}",
                "type": "function",
                "function": {
                    "name": function["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out


def reply(text: str) -> Message:
    """For rules: a final answer."""
    return {"role": "assistant", "content": text}


def call_tool(name: str, /, **arguments: Any) -> Message:
    """For rules: one tool call, ``call_tool("label_issue", number=12, labels=["bug"])``."""
    return call_tools((name, arguments))


def call_tools(*calls: tuple[str, dict[str, Any]]) -> Message:
    """For rules: several tool calls in one answer."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"function": {"name": n, "arguments": args}} for n, args in calls],
    }


def select_model(config: LLMConfig, rules: Rules | None = None) -> ChatModel:
    """The configured endpoint's model; with none configured, the built-in model on
    ``rules``; with neither, an error that says what to set."""
    if config.configured:
        return OpenAIChatModel(config)
    if rules is not None:
        return BuiltinModel(rules)
    raise ConfigurationError(
        "no LLM is configured and this agent has no built-in rules: set STREAMDESK_LLM_MODEL "
        "and STREAMDESK_LLM_BASE_URL (vLLM, Ollama, any OpenAI-compatible server) or "
        "STREAMDESK_LLM_API_KEY (OpenAI); see docs/llm.md"
    )
