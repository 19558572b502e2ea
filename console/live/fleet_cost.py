"""What the workers cost Redis: the commands/s their connections send, from the server's own
counters, shown beside the workers table.

A reading is one ``CLIENT LIST`` per node: on a server that counts commands per connection
(``tot-cmds``: Valkey 8), the sum over the connections named as a worker's
(``workers.redis.client_names``). A server without that count (Redis 7.0) gives only its
own total, ``INFO stats`` ``total_commands_processed``: every client's commands, the
console's own included, and the page says so. ``CLIENT LIST`` costs the server time in
proportion to its connections, so a process reads at most once every ``READ_EVERY_S``; the
rate is over the window between its last two readings.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

import redis

from console.live.per_client import PerClient
from workers.redis.client_names import is_worker
from workers.redis.connection import is_cluster

READ_EVERY_S = 10.0
# A reading older than this is no baseline: a rate averaged over an hour between two page
# loads is not what "now" means. The sampler reads every READ_EVERY_S.
MAX_WINDOW_S = 120.0
COUNTER = "tot-cmds"


@dataclass(frozen=True, slots=True)
class Reading:
    at_s: float
    # Connections named as a worker's, over every node.
    connections: int
    # Commands each worker connection has sent, by "<node>/<id>" (ids are per node); None
    # when the server does not count them per connection.
    commands: dict[str, int] | None
    # The servers' own total over every node: read only when ``commands`` is None.
    server_commands: int | None = None
    # Who records the console's history (``runworker`` or ``console``; "" none): its
    # commands, most of an idle fleet's, count as the workers' only when a worker holds it.
    recorder: str = ""


@dataclass(frozen=True, slots=True)
class FleetCost:
    connections: int | None
    # None until two readings exist (the page says "measuring").
    commands_s: float | None
    window_s: float | None
    # True: the worker connections' own counts; False: the whole server's, every client's.
    workers_only: bool
    # Why there is no figure, when the server refused a read (an ACL without CLIENT).
    error: str = ""
    recorder: str = ""  # as in Reading

    @property
    def measuring(self) -> bool:
        return self.commands_s is None and not self.error


def worker_commands(node: str, clients: Iterable[Mapping[str, Any]]) -> dict[str, int] | None:
    """``tot-cmds`` of each worker connection in one node's ``CLIENT LIST``, by
    "<node>/<id>"; None when the server does not report it (the reader's own connection is
    always listed, so an empty list never stands for "not reported")."""
    found: dict[str, int] = {}
    for entry in clients:
        if COUNTER not in entry:
            return None
        if is_worker(str(entry.get("name", ""))):
            found[f"{node}/{entry['id']}"] = int(entry[COUNTER])
    return found


def count_workers(clients: Iterable[Mapping[str, Any]]) -> int:
    return sum(1 for entry in clients if is_worker(str(entry.get("name", ""))))


def sent_per_s(old: Mapping[str, int], new: Mapping[str, int], window_s: float) -> float:
    """Commands/s the connections present in both readings sent between them. One that
    connected (or reconnected) meanwhile has no baseline: counting its whole life would
    be a spike, so it is left out until the next window."""
    sent = sum(new[c] - old[c] for c in new.keys() & old.keys() if new[c] >= old[c])
    return sent / window_s


def cost(old: Reading | None, new: Reading) -> FleetCost:
    """The cost over the window from ``old`` to ``new``; measuring without a usable ``old``."""
    workers_only = new.commands is not None
    window_s = new.at_s - old.at_s if old is not None else 0.0
    if old is None or window_s <= 0:
        return FleetCost(new.connections, None, None, workers_only)
    if new.commands is not None and old.commands is not None:
        return FleetCost(
            new.connections, sent_per_s(old.commands, new.commands, window_s), window_s, True
        )
    if new.server_commands is None or old.server_commands is None:
        return FleetCost(new.connections, None, None, workers_only)  # the server changed
    sent = new.server_commands - old.server_commands
    if sent < 0:  # the server restarted: its count began again
        return FleetCost(new.connections, None, None, False)
    return FleetCost(new.connections, sent / window_s, window_s, False)


def _every_node(listed: list[tuple[str, list[dict[str, Any]]]]) -> dict[str, int] | None:
    """``worker_commands`` over every node; None if any node does not count them."""
    commands: dict[str, int] = {}
    for name, clients in listed:
        found = worker_commands(name, clients)
        if found is None:
            return None
        commands.update(found)
    return commands


def _nodes(client: redis.Redis) -> list[tuple[str, dict[str, Any]]]:
    """(name, extra arguments) for each node whose counters make up the fleet's cost."""
    if not is_cluster(client):
        return [("", {})]
    cluster = cast(redis.RedisCluster, client)
    nodes = cluster.get_nodes()  # type: ignore[no-untyped-call]
    return [(node.name, {"target_nodes": node}) for node in nodes]


