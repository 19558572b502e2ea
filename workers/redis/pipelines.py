"""What a pipeline needs to run the same on one server and on a cluster.

redis-py's sync cluster pipeline refuses EVALSHA, TIME and WAIT (it cannot route a script by
sha nor a command without a key): a script is queued as EVAL there, routed by its first key,
the server's time is read beside the pipeline, and a pipeline that must WAIT runs on the
master's own connection (``on_master``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import redis
from redis.cluster import ClusterPipeline
from redis.commands.core import Script
from redis.exceptions import AskError

T = TypeVar("T")


def queue_script(pipe: Any, script: Script, keys: Sequence[str], args: Sequence[Any] = ()) -> None:
    """Queue ``script`` on ``pipe``: as EVALSHA on one server (loaded at execute if the
    server lacks it), as EVAL on a cluster pipeline."""
    if isinstance(pipe, ClusterPipeline):
        # Its eval and evalsha methods refuse too: the command itself is routed by key.
        pipe.execute_command("EVAL", script.script, len(keys), *keys, *args)  # type: ignore[no-untyped-call]
    else:
        script(keys=list(keys), args=list(args), client=pipe)


def queues_time(pipe: Any) -> bool:
    """Queue TIME on ``pipe`` where it can be; False on a cluster pipeline (``server_ms``
    reads it then)."""
    if isinstance(pipe, ClusterPipeline):
        return False
    pipe.time()
    return True


def server_ms(client: redis.Redis, reply: Any = None) -> int:
    """The server's clock in ms: from a queued TIME's ``reply``, else read now."""
    seconds, micros = cast(tuple[int, int], reply if reply is not None else client.time())
    return int(seconds) * 1000 + int(micros) // 1000


def on_master(client: redis.Redis, key: str, run: Callable[[redis.Redis], T]) -> T:
    """``run`` with the client of the master serving ``key``: ``client`` itself on one
    server; on a cluster that master's own connection, whose pipeline runs what a cluster
    pipeline refuses (EVALSHA, WAIT). A master that moved (a failover) has the slot map read
    again and ``run`` called once more: ``run`` must be safe to repeat."""
    if not isinstance(client, redis.RedisCluster):
        return run(client)
    try:
        return run(_master(client, key))
    except AskError:  # MOVED too (redis-py parses the code away: match the type)
        client.nodes_manager.initialize()
        return run(_master(client, key))


def _master(client: redis.RedisCluster, key: str) -> redis.Redis:
    node = client.get_node_from_key(key)  # type: ignore[no-untyped-call]
    return client.get_redis_connection(node)


def queued(pipe: Any) -> list[Any]:
    """The commands queued on ``pipe`` (one server or a cluster), kept for ``refused``:
    ``execute`` empties the pipeline. A copy of the list; nothing is read until needed."""
    return list(getattr(pipe, "command_stack", None) or getattr(pipe, "_command_stack", []))


def refused(commands: list[Any], results: list[Any]) -> list[str]:
    """What Redis refused of a pipeline run with ``raise_on_error=False``: a line for each
    refused command, naming it and its key (WRONGTYPE does not say which key)."""
    return [
        f"{' '.join(_name_and_key(_args(command)))}: {result}"
        for command, result in zip(commands, results, strict=False)
        if isinstance(result, redis.ResponseError)
    ]


def _args(command: Any) -> tuple[Any, ...]:
    return tuple(command.args) if hasattr(command, "args") else tuple(command[0])


def _name_and_key(args: tuple[Any, ...]) -> tuple[str, ...]:
    name = str(args[0]).upper()
    if name in ("EVAL", "EVALSHA"):  # the script text is no name: its first key is
        return (name, str(args[3])) if len(args) > 3 and int(args[2]) > 0 else (name,)
    return (name, str(args[1])) if len(args) > 1 else (name,)
