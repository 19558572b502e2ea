"""workers/core/batcher.py: concurrent submissions share calls; each caller gets its own answer."""

from __future__ import annotations

import asyncio

import pytest

from workers.core.batcher import Batcher


def test_items_submitted_while_a_call_runs_go_together_into_the_next() -> None:
    sizes: list[int] = []

    async def double(items: list[int]) -> list[object]:
        sizes.append(len(items))
        await asyncio.sleep(0.01)
        return [ValueError(f"odd {i}") if i == 7 else i * 2 for i in items]

    async def go() -> list[object]:
        batcher: Batcher[int, object] = Batcher(double)
        first = asyncio.create_task(batcher.submit(0))
        await asyncio.sleep(0.002)  # its call is in flight now
        rest = await asyncio.gather(
            *(batcher.submit(i) for i in range(1, 10)), return_exceptions=True
        )
        together = await asyncio.gather(*(batcher.submit(i) for i in range(5)))
        assert together == [0, 2, 4, 6, 8]
        return [await first, *rest]

    answers = asyncio.run(go())
    assert sizes == [1, 9, 5]
    assert answers[:7] == [0, 2, 4, 6, 8, 10, 12] and answers[8:] == [16, 18]
    assert isinstance(answers[7], ValueError)


def test_a_failed_call_fails_its_batch_and_the_next_one_still_runs() -> None:
    calls = 0

    async def flaky(items: list[int]) -> list[int]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("database restarting")
        return items

    async def go() -> None:
        batcher: Batcher[int, int] = Batcher(flaky)
        with pytest.raises(ConnectionError):
            await batcher.submit(1)
        assert await batcher.submit(2) == 2

    asyncio.run(go())
