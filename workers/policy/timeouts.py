"""Running an agent within its timeout, in the task that already runs it: no timer task.

An async agent is cancelled where it waits (``asyncio.timeout``: one timer handle on the
loop). A thread cannot be stopped, so a sync agent past its timeout is waited for: its
attempt fails with reason ``timeout`` only once its thread has returned, and until then the
worker keeps its lease and its slot, so no other worker starts the event meanwhile.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

from workers.core.errors import AgentTimeout

log = logging.getLogger("streamdesk.worker")
T = TypeVar("T")


def _past(timeout_s: float) -> str:
    return f"ran past its timeout of {timeout_s:g} s"


def _cancelled_from_outside() -> bool:
    """The worker itself cancelled this task (the drain), not the timeout."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def within(awaitable: Awaitable[T], timeout_s: float) -> T:
    """``await awaitable``, cancelled after ``timeout_s`` (0: no limit): ``AgentTimeout``.
    An agent that swallows the cancel and returns late, or raises something else once
    cancelled, ran past its timeout all the same."""
    if not timeout_s:
        return await awaitable
    scope = asyncio.timeout(timeout_s)
    try:
        async with scope:
            value = await awaitable
    except BaseException as exc:
        if scope.expired() and not _cancelled_from_outside():
            raise AgentTimeout(_past(timeout_s)) from exc
        raise
    if scope.expired():
        raise AgentTimeout(_past(timeout_s))
    return value


async def in_thread(future: concurrent.futures.Future[T], timeout_s: float) -> T:
    """The result of a sync agent's call, submitted to the agents' pool as ``future``.
    Past ``timeout_s`` the thread is waited for and the attempt fails as a timeout whatever
    it returns. Cancelled (the drain), a call not yet started is cancelled too; one running
    goes on (the drain then keeps its lease: ``engine/attempts.releasable``)."""
    waiting = asyncio.wrap_future(future)
    if not timeout_s:
        return await waiting
    try:
        done, _ = await asyncio.wait((waiting,), timeout=timeout_s)
    except asyncio.CancelledError:
        _drop_if_drained(waiting)
        raise
    if done:  # in time: its result, or what it raised, as without a timeout
        return waiting.result()
    log.warning(
        "sync agent %s; its thread cannot be stopped: the event keeps its lease and its "
        "slot until the thread returns, then the attempt fails as a timeout",
        _past(timeout_s),
    )
    try:
        await waiting
    except asyncio.CancelledError:
        _drop_if_drained(waiting)
        raise
    except BaseException as exc:
        raise AgentTimeout(_past(timeout_s)) from exc
    raise AgentTimeout(_past(timeout_s))


def _drop_if_drained(waiting: asyncio.Future[Any]) -> None:
    """The worker cancelled the attempt (the drain): a call not yet started never starts."""
    if _cancelled_from_outside():
        waiting.cancel()
