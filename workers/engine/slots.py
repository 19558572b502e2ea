"""How many agents a worker process runs at once, shared by its partitions' read loops.

A loop reads only as many entries as the process has unclaimed slots, and an attempt claims
its slot the moment it is started, before its task first runs, so the next read sees it
gone. Loops read concurrently, though: one may read while another's batch is still passing
the gate, so between them they can claim more than the limit. The semaphore is what bounds
the agents running at once; an attempt beyond it waits for a turn, its lease renewed like
any attempt in flight. Splitting the concurrency among the loops instead cut each loop's
batches P-fold: 8 partitions drained at 0.43x the rate of one (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio


class Slots:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.claimed = 0
        self.turns = asyncio.Semaphore(limit)
        self._freed: list[asyncio.Event] = []

    def watch(self, freed: asyncio.Event) -> None:
        """``freed`` is set whenever an attempt of any loop gives its slot back."""
        self._freed.append(freed)

    def free(self) -> int:
        return self.limit - self.claimed

    def claim(self) -> None:
        self.claimed += 1

    def give_back(self) -> None:
        self.claimed -= 1
        for freed in self._freed:
            freed.set()
