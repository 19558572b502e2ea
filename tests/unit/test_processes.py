"""``runworker --processes``: the children's command lines, the count, and the supervisor's
two ends besides a stop request (all children done, or one that keeps dying young)."""

from __future__ import annotations

import sys
from argparse import ArgumentTypeError

import pytest

from workers.engine.processes import child_argv, usable_cpus
from workers.engine.supervisor import STABLE_AFTER_S, Child, Supervisor
from workers.management.commands.runworker import processes_arg


def test_children_get_the_options_their_own_consumer_and_one_relay() -> None:
    options = {"consumer": "pool", "concurrency": 4, "drain_timeout_s": 5.0, "stream": None}
    first = child_argv(1, options, burst=True, relay=True)
    second = child_argv(2, options, burst=True, relay=True)
    assert first[1:] == [
        "-m", "django", "runworker", "--concurrency", "4", "--consumer", "pool-1",
        "--drain-timeout", "5.0", "--burst", "--relay",
    ]  # fmt: skip
    assert "pool-2" in second and "--relay" not in second


def test_only_the_first_child_stands_for_the_history_recorder() -> None:
    argvs = [child_argv(i, {}, burst=False, relay=False) for i in (1, 2, 3)]
    assert ["--no-history-recorder" in argv for argv in argvs] == [False, True, True]
    # The supervisor's own --no-history-recorder reaches every child.
    assert "--no-history-recorder" in child_argv(1, {}, burst=False, relay=False, recorder=False)


def test_without_a_consumer_name_each_child_names_itself() -> None:
    assert "--consumer" not in child_argv(1, {"concurrency": 4}, burst=False, relay=False)


@pytest.mark.parametrize(("value", "count"), [("1", 1), ("3", 3), ("auto", usable_cpus())])
def test_processes_takes_a_count_or_auto(value: str, count: int) -> None:
    assert processes_arg(value) == count


@pytest.mark.parametrize("value", ["0", "-2", "two", ""])
def test_processes_refuses_anything_else(value: str) -> None:
    with pytest.raises(ArgumentTypeError):
        processes_arg(value)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def exiting(code: int) -> list[str]:
    return [sys.executable, "-c", f"import sys; sys.exit({code})"]


def settle(supervisor: Supervisor) -> None:
    for child in supervisor.children:
        assert child.proc is not None
        child.proc.wait(timeout=30)


def test_children_that_exit_0_are_done_when_exit_0_means_finished() -> None:
    said: list[str] = []
    supervisor = Supervisor([Child("a", exiting(0)), Child("b", exiting(0))], said.append)
    supervisor.finish_on_success = True
    supervisor.start_all()
    settle(supervisor)
    supervisor.check()
    assert supervisor.finished and supervisor.failed is None
    assert all(c.restarts == 0 for c in supervisor.children) and said == []


def test_a_child_dying_young_again_and_again_fails_the_supervisor() -> None:
    said: list[str] = []
    clock = Clock()
    supervisor = Supervisor([Child("w", exiting(3))], said.append, clock=clock, give_up_after=3)
    supervisor.start_all()
    for _ in range(3):
        settle(supervisor)
        clock.now += 1
        supervisor.check()  # notices the death
        clock.now += 60  # past any back-off, but each life was short
        supervisor.check()  # restarts it (until it gives up)
        supervisor.children[0].started_at = clock.now
    assert supervisor.failed == (
        f"w exited with code 3 3 times in a row, each within {STABLE_AFTER_S:g} s of "
        "starting: giving up"
    )
    assert supervisor.finished and supervisor.children[0].restarts == 2


def test_a_child_that_ran_a_while_starts_its_count_over() -> None:
    clock = Clock()
    supervisor = Supervisor([Child("w", exiting(3))], [].append, clock=clock, give_up_after=2)
    supervisor.start_all()
    settle(supervisor)
    clock.now += 1
    supervisor.check()
    clock.now += 60
    supervisor.check()
    settle(supervisor)
    clock.now += STABLE_AFTER_S + 1  # this life was long: not "dying young"
    supervisor.check()
    assert supervisor.failed is None and supervisor.children[0].young_deaths == 0
