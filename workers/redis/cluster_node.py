"""One node of the local cluster (``workers/redis/cluster.py``): its process, its files, what
it says of itself and of the cluster, and the loopback ports it needs."""

from __future__ import annotations

import os
import random
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from workers.core.errors import RedisUnavailable
from workers.redis.datadir import PRIVATE_UMASK, private_dir
from workers.redis.embedded import valkey_binary

# Valkey's default: a node's cluster bus listens on its port + 10000.
BUS_PORT_OFFSET = 10000
# Low, so that a test which kills a master sees its replica take over within seconds.
NODE_TIMEOUT_MS = 2000

# One node as another sees it: (port, flags, its master's port or 0, slots).
NodeView = tuple[int, str, int, str]


@dataclass(frozen=True, slots=True)
class NodeStatus:
    port: int
    up: bool
    pid: int | None
    role: str  # "master" or "replica"; "" when the node does not answer
    slots: str  # e.g. "0-5460"; "" for a replica or a node that does not answer
    cluster_state: str  # what this node says of the cluster; "" when it does not answer


def pid_alive(pid: int) -> bool:
    """True for a live process. A zombie counts as dead: daemonized nodes are reparented to
    PID 1, which in some containers never reaps them."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def port_free(port: int) -> bool:
    """True unless something listens on the loopback ``port``. SO_REUSEADDR, as the server
    sets it, so connections of a node stopped a moment ago (TIME_WAIT) do not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# Not the shared ``random``: a test library (hypothesis) seeds it, and processes started
# together (pytest-xdist, two suites) then drew the same ports and collided.
_PORTS = random.SystemRandom()


def free_base_port(count: int, attempts: int = 100) -> int:
    """A base port whose ``count`` ports and their bus ports are free now (tests, benches)."""
    for _ in range(attempts):
        base = _PORTS.randrange(20000, 30000 - count)
        ports = range(base, base + count)
        if all(port_free(p) and port_free(p + BUS_PORT_OFFSET) for p in ports):
            return base
    raise RedisUnavailable(f"found no {count} free loopback ports for a cluster")


class Node:
    """One ``valkey-server`` of the cluster, on ``port``, with its files in ``directory``."""

    def __init__(self, port: int, directory: Path) -> None:
        self.port = port
        self.directory = directory
        self.url = f"redis://127.0.0.1:{port}/0"
        self.pid_path = directory / "valkey.pid"
        self.log_path = directory / "valkey.log"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if pid_alive(pid) else None

    def command(self, *args: Any) -> Any:
        with redis.Redis(
            port=self.port, socket_timeout=2, socket_connect_timeout=1, decode_responses=True
        ) as client:
            return client.execute_command(*args)

    def cluster_info(self) -> dict[str, str]:
        text: str = self.command("CLUSTER", "INFO")
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def myself(self) -> list[str]:
        """This node's own line of CLUSTER NODES, split: id, address, flags, master, ..., slots."""
        lines: str = self.command("CLUSTER", "NODES")
        return next(line.split() for line in lines.splitlines() if "myself" in line)

    def spawn(self) -> None:
        """Start the server as a daemon, so it outlives the command that started it."""
        private_dir(self.directory)
        args = [
            *("--port", str(self.port), "--bind", "127.0.0.1", "--protected-mode", "yes"),
            *("--dir", str(self.directory), "--daemonize", "yes"),
            *("--pidfile", str(self.pid_path), "--logfile", str(self.log_path)),
            *("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"),
            *("--cluster-node-timeout", str(NODE_TIMEOUT_MS)),
            *("--appendonly", "yes", "--appendfsync", "everysec"),
            # A replica's first sync starts at once, not after the default 5 s wait for others.
            *("--repl-diskless-sync-delay", "0"),
        ]
        result = subprocess.run(
            [str(valkey_binary()), *args],
            capture_output=True,
            text=True,
            check=False,
            umask=PRIVATE_UMASK,
        )
        if result.returncode != 0:
            raise RedisUnavailable(
                f"valkey-server on port {self.port} failed to start ({result.returncode}): "
                f"{result.stderr.strip()} (log: {self.log_path})"
            )

    def status(self) -> NodeStatus:
        pid = self.pid()
        try:
            fields, state = self.myself(), self.cluster_info().get("cluster_state", "")
        except (redis.RedisError, OSError):
            return NodeStatus(self.port, False, pid, "", "", "")
        role = "master" if "master" in fields[2].split(",") else "replica"
        return NodeStatus(self.port, True, pid, role, " ".join(fields[8:]), state)


def topology(node: Node) -> tuple[NodeView, ...]:
    """The node's CLUSTER NODES as comparable data: equal on every node once they agree.
    (Not CLUSTER SLOTS: it leaves out a replica until gossip tells of its replication
    offset, seconds after the replica is in sync.)"""
    text: str = node.command("CLUSTER", "NODES")
    lines = [line.split() for line in text.splitlines()]
    ports = {fields[0]: int(fields[1].split("@")[0].rsplit(":", 1)[1]) for fields in lines}
    views = (
        (
            ports[f[0]],
            ",".join(sorted(set(f[2].split(",")) - {"myself"})),
            ports.get(f[3], 0),
            " ".join(f[8:]),
        )
        for f in lines
    )
    return tuple(sorted(views))


def replica_ready(node: Node) -> bool:
    """A master, or a replica whose link to its master is up (its first sync done)."""
    role: list[str] = node.command("ROLE")
    return role[0] == "master" or role[3] == "connected"
