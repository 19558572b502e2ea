"""The engine's configuration: one frozen object, built at the edge and passed down."""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass, field, fields, replace
from typing import Any

from workers.core import keys
from workers.core.errors import ConfigurationError
from workers.core.events import DEFAULT_MAX_EVENT_BYTES
from workers.core.partitions import Partitions
from workers.core.retry import RetryPolicy


def default_consumer() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True, slots=True)
class EngineConfig:
    stream: str = keys.DEFAULT_STREAM
    group: str = keys.DEFAULT_GROUP
    consumer: str = field(default_factory=default_consumer)
    prefix: str = keys.DEFAULT_PREFIX
    concurrency: int = 16
    batch_size: int = 100
    block_ms: int = 30_000
    max_deliveries: int = 5
    claim_idle_ms: int = 60_000
    lease_ms: int = 30_000
    retry_base_ms: int = 1_000
    reclaim_interval_ms: int = 1_000
    drain_timeout_s: float = 30.0
    # How long an agent may run before its attempt fails with reason ``timeout``, unless it
    # declares its own ``timeout_s``; 0: no limit (docs/agents.md#timeouts).
    agent_timeout_s: float = 0.0
    heartbeat_s: float = 3.0
    done_ttl_s: int = 7 * 24 * 3600
    # A consumer with no heartbeat, nothing pending and no read for this long is removed by
    # the housekeeping of the group's workers (a ghost); 0 keeps every consumer.
    consumer_prune_s: int = 3600
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    burst: bool = False
    # Record each event's lifecycle steps in the database (TimelineStep).
    timeline: bool = True
    # Partition streams of ``stream`` (workers/core/partitions.py); 1 keeps its own key.
    partitions: int = 1
    # Retention (workers/retention): entries older than this are trimmed (MINID ~), never one
    # a group still needs; 0 keeps them for ever. A week, as the gate's done records.
    retention_s: int = 7 * 24 * 3600
    # A cap on the stream's length (MAXLEN ~), within the same bound; 0: no cap.
    max_len: int = 0

    def __post_init__(self) -> None:
        positive = ("concurrency", "batch_size", "max_deliveries", "claim_idle_ms", "lease_ms")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.claim_idle_ms <= self.lease_ms:
            # Otherwise a live worker's entry would be reclaimed while it still holds the lease.
            raise ConfigurationError(
                f"claim_idle_ms ({self.claim_idle_ms}) must be longer than lease_ms "
                f"({self.lease_ms})"
            )
        if not (math.isfinite(self.agent_timeout_s) and self.agent_timeout_s >= 0):
            raise ConfigurationError(f"agent_timeout_s must be >= 0, got {self.agent_timeout_s}")
        for name in ("consumer_prune_s", "retention_s", "max_len"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not self.stream or keys.is_dead_stream(self.stream):
            raise ConfigurationError(f"{self.stream!r} is not a stream workers can consume")
        if self.partitions != 1:
            self.layout()  # checks the count, and that the name has no tag of its own

    def layout(self, tagged: bool = False) -> Partitions:
        """The partition streams of ``stream`` (``tagged``: on a cluster, one is tagged too)."""
        return Partitions(self.stream, self.partitions, tagged)

    def per_partition(self, tagged: bool = False) -> list[EngineConfig]:
        """One configuration per partition stream, for the loops of one worker process, each
        partition its own consumer (``<consumer>.<i>``) so each has a heartbeat and pending
        entries of its own. The loops share the process's ``concurrency`` (engine/slots.py)."""
        layout = self.layout(tagged)
        if layout.single:
            return [self]
        return [
            replace(self, stream=stream, consumer=f"{self.consumer}.{i}", partitions=1)
            for i, stream in enumerate(layout.streams)
        ]

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(self.max_deliveries, self.retry_base_ms, self.claim_idle_ms)

    @property
    def keys(self) -> keys.Keys:
        return keys.Keys(self.prefix)

    @classmethod
    def from_mapping(cls, options: dict[str, Any], **overrides: Any) -> EngineConfig:
        """Build from ``settings.STREAMDESK`` plus command-line overrides (``None`` = unset)."""
        known = {f.name for f in fields(cls)}
        unknown = set(options) - known
        if unknown:
            raise ConfigurationError(f"unknown STREAMDESK option(s): {', '.join(sorted(unknown))}")
        given = {k: v for k, v in overrides.items() if v is not None}
        return cls(**{**options, **given})


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ConfigurationError(f"{name} must be at least {minimum}, got {raw!r}")
    return value


def env_seconds(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ConfigurationError(f"{name} must be a finite number >= 0, got {raw!r}")
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{name} must be on or off (1/0, true/false), got {raw!r}")


def options_from_env() -> dict[str, Any]:
    """``STREAMDESK_*`` environment variables, for settings.py."""
    # option: (variable, least value). The engine checks some of these again; here the
    # message names the variable, at start-up. A block of 0 ms would block for ever.
    ints = {
        "concurrency": ("STREAMDESK_CONCURRENCY", 1),
        "batch_size": ("STREAMDESK_BATCH_SIZE", 1),
        "block_ms": ("STREAMDESK_BLOCK_MS", 1),
        "max_deliveries": ("STREAMDESK_MAX_DELIVERIES", 1),
        "claim_idle_ms": ("STREAMDESK_CLAIM_IDLE_MS", 1),
        "lease_ms": ("STREAMDESK_LEASE_MS", 1),
        "retry_base_ms": ("STREAMDESK_RETRY_BASE_MS", 0),
        "reclaim_interval_ms": ("STREAMDESK_RECLAIM_INTERVAL_MS", 1),
        "done_ttl_s": ("STREAMDESK_DONE_TTL_S", 1),
        "consumer_prune_s": ("STREAMDESK_CONSUMER_PRUNE_S", 0),
        "max_event_bytes": ("STREAMDESK_MAX_EVENT_BYTES", 1),
        "partitions": ("STREAMDESK_PARTITIONS", 1),
        "retention_s": ("STREAMDESK_RETENTION_S", 0),
        "max_len": ("STREAMDESK_MAX_LEN", 0),
    }
    defaults = EngineConfig.__dataclass_fields__
    out: dict[str, Any] = {}
    for option, (var, least) in ints.items():
        if os.environ.get(var):
            out[option] = env_int(var, defaults[option].default, least)  # type: ignore[arg-type]
    for option, var in (
        ("stream", "STREAMDESK_STREAM"),
        ("group", "STREAMDESK_GROUP"),
        ("prefix", "STREAMDESK_PREFIX"),
    ):
        if os.environ.get(var):
            out[option] = os.environ[var]
    if os.environ.get("STREAMDESK_DRAIN_TIMEOUT_S"):
        out["drain_timeout_s"] = env_seconds("STREAMDESK_DRAIN_TIMEOUT_S", 30.0)
    if os.environ.get("STREAMDESK_AGENT_TIMEOUT_S"):
        out["agent_timeout_s"] = env_seconds("STREAMDESK_AGENT_TIMEOUT_S", 0.0)
    if os.environ.get("STREAMDESK_TIMELINE"):
        out["timeline"] = env_bool("STREAMDESK_TIMELINE", True)
    return out
