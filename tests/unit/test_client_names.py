"""The names Streamdesk's connections give themselves: what CLIENT SETNAME takes, and which
names are a worker's."""

from __future__ import annotations

from workers.redis.client_names import CONSOLE, WORKER, client_name, is_worker, worker_client_name


def test_client_name_replaces_what_setname_refuses() -> None:
    assert client_name(WORKER, "box 1\nü") == "streamdesk-worker:box_1__"
    assert client_name(CONSOLE) == "streamdesk-console"


def test_worker_client_name_is_a_worker() -> None:
    assert is_worker(worker_client_name("box-42"))
    assert is_worker(WORKER)
    assert not is_worker(CONSOLE)
    assert not is_worker("streamdesk-workerish")
    assert not is_worker("")
