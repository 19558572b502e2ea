"""A LangGraph checkpoint saver on the project's database, through the Django ORM (SQLite or
PostgreSQL, whichever ``DATABASES`` names).

Each checkpoint is one ``GraphCheckpoint`` row holding the whole checkpoint (channel values
included) as the serde's typed bytes; each pending write of a task is a ``GraphWrite`` row.
The async methods run the ORM in a thread and close that thread's connection afterwards: the
threads belong to the event loop's default pool, and a connection left open there would
outlive the call (and, on PostgreSQL, keep the server's slot).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import connections, transaction
from django.db.models import Q, QuerySet
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from workers.core.errors import LeaseLost
from workers.models import AgentRun, GraphCheckpoint, GraphWrite, RunStatus

T = TypeVar("T")
# Checkpoints read per query by ``list`` (it loads their writes one page at a time).
LIST_PAGE = 100
# The checkpoint a write belongs to: thread, namespace, checkpoint id.
WriteKey = tuple[str, str, str]
# Named here: inside the saver, ``list`` is its method.
Writes = list[PendingWrite]
Tuples = list[CheckpointTuple]
# The unique key of a checkpoint row, and of a write row.
CHECKPOINT_FIELDS = ["thread_id", "checkpoint_ns", "checkpoint_id"]
WRITE_FIELDS = [*CHECKPOINT_FIELDS, "task_id", "idx"]


@dataclass(frozen=True, slots=True)
class Fence:
    """The attempt allowed to write an event's checkpoints. A saver with a fence refuses to
    write once another attempt took the event over, as ``ctx.step`` does: a stale attempt
    still running must not extend the thread the new one resumes from."""

    event_hash: str
    lease: str

    def check(self) -> None:
        row = (
            AgentRun.objects.filter(event_hash=self.event_hash)
            .values_list("status", "fence")
            .first()
        )
        if row is None:
            return
        status, fence = row
        if status == RunStatus.SUCCEEDED or fence not in ("", self.lease):
            raise LeaseLost(
                f"graph checkpoint: event {self.event_hash[:12]} was taken over "
                f"({fence or status}); this attempt stops"
            )


class DjangoSaver(BaseCheckpointSaver[str]):
    """Checkpoints and pending writes in ``GraphCheckpoint``/``GraphWrite`` rows."""

    def __init__(
        self, *, serde: SerializerProtocol | None = None, fence: Fence | None = None
    ) -> None:
        super().__init__(serde=serde)
        self.fence = fence

    # -- reads -------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names by id, else the thread's latest."""
        thread_id, ns = _thread_of(config)
        rows = GraphCheckpoint.objects.filter(thread_id=thread_id, checkpoint_ns=ns)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            rows = rows.filter(checkpoint_id=checkpoint_id)
        row = rows.order_by("-checkpoint_id").first()
        if row is None:
            return None
        writes = self._writes_of([row])
        return self._tuple(row, self._metadata(row), writes.get(_key(row), []))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Newest first. ``filter`` matches metadata keys by equality; it is applied after
        decoding (metadata is serde bytes), so ``limit`` counts matches, not rows read."""
        # Without a filter every row read is listed: read no more than the limit.
        size = LIST_PAGE if filter or limit is None else max(1, min(limit, LIST_PAGE))
        left = limit
        for page in _pages(_listed(config, before), size):
            writes = self._writes_of(page)
            for row in page:
                if left is not None and left <= 0:
                    return
                metadata = self._metadata(row)
                if filter and any(metadata.get(k) != v for k, v in filter.items()):
                    continue
                if left is not None:
                    left -= 1
                yield self._tuple(row, metadata, writes.get(_key(row), []))

    def _writes_of(self, rows: Sequence[GraphCheckpoint]) -> dict[WriteKey, Writes]:
        """The pending writes of ``rows``, each checkpoint's in ``writes_sort_key`` order
        (sorted here: a database collation may order task paths differently)."""
        if not rows:
            return {}
        found = GraphWrite.objects.filter(
            thread_id__in={r.thread_id for r in rows},
            checkpoint_id__in={r.checkpoint_id for r in rows},
        )
        wanted = {_key(r) for r in rows}
        ordered = sorted(
            (w for w in found if _key(w) in wanted),
            key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx),
        )
        writes: dict[WriteKey, Writes] = {}
        for w in ordered:
            value = self.serde.loads_typed((w.value_type, bytes(w.value)))
            writes.setdefault(_key(w), []).append((w.task_id, w.channel, value))
        return writes

    def _metadata(self, row: GraphCheckpoint) -> CheckpointMetadata:
        # bytes(): PostgreSQL returns a BinaryField as a memoryview.
        metadata: CheckpointMetadata = self.serde.loads_typed(
            (row.metadata_type, bytes(row.metadata))
        )
        return metadata

    def _tuple(
        self, row: GraphCheckpoint, metadata: CheckpointMetadata, writes: Writes
    ) -> CheckpointTuple:
        parent = _config(row.thread_id, row.checkpoint_ns, row.parent_id) if row.parent_id else None
        return CheckpointTuple(
            config=_config(row.thread_id, row.checkpoint_ns, row.checkpoint_id),
            checkpoint=self.serde.loads_typed((row.checkpoint_type, bytes(row.checkpoint))),
            metadata=metadata,
            parent_config=parent,
            pending_writes=writes,
        )

    # -- writes ------------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` (again: the same id replaces it) as a child of the checkpoint
        ``config`` names; returns the config naming the stored one."""
        thread_id, ns = _thread_of(config)
        checkpoint_type, blob = self.serde.dumps_typed(checkpoint)
        metadata_type, metadata_blob = self.serde.dumps_typed(
            get_checkpoint_metadata(config, metadata)
        )
        row = GraphCheckpoint(
            thread_id=thread_id,
            checkpoint_ns=ns,
            checkpoint_id=checkpoint["id"],
            parent_id=get_checkpoint_id(config) or "",
            checkpoint_type=checkpoint_type,
            checkpoint=blob,
            metadata_type=metadata_type,
            metadata=metadata_blob,
        )
        with transaction.atomic():
            self._check_fence()
            GraphCheckpoint.objects.bulk_create(
                [row],
                update_conflicts=True,
                unique_fields=CHECKPOINT_FIELDS,
                update_fields=[
                    "parent_id",
                    "checkpoint_type",
                    "checkpoint",
                    "metadata_type",
                    "metadata",
                ],
            )
        return _config(thread_id, ns, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes after the checkpoint ``config`` names. A regular write
        already stored is kept (a task's writes do not change on a rerun); a special one
        (error, interrupt, resume...) replaces the stored one."""
        thread_id, ns = _thread_of(config)
        checkpoint_id = config["configurable"]["checkpoint_id"]
        rows = [
            GraphWrite(
                thread_id=thread_id,
                checkpoint_ns=ns,
                checkpoint_id=checkpoint_id,
                task_id=task_id,
                idx=WRITES_IDX_MAP.get(channel, idx),
                channel=channel,
                value_type=value_type,
                value=blob,
                task_path=task_path,
            )
            for idx, (channel, value) in enumerate(writes)
            for value_type, blob in [self.serde.dumps_typed(value)]
        ]
        special = [w for w in rows if w.idx < 0]
        regular = [w for w in rows if w.idx >= 0]
        with transaction.atomic():
            self._check_fence()
            if regular:
                GraphWrite.objects.bulk_create(regular, ignore_conflicts=True)
            if special:
                GraphWrite.objects.bulk_create(
                    special,
                    update_conflicts=True,
                    unique_fields=WRITE_FIELDS,
                    update_fields=["channel", "value_type", "value", "task_path"],
                )

    def delete_thread(self, thread_id: str) -> None:
        """Every checkpoint and write of the thread, in every namespace."""
        with transaction.atomic():
            GraphWrite.objects.filter(thread_id=thread_id).delete()
            GraphCheckpoint.objects.filter(thread_id=thread_id).delete()

    def _check_fence(self) -> None:
        if self.fence is not None:
            self.fence.check()

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Versions as ``InMemorySaver`` makes them: a zero-padded counter (they compare as
        strings) and a random tail, so versions made by parallel branches never collide."""
        if current is None:
            counter = 0
        elif isinstance(current, int):
            counter = current
        else:
            counter = int(current.split(".")[0])
        return f"{counter + 1:032}.{random.random():016}"

    # -- async: the same calls, the ORM in a thread ------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await _in_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        # Read whole in one thread call: a cursor must not be shared between threads.
        def read() -> Tuples:
            return list(self.list(config, filter=filter, before=before, limit=limit))

        for found in await _in_thread(read):
            yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await _in_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await _in_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await _in_thread(self.delete_thread, thread_id)


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(_closing, fn, *args)


def _closing(fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(*args)
    finally:
        connections.close_all()


def _thread_of(config: RunnableConfig) -> tuple[str, str]:
    configurable = config["configurable"]
    return str(configurable["thread_id"]), str(configurable.get("checkpoint_ns", ""))


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _key(row: GraphCheckpoint | GraphWrite) -> WriteKey:
    return (row.thread_id, row.checkpoint_ns, row.checkpoint_id)


def _listed(config: RunnableConfig | None, before: RunnableConfig | None) -> QuerySet[Any]:
    rows = GraphCheckpoint.objects.all()
    if config is not None:
        configurable = config["configurable"]
        rows = rows.filter(thread_id=str(configurable["thread_id"]))
        if configurable.get("checkpoint_ns") is not None:
            rows = rows.filter(checkpoint_ns=str(configurable["checkpoint_ns"]))
        if checkpoint_id := get_checkpoint_id(config):
            rows = rows.filter(checkpoint_id=checkpoint_id)
    if before is not None and (before_id := get_checkpoint_id(before)):
        rows = rows.filter(checkpoint_id__lt=before_id)
    return rows


def _pages(rows: QuerySet[Any], size: int) -> Iterator[list[GraphCheckpoint]]:
    """Newest first, ``size`` at a time, each page after the last one's position (rows
    added meanwhile neither shift nor repeat a page, as offsets would)."""
    rows = rows.order_by("-checkpoint_id", "-pk")
    page: list[GraphCheckpoint] = list(rows[:size])
    while page:
        yield page
        if len(page) < size:
            return
        last = page[-1]
        after = Q(checkpoint_id__lt=last.checkpoint_id) | Q(
            checkpoint_id=last.checkpoint_id, pk__lt=last.pk
        )
        page = list(rows.filter(after)[:size])
