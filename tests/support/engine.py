"""Real workers run in-process (``run_burst``, ``run_many``); the stream's entries and counters."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import redis
import redis.asyncio as aredis
from pydantic import BaseModel, ConfigDict

from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.engine.serve import create_groups
from workers.engine.worker import Worker
from workers.fanout import lineup
from workers.store.runs import DjangoRunStore

STREAM = "streamdesk:events"


class AnyData(BaseModel):
    model_config = ConfigDict(extra="allow")


def xadd(r: redis.Redis, event: dict[str, Any] | str, stream: str = STREAM) -> str:
    payload = event if isinstance(event, str) else json.dumps(event)
    return str(r.xadd(stream, {"event": payload}))


async def _run(
    url: str, configs: list[EngineConfig], registry: Registry, timeout_s: float, **services: Any
) -> list[Worker]:
    return await _run_loops(url, [(c, registry) for c in configs], timeout_s, **services)


def run_burst(
    url: str, config: EngineConfig, registry: Registry, timeout_s: float = 30, **services: Any
) -> Worker:
    """One worker until nothing is new or pending (``burst``). ``services``: the Worker's
    ``budgets`` (rate limits) and ``llm`` (an ``LLMConfig``)."""
    return asyncio.run(_run(url, [config], registry, timeout_s, **services))[0]


def run_many(
    url: str,
    configs: list[EngineConfig],
    registry: Registry,
    timeout_s: float = 30,
    **services: Any,
) -> list[Worker]:
    """Several workers (distinct consumers) at once, in one event loop."""
    return asyncio.run(_run(url, configs, registry, timeout_s, **services))


def run_fleet(
    url: str,
    config: EngineConfig,
    registry: Registry,
    agents: Sequence[str] = (),
    timeout_s: float = 30,
    **services: Any,
) -> list[Worker]:
    """What one ``runworker --burst [--agent ...]`` runs: its groups created as serve()
    creates them, then a worker per group (the home group and one per named agent)."""

    async def main() -> list[Worker]:
        client = aredis.Redis.from_url(url, decode_responses=True)
        try:
            await create_groups(client, config, registry, agents, False)
        finally:
            await client.aclose()
        loops = lineup([config], registry, agents)
        return await _run_loops(url, [(x.config, x.registry) for x in loops], timeout_s, **services)

    return asyncio.run(main())


async def _run_loops(
    url: str, loops: list[tuple[EngineConfig, Registry]], timeout_s: float, **services: Any
) -> list[Worker]:
    clients = [
        aredis.Redis.from_url(url, decode_responses=True, encoding_errors="replace") for _ in loops
    ]
    workers = [
        Worker(c, client, registry, DjangoRunStore(), **services)
        for (c, registry), client in zip(loops, clients, strict=True)
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*(w.run() for w in workers)), timeout_s)
    finally:
        for client in clients:
            await client.aclose()
    return workers


def counters(r: redis.Redis, stream: str = STREAM) -> dict[str, int]:
    return {k: int(v) for k, v in r.hgetall(f"streamdesk:stats:{stream}").items()}


def pending(r: redis.Redis, stream: str = STREAM, group: str = "agents") -> int:
    return int(r.xpending(stream, group)["pending"])
