"""One object per Redis client in this process (a meter, say), shared by the sampler's ticks
and the page renders, and gone with its client."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

import redis

T = TypeVar("T")


class PerClient(Generic[T]):
    """``for_client(client)`` makes the client's object on first use, then gives it back."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._objects: weakref.WeakKeyDictionary[redis.Redis, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # the sampler's thread and request threads both ask

    def for_client(self, client: redis.Redis) -> T:
        with self._lock:
            found = self._objects.get(client)
            if found is None:
                found = self._objects[client] = self._make()
            return found
