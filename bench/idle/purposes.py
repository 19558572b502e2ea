"""What each command an idle runworker fleet sends is for, and the floor: what a correct
worker must send at rest.

A command's purpose comes from its key and its connection (MONITOR's lines, monitor.py), not
from its name alone: a ``GET`` may be the pause flag or a script reading the recorder's lease.
Commands a script runs take the purpose of the script call. A connection that touches the
history keys is the history recorder's (its thread has a client of its own), so the sample it
reads (XINFO, HGETALL...) counts as the recorder's. Key names come from workers.core.keys, so
a renamed key is still recognised; a command no rule knows is "other" and shows its key.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from bench.idle.monitor import SCRIPT, SCRIPT_CALLS, Seen
from workers.core.config import EngineConfig
from workers.core.keys import Keys

READ = "blocking read"
HEARTBEAT = "heartbeat"
SWEEP = "reclaim sweep"
RECORDER = "history recorder"
PAUSE = "pause flag"
DEFERRALS = "deferred entries"
RENEWAL = "lease renewal"
PRUNE = "ghost-consumer prune"
HEALTH = "connection health check"
OTHER = "other"

# What each purpose is for, in the report's words.
MEANING = {
    READ: "XREADGROUP on the stream, blocking until an entry comes or the block time ends",
    HEARTBEAT: "the worker's heartbeat key, the workers index and the streams index",
    SWEEP: "taking over entries a dead worker left pending: the sweep token, XAUTOCLAIM, and "
    "when the next sweep is due",
    RECORDER: "the console's history: the recorder lease, the sample it reads, the points it "
    "writes",
    PAUSE: "the group's pause key",
    DEFERRALS: "writing down when held-back entries are due",
    RENEWAL: "renewing running agents' gate leases",
    PRUNE: "looking for ghost consumers to remove",
    HEALTH: "redis-py's connection health check (PING)",
    OTHER: "no rule here knows it",
}
ORDER = (READ, HEARTBEAT, SWEEP, RECORDER, PAUSE, DEFERRALS, RENEWAL, PRUNE, HEALTH, OTHER)
# Commands of one pipeline reach the server together: a keyless one (TIME) within this
# time of the previous command on its connection is taken as part of the same pipeline.
PIPELINED_S = 0.002
# The recorder ticks once a second (workers/monitor/recorder.py): the console's 1 s points.
RECORDER_TICK_S = 1.0


@dataclass(frozen=True, slots=True)
class Traffic:
    """Commands of one purpose, name and key in a window: ``sent`` by a client (a script
    call counts as one) and ``run`` in all (with what scripts ran, as commandstats counts)."""

    purpose: str
    name: str
    key: str  # as shown: consumer names and hashes replaced by <consumer>, <hash>
    sent: int
    run: int


class Classifier:
    def __init__(self, keys: Keys | None = None) -> None:
        k = keys or Keys()
        self.keys = k
        self.history = k.history("")  # "streamdesk:{history}:"
        self.patterns = [  # a key's start -> how the report shows it
            (k.worker(""), k.worker("<consumer>")),
            (k.gate(""), k.gate("<hash>")),
        ]
        self.heartbeat_keys = {k.workers_index, k.streams_index}
        self.pause = (k.paused("x", "y").partition("x")[0], k.pause_channel)
        self.sweep = k.sweep("x", "y").partition("x")[0]
        self.waits = k.waits("x", "y").partition("x")[0]
        self.gate = k.gate("")

    def shown(self, key: str) -> str:
        for start, shown in self.patterns:
            if key.startswith(start):
                return shown
        return key

    def purpose(self, s: Seen) -> str:
        """The purpose of a command a worker's connection sent (not the recorder's)."""
        key = s.key
        if s.name == "xreadgroup":
            return READ
        if key.startswith(self.patterns[0][0]) or key in self.heartbeat_keys:
            return HEARTBEAT
        if s.name in ("xautoclaim", "xpending") or key.startswith(self.sweep):
            return SWEEP
        if key.startswith(self.pause[0]) or key == self.pause[1] or s.name == "subscribe":
            return PAUSE
        if key.startswith(self.waits):
            # Its writes hold entries back; a sweep reads it for the earliest wait ahead.
            return SWEEP if s.name.startswith("zrange") else DEFERRALS
        if key.startswith(self.gate) or s.name == "xclaim":
            return RENEWAL
        if s.name == "xinfo|consumers":
            return PRUNE
        if s.name == "ping":
            return HEALTH
        return OTHER

    def classify(self, lines: Iterable[Seen]) -> list[Traffic]:
        """Each (purpose, name, key) with its commands, in the order of ``ORDER``."""
        lines = list(lines)
        recorder = {s.origin for s in lines if s.key.startswith(self.history)}
        recorder.discard(SCRIPT)
        sent: Counter[tuple[str, str, str]] = Counter()
        run: Counter[tuple[str, str, str]] = Counter()
        calling = OTHER  # the purpose of the last script call: its commands follow it
        last: dict[str, tuple[float, str]] = {}  # each connection's last command: when, why
        for s in lines:
            if s.origin == SCRIPT:
                run[(calling, s.name, self.shown(s.key))] += 1
                continue
            purpose = RECORDER if s.origin in recorder else self.purpose(s)
            at, before = last.get(s.origin, (0.0, OTHER))
            if purpose == OTHER and not s.key and s.at - at <= PIPELINED_S:
                purpose = before  # a TIME queued in a pipeline serves the pipeline's purpose
            last[s.origin] = (s.at, purpose)
            if s.name in SCRIPT_CALLS:
                calling = purpose
            row = (purpose, s.name, self.shown(s.key))
            sent[row] += 1
            run[row] += 1
        rows = [Traffic(p, n, k, sent[(p, n, k)], count) for (p, n, k), count in run.items()]
        return sorted(rows, key=lambda t: (ORDER.index(t.purpose), -t.run, t.name, t.key))


@dataclass(frozen=True, slots=True)
class Floor:
    """What a correct fleet of idle workers must send, per second, for each purpose: one
    blocking read per block time per worker (a partition loop each), one heartbeat command
    per heartbeat period per worker, one reclaim sweep per claim idle time per group for
    the whole fleet, and one recorder tick per second for the whole fleet."""

    block_s: float
    heartbeat_s: float
    claim_idle_s: float
    tick_s: float = RECORDER_TICK_S

    @classmethod
    def defaults(cls) -> Floor:
        """runworker's defaults, as the code under test has them."""
        config = EngineConfig(consumer="bench-idle")
        return cls(config.block_ms / 1000, config.heartbeat_s, config.claim_idle_ms / 1000)

    def per_purpose(self, workers: int) -> dict[str, float]:
        return {
            READ: workers / self.block_s,
            HEARTBEAT: workers / self.heartbeat_s,
            SWEEP: 1 / self.claim_idle_s,
            RECORDER: 1 / self.tick_s,
        }

    def total(self, workers: int) -> float:
        return sum(self.per_purpose(workers).values())

    def per_worker(self) -> float:
        """What each further worker must add: its reads and its heartbeats."""
        return 1 / self.block_s + 1 / self.heartbeat_s
