from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from workers.core.errors import InvalidEventData, UnknownEventType
from workers.core.registry import Registry, default_registry


class Order(BaseModel):
    order_id: int
    amount: float


def handler(event: Any, ctx: Any) -> None:
    return None


async def ahandler(event: Any, ctx: Any) -> None:
    return None


def test_unknown_type_is_a_clear_error() -> None:
    with pytest.raises(UnknownEventType, match="'nope'"):
        Registry().get("nope")


def test_invalid_data_names_the_field() -> None:
    reg = Registry()
    reg.register("order.paid", Order, handler)
    with pytest.raises(InvalidEventData, match=r"order.paid: data.amount: Input should be"):
        reg.validate("order.paid", {"order_id": 1, "amount": "lots"})


def test_valid_data_is_parsed() -> None:
    reg = Registry()
    reg.register("order.paid", Order, handler)
    parsed = reg.validate("order.paid", {"order_id": "7", "amount": 1})
    assert isinstance(parsed, Order)
    assert parsed.order_id == 7


def test_second_agent_for_a_type_is_refused() -> None:
    reg = Registry()
    reg.register("t", Order, handler)
    with pytest.raises(ValueError, match="already has an agent"):
        reg.register("t", Order, ahandler)


def test_async_handlers_are_detected() -> None:
    reg = Registry()
    assert reg.register("a", Order, ahandler).is_async
    assert not reg.register("s", Order, handler).is_async


def test_demo_agents_are_registered() -> None:
    assert {"demo.echo", "demo.sleep", "demo.fail"} <= {s.type for s in default_registry}
