"""Agent versions (issue 31 item 2): ``@agent(version=)``, else a hash of the handler's code,
recorded on every run; a bad version refused at import."""

from __future__ import annotations

import pytest
import redis
from pydantic import BaseModel

from tests.support.engine import AnyData, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.errors import ConfigurationError
from workers.core.registry import Registry, code_version
from workers.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)


class Data(BaseModel):
    n: int = 0


async def first(event: object, ctx: object) -> str:
    return "one"


async def second(event: object, ctx: object) -> str:
    return "two"


def test_the_default_version_follows_the_handlers_code() -> None:
    assert code_version(first) != code_version(second)
    assert code_version(first) == code_version(first) and len(code_version(first)) == 12
    registry = Registry()
    spec = registry.register("t.one", Data, first)
    assert spec.version == code_version(first)


def test_a_declared_version_is_kept_and_a_bad_one_refused() -> None:
    registry = Registry()
    registry.agent("t.v", schema=Data, version="2")(first)
    assert registry.get("t.v").version == "2"
    for bad in ("", "x" * 65, 2):
        with pytest.raises(ConfigurationError, match="version must be a string"):
            Registry().agent("t.bad", schema=Data, version=bad)(first)  # type: ignore[arg-type]


def test_each_run_records_the_version_that_ran_it(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    old = Registry()
    old.agent("t.summary", schema=AnyData, version="1")(first)
    xadd(r, {"type": "t.summary", "source": "t", "id": "a", "data": {}})
    run_burst(redis_url, config, old)
    new = Registry()
    new.agent("t.summary", schema=AnyData)(second)
    xadd(r, {"type": "t.summary", "source": "t", "id": "b", "data": {}})
    run_burst(redis_url, config, new)
    got = dict(AgentRun.objects.values_list("event_id", "version"))
    assert got == {"a": "1", "b": code_version(second)}
