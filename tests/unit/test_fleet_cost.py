"""The fleet's cost at rest, from a server's own counters: which connections count, how a
window's rate is taken, and what a server without per-connection counts (Redis 7.0) gives.
The ``CLIENT LIST`` lines are real servers' output, split as redis-py splits them."""

from __future__ import annotations

from console.live.fleet_cost import (
    FleetCost,
    Reading,
    cost,
    count_workers,
    sent_per_s,
    worker_commands,
)

# `redis-cli -p 6379 client list` on Redis 7.0.15: no tot-cmds.
REDIS_7_0 = (
    "id=6 addr=127.0.0.1:35352 laddr=127.0.0.1:6379 fd=8 name=streamdesk-worker:w-1 age=0 "
    "idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=26 qbuf-free=20448 argv-mem=10 "
    "multi-mem=0 rbs=16384 rbp=16384 obl=0 oll=0 omem=0 tot-mem=37658 events=r "
    "cmd=client|list user=default redir=-1 resp=2"
)
# Valkey 8.1, a worker's connection and the reader's own (no name).
VALKEY_8 = [
    "id=2 addr=127.0.0.1:39664 laddr=127.0.0.1:6399 fd=11 name=streamdesk-worker:w-1 age=3 "
    "idle=0 flags=N capa= db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 "
    "argv-mem=10 multi-mem=0 rbs=16392 rbp=16392 obl=0 oll=0 omem=0 tot-mem=16938 events=r "
    "cmd=ping user=default redir=-1 resp=2 lib-name=redis-py lib-ver=6.4.0 tot-net-in=26 "
    "tot-net-out=7 tot-cmds=17",
    "id=3 addr=127.0.0.1:39670 laddr=127.0.0.1:6399 fd=12 name= age=1 idle=0 flags=N capa= "
    "db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=10 multi-mem=0 "
    "rbs=16392 rbp=16392 obl=0 oll=0 omem=0 tot-mem=16938 events=r cmd=client|list "
    "user=default redir=-1 resp=2 lib-name= lib-ver= tot-net-in=26 tot-net-out=0 tot-cmds=40",
]


def split(line: str) -> dict[str, str]:
    """One CLIENT LIST line as redis-py's ``client_list()`` returns it."""
    return dict(field.split("=", 1) for field in line.split(" "))


def test_worker_commands_without_tot_cmds_is_none() -> None:
    assert worker_commands("", [split(REDIS_7_0)]) is None


def test_worker_commands_counts_only_worker_connections() -> None:
    assert worker_commands("n1", [split(line) for line in VALKEY_8]) == {"n1/2": 17}


def test_count_workers_reads_names_on_redis_7_0() -> None:
    assert count_workers([split(REDIS_7_0)]) == 1


def test_sent_per_s_leaves_out_a_connection_new_in_the_window() -> None:
    # Connection 2 sent 40 in 10 s; 3 reconnected as 4 (thousands since it connected).
    old = {"/2": 100, "/3": 5_000}
    new = {"/2": 140, "/4": 9_000}
    assert sent_per_s(old, new, 10.0) == 4.0


def test_sent_per_s_a_counter_that_went_down_counts_nothing() -> None:
    assert sent_per_s({"/2": 500}, {"/2": 3}, 10.0) == 0.0


def test_cost_measuring_before_two_readings() -> None:
    found = cost(None, Reading(10.0, 3, {"/2": 17}))
    assert found == FleetCost(3, None, None, True)
    assert found.measuring


def test_cost_per_connection_over_the_window() -> None:
    found = cost(Reading(0.0, 2, {"/2": 10, "/3": 0}), Reading(10.0, 2, {"/2": 51, "/3": 0}))
    assert found == FleetCost(2, 4.1, 10.0, True)
    assert not found.measuring


def test_cost_falls_back_to_the_server_total() -> None:
    found = cost(Reading(0.0, 4, None, 1_000), Reading(20.0, 4, None, 1_300))
    assert found == FleetCost(4, 15.0, 20.0, False)


def test_cost_a_restarted_server_gives_no_figure() -> None:
    found = cost(Reading(0.0, 4, None, 1_000), Reading(10.0, 4, None, 12))
    assert found.measuring and not found.workers_only


def test_cost_a_server_that_changed_kind_gives_no_figure() -> None:
    assert cost(Reading(0.0, 1, None, 1_000), Reading(10.0, 1, {"/2": 5})).measuring
