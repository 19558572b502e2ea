"""An in-memory run store: the engine's ``RunStore`` protocol (``workers/store/protocols.py``)
kept in dicts, so the engine's decisions (what commits, what is fenced, what a settle plans) are
unit-tested without a database. Same rules as the Django store (``workers/store/runs.py``): a
success is never overwritten, a fenced row takes only its fence's lease, and a dead row takes
nothing from an attempt of the entry it was dead-lettered from."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from workers.core.errors import LeaseLost
from workers.core.records import Finish, Run, StepWrite
from workers.core.steps import StepRecord


class Refused(Exception):
    """What the memory store raises for a row it refuses for good (as a ``DataError``)."""


@dataclass(slots=True)
class Row:
    status: str  # as ``RunStatus``: running, succeeded, failed, dead, cancelled
    lease: str
    fence: str = ""
    result: Any = None
    error: str = ""
    entry: tuple[str, str] = ("", "")  # (stream, entry id) of the attempt that wrote it


class MemoryRunStore:
    """``refuses(finish)``: True for an outcome the store must refuse for good (the
    settler dead-letters it as unstorable); ``down``: every write raises a transient error."""

    def __init__(self, refuses: Callable[[Finish], bool] | None = None) -> None:
        self.rows: dict[str, Row] = {}
        self.steps: list[StepRecord] = []
        self.stored_steps: dict[str, dict[str, Any]] = {}
        self.refuses = refuses or (lambda finish: False)
        self.down = False

    def atomic(self) -> AbstractContextManager[Any]:
        return _nothing()

    def transient(self, exc: BaseException) -> bool:
        return isinstance(exc, ConnectionError)

    def done_among(self, hashes: list[str]) -> set[str]:
        return {
            h
            for h in hashes
            if h in self.rows and self.rows[h].status in ("succeeded", "cancelled")
        }

    def quick_lookup(self) -> None:
        return None

    def fence(self, runs: list[Run]) -> None:
        """Runs that took over an expired lease: from now on only they may commit."""
        self._check()
        for run in runs:
            if self._open(run, fenced=False):
                self.rows[run.event_hash] = Row("running", run.lease, fence=run.lease)

    def commit(self, finishes: list[Finish]) -> set[str]:
        self._check(finishes)
        committed: set[str] = set()
        for f in finishes:
            if self._open(f.run, fenced=True):
                self.rows[f.run.event_hash] = Row("succeeded", f.run.lease, result=f.result)
            row = self.rows[f.run.event_hash]
            if row.status == "succeeded" and row.lease == f.run.lease:
                committed.add(f.run.lease)
        return committed

    def fail(self, finishes: list[Finish]) -> None:
        self._check(finishes)
        self._close(finishes, fenced=True)

    def wait(self, finishes: list[Finish]) -> None:
        self._check(finishes)
        for f in finishes:
            if self._open(f.run, fenced=True):
                self.rows[f.run.event_hash] = Row("waiting", f.run.lease)

    def mark_dead(self, finishes: list[Finish]) -> None:
        self._check(finishes)
        self._close([Finish(f.run, f.duration_ms, f.result, f.error, True) for f in finishes])

    def record(self, steps: list[StepRecord]) -> None:
        self._check()
        self.steps += steps

    def load_steps(self, hashes: list[str]) -> dict[str, dict[str, Any]]:
        return {h: dict(self.stored_steps.get(h, {})) for h in hashes}

    def save_steps(self, writes: list[StepWrite]) -> list[Any]:
        """The first value stored for a step wins; a taken-over attempt gets ``LeaseLost``."""
        answers: list[Any] = []
        for w in writes:
            row = self.rows.get(w.event_hash)
            if row is not None and (row.status == "succeeded" or row.fence not in ("", w.lease)):
                answers.append(LeaseLost(f"step {w.name!r}: {w.event_hash[:12]} taken over"))
                continue
            answers.append(
                self.stored_steps.setdefault(w.event_hash, {}).setdefault(w.name, w.value)
            )
        return answers

    def close(self) -> None:
        pass

    def status(self, event_hash: str) -> str | None:
        row = self.rows.get(event_hash)
        return None if row is None else row.status

    def _open(self, run: Run, fenced: bool) -> bool:
        """Whether a write of ``run`` may change the row (``runs.upsert_sql``'s guard)."""
        row = self.rows.get(run.event_hash)
        if row is None:
            return True
        if row.status in ("succeeded", "cancelled"):
            return False
        if row.status == "dead" and row.entry == (run.stream, run.entry_id):
            return False  # runs.dead_entry_fence
        return not fenced or row.fence in ("", run.lease)

    def _close(self, finishes: list[Finish], fenced: bool = False) -> None:
        for f in finishes:
            if self._open(f.run, fenced):
                status = "dead" if f.dead else "failed"
                entry = (f.run.stream, f.run.entry_id)
                self.rows[f.run.event_hash] = Row(status, f.run.lease, error=f.error, entry=entry)

    def _check(self, finishes: Sequence[Finish] = ()) -> None:
        if self.down:
            raise ConnectionError("the memory store is down")
        for f in finishes:
            if self.refuses(f):
                raise Refused(f"refused the row of {f.run.event_hash[:12]}")


@contextmanager
def _nothing() -> Iterator[None]:
    yield
