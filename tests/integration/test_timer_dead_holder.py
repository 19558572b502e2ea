"""A timer holder SIGKILLed on this host does not hold the sleeps and timeouts due meanwhile
up for the rest of its lease: a standby here sees its process is gone and takes over at
once. A live holder, or one of another host, keeps its lease."""

from __future__ import annotations

import functools
import socket
import subprocess
import sys

import redis

from workers.core.keys import Keys
from workers.producers.publish import scheduled_entry
from workers.timers.timer import Timer

KEYS = Keys()


def standby(r: redis.Redis) -> Timer:
    return Timer(r, KEYS, [], functools.partial(scheduled_entry, r), "timer:here:1:new")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_dead_holder_of_this_host_is_replaced_at_once(r: redis.Redis) -> None:
    holder = f"timer:{socket.gethostname()}:{dead_pid()}:abcdef"
    r.set(KEYS.timers_lease, holder, px=30_000)
    assert standby(r).standby_s() == 0.0
    assert not r.exists(KEYS.timers_lease)


def test_a_live_holder_or_one_elsewhere_keeps_its_lease(r: redis.Redis) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        for holder in (
            f"timer:{socket.gethostname()}:{sleeper.pid}:abcdef",
            f"timer:another-host:{dead_pid()}:abcdef",
            "something else",
        ):
            r.set(KEYS.timers_lease, holder, px=30_000)
            assert 29 < standby(r).standby_s() <= 30.5
            assert r.get(KEYS.timers_lease) == holder
    finally:
        sleeper.kill()
        sleeper.wait()