def _client_list(client: redis.Redis, args: dict[str, Any]) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], client.client_list(**args))


def _server_total(client: redis.Redis, args: dict[str, Any]) -> int:
    stats = cast(dict[str, Any], client.info("stats", **args))
    return int(stats["total_commands_processed"])


def read(client: redis.Redis, at_s: float, recorder_key: str = "") -> Reading:
    """One reading: ``CLIENT LIST`` on each node, and ``INFO stats`` too where the server
    does not count commands per connection; with ``recorder_key`` (``keys.history_recorder``)
    who holds the history recorder's lease."""
    nodes = _nodes(client)
    listed = [(name, _client_list(client, args)) for name, args in nodes]
    connections = sum(count_workers(clients) for _, clients in listed)
    commands = _every_node(listed)
    recorder = _recorder_role(client, recorder_key)
    if commands is not None:
        return Reading(at_s, connections, commands, recorder=recorder)
    total = sum(_server_total(client, a) for _, a in nodes)
    return Reading(at_s, connections, None, total, recorder)


def _recorder_role(client: redis.Redis, key: str) -> str:
    """The role in the lease holder's name (``recorder.holder_name``: role:host:pid:id)."""
    holder = client.get(key) if key else None
    return str(holder).split(":", 1)[0] if holder else ""


class FleetCostMeter:
    """The fleet's cost as one console process sees it: a reading at most every
    ``read_every_s``, the figure between readings the last one computed."""

    def __init__(
        self, read_every_s: float = READ_EVERY_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.read_every_s = read_every_s
        self.clock = clock
        self._last: Reading | None = None
        # When a reading was last tried: a refused one waits its turn too.
        self._tried_s: float | None = None
        self._cost = FleetCost(None, None, None, True)
        # The sampler's thread and page renders share a meter.
        self._lock = threading.Lock()

    def current(self, client: redis.Redis, recorder_key: str = "") -> FleetCost:
        with self._lock:
            now = self.clock()
            if self._tried_s is not None and now - self._tried_s < self.read_every_s:
                return self._cost
            self._tried_s, last = now, self._last
            try:
                new = read(client, now, recorder_key)
            except redis.ResponseError as exc:  # CLIENT or INFO refused (an ACL)
                self._last = None
                self._cost = FleetCost(None, None, None, True, f"cannot be read: {exc}")
                return self._cost
            fresh = last is not None and now - last.at_s <= MAX_WINDOW_S
            figure = cost(last if fresh else None, new)
            self._last, self._cost = new, replace(figure, recorder=new.recorder)
            return self._cost


# One meter per client in this process, so the sampler's ticks and the page renders share
# readings (and read CLIENT LIST once per window between them); gone with its client.
_meters: PerClient[FleetCostMeter] = PerClient(FleetCostMeter)


def meter_for(client: redis.Redis) -> FleetCostMeter:
    """This process's meter for ``client``'s server."""
    return _meters.for_client(client)


def fleet_cost(client: redis.Redis, recorder_key: str = "") -> FleetCost:
    """The fleet's cost as this process last measured it on ``client``'s server; with
    ``recorder_key``, who records the history (its commands count only if a worker does)."""
    return meter_for(client).current(client, recorder_key)
