"""Scenario 1: 20,000 preloaded events over 1,000 subjects drained by one ``runworker
--burst``, the keyed probe (``key="subject", concurrency=1``) against the same code without a
key. Measured by bench.engine.throughput's drain (the same clock and CPU meter as ``make
bench``), through a ``Runworker`` subject that preloads this suite's events."""

from __future__ import annotations

import random
from dataclasses import dataclass

from bench.common.harness import Bench
from bench.engine.subjects import Runworker
from bench.engine.throughput import drain
from bench.flow.names import KEYED_TYPE, PLAIN_TYPE
from bench.flow.world import envelope, now_ns, publish, results, worker_env

SEED = 29  # the same subjects in every run
# An event that started this long after the drain's first is one the drain left behind
# (found by the sweep after the claim idle time): the whole drain takes about 2 s.
STRANDED_S = 10.0


@dataclass(frozen=True, slots=True)
class Drained:
    rate: float  # events/s, the whole drain (bench.engine.throughput's clock)
    seconds: float
    stranded: int  # events that started STRANDED_S or more after the first
    rest_rate: float  # the others: how many, over first to last of their starts
    # CPU per event over the drain (a stranded event's wait included), microseconds.
    worker_us: float
    valkey_us: float


def subjects_of(events: int, keys: int) -> list[str]:
    """Each event's subject, drawn at random (seeded) from ``keys`` subjects: a read of 200
    holds a few events of the same key, as real traffic does, not a tidy round robin."""
    rng = random.Random(SEED)
    return [f"key/{rng.randrange(keys)}" for _ in range(events)]


class FlowDrain(Runworker):
    """``runworker --burst`` draining this suite's probe events, keyed or not."""

    def __init__(self, bench: Bench, keyed: bool, keys: int) -> None:
        super().__init__(bench)
        self.keyed = keyed
        self.keys = keys

    @property
    def key(self) -> str:
        return "keyed" if self.keyed else "unkeyed"

    def prepare(self, preload: int, latency: bool) -> None:
        self.bench.reset_redis()
        self.db = self.bench.database(f"drain-{self.key}")
        self.burst = True
        kind = KEYED_TYPE if self.keyed else PLAIN_TYPE
        tag = f"{self.key}-{now_ns()}"
        publish(
            self.bench.redis,
            (
                envelope(kind, f"{tag}-{n}", subject, {"n": n, "sent_ns": 0})
                for n, subject in enumerate(subjects_of(preload, self.keys))
            ),
        )

    def env(self) -> dict[str, str]:
        return worker_env(self.bench, self.db)


def one_round(bench: Bench, events: int, keys: int, keyed_first: bool) -> dict[str, Drained]:
    """A drain of each, in the given order (rounds alternate it)."""
    order = [True, False] if keyed_first else [False, True]
    out = {}
    for keyed in order:
        subject = FlowDrain(bench, keyed, keys)
        result = drain(subject, events)
        starts = sorted(int(r["started_ns"]) for r in results(subject.db))
        cut = starts[0] + int(STRANDED_S * 1e9)
        kept = [t for t in starts if t < cut]
        span_s = (kept[-1] - kept[0]) / 1e9
        cpu = result.cpu
        worker_us = cpu.worker / events * 1e6 if cpu else 0.0
        valkey_us = cpu.valkey / events * 1e6 if cpu else 0.0
        rest = len(kept) / max(span_s, 1e-3)
        found = Drained(
            result.rate, result.seconds, len(starts) - len(kept), rest, worker_us, valkey_us
        )
        out[subject.key] = found
        print(
            f"  drain {subject.key:8s} {found.rate:8,.0f} events/s ({events:,} in "
            f"{found.seconds:.2f} s); {found.stranded} stranded, the rest at "
            f"{found.rest_rate:,.0f}/s; CPU per event: worker {worker_us:.0f} µs, "
            f"Valkey {valkey_us:.0f} µs",
            flush=True,
        )
    return out
