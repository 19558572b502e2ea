"""One engine benchmark run's parameters and results, and the ratios its report states."""

from __future__ import annotations

from dataclasses import dataclass

from bench.common.databases import POSTGRES, SQLITE
from bench.common.machine import Machine
from bench.engine.latency import Pickup
from bench.engine.subjects import runworker_key
from bench.engine.throughput import Memory, Rates

RAW, NAIVE = "raw", "naive"


def floor_key(kind: str) -> str:
    return f"floor/{kind}"


@dataclass(frozen=True, slots=True)
class Params:
    events: int
    repeats: int
    rate: float
    light_rate: float
    seconds: float
    warmup_s: float
    memory_events: int
    processes: int
    command: str


@dataclass(frozen=True, slots=True)
class Results:
    machine: Machine
    params: Params
    began: float
    ended: float
    rates: dict[str, Rates]
    pickups: dict[str, Pickup]
    light: dict[str, Pickup]
    memory: list[Memory]  # per database kind: default settings, then DEBUG=0
    postgres: str  # the server as shown, when measured
    postgres_skipped: str  # why not, when not

    @property
    def kinds(self) -> list[str]:
        return [SQLITE, POSTGRES] if self.postgres else [SQLITE]

    def rate(self, key: str) -> float:
        return self.rates[key].median

    def ours(self, kind: str = SQLITE, processes: int = 1) -> float:
        return self.rate(runworker_key(kind, processes))

    @property
    def throughput_ratio(self) -> float:
        return self.ours() / self.rate(RAW)

    @property
    def floor_ratio(self) -> float:
        """floor / raw: the most of the raw loop a worker doing the required work reached."""
        return self.rate(floor_key(SQLITE)) / self.rate(RAW)

    def floor_share(self, kind: str = SQLITE) -> float:
        """runworker / floor on one database: the figure to watch."""
        return self.ours(kind) / self.rate(floor_key(kind))

    def scaling(self, kind: str) -> float:
        """runworker --processes N / one process."""
        return self.ours(kind, self.params.processes) / self.ours(kind)

    @property
    def postgres_ratio(self) -> float:
        return self.ours(POSTGRES) / self.ours(SQLITE)

    def p99(self, kind: str, light: bool = False) -> float:
        return (self.light if light else self.pickups)[runworker_key(kind)].p99_ms

    def raw_p99_ratio(self, kind: str) -> float:
        return self.p99(kind) / self.pickups[RAW].p99_ms

    def floor_p99(self, kind: str) -> float | None:
        """The floor's pickup p99 at the steady rate, if this run measured it."""
        floor = self.pickups.get(floor_key(kind))
        return floor.p99_ms if floor is not None else None
