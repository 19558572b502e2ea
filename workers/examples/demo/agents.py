"""Built-in demo agents, used by ``make run``, the tests and the benchmarks."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from workers.core.events import Event
from workers.core.registry import agent
from workers.runtime.context import AgentContext


class EchoData(BaseModel):
    model_config = ConfigDict(extra="allow")


class SleepData(BaseModel):
    ms: int = Field(ge=0, le=3_600_000)


class FailData(BaseModel):
    model_config = ConfigDict(extra="allow")
    message: str = "demo.fail always fails"


@agent("demo.echo", schema=EchoData)
async def echo(event: Event[EchoData], ctx: AgentContext) -> dict[str, Any]:
    """Returns its data."""
    return event.data.model_dump()


@agent("demo.sleep", schema=SleepData)
async def sleep(event: Event[SleepData], ctx: AgentContext) -> dict[str, int]:
    """Sleeps ``ms`` milliseconds, then returns."""
    await asyncio.sleep(event.data.ms / 1000)
    return {"slept_ms": event.data.ms}


class DemoFailure(RuntimeError):
    pass


@agent("demo.fail", schema=FailData)
async def fail(event: Event[FailData], ctx: AgentContext) -> None:
    """Always raises, to show retries and dead letters."""
    raise DemoFailure(event.data.message)
