"""``runworker --processes N``: N worker processes under one small supervisor.

Each child is a plain ``runworker`` (its own consumer, ``<host>-<n>`` by default, or
``<name>-<i>`` from ``--consumer``) in the supervisor's process group, so a Ctrl-C in a
terminal reaches every one. A child that dies is restarted after a back-off
(``supervisor.next_backoff_s``); one that dies young ``GIVE_UP_AFTER`` times in a row ends the
whole command with an error. SIGTERM or SIGINT to the supervisor is passed on as SIGTERM:
each child drains its in-flight agents, and one still running ``STOP_MARGIN_S`` after the
drain timeout is killed (its entries stay pending, for another worker to reclaim).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from types import FrameType
from typing import Any

from workers.engine.supervisor import Child, Supervisor

log = logging.getLogger(__name__)

GIVE_UP_AFTER = 5
STOP_MARGIN_S = 5.0
# Options passed as they are; drain_timeout_s is the command's --drain-timeout.
FLAGS = {"drain_timeout_s": "--drain-timeout"}


def usable_cpus() -> int:
    """The CPUs this process may run on (a container's or taskset's limit, not the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def child_argv(
    index: int, options: dict[str, Any], *, burst: bool, relay: bool, recorder: bool = True
) -> list[str]:
    """One child's command line: the parent's options, its own consumer name if one was
    given, and the outbox relay and the history recorder's candidate in the first child
    only (one relay is enough, and each idle candidate costs Redis a command per 10 s)."""
    argv = [sys.executable, "-m", "django", "runworker"]
    for name, value in sorted(options.items()):
        if value is None:
            continue
        if name == "consumer":
            value = f"{value}-{index}"
        flag = FLAGS.get(name, "--" + name.replace("_", "-"))
        for one in value if isinstance(value, list) else [value]:  # a repeatable flag
            argv += [flag, str(one)]
    if burst:
        argv.append("--burst")
    if relay and index == 1:
        argv.append("--relay")
    if not recorder or index != 1:
        argv.append("--no-history-recorder")
    return argv


def run_processes(
    count: int,
    options: dict[str, Any],
    *,
    burst: bool,
    relay: bool,
    recorder: bool = True,
    drain_timeout_s: float,
    settings_module: str,
) -> int:
    """Run ``count`` workers until a stop signal, or (``burst``) until all have exited 0.
    Returns the exit code: 1 when a child kept failing, else 0."""
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": settings_module}
    children = [
        Child(f"worker-{i}", child_argv(i, options, burst=burst, relay=relay, recorder=recorder))
        for i in range(1, count + 1)
    ]
    supervisor = Supervisor(
        children,
        # Through logging, so STREAMDESK_LOG_FORMAT=json makes these lines JSON too; every
        # one is a child's death, restart or kill, or the supervisor giving up.
        say=log.warning,
        spawn=lambda argv: subprocess.Popen(argv, env=env),
        finish_on_success=burst,
        give_up_after=GIVE_UP_AFTER,
    )
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        supervisor.start_all()
        pids = ", ".join(str(c.proc.pid) for c in children if c.proc)
        log.info("supervising %d worker processes (pids %s)", count, pids)
        supervisor.run(lambda: stopping)
    finally:
        supervisor.stop_all(drain_timeout_s + STOP_MARGIN_S)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 1 if supervisor.failed else 0
