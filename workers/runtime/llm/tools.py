"""Tools a model may call, built from plain Python functions: the JSON schema of the
arguments comes from the type hints (through pydantic), the description from the docstring."""

from __future__ import annotations

import functools
import inspect
import json
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

from pydantic import BaseModel, Field, ValidationError, create_model

from workers.runtime.llm.errors import ToolArgumentsInvalid, ToolDefinitionError, ToolError

# OpenAI's rule for function names; other servers accept at least these.
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Enough of a validation report for the model to fix its call, short enough to send back.
MAX_REPORTED_ERRORS = 5
SHADOWED = "arg_"


class Tool:
    """A function the model can call. ``Tool(fn)`` or the ``@tool`` decorator; the function
    stays callable as before."""

    def __init__(
        self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        if not NAME.fullmatch(self.name):
            raise ToolDefinitionError(
                f"tool name {self.name!r}: use 1 to 64 letters, digits, '_' or '-'"
            )
        self.description = description or inspect.getdoc(fn) or ""
        self.is_async = inspect.iscoroutinefunction(fn)
        self.arguments, self._model_param = _arguments_model(fn, self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def schema(self) -> dict[str, Any]:
        """The tool in OpenAI's ``tools`` format."""
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        parameters.setdefault("properties", {})
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    def parse(self, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
        """The model's arguments (a JSON string, as the API sends them) validated into the
        keyword arguments of the function; ``ToolArgumentsInvalid`` says what is wrong."""
        data = _decode(self.name, arguments)
        try:
            parsed = self.arguments.model_validate(data)
        except ValidationError as exc:
            raise ToolArgumentsInvalid(_report(self.name, exc)) from exc
        if self._model_param:
            return {self._model_param: parsed}
        return {
            info.alias or field: getattr(parsed, field)
            for field, info in type(parsed).model_fields.items()
        }

    async def invoke(self, arguments: str | Mapping[str, Any] | None) -> Any:
        """Validate ``arguments`` and call the function (a sync one inline)."""
        result = self.fn(**self.parse(arguments))
        return await result if inspect.isawaitable(result) else result

    def answering(self) -> Callable[..., Any]:
        """The function, answering ``{"result": ...}`` or, when it raises ``ToolError``,
        ``{"error": message}``: what a durable step stores. Sync stays sync, so a step runs
        it in a worker thread."""
        fn = self.fn
        if self.is_async:

            @functools.wraps(fn)
            async def answer_async(**kwargs: Any) -> dict[str, Any]:
                try:
                    return {"result": await fn(**kwargs)}
                except ToolError as exc:
                    return {"error": str(exc)}

            return answer_async

        @functools.wraps(fn)
        def answer(**kwargs: Any) -> dict[str, Any]:
            try:
                return {"result": fn(**kwargs)}
            except ToolError as exc:
                return {"error": str(exc)}

        return answer


@overload
def tool(
    fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> Tool: ...


@overload
def tool(
    fn: None = None, *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator: ``@tool`` or ``@tool(name="label", description="...")`` makes a ``Tool``."""
    if fn is not None:
        return Tool(fn, name=name, description=description)
    return lambda f: Tool(f, name=name, description=description)


def as_tool(item: Tool | Callable[..., Any]) -> Tool:
    return item if isinstance(item, Tool) else Tool(item)


def _arguments_model(fn: Callable[..., Any], name: str) -> tuple[type[BaseModel], str]:
    """A pydantic model of ``fn``'s parameters, or the one pydantic-model parameter itself
    (then the second value names that parameter)."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # a forward reference that does not resolve
        raise ToolDefinitionError(f"tool {name!r}: cannot read its type hints: {exc}") from exc
    params = list(inspect.signature(fn).parameters.values())
    fields: dict[str, Any] = {}
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {param.name!r} must be an ordinary named parameter"
            )
        if param.name not in hints:
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {param.name!r} needs a type hint for its schema"
            )
        default = ... if param.default is param.empty else param.default
        # A parameter named like a BaseModel attribute (json, schema, copy...) gets another
        # field name and keeps its own as the alias the model sees and sends.
        field_name = f"{SHADOWED}{param.name}" if hasattr(BaseModel, param.name) else param.name
        fields[field_name] = (hints[param.name], Field(default, alias=param.name))
    if len(params) == 1:
        only = hints[params[0].name]
        if inspect.isclass(only) and issubclass(only, BaseModel):
            return only, params[0].name
    return create_model(f"{name}_arguments", **fields), ""


def _decode(name: str, arguments: str | Mapping[str, Any] | None) -> Any:
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if not isinstance(arguments, str):
        return dict(arguments)
    try:
        data = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise ToolArgumentsInvalid(
            f"{name}: the arguments are not valid JSON ({exc.msg} at character {exc.pos}); "
            "send one JSON object"
        ) from exc
    if not isinstance(data, dict):
        raise ToolArgumentsInvalid(
            f"{name}: the arguments must be a JSON object, not {type(data).__name__}"
        )
    return data


def _report(name: str, exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    lines = [
        f"- {'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
        for e in errors[:MAX_REPORTED_ERRORS]
    ]
    if len(errors) > MAX_REPORTED_ERRORS:
        lines.append(f"- and {len(errors) - MAX_REPORTED_ERRORS} more")
    return f"{name}: invalid arguments, fix them and call again:\n" + "\n".join(lines)
