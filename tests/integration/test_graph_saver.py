"""The LangGraph checkpoint saver's contract, on the test database: round trips, ordering,
write semantics, and the same answers as LangGraph's own ``InMemorySaver``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the optional langgraph extra is not installed")

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointTuple,
    empty_checkpoint,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import ERROR

from workers.core.errors import LeaseLost
from workers.models import AgentRun, GraphCheckpoint, GraphWrite, RunStatus
from workers.runtime.graph import DjangoSaver, Fence
from workers.runtime.graph.saver import LIST_PAGE

pytestmark = pytest.mark.django_db


def thread(thread_id: str = "t1", ns: str = "") -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}


def checkpoint(values: dict[str, Any], versions: dict[str, str | int | float]) -> Checkpoint:
    made = empty_checkpoint()
    made["channel_values"] = values
    made["channel_versions"] = versions
    made["versions_seen"] = {"node": dict(versions)}
    return made


def put(
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    values: dict[str, Any],
    step: int,
    **metadata: Any,
) -> RunnableConfig:
    versions: dict[str, str | int | float] = {k: step + 2 for k in values}
    made = checkpoint(values, versions)
    return saver.put(config, made, {"source": "loop", "step": step, **metadata}, versions)


def test_put_then_get_tuple_round_trips() -> None:
    saver = DjangoSaver()
    values = {"n": 1, "items": ["a", "b"], "nested": {"x": 1.5, "none": None}}
    stored = put(saver, thread(), values, -1, source="input")

    found = saver.get_tuple(thread())

    assert found is not None
    assert found.config == stored
    assert found.checkpoint["channel_values"] == values
    assert found.metadata == {"source": "input", "step": -1}
    assert (found.parent_config, found.pending_writes) == (None, [])


def test_get_tuple_of_an_unknown_thread_is_none() -> None:
    assert DjangoSaver().get_tuple(thread("nobody")) is None


def test_get_tuple_finds_the_latest_or_the_named_checkpoint() -> None:
    saver = DjangoSaver()
    first = put(saver, thread(), {"n": 1}, -1)
    second = put(saver, first, {"n": 2}, 0)

    latest = saver.get_tuple(thread())
    named = saver.get_tuple(first)

    assert latest is not None and named is not None
    assert (latest.config, latest.parent_config) == (second, first)
    assert named.checkpoint["channel_values"] == {"n": 1}


def test_put_of_the_same_checkpoint_id_replaces_it() -> None:
    saver = DjangoSaver()
    made = checkpoint({"n": 1}, {"n": 1})
    saver.put(thread(), made, {"step": 0}, {"n": 1})
    made["channel_values"] = {"n": 9}
    saver.put(thread(), made, {"step": 0}, {"n": 1})

    found = saver.get_tuple(thread())
    assert found is not None and found.checkpoint["channel_values"] == {"n": 9}
    assert GraphCheckpoint.objects.count() == 1


def test_pending_writes_come_back_in_task_path_order() -> None:
    saver = DjangoSaver()
    stored = put(saver, thread(), {"n": 1}, 0)
    saver.put_writes(stored, [("b", 2), ("c", 3)], "task-b", "~path-2")
    saver.put_writes(stored, [("a", 1)], "task-a", "~path-1")

    found = saver.get_tuple(thread())

    assert found is not None
    assert found.pending_writes == [("task-a", "a", 1), ("task-b", "b", 2), ("task-b", "c", 3)]


def test_put_writes_keeps_a_regular_write_and_replaces_a_special_one() -> None:
    saver = DjangoSaver()
    stored = put(saver, thread(), {"n": 1}, 0)
    saver.put_writes(stored, [("a", "first"), (ERROR, "boom 1")], "task")
    saver.put_writes(stored, [("a", "second"), (ERROR, "boom 2")], "task")

    found = saver.get_tuple(thread())

    assert found is not None
    # A special write's index is negative: it sorts first in its task.
    assert found.pending_writes == [("task", ERROR, "boom 2"), ("task", "a", "first")]


def test_list_is_newest_first_with_filter_before_and_limit() -> None:
    saver = DjangoSaver()
    config = thread()
    stored = []
    for step in range(5):
        config = put(saver, config, {"n": step}, step, kind="odd" if step % 2 else "even")
        stored.append(config)
    put(saver, thread("other"), {"n": 0}, 0, kind="even")

    def steps(**kwargs: Any) -> list[int]:
        return [t.metadata["step"] for t in saver.list(thread(), **kwargs)]

    assert steps() == [4, 3, 2, 1, 0]
    assert steps(filter={"kind": "even"}) == [4, 2, 0]
    assert steps(filter={"kind": "even"}, limit=2) == [4, 2]
    assert steps(before=stored[3]) == [2, 1, 0]
    assert steps(limit=0) == []
    assert len(list(saver.list(None))) == 6


def test_list_reads_past_one_page() -> None:
    saver = DjangoSaver()
    config = thread()
    count = LIST_PAGE * 2 + 1
    for step in range(count):
        config = put(saver, config, {"n": step}, step)
        saver.put_writes(config, [("n", step)], f"task-{step}")

    listed = list(saver.list(thread()))

    newest_first = list(range(count - 1, -1, -1))
    assert [t.metadata["step"] for t in listed] == newest_first
    assert [t.pending_writes for t in listed] == [[(f"task-{s}", "n", s)] for s in newest_first]


def test_namespaces_of_one_thread_are_separate() -> None:
    saver = DjangoSaver()
    put(saver, thread(ns=""), {"n": "root"}, 0)
    put(saver, thread(ns="child:1"), {"n": "child"}, 0)

    root, child = saver.get_tuple(thread(ns="")), saver.get_tuple(thread(ns="child:1"))

    assert root is not None and root.checkpoint["channel_values"] == {"n": "root"}
    assert child is not None and child.checkpoint["channel_values"] == {"n": "child"}
    assert len(list(saver.list({"configurable": {"thread_id": "t1"}}))) == 2


def test_delete_thread_removes_only_that_thread() -> None:
    saver = DjangoSaver()
    for name in ("gone", "kept"):
        stored = put(saver, thread(name), {"n": 1}, 0)
        saver.put_writes(stored, [("n", 2)], "task")

    saver.delete_thread("gone")

    assert saver.get_tuple(thread("gone")) is None
    assert saver.get_tuple(thread("kept")) is not None
    assert set(GraphWrite.objects.values_list("thread_id", flat=True)) == {"kept"}


def script(saver: BaseCheckpointSaver[Any]) -> list[CheckpointTuple]:
    """The same calls on any saver; returns what it lists afterwards."""
    first = put(saver, thread(), {"n": 1}, -1, source="input")
    saver.put_writes(first, [("n", 2), ("log", ["x"])], "task-1", "~a")
    second = put(saver, first, {"n": 2, "log": ["x"]}, 0)
    saver.put_writes(second, [(ERROR, "boom")], "task-2", "~b")
    saver.put_writes(second, [("n", 3)], "task-3", "~a")
    put(saver, thread("other"), {"n": 0}, 0)
    return list(saver.list(thread()))


def test_answers_as_langgraphs_in_memory_saver_does() -> None:
    ours, reference = script(DjangoSaver()), script(InMemorySaver())

    def shape(t: CheckpointTuple) -> tuple[Any, ...]:
        # Checkpoint ids differ between the runs: compare what was stored under them.
        parent = t.parent_config is not None
        return (t.checkpoint["channel_values"], t.metadata, parent, t.pending_writes)

    assert [shape(t) for t in ours] == [shape(t) for t in reference]


def agent_run(fence: str, status: str = RunStatus.RUNNING) -> AgentRun:
    return AgentRun.objects.create(
        event_hash="h" * 64,
        event_type="test.graph",
        stream="s",
        entry_id="1-0",
        consumer="w",
        status=status,
        lease="w/1-0#1",
        fence=fence,
    )


@pytest.mark.parametrize("fence", ["", "w/1-0#1"])
def test_a_fenced_saver_writes_while_its_lease_holds(fence: str) -> None:
    agent_run(fence)
    saver = DjangoSaver(fence=Fence("h" * 64, "w/1-0#1"))

    stored = put(saver, thread("h" * 64), {"n": 1}, 0)
    saver.put_writes(stored, [("n", 2)], "task")

    assert GraphWrite.objects.count() == 1


@pytest.mark.parametrize(("fence", "status"), [("w/9-0#2", "running"), ("", "succeeded")])
def test_a_fenced_saver_refuses_to_write_after_a_takeover(fence: str, status: str) -> None:
    agent_run(fence, status)
    saver = DjangoSaver(fence=Fence("h" * 64, "w/1-0#1"))

    with pytest.raises(LeaseLost, match="taken over"):
        put(saver, thread("h" * 64), {"n": 1}, 0)
    assert not GraphCheckpoint.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_async_methods_round_trip_through_threads() -> None:
    saver = DjangoSaver()

    async def scenario() -> tuple[Any, ...]:
        made = checkpoint({"n": 1}, {"n": 1})
        stored = await saver.aput(thread(), made, {"source": "input", "step": -1}, {"n": 1})
        await saver.aput_writes(stored, [("n", 2)], "task")
        found = await saver.aget_tuple(thread())
        listed = [t async for t in saver.alist(thread(), limit=5)]
        await saver.adelete_thread("t1")
        return found, listed, await saver.aget_tuple(thread())

    found, listed, after = asyncio.run(scenario())

    assert found is not None and found.pending_writes == [("task", "n", 2)]
    assert [t.config for t in listed] == [found.config]
    assert after is None
