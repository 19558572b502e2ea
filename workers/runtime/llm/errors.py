"""What the LLM layer raises: model calls that failed, tools that cannot be built or called,
and tool loops that ran out of iterations or time."""

from __future__ import annotations

from workers.core.errors import StreamdeskError


class LLMError(StreamdeskError):
    """Root of the LLM layer's errors."""


class ModelCallFailed(LLMError):
    """The chat-completions endpoint answered with an error, or could not be reached."""


class ToolDefinitionError(LLMError):
    """A function cannot be a tool: a bad name, ``*args``, or a parameter without a type."""


class ToolArgumentsInvalid(LLMError):
    """The model called a tool with arguments that are not JSON or do not fit its schema.
    The message is written for the model: the loop sends it back as the tool's answer."""


class ToolError(LLMError):
    """Raised by a tool to tell the model its call failed ("no issue #12"): the loop stores
    the message as the call's result and sends it to the model instead of failing the run."""


class ToolLoopExhausted(LLMError):
    """The model still asked for tools after ``max_iterations`` model calls."""


class ToolLoopTimeout(LLMError):
    """The tool loop took longer than its ``timeout_s``."""
