"""JSON logs from a real worker: every line one JSON object, and the lines an agent writes
(its own logger, its sync threads, its steps) carry the event it is handling."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest
import redis
from opentelemetry.sdk.trace import TracerProvider

from tests.support.engine import AnyData, run_burst, xadd
from workers.core import tracing
from workers.core.config import EngineConfig
from workers.core.logs import TextFormatter, log_format
from workers.core.registry import Registry

pytestmark = pytest.mark.django_db(transaction=True)

agent_log = logging.getLogger("tests.json_logs.agent")
FIELDS = {"event_hash", "entry_id", "event_type", "consumer"}


def registry() -> Registry:
    async def async_agent(event: Any, ctx: Any) -> None:
        agent_log.info("async agent on %s", event.data.n)
        await ctx.step("fetch", lambda: agent_log.warning("in a step thread") or 1)

    def sync_agent(event: Any, ctx: Any) -> None:
        agent_log.info("sync agent on %s", event.data.n)

    found = Registry()
    found.register("t.async", AnyData, async_agent)
    found.register("t.sync", AnyData, sync_agent)
    return found


def handled(out: io.StringIO) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every line parsed (a line that is not JSON fails here), and the agent's own."""
    parsed = [json.loads(line) for line in out.getvalue().splitlines()]
    assert all(isinstance(p, dict) for p in parsed)
    return parsed, [p for p in parsed if p["logger"] == agent_log.name]


def test_every_line_is_json_and_agent_lines_carry_the_event(
    r: redis.Redis, redis_url: str, config: EngineConfig, lines: io.StringIO
) -> None:
    ids = {
        "t.async": xadd(r, {"type": "t.async", "id": "1", "data": {"n": 1}}),
        "t.sync": xadd(r, {"type": "t.sync", "id": "2", "data": {"n": 2}}),
    }
    run_burst(redis_url, config, registry())
    parsed, mine = handled(lines)
    assert parsed and len(mine) == 3
    for line in mine:
        assert set(line) >= FIELDS, line
        assert line["entry_id"] == ids[line["event_type"]]
        assert line["consumer"] == config.consumer and len(line["event_hash"]) == 64
        assert "trace_id" not in line  # tracing is off


def test_with_tracing_on_agent_lines_carry_the_trace_id(
    r: redis.Redis, redis_url: str, config: EngineConfig, lines: io.StringIO
) -> None:
    tracing.activate(TracerProvider())
    try:
        xadd(r, {"type": "t.async", "id": "1", "data": {"n": 1}})
        run_burst(redis_url, config, registry())
    finally:
        tracing.deactivate()
    _, mine = handled(lines)
    assert len(mine) == 2
    assert len({line["trace_id"] for line in mine}) == 1
    assert len(mine[0]["trace_id"]) == 32


def test_text_lines_show_the_event_as_key_value(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(TextFormatter())
    agent_log.addHandler(handler)
    try:
        entry_id = xadd(r, {"type": "t.sync", "id": "2", "data": {"n": 2}})
        run_burst(redis_url, config, registry())
    finally:
        agent_log.removeHandler(handler)
    [line] = out.getvalue().splitlines()
    assert "sync agent on 2" in line and f"entry_id={entry_id}" in line
    assert "event_type=t.sync" in line


@pytest.mark.parametrize(
    ("environ", "chosen"),
    [
        ({}, "text"),
        ({"LOG_FORMAT": "json"}, "json"),
        ({"STREAMDESK_LOG_FORMAT": "text", "LOG_FORMAT": "json"}, "text"),
        ({"STREAMDESK_LOG_FORMAT": "JSON"}, "json"),
        ({"LOG_FORMAT": "logfmt"}, "text"),
    ],
)
def test_log_format_streamdesk_name_wins_over_the_alias(
    environ: dict[str, str], chosen: str
) -> None:
    assert log_format(environ) == chosen
