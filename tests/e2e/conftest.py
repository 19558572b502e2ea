"""End-to-end fixtures: real ``runworker`` subprocesses and a real daphne serving the console."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.console_server import Console
from tests.support.processes import workers as workers
from tests.support.wait import wait_for


@pytest.fixture
def console(r: redis.Redis, worker_env: dict[str, str], tmp_path: Path) -> Iterator[Console]:
    server = Console(worker_env, tmp_path / "daphne.log")
    try:
        wait_for(server.ready, what="daphne to serve /login/")
        yield server
    finally:
        server.stop()
